//! `atmc-lab thermo`: a learning-rate sweep measured thermodynamically (MATH.md §5), run
//! through the sweep machinery: a sweep file `DIR/thermo.ron` is written first, so the same
//! sweep can be sharded (`--shard`), merged (`--merge`) or sent to SLURM (`atmc-lab sweep
//! DIR/thermo.ron --slurm`).

use super::sweep::SweepOutput;
use super::{Failure, in_range, whole_in_range};
use crate::diagnostics::thermodynamics::{
    DEFAULT_SLOPE_WINDOW, SLOPE_WINDOWS, VARIANT_DIVISORS, VARIANT_K,
};
use crate::math::ranges::{THERMO_LR, THERMO_POINTS, short_fixed};
use crate::preset::AnyPreset;
use crate::preset::fields::{self, Number};
use crate::preset::sweep_file::Sweep;
use crate::sweep::thermodynamics::TableOptions;
use crate::sweep::{self, Shard};
use std::path::{Path, PathBuf};

/// Options of `atmc-lab thermo`.
#[derive(Debug, clap::Args)]
pub struct ThermoArgs {
    /// A 2-D preset (its sampler runs at every learning rate: SGD, SGHMC, ATMC, …), a
    /// sphere preset (`sphere-op`, `sphere-up`) or an MLP preset (`mlp-up`, `mlp-op`).
    #[arg(conflicts_with = "merge")]
    preset: Option<String>,
    /// Smallest learning rate (step size h) of the log grid.
    #[arg(long, value_parser = in_range(THERMO_LR))]
    lr_min: Option<f64>,
    /// Largest learning rate.
    #[arg(long, value_parser = in_range(THERMO_LR))]
    lr_max: Option<f64>,
    /// Learning rates on the grid.
    #[arg(long, default_value_t = 12, value_parser = whole_in_range(THERMO_POINTS))]
    points: u32,
    /// Chains per learning rate [default: the preset's].
    #[arg(long, value_parser = super::whole::<u32>)]
    chains: Option<u32>,
    /// Steps per learning rate [default: the preset's].
    #[arg(long, value_parser = super::whole::<u32>)]
    steps: Option<u32>,
    /// η* of the free-energy test F(η; T*) = U(η) − T(η*)·S(η) (the nearest measured learning
    /// rate is taken) [default: the middle one].
    #[arg(long, value_parser = in_range(THERMO_LR))]
    eta_star: Option<f64>,
    /// Points of the slope fit dU/dS around each learning rate: 3, 5 or 7.
    #[arg(long, default_value_t = DEFAULT_SLOPE_WINDOW, value_parser = slope_window)]
    slope_window: usize,
    /// Neighbour rank k of the entropy the slopes use: 2, 5, 10 or 20 (stored per 2-D point)
    /// [default: 5].
    #[arg(long, value_parser = one_of(&VARIANT_K))]
    knn_k: Option<u32>,
    /// Use every d-th chain (of at most 20,000) for that entropy: 1, 4 or 16 (stored per 2-D
    /// point) [default: 1].
    #[arg(long, value_parser = one_of(&VARIANT_DIVISORS))]
    knn_subsample: Option<u32>,
    #[command(flatten)]
    output: SweepOutput,
}

impl ThermoArgs {
    /// The table's options from the flags.
    fn table_options(&self) -> TableOptions {
        TableOptions {
            knn: (self.knn_k.is_some() || self.knn_subsample.is_some())
                .then(|| (self.knn_k.unwrap_or(5), self.knn_subsample.unwrap_or(1))),
            window: self.slope_window,
            eta_star: self.eta_star,
        }
    }
}

/// Parses a slope window (3, 5 or 7 points).
fn slope_window(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(w) if SLOPE_WINDOWS.contains(&w) => Ok(w),
        _ => Err(format!("'{text}' is not a slope window: use 3, 5 or 7")),
    }
}

/// A parser of a whole number from a short list.
fn one_of(
    allowed: &'static [u32],
) -> impl Fn(&str) -> Result<u32, String> + Clone + Send + Sync + 'static {
    move |text| match text.trim().parse::<u32>() {
        Ok(v) if allowed.contains(&v) => Ok(v),
        _ => Err(format!(
            "'{text}' is not offered: use one of {}",
            allowed
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Runs `atmc-lab thermo`.
pub fn thermo(args: &ThermoArgs) -> Result<(), Failure> {
    let output = &args.output;
    if let Some(dir) = &output.merge {
        let merged = output.merge_shards(dir)?;
        return report_table(&merged, args.table_options(), output.csv.as_deref(), None);
    }
    let name = args
        .preset
        .as_deref()
        .ok_or_else(|| Failure::usage("thermo: give a preset, or --merge DIR"))?;
    let (lo, hi) = match (args.lr_min, args.lr_max) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(Failure::usage("thermo: give --lr-min and --lr-max")),
    };
    if lo >= hi {
        return Err(Failure::usage(format!(
            "--lr-min {lo} must be below --lr-max {hi}"
        )));
    }
    let preset = AnyPreset::load(name).map_err(|e| Failure::usage(e.to_string()))?;
    if let AnyPreset::Comparison(_) = preset {
        return Err(Failure::usage(format!(
            "{name}: the thermodynamics lab takes a 2-D, sphere or MLP preset, not a comparison"
        )));
    }
    // Checked here, against the preset's kind (an MLP preset's chains are networks), by the
    // path `run --chains` takes; the sweep file sets them on every point.
    let given: Vec<(&str, Number)> = [("chains", args.chains), ("steps", args.steps)]
        .into_iter()
        .filter_map(|(path, v)| Some((path, Number::from(v?))))
        .collect();
    fields::set(&preset, &given, None).map_err(Failure::usage)?;
    // A relative preset path is read from the sweep file's folder: make it absolute.
    let base = if Path::new(name).exists() {
        std::fs::canonicalize(name)
            .map_err(|e| Failure::usage(format!("{name}: {e}")))?
            .display()
            .to_string()
    } else {
        name.to_owned()
    };
    let spec = sweep::thermodynamics::spec(&base, (lo, hi), args.points, args.chains, args.steps);
    // Every learning rate is checked against the preset before anything is written (a
    // sphere's η, say, stops at 10); the generated file's line numbers would mean nothing.
    let text = ron::ser::to_string_pretty(&spec, ron::ser::PrettyConfig::new().struct_names(true))
        .expect("a sweep serialises");
    let loaded = Sweep::parse(&text, name, Path::new("."))
        .map_err(|e| Failure::usage(format!("{name}: {}", e.message)))?;
    let stem = Path::new(name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("preset");
    let out = output.folder(|| PathBuf::from(format!("thermo-{stem}")))?;
    let shard = output.prepare(&out)?;
    let sweep_file = out.join("thermo.ron");
    {
        // Under the folder's lock: the shards there are checked to be this grid's before
        // `thermo.ron` is rewritten to describe it, and it is written whole or not at all.
        let _folder = sweep::lock_folder(&out)?;
        sweep::check_folder(&loaded, &out)?;
        sweep::refuse_foreign(&sweep_file, |path| {
            crate::fsutil::read_text(path, crate::fsutil::TEXT_FILES)
                .is_ok_and(|t| crate::preset::sweep_file::is_sweep_text(&t))
        })?;
        crate::fsutil::write_atomic(&sweep_file, &text)
            .map_err(|e| Failure::usage(format!("{e:#}")))?;
    }
    let (report, wall) = output.run(&loaded, shard, &out, &loaded.spec.name)?;
    note!(
        "{}: {} learning rates run, {} already there, {wall:.1} s",
        shard.file(&out).display(),
        report.ran,
        report.skipped
    );
    if shard != Shard::ALL {
        note!(
            "when every shard is done: atmc-lab thermo --merge {} [--csv FILE]",
            out.display()
        );
        return Ok(());
    }
    let merged = sweep::merge(&out)?;
    report_table(
        &merged,
        args.table_options(),
        output.csv.as_deref(),
        Some(wall),
    )
}

/// Prints the table to stderr, writes the CSV, and prints a JSON summary as the last line of
/// stdout.
fn report_table(
    merged: &sweep::Merged,
    options: TableOptions,
    csv: Option<&Path>,
    wall: Option<f64>,
) -> Result<(), Failure> {
    let table = sweep::thermodynamics::table_with(merged, options)
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    // Every number through one formatter: a diverged point's 1e300 stays one short cell.
    let short = |v: Option<f64>| v.map_or("—".to_owned(), |x| short_fixed(x, 4));
    note!(
        "{:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>8}  \
         stationary",
        "η",
        "U",
        "S_knn",
        "S_hist",
        "T_slope",
        "T_gibbs",
        "T_theory",
        "TV",
        "TV exact",
        "TV 95%",
        "KS",
        "KS 95%",
        "Gibbs",
        "SNR"
    );
    for r in &table.rows {
        let p = &r.point;
        note!(
            "{:>10.4e} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>8}  \
             {}",
            p.eta,
            short(Some(p.u)),
            short(p.s_knn),
            short(p.s_hist),
            short(r.t_slope),
            short(p.t_gibbs),
            short(p.t_theory),
            short(p.gibbs_tv),
            short(p.gibbs_tv_baseline),
            short(p.gibbs_tv_critical),
            short(p.ks_distance),
            short(p.ks_critical),
            p.gibbs_consistent
                .map_or("—", |c| if c { "yes" } else { "no" }),
            short(p.snr),
            p.excluded.as_deref().unwrap_or("yes")
        );
    }
    // The sphere's harmonic test of the longitudes, reported beside the Gibbs verdict.
    for r in table.rows.iter() {
        if let Some(longitude) = &r.point.longitude {
            note!("η = {:.4e}: {}", r.point.eta, longitude.line());
        }
    }
    if let Some(f) = &table.free_energy_test {
        let at = |t: Option<f64>, eta: Option<f64>, off: Option<usize>| match (t, eta, off) {
            (Some(t), Some(eta), Some(off)) => format!(
                "T* = {} is smallest at η = {eta:.4e} ({off} grid steps from η*)",
                short(Some(t))
            ),
            _ => "—".to_owned(),
        };
        note!(
            "F(η; T*) = U(η) − T*·S(η) at η* = {:.4e}: with T_slope(η*), {}; with T_gibbs(η*), {}",
            f.eta_star,
            at(f.t_slope_star, f.eta_min_slope, f.slope_steps_off),
            at(f.t_gibbs_star, f.eta_min_gibbs, f.gibbs_steps_off),
        );
    }
    let total = table.rows.len();
    let left_out = table.left_out();
    if !left_out.is_empty() {
        note!("Left out of slopes and fits:");
        for g in &left_out {
            note!("  {}", g.text(total));
        }
    }
    for g in table.unmeasured_windows() {
        note!(
            "Windowed S of the networks not measured at {}.",
            g.text(total)
        );
    }
    if let Some(path) = csv {
        crate::fsutil::write_atomic(path, sweep::thermodynamics::csv(&table))?;
        note!("wrote {}", path.display());
    }
    let included: Vec<&sweep::thermodynamics::Row> = table
        .rows
        .iter()
        .filter(|r| r.point.excluded.is_none())
        .collect();
    let max_rel = |f: &dyn Fn(&sweep::thermodynamics::Row) -> Option<(f64, f64)>| {
        included
            .iter()
            .filter_map(|r| f(r))
            .map(|(a, b)| (a / b - 1.0).abs())
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    let summary = serde_json::json!({
        "sweep": merged.header.sweep,
        "points": table.rows.len(),
        "included": included.len(),
        "excluded": table.rows.iter().filter(|r| r.point.excluded.is_some())
            .map(|r| serde_json::json!({"eta": r.point.eta, "why": r.point.excluded}))
            .collect::<Vec<_>>(),
        "gibbs_consistent": table.rows.iter()
            .map(|r| serde_json::json!({"eta": r.point.eta, "consistent": r.point.gibbs_consistent}))
            .collect::<Vec<_>>(),
        "longitude_uniform": table.rows.iter()
            .filter_map(|r| r.point.longitude.as_ref().map(|l| serde_json::json!({
                "eta": r.point.eta,
                "uniform": l.uniform(),
                "p_value": l.p_value,
                "strongest": l.strongest,
                "amplitude": l.amplitude,
            })))
            .collect::<Vec<_>>(),
        "left_out": left_out,
        "windows_not_measured": table.unmeasured_windows(),
        "law": table.law.map(|(a, b)| serde_json::json!({"a": a, "b": b})),
        "max_rel_error_t_gibbs_vs_theory": max_rel(&|r| r.point.t_gibbs.zip(r.point.t_theory)),
        "max_rel_error_t_slope_vs_theory": max_rel(&|r| r.t_slope.zip(r.point.t_theory)),
        "max_rel_error_var_vs_theory": max_rel(&|r| r.point.var.first().copied().zip(r.point.var_theory)),
        "max_rel_error_t_slope_vs_t_gibbs": max_rel(&|r| r.t_slope.zip(r.point.t_gibbs)),
        "max_abs_error_s_knn_vs_theory": included.iter()
            .filter_map(|r| r.point.s_knn.zip(r.point.s_theory).map(|(a, b)| (a - b).abs()))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
        "held_out_max_rel_error_u": max_rel(&|r| r.u_predicted.map(|u| (u, r.point.u))),
        "options": table.options,
        "free_energy_test": table.free_energy_test,
        "max_rel_spread_t_slope": included.iter()
            .filter_map(|r| r.t_slope.zip(r.t_slope_spread).map(|(t, (lo, hi))| (hi - lo) / t))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
        "held_out_max_abs_error_s": included.iter()
            .filter_map(|r| r.s_predicted.zip(r.point.s_knn).map(|(a, b)| (a - b).abs()))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v)))),
        "elapsed_s": wall,
    });
    Ok(super::emit(summary)?)
}
