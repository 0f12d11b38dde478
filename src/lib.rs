//! atmc-lab: the dynamics of stochastic-gradient MCMC samplers made visible.
//!
//! Layers, with dependencies pointing one way; an arrow runs from a layer to the layers built
//! on it (ARCHITECTURE.md draws the whole graph, and a test holds the code to it):
//! [`math`] (samplers, targets, RNG, schedules; pure Rust) → [`engine`] (CPU and GPU
//! backends behind one interface) → [`diagnostics`] (statistics against exact truth) →
//! [`runner`] (headless runs) → [`sweep`] (grids of runs, sharded and merged) → `app` (the
//! egui desktop app) → [`cli`] (the command line, which also opens and renders the app).
//! [`preset`] describes a run in RON and knows only `math`. `train` trains ResNet++ image
//! classifiers with ATMC or SGD: the data, the input pipeline, the network, the optimisers
//! and checkpoints. [`fsutil`] (atomic writes and writer locks) knows nothing else of the
//! crate and serves every layer.
//!
//! Cargo features: `gui` (the app and its offscreen rendering; it includes `train`, since the
//! app has a Training tab) and `train` (burn), both default. Without them the crate is the
//! headless core and the command line's run, bench, presets, sweep and thermo.

/// A line of diagnostics on standard error (progress, notes, warnings): the one writer for
/// stderr, as `cli::emit` is for stdout. A full or closed stderr is ignored rather than a
/// panic (what `eprintln!` does): the result goes to stdout or into files, and losing a note
/// must never lose it.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

#[cfg(feature = "gui")]
pub mod app;
pub mod cli;
pub mod diagnostics;
pub mod engine;
pub mod fsutil;
pub mod math;
pub mod preset;
pub mod runner;
pub mod sweep;
#[cfg(feature = "train")]
pub mod train;

/// The version `atmc-lab --version` and Help show: the crate's version and the commit it was
/// built from ("0.1.0 (commit 0123abcd4567 2026-12-02)"; build.rs says how it is found, and
/// "commit unknown" outside a git checkout).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("ATMC_LAB_COMMIT"),
    ")"
);
