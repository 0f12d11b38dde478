//! A thermodynamics sweep's table (MATH.md §5): the measured points of a merged sweep along
//! η, with the slope temperature dU/dS (for a chosen k-NN entropy and slope window, and its
//! spread over the others), the paper's free energy F(η; T*) = U(η) − T(η*)·S(η) at a chosen
//! η* with T* from the slope and from the Gibbs fit, and a held-out prediction: the law
//! T(η) = aη/(1 − bη) fitted to the Gibbs temperatures of every other learning rate predicts
//! T, U and S at the ones left out.

use super::Merged;
use crate::diagnostics::thermodynamics::{
    Cells, DEFAULT_SLOPE_WINDOW, FreeEnergyCurve, KnnVariant, Measured, SLOPE_WINDOWS, ThermoPoint,
    WINDOW_KEPT, fit_temperature_law, free_energy_test, measured, plane_cells,
    plane_quadrature_start, slope_spread, slope_temperatures_with, sphere_quadrature,
    temperature_law, variant_entropy,
};
use crate::math::sphere::loss as sphere_loss;
use crate::preset::AnyPreset;
use crate::preset::sweep_file::{AxisSpec, Combine, Measure, SeedPolicy, SweepSpec, Values};
use serde::Serialize;

/// The sweep spec of a thermodynamics sweep of `preset` over a log grid of learning rates.
pub fn spec(
    preset: &str,
    lr: (f64, f64),
    points: u32,
    chains: Option<u32>,
    steps: Option<u32>,
) -> SweepSpec {
    let mut set = std::collections::BTreeMap::new();
    if let Some(c) = chains {
        set.insert("chains".to_owned(), f64::from(c));
    }
    if let Some(s) = steps {
        set.insert("steps".to_owned(), f64::from(s));
    }
    SweepSpec {
        name: format!("Thermodynamics of {preset}"),
        description: format!(
            "U, S, the slope and Gibbs temperatures of {preset} over {points} learning rates \
             from {} to {}",
            lr.0, lr.1
        ),
        base: preset.to_owned(),
        set,
        axes: vec![AxisSpec {
            field: "sampler.h".into(),
            values: Values::Log {
                from: lr.0,
                to: lr.1,
                points,
            },
        }],
        combine: Combine::Product,
        keep: Vec::new(),
        seeds: SeedPolicy::Same,
        measure: Measure::Thermo,
    }
}

/// The log grid of `points` learning rates over about `lr`, shifted so that `eta` is one of
/// them, and its row: a lesson run at η = 0.02 is swept through 0.02 itself, not past it
/// (the grid 0.01 … 1 has 0.0152 and 0.0231). The shift is under half a grid step; with one
/// point, or `eta` not positive, the grid is `lr` as it is.
pub fn ladder_through(lr: (f64, f64), points: u32, eta: f64) -> ((f64, f64), usize) {
    let (lo, hi) = lr;
    if points < 2 || !(eta > 0.0 && lo > 0.0 && hi > lo) {
        return (lr, 0);
    }
    let step = (hi / lo).ln() / f64::from(points - 1);
    let k = ((eta / lo).ln() / step)
        .round()
        .clamp(0.0, f64::from(points - 1));
    let shift = eta / (lo * (k * step).exp());
    let grid = if k == 0.0 {
        // The first row exactly as asked (the grid's ends are kept as written).
        (eta, hi * shift)
    } else if k == f64::from(points - 1) {
        (lo * shift, eta)
    } else {
        (lo * shift, hi * shift)
    };
    (grid, k as usize)
}

/// What the table computes beyond the records (MATH.md §5.6): which k-NN entropy and slope
/// window the slope temperatures use, and the η* of the free-energy test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TableOptions {
    /// Neighbour rank k and subsample divisor of the entropy the slopes and F use, one of a
    /// point's stored variants; None: the record's S (k = 5, every alive chain).
    pub knn: Option<(u32, u32)>,
    /// Points of the slope fit (3, 5 or 7).
    pub window: usize,
    /// η* of the free-energy test: the nearest measured learning rate is taken; None: the
    /// middle row.
    pub eta_star: Option<f64>,
}

impl Default for TableOptions {
    fn default() -> Self {
        Self {
            knn: None,
            window: DEFAULT_SLOPE_WINDOW,
            eta_star: None,
        }
    }
}

/// The test of the paper's claim at η* (MATH.md §5.1): where F(η; T*) = U(η) − T*·S(η) is
/// smallest with T* = T_slope(η*) (circular) and with T* = T_gibbs(η*) (independent). Row
/// indices are the table's; the curves are each row's `f_slope_star` and `f_gibbs_star`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FreeEnergySummary {
    /// Row of η*.
    pub star: usize,
    /// η*.
    pub eta_star: f64,
    /// T_slope(η*).
    pub t_slope_star: Option<f64>,
    /// T_gibbs(η*).
    pub t_gibbs_star: Option<f64>,
    /// Row where F(η; T_slope(η*)) is smallest.
    pub min_slope: Option<usize>,
    /// Row where F(η; T_gibbs(η*)) is smallest.
    pub min_gibbs: Option<usize>,
    /// η of that minimum.
    pub eta_min_slope: Option<f64>,
    /// η of that minimum.
    pub eta_min_gibbs: Option<f64>,
    /// Grid steps between η* and the minimum with T_slope(η*).
    pub slope_steps_off: Option<usize>,
    /// Grid steps between η* and the minimum with T_gibbs(η*).
    pub gibbs_steps_off: Option<usize>,
    /// The paper's claim at η*, tested independently: F(η; T_gibbs(η*)) is smallest within
    /// one grid step of η*.
    pub claim_holds: Option<bool>,
}

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Index of the record in the merged table.
    pub record: usize,
    /// The group of rows with the same values on every axis but η (slopes and the
    /// free-energy test stay within one).
    pub group: usize,
    /// The point as measured.
    #[serde(flatten)]
    pub point: ThermoPoint,
    /// dU/dS from the neighbouring included learning rates.
    pub t_slope: Option<f64>,
    /// The smallest and largest T_slope over every stored k-NN variant (k, N) and every slope
    /// window (3, 5, 7): how much the slope temperature depends on them.
    pub t_slope_spread: Option<(f64, f64)>,
    /// T_slope with each window of [`SLOPE_WINDOWS`] (3, 5, 7 points), the chosen entropy.
    pub t_slope_windows: [Option<f64>; 3],
    /// U − T_slope(η)·S(η), each η with its own T: not the paper's construction (see
    /// `f_slope_star`), kept for comparison.
    pub free_energy: Option<f64>,
    /// F(η; T*) = U(η) − T_slope(η*)·S(η) at the table's η*.
    pub f_slope_star: Option<f64>,
    /// F(η; T*) = U(η) − T_gibbs(η*)·S(η) at the table's η*.
    pub f_gibbs_star: Option<f64>,
    /// For a held-out learning rate: T from the law fitted on the others.
    pub t_predicted: Option<f64>,
    /// The Gibbs law's U at that T.
    pub u_predicted: Option<f64>,
    /// The Gibbs law's S at that T.
    pub s_predicted: Option<f64>,
}

/// The table of a thermodynamics sweep and its held-out fit.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// Rows in order of η (within each group of the other axes' values).
    pub rows: Vec<Row>,
    /// The law T(η) = aη/(1 − bη) fitted on the even-numbered included rows: (a, b).
    pub law: Option<(f64, f64)>,
    /// The entropy, slope window and η* the slopes and the free-energy test use.
    pub options: TableOptions,
    /// The free-energy test at η*.
    pub free_energy_test: Option<FreeEnergySummary>,
}

/// Learning rates that share one reason, for a list that says each reason once.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Grouped {
    /// The reason, as the records give it.
    pub reason: String,
    /// The learning rates it applies to, in table order.
    pub etas: Vec<f64>,
}

impl Grouped {
    /// "η = a, b: reason" (or "all N learning rates: reason") for a table of `total` rows.
    pub fn text(&self, total: usize) -> String {
        format!("{}: {}", etas_text(&self.etas, total), self.reason)
    }
}

/// "every learning rate" when `etas` are all `total` of them, else "η = a, b, c" (three
/// significant figures).
pub fn etas_text(etas: &[f64], total: usize) -> String {
    if etas.len() == total && total > 1 {
        return format!("all {total} learning rates");
    }
    let list: Vec<String> = etas.iter().map(|&e| significant(e)).collect();
    format!("η = {}", list.join(", "))
}

/// A learning rate to three significant figures, without an exponent in [1e-4, 1e4).
fn significant(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if (-4..4).contains(&magnitude) {
        let decimals = (2 - magnitude).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.2e}")
    }
}

/// `(reason, η)` pairs grouped by reason, in order of first appearance.
fn group_reasons(pairs: impl Iterator<Item = (String, f64)>) -> Vec<Grouped> {
    let mut out: Vec<Grouped> = Vec::new();
    for (reason, eta) in pairs {
        match out.iter_mut().find(|g| g.reason == reason) {
            Some(g) => g.etas.push(eta),
            None => out.push(Grouped {
                reason,
                etas: vec![eta],
            }),
        }
    }
    out
}

impl Table {
    /// The learning rates left out of slopes and fits, grouped by why: a left-out point's
    /// own reason, or (networks) that the ensemble's S does not count in weight space.
    pub fn left_out(&self) -> Vec<Grouped> {
        group_reasons(self.rows.iter().filter_map(|r| {
            let why = match (&r.point.excluded, &r.point.ensemble_entropy_note) {
                (Some(w), _) => w.clone(),
                (None, Some(_)) => "no T_slope: the ensemble's S does not count in weight \
                                    space (its k-th neighbours are other networks)"
                    .to_owned(),
                (None, None) => return None,
            };
            Some((why, r.point.eta))
        }))
    }

    /// The learning rates whose networks' windowed S was not measured, grouped by why: the
    /// networks drift (no run length helps), the run is too short (with the steps a run
    /// needs at all of them, the largest need), or the window's own note.
    pub fn unmeasured_windows(&self) -> Vec<Grouped> {
        let unmeasured: Vec<(&crate::diagnostics::thermodynamics::WindowEntropy, f64)> = self
            .rows
            .iter()
            .filter_map(|r| Some((r.point.window.as_ref()?, r.point.eta)))
            .filter(|(w, _)| w.s.is_none())
            .collect();
        let most_steps = unmeasured.iter().filter_map(|(w, _)| w.steps_needed).max();
        group_reasons(unmeasured.iter().map(|(w, eta)| {
            let why = if 2 * w.drifting >= w.networks && w.drifting > 0 {
                "the networks drift along their widest direction: a longer run keeps \
                 drifting, so no window of it measures a stationary spread"
                    .to_owned()
            } else if let (Some(_), Some(steps)) = (w.steps_needed, most_steps) {
                format!(
                    "too few independent iterates in the window; a run of at least {steps} \
                     steps would measure it"
                )
            } else if w.kept > 0 && (w.kept as usize) < WINDOW_KEPT {
                // Records written before the drift check carry no steps: one reason for all.
                format!("too few independent iterates in the window ({WINDOW_KEPT} needed)")
            } else {
                w.note.clone().unwrap_or_else(|| "not measured".to_owned())
            };
            (why, *eta)
        }))
    }

    /// The rows of each group, as ranges of `rows`.
    fn groups(&self) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < self.rows.len() {
            let g = self.rows[start].group;
            let end = start
                + self.rows[start..]
                    .iter()
                    .take_while(|r| r.group == g)
                    .count();
            out.push(start..end);
            start = end;
        }
        out
    }

    /// The measurements of `range` with the entropy of `knn` (None: the record's S).
    fn measured_with(
        &self,
        range: std::ops::Range<usize>,
        knn: Option<(u32, u32)>,
    ) -> Vec<Measured> {
        let points: Vec<ThermoPoint> = self.rows[range.clone()]
            .iter()
            .map(|r| r.point.clone())
            .collect();
        let mut m = measured(&points);
        if let Some((k, divisor)) = knn {
            for (mi, row) in m.iter_mut().zip(&self.rows[range]) {
                let s = variant_entropy(&row.point.s_knn_variants, k, divisor);
                mi.s = s.unwrap_or(f64::NAN);
                mi.included = mi.included && s.is_some_and(f64::is_finite);
            }
        }
        m
    }

    /// The row nearest to `eta` in log η (the middle row when None).
    pub fn row_nearest(&self, eta: Option<f64>) -> Option<usize> {
        if self.rows.is_empty() {
            return None;
        }
        let Some(eta) = eta.filter(|e| *e > 0.0) else {
            return Some(self.rows.len() / 2);
        };
        (0..self.rows.len()).min_by(|&a, &b| {
            let d = |i: usize| (self.rows[i].point.eta.ln() - eta.ln()).abs();
            d(a).total_cmp(&d(b))
        })
    }

    /// Recomputes the slope temperatures, their spread, both free energies and the
    /// free-energy test for `options` (cheap: no quadrature, no records read).
    pub fn apply(&mut self, options: TableOptions) {
        self.options = options;
        for range in self.groups() {
            let m = self.measured_with(range.clone(), options.knn);
            let slopes = slope_temperatures_with(&m, options.window);
            let variants: Vec<&[KnnVariant]> = self.rows[range.clone()]
                .iter()
                .map(|r| r.point.s_knn_variants.as_slice())
                .collect();
            let spread = slope_spread(&m, &variants);
            let by_window = SLOPE_WINDOWS.map(|w| slope_temperatures_with(&m, w));
            for (i, (((row, slope), mi), sp)) in self.rows[range]
                .iter_mut()
                .zip(slopes)
                .zip(&m)
                .zip(spread)
                .enumerate()
            {
                row.t_slope = slope;
                row.t_slope_spread = sp;
                row.t_slope_windows = [0, 1, 2].map(|w| by_window[w][i]);
                row.free_energy = slope
                    .filter(|_| mi.s.is_finite())
                    .map(|t| row.point.u - t * mi.s);
            }
        }
        self.set_eta_star(self.row_nearest(options.eta_star));
    }

    /// The free-energy test at row `star` (none: cleared): F(η; T*) of its group with
    /// T* = T_slope(η*) and T_gibbs(η*), into each row and [`Table::free_energy_test`].
    pub fn set_eta_star(&mut self, star: Option<usize>) {
        for row in &mut self.rows {
            (row.f_slope_star, row.f_gibbs_star) = (None, None);
        }
        self.free_energy_test = None;
        let Some(star) = star.filter(|&s| s < self.rows.len()) else {
            return;
        };
        self.options.eta_star = Some(self.rows[star].point.eta);
        let Some(range) = self.groups().into_iter().find(|g| g.contains(&star)) else {
            return;
        };
        let m = self.measured_with(range.clone(), self.options.knn);
        let (t_slope, t_gibbs) = (self.rows[star].t_slope, self.rows[star].point.t_gibbs);
        let test = free_energy_test(&m, star - range.start, t_slope, t_gibbs);
        let values = |c: &Option<FreeEnergyCurve>, i: usize| c.as_ref().and_then(|c| c.values[i]);
        for (i, row) in self.rows[range.clone()].iter_mut().enumerate() {
            row.f_slope_star = values(&test.slope, i);
            row.f_gibbs_star = values(&test.gibbs, i);
        }
        let row_of = |c: &Option<FreeEnergyCurve>| {
            c.as_ref().and_then(|c| c.argmin).map(|i| range.start + i)
        };
        let (min_slope, min_gibbs) = (row_of(&test.slope), row_of(&test.gibbs));
        let eta = |r: Option<usize>| r.map(|r| self.rows[r].point.eta);
        self.free_energy_test = Some(FreeEnergySummary {
            star,
            eta_star: self.rows[star].point.eta,
            t_slope_star: t_slope,
            t_gibbs_star: t_gibbs,
            min_slope,
            min_gibbs,
            eta_min_slope: eta(min_slope),
            eta_min_gibbs: eta(min_gibbs),
            slope_steps_off: test.slope_steps_off(),
            gibbs_steps_off: test.gibbs_steps_off(),
            claim_holds: test.gibbs_steps_off().map(|off| off <= 1),
        });
    }
}

/// Quadrature cells of a point's loss at temperature `t`; on the sphere those of the upper
/// hemisphere where the point's ensemble was `folded` (its S is then the folded law's).
fn cells_for(preset: &AnyPreset, t: f64, folded: bool) -> Option<Cells> {
    match preset {
        AnyPreset::Toy(p) => {
            // A point whose typed formula fails its checks has no cells to integrate.
            let target = p.target.build().ok()?;
            let start = plane_quadrature_start(&target);
            Some(plane_cells(&|x| target.neg_log_density(x), start, t).1)
        }
        AnyPreset::Sphere(p) => {
            let objects = p.problem.objects();
            let whole = sphere_quadrature(&|x| sphere_loss(&objects, x));
            Some(if folded { whole.folded() } else { whole }.cells)
        }
        _ => None,
    }
}

/// The base preset of a merged sweep with a record's coordinates.
fn point_preset(merged: &Merged, coords: &[f64]) -> Option<AnyPreset> {
    let header = &merged.header;
    let fields: Vec<&str> = header.fields.iter().map(String::as_str).collect();
    crate::preset::sweep_file::apply(&header.base, &fields, coords, None).ok()
}

/// The table of a merged thermodynamics sweep with the default options; an error when its
/// records are not thermodynamic measurements.
pub fn table(merged: &Merged) -> anyhow::Result<Table> {
    table_with(merged, TableOptions::default())
}

/// The table of a merged thermodynamics sweep with `options`.
pub fn table_with(merged: &Merged, options: TableOptions) -> anyhow::Result<Table> {
    if merged.header.measure != Measure::Thermo {
        anyhow::bail!("this sweep measured runs, not thermodynamics (measure: Thermo)");
    }
    let eta_axis = merged.header.fields.iter().position(|f| f == "sampler.h");
    let mut rows: Vec<Row> = merged
        .records
        .iter()
        .enumerate()
        .map(|(k, r)| {
            Ok(Row {
                record: k,
                group: 0,
                point: ThermoPoint::from_record(r.run.clone())?,
                t_slope: None,
                t_slope_spread: None,
                t_slope_windows: [None; 3],
                free_energy: None,
                f_slope_star: None,
                f_gibbs_star: None,
                t_predicted: None,
                u_predicted: None,
                s_predicted: None,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    // Groups: the same values on every axis but η, each in order of η.
    let key = |row: &Row| -> Vec<u64> {
        merged.records[row.record]
            .coords
            .iter()
            .enumerate()
            .filter(|(a, _)| Some(*a) != eta_axis)
            .map(|(_, v)| v.to_bits())
            .collect()
    };
    rows.sort_by(|a, b| {
        key(a)
            .cmp(&key(b))
            .then(a.point.eta.total_cmp(&b.point.eta))
    });
    let mut law = None;
    let mut start = 0;
    let mut group_index = 0;
    while start < rows.len() {
        let k = key(&rows[start]);
        let end = start + rows[start..].iter().take_while(|r| key(r) == k).count();
        let group = &mut rows[start..end];
        for row in group.iter_mut() {
            row.group = group_index;
        }
        group_index += 1;
        // Held out: fit on every other included row, predict the rest.
        let included: Vec<usize> = (0..group.len())
            .filter(|&i| group[i].point.excluded.is_none())
            .collect();
        let fit: Vec<(f64, f64)> = included
            .iter()
            .step_by(2)
            .filter_map(|&i| group[i].point.t_gibbs.map(|t| (group[i].point.eta, t)))
            .collect();
        let group_law = fit_temperature_law(&fit);
        if let Some(l) = group_law {
            for &i in included.iter().skip(1).step_by(2) {
                let row = &mut group[i];
                let Some(t) = temperature_law(l, row.point.eta) else {
                    continue;
                };
                row.t_predicted = Some(t);
                let coords = &merged.records[row.record].coords;
                let folded = row.point.fold_note.is_some();
                if let Some(cells) =
                    point_preset(merged, coords).and_then(|p| cells_for(&p, t, folded))
                {
                    row.u_predicted = Some(cells.mean_loss(t));
                    row.s_predicted = Some(cells.entropy(t));
                }
            }
        }
        law = law.or(group_law);
        start = end;
    }
    let mut table = Table {
        rows,
        law,
        options,
        free_energy_test: None,
    };
    table.apply(options);
    Ok(table)
}

/// The table as CSV: η, U, S (k-NN, histogram), the temperatures, the Gibbs distance, SNR,
/// stationarity, the held-out predictions, F(η; T*) at the table's η* with T* = T_slope(η*)
/// and T_gibbs(η*), the spread of T_slope over k, N and windows, the Gibbs test's critical
/// values, KS distance and verdict, the k-NN entropy on quarters of the chains, and for
/// networks the windowed S with its dimension, why the ensemble S is not used for T_slope and
/// the windows' r-th eigenvalue over their noise edge, and on the sphere the harmonic test of
/// the longitudes (its p-value, strongest harmonic and that harmonic's amplitude; empty cells
/// where undefined).
pub fn csv(table: &Table) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "eta",
        "U",
        "U_se",
        "S_knn",
        "S_hist",
        "T_slope",
        "T_gibbs",
        "T_theory",
        "gibbs_tv",
        "gibbs_tv_baseline",
        "snr",
        "F",
        "var_1",
        "var_2",
        "stationary",
        "excluded",
        "T_predicted",
        "U_predicted",
        "S_predicted",
        "F_slope_star",
        "F_gibbs_star",
        "T_slope_min",
        "T_slope_max",
        "gibbs_tv_critical",
        "ks_distance",
        "ks_critical",
        "ks_p_value",
        "gibbs_consistent",
        "S_knn_quarter",
        "S_knn_quarter_se",
        "S_window",
        "S_window_se",
        "window_dims",
        "entropy_note",
        "window_edge_ratio",
        "longitude_p_value",
        "longitude_harmonic",
        "longitude_amplitude",
    ];
    w.write_record(header).expect("in memory");
    let num = |v: Option<f64>| {
        v.filter(|x| x.is_finite())
            .map_or(String::new(), |x| format!("{x:.6e}"))
    };
    for r in &table.rows {
        let p = &r.point;
        w.write_record([
            num(Some(p.eta)),
            num(Some(p.u)),
            num(Some(p.u_se)),
            num(p.s_knn),
            num(p.s_hist),
            num(r.t_slope),
            num(p.t_gibbs),
            num(p.t_theory),
            num(p.gibbs_tv),
            num(p.gibbs_tv_baseline),
            num(p.snr),
            num(r.free_energy),
            num(p.var.first().copied()),
            num(p.var.get(1).copied()),
            p.stationary.to_string(),
            p.excluded.clone().unwrap_or_default(),
            num(r.t_predicted),
            num(r.u_predicted),
            num(r.s_predicted),
            num(r.f_slope_star),
            num(r.f_gibbs_star),
            num(r.t_slope_spread.map(|s| s.0)),
            num(r.t_slope_spread.map(|s| s.1)),
            num(p.gibbs_tv_critical),
            num(p.ks_distance),
            num(p.ks_critical),
            num(p.ks_p_value),
            p.gibbs_consistent.map_or(String::new(), |c| c.to_string()),
            num(p.s_knn_quarter),
            num(p.s_knn_quarter_se),
            num(p.window.as_ref().and_then(|w| w.s)),
            num(p.window.as_ref().and_then(|w| w.s_se)),
            p.window
                .as_ref()
                .map_or(String::new(), |w| w.dims.to_string()),
            p.ensemble_entropy_note.clone().unwrap_or_default(),
            num(p.window.as_ref().and_then(|w| w.edge_ratio)),
            num(p.longitude.as_ref().map(|l| l.p_value)),
            p.longitude
                .as_ref()
                .map_or(String::new(), |l| l.strongest.to_string()),
            num(p.longitude.as_ref().map(|l| l.amplitude)),
        ])
        .expect("in memory");
    }
    String::from_utf8(w.into_inner().expect("in memory")).expect("UTF-8")
}

#[cfg(test)]
mod ladder_tests {
    use super::ladder_through;
    use crate::preset::sweep_file::Values;

    /// A lesson's own η is a row of the sweep the view runs, and the row is the one it names.
    #[test]
    fn the_ladder_passes_through_the_lessons_learning_rate() {
        for eta in [0.02, 0.2, 0.01, 1.0, 0.5] {
            let ((from, to), k) = ladder_through((0.01, 1.0), 12, eta);
            let grid = Values::Log {
                from,
                to,
                points: 12,
            }
            .expand()
            .unwrap();
            assert!(
                (grid[k] / eta - 1.0).abs() < 1e-9,
                "{eta}: row {k} is {} of {grid:?}",
                grid[k]
            );
            // About the same span: every row within half a step of the unshifted grid.
            let ratio = (1.0f64 / 0.01).powf(1.0 / 11.0);
            assert!(from / 0.01 < ratio.sqrt() * 1.001 && 0.01 / from < ratio.sqrt() * 1.001);
        }
        assert_eq!(ladder_through((0.01, 1.0), 1, 0.02), ((0.01, 1.0), 0));
    }
}
