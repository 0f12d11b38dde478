//! The command line: `run`, `presets`, `bench`, `train`, `sweep` and `thermo` run headless;
//! `app` opens the window; `screenshot` and `record` render the app offscreen.
//!
//! Every command fails with one [`Failure`]: exit status 2 for bad input (refused before any
//! work), 1 for a failure of the work itself. A build without the `gui` feature (or `train`)
//! still knows `app`, `screenshot`, `record` and `bench --ui` (`train`) and refuses them with
//! exit status 2, naming the feature.
//!
//! The backend policy: `--backend auto` (the GPU when a hardware adapter opens, else the CPU)
//! is the default of every command but `sweep` and `thermo`, whose default is `cpu`, so that a
//! sweep's record is a pure function of the sweep file and the point's index whichever machine
//! (or SLURM node) runs it; shards run with another `--backend` must not be merged with them.

mod bench;
#[cfg(feature = "gui")]
mod handout;
#[cfg(feature = "gui")]
mod render;
mod sweep;
mod thermodynamics;
#[cfg(feature = "train")]
mod train;
mod truth_progress;

use crate::engine::BackendChoice;
use crate::math::ranges::Range;
use crate::math::ranges::short_text;
use crate::math::{NoiseMass, XiUpdate};
use crate::preset::fields::{self, Number, Overrides};
use crate::preset::{AnyPreset, MlpPreset, Preset, SHIPPED};
use crate::runner;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::process::ExitCode;

/// Watch stochastic-gradient MCMC samplers (ATMC as corrected and as printed, SGLD, SGHMC,
/// SGNHT, SGD) run on thousands of chains.
#[derive(Debug, Parser)]
#[command(name = "atmc-lab", version = crate::VERSION, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a preset headless and print its statistics as one JSON line (last line of stdout).
    Run(Box<RunArgs>),
    /// List the shipped presets.
    Presets,
    /// Measure chain-steps per second of 2-D ATMC on the correlated Gaussian per backend
    /// (`--mlp`: network gradients per second of Bayesian MLPs).
    Bench(bench::BenchArgs),
    /// Open the desktop app on a preset (the default without arguments).
    #[cfg(feature = "gui")]
    App(render::AppArgs),
    /// Open the desktop app (not in this build: it needs the `gui` feature).
    #[cfg(not(feature = "gui"))]
    App(Unavailable),
    /// Render the full UI offscreen after N steps and write a PNG (no display needed).
    #[cfg(feature = "gui")]
    Screenshot(Box<render::ScreenshotArgs>),
    /// Render the UI offscreen (not in this build: it needs the `gui` feature).
    #[cfg(not(feature = "gui"))]
    Screenshot(Unavailable),
    /// Record the UI (or one panel) offscreen every K steps as an animated GIF (FILE.gif) or
    /// numbered PNG frames (a folder); deterministic like `screenshot`.
    #[cfg(feature = "gui")]
    Record(Box<render::RecordArgs>),
    /// Record the UI offscreen (not in this build: it needs the `gui` feature).
    #[cfg(not(feature = "gui"))]
    Record(Unavailable),
    /// A lecture as one HTML page for a course website: every lesson rendered offscreen
    /// after its steps (PNG files beside index.html), its text, and its challenges as
    /// exercises.
    #[cfg(feature = "gui")]
    Handout(Box<handout::HandoutArgs>),
    /// A lecture's handout (not in this build: it needs the `gui` feature).
    #[cfg(not(feature = "gui"))]
    Handout(Unavailable),
    /// Train ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD (JSON summary last).
    #[cfg(feature = "train")]
    Train(Box<train::TrainArgs>),
    /// Train ResNet++ (not in this build: it needs the `train` feature).
    #[cfg(not(feature = "train"))]
    Train(Unavailable),
    /// Run a sweep over preset fields (one JSON line per point, resumable, shardable), merge
    /// its shards, or write SLURM scripts for it.
    Sweep(Box<sweep::SweepArgs>),
    /// The thermodynamics of SGD (and any 2-D sampler, or the sphere toy) over a log grid of
    /// learning rates: U, S, slope and Gibbs temperatures, the Gibbs test, a held-out
    /// prediction (a sweep underneath: shardable, resumable).
    Thermo(Box<thermodynamics::ThermoArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to standard
    /// output, generated from these command-line definitions.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to standard output, or with `--dir` write atmc-lab.1 and
    /// one page per command (atmc-lab-run.1, …) into a folder.
    Man(ManArgs),
}

/// Options of `atmc-lab completions`.
#[derive(Debug, clap::Args)]
struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// Options of `atmc-lab man`.
#[derive(Debug, clap::Args)]
struct ManArgs {
    /// Write atmc-lab.1 and a page per command into this folder (created if missing)
    /// instead of printing atmc-lab.1.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
}

/// The arguments of a command this build lacks: any are taken, the command is refused.
#[cfg(not(all(feature = "gui", feature = "train")))]
#[derive(Debug, clap::Args)]
struct Unavailable {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _ignored: Vec<String>,
}

/// ATMC's thermostat update on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum XiUpdateArg {
    Accumulate,
    Overwrite,
}

impl From<XiUpdateArg> for XiUpdate {
    fn from(v: XiUpdateArg) -> Self {
        match v {
            XiUpdateArg::Accumulate => XiUpdate::Accumulate,
            XiUpdateArg::Overwrite => XiUpdate::Overwrite,
        }
    }
}

/// ATMC's noise mass factor on the command line.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum NoiseMassArg {
    With,
    Without,
}

impl From<NoiseMassArg> for NoiseMass {
    fn from(v: NoiseMassArg) -> Self {
        match v {
            NoiseMassArg::With => NoiseMass::With,
            NoiseMassArg::Without => NoiseMass::Without,
        }
    }
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Preset file (RON), or the name of a shipped preset (see `atmc-lab presets`).
    preset: String,
    /// Sampler: atmc, sgld, sghmc, sgnht, sgd, hmc (HMC: 2-D targets only).
    #[arg(long)]
    sampler: Option<String>,
    /// Target: gaussian, correlated, aniso, banana, donut, gmm25, funnel, double-well, logistic.
    #[arg(long, conflicts_with = "energy")]
    target: Option<String>,
    /// A typed energy U(θ₁, θ₂) as the target (docs/MATH.md §9), e.g. "(x^2 + y^2)/(2*s^2)";
    /// its truth box is found by growing. A formula may start with a minus (`-x^2-y^2`).
    #[arg(long, value_name = "FORMULA", allow_hyphen_values = true)]
    energy: Option<String>,
    /// A parameter of the typed energy, NAME=VALUE (repeat for several); with an expression
    /// preset and no --energy, changes the preset's parameter.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    params: Vec<String>,
    // The numeric flags are shorthands for dotted paths of the preset (`--h` sets
    // `sampler.h`), checked against their ranges in `preset::fields`, as a sweep's axes are.
    /// Number of chains (`chains`; networks of an MLP preset).
    #[arg(long, value_parser = whole::<u32>)]
    chains: Option<u32>,
    /// Number of steps (`steps`).
    #[arg(long, value_parser = whole::<u32>)]
    steps: Option<u32>,
    /// Seed (`seed`).
    #[arg(long, value_parser = whole::<u64>)]
    seed: Option<u64>,
    /// Step size h (`sampler.h`; a sphere preset's learning rate η).
    #[arg(long, value_parser = flag_number("--h"))]
    h: Option<f64>,
    /// ATMC friction floor D (`sampler.friction_floor`).
    #[arg(long = "D", value_parser = flag_number("--D"))]
    friction_floor: Option<f64>,
    /// Mass m (`sampler.mass`).
    #[arg(long, value_parser = flag_number("--m"))]
    m: Option<f64>,
    /// Temperature T (`sampler.temperature`).
    #[arg(long, value_parser = flag_number("--temperature"))]
    temperature: Option<f64>,
    /// Isotropic gradient noise σ (0 switches the synthetic noise off; σ has
    /// `noise.sigma`'s range).
    #[arg(long, value_parser = flag_number("--noise"))]
    noise: Option<f64>,
    /// ATMC friction sign φ in [−1, 1]: +1 correct, −1 as printed (`sampler.friction_sign`).
    #[arg(long, value_parser = flag_number("--friction-sign"))]
    friction_sign: Option<f64>,
    /// ATMC thermostat update.
    #[arg(long, value_enum)]
    xi_update: Option<XiUpdateArg>,
    /// ATMC noise mass factor.
    #[arg(long, value_enum)]
    noise_mass: Option<NoiseMassArg>,
    /// SGD's heavy-ball momentum μ in [0, 0.999] (0: plain SGD; `sampler.sgd_momentum`).
    #[arg(long, value_parser = flag_number("--sgd-momentum"))]
    sgd_momentum: Option<f64>,
    /// HMC's leapfrog steps L per proposal, 1 to 200 (`sampler.leapfrog_steps`; default 10).
    #[arg(long, value_parser = whole::<u32>)]
    leapfrog_steps: Option<u32>,
    /// HMC: adapt h during the first half of the steps by dual averaging toward this
    /// acceptance rate in [0.05, 0.99] (0.8 is usual), then freeze it
    /// (`sampler.target_acceptance`).
    #[arg(long, value_parser = flag_number("--target-acceptance"))]
    target_acceptance: Option<f64>,
    /// Backend.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Write the time series (one row per recorded block) to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Export the draws of the first chains (θ, p, ξ and per-draw statistics at every
    /// recorded block) to this folder as a Zarr store that ArviZ opens
    /// (`xarray.open_datatree(DIR, engine="zarr")`). 2-D presets only.
    #[arg(long, value_name = "DIR")]
    draws: Option<std::path::PathBuf>,
    /// Chains whose draws `--draws` exports (the first ones).
    #[arg(long, default_value_t = crate::diagnostics::draws::DEFAULT_DRAW_CHAINS, requires = "draws")]
    draw_chains: u32,
    /// Keep every K-th recorded block in `--draws` (thinning).
    #[arg(long, default_value_t = 1, value_name = "K", requires = "draws")]
    draw_every: u32,
}

/// Why a command failed, with its exit status: 2 for bad input (refused before any work), 1 for
/// a failure of the work itself. Every command returns it; [`main`] prints `error: MESSAGE`.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// Bad input: exit status 2.
    fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// A failure of the work itself: exit status 1.
    fn runtime(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// A command this build was made without (exit status 2): the message names the feature
    /// and how to get it.
    #[cfg(not(all(feature = "gui", feature = "train")))]
    fn missing_feature(feature: &str, command: &str) -> Self {
        Self::usage(format!(
            "atmc-lab was built without the `{feature}` feature; rebuild with `cargo build \
             --release` (default features) to use `{command}`"
        ))
    }
}

/// An error of the work (reading, computing, writing), with its causes: exit status 1. Bad
/// input is mapped to [`Failure::usage`] where it is checked.
/// A [`crate::fsutil::Refused`] anywhere in the chain (an output another process is writing,
/// a damaged shard, an unknown kept field) is a problem of the input: exit status 2.
impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        if e.chain()
            .any(|c| c.downcast_ref::<crate::fsutil::Refused>().is_some())
        {
            return Self::usage(format!("{e:#}"));
        }
        Self::runtime(format!("{e:#}"))
    }
}

/// A clap value parser for a number in `range`: the message names the value and the range.
fn in_range(range: Range) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let v: f64 = text.trim().parse().map_err(|_| {
            format!(
                "{} = '{}' is not a number: allowed {}",
                range.name,
                short_text(text),
                range.describe()
            )
        })?;
        range.check(v)
    }
}

/// A clap value parser for a whole number in `range`: a value that is no whole number, or
/// one too large for the type, is refused with the range like one outside it.
fn whole_in_range(
    range: Range,
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    move |text| {
        let Ok(v) = text.trim().parse::<u32>() else {
            return Err(match text.trim().parse::<f64>() {
                Ok(v) if range.check(v).is_err() => range.check(v).unwrap_err(),
                _ => format!(
                    "{} = '{}' is not a whole number: allowed whole numbers in {}",
                    range.name,
                    short_text(text),
                    range.describe()
                ),
            });
        };
        range.check(f64::from(v)).map(|_| v)
    }
}

/// A whole-number type of an option, with its largest value (every one starts at 0).
trait Whole: std::str::FromStr + Copy + Send + Sync + 'static {
    /// The largest value.
    const MAX: u64;
}

impl Whole for u32 {
    const MAX: u64 = u32::MAX as u64;
}

impl Whole for u64 {
    const MAX: u64 = u64::MAX;
}

impl Whole for usize {
    const MAX: u64 = usize::MAX as u64;
}

/// The value parser of a whole-number option without a range of its own (checked later
/// against the preset, or by the type alone): a refusal names the value and the range the
/// type allows, where clap would say only "invalid digit" or "number too large".
fn whole<T: Whole>(text: &str) -> Result<T, String> {
    text.trim().parse::<T>().map_err(|_| {
        format!(
            "'{}' is not a whole number in [0, {}]",
            short_text(text),
            T::MAX
        )
    })
}

/// The value parser of a numeric flag of `run`: any number (its range depends on the kind of
/// preset, checked with the preset in `preset::fields`); a text that is no number is refused
/// naming what the flag allows.
fn flag_number(
    flag: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| fields::parse_flag(flag, text)
}

/// The command line of every command, with negative numbers taken as values everywhere: `--h
/// -1` reaches the option's range check (and its message naming the range) instead of
/// clap's "unexpected argument '-1'". Set on every subcommand here rather than on each
/// command's arguments, so that a command added later has it too.
fn command() -> clap::Command {
    fn negative_numbers(c: clap::Command) -> clap::Command {
        c.allow_negative_numbers(true)
            .mut_subcommands(negative_numbers)
    }
    negative_numbers(Cli::command())
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map_err(|e| e.format(&mut command())))
    {
        Ok(cli) => cli,
        // A value refused by its parser is bad input like any other: one line, exit 2, the
        // value shortened and its control characters escaped (a newline would cut the line).
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            use clap::error::{ContextKind, ContextValue};
            let context = |kind| match e.get(kind) {
                Some(ContextValue::String(s)) => Some(s.clone()),
                _ => None,
            };
            match (
                context(ContextKind::InvalidArg),
                context(ContextKind::InvalidValue),
                std::error::Error::source(&e),
            ) {
                (Some(arg), Some(value), Some(why)) => note!(
                    "error: invalid value '{}' for '{arg}': {}",
                    short_text(&value),
                    without_escapes(&why.to_string())
                ),
                _ => {
                    let text = e.render().to_string();
                    let first = text.lines().next().unwrap_or("error: invalid value");
                    note!("{}", without_escapes(first));
                }
            }
            return ExitCode::from(2);
        }
        // clap's own errors quote the arguments as typed: escaped like every message.
        Err(e) if e.use_stderr() => {
            let text = without_escapes(&e.render().to_string());
            note!("{}", text.trim_end_matches('\n'));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
        Err(e) => e.exit(),
    };
    truth_progress::print_to_stderr();
    let result = match cli.command {
        Some(Command::Run(args)) => run(*args),
        Some(Command::Presets) => list_presets(),
        Some(Command::Bench(args)) => bench::bench(&args),
        #[cfg(feature = "gui")]
        Some(Command::App(args)) => render::open_app(Some(&args)),
        #[cfg(feature = "gui")]
        None => render::open_app(None),
        #[cfg(not(feature = "gui"))]
        Some(Command::App(_)) | None => Err(Failure::missing_feature("gui", "app")),
        #[cfg(feature = "gui")]
        Some(Command::Screenshot(args)) => render::screenshot(&args),
        #[cfg(not(feature = "gui"))]
        Some(Command::Screenshot(_)) => Err(Failure::missing_feature("gui", "screenshot")),
        #[cfg(feature = "gui")]
        Some(Command::Record(args)) => render::record(&args),
        #[cfg(not(feature = "gui"))]
        Some(Command::Record(_)) => Err(Failure::missing_feature("gui", "record")),
        #[cfg(feature = "gui")]
        Some(Command::Handout(args)) => handout::handout(&args),
        #[cfg(not(feature = "gui"))]
        Some(Command::Handout(_)) => Err(Failure::missing_feature("gui", "handout")),
        #[cfg(feature = "train")]
        Some(Command::Train(args)) => train::train(&args),
        #[cfg(not(feature = "train"))]
        Some(Command::Train(_)) => Err(Failure::missing_feature("train", "train")),
        Some(Command::Sweep(args)) => sweep::sweep(&args),
        Some(Command::Thermo(args)) => thermodynamics::thermo(&args),
        Some(Command::Completions(args)) => completions(&args),
        Some(Command::Man(args)) => man(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            note!("error: {}", without_escapes(&f.message));
            ExitCode::from(f.code)
        }
    }
}

/// A message with every control character but the newline escaped: whatever a message
/// quotes from a file or an argument (a name holding a terminal's escape sequences), the
/// terminal shows it and does not obey it. Messages built from user text escape it where
/// they quote it, newlines too; this is the net below them.
fn without_escapes(message: &str) -> String {
    message
        .split('\n')
        .map(crate::math::ranges::escaped)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The progress bar of every command, on stderr: `len` `unit`s (steps, points, batches,
/// frames) with the rate and the time left.
fn progress_bar(len: u64, unit: &str, message: impl Into<String>) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{per_sec}}, eta {{eta}}"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(message.into());
    // The spinner turns on its own, so set-up work before the first step (a logistic
    // posterior's quadrature, a data set's generation) shows that the command is alive.
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    bar
}

/// `atmc-lab completions SHELL`: the completion script, generated from [`command`].
fn completions(args: &CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command(), "atmc-lab", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::runtime(format!("cannot write the script to standard output: {e}")))
}

/// `atmc-lab man [--dir DIR]`: the manual page(s), generated from [`command`].
fn man(args: &ManArgs) -> Result<(), Failure> {
    let command = command().version(crate::VERSION);
    match &args.dir {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut page)
                .map_err(|e| Failure::runtime(format!("cannot render the manual page: {e}")))?;
            let mut out = std::io::stdout().lock();
            out.write_all(&page)
                .and_then(|()| out.flush())
                .map_err(|e| {
                    Failure::runtime(format!("cannot write the page to standard output: {e}"))
                })
        }
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(command, dir))
                .map_err(|e| {
                    Failure::runtime(format!(
                        "cannot write the manual pages into {}: {e}",
                        dir.display()
                    ))
                })?;
            let mut pages: Vec<_> = std::fs::read_dir(dir)
                .map_err(|e| Failure::runtime(format!("cannot list {}: {e}", dir.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "1"))
                .collect();
            pages.sort();
            for page in pages {
                emit(format_args!("{}", page.display()))?;
            }
            Ok(())
        }
    }
}

fn list_presets() -> Result<(), Failure> {
    for (name, text) in SHIPPED {
        match AnyPreset::parse(text, name) {
            Ok(p) => emit(format_args!("{name:<22} {}", p.name()))?,
            Err(e) => emit(format_args!("{name:<22} (broken: {e})"))?,
        }
    }
    Ok(())
}

/// Writes one line of a command's result to standard output: the only way any command
/// prints to stdout. A failed write (a closed pipe, `/dev/full`) is a failure of the command:
/// exit status 1 with one `error:` line, never the panic of `println!` (exit 101) and never a
/// silent exit 0. The line is flushed at once, so the failure is met where it happens (a
/// later command's output is not written after a result that was lost). It returns an
/// `anyhow` error so that the commands that work in `anyhow` (bench) use it as well; `?`
/// turns it into a runtime [`Failure`].
fn emit(line: impl std::fmt::Display) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write the result to standard output: {e}"))
}

/// Loads a preset and, for an MLP preset, its data (a CSV file may be missing or malformed):
/// either is bad input, refused before any work with the preset's name in front.
fn load_preset(path: &str) -> Result<AnyPreset, Failure> {
    let preset = AnyPreset::load(path).map_err(|e| Failure::usage(e.to_string()))?;
    // A drawn set still short of points opens (the view says what it waits for); `run`
    // refuses it before any work (`execute_mlp`).
    if let AnyPreset::Mlp(mlp) = &preset
        && !matches!(
            mlp.network.data.source,
            crate::math::DataSource::Drawn { .. }
        )
    {
        crate::preset::data::build_network(&mlp.network)
            .map_err(|e| Failure::usage(format!("{}: {e}", short_text(path))))?;
    }
    Ok(preset)
}

impl RunArgs {
    /// What the flags set on the preset: each numeric flag as an assignment of the dotted
    /// path it is the shorthand of, the other options as they are.
    fn overrides(&self) -> Overrides {
        let mut overrides = Overrides {
            sampler: self.sampler.clone(),
            target: self.target.clone(),
            energy: self.energy.clone(),
            params: self.params.clone(),
            xi_update: self.xi_update.map(Into::into),
            noise_mass: self.noise_mass.map(Into::into),
            ..Overrides::default()
        };
        let real = |v: Option<f64>| v.map(Number::Real);
        for (flag, value) in [
            ("--chains", self.chains.map(Number::from)),
            ("--steps", self.steps.map(Number::from)),
            ("--seed", self.seed.map(Number::from)),
            ("--h", real(self.h)),
            ("--D", real(self.friction_floor)),
            ("--m", real(self.m)),
            ("--temperature", real(self.temperature)),
            ("--friction-sign", real(self.friction_sign)),
            ("--sgd-momentum", real(self.sgd_momentum)),
            ("--leapfrog-steps", self.leapfrog_steps.map(Number::from)),
            ("--target-acceptance", real(self.target_acceptance)),
            ("--noise", real(self.noise)),
        ] {
            overrides.flag(flag, value);
        }
        overrides
    }

    /// The preset to run: loaded, with the flags set through `preset::fields` (the path a
    /// sweep's values take), checked as a whole.
    fn preset(&self) -> Result<AnyPreset, Failure> {
        let loaded = load_preset(&self.preset)?;
        if self.csv.is_some() && matches!(loaded, AnyPreset::Sphere(_)) {
            return Err(Failure::usage(fields::sphere_options()));
        }
        self.overrides().apply(&loaded).map_err(Failure::usage)
    }
}

fn run(args: RunArgs) -> Result<(), Failure> {
    match args.preset()? {
        AnyPreset::Toy(preset) => {
            let draws = args.draws.as_ref().map(|dir| {
                (
                    dir.clone(),
                    crate::runner::DrawSpec {
                        chains: args.draw_chains,
                        every: args.draw_every,
                    },
                )
            });
            execute(preset, args.backend, args.csv.as_deref(), draws)
        }
        _ if args.draws.is_some() => Err(Failure::usage(
            "--draws exports the chains of a 2-D preset; MLP, comparison and sphere presets \
             have no draws to export",
        )),
        AnyPreset::Mlp(preset) => execute_mlp(preset, args.backend, args.csv.as_deref()),
        AnyPreset::Comparison(comparison) => {
            execute_comparison(comparison, args.backend, args.csv.as_deref())
        }
        AnyPreset::Sphere(preset) => execute_sphere(&preset),
    }
}

/// `run` of a sphere preset: its thermodynamic measurement as one JSON line.
fn execute_sphere(preset: &crate::preset::sphere::SpherePreset) -> Result<(), Failure> {
    let bar = progress_bar(preset.steps.into(), "steps", "projected SGD on the sphere");
    let point = runner::thermodynamics::measure(
        &AnyPreset::Sphere(preset.clone()),
        BackendChoice::Cpu,
        &mut |done| bar.set_position(u64::from(done)),
    )?;
    bar.finish_and_clear();
    print_json(&point)
}

fn execute_comparison(
    comparison: crate::preset::Comparison,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
) -> Result<(), Failure> {
    check_csv(csv)?;
    let columns = comparison.columns.len();
    let steps = comparison.base.steps;
    let bar = progress_bar(
        u64::from(steps) * columns as u64,
        "steps",
        format!("{columns} samplers side by side"),
    );
    let outcomes = runner::run_comparison(&comparison, backend, &mut |k, done| {
        bar.set_position(k as u64 * u64::from(steps) + u64::from(done))
    })?;
    bar.finish_and_clear();
    write_csv(csv, || {
        outcomes
            .iter()
            .map(|(label, o)| format!("# {label}\n{}", crate::diagnostics::series_csv(&o.series)))
            .collect()
    })?;
    for (label, o) in &outcomes {
        let s = &o.summary;
        note!(
            "{}: {} on {}; diverged {:.2}%, energy distance {:.4} (exact samples {:.4})",
            crate::math::ranges::printable(label),
            s.sampler,
            s.target,
            100.0 * s.diverged_fraction,
            s.energy_distance,
            s.energy_distance_baseline
        );
    }
    print_json(&serde_json::json!({
        "kind": "comparison",
        "name": comparison.name,
        "columns": outcomes
            .iter()
            .map(|(label, o)| serde_json::json!({ "label": label, "summary": o.summary }))
            .collect::<Vec<_>>(),
    }))
}

fn execute(
    preset: Preset,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
    draws: Option<(std::path::PathBuf, crate::runner::DrawSpec)>,
) -> Result<(), Failure> {
    let preset = preset
        .validated()
        .map_err(|(_, message)| Failure::usage(message))?;
    // The draws' size and folder are checked before any work: nothing is run to be lost. The
    // folder is taken (locked, a temporary folder beside it) for the whole run.
    let mut export = None;
    if let Some((dir, spec)) = &draws {
        let bytes = spec
            .check(runner::recorded_blocks(&preset), preset.chains)
            .map_err(|e| Failure::usage(format!("{e:#}")))?;
        export = Some(
            crate::diagnostics::draws::begin_export(dir)
                .map_err(|e| Failure::usage(format!("{e:#}")))?,
        );
        note!(
            "draws: {} chains × {} draws, about {:.1} MB, to {}",
            spec.chains,
            spec.draws(runner::recorded_blocks(&preset)),
            bytes as f64 / 1e6,
            dir.display()
        );
    }
    let bar = progress_bar(
        preset.steps.into(),
        "steps",
        format!(
            "{} on {}, {} chains",
            preset.sampler.kind.name(),
            preset.target.name(),
            preset.chains
        ),
    );
    // The CSV file is opened before the run (a bad path fails before any work) and the rows
    // are streamed into it (none is held back, memory stays bounded).
    let mut file = csv
        .map(crate::diagnostics::SeriesCsvFile::create)
        .transpose()
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    let mut progress = |done| bar.set_position(u64::from(done));
    let mut row =
        |row: &crate::diagnostics::SeriesRow| file.as_mut().map_or(Ok(()), |f| f.write(row));
    let outcome = match &draws {
        None => runner::run_streaming(&preset, backend, &mut progress, &mut row)?,
        Some((dir, spec)) => {
            let (outcome, kept) =
                runner::run_with_draws(&preset, backend, &mut progress, &mut row, *spec)?;
            let committed = kept.write_zarr_into(
                export.take().expect("taken with the draws"),
                &preset.model(),
                preset.init.superchains,
                &preset.to_ron(),
                &serde_json::to_value(&outcome.summary)
                    .map_err(|e| Failure::runtime(e.to_string()))?,
            )?;
            note!(
                "wrote {} draws of {} chains to {}",
                kept.draws(),
                spec.chains,
                dir.display()
            );
            if let Some(notice) = committed.notice() {
                note!("note: {notice}");
            }
            outcome
        }
    };
    bar.finish_and_clear();
    if let Some(notice) = &outcome.notice {
        note!("notice: {notice}");
    }
    if let Some(f) = file {
        f.finish()?;
    }
    let s = &outcome.summary;
    if let Ok(crate::math::Target::Expression(e)) = preset.target.build() {
        note!("truth: {}", crate::diagnostics::warnings::truth_extent(&e));
    }
    for w in &s.warnings {
        note!("warning: {w}");
    }
    if !s.verdicts.grades.is_empty() {
        note!("verdicts: {}", s.verdicts.line());
    }
    note!(
        "{} on {}: {} chains × {} steps on {} ({}), {:.3e} chain-steps/s; diverged {:.2}%",
        s.sampler,
        s.target,
        s.chains,
        s.steps,
        s.backend,
        s.timings.device,
        s.timings.chain_steps_per_s,
        100.0 * s.diverged_fraction
    );
    print_json(s)
}

/// Prints a summary as the last line of stdout.
fn print_json(summary: &impl serde::Serialize) -> Result<(), Failure> {
    let json = serde_json::to_string(summary).map_err(|e| Failure::runtime(e.to_string()))?;
    Ok(emit(json)?)
}

/// Writes the time series when `--csv` asked for it.
fn write_csv(path: Option<&std::path::Path>, text: impl FnOnce() -> String) -> Result<(), Failure> {
    if let Some(path) = path {
        crate::fsutil::write_atomic(path, text())?;
    }
    Ok(())
}

/// Checks before a run that `--csv` can be written: its temporary file is created (and
/// removed) now; the final path is written only with the complete result.
fn check_csv(path: Option<&std::path::Path>) -> Result<(), Failure> {
    if let Some(path) = path {
        crate::fsutil::AtomicFile::create(path)
            .map(drop)
            .map_err(|e| Failure::usage(format!("{e:#}")))?;
    }
    Ok(())
}

fn execute_mlp(
    preset: MlpPreset,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
) -> Result<(), Failure> {
    check_csv(csv)?;
    if matches!(
        preset.network.data.source,
        crate::math::DataSource::Drawn { .. }
    ) {
        // A drawn set below the minimum is bad input, refused before any work.
        crate::preset::data::build_dataset(&preset.network.data).map_err(Failure::usage)?;
    }
    let bar = progress_bar(
        preset.steps.into(),
        "steps",
        format!(
            "{} on {} networks ({})",
            preset.sampler.kind.name(),
            preset.chains,
            preset.network.data.source.name()
        ),
    );
    let outcome = runner::mlp::run_mlp(&preset, backend, &mut |done| {
        bar.set_position(u64::from(done))
    })?;
    bar.finish_and_clear();
    if let Some(notice) = &outcome.notice {
        note!("notice: {notice}");
    }
    write_csv(csv, || crate::diagnostics::mlp::series_csv(&outcome.series))?;
    let s = &outcome.summary;
    let sgd = &s.baseline_sgd.test;
    // With every network diverged there is no posterior predictive to quote.
    let predictive = s.posterior_predictive.as_ref().map_or_else(
        || "no alive networks".to_string(),
        |pp| pp.test.describe("test"),
    );
    // Without a test set the SGD network has nothing to be compared on either.
    let sgd = if sgd.count == 0 {
        String::new()
    } else {
        format!(
            " (SGD network: {:.1}% / {:.3} / {:.3})",
            100.0 * sgd.accuracy,
            sgd.nll,
            sgd.ece
        )
    };
    note!(
        "{} on {} networks {} ({}) on {}: {predictive}{sgd}; diverged {:.2}%; \
         {:.3e} network-gradients/s",
        s.sampler,
        s.chains,
        s.network,
        s.data,
        s.backend,
        100.0 * s.diverged_fraction,
        s.timings.chain_gradients_per_s
    );
    print_json(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::fields::{FIELDS, ends, example_with, just_outside};
    use crate::preset::sweep_file::Sweep;
    use std::path::Path;

    /// `run PRESET FLAG VALUE` up to the preset it would run: the flag's refusal (by its
    /// parser or by the preset's fields) or the preset.
    fn run_preset(preset: &str, flag: &str, value: &str) -> Result<AnyPreset, String> {
        let matches = command()
            .try_get_matches_from(["atmc-lab", "run", preset, &format!("{flag}={value}")])
            .map_err(|e| format!("parser: {e}"))?;
        let Some(Command::Run(args)) = Cli::from_arg_matches(&matches).unwrap().command else {
            panic!("a run command")
        };
        args.preset().map_err(|f| {
            assert_eq!(f.code, 2, "{}", f.message);
            f.message
        })
    }

    /// A value as a flag's text: whole numbers as integers, others exactly (`{:e}` parses back
    /// to the same `f64`).
    fn text(v: f64, whole: bool) -> String {
        if whole && v >= 0.0 && v < u64::MAX as f64 {
            format!("{}", v as u64)
        } else if whole && v < 0.0 {
            format!("{}", v as i64)
        } else {
            format!("{v:e}")
        }
    }

    /// Every field of the table, on every kind of preset that has it: the value just outside
    /// its range is refused with the same message by its flag (`run --h`), by a sweep's axis
    /// on its path and by `fields::set`, and the range's ends are taken by all three. A flag
    /// whose type cannot hold the value (a seed of -1) is refused by its parser.
    #[test]
    fn a_flag_a_sweep_axis_and_set_refuse_the_same_values_alike() {
        let dir = std::env::temp_dir().join(format!("atmc-lab-fields-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut checked = 0;
        for (n, field) in FIELDS.iter().enumerate() {
            for &kind in field.kinds {
                let base = example_with(kind, field);
                let file = dir.join(format!("base-{n}-{}.ron", kind.name()));
                let ron = match &base {
                    AnyPreset::Toy(p) => p.to_ron(),
                    AnyPreset::Mlp(p) => p.to_ron(),
                    AnyPreset::Sphere(p) => p.to_ron(),
                    AnyPreset::Comparison(p) => p.to_ron(),
                };
                std::fs::write(&file, ron).unwrap();
                let path = file.to_str().unwrap();
                let sweep = |v: f64| {
                    let text = format!(
                        "Sweep(base: \"{path}\", axes: [(field: \"{}\", values: List([{v:e}]))])",
                        field.path
                    );
                    Sweep::parse(&text, "s.ron", Path::new(".")).map_err(|e| e.message)
                };
                for v in just_outside(field) {
                    let expected = fields::check(kind, field.path, Number::Real(v)).unwrap_err();
                    let by_set = fields::set(&base, &[(field.path, Number::Real(v))], None);
                    assert_eq!(by_set.unwrap_err(), expected);
                    let by_sweep = sweep(v).unwrap_err();
                    assert!(by_sweep.ends_with(&expected), "{by_sweep} / {expected}");
                    if let Some(flag) = field.flag {
                        let by_flag = run_preset(path, flag, &text(v, field.whole)).unwrap_err();
                        let fits = match flag {
                            "--chains" | "--steps" => v >= 0.0 && v <= f64::from(u32::MAX),
                            "--seed" => v >= 0.0 && v < u64::MAX as f64,
                            _ => true,
                        };
                        if fits {
                            assert_eq!(by_flag, expected, "{flag} {v}");
                        } else {
                            assert!(by_flag.starts_with("parser: "), "{flag} {v}: {by_flag}");
                        }
                    }
                    checked += 1;
                }
                for v in ends(field) {
                    let at = |e: String| format!("{} = {v} on {}: {e}", field.path, kind.name());
                    fields::set(&base, &[(field.path, Number::Real(v))], None)
                        .unwrap_or_else(|e| panic!("{}", at(e)));
                    sweep(v).unwrap_or_else(|e| panic!("{}", at(e)));
                    if let Some(flag) = field.flag {
                        let value = if flag == "--seed" && v >= u64::MAX as f64 {
                            u64::MAX.to_string()
                        } else {
                            text(v, field.whole)
                        };
                        run_preset(path, flag, &value).unwrap_or_else(|e| panic!("{}", at(e)));
                    }
                }
            }
        }
        assert!(checked >= 2 * FIELDS.len(), "{checked}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A sphere's sweep axis out of its range is refused as its `--h` is (the sphere's own
    /// learning-rate range, not the 2-D step size's), and a sphere point is validated.
    #[test]
    fn a_sphere_axis_is_checked_against_the_spheres_range() {
        let text =
            "Sweep(base: \"sphere-op\", axes: [(field: \"sampler.h\", values: List([20.0]))])";
        let e = Sweep::parse(text, "s.ron", Path::new(".")).unwrap_err();
        assert!(
            e.message.ends_with(
                "sampler.h (--h): learning rate η = 20 is out of range: allowed (0, 10]"
            ),
            "{e}"
        );
        let e = run_preset("sphere-op", "--h", "20").unwrap_err();
        assert_eq!(
            e,
            "sampler.h (--h): learning rate η = 20 is out of range: allowed (0, 10]"
        );
        let e = run_preset("sphere-op", "--m", "2").unwrap_err();
        assert!(e.starts_with("a sphere preset takes --h, --chains"), "{e}");
        let e = run_preset("two-moons", "--chains", "65537").unwrap_err();
        assert!(
            e.contains("networks = 65537") && e.contains("[1, 65536]"),
            "{e}"
        );
        let e = run_preset("default", "--m", "heavy").unwrap_err();
        assert!(
            e.contains("mass m = 'heavy' is not a number: allowed [1e-4, 10000] (sampler.mass)"),
            "{e}"
        );
    }
}
