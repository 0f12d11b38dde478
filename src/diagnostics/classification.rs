//! Quality of probabilistic classifiers (MATH.md §6): accuracy, negative log-likelihood and
//! expected calibration error with its reliability diagram over 15 equal-width bins.
//!
//! The input is one probability vector per example. For a Bayesian model it is the
//! posterior predictive, the average of the samples' softmax outputs, which the caller forms
//! before [`ClassificationAccumulator::add`]: averaging log-likelihoods instead would measure
//! the samples, not the predictive.
//!
//! The accumulator only adds counts and sums, so examples can be fed in any order or in
//! parallel chunks combined with [`ClassificationAccumulator::merge`].

use serde::{Deserialize, Serialize};

/// Equal-width confidence bins of the calibration error and the reliability diagram.
pub const RELIABILITY_BINS: usize = 15;

/// Smallest probability inside the logarithm of the NLL: a confidently wrong prediction
/// (p_label = 0, or NaN) costs −ln 10⁻¹² ≈ 27.6 nats instead of infinity, so one example
/// cannot turn the mean into inf.
pub const NLL_PROBABILITY_FLOOR: f64 = 1e-12;

/// One bar of the reliability diagram: the examples whose confidence (largest probability)
/// lies in `[lower, upper)` (the last bin includes 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// Lower confidence bound.
    pub lower: f64,
    /// Upper confidence bound.
    pub upper: f64,
    /// Examples in the bin.
    pub count: u64,
    /// Mean confidence of those examples (0 for an empty bin).
    pub mean_confidence: f64,
    /// Fraction of those examples classified correctly (0 for an empty bin).
    pub accuracy: f64,
}

/// Summary metrics of a classifier on a set of examples. An empty set (a preset with
/// `test_fraction: 0` has no test set) has no accuracy: its metrics are 0 in memory and
/// `null` in JSON ([`ClassMetrics::describe`] says so in words).
#[derive(Clone, Default, Debug, PartialEq, Deserialize)]
pub struct ClassMetrics {
    /// Fraction of examples whose arg-max class (lowest index on ties) is the label.
    #[serde(deserialize_with = "null_as_zero")]
    pub accuracy: f64,
    /// Mean of −ln max(p_label, 10⁻¹²) (see [`NLL_PROBABILITY_FLOOR`]).
    #[serde(deserialize_with = "null_as_zero")]
    pub nll: f64,
    /// Expected calibration error Σ_b (n_b / n) |accuracy_b − confidence_b| over
    /// [`RELIABILITY_BINS`] bins.
    #[serde(deserialize_with = "null_as_zero")]
    pub ece: f64,
    /// Number of examples; all metrics are 0 (not NaN) when it is 0, and written as null.
    pub count: u64,
}

/// Reads the null an empty set's metric is written as back as 0 (its `count` says why).
fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(0.0))
}

impl Serialize for ClassMetrics {
    /// The fields as they are, except that an empty set's metrics are `null`: zeros would
    /// read as a classifier that is always wrong with a perfect NLL.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let metric = |v: f64| (self.count > 0).then_some(v);
        let mut out = s.serialize_struct("ClassMetrics", 4)?;
        out.serialize_field("accuracy", &metric(self.accuracy))?;
        out.serialize_field("nll", &metric(self.nll))?;
        out.serialize_field("ece", &metric(self.ece))?;
        out.serialize_field("count", &self.count)?;
        out.end()
    }
}

impl ClassMetrics {
    /// "accuracy 93.1% / NLL 0.214 / ECE 0.012" on the `set` ("test", "train"), or a line
    /// saying the set is empty.
    pub fn describe(&self, set: &str) -> String {
        if self.count == 0 {
            format!("no {set} set (0 examples)")
        } else {
            format!(
                "{set} accuracy {:.1}% / NLL {:.3} / ECE {:.3}",
                100.0 * self.accuracy,
                self.nll,
                self.ece
            )
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct BinSums {
    count: u64,
    correct: u64,
    confidence: f64,
}

/// Incremental accuracy, NLL and calibration over examples of a `classes`-way classifier.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassificationAccumulator {
    classes: usize,
    count: u64,
    correct: u64,
    nll_sum: f64,
    bins: [BinSums; RELIABILITY_BINS],
}

impl ClassificationAccumulator {
    /// An empty accumulator for probability vectors of length `classes`.
    pub fn new(classes: usize) -> Self {
        Self {
            classes,
            count: 0,
            correct: 0,
            nll_sum: 0.0,
            bins: [BinSums::default(); RELIABILITY_BINS],
        }
    }

    /// An accumulator over `labels.len()` examples whose probabilities are the rows of the
    /// row-major `probs` (n × `classes`).
    pub fn from_batch(probs: &[f32], labels: &[u32], classes: usize) -> Self {
        let mut acc = Self::new(classes);
        acc.add_batch(probs, labels);
        acc
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Number of examples added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds one example: its probability vector (length `classes`) and its label.
    ///
    /// NaN probabilities never win the arg-max; an all-NaN vector predicts class 0 with
    /// confidence 0. Confidences are clamped to [0, 1] for binning.
    ///
    /// # Panics
    /// If `probs.len() != classes` or `label >= classes`.
    pub fn add(&mut self, probs: &[f32], label: u32) {
        assert_eq!(
            probs.len(),
            self.classes,
            "probability vector of the wrong length"
        );
        assert!(
            (label as usize) < self.classes,
            "label {label} of a {}-class problem",
            self.classes
        );
        let (mut argmax, mut best) = (0, f32::NEG_INFINITY);
        for (k, &p) in probs.iter().enumerate() {
            // Strictly greater: ties go to the lowest index, and NaN compares false.
            if p > best {
                argmax = k;
                best = p;
            }
        }
        let confidence = f64::from(best).clamp(0.0, 1.0);
        let correct = argmax == label as usize;
        // f64::max returns the other operand for NaN, so NaN costs as much as 0.
        let p_label = f64::from(probs[label as usize]).max(NLL_PROBABILITY_FLOOR);
        self.count += 1;
        self.correct += u64::from(correct);
        self.nll_sum -= p_label.ln();
        // Confidence 1 belongs to the last bin, which is closed above.
        let b = ((confidence * RELIABILITY_BINS as f64) as usize).min(RELIABILITY_BINS - 1);
        let bin = &mut self.bins[b];
        bin.count += 1;
        bin.correct += u64::from(correct);
        bin.confidence += confidence;
    }

    /// Adds the examples whose probabilities are the rows of the row-major `probs`
    /// (`labels.len()` × `classes`).
    ///
    /// # Panics
    /// If `probs.len() != labels.len() * classes` or a label is out of range.
    pub fn add_batch(&mut self, probs: &[f32], labels: &[u32]) {
        assert_eq!(
            probs.len(),
            labels.len() * self.classes,
            "probabilities are not labels × classes"
        );
        if self.classes == 0 {
            return;
        }
        for (row, &label) in probs.chunks_exact(self.classes).zip(labels) {
            self.add(row, label);
        }
    }

    /// Adds the examples of `other` (as if they had been added to `self`).
    ///
    /// # Panics
    /// If the class counts differ.
    pub fn merge(&mut self, other: &Self) {
        assert_eq!(
            self.classes, other.classes,
            "merging different class counts"
        );
        self.count += other.count;
        self.correct += other.correct;
        self.nll_sum += other.nll_sum;
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            a.count += b.count;
            a.correct += b.correct;
            a.confidence += b.confidence;
        }
    }

    /// Accuracy, NLL and ECE of the examples so far; zeros with count 0 when there are none.
    pub fn metrics(&self) -> ClassMetrics {
        if self.count == 0 {
            return ClassMetrics {
                accuracy: 0.0,
                nll: 0.0,
                ece: 0.0,
                count: 0,
            };
        }
        let n = self.count as f64;
        // Σ_b (n_b/n) |correct_b/n_b − conf_b/n_b| = Σ_b |correct_b − conf_b| / n.
        let gap: f64 = self
            .bins
            .iter()
            .map(|b| (b.correct as f64 - b.confidence).abs())
            .sum();
        ClassMetrics {
            accuracy: self.correct as f64 / n,
            nll: self.nll_sum / n,
            ece: gap / n,
            count: self.count,
        }
    }

    /// The [`RELIABILITY_BINS`] bars of the reliability diagram, in order of confidence,
    /// empty bins included (with count 0).
    pub fn bins(&self) -> Vec<ReliabilityBin> {
        let width = 1.0 / RELIABILITY_BINS as f64;
        self.bins
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (mean_confidence, accuracy) = if b.count == 0 {
                    (0.0, 0.0)
                } else {
                    let n = b.count as f64;
                    (b.confidence / n, b.correct as f64 / n)
                };
                ReliabilityBin {
                    lower: i as f64 * width,
                    upper: if i + 1 == RELIABILITY_BINS {
                        1.0
                    } else {
                        (i + 1) as f64 * width
                    },
                    count: b.count,
                    mean_confidence,
                    accuracy,
                }
            })
            .collect()
    }
}

/// Accuracy, NLL and ECE of `labels.len()` examples whose probabilities are the rows of the
/// row-major `probs` (n × `classes`). See [`ClassificationAccumulator`].
///
/// # Panics
/// If `probs.len() != labels.len() * classes` or a label is out of range.
pub fn classification_metrics(probs: &[f32], labels: &[u32], classes: usize) -> ClassMetrics {
    ClassificationAccumulator::from_batch(probs, labels, classes).metrics()
}

/// The reliability diagram of the same input as [`classification_metrics`].
pub fn reliability_bins(probs: &[f32], labels: &[u32], classes: usize) -> Vec<ReliabilityBin> {
    ClassificationAccumulator::from_batch(probs, labels, classes).bins()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use rand::RngExt;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    /// Four examples, two classes, by hand. Bins are [k/15, (k+1)/15).
    ///
    /// | probs      | label | argmax | correct | confidence | bin            | −ln p_label |
    /// |------------|-------|--------|---------|------------|----------------|-------------|
    /// | 0.9, 0.1   | 0     | 0      | yes     | 0.9        | 13 [.867,.933) | 0.1053605   |
    /// | 0.85, 0.15 | 1     | 0      | no      | 0.85       | 12 [.8,.867)   | 1.8971200   |
    /// | 0.3, 0.7   | 1     | 1      | yes     | 0.7        | 10 [.667,.733) | 0.3566749   |
    /// | 0.35, 0.65 | 0     | 1      | no      | 0.65       | 9 [.6,.667)    | 1.0498221   |
    ///
    /// accuracy = 2/4 = 0.5; NLL = 3.4089775 / 4 = 0.8522444.
    /// ECE: one example per bin, so (|1 − 0.9| + |0 − 0.85| + |1 − 0.7| + |0 − 0.65|) / 4
    ///      = (0.1 + 0.85 + 0.3 + 0.65) / 4 = 0.475.
    #[test]
    fn four_examples_by_hand() {
        let probs = [0.9, 0.1, 0.85, 0.15, 0.3, 0.7, 0.35, 0.65];
        let labels = [0, 1, 1, 0];
        let m = classification_metrics(&probs, &labels, 2);
        assert_eq!(m.count, 4);
        assert!(close(m.accuracy, 0.5), "{m:?}");
        assert!(close(m.nll, 0.852_244_4), "{m:?}");
        assert!(close(m.ece, 0.475), "{m:?}");
        let bins = reliability_bins(&probs, &labels, 2);
        assert_eq!(bins.len(), RELIABILITY_BINS);
        let filled: Vec<usize> = (0..RELIABILITY_BINS)
            .filter(|&i| bins[i].count > 0)
            .collect();
        assert_eq!(filled, vec![9, 10, 12, 13]);
        assert!(close(bins[12].mean_confidence, 0.85) && bins[12].accuracy == 0.0);
        assert!(close(bins[13].mean_confidence, 0.9) && bins[13].accuracy == 1.0);
        assert!(close(bins[9].lower, 0.6) && close(bins[9].upper, 2.0 / 3.0));
        assert_eq!((bins[0].lower, bins[14].upper), (0.0, 1.0));
        assert_eq!(bins[0].mean_confidence, 0.0);
    }

    /// Two examples in one bin: ECE uses the bin's mean, so errors of opposite sign cancel
    /// inside a bin. Both have confidence 0.95 (bin 14); the first is right, the second
    /// predicts class 2 for label 0.
    /// ECE = |0.5 − 0.95| = 0.45 (not the per-example mean 0.5);
    /// NLL = (−ln 0.95 − ln 0.02) / 2 = (0.0512933 + 3.9120230) / 2 = 1.9816581.
    #[test]
    fn shared_bin_and_three_classes() {
        let probs = [0.95, 0.03, 0.02, 0.02, 0.03, 0.95];
        let m = classification_metrics(&probs, &[0, 0], 3);
        assert!(close(m.accuracy, 0.5));
        assert!(close(m.ece, 0.45), "{m:?}");
        assert!(close(m.nll, 1.981_658_1), "{m:?}");
    }

    #[test]
    fn confidence_one_ties_zeros_and_nan() {
        let mut acc = ClassificationAccumulator::new(3);
        // Confidence exactly 1 lands in the last bin; p_label = 0 is floored at 1e-12.
        acc.add(&[1.0, 0.0, 0.0], 0);
        acc.add(&[1.0, 0.0, 0.0], 2);
        let bins = acc.bins();
        assert_eq!(bins[14].count, 2);
        assert_eq!(bins[14].mean_confidence, 1.0);
        assert_eq!(bins[14].accuracy, 0.5);
        let m = acc.metrics();
        assert!(close(m.nll, -(1e-12f64).ln() / 2.0), "{m:?}");
        assert!(close(m.ece, 0.5));
        // Ties go to the lowest index: (0.5, 0.5) predicts class 0.
        let m = classification_metrics(&[0.5, 0.5, 0.5, 0.5], &[0, 1], 2);
        assert!(close(m.accuracy, 0.5));
        // NaN never wins and is floored in the NLL; everything stays finite.
        let m = classification_metrics(&[f32::NAN, 0.7, f32::NAN, f32::NAN], &[0, 1], 2);
        assert!(close(m.accuracy, 0.0), "{m:?}");
        assert!(m.nll.is_finite() && m.ece.is_finite(), "{m:?}");
    }

    #[test]
    fn empty_input_gives_zeros() {
        let m = classification_metrics(&[], &[], 10);
        assert_eq!(
            m,
            ClassMetrics {
                accuracy: 0.0,
                nll: 0.0,
                ece: 0.0,
                count: 0
            }
        );
        let bins = ClassificationAccumulator::new(10).bins();
        assert!(bins.iter().all(|b| b.count == 0 && b.accuracy == 0.0));
    }

    #[test]
    fn merging_equals_one_pass() {
        // Deterministic pseudo-random probabilities over 4 classes.
        let classes = 4;
        let n = 101;
        let mut probs = Vec::with_capacity(n * classes);
        let mut labels = Vec::with_capacity(n);
        let mut rng = SequentialRng::new(12345, 0);
        for i in 0..n {
            let row: Vec<f32> = (0..classes)
                .map(|_| rng.random_range(0.01f32..1.01).powi(3))
                .collect();
            let sum: f32 = row.iter().sum();
            probs.extend(row.iter().map(|p| p / sum));
            labels.push((i * 7 % classes) as u32);
        }
        let whole = ClassificationAccumulator::from_batch(&probs, &labels, classes);
        let cut = 37;
        let mut a =
            ClassificationAccumulator::from_batch(&probs[..cut * classes], &labels[..cut], classes);
        let b =
            ClassificationAccumulator::from_batch(&probs[cut * classes..], &labels[cut..], classes);
        a.merge(&b);
        let (ma, mw) = (a.metrics(), whole.metrics());
        assert_eq!(ma.count, mw.count);
        assert_eq!(ma.accuracy, mw.accuracy);
        assert!(
            close(ma.nll, mw.nll) && close(ma.ece, mw.ece),
            "{ma:?} {mw:?}"
        );
        for (x, y) in a.bins().iter().zip(&whole.bins()) {
            assert_eq!((x.count, x.accuracy), (y.count, y.accuracy));
            assert!(close(x.mean_confidence, y.mean_confidence));
        }
        assert!(mw.ece > 0.0 && mw.nll > 0.0);
    }
}
