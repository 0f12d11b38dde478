//! A thermodynamics sweep's table (MATH.md §5): the measured points of a merged sweep along
//! η, with the slope temperature dU/dS, the free energy U − T S, and a held-out prediction:
//! the law T(η) = aη/(1 − bη) fitted to the Gibbs temperatures of every other learning rate
//! predicts T, U and S at the ones left out.

use super::Merged;
use crate::diagnostics::thermodynamics::{
    Cells, ThermoPoint, fit_temperature_law, measured, plane_cells, plane_quadrature_start,
    slope_temperatures, sphere_quadrature, temperature_law,
};
use crate::math::sphere::loss as sphere_loss;
use crate::preset::sphere::SpherePreset;
use crate::preset::sweep_file::{AxisSpec, Combine, Measure, SeedPolicy, SweepSpec, Values};
use crate::preset::{AnyPreset, Preset};
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

/// One row of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Index of the record in the merged table.
    pub record: usize,
    /// The point as measured.
    #[serde(flatten)]
    pub point: ThermoPoint,
    /// dU/dS from the neighbouring included learning rates.
    pub t_slope: Option<f64>,
    /// U − T_slope · S (k-NN).
    pub free_energy: Option<f64>,
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
}

/// Quadrature cells of a point's loss at temperature `t`.
fn cells_for(preset: &AnyPreset, t: f64) -> Option<Cells> {
    match preset {
        AnyPreset::Toy(p) => {
            let target = p.target.build();
            let start = plane_quadrature_start(&target);
            Some(plane_cells(&|x| target.neg_log_density(x), start, t).1)
        }
        AnyPreset::Sphere(p) => {
            let objects = p.problem.objects();
            Some(sphere_quadrature(&|x| sphere_loss(&objects, x)).cells)
        }
        _ => None,
    }
}

/// The base preset of a merged sweep with a record's coordinates.
fn point_preset(merged: &Merged, coords: &[f64]) -> Option<AnyPreset> {
    let header = &merged.header;
    let base = match header.base_kind.as_str() {
        "sphere" => {
            AnyPreset::Sphere(serde_json::from_value::<SpherePreset>(header.base.clone()).ok()?)
        }
        "toy" => AnyPreset::Toy(serde_json::from_value::<Preset>(header.base.clone()).ok()?),
        _ => return None,
    };
    let fields: Vec<&str> = header.fields.iter().map(String::as_str).collect();
    crate::preset::sweep_file::apply(&base, &fields, coords, None).ok()
}

/// The table of a merged thermodynamics sweep; an error when its records are not
/// thermodynamic measurements.
pub fn table(merged: &Merged) -> anyhow::Result<Table> {
    if merged.header.measure != "thermo" {
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
                point: ThermoPoint::from_record(r.run.clone())?,
                t_slope: None,
                free_energy: None,
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
    while start < rows.len() {
        let k = key(&rows[start]);
        let end = start + rows[start..].iter().take_while(|r| key(r) == k).count();
        let group = &mut rows[start..end];
        let points: Vec<ThermoPoint> = group.iter().map(|r| r.point.clone()).collect();
        let slopes = slope_temperatures(&measured(&points));
        for (row, slope) in group.iter_mut().zip(slopes) {
            row.t_slope = slope;
            row.free_energy = slope.zip(row.point.s_knn).map(|(t, s)| row.point.u - t * s);
        }
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
                if let Some(cells) = point_preset(merged, coords).and_then(|p| cells_for(&p, t)) {
                    row.u_predicted = Some(cells.mean_loss(t));
                    row.s_predicted = Some(cells.entropy(t));
                }
            }
        }
        law = law.or(group_law);
        start = end;
    }
    Ok(Table { rows, law })
}

/// The table as CSV: η, U, S (k-NN, histogram), the temperatures, the Gibbs distance, SNR,
/// stationarity, the held-out predictions, and for networks the windowed S with its
/// dimension and why the ensemble S is not used for T_slope (empty cells where undefined).
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
        "S_window",
        "S_window_se",
        "window_dims",
        "entropy_note",
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
            num(p.window.as_ref().and_then(|w| w.s)),
            num(p.window.as_ref().and_then(|w| w.s_se)),
            p.window
                .as_ref()
                .map_or(String::new(), |w| w.dims.to_string()),
            p.ensemble_entropy_note.clone().unwrap_or_default(),
        ])
        .expect("in memory");
    }
    String::from_utf8(w.into_inner().expect("in memory")).expect("UTF-8")
}
