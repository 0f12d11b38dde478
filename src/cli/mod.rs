//! The command line: `run`, `presets`, `bench`, `train`, `sweep` run headless; `app` opens
//! the window; `screenshot` and `record` render the app offscreen.

mod bench;
mod sweep_command;
mod thermo_command;
mod train;

use crate::engine::BackendChoice;
use crate::math::targets::TARGET_NAMES;
use crate::math::{NoiseMass, ranges::Range};
use crate::math::{NoiseSpec, SamplerKind, SamplerSpec, TargetSpec, XiUpdate, ranges};
use crate::preset::{AnyPreset, MlpPreset, Preset, SHIPPED};
use crate::runner;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::process::ExitCode;

/// Watch stochastic-gradient MCMC samplers (ATMC as corrected and as printed, SGLD, SGHMC,
/// SGNHT, SGD) run on thousands of chains.
#[derive(Debug, Parser)]
#[command(name = "atmc-lab", version, about, long_about = None)]
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
    App(AppArgs),
    /// Render the full UI offscreen after N steps and write a PNG (no display needed).
    Screenshot(ScreenshotArgs),
    /// Record the UI (or one panel) offscreen every K steps as an animated GIF (FILE.gif) or
    /// numbered PNG frames (a folder); deterministic like `screenshot`.
    Record(RecordArgs),
    /// Train ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD (JSON summary last).
    Train(Box<train::TrainArgs>),
    /// Run a sweep over preset fields (one JSON line per point, resumable, shardable), merge
    /// its shards, or write SLURM scripts for it.
    Sweep(Box<sweep_command::SweepArgs>),
    /// The thermodynamics of SGD (and any 2-D sampler, or the sphere toy) over a log grid of
    /// learning rates: U, S, slope and Gibbs temperatures, the Gibbs test, a held-out
    /// prediction (a sweep underneath: shardable, resumable).
    Thermo(Box<thermo_command::ThermoArgs>),
}

#[derive(Debug, clap::Args)]
struct AppArgs {
    /// Preset file (RON), shipped preset name, or a sweep (its merged.jsonl, or a sweep file
    /// to run in the Sweeps tab).
    #[arg(default_value = "default")]
    preset: String,
    /// Backend of the engine.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Measure the window's frame rate for SECONDS after 3 s of warm-up, print it as one
    /// JSON line and close (a benchmark of the real window, e.g. under Xvfb).
    #[arg(long, value_name = "SECONDS")]
    frame_stats: Option<f64>,
}

#[derive(Debug, clap::Args)]
struct ScreenshotArgs {
    /// Preset file (RON), shipped preset name, or a sweep's merged.jsonl (the Sweeps tab).
    preset: String,
    /// Steps to run before the picture.
    #[arg(long, default_value_t = 200)]
    steps: u32,
    /// Output PNG file.
    #[arg(long)]
    out: std::path::PathBuf,
    /// Window size in points, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720")]
    size: String,
    /// Pixels per point (2 for slides).
    #[arg(long, default_value_t = 1.0)]
    scale: f32,
    /// Backend of the engine.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Presentation mode: large type and thick lines, as for a projector.
    #[arg(long)]
    presentation: bool,
    /// The light theme.
    #[arg(long)]
    light: bool,
    /// Show the preset in this tab instead of its own (e.g. `thermo`: a 2-D preset's
    /// learning-rate sweep, run to the end before the picture).
    #[arg(long)]
    tab: Option<String>,
}

#[derive(Debug, clap::Args)]
struct RecordArgs {
    /// Preset file (RON) or shipped preset name.
    preset: String,
    /// Steps to record.
    #[arg(long, default_value_t = 200)]
    steps: u32,
    /// Steps between two frames.
    #[arg(long, default_value_t = 10)]
    every: u32,
    /// Output: FILE.gif for an animated GIF, anything else is a folder of PNG frames.
    #[arg(long)]
    out: std::path::PathBuf,
    /// Window size in points, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720")]
    size: String,
    /// Pixels per point.
    #[arg(long, default_value_t = 1.0)]
    scale: f32,
    /// Record one panel only, by its label in File → Export PNG (e.g. "θ₁–θ₂ panel").
    #[arg(long)]
    panel: Option<String>,
    /// Milliseconds between two frames of the GIF.
    #[arg(long, default_value_t = 100)]
    delay_ms: u32,
    /// Backend of the engine.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Presentation mode: large type and thick lines, as for a projector.
    #[arg(long)]
    presentation: bool,
    /// The light theme.
    #[arg(long)]
    light: bool,
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
// Negative numbers are values, so `--h -1` reaches the range check with a clear message.
#[command(allow_negative_numbers = true)]
struct RunArgs {
    /// Preset file (RON), or the name of a shipped preset (see `atmc-lab presets`).
    preset: String,
    /// Sampler: atmc, sgld, sghmc, sgnht, sgd.
    #[arg(long)]
    sampler: Option<String>,
    /// Target: gaussian, correlated, aniso, banana, donut, gmm25, funnel, double-well, logistic.
    #[arg(long)]
    target: Option<String>,
    /// Number of chains.
    #[arg(long)]
    chains: Option<u32>,
    /// Number of steps.
    #[arg(long)]
    steps: Option<u32>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Step size h.
    #[arg(long)]
    h: Option<f64>,
    /// ATMC friction floor D.
    #[arg(long = "D")]
    friction_floor: Option<f64>,
    /// Mass m.
    #[arg(long)]
    m: Option<f64>,
    /// Temperature T.
    #[arg(long)]
    temperature: Option<f64>,
    /// Isotropic gradient noise σ (0 switches the synthetic noise off).
    #[arg(long)]
    noise: Option<f64>,
    /// ATMC friction sign φ in [−1, 1]: +1 correct, −1 as printed.
    #[arg(long)]
    friction_sign: Option<String>,
    /// ATMC thermostat update.
    #[arg(long, value_enum)]
    xi_update: Option<XiUpdateArg>,
    /// ATMC noise mass factor.
    #[arg(long, value_enum)]
    noise_mass: Option<NoiseMassArg>,
    /// Backend.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Write the time series (one row per recorded block) to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

/// A failure with its exit code: 2 for bad input, 1 for failures of the run itself.
struct Failure {
    code: u8,
    message: String,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: message.into(),
    }
}

fn checked(range: Range, v: f64) -> Result<f64, Failure> {
    range.check(v).map_err(usage)
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Run(args)) => run(*args),
        Some(Command::Presets) => {
            list_presets();
            Ok(())
        }
        Some(Command::Bench(args)) => bench::check(&args).map_err(usage).and_then(|()| {
            bench::bench(&args).map_err(|e| Failure {
                code: 1,
                message: format!("{e:#}"),
            })
        }),
        Some(Command::App(args)) => open_app(&args.preset, args.backend, args.frame_stats),
        Some(Command::Screenshot(args)) => screenshot(&args),
        Some(Command::Record(args)) => record(&args),
        Some(Command::Train(args)) => train::train(&args).map_err(|e| Failure {
            code: if e.downcast_ref::<train::Usage>().is_some()
                || e.downcast_ref::<crate::train::checkpoint::FolderRefused>()
                    .is_some()
            {
                2
            } else {
                1
            },
            message: format!("{e:#}"),
        }),
        Some(Command::Sweep(args)) => sweep_command::sweep(&args),
        Some(Command::Thermo(args)) => thermo_command::thermo(&args),
        None => open_app("default", BackendChoice::Auto, None),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn list_presets() {
    for (name, text) in SHIPPED {
        match AnyPreset::parse(text, name) {
            Ok(p) => println!("{name:<22} {}", p.name()),
            Err(e) => println!("{name:<22} (broken: {e})"),
        }
    }
}

fn open_app(preset: &str, backend: BackendChoice, frame_stats: Option<f64>) -> Result<(), Failure> {
    if let Some(s) = frame_stats {
        crate::math::ranges::Range::closed_range("seconds measured", 0.5, 3600.0)
            .check(s)
            .map_err(|m| usage(format!("--frame-stats {s}: {m}")))?;
    }
    let opening = load_opening(preset)?;
    crate::app::run_native(opening, backend, frame_stats).map_err(|e| Failure {
        code: 1,
        message: format!(
            "{e:#}\n(no display? run under `xvfb-run -a atmc-lab`, or use `atmc-lab run` headless)"
        ),
    })
}

/// A preset (see [`load_preset`]) or a sweep: its results (`.jsonl`) or a sweep file, checked
/// before the window opens.
fn load_opening(path: &str) -> Result<crate::app::Opening, Failure> {
    let file = std::path::Path::new(path);
    if crate::app::is_sweep_path(file) {
        if file.extension().and_then(|e| e.to_str()) == Some("jsonl") {
            crate::sweep::read_merged(file).map_err(|e| usage(format!("{e:#}")))?;
        } else {
            crate::preset::sweep_file::Sweep::load(file).map_err(|e| usage(e.to_string()))?;
        }
        return Ok(crate::app::Opening::Sweep(file.to_owned()));
    }
    load_preset(path).map(crate::app::Opening::from)
}

/// Loads a preset and, for an MLP preset, its data (a CSV file may be missing or malformed):
/// either is bad input, refused before any work with the preset's name in front.
fn load_preset(path: &str) -> Result<AnyPreset, Failure> {
    let preset = AnyPreset::load(path).map_err(|e| usage(e.to_string()))?;
    if let AnyPreset::Mlp(mlp) = &preset {
        mlp.network
            .build()
            .map_err(|e| usage(format!("{path}: {e}")))?;
    }
    Ok(preset)
}

fn parse_size(text: &str) -> Result<[u32; 2], Failure> {
    let bad = || {
        usage(format!(
            "--size '{text}': expected WIDTHxHEIGHT, e.g. 1280x720"
        ))
    };
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(200..=8192).contains(&w) || !(200..=8192).contains(&h) {
        return Err(usage(format!(
            "--size {w}x{h}: each side must be in [200, 8192]"
        )));
    }
    Ok([w, h])
}

fn screenshot(args: &ScreenshotArgs) -> Result<(), Failure> {
    let mut opening = load_opening(&args.preset)?;
    if let Some(name) = &args.tab {
        let tab = crate::app::Tab::named(name).ok_or_else(|| {
            usage(format!(
                "--tab {name}: one of posterior, compare, mlp, training, sweep, thermo"
            ))
        })?;
        let crate::app::Opening::Preset(preset) = opening else {
            return Err(usage("--tab takes a preset, not a sweep"));
        };
        opening = crate::app::Opening::InTab(tab, preset);
    }
    let size = parse_size(&args.size)?;
    if !(0.5..=4.0).contains(&args.scale) {
        return Err(usage(format!("--scale {}: allowed [0.5, 4]", args.scale)));
    }
    crate::app::screenshot::check_picture_size(size, args.scale)
        .map_err(|e| usage(format!("{e:#}")))?;
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(usage(format!(
            "cannot write {}: no folder {}",
            args.out.display(),
            parent.display()
        )));
    }
    let fail = |e: anyhow::Error| Failure {
        code: 1,
        message: format!("{e:#}"),
    };
    let image = crate::app::screenshot::render_offscreen(
        opening,
        args.steps,
        size,
        args.scale,
        args.backend,
        crate::app::classroom::Appearance {
            presentation: args.presentation,
            light: args.light,
        },
    )
    .map_err(fail)?;
    crate::app::screenshot::save_png(&image, &args.out).map_err(fail)?;
    eprintln!(
        "wrote {} ({}×{} pixels, step {})",
        args.out.display(),
        image.width(),
        image.height(),
        args.steps
    );
    Ok(())
}

fn record(args: &RecordArgs) -> Result<(), Failure> {
    use crate::app::record::{MAX_FRAMES, Output, Progress, gif_frames, write};
    let preset = load_preset(&args.preset)?;
    let size = parse_size(&args.size)?;
    if !(0.5..=4.0).contains(&args.scale) {
        return Err(usage(format!("--scale {}: allowed [0.5, 4]", args.scale)));
    }
    crate::app::screenshot::check_picture_size(size, args.scale)
        .map_err(|e| usage(format!("{e:#}")))?;
    if args.every == 0 || args.steps == 0 {
        return Err(usage("--steps and --every must be at least 1"));
    }
    let frames = args.steps.div_ceil(args.every) as usize;
    if frames > MAX_FRAMES {
        return Err(usage(format!(
            "--steps {} --every {} makes {frames} frames: at most {MAX_FRAMES} (raise --every)",
            args.steps, args.every
        )));
    }
    if !(20..=10_000).contains(&args.delay_ms) {
        return Err(usage(format!(
            "--delay-ms {}: allowed [20, 10000]",
            args.delay_ms
        )));
    }
    let output = Output::for_path(&args.out, args.delay_ms);
    output.check().map_err(|e| Failure {
        code: 2,
        message: format!("{e:#}"),
    })?;
    let fail = |e: anyhow::Error| Failure {
        code: 1,
        message: format!("{e:#}"),
    };
    let bar = progress_bar(frames as u32, "recording".into());
    let images = crate::app::screenshot::record_offscreen(
        preset,
        args.steps,
        args.every,
        size,
        args.scale,
        args.panel.as_deref(),
        args.backend,
        crate::app::classroom::Appearance {
            presentation: args.presentation,
            light: args.light,
        },
        &mut |k| bar.set_position(k as u64),
    )
    .map_err(fail)?;
    bar.finish_and_clear();
    write(&images, &output, &Progress::default()).map_err(fail)?;
    let (w, h) = images[0].dimensions();
    match &output {
        Output::Gif { path, .. } => {
            let (n, _, _) = gif_frames(path).map_err(fail)?;
            eprintln!("wrote {} ({n} frames of {w}×{h} pixels)", path.display());
        }
        Output::Frames { dir } => eprintln!(
            "wrote {} frames of {w}×{h} pixels into {}",
            images.len(),
            dir.display()
        ),
    }
    Ok(())
}

impl RunArgs {
    /// Whether any sampler option other than the step size was given.
    fn sampler_options_given(&self) -> bool {
        self.sampler.is_some()
            || self.friction_floor.is_some()
            || self.m.is_some()
            || self.temperature.is_some()
            || self.friction_sign.is_some()
            || self.xi_update.is_some()
            || self.noise_mass.is_some()
    }
}

fn run(args: RunArgs) -> Result<(), Failure> {
    match load_preset(&args.preset)? {
        AnyPreset::Toy(mut preset) => {
            apply_overrides(&mut preset, &args)?;
            execute(preset, args.backend, args.csv.as_deref())
        }
        AnyPreset::Mlp(mut preset) => {
            apply_mlp_overrides(&mut preset, &args)?;
            execute_mlp(preset, args.backend, args.csv.as_deref())
        }
        AnyPreset::Comparison(mut comparison) => {
            if args.h.is_some() || args.sampler_options_given() {
                return Err(usage(
                    "sampler options belong to one column of a comparison: edit its file",
                ));
            }
            apply_overrides(&mut comparison.base, &args)?;
            execute_comparison(comparison, args.backend, args.csv.as_deref())
        }
        AnyPreset::Sphere(mut preset) => {
            apply_sphere_overrides(&mut preset, &args)?;
            execute_sphere(&preset)
        }
    }
}

/// `run` of a sphere preset: its thermodynamic measurement as one JSON line.
fn execute_sphere(preset: &crate::preset::sphere::SpherePreset) -> Result<(), Failure> {
    let bar = progress_bar(preset.steps, "projected SGD on the sphere".into());
    let point = runner::thermo_measure::measure(
        &AnyPreset::Sphere(preset.clone()),
        BackendChoice::Cpu,
        &mut |done| bar.set_position(u64::from(done)),
    )
    .map_err(|e| Failure {
        code: 1,
        message: format!("{e:#}"),
    })?;
    bar.finish_and_clear();
    println!(
        "{}",
        serde_json::to_string(&point).expect("a measurement serialises")
    );
    Ok(())
}

fn apply_sphere_overrides(
    preset: &mut crate::preset::sphere::SpherePreset,
    args: &RunArgs,
) -> Result<(), Failure> {
    if args.target.is_some()
        || args.noise.is_some()
        || args.csv.is_some()
        || args.sampler_options_given()
    {
        return Err(usage(
            "a sphere preset takes --h, --chains, --steps and --seed (projected SGD has no \
             other option on the command line; edit the file for momentum and batch)",
        ));
    }
    if let Some(v) = args.h {
        preset.sampler.h = checked(ranges::SPHERE_STEP_SIZE, v)?;
    }
    if let Some(v) = args.chains {
        preset.chains = checked(ranges::CHAINS, f64::from(v))? as u32;
    }
    if let Some(v) = args.steps {
        preset.steps = checked(ranges::STEPS, f64::from(v))? as u32;
    }
    if let Some(v) = args.seed {
        preset.seed = v;
    }
    Ok(())
}

fn execute_comparison(
    comparison: crate::preset::Comparison,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
) -> Result<(), Failure> {
    check_csv(csv)?;
    let columns = comparison.columns.len();
    let bar = progress_bar(
        comparison.base.steps * columns as u32,
        format!("{} samplers side by side", columns),
    );
    let steps = comparison.base.steps;
    let outcomes = runner::run_comparison(&comparison, backend, &mut |k, done| {
        bar.set_position(u64::from(k as u32 * steps + done))
    })
    .map_err(|e| Failure {
        code: 1,
        message: format!("{e:#}"),
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
        eprintln!(
            "{label}: {} on {}; diverged {:.2}%, energy distance {:.4} (exact samples {:.4})",
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

fn apply_mlp_overrides(preset: &mut MlpPreset, args: &RunArgs) -> Result<(), Failure> {
    if args.target.is_some() || args.noise.is_some() {
        return Err(usage(
            "--target and --noise belong to 2-D presets: an MLP preset's posterior is its \
             network and data set, and its gradient noise comes from real minibatches",
        ));
    }
    apply_sampler_overrides(&mut preset.sampler, args)?;
    if let Some(v) = args.chains {
        preset.chains = checked(ranges::MLP_CHAINS, f64::from(v))? as u32;
    }
    if let Some(v) = args.steps {
        preset.steps = checked(ranges::STEPS, f64::from(v))? as u32;
    }
    if let Some(v) = args.seed {
        preset.seed = v;
    }
    preset.validate().map_err(|(_, message)| usage(message))?;
    Ok(())
}

/// The sampler options of `run`, shared by both kinds of preset.
fn apply_sampler_overrides(s: &mut SamplerSpec, args: &RunArgs) -> Result<(), Failure> {
    if let Some(name) = &args.sampler {
        let kind = SamplerKind::from_name(name).ok_or_else(|| {
            let names: Vec<_> = SamplerKind::ALL.iter().map(|(_, n)| *n).collect();
            usage(format!(
                "unknown sampler '{name}': choose one of {}",
                names.join(", ")
            ))
        })?;
        s.kind = kind;
    }
    if let Some(v) = args.h {
        s.h = checked(ranges::STEP_SIZE, v)?;
    }
    if let Some(v) = args.friction_floor {
        s.friction_floor = checked(ranges::FRICTION_FLOOR, v)?;
    }
    if let Some(v) = args.m {
        s.mass = checked(ranges::MASS, v)?;
    }
    if let Some(v) = args.temperature {
        s.temperature = checked(ranges::TEMPERATURE, v)?;
    }
    if let Some(text) = &args.friction_sign {
        let v: f64 = text.trim().parse().map_err(|_| {
            usage(format!(
                "--friction-sign '{text}' is not a number: use +1 (correct), -1 (as printed) or a value in [-1, 1]"
            ))
        })?;
        s.friction_sign = checked(ranges::FRICTION_SIGN, v)?;
    }
    if let Some(v) = args.xi_update {
        s.xi_update = v.into();
    }
    if let Some(v) = args.noise_mass {
        s.noise_mass = v.into();
    }
    Ok(())
}

fn apply_overrides(preset: &mut Preset, args: &RunArgs) -> Result<(), Failure> {
    apply_sampler_overrides(&mut preset.sampler, args)?;
    if let Some(name) = &args.target {
        preset.target = TargetSpec::from_name(name).ok_or_else(|| {
            let names: Vec<_> = TARGET_NAMES.iter().map(|(n, _)| *n).collect();
            usage(format!(
                "unknown target '{name}': choose one of {}",
                names.join(", ")
            ))
        })?;
    }
    if let Some(v) = args.chains {
        preset.chains = checked(ranges::CHAINS, f64::from(v))? as u32;
    }
    if let Some(v) = args.steps {
        preset.steps = checked(ranges::STEPS, f64::from(v))? as u32;
    }
    if let Some(v) = args.seed {
        preset.seed = v;
    }
    if let Some(v) = args.noise {
        let sigma = checked(ranges::NOISE_SIGMA, v)?;
        preset.noise = if sigma == 0.0 {
            NoiseSpec::None
        } else {
            NoiseSpec::Isotropic { sigma }
        };
    }
    preset.validate().map_err(|(_, message)| usage(message))?;
    Ok(())
}

fn execute(
    preset: Preset,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let bar = progress_bar(
        preset.steps,
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
        .map_err(|e| usage(format!("{e:#}")))?;
    let outcome = runner::run_streaming(
        &preset,
        backend,
        &mut |done| bar.set_position(u64::from(done)),
        &mut |row| file.as_mut().map_or(Ok(()), |f| f.write(row)),
    )
    .map_err(|e| Failure {
        code: 1,
        message: format!("{e:#}"),
    })?;
    bar.finish_and_clear();
    if let Some(notice) = &outcome.notice {
        eprintln!("notice: {notice}");
    }
    if let Some(f) = file {
        f.finish().map_err(|e| Failure {
            code: 1,
            message: format!("{e:#}"),
        })?;
    }
    let s = &outcome.summary;
    for w in &s.warnings {
        eprintln!("warning: {w}");
    }
    eprintln!(
        "{} on {}: {} chains × {} steps on {} ({}), {:.3e} chain-steps/s; diverged {:.2}%",
        s.sampler,
        s.target,
        s.chains,
        s.steps,
        s.backend,
        s.device,
        s.chain_steps_per_s,
        100.0 * s.diverged_fraction
    );
    print_json(s)
}

/// A progress bar over `steps` on stderr.
fn progress_bar(steps: u32, message: String) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(u64::from(steps));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} steps, {per_sec}, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// Prints a summary as the last line of stdout.
fn print_json(summary: &impl serde::Serialize) -> Result<(), Failure> {
    let json = serde_json::to_string(summary).map_err(|e| Failure {
        code: 1,
        message: e.to_string(),
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{json}")
        .and_then(|()| out.flush())
        .map_err(|e| Failure {
            code: 1,
            message: format!("cannot write the result to standard output: {e}"),
        })
}

/// Writes the time series when `--csv` asked for it.
fn write_csv(path: Option<&std::path::Path>, text: impl FnOnce() -> String) -> Result<(), Failure> {
    if let Some(path) = path {
        std::fs::write(path, text()).map_err(|e| Failure {
            code: 1,
            message: format!("cannot write {}: {e}", path.display()),
        })?;
    }
    Ok(())
}

/// Checks before a run that `--csv` can be written: the file is created (empty) now.
fn check_csv(path: Option<&std::path::Path>) -> Result<(), Failure> {
    if let Some(path) = path {
        std::fs::File::create(path)
            .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

fn execute_mlp(
    preset: MlpPreset,
    backend: BackendChoice,
    csv: Option<&std::path::Path>,
) -> Result<(), Failure> {
    check_csv(csv)?;
    let bar = progress_bar(
        preset.steps,
        format!(
            "{} on {} networks ({})",
            preset.sampler.kind.name(),
            preset.chains,
            preset.network.data.source.name()
        ),
    );
    let outcome = runner::mlp::run_mlp(&preset, backend, &mut |done| {
        bar.set_position(u64::from(done))
    })
    .map_err(|e| Failure {
        code: 1,
        message: format!("{e:#}"),
    })?;
    bar.finish_and_clear();
    if let Some(notice) = &outcome.notice {
        eprintln!("notice: {notice}");
    }
    write_csv(csv, || crate::diagnostics::mlp::series_csv(&outcome.series))?;
    let s = &outcome.summary;
    let sgd = &s.baseline_sgd.test;
    // With every network diverged there is no posterior predictive to quote.
    let predictive = s.posterior_predictive.as_ref().map_or_else(
        || "no alive networks".to_string(),
        |pp| {
            let pp = &pp.test;
            format!(
                "test accuracy {:.1}% / NLL {:.3} / ECE {:.3}",
                100.0 * pp.accuracy,
                pp.nll,
                pp.ece
            )
        },
    );
    eprintln!(
        "{} on {} networks {} ({}) on {}: {predictive} \
         (SGD network: {:.1}% / {:.3} / {:.3}); diverged {:.2}%; {:.3e} network-gradients/s",
        s.sampler,
        s.chains,
        s.network,
        s.data,
        s.backend,
        100.0 * sgd.accuracy,
        sgd.nll,
        sgd.ece,
        100.0 * s.diverged_fraction,
        s.chain_gradients_per_s
    );
    print_json(s)
}
