//! Labelled 2-D classification data sets for Bayesian MLP posteriors: seeded generators
//! (two moons, circles, XOR, spirals, blobs) and CSV files, split into train and test sets.
//!
//! Generated points lie roughly within [−3, 3]², so one display grid fits every set. Each
//! set is a pure function of its [`DataSpec`]: the points come from one private
//! [`SequentialRng`] stream and the train/test split from another, so changing the test
//! fraction reshuffles nothing but the split.

use super::ranges;
use super::rng::SequentialRng;
use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};
use std::path::Path;

/// Private stream of the generators ("data sets").
const DATA_STREAM: u32 = 0xDA7A_5E75;
/// Private stream of the train/test shuffle ("data split").
const SPLIT_STREAM: u32 = 0xDA7A_5B17;
/// Largest class count of any data set (CSV labels are at most `MAX_CLASSES − 1`).
pub const MAX_CLASSES: u32 = 8;

/// Where the points of a data set come from, as written in a preset:
/// `TwoMoons`, `Blobs(classes: 3)`, `Csv(path: "my.csv")`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum DataSource {
    /// Two interleaved half circles (scikit-learn's `make_moons`), two classes.
    #[default]
    TwoMoons,
    /// Two concentric circles of radii 1 and 2.2, two classes.
    Circles,
    /// Uniform points in [−2.5, 2.5]² away from the axes, labelled by the sign of x·y.
    Xor,
    /// Two interleaved spiral arms of 1.5 turns, two classes.
    Spirals,
    /// Gaussian clusters (standard deviation 0.3) centred on a circle of radius 2.
    Blobs {
        /// Number of clusters, one class each.
        #[serde(
            default = "default_blob_classes",
            deserialize_with = "crate::math::ranges::de_classes"
        )]
        classes: u32,
    },
    /// Lines `x,y,label` of a file (see [`parse_csv`]); relative paths are relative to the
    /// working directory.
    Csv {
        /// Path of the file.
        path: String,
    },
}

fn default_blob_classes() -> u32 {
    3
}

impl DataSource {
    /// The generated sources with their default settings, in the order a UI lists them.
    pub const GENERATED: [DataSource; 5] = [
        DataSource::TwoMoons,
        DataSource::Circles,
        DataSource::Xor,
        DataSource::Spirals,
        DataSource::Blobs { classes: 3 },
    ];

    /// A short human name.
    pub fn name(&self) -> &'static str {
        match self {
            DataSource::TwoMoons => "two moons",
            DataSource::Circles => "circles",
            DataSource::Xor => "XOR",
            DataSource::Spirals => "spirals",
            DataSource::Blobs { .. } => "blobs",
            DataSource::Csv { .. } => "CSV file",
        }
    }

    /// Whether the points are generated (not read from a file).
    pub fn is_generated(&self) -> bool {
        !matches!(self, DataSource::Csv { .. })
    }

    /// The number of classes of a generated source; `None` for a CSV file (known only once
    /// it is read).
    pub fn classes(&self) -> Option<u32> {
        match self {
            DataSource::Blobs { classes } => Some(*classes),
            DataSource::Csv { .. } => None,
            _ => Some(2),
        }
    }
}

/// A classification data set as written in a preset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataSpec {
    /// Generator or file.
    #[serde(default)]
    pub source: DataSource,
    /// Total points (train and test) of a generated set; ignored for CSV files.
    #[serde(
        default = "default_points",
        deserialize_with = "crate::math::ranges::de_dataset_points"
    )]
    pub points: u32,
    /// Standard deviation of the Gaussian jitter added to each generated point, in plane
    /// units; ignored for CSV files.
    #[serde(
        default = "default_noise",
        deserialize_with = "crate::math::ranges::de_data_noise"
    )]
    pub noise: f32,
    /// Fraction of the points held out as the test set.
    #[serde(
        default = "default_test_fraction",
        deserialize_with = "crate::math::ranges::de_test_fraction"
    )]
    pub test_fraction: f32,
    /// Seed of the generator and of the train/test split.
    #[serde(default)]
    pub seed: u64,
}

fn default_points() -> u32 {
    400
}
fn default_noise() -> f32 {
    0.15
}
fn default_test_fraction() -> f32 {
    0.3
}

impl Default for DataSpec {
    /// Two moons, 400 points, noise 0.15, 30 % test points, seed 0.
    fn default() -> Self {
        Self {
            source: DataSource::default(),
            points: default_points(),
            noise: default_noise(),
            test_fraction: default_test_fraction(),
            seed: 0,
        }
    }
}

/// A labelled 2-D data set split into train and test points.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Source name (the file name for CSV files).
    pub name: String,
    /// Number of classes K; every label is below K.
    pub classes: u32,
    /// Training inputs.
    pub train_x: Vec<[f32; 2]>,
    /// Training labels.
    pub train_y: Vec<u32>,
    /// Test inputs.
    pub test_x: Vec<[f32; 2]>,
    /// Test labels.
    pub test_y: Vec<u32>,
}

impl Dataset {
    /// `[[x_min, x_max], [y_min, y_max]]` over all points (train and test) widened by 10 % of
    /// the extent on each side, in the layout of [`super::Grid2`]. An axis whose points all
    /// coincide gets ±1 around them, and an empty set gets [−1, 1]², so the bounds are never
    /// degenerate.
    pub fn bounds(&self) -> [[f32; 2]; 2] {
        let mut lo = [f32::INFINITY; 2];
        let mut hi = [f32::NEG_INFINITY; 2];
        for p in self.train_x.iter().chain(&self.test_x) {
            for c in 0..2 {
                lo[c] = lo[c].min(p[c]);
                hi[c] = hi[c].max(p[c]);
            }
        }
        std::array::from_fn(|c| {
            if lo[c] > hi[c] {
                return [-1.0, 1.0];
            }
            let span = hi[c] - lo[c];
            // A relative threshold: a tiny span far from the origin would round away.
            if span <= 1e-6 * lo[c].abs().max(hi[c].abs()).max(1.0) {
                [lo[c] - 1.0, hi[c] + 1.0]
            } else {
                [lo[c] - 0.1 * span, hi[c] + 0.1 * span]
            }
        })
    }

    /// Points per class: `(train, test)`, each of length [`Self::classes`].
    pub fn class_counts(&self) -> (Vec<u32>, Vec<u32>) {
        let count = |labels: &[u32]| {
            let mut counts = vec![0u32; self.classes as usize];
            for &y in labels {
                counts[y as usize] += 1;
            }
            counts
        };
        (count(&self.train_y), count(&self.test_y))
    }

    /// Total number of points, train and test.
    pub fn len(&self) -> usize {
        self.train_y.len() + self.test_y.len()
    }

    /// Whether the set has no points at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl DataSpec {
    /// Generates or reads the points and splits them. Fails on out-of-range settings (a spec
    /// built in code bypasses the preset's range checks) and on unreadable or invalid files.
    pub fn build(&self) -> Result<Dataset, String> {
        ranges::TEST_FRACTION.check(f64::from(self.test_fraction))?;
        let (name, classes, points, labels) = match &self.source {
            DataSource::Csv { path } => {
                let (points, labels) = load_csv(path)?;
                let classes = labels.iter().max().map_or(0, |&m| m + 1);
                let name = Path::new(path)
                    .file_name()
                    .map_or_else(|| path.clone(), |f| f.to_string_lossy().into_owned());
                (name, classes, points, labels)
            }
            source => {
                ranges::DATASET_POINTS.check(f64::from(self.points))?;
                ranges::DATA_NOISE.check(f64::from(self.noise))?;
                if let DataSource::Blobs { classes } = source {
                    ranges::CLASSES.check(f64::from(*classes))?;
                }
                let (points, labels) = generate(source, self.points, self.noise, self.seed);
                let classes = source.classes().unwrap_or(2);
                (source.name().to_string(), classes, points, labels)
            }
        };
        let (train, test) = split(points.len(), self.test_fraction, self.seed);
        let pick = |idx: &[usize]| -> (Vec<[f32; 2]>, Vec<u32>) {
            idx.iter().map(|&i| (points[i], labels[i])).unzip()
        };
        let (train_x, train_y) = pick(&train);
        let (test_x, test_y) = pick(&test);
        Ok(Dataset {
            name,
            classes,
            train_x,
            train_y,
            test_x,
            test_y,
        })
    }
}

/// A seeded shuffle of `0..n` cut into (train, test) index lists with round(n · fraction)
/// test points, keeping at least one training point.
fn split(n: usize, test_fraction: f32, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut SequentialRng::new(seed, SPLIT_STREAM));
    let n_test = ((n as f64 * f64::from(test_fraction)).round() as usize).min(n.saturating_sub(1));
    let test = order.split_off(n - n_test);
    (order, test)
}

/// The points of a generated source, class by class with balanced counts (class k gets
/// ⌊n/K⌋ points, plus one for the first n mod K classes). The caller shuffles.
fn generate(source: &DataSource, n: u32, noise: f32, seed: u64) -> (Vec<[f32; 2]>, Vec<u32>) {
    let mut rng = SequentialRng::new(seed, DATA_STREAM);
    let classes = source.classes().unwrap_or(2);
    let noise = f64::from(noise);
    let mut points = Vec::with_capacity(n as usize);
    let mut labels = Vec::with_capacity(n as usize);
    for k in 0..classes {
        let count = n / classes + u32::from(k < n % classes);
        for _ in 0..count {
            let [x, y] = clean_point(source, k, classes, &mut rng);
            let jitter: [f64; 2] = [rng.sample(StandardNormal), rng.sample(StandardNormal)];
            points.push([
                (x + noise * jitter[0]) as f32,
                (y + noise * jitter[1]) as f32,
            ]);
            labels.push(k);
        }
    }
    (points, labels)
}

/// One noise-free point of class `k`.
fn clean_point(source: &DataSource, k: u32, classes: u32, rng: &mut SequentialRng) -> [f64; 2] {
    match source {
        DataSource::TwoMoons => {
            // make_moons: the upper arc (cos t, sin t) and the lower arc (1 − cos t,
            // ½ − sin t), t ∈ [0, π]; centred on (½, ¼) and scaled by 1.5 to [−2.25, 2.25].
            let t = rng.random_range(0.0..PI);
            let (x, y) = if k == 0 {
                (t.cos(), t.sin())
            } else {
                (1.0 - t.cos(), 0.5 - t.sin())
            };
            [1.5 * (x - 0.5), 1.5 * (y - 0.25)]
        }
        DataSource::Circles => {
            let radius = if k == 0 { 1.0 } else { 2.2 };
            let angle = rng.random_range(0.0..TAU);
            [radius * angle.cos(), radius * angle.sin()]
        }
        DataSource::Xor => {
            // |x|, |y| ∈ [0.1, 2.5): a margin around the axes keeps the noise-free labels
            // unambiguous. Class 1: same signs (x·y > 0); class 0: opposite signs.
            let sx = if rng.random() { 1.0 } else { -1.0 };
            let sy = if k == 1 { sx } else { -sx };
            let ax = rng.random_range(0.1..2.5);
            let ay = rng.random_range(0.1..2.5);
            [sx * ax, sy * ay]
        }
        DataSource::Spirals => {
            // Radius grows linearly from 0.25 to 2.75 over 1.5 turns; arm 1 is arm 0 turned
            // by π.
            let t: f64 = rng.random();
            let radius = 0.25 + 2.5 * t;
            let angle = 1.5 * TAU * t + PI * f64::from(k);
            [radius * angle.cos(), radius * angle.sin()]
        }
        DataSource::Blobs { .. } => {
            let angle = TAU * f64::from(k) / f64::from(classes);
            let z: [f64; 2] = [rng.sample(StandardNormal), rng.sample(StandardNormal)];
            [
                2.0 * angle.cos() + 0.3 * z[0],
                2.0 * angle.sin() + 0.3 * z[1],
            ]
        }
        DataSource::Csv { .. } => unreachable!("CSV files are read, not generated"),
    }
}

/// Reads a CSV file of `x,y,label` lines (see [`parse_csv`]). A missing or unreadable file
/// gives a message with the path and the operating system's reason.
pub fn load_csv(path: impl AsRef<Path>) -> Result<(Vec<[f32; 2]>, Vec<u32>), String> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read data file {}: {e}", path.display()))?;
    parse_csv(&text, &path.display().to_string())
}

/// Parses lines `x,y,label` into points and labels.
///
/// * Fields are separated by commas, semicolons or tabs (surrounding spaces are trimmed), or
///   else by whitespace; CSV quoting (`"x","y","label"`) is understood.
/// * `#` starts a comment up to the end of the line; blank lines are skipped.
/// * The first remaining line is a header, and skipped, if none of its fields is a number.
/// * x and y must be finite f32; labels are integers 0..=7 (`2` and `2.0` are both read as
///   class 2). The class count is the largest label plus one.
///
/// Errors read `origin:line: message`; the two whole-file errors (fewer than 4 points,
/// fewer than two distinct labels) read `origin: message`.
pub fn parse_csv(text: &str, origin: &str) -> Result<(Vec<[f32; 2]>, Vec<u32>), String> {
    // The csv crate reads one delimiter and whole-line comments only, while these files may
    // change separator from line to line and end a line with a comment: cut each line at `#`,
    // drop it if blank, and turn its separators into commas first. `line_numbers[i]` is the
    // file's line of the unified text's line i + 1 (csv's own count skips blank lines).
    let mut unified = String::with_capacity(text.len());
    let mut line_numbers = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.contains([',', ';', '\t']) {
            unified.push_str(&line.replace([';', '\t'], ","));
        } else {
            unified.push_str(&line.split_whitespace().collect::<Vec<_>>().join(","));
        }
        unified.push('\n');
        line_numbers.push(index + 1);
    }
    let file_line = |position: Option<&csv::Position>| {
        let line = position.map_or(0, |p| p.line() as usize);
        line.checked_sub(1)
            .and_then(|i| line_numbers.get(i))
            .copied()
            .unwrap_or(line)
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(unified.as_bytes());
    let mut points = Vec::new();
    let mut labels = Vec::new();
    let mut header_possible = true;
    for record in reader.records() {
        let record = record.map_err(|e| format!("{origin}:{}: {e}", file_line(e.position())))?;
        let line_no = file_line(record.position());
        let err = |msg: String| format!("{origin}:{line_no}: {msg}");
        let fields: Vec<&str> = record.iter().collect();
        // Only the first non-blank line may be a header.
        let first_line = std::mem::replace(&mut header_possible, false);
        if first_line && fields.iter().all(|f| f.parse::<f64>().is_err()) {
            continue;
        }
        if fields.len() != 3 {
            return Err(err(format!(
                "expected 3 fields x, y, label but found {}",
                fields.len()
            )));
        }
        let mut xy = [0.0f32; 2];
        for (c, name) in ["x", "y"].into_iter().enumerate() {
            let v: f64 = fields[c]
                .parse()
                .map_err(|_| err(format!("{name} = {:?} is not a number", fields[c])))?;
            // Finite in f64 but beyond f32 (1e300) is as unusable as inf.
            let v32 = v as f32;
            if !v32.is_finite() {
                return Err(err(format!(
                    "{name} = {} is not a finite number",
                    fields[c]
                )));
            }
            xy[c] = v32;
        }
        let label: f64 = fields[2]
            .parse()
            .map_err(|_| err(format!("label {:?} is not a number", fields[2])))?;
        if !(label >= 0.0 && label.fract() == 0.0 && label < f64::from(MAX_CLASSES)) {
            return Err(err(format!(
                "label {} is not an integer class 0..={}",
                fields[2],
                MAX_CLASSES - 1
            )));
        }
        points.push(xy);
        labels.push(label as u32);
    }
    if points.len() < 4 {
        return Err(format!(
            "{origin}: {} data points; at least 4 are needed",
            points.len()
        ));
    }
    let first = labels[0];
    if labels.iter().all(|&y| y == first) {
        return Err(format!(
            "{origin}: every point has label {first}; at least two classes are needed"
        ));
    }
    Ok((points, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(source: DataSource, seed: u64) -> DataSpec {
        DataSpec {
            source,
            seed,
            ..DataSpec::default()
        }
    }

    fn all_generated() -> Vec<DataSource> {
        let mut v = DataSource::GENERATED.to_vec();
        v.push(DataSource::Blobs { classes: 2 });
        v.push(DataSource::Blobs { classes: 8 });
        v
    }

    #[test]
    fn generators_are_seeded_sized_balanced_and_bounded() {
        for source in all_generated() {
            let name = format!("{source:?}");
            let a = spec(source.clone(), 7).build().unwrap();
            let b = spec(source.clone(), 7).build().unwrap();
            let c = spec(source.clone(), 8).build().unwrap();
            assert_eq!(a, b, "{name}");
            assert_ne!(a.train_x, c.train_x, "{name}");
            assert_eq!(a.len(), 400, "{name}");
            assert_eq!(a.classes, source.classes().unwrap(), "{name}");
            let (train, test) = a.class_counts();
            let k = a.classes as usize;
            for class in 0..k {
                let total = train[class] + test[class];
                assert!(
                    total as usize == 400 / k || total as usize == 400 / k + 1,
                    "{name}: class {class} has {total}"
                );
            }
            for p in a.train_x.iter().chain(&a.test_x) {
                assert!(
                    p.iter().all(|v| v.is_finite() && v.abs() <= 4.0),
                    "{name} {p:?}"
                );
            }
            let [bx, by] = a.bounds();
            assert!(bx[0] < bx[1] && by[0] < by[1]);
            assert!(bx[0] >= -4.4 && bx[1] <= 4.4 && by[0] >= -4.4 && by[1] <= 4.4);
        }
    }

    #[test]
    fn split_sizes_follow_the_test_fraction_and_the_seed() {
        for (points, fraction) in [(400, 0.3), (401, 0.25), (8, 0.9), (1000, 0.0), (9, 0.5)] {
            let d = DataSpec {
                points,
                test_fraction: fraction,
                ..DataSpec::default()
            }
            .build()
            .unwrap();
            let n_test = (f64::from(points) * f64::from(fraction)).round() as usize;
            assert_eq!(d.test_x.len(), n_test, "{points} {fraction}");
            assert_eq!(d.test_y.len(), n_test);
            assert_eq!(d.train_x.len(), points as usize - n_test);
            assert_eq!(d.train_y.len(), d.train_x.len());
        }
        // The split shuffles: the training set is not the generator's class-by-class order.
        let d = DataSpec::default().build().unwrap();
        assert!(d.train_y[..20].iter().any(|&y| y != d.train_y[0]));
    }

    /// Best accuracy of a linear classifier w·x > t on all points, over 720 directions and all
    /// thresholds (for two classes).
    fn best_linear_accuracy(d: &Dataset) -> f64 {
        let points: Vec<_> = d.train_x.iter().chain(&d.test_x).collect();
        let labels: Vec<_> = d.train_y.iter().chain(&d.test_y).collect();
        let mut best = 0.0f64;
        for a in 0..720 {
            let angle = f64::from(a) * PI / 360.0;
            let (s, c) = angle.sin_cos();
            let mut proj: Vec<(f64, u32)> = points
                .iter()
                .zip(&labels)
                .map(|(p, &&y)| (c * f64::from(p[0]) + s * f64::from(p[1]), y))
                .collect();
            proj.sort_by(|u, v| u.0.total_cmp(&v.0));
            // Predict 1 above the threshold: correct = zeros below + ones above.
            let ones = proj.iter().filter(|p| p.1 == 1).count();
            let mut correct = ones;
            let mut best_here = correct;
            for p in &proj {
                correct = if p.1 == 0 { correct + 1 } else { correct - 1 };
                best_here = best_here.max(correct);
            }
            best = best.max(best_here as f64 / proj.len() as f64);
        }
        best
    }

    #[test]
    fn moons_are_not_linearly_separable_and_shapes_hold_without_noise() {
        // The best line misclassifies the moons' overlapping tips: about 12 % of the points.
        for seed in 0..4 {
            let moons = DataSpec {
                noise: 0.1,
                points: 2000,
                seed,
                ..DataSpec::default()
            }
            .build()
            .unwrap();
            let acc = best_linear_accuracy(&moons);
            assert!(
                acc < 0.92,
                "two moons (seed {seed}) linearly separable to {acc}"
            );
        }
        // The sweep itself finds separable sets: two far blobs.
        let blobs = DataSpec {
            source: DataSource::Blobs { classes: 2 },
            noise: 0.0,
            ..DataSpec::default()
        }
        .build()
        .unwrap();
        assert_eq!(best_linear_accuracy(&blobs), 1.0);

        let clean = |source| {
            DataSpec {
                source,
                noise: 0.0,
                points: 1000,
                ..DataSpec::default()
            }
            .build()
            .unwrap()
        };
        let xor = clean(DataSource::Xor);
        assert!(best_linear_accuracy(&xor) < 0.8);
        for (p, &y) in xor.train_x.iter().zip(&xor.train_y) {
            assert_eq!(y, u32::from(p[0] * p[1] > 0.0), "{p:?}");
            assert!(p[0].abs() >= 0.1 && p[1].abs() >= 0.1);
        }
        let circles = clean(DataSource::Circles);
        for (p, &y) in circles.train_x.iter().zip(&circles.train_y) {
            let r = p[0].hypot(p[1]);
            assert!((r - [1.0, 2.2][y as usize]).abs() < 1e-5, "{p:?} {y}");
        }
        let spirals = clean(DataSource::Spirals);
        for p in &spirals.train_x {
            let r = p[0].hypot(p[1]);
            assert!((0.25 - 1e-5..=2.75 + 1e-5).contains(&r), "{p:?}");
        }
    }

    #[test]
    fn out_of_range_settings_fail_to_build() {
        let bad = [
            DataSpec {
                points: 4,
                ..DataSpec::default()
            },
            DataSpec {
                noise: -0.1,
                ..DataSpec::default()
            },
            DataSpec {
                test_fraction: 0.95,
                ..DataSpec::default()
            },
            DataSpec {
                source: DataSource::Blobs { classes: 9 },
                ..DataSpec::default()
            },
        ];
        for spec in bad {
            assert!(
                spec.build().unwrap_err().contains("out of range"),
                "{spec:?}"
            );
        }
    }

    #[test]
    fn ron_reads_sources_and_checks_ranges() {
        let d: DataSpec =
            ron::from_str("(source: Blobs(classes: 4), points: 800, seed: 3)").unwrap();
        assert_eq!(d.source, DataSource::Blobs { classes: 4 });
        assert_eq!(
            (d.points, d.noise, d.test_fraction, d.seed),
            (800, 0.15, 0.3, 3)
        );
        let d: DataSpec = ron::from_str("(source: Csv(path: \"my.csv\"))").unwrap();
        assert_eq!(d.source.name(), "CSV file");
        let d: DataSpec = ron::from_str("(source: TwoMoons)").unwrap();
        assert_eq!(d, DataSpec::default());
        assert_eq!(
            ron::from_str::<DataSpec>("()").unwrap(),
            DataSpec::default()
        );
        for bad in [
            "(points: 7)",
            "(noise: 2.5)",
            "(test_fraction: 1.0)",
            "(source: Blobs(classes: 1))",
            "(colour: 1)",
        ] {
            assert!(ron::from_str::<DataSpec>(bad).is_err(), "{bad}");
        }
        let text = ron::to_string(&DataSpec::default()).unwrap();
        assert_eq!(
            ron::from_str::<DataSpec>(&text).unwrap(),
            DataSpec::default()
        );
    }

    #[test]
    fn csv_reads_headers_comments_and_separators() {
        let text = "# exported data\n\
                    x, y, label\n\
                    \n\
                    0.5,1.5,0\n\
                    -1;2e-1;1   # semicolons\n\
                    3\t4\t2.0\n\
                    \x20 7   -8  1\n";
        let (points, labels) = parse_csv(text, "t.csv").unwrap();
        assert_eq!(
            points,
            vec![[0.5, 1.5], [-1.0, 0.2], [3.0, 4.0], [7.0, -8.0]]
        );
        assert_eq!(labels, vec![0, 1, 2, 1]);
        // Without a header the first line is data.
        let (points, _) = parse_csv("1 2 0\n3 4 1\n5 6 0\n7 8 1\n", "t").unwrap();
        assert_eq!(points.len(), 4);
        // Quoted fields, as spreadsheets and R's write.csv export them, and CRLF line ends.
        let text = "\"x\",\"y\",\"label\"\r\n\"1.5\",2,\"0\"\r\n3,4,1\r\n5,6,0\r\n7,8,\"1\"\r\n";
        let (points, labels) = parse_csv(text, "t").unwrap();
        assert_eq!(points[0], [1.5, 2.0]);
        assert_eq!(labels, vec![0, 1, 0, 1]);
    }

    #[test]
    fn csv_errors_name_origin_and_line() {
        let ok = "0,0,0\n1,1,1\n2,2,0\n";
        let cases = [
            ("x,y,label\n0,0\n", ":2:", "3 fields"),
            ("0,0,0\n1,1,1,1\n", ":2:", "found 4"),
            (&format!("{ok}1,a,1\n"), ":4:", "y = \"a\" is not a number"),
            (&format!("{ok}1,1,b\n"), ":4:", "not a number"),
            (&format!("{ok}\n\ninf,1,1\n"), ":6:", "not a finite"),
            (&format!("{ok}1e300,1,1\n"), ":4:", "not a finite"),
            (&format!("{ok}1,NaN,1\n"), ":4:", "not a finite"),
            (&format!("{ok}1,1,-1\n"), ":4:", "label -1"),
            (&format!("{ok}1,1,1.5\n"), ":4:", "label 1.5"),
            (&format!("{ok}1,1,8\n"), ":4:", "0..=7"),
            (&format!("{ok}1,,1\n"), ":4:", "is not a number"),
        ];
        for (text, line, msg) in cases {
            let e = parse_csv(text, "data.csv").unwrap_err();
            assert!(e.starts_with("data.csv"), "{e}");
            assert!(e.contains(line) && e.contains(msg), "{text:?}: {e}");
        }
        let e = parse_csv(ok, "data.csv").unwrap_err();
        assert!(e.starts_with("data.csv: 3 data points"), "{e}");
        let e = parse_csv("x y c\n", "data.csv").unwrap_err();
        assert!(e.contains("0 data points"), "{e}");
        let e = parse_csv("0,0,1\n1,1,1\n2,2,1\n3,3,1\n", "data.csv").unwrap_err();
        assert!(e.contains("label 1; at least two classes"), "{e}");
    }

    #[test]
    fn csv_files_build_and_missing_files_name_the_path() {
        let dir = std::env::temp_dir().join(format!("atmc-datasets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("points.csv");
        let text: String = (0..20).map(|i| format!("{i},{},{}\n", -i, i % 3)).collect();
        std::fs::write(&path, text).unwrap();
        let spec = DataSpec {
            source: DataSource::Csv {
                path: path.display().to_string(),
            },
            test_fraction: 0.25,
            ..DataSpec::default()
        };
        let d = spec.build().unwrap();
        assert_eq!(d.name, "points.csv");
        assert_eq!((d.classes, d.train_x.len(), d.test_x.len()), (3, 15, 5));
        assert_eq!(d, spec.build().unwrap());
        let other = DataSpec { seed: 1, ..spec }.build().unwrap();
        assert_ne!(d.train_x, other.train_x);
        assert_close(d.bounds(), [[-1.9, 20.9], [-20.9, 1.9]]);
        std::fs::remove_dir_all(&dir).unwrap();

        let missing = dir.join("missing.csv");
        let e = load_csv(&missing).unwrap_err();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        assert!(e.contains("os error"), "{e}");
    }

    fn assert_close(a: [[f32; 2]; 2], b: [[f32; 2]; 2]) {
        let close = a.iter().flatten().zip(b.iter().flatten());
        assert!(
            close.into_iter().all(|(u, v)| (u - v).abs() < 1e-5),
            "{a:?} vs {b:?}"
        );
    }

    #[test]
    fn bounds_are_never_degenerate() {
        let mut d = Dataset {
            name: String::new(),
            classes: 2,
            train_x: vec![],
            train_y: vec![],
            test_x: vec![],
            test_y: vec![],
        };
        assert_eq!(d.bounds(), [[-1.0, 1.0], [-1.0, 1.0]]);
        d.train_x = vec![[5.0, 1.0], [5.0, 3.0]];
        d.train_y = vec![0, 1];
        assert_close(d.bounds(), [[4.0, 6.0], [0.8, 3.2]]);
    }
}
