//! Sweep files: a base preset, axes over its numeric fields, and what to keep of each run.
//! `Sweep(...)` files expand into a grid of independent, deterministic points; running them
//! is `crate::sweep`'s business.
//!
//! A field is named by its path in the preset as written, with dots: `sampler.h`,
//! `target.b` (the variant name, `Banana`, may be left out), `noise.sigma`, `chains`. Values
//! are set through [`super::fields::set`], the one override path the command line's flags
//! take too, and checked against the same ranges.

use super::fields::{self, Number};
use super::{AnyPreset, PresetError, parse_ron};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Most grid points one sweep may have: beyond, split the sweep (a million runs of seconds
/// each is weeks of one machine; sharding helps with time, not with a typo in `points`).
pub const MAX_POINTS: usize = 100_000;

/// The sweeps shipped with the app (`presets/sweeps/`), by name: `atmc-lab sweep NAME`
/// runs one without a file.
pub const SHIPPED_SWEEPS: &[(&str, &str)] = &[
    (
        "friction-sign-explosion",
        include_str!("../../presets/sweeps/friction-sign-explosion.ron"),
    ),
    (
        "atmc-step-and-floor",
        include_str!("../../presets/sweeps/atmc-step-and-floor.ron"),
    ),
    (
        "sphere-batch-temperature",
        include_str!("../../presets/sweeps/sphere-batch-temperature.ron"),
    ),
    (
        "expr-ring-radius",
        include_str!("../../presets/sweeps/expr-ring-radius.ron"),
    ),
];

/// Whether the RON text is a sweep file (`Sweep(...)`) rather than a preset.
pub fn is_sweep_text(text: &str) -> bool {
    super::mlp::outer_name(text) == Some("Sweep")
}

/// `v` rounded to `digits` significant decimal digits (zero stays zero).
fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let scale = 10f64.powi(digits - 1 - v.abs().log10().floor() as i32);
    (v * scale).round() / scale
}

/// A sweep file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Sweep")]
pub struct SweepSpec {
    /// Short title.
    #[serde(default)]
    pub name: String,
    /// What the sweep shows.
    #[serde(default)]
    pub description: String,
    /// The base preset: a file (relative to the sweep file) or a shipped preset's name.
    pub base: String,
    /// Fields of the base set to fixed values for every point (`{"chains": 2000}`), each once.
    #[serde(default, deserialize_with = "crate::math::ranges::de_unique_map")]
    pub set: std::collections::BTreeMap<String, f64>,
    /// The axes, at least one.
    pub axes: Vec<AxisSpec>,
    /// How the axes combine.
    #[serde(default)]
    pub combine: Combine,
    /// Fields of the run's JSON kept per point; empty keeps all (timings are never kept: a
    /// point's record must not depend on where and when it ran).
    #[serde(default)]
    pub keep: Vec<String>,
    /// The seed of each point.
    #[serde(default)]
    pub seeds: SeedPolicy,
    /// What each point measures: the run's statistics, or its thermodynamics (MATH.md §5:
    /// U, S, the Gibbs-fitted T). Sphere presets are always measured thermodynamically.
    #[serde(default)]
    pub measure: Measure,
}

/// What a sweep measures at each point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Measure {
    /// The statistics `atmc-lab run` prints.
    #[default]
    Run,
    /// The thermodynamics of the stationary ensemble (`atmc-lab thermo`).
    Thermo,
}

/// One axis: a field and its values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AxisSpec {
    /// Dotted path of a numeric field of the base preset.
    pub field: String,
    /// Its values.
    pub values: Values,
}

/// The values of an axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Values {
    /// These values.
    List(Vec<f64>),
    /// `points` evenly spaced values from `from` to `to` inclusive.
    Linear {
        /// First value.
        from: f64,
        /// Last value.
        to: f64,
        /// Number of values (at least 1).
        points: u32,
    },
    /// `points` log-evenly spaced values from `from` to `to` inclusive (both > 0).
    Log {
        /// First value.
        from: f64,
        /// Last value.
        to: f64,
        /// Number of values (at least 1).
        points: u32,
    },
}

/// How axes combine into points.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Combine {
    /// Every combination (the last axis varies fastest).
    #[default]
    Product,
    /// The k-th values of every axis together (axes of equal length).
    Zip,
}

/// The seed of each point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SeedPolicy {
    /// The base preset's seed everywhere: common random numbers, so that neighbouring points
    /// differ by their parameters, not by their noise (the right choice for maps).
    #[default]
    Same,
    /// The base seed plus the point's index: independent noise per point.
    PerPoint,
}

impl Values {
    /// The values, or what is wrong with them.
    pub fn expand(&self) -> Result<Vec<f64>, String> {
        let values = match *self {
            Values::List(ref v) => v.clone(),
            Values::Linear { from, to, points } | Values::Log { from, to, points } => {
                if points == 0 {
                    return Err("an axis needs at least one point".into());
                }
                if points as usize > MAX_POINTS {
                    return Err(format!("{points} points on one axis: at most {MAX_POINTS}"));
                }
                let log = matches!(self, Values::Log { .. });
                if log && !(from > 0.0 && to > 0.0) {
                    return Err(format!(
                        "a Log axis needs from > 0 and to > 0 (got {from}, {to})"
                    ));
                }
                let (a, b) = if log {
                    (from.ln(), to.ln())
                } else {
                    (from, to)
                };
                (0..points)
                    .map(|k| {
                        let t = if points == 1 {
                            0.0
                        } else {
                            f64::from(k) / f64::from(points - 1)
                        };
                        // The ends exactly as written (no exp(ln x) rounding).
                        let v = if k == 0 {
                            from
                        } else if k == points - 1 {
                            to
                        } else {
                            a + t * (b - a)
                        };
                        if k == 0 || k == points - 1 {
                            v
                        } else {
                            // Twelve significant digits: -0.3, not -0.30000000000000004, in
                            // tables and on axes (far below any sampler's sensitivity).
                            round_significant(if log { v.exp() } else { v }, 12)
                        }
                    })
                    .collect()
            }
        };
        if values.is_empty() {
            return Err("an axis needs at least one value".into());
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(format!("{v} is not a finite number"));
        }
        Ok(values)
    }
}

/// One point of a sweep: its index, its coordinates (one per axis) and its preset.
#[derive(Clone, Debug)]
pub struct Point {
    /// Position in the sweep's order.
    pub index: usize,
    /// The value of every axis.
    pub coords: Vec<f64>,
    /// The base preset with the coordinates (and the seed policy) applied.
    pub preset: AnyPreset,
}

/// A loaded, checked sweep: every point is valid.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The file as written.
    pub spec: SweepSpec,
    /// The base preset.
    pub base: AnyPreset,
    /// The values of each axis.
    pub axis_values: Vec<Vec<f64>>,
    /// Number of points.
    pub points: usize,
}

impl Sweep {
    /// Reads and checks a sweep file: the base preset, every axis field and value, and every
    /// point (each must be a valid preset), before any work.
    pub fn load(path: &Path) -> Result<Sweep, PresetError> {
        let origin = path.display().to_string();
        if !path.exists()
            && let Some((_, text)) = SHIPPED_SWEEPS.iter().find(|(n, _)| *n == origin)
        {
            return Sweep::parse(text, &origin, Path::new("."));
        }
        let text =
            crate::fsutil::read_text(path, crate::fsutil::TEXT_FILES).map_err(|e| PresetError {
                file: origin.clone(),
                line: 1,
                column: 1,
                message: format!("cannot read the sweep: {}", e.reason()),
            })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Sweep::parse(&text, &origin, dir)
    }

    /// Parses sweep text; `dir` is where a relative base path starts.
    pub fn parse(text: &str, origin: &str, dir: &Path) -> Result<Sweep, PresetError> {
        let spec: SweepSpec = parse_ron(text, origin, |_: &SweepSpec| Ok(()))?;
        let located = |field: &str, message: String| {
            let (line, column) = super::locate(text, field);
            PresetError {
                file: origin.to_owned(),
                line,
                column,
                message,
            }
        };
        let relative = dir.join(&spec.base);
        // A file next to the sweep wins; a folder of that name does not hide a shipped base.
        let base_path = if relative.is_file() {
            relative.display().to_string()
        } else {
            spec.base.clone()
        };
        if base_path == spec.base
            && !Path::new(&base_path).exists()
            && SHIPPED_SWEEPS.iter().any(|(n, _)| *n == spec.base)
            && !super::SHIPPED.iter().any(|(n, _)| *n == spec.base)
        {
            return Err(located(
                "base",
                format!(
                    "base \"{}\" is the name of a shipped sweep, not of a preset: a sweep's \
                     base is a preset file or a shipped preset's name ({})",
                    spec.base,
                    super::shipped_names(&spec.base)
                ),
            ));
        }
        let base = AnyPreset::load(&base_path)
            .map_err(|e| located("base", format!("base preset: {e}")))?;
        if let AnyPreset::Comparison(_) = base {
            return Err(located(
                "base",
                "a sweep's base is a 2-D, MLP or sphere preset, not a comparison".into(),
            ));
        }
        if spec.axes.is_empty() {
            return Err(located("axes", "a sweep needs at least one axis".into()));
        }
        let fixed: Vec<&str> = spec.set.keys().map(String::as_str).collect();
        let values: Vec<f64> = spec.set.values().copied().collect();
        let base =
            apply(&base, &fixed, &values, None).map_err(|m| located("set", format!("set: {m}")))?;
        let mut axis_values = Vec::new();
        for (i, axis) in spec.axes.iter().enumerate() {
            let values = axis
                .values
                .expand()
                .map_err(|m| located("values", format!("axis {} ({}): {m}", i + 1, axis.field)))?;
            fields::check_path(&base, &axis.field).map_err(|m| located("field", m))?;
            if spec.axes[..i].iter().any(|a| a.field == axis.field) {
                return Err(located("field", format!("{} is swept twice", axis.field)));
            }
            if spec.set.contains_key(&axis.field) {
                return Err(located(
                    "field",
                    format!("{} is both set and swept", axis.field),
                ));
            }
            axis_values.push(values);
        }
        let points = match spec.combine {
            Combine::Product => axis_values
                .iter()
                .try_fold(1usize, |n, v| n.checked_mul(v.len()))
                .unwrap_or(usize::MAX),
            Combine::Zip => {
                let n = axis_values[0].len();
                if let Some((axis, v)) = spec
                    .axes
                    .iter()
                    .zip(&axis_values)
                    .find(|(_, v)| v.len() != n)
                {
                    return Err(located(
                        "combine",
                        format!(
                            "Zip needs axes of equal length: {} has {}, {} has {n}",
                            axis.field,
                            v.len(),
                            spec.axes[0].field
                        ),
                    ));
                }
                n
            }
        };
        if points > MAX_POINTS {
            return Err(located(
                "axes",
                format!(
                    "{} points: a sweep has at most {MAX_POINTS} (split it, or use fewer values)",
                    if points == usize::MAX {
                        "more than 2^64".to_owned()
                    } else {
                        points.to_string()
                    }
                ),
            ));
        }
        let sweep = Sweep {
            spec,
            base,
            axis_values,
            points,
        };
        // Every point is a valid preset, checked now rather than hours into a sweep.
        for index in 0..sweep.points {
            let coords = sweep.coords(index);
            sweep.point_preset(&coords, index).map_err(|m| {
                located(
                    "axes",
                    format!("point {} ({}): {m}", index, sweep.describe(&coords)),
                )
            })?;
        }
        Ok(sweep)
    }

    /// The coordinates of point `index`.
    pub fn coords(&self, index: usize) -> Vec<f64> {
        match self.spec.combine {
            Combine::Zip => self.axis_values.iter().map(|v| v[index]).collect(),
            Combine::Product => {
                let mut rest = index;
                let mut coords = vec![0.0; self.axis_values.len()];
                for (c, values) in coords.iter_mut().zip(&self.axis_values).rev() {
                    *c = values[rest % values.len()];
                    rest /= values.len();
                }
                coords
            }
        }
    }

    /// The point with index `index`.
    pub fn point(&self, index: usize) -> Point {
        let coords = self.coords(index);
        let preset = self
            .point_preset(&coords, index)
            .expect("points were checked when the sweep was loaded");
        Point {
            index,
            coords,
            preset,
        }
    }

    /// The fields of the axes.
    pub fn fields(&self) -> Vec<&str> {
        self.spec.axes.iter().map(|a| a.field.as_str()).collect()
    }

    /// `field = value` pairs, for messages.
    pub fn describe(&self, coords: &[f64]) -> String {
        self.fields()
            .iter()
            .zip(coords)
            .map(|(f, v)| format!("{f} = {}", crate::math::ranges::short_number(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn point_preset(&self, coords: &[f64], index: usize) -> Result<AnyPreset, String> {
        let seed = match self.spec.seeds {
            SeedPolicy::Same => None,
            SeedPolicy::PerPoint => Some(index as u64),
        };
        apply(&self.base, &self.fields(), coords, seed)
    }
}

/// `base` with the fields at `paths` set to `values` (a sweep's axes, its fixed fields, a record's
/// coordinates) and the seed moved by `seed_offset`, through [`fields::set`].
pub fn apply(
    base: &AnyPreset,
    paths: &[&str],
    values: &[f64],
    seed_offset: Option<u64>,
) -> Result<AnyPreset, String> {
    let assignments: Vec<(&str, Number)> = paths
        .iter()
        .zip(values)
        .map(|(f, v)| (*f, Number::Real(*v)))
        .collect();
    fields::set(base, &assignments, seed_offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(text: &str) -> Result<Sweep, PresetError> {
        Sweep::parse(text, "s.ron", Path::new("."))
    }

    #[test]
    fn every_shipped_sweep_parses_and_loads_by_name() {
        for (name, text) in SHIPPED_SWEEPS {
            let parsed = sweep(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(parsed.points > 1, "{name}");
            assert_eq!(Sweep::load(Path::new(name)).unwrap().points, parsed.points);
            assert!(is_sweep_text(text));
        }
    }

    #[test]
    fn axes_expand_and_combine() {
        let s = sweep(
            "Sweep(base: \"default\", axes: [
                (field: \"sampler.friction_sign\", values: Linear(from: -1.0, to: 1.0, points: 3)),
                (field: \"sampler.h\", values: Log(from: 0.001, to: 0.1, points: 3)),
            ])",
        )
        .unwrap();
        assert_eq!(s.points, 9);
        assert_eq!(s.axis_values[0], vec![-1.0, 0.0, 1.0]);
        assert_eq!(s.axis_values[1][0], 0.001);
        assert!((s.axis_values[1][1] - 0.01).abs() < 1e-15);
        assert_eq!(s.coords(5), vec![0.0, 0.1]);
        let AnyPreset::Toy(p) = s.point(5).preset else {
            panic!()
        };
        assert_eq!((p.sampler.friction_sign, p.sampler.h), (0.0, 0.1));
    }

    #[test]
    fn variant_names_may_be_left_out_and_integers_stay_integers() {
        let s = sweep(
            "Sweep(base: \"default\", combine: Zip, seeds: PerPoint, set: {\"steps\": 77}, axes: [
                (field: \"target.b\", values: List([0.1, 0.2])),
                (field: \"chains\", values: List([100, 200])),
                (field: \"noise.Isotropic.sigma\", values: List([1.0, 3.0])),
            ])",
        )
        .unwrap();
        let AnyPreset::Toy(p) = s.point(1).preset else {
            panic!()
        };
        assert_eq!(p.chains, 200);
        assert_eq!(p.steps, 77);
        assert_eq!(p.seed, Preset::default_preset().seed + 1);
        assert!(matches!(p.target, crate::math::TargetSpec::Banana { b, .. } if b == 0.2));
        assert_eq!(p.noise, crate::math::NoiseSpec::Isotropic { sigma: 3.0 });
    }

    use crate::preset::Preset;

    #[test]
    fn bad_sweeps_are_refused_with_their_location() {
        let cases = [
            (
                "(field: \"sampler.hh\", values: List([1.0]))",
                "unknown field sampler.hh",
            ),
            (
                "(field: \"sampler.h\", values: List([]))",
                "at least one value",
            ),
            (
                "(field: \"sampler.h\", values: List([20.0]))",
                "out of range",
            ),
            ("(field: \"chains\", values: List([1.5]))", "whole numbers"),
            (
                "(field: \"sampler.h\", values: Linear(from: 0.01, to: 0.1, points: 1000000000))",
                "at most",
            ),
            (
                "(field: \"sampler.h\", values: Linear(from: 0.01, to: 0.1, points: 1000)),
                 (field: \"sampler.mass\", values: Linear(from: 0.5, to: 2.0, points: 1000))",
                "1000000 points",
            ),
            (
                "(field: \"sampler.kind\", values: List([1.0]))",
                "not a number",
            ),
        ];
        for (axes, needle) in cases {
            let text = format!("Sweep(base: \"default\", axes: [{axes}])");
            let e = sweep(&text).unwrap_err().to_string();
            assert!(e.starts_with("s.ron:"), "{e}");
            assert!(e.contains(needle), "{axes}: {e}");
        }
        let e = sweep("Sweep(base: \"nope\", axes: [])")
            .unwrap_err()
            .to_string();
        assert!(e.contains("base preset"), "{e}");
        let e = sweep("Sweep(base: \"default\", axes: [], colour: 1)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
    }
}
