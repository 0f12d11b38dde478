//! Diagnostics of MLP posteriors (MATH.md §6): the posterior predictive (the average of the
//! networks' softmax) judged on the training and test sets by accuracy, NLL and ECE, beside
//! one network of the ensemble and the SGD-trained baseline.

use super::classification::{ClassMetrics, ClassificationAccumulator, ReliabilityBin};
use crate::engine::mlp::{MlpEngine, MlpReport, Prediction};
use crate::math::mlp::{MlpPosterior, Workspace};
use crate::math::{Dataset, SamplerKind};
use serde::Serialize;

/// How uncertain the posterior predictive is at a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Uncertainty {
    /// Entropy of the posterior predictive, in units of ln K (0: certain, 1: uniform).
    Entropy,
    /// Standard deviation of the class probabilities across networks, averaged over the
    /// classes and scaled by 2 (the spread of a probability is at most 1/2): in [0, 1].
    Spread,
}

/// The uncertainty of `prediction` at every point, in [0, 1].
pub fn uncertainty(prediction: &Prediction, kind: Uncertainty) -> Vec<f32> {
    let k = prediction.classes.max(1);
    let ln_k = (k as f32).ln().max(1e-6);
    prediction
        .mean
        .chunks_exact(k)
        .zip(prediction.mean_square.chunks_exact(k))
        .map(|(mean, square)| match kind {
            Uncertainty::Entropy => {
                -mean
                    .iter()
                    .filter(|&&q| q > 0.0)
                    .map(|&q| q * q.ln())
                    .sum::<f32>()
                    / ln_k
            }
            Uncertainty::Spread => {
                let sd: f32 = mean
                    .iter()
                    .zip(square)
                    .map(|(m, s)| (s - m * m).max(0.0).sqrt())
                    .sum::<f32>()
                    / k as f32;
                2.0 * sd
            }
        })
        .collect()
}

/// Metrics on both parts of a data set.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evaluation {
    /// On the training points.
    pub train: ClassMetrics,
    /// On the held-out points.
    pub test: ClassMetrics,
}

/// Everything one evaluation of an ensemble gives.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EnsembleEvaluation {
    /// The posterior predictive over the alive networks (all-zero probabilities when none
    /// is alive: see [`Self::posterior_predictive`]).
    pub ensemble: Evaluation,
    /// The focus network alone.
    pub single: Evaluation,
    /// Reliability diagram of the posterior predictive on the test set (15 bins).
    pub reliability: Vec<ReliabilityBin>,
    /// Networks averaged.
    pub chains_used: u32,
}

impl EnsembleEvaluation {
    /// The posterior predictive, or `None` when no network was alive to average: an empty
    /// ensemble predicts probability 0 for every class, whose NLL (the floor's 27.6 nats)
    /// and accuracy would describe no posterior at all.
    pub fn posterior_predictive(&self) -> Option<&Evaluation> {
        (self.chains_used > 0).then_some(&self.ensemble)
    }
}

fn metrics(probs: &[f32], labels: &[u32], classes: usize) -> ClassificationAccumulator {
    ClassificationAccumulator::from_batch(probs, labels, classes)
}

/// Evaluates the first `chains` networks of `engine` (the alive ones) on `data`, with
/// network `focus` alone beside them.
pub fn evaluate(
    engine: &mut dyn MlpEngine,
    data: &Dataset,
    chains: u32,
    focus: u32,
) -> anyhow::Result<EnsembleEvaluation> {
    Ok(evaluate_with(engine, data, chains, focus, &[])?.0)
}

/// [`evaluate`], and the predictions at `extra` points from the same pass (the app's maps).
pub fn evaluate_with(
    engine: &mut dyn MlpEngine,
    data: &Dataset,
    chains: u32,
    focus: u32,
    extra: &[[f32; 2]],
) -> anyhow::Result<(EnsembleEvaluation, Prediction)> {
    let k = data.classes as usize;
    let mut points = data.train_x.clone();
    points.extend_from_slice(&data.test_x);
    let labelled = points.len() * k;
    points.extend_from_slice(extra);
    let p: Prediction = engine.predict(&points, chains, focus)?;
    let split = data.train_x.len() * k;
    let train = metrics(&p.mean[..split], &data.train_y, k);
    let test = metrics(&p.mean[split..labelled], &data.test_y, k);
    let single_train = metrics(&p.focus[..split], &data.train_y, k);
    let single_test = metrics(&p.focus[split..labelled], &data.test_y, k);
    let evaluation = EnsembleEvaluation {
        ensemble: Evaluation {
            train: train.metrics(),
            test: test.metrics(),
        },
        single: Evaluation {
            train: single_train.metrics(),
            test: single_test.metrics(),
        },
        reliability: test.bins(),
        chains_used: p.chains_used,
    };
    let rest = Prediction {
        classes: k,
        mean: p.mean[labelled..].to_vec(),
        mean_square: p.mean_square[labelled..].to_vec(),
        focus: p.focus[labelled..].to_vec(),
        chains_used: p.chains_used,
    };
    Ok((evaluation, rest))
}

/// One recorded block of an MLP run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MlpSeriesRow {
    /// Steps done.
    pub step: u32,
    /// Kinetic temperature over all parameters of the alive networks.
    pub kinetic_temperature: f64,
    /// Mean ξ over all parameters of the alive networks.
    pub mean_xi: f64,
    /// Networks diverged so far.
    pub diverged: u64,
    /// Alive networks averaged into `ensemble_test`; 0 means there was no posterior
    /// predictive and `ensemble_test` is meaningless.
    pub ensemble_networks: u32,
    /// Posterior predictive on the test set.
    pub ensemble_test: ClassMetrics,
    /// The focus network alone on the test set.
    pub single_test: ClassMetrics,
    /// The SGD baseline on the test set.
    pub baseline_test: ClassMetrics,
}

impl MlpSeriesRow {
    /// A row from a block's report and its evaluations.
    /// Quantities a `kind` sampler does not have, or that average no alive network, are NaN.
    pub fn new(
        report: &MlpReport,
        kind: SamplerKind,
        ensemble: &EnsembleEvaluation,
        baseline: &Evaluation,
    ) -> Self {
        let alive = report.alive > 0;
        Self {
            step: report.step,
            kinetic_temperature: if alive && kind.has_momentum() {
                report.overall.kinetic_temperature
            } else {
                f64::NAN
            },
            mean_xi: if alive && kind.has_thermostat() {
                report.overall.mean_xi
            } else {
                f64::NAN
            },
            diverged: report.diverged,
            ensemble_networks: ensemble.chains_used,
            ensemble_test: ensemble.ensemble.test.clone(),
            single_test: ensemble.single.test.clone(),
            baseline_test: baseline.test.clone(),
        }
    }
}

/// One line of [`series_csv`].
#[derive(Serialize)]
struct CsvRow {
    step: u32,
    #[serde(serialize_with = "super::defined")]
    kinetic_temperature: f64,
    #[serde(serialize_with = "super::defined")]
    mean_xi: f64,
    diverged: u64,
    test_accuracy: Option<f64>,
    test_nll: Option<f64>,
    test_ece: Option<f64>,
    single_test_accuracy: f64,
    single_test_nll: f64,
    baseline_test_accuracy: f64,
    baseline_test_nll: f64,
    baseline_test_ece: f64,
}

/// Header of [`series_csv`]: the field names of [`CsvRow`].
const CSV_HEADER: [&str; 12] = [
    "step",
    "kinetic_temperature",
    "mean_xi",
    "diverged",
    "test_accuracy",
    "test_nll",
    "test_ece",
    "single_test_accuracy",
    "single_test_nll",
    "baseline_test_accuracy",
    "baseline_test_nll",
    "baseline_test_ece",
];

/// The series as CSV text; the posterior-predictive fields are empty in rows where no
/// averaged network was alive.
pub fn series_csv(series: &[MlpSeriesRow]) -> String {
    let rows = series.iter().map(|r| {
        let ensemble = (r.ensemble_networks > 0).then_some(&r.ensemble_test);
        CsvRow {
            step: r.step,
            kinetic_temperature: r.kinetic_temperature,
            mean_xi: r.mean_xi,
            diverged: r.diverged,
            test_accuracy: ensemble.map(|m| m.accuracy),
            test_nll: ensemble.map(|m| m.nll),
            test_ece: ensemble.map(|m| m.ece),
            single_test_accuracy: r.single_test.accuracy,
            single_test_nll: r.single_test.nll,
            baseline_test_accuracy: r.baseline_test.accuracy,
            baseline_test_nll: r.baseline_test.nll,
            baseline_test_ece: r.baseline_test.ece,
        }
    });
    super::csv_text(&CSV_HEADER, rows)
}

/// Statistics of one weight layer at the end of a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LayerSummary {
    /// Kinetic temperature (target T).
    pub kinetic_temperature: f64,
    /// Mean ξ.
    pub mean_xi: f64,
}

/// Where an MLP run ran and how fast: facts of the machine and the moment, not of the
/// sampler (a sweep's record leaves them out).
#[derive(Clone, Debug, Serialize)]
pub struct MlpTimings {
    /// Threads or adapter.
    pub device: String,
    /// Wall-clock seconds spent advancing the networks.
    pub elapsed_s: f64,
    /// Stochastic-gradient evaluations of whole networks per second.
    pub chain_gradients_per_s: f64,
}

/// The summary of an MLP run: the JSON line of `atmc-lab run` on an MLP preset.
#[derive(Clone, Debug, Serialize)]
pub struct MlpSummary {
    /// Always `mlp`.
    pub kind: &'static str,
    /// Preset name.
    pub name: String,
    /// Sampler name.
    pub sampler: String,
    /// Architecture, e.g. `2-16-16-2 tanh`.
    pub network: String,
    /// Parameters per network.
    pub parameters: usize,
    /// Data set name.
    pub data: String,
    /// Training points.
    pub train_points: usize,
    /// Test points.
    pub test_points: usize,
    /// Networks sampled.
    pub chains: u32,
    /// Steps run.
    pub steps: u32,
    /// Seed.
    pub seed: u64,
    /// `cpu` or `gpu`.
    pub backend: String,
    /// Which of ATMC's printed defects were on.
    pub printed_defects: Vec<String>,
    /// Fraction of networks diverged at the end.
    pub diverged_fraction: f64,
    /// Step at which the first network diverged (null if none did).
    pub first_divergence_step: Option<u32>,
    /// Kinetic temperature of the alive networks at the end (target T); null when none is
    /// alive.
    pub kinetic_temperature: Option<f64>,
    /// Mean ξ at the end; null when no network is alive.
    pub mean_xi: Option<f64>,
    /// Per weight layer, input side first (empty when no network is alive).
    pub layers: Vec<LayerSummary>,
    /// The posterior predictive over all alive networks; `null` when every network
    /// diverged (there is no posterior left to predict with).
    pub posterior_predictive: Option<Evaluation>,
    /// Network 0 alone: one posterior sample; null when it diverged.
    pub single_network: Option<Evaluation>,
    /// The SGD-trained baseline network.
    pub baseline_sgd: Evaluation,
    /// Where the run ran and how fast (in the JSON line as fields of their own).
    #[serde(flatten)]
    pub timings: MlpTimings,
    /// Split R-hat of what the networks identify (their test log-likelihood and predictive
    /// probabilities at fixed inputs), never of their weights.
    pub identifiable_rhat: IdentifiableRhat,
}

/// Networks whose identifiable quantities are traced for R-hat.
pub const IDENTIFIABLE_NETWORKS: u32 = 32;
/// Test inputs (the first ones) at which each network's predicted probability of its label is
/// traced.
pub const PROBE_INPUTS: usize = 3;

/// Why R-hat of weights would mislead, said wherever the identifiable R-hat is shown.
pub const WEIGHT_RHAT_NOTE: &str = "R-hat of weights is meaningless: permuting a layer's \
    units gives the same network, so chains in equivalent modes disagree on every weight; \
    R-hat is measured on what the networks predict instead.";

/// Per network, at each recorded block: its mean test log-likelihood and its predicted
/// probability of the label at [`PROBE_INPUTS`] test inputs. These do not change under a
/// permutation of hidden units, so chains can be compared on them.
#[derive(Clone, Debug, Default)]
pub struct IdentifiableTraces {
    /// Per network, per block: [test log-likelihood, p(label | probe input j)…].
    traces: Vec<Vec<[f64; 1 + PROBE_INPUTS]>>,
    /// Per network, whether it diverged (then it leaves the statistic).
    diverged: Vec<bool>,
    /// Blocks offered so far, and every how many one is kept: the traces are halved when
    /// they reach [`MAX_IDENTIFIABLE_DRAWS`] (a long session stays bounded; thinned draws
    /// remain a valid chain).
    offered: u64,
    stride: u64,
}

/// Draws kept per traced network.
pub const MAX_IDENTIFIABLE_DRAWS: usize = 1024;

/// Split R-hat of the identifiable quantities over the second half of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IdentifiableRhat {
    /// Networks compared (the first alive ones of [`IDENTIFIABLE_NETWORKS`]).
    pub networks: usize,
    /// Draws per network (recorded blocks in the second half).
    pub draws: usize,
    /// R-hat of the mean test log-likelihood; null when it cannot be computed.
    #[serde(serialize_with = "super::defined")]
    pub test_log_likelihood: f64,
    /// R-hat of the predicted probability of the label at each probe input.
    pub predictive: Vec<Option<f64>>,
    /// What this measures, and what it does not promise.
    pub note: &'static str,
}

impl IdentifiableTraces {
    /// Records one block: `weights` are the first networks' parameters (chain-major, as
    /// `MlpEngine::read_weights` gives them) and `diverged` their divergence.
    pub fn record(
        &mut self,
        posterior: &MlpPosterior,
        data: &Dataset,
        weights: &[f32],
        diverged: &[bool],
    ) {
        let p = posterior.params();
        let n = (weights.len() / p.max(1)).min(diverged.len());
        if self.traces.len() != n {
            self.traces = vec![Vec::new(); n];
            self.diverged = vec![false; n];
            self.offered = 0;
            self.stride = 1;
        }
        self.offered += 1;
        if !self.offered.is_multiple_of(self.stride.max(1)) {
            return;
        }
        if self
            .traces
            .first()
            .is_some_and(|t| t.len() >= MAX_IDENTIFIABLE_DRAWS)
        {
            for t in &mut self.traces {
                *t = t.iter().skip(1).step_by(2).copied().collect();
            }
            self.stride = self.stride.max(1) * 2;
        }
        let k = data.classes as usize;
        let mut ws = Workspace::default();
        let mut probs = vec![0.0f32; k];
        for (net, theta) in weights.chunks_exact(p).take(n).enumerate() {
            self.diverged[net] |= diverged[net];
            let mut row = [0.0f64; 1 + PROBE_INPUTS];
            let mut sum = 0.0;
            for (i, (&x, &y)) in data.test_x.iter().zip(&data.test_y).enumerate() {
                posterior.predict(theta, x, &mut ws, &mut probs);
                let py = f64::from(probs[y as usize]);
                sum += py.max(1e-12).ln();
                if i < PROBE_INPUTS {
                    row[1 + i] = py;
                }
            }
            row[0] = sum / data.test_x.len().max(1) as f64;
            self.traces[net].push(row);
        }
    }

    /// Split R-hat (rank-normalised, the larger of bulk and tail) of each quantity over the
    /// second half of the recorded blocks, across the networks that never diverged.
    pub fn rhat(&self) -> IdentifiableRhat {
        let alive: Vec<&Vec<[f64; 1 + PROBE_INPUTS]>> = self
            .traces
            .iter()
            .zip(&self.diverged)
            .filter(|(_, d)| !**d)
            .map(|(t, _)| t)
            .collect();
        let blocks = alive.first().map_or(0, |t| t.len());
        let from = blocks / 2;
        let of = |q: usize| -> f64 {
            let draws: Vec<Vec<f64>> = alive
                .iter()
                .map(|t| t[from..].iter().map(|r| r[q]).collect())
                .collect();
            super::mcmc::split_rhat(&draws)
        };
        IdentifiableRhat {
            networks: alive.len(),
            draws: blocks - from,
            test_log_likelihood: of(0),
            predictive: (1..=PROBE_INPUTS)
                .map(|q| Some(of(q)).filter(|v| v.is_finite()))
                .collect(),
            note: "networks in different basins may never mix: a high value says they \
                   predict differently, not that more steps will fix it",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncertainty_runs_from_certain_to_uniform() {
        let p = Prediction {
            classes: 2,
            mean: vec![1.0, 0.0, 0.5, 0.5, 0.5, 0.5],
            mean_square: vec![1.0, 0.0, 0.25, 0.25, 0.5, 0.5],
            focus: Vec::new(),
            chains_used: 2,
        };
        let h = uncertainty(&p, Uncertainty::Entropy);
        assert_eq!(h[0], 0.0);
        assert!((h[1] - 1.0).abs() < 1e-6);
        let s = uncertainty(&p, Uncertainty::Spread);
        // Networks agree on 0.5 at the second point and split 0/1 at the third.
        assert_eq!(s[1], 0.0);
        assert!((s[2] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn series_csv_leaves_the_ensemble_empty_without_networks() {
        let mut row = MlpSeriesRow {
            step: 50,
            ensemble_networks: 4,
            ..MlpSeriesRow::default()
        };
        row.ensemble_test.accuracy = 0.5;
        let without = MlpSeriesRow {
            ensemble_networks: 0,
            ..row.clone()
        };
        let text = series_csv(&[row, without]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(series_csv(&[]), format!("{}\n", lines[0]));
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(lines[1], "50,0.0,0.0,0,0.5,0.0,0.0,0.0,0.0,0.0,0.0,0.0");
        assert_eq!(lines[2], "50,0.0,0.0,0,,,,0.0,0.0,0.0,0.0,0.0");
    }
}
