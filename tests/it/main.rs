//! The integration tests: one binary, one module per subject, so the crate is linked once
//! instead of once per file. The tests run in parallel threads of this one process and share
//! its working directory, environment and GPU device: `common` holds what they share and the
//! rules for it.

mod common;
mod convergence;

mod app;
mod app_classroom;
mod app_formula;
mod app_inputs;
mod app_mlp;
mod app_thermo;
mod app_training;
mod cli;
mod docs_links;
mod export_safety;
mod expression;
mod full_stderr;
mod fuzz;
mod gpu;
mod gpu_rng;
mod handout;
mod icon;
mod layering;
mod layout;
mod lesson_numbers;
mod lessons;
mod lessons_course;
mod mlp_engines;
mod mlp_posterior;
mod presets;
mod readability;
mod reliability;
mod reliability_cli;
mod reliability_input;
mod reliability_io;
mod reliability_stat;
mod reliability_truth;
mod shader_interface;
mod statistics;
mod sweep;
mod thermo;
mod thermo_plane;
mod train;
mod train_data;
mod window;
