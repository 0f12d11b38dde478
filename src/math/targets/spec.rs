//! How a target is written in a preset file or named on the command line: the RON schema
//! (one variant per family, its fields range-checked as they are read), the command-line
//! names, and the step from a written target to a runtime [`Target`].

use super::{
    Banana, Donut, DoubleWell, Funnel, Gaussian, Gmm25, Logistic, Parameter, StudentT, Target,
    banana, donut, double_well, funnel, gaussian, gmm25, logistic, student_t,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A target as written in a preset or on the command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum TargetSpec {
    /// Bivariate Gaussian with standard deviations σ₁, σ₂ and correlation ρ.
    Gaussian {
        /// Mean.
        #[serde(default, deserialize_with = "crate::math::ranges::de_location")]
        mean: [f64; 2],
        /// Standard deviation of θ₁.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        sigma1: f64,
        /// Standard deviation of θ₂.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        sigma2: f64,
        /// Correlation.
        #[serde(default, deserialize_with = "crate::math::ranges::de_rho")]
        rho: f64,
    },
    /// Rosenbrock-like banana: θ₁ ~ N(0, a²), θ₂ | θ₁ ~ N(b (θ₁² − a²), s²).
    Banana {
        /// Scale of θ₁.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        a: f64,
        /// Curvature.
        #[serde(
            default = "half",
            deserialize_with = "crate::math::ranges::de_curvature"
        )]
        b: f64,
        /// Conditional spread of θ₂.
        #[serde(default = "half", deserialize_with = "crate::math::ranges::de_sigma")]
        s: f64,
    },
    /// Ring: L = (|θ| − radius)² / (2 width²).
    Donut {
        /// Ring radius.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_radius")]
        radius: f64,
        /// Radial standard deviation.
        #[serde(
            default = "quarter",
            deserialize_with = "crate::math::ranges::de_sigma"
        )]
        width: f64,
    },
    /// Equal mixture of 25 Gaussians centred on {−2s, −s, 0, s, 2s}² with covariance v·I.
    Gmm25 {
        /// Spacing s of the centres.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_radius")]
        spacing: f64,
        /// Variance v of each component.
        #[serde(
            default = "gmm_variance",
            deserialize_with = "crate::math::ranges::de_variance"
        )]
        variance: f64,
    },
    /// Neal's funnel in 2-D: v = θ₂ ~ N(0, σ_v²), θ₁ | v ~ N(0, e^v).
    Funnel {
        /// Standard deviation of the log-scale v.
        #[serde(
            default = "three",
            deserialize_with = "crate::math::ranges::de_funnel_sigma"
        )]
        sigma_v: f64,
    },
    /// Double well: L = barrier ((θ₁/μ)² − 1)² + θ₂²/2.
    DoubleWell {
        /// Position μ of the wells.
        #[serde(
            default = "one_and_half",
            deserialize_with = "crate::math::ranges::de_radius"
        )]
        separation: f64,
        /// Barrier height in units of the temperature.
        #[serde(
            default = "three",
            deserialize_with = "crate::math::ranges::de_barrier"
        )]
        barrier: f64,
    },
    /// Bayesian logistic regression on 2 weights (no intercept) from a synthetic data set.
    Logistic {
        /// Number of data points N.
        #[serde(
            default = "n_data",
            deserialize_with = "crate::math::ranges::de_data_points"
        )]
        data_points: u32,
        /// Minibatch size n (0 or ≥ N: full batch).
        #[serde(default = "batch", deserialize_with = "crate::math::ranges::de_batch")]
        batch_size: u32,
        /// Weights that generated the labels.
        #[serde(
            default = "true_weights",
            deserialize_with = "crate::math::ranges::de_true_weights"
        )]
        true_weights: [f64; 2],
        /// Standard deviation of the Gaussian prior on each weight.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_sigma")]
        prior_scale: f64,
        /// Seed of the synthetic data set.
        #[serde(default = "one_u64")]
        data_seed: u64,
    },
    /// Bivariate Student-t: L = (ν + 2)/2 · log(1 + |θ|²/(ν s²)), polynomial tails.
    StudentT {
        /// Degrees of freedom ν.
        #[serde(
            default = "five",
            deserialize_with = "crate::math::ranges::de_degrees_of_freedom"
        )]
        dof: f64,
        /// Scale s.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        scale: f64,
    },
    /// A typed energy U(θ₁, θ₂) = −log density up to a constant (docs/MATH.md §9), in the
    /// language of `math::expr`, with named parameters and an optional box for its truth
    /// (found by growing when left out).
    Expression {
        /// The formula, e.g. `"(θ₁^2 + θ₂^2)/2"`.
        energy: String,
        /// Parameter values by name (at most 8), in the order the GPU receives them.
        #[serde(default, deserialize_with = "crate::math::ranges::de_unique_map")]
        parameters: BTreeMap<String, f64>,
        /// The box (θ₁ range, θ₂ range) the truth lives on.
        #[serde(default, rename = "box")]
        bounds: Option<[[f64; 2]; 2]>,
        /// Slider ranges of the app's parameter sliders by name (low, high); a parameter
        /// left out gets a range around its value.
        #[serde(
            default,
            skip_serializing_if = "BTreeMap::is_empty",
            deserialize_with = "crate::math::ranges::de_unique_map"
        )]
        ranges: BTreeMap<String, [f64; 2]>,
    },
}

/// A slider range must belong to a parameter and run from low to high.
fn check_slider_ranges(
    parameters: &BTreeMap<String, f64>,
    ranges: &BTreeMap<String, [f64; 2]>,
) -> Result<(), String> {
    for (name, [lo, hi]) in ranges {
        if !parameters.contains_key(name) {
            return Err(format!(
                "ranges: '{name}' is not a parameter of the formula (parameters: {})",
                parameters.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(format!(
                "ranges: the range of '{name}' must run from a low to a higher finite number, \
                 not {lo} to {hi}"
            ));
        }
    }
    Ok(())
}

fn one() -> f64 {
    1.0
}
fn half() -> f64 {
    0.5
}
fn quarter() -> f64 {
    0.25
}
fn two() -> f64 {
    2.0
}
fn three() -> f64 {
    3.0
}
fn five() -> f64 {
    5.0
}
fn one_and_half() -> f64 {
    1.5
}
fn gmm_variance() -> f64 {
    0.03
}
fn n_data() -> u32 {
    100
}
fn batch() -> u32 {
    10
}
fn true_weights() -> [f64; 2] {
    [1.5, -1.0]
}
fn one_u64() -> u64 {
    1
}

/// Names accepted on the command line, with a one-line description each.
pub const TARGET_NAMES: &[(&str, &str)] = &[
    ("gaussian", "standard normal (set σ₁, σ₂, ρ in a preset)"),
    ("correlated", "Gaussian, unit variances, ρ = 0.8"),
    ("aniso", "Gaussian, variances 4 and 0.25"),
    ("banana", "Rosenbrock-like banana"),
    ("donut", "ring of radius 2"),
    ("gmm25", "25 Gaussians on {−4,−2,0,2,4}², variance 0.03"),
    ("funnel", "Neal's funnel, σ_v = 3"),
    ("double-well", "two wells at ±1.5, barrier 3"),
    (
        "logistic",
        "Bayesian logistic regression, 2 weights, minibatches",
    ),
    ("student-t", "Student-t, ν = 5: heavy, polynomial tails"),
];

impl TargetSpec {
    /// The target with its default parameters for a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        let gaussian = |sigma1, sigma2, rho| TargetSpec::Gaussian {
            mean: [0.0; 2],
            sigma1,
            sigma2,
            rho,
        };
        Some(match name {
            "gaussian" => gaussian(1.0, 1.0, 0.0),
            "correlated" => gaussian(1.0, 1.0, 0.8),
            "aniso" => gaussian(2.0, 0.5, 0.0),
            "banana" => TargetSpec::Banana {
                a: 1.0,
                b: 0.5,
                s: 0.5,
            },
            "donut" => TargetSpec::Donut {
                radius: 2.0,
                width: 0.25,
            },
            "gmm25" => TargetSpec::Gmm25 {
                spacing: 2.0,
                variance: 0.03,
            },
            "funnel" => TargetSpec::Funnel { sigma_v: 3.0 },
            "double-well" => TargetSpec::DoubleWell {
                separation: 1.5,
                barrier: 3.0,
            },
            "logistic" => TargetSpec::Logistic {
                data_points: 100,
                batch_size: 10,
                true_weights: [1.5, -1.0],
                prior_scale: 2.0,
                data_seed: 1,
            },
            "student-t" => TargetSpec::StudentT {
                dof: 5.0,
                scale: 1.0,
            },
            _ => return None,
        })
    }

    /// The command-line name of this target's family.
    pub fn name(&self) -> &'static str {
        match self {
            TargetSpec::Gaussian {
                sigma1,
                sigma2,
                rho,
                ..
            } => {
                if *rho != 0.0 {
                    "correlated"
                } else if sigma1 != sigma2 {
                    "aniso"
                } else {
                    "gaussian"
                }
            }
            TargetSpec::Banana { .. } => "banana",
            TargetSpec::Donut { .. } => "donut",
            TargetSpec::Gmm25 { .. } => "gmm25",
            TargetSpec::Funnel { .. } => "funnel",
            TargetSpec::DoubleWell { .. } => "double-well",
            TargetSpec::Logistic { .. } => "logistic",
            TargetSpec::StudentT { .. } => "student-t",
            TargetSpec::Expression { .. } => "expression",
        }
    }

    /// Checks what deserialising cannot: an expression compiles, is finite in its box and
    /// is normalisable (its truth is cached for [`Self::build`]). The message says why not.
    /// Other targets are whole once their numbers are in range: nothing is built (building a
    /// logistic posterior costs a quadrature over all its data, which the run pays once).
    pub fn check(&self) -> Result<(), String> {
        match self {
            TargetSpec::Expression { .. } => self.build().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// How many modes the diagnostics count visits of ([`Target::modes`]); `None` for a
    /// target without listed modes (a challenge to visit modes cannot be judged on it).
    pub fn countable_modes(&self) -> Option<usize> {
        match self {
            TargetSpec::Gmm25 { .. } => Some(gmm25::MODES),
            _ => None,
        }
    }

    /// Builds the runtime target (generates the data set of data-based targets), or says why
    /// an expression target cannot be built: the one family whose check is more than its
    /// numbers' ranges. A preset's model is built from a `preset::Validated` preset, whose
    /// target has passed [`Self::check`].
    pub fn build(&self) -> Result<Target, String> {
        Ok(match self {
            TargetSpec::Expression {
                energy,
                parameters,
                bounds,
                ranges,
            } => {
                check_slider_ranges(parameters, ranges)?;
                Target::Expression(crate::math::expr::ExprTarget::cached(
                    energy, parameters, *bounds,
                )?)
            }
            &TargetSpec::Gaussian {
                mean,
                sigma1,
                sigma2,
                rho,
            } => Target::Gaussian(Gaussian::new(mean, sigma1, sigma2, rho)),
            &TargetSpec::Banana { a, b, s } => Target::Banana(Banana { a, b, s }),
            &TargetSpec::Donut { radius, width } => Target::Donut(Donut { radius, width }),
            &TargetSpec::Gmm25 { spacing, variance } => Target::Gmm25(Gmm25 { spacing, variance }),
            &TargetSpec::Funnel { sigma_v } => Target::Funnel(Funnel { sigma_v }),
            &TargetSpec::DoubleWell {
                separation,
                barrier,
            } => Target::DoubleWell(DoubleWell {
                separation,
                barrier,
            }),
            &TargetSpec::Logistic {
                data_points,
                batch_size,
                true_weights,
                prior_scale,
                data_seed,
            } => Target::Logistic(Logistic::generate(
                data_points,
                batch_size,
                true_weights,
                prior_scale,
                data_seed,
            )),
            &TargetSpec::StudentT { dof, scale } => Target::StudentT(StudentT { dof, scale }),
        })
    }

    /// The continuous parameters a slider may set, each with its value: the family's own
    /// [`Parameter`] list (names, ranges — the ranges reading a file checks — and the usual
    /// span) beside the field it describes. A typed formula's parameters are its own (the
    /// formula panel), so it has none here.
    pub fn parameters_mut(&mut self) -> Vec<(&'static Parameter, &mut f64)> {
        let (parameters, fields): (&'static [Parameter], Vec<&mut f64>) = match self {
            TargetSpec::Gaussian {
                sigma1,
                sigma2,
                rho,
                ..
            } => (gaussian::PARAMETERS, vec![sigma1, sigma2, rho]),
            TargetSpec::Banana { a, b, s } => (banana::PARAMETERS, vec![a, b, s]),
            TargetSpec::Donut { radius, width } => (donut::PARAMETERS, vec![radius, width]),
            TargetSpec::Gmm25 { spacing, variance } => (gmm25::PARAMETERS, vec![spacing, variance]),
            TargetSpec::Funnel { sigma_v } => (funnel::PARAMETERS, vec![sigma_v]),
            TargetSpec::DoubleWell {
                separation,
                barrier,
            } => (double_well::PARAMETERS, vec![separation, barrier]),
            TargetSpec::Logistic { prior_scale, .. } => (logistic::PARAMETERS, vec![prior_scale]),
            TargetSpec::StudentT { dof, scale } => (student_t::PARAMETERS, vec![dof, scale]),
            TargetSpec::Expression { .. } => (&[], vec![]),
        };
        debug_assert_eq!(parameters.len(), fields.len());
        parameters.iter().zip(fields).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every slider parameter a family lists names a field of its variant, and reading a
    /// file checks that field against exactly the parameter's range: a value the slider's
    /// range refuses is refused on reading too, and one it allows is read.
    #[test]
    fn slider_parameters_are_the_fields_and_ranges_files_are_checked_against() {
        let mut checked = 0;
        for (name, _) in TARGET_NAMES {
            let mut spec = TargetSpec::from_name(name).unwrap();
            let json = serde_json::to_value(&spec).unwrap();
            let (variant, fields) = json.as_object().unwrap().iter().next().unwrap();
            for (parameter, value) in spec.parameters_mut() {
                assert_eq!(
                    fields[parameter.field].as_f64(),
                    Some(*value),
                    "{name}: {}",
                    parameter.field
                );
                let range = parameter.range;
                let width = (range.max - range.min).abs();
                for probe in [
                    range.min,
                    range.max,
                    range.min - 1e-3 * width,
                    range.max + 1e-3 * width,
                    0.5 * (range.min + range.max),
                ] {
                    let mut changed = json.clone();
                    changed[variant][parameter.field] = serde_json::json!(probe);
                    let read = serde_json::from_value::<TargetSpec>(changed);
                    assert_eq!(
                        read.is_ok(),
                        range.check(probe).is_ok(),
                        "{name}.{} = {probe}: {read:?}",
                        parameter.field
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 5 * 12, "{checked}");
    }
}
