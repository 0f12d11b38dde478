//! Labelled 2-D classification data sets for Bayesian MLP posteriors: seeded generators
//! (two moons, circles, XOR, spirals, blobs), CSV files and points drawn by hand (kept inline
//! in the preset), split into train and test sets.
//!
//! `math` reads no files: a CSV file's text is handed in by the layer that knows where the
//! preset came from and how large a data file may be ([`ReadCsv`], supplied by
//! `preset::data`), and parsed here ([`parse_csv`]).
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
/// Largest class count of a drawn data set (the MLP view's class picker offers 2 to 5).
pub const MAX_DRAWN_CLASSES: u32 = 5;
/// Most points of a drawn data set: as many as the largest set the view generates, so any
/// generated set can be taken over and edited, while the preset stays a file one can read.
pub const MAX_DRAWN_POINTS: usize = 5000;
/// Fewest points of a drawn data set that networks run on (of at least two classes).
pub const MIN_DRAWN_POINTS: usize = 8;
/// The area a drawn data set is drawn on, `[[x_min, x_max], [y_min, y_max]]`: the square the
/// generated sets lie in, widened to take in any point outside it (see [`drawn_canvas`]).
pub const DRAW_CANVAS: [[f32; 2]; 2] = [[-3.0, 3.0], [-3.0, 3.0]];

/// One drawn point: `(x, y, label)`.
pub type DrawnPoint = (f32, f32, u32);

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
    /// Lines `x,y,label` of a file (see [`parse_csv`]). A relative path is relative to the
    /// preset file that names it (inside a lecture: within the lecture's folder), or to the
    /// working directory for a preset that is no file; `preset::data` resolves it on loading.
    Csv {
        /// Path of the file.
        path: String,
    },
    /// Points placed by hand in the MLP view's Draw mode, kept in the preset:
    /// `Drawn(classes: 2, points: [(-1.2, 0.5, 0), (0.8, 1.1, 1)])`, each `(x, y, label)`.
    /// Checked when read (see [`check_drawn`]); networks run on it from
    /// [`MIN_DRAWN_POINTS`] points of at least two classes on (see [`drawn_shortfall`]).
    Drawn {
        /// Classes of the output layer, 2 to [`MAX_DRAWN_CLASSES`]; every label is below it
        /// (a class may have no point yet).
        #[serde(deserialize_with = "de_drawn_classes")]
        classes: u32,
        /// The points in the order they were drawn, at most [`MAX_DRAWN_POINTS`].
        #[serde(default, deserialize_with = "de_drawn_points")]
        points: Vec<DrawnPoint>,
    },
}

fn default_blob_classes() -> u32 {
    3
}

/// Reads a drawn set's class count, 2 to [`MAX_DRAWN_CLASSES`].
fn de_drawn_classes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let classes = u32::deserialize(d)?;
    check_drawn_classes(classes).map_err(serde::de::Error::custom)?;
    Ok(classes)
}

/// Reads drawn points, each checked on its own (finite, a label below
/// [`MAX_DRAWN_CLASSES`]), and their number; labels against `classes` are checked by
/// [`check_drawn`] once both fields are read.
fn de_drawn_points<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<DrawnPoint>, D::Error> {
    let points = Vec::<DrawnPoint>::deserialize(d)?;
    check_drawn_points(&points, None).map_err(serde::de::Error::custom)?;
    Ok(points)
}

fn check_drawn_classes(classes: u32) -> Result<(), String> {
    if (2..=MAX_DRAWN_CLASSES).contains(&classes) {
        Ok(())
    } else {
        Err(format!(
            "classes = {classes} is out of range: a drawn data set has 2 to {MAX_DRAWN_CLASSES} \
             classes"
        ))
    }
}

/// Checks a drawn set: 2 to [`MAX_DRAWN_CLASSES`] classes, at most [`MAX_DRAWN_POINTS`]
/// points, finite coordinates and every label below `classes`. Messages name the point by
/// its position (1 for the first) and its values.
pub fn check_drawn(classes: u32, points: &[DrawnPoint]) -> Result<(), String> {
    check_drawn_classes(classes)?;
    check_drawn_points(points, Some(classes))
}

/// [`check_drawn`]'s checks of the points: labels below `classes`, or below
/// [`MAX_DRAWN_CLASSES`] when the class count is not known yet (`None`).
fn check_drawn_points(points: &[DrawnPoint], classes: Option<u32>) -> Result<(), String> {
    if points.len() > MAX_DRAWN_POINTS {
        return Err(format!(
            "{} drawn points: a drawn data set has at most {MAX_DRAWN_POINTS}",
            points.len()
        ));
    }
    for (i, &(x, y, label)) in points.iter().enumerate() {
        if !(x.is_finite() && y.is_finite()) {
            return Err(format!(
                "drawn point {} ({x}, {y}, {label}) has a coordinate that is not a finite number",
                i + 1
            ));
        }
        let limit = classes.unwrap_or(MAX_DRAWN_CLASSES);
        if label >= limit {
            let why = match classes {
                Some(c) => format!("the set has classes = {c}"),
                None => format!("a drawn data set has at most {MAX_DRAWN_CLASSES} classes"),
            };
            return Err(format!(
                "drawn point {} ({x}, {y}, {label}) has label {label}, but {why} (labels 0 to \
                 {})",
                i + 1,
                limit - 1
            ));
        }
    }
    Ok(())
}

/// What a drawn set lacks before networks can run on it — `None` from
/// [`MIN_DRAWN_POINTS`] points of at least two classes on; otherwise what to add, as the view
/// says it: "draw 5 more points", "add a point of a second class", or both.
pub fn drawn_shortfall(points: &[DrawnPoint]) -> Option<String> {
    let missing = MIN_DRAWN_POINTS.saturating_sub(points.len());
    let two_classes = points.iter().any(|p| p.2 != points[0].2);
    match (missing, two_classes) {
        (0, true) => None,
        (0, false) => Some("add a point of a second class".to_owned()),
        (n, two) => Some(format!(
            "draw {n} more point{}{}",
            if n == 1 { "" } else { "s" },
            if two {
                ""
            } else {
                ", at least one of a second class"
            }
        )),
    }
}

/// The area drawn points are shown and drawn on: [`DRAW_CANVAS`] widened to take in every
/// point. A click lands inside it, so drawing never moves it (the picture stays put under
/// the pointer); only a set taken over from a wider one makes it larger.
pub fn drawn_canvas(points: &[DrawnPoint]) -> [[f32; 2]; 2] {
    let mut c = DRAW_CANVAS;
    for &(x, y, _) in points {
        c[0] = [c[0][0].min(x), c[0][1].max(x)];
        c[1] = [c[1][0].min(y), c[1][1].max(y)];
    }
    c
}

/// Drawn points as CSV, a header and one `x,y,label` line each, the format [`parse_csv`]
/// reads: each number printed in the shortest form that reads back to the same f32, so the
/// file loads back as `Csv(path)` with the same points in the same order.
pub fn drawn_csv(points: &[DrawnPoint]) -> String {
    let mut text = String::from("x,y,label\n");
    for (x, y, label) in points {
        text.push_str(&format!("{x},{y},{label}\n"));
    }
    text
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
            DataSource::Drawn { .. } => "drawn",
        }
    }

    /// Whether the points are generated (not read from a file nor drawn).
    pub fn is_generated(&self) -> bool {
        !matches!(self, DataSource::Csv { .. } | DataSource::Drawn { .. })
    }

    /// The number of classes of a generated or drawn source; `None` for a CSV file (known
    /// only once it is read).
    pub fn classes(&self) -> Option<u32> {
        match self {
            DataSource::Blobs { classes } | DataSource::Drawn { classes, .. } => Some(*classes),
            DataSource::Csv { .. } => None,
            _ => Some(2),
        }
    }

    /// A drawn source with the points of `data` (training points, then test points), for
    /// editing a known set by hand. Fails, saying why, on more than [`MAX_DRAWN_POINTS`]
    /// points or more than [`MAX_DRAWN_CLASSES`] classes.
    pub fn drawn_from(data: &Dataset) -> Result<DataSource, String> {
        if data.classes > MAX_DRAWN_CLASSES {
            return Err(format!(
                "{} has {} classes: a drawn data set has at most {MAX_DRAWN_CLASSES}",
                data.name, data.classes
            ));
        }
        let points: Vec<DrawnPoint> = (data.train_x.iter().zip(&data.train_y))
            .chain(data.test_x.iter().zip(&data.test_y))
            .map(|(p, &y)| (p[0], p[1], y))
            .collect();
        let classes = data.classes.max(2);
        check_drawn(classes, &points)
            .map_err(|e| format!("{} cannot be drawn over: {e}", data.name))?;
        Ok(DataSource::Drawn { classes, points })
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
    /// The area the maps cover, when it is fixed rather than found from the points: a drawn
    /// set's canvas ([`drawn_canvas`]), so that a new point does not move the picture.
    pub canvas: Option<[[f32; 2]; 2]>,
}

impl Dataset {
    /// `[[x_min, x_max], [y_min, y_max]]` over all points (train and test) widened by 10 % of
    /// the extent on each side, in the layout of [`super::Grid2`]. An axis whose points all
    /// coincide gets ±1 around them, and an empty set gets [−1, 1]², so the bounds are never
    /// degenerate. A set with a fixed [`Self::canvas`] has the canvas.
    pub fn bounds(&self) -> [[f32; 2]; 2] {
        if let Some(canvas) = self.canvas {
            return canvas;
        }
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

/// The text of a CSV data file by its path as the preset holds it, or why it cannot be read.
/// `math` reads no files: the caller supplies this (`preset::data::read_csv` reads within the
/// size limit of data files).
pub type ReadCsv<'a> = &'a dyn Fn(&str) -> Result<String, String>;

impl DataSpec {
    /// Generates the points (or takes a CSV file's text from `read_csv` and parses it) and
    /// splits them. Fails on out-of-range settings (a spec built in code bypasses the
    /// preset's range checks) and on unreadable or invalid files.
    pub fn build(&self, read_csv: ReadCsv) -> Result<Dataset, String> {
        ranges::TEST_FRACTION.check(f64::from(self.test_fraction))?;
        let mut canvas = None;
        let (name, classes, points, labels) = match &self.source {
            DataSource::Csv { path } => {
                let (points, labels) = parse_csv(&read_csv(path)?, path)?;
                let classes = labels.iter().max().map_or(0, |&m| m + 1);
                let name = Path::new(path)
                    .file_name()
                    .map_or_else(|| path.clone(), |f| f.to_string_lossy().into_owned());
                (name, classes, points, labels)
            }
            DataSource::Drawn { classes, points } => {
                check_drawn(*classes, points)?;
                if let Some(lack) = drawn_shortfall(points) {
                    return Err(format!(
                        "the drawn data set is too small: {lack} (networks run on at least \
                         {MIN_DRAWN_POINTS} points of at least two classes)"
                    ));
                }
                canvas = Some(drawn_canvas(points));
                let (xy, labels): (Vec<[f32; 2]>, Vec<u32>) =
                    points.iter().map(|&(x, y, l)| ([x, y], l)).unzip();
                ("drawn".to_owned(), *classes, xy, labels)
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
        let (train, test) = if canvas.is_some() {
            stable_split(&points, &labels, self.test_fraction, self.seed)
        } else {
            split(points.len(), self.test_fraction, self.seed)
        };
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
            canvas,
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

/// The split of a drawn set: each point gets a key hashed from its coordinates, its label and
/// the seed, and the round(n · fraction) points of smallest key are held out (at least one
/// training point is kept; equal keys go by position). A drawn point's set therefore does not
/// depend on the others: adding or removing one point moves at most one other point between
/// the sets, where [`split`]'s shuffle would reshuffle the whole set under the pen. Each set
/// keeps the drawing order.
fn stable_split(
    points: &[[f32; 2]],
    labels: &[u32],
    test_fraction: f32,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let n = points.len();
    let n_test = ((n as f64 * f64::from(test_fraction)).round() as usize).min(n.saturating_sub(1));
    let key = |i: usize| {
        let [x, y] = points[i];
        let xy = (u64::from(x.to_bits()) << 32) | u64::from(y.to_bits());
        splitmix64(splitmix64(xy ^ splitmix64(seed)) ^ u64::from(labels[i]))
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (key(i), i));
    // The smallest keys are held out.
    let mut train = order.split_off(n_test);
    let mut test = order;
    train.sort_unstable();
    test.sort_unstable();
    (train, test)
}

/// SplitMix64's finaliser: a bijective mix of 64 bits.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
        DataSource::Csv { .. } | DataSource::Drawn { .. } => {
            unreachable!("CSV files are read and drawn points kept, not generated")
        }
    }
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

    /// The reader of tests that read no file.
    fn no_file(path: &str) -> Result<String, String> {
        panic!("this test reads no file, yet {path} was asked for")
    }

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
            let a = spec(source.clone(), 7).build(&no_file).unwrap();
            let b = spec(source.clone(), 7).build(&no_file).unwrap();
            let c = spec(source.clone(), 8).build(&no_file).unwrap();
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
            .build(&no_file)
            .unwrap();
            let n_test = (f64::from(points) * f64::from(fraction)).round() as usize;
            assert_eq!(d.test_x.len(), n_test, "{points} {fraction}");
            assert_eq!(d.test_y.len(), n_test);
            assert_eq!(d.train_x.len(), points as usize - n_test);
            assert_eq!(d.train_y.len(), d.train_x.len());
        }
        // The split shuffles: the training set is not the generator's class-by-class order.
        let d = DataSpec::default().build(&no_file).unwrap();
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
            .build(&no_file)
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
        .build(&no_file)
        .unwrap();
        assert_eq!(best_linear_accuracy(&blobs), 1.0);

        let clean = |source| {
            DataSpec {
                source,
                noise: 0.0,
                points: 1000,
                ..DataSpec::default()
            }
            .build(&no_file)
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
                spec.build(&no_file).unwrap_err().contains("out of range"),
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
    fn csv_text_builds_and_a_read_failure_is_passed_on() {
        let text: String = (0..20).map(|i| format!("{i},{},{}\n", -i, i % 3)).collect();
        let read = |path: &str| {
            assert_eq!(path, "data/points.csv");
            Ok(text.clone())
        };
        let spec = DataSpec {
            source: DataSource::Csv {
                path: "data/points.csv".into(),
            },
            test_fraction: 0.25,
            ..DataSpec::default()
        };
        let d = spec.build(&read).unwrap();
        assert_eq!(d.name, "points.csv");
        assert_eq!((d.classes, d.train_x.len(), d.test_x.len()), (3, 15, 5));
        assert_eq!(d, spec.build(&read).unwrap());
        let other = DataSpec {
            seed: 1,
            ..spec.clone()
        }
        .build(&read)
        .unwrap();
        assert_ne!(d.train_x, other.train_x);
        assert_close(d.bounds(), [[-1.9, 20.9], [-20.9, 1.9]]);
        // The reader's refusal is the build's, and a parse error names the path.
        let e = spec.build(&|_| Err("no such file".into())).unwrap_err();
        assert_eq!(e, "no such file");
        let e = spec.build(&|_| Ok("1,2\n".into())).unwrap_err();
        assert!(e.starts_with("data/points.csv:1:"), "{e}");
    }

    /// A hand-placed XOR-like set of `n` points (labels by the sign of x·y).
    fn drawn_points(n: usize) -> Vec<DrawnPoint> {
        (0..n)
            .map(|i| {
                let t = i as f32 * 0.37;
                let (x, y) = (2.0 * t.sin(), 2.0 * (1.7 * t).cos());
                (x, y, u32::from(x * y > 0.0))
            })
            .collect()
    }

    fn drawn(classes: u32, points: Vec<DrawnPoint>) -> DataSpec {
        DataSpec {
            source: DataSource::Drawn { classes, points },
            test_fraction: 0.25,
            ..DataSpec::default()
        }
    }

    #[test]
    fn drawn_sets_round_trip_through_ron_and_build() {
        let spec = drawn(3, vec![(0.5, -1.25, 2), (1e-3, 2.0, 0)]);
        let text = ron::to_string(&spec).unwrap();
        assert!(
            text.contains("Drawn(classes:3,points:[(0.5,-1.25,2),(0.001,2.0,0)])"),
            "{text}"
        );
        assert_eq!(ron::from_str::<DataSpec>(&text).unwrap(), spec);
        let d: DataSpec = ron::from_str(
            "(source: Drawn(classes: 2, points: [(1.0, 2.0, 0), (-1, -2, 1)]), test_fraction: 0.0)",
        )
        .unwrap();
        assert_eq!(
            d.source,
            DataSource::Drawn {
                classes: 2,
                points: vec![(1.0, 2.0, 0), (-1.0, -2.0, 1)]
            }
        );
        assert_eq!(d.source.classes(), Some(2));
        assert!(!d.source.is_generated());
        // No points at all is a set waiting for its points.
        let d: DataSpec = ron::from_str("(source: Drawn(classes: 4))").unwrap();
        assert_eq!(
            d.source,
            DataSource::Drawn {
                classes: 4,
                points: vec![]
            }
        );

        let data = drawn(2, drawn_points(40)).build(&no_file).unwrap();
        assert_eq!(
            (data.name.as_str(), data.classes, data.len()),
            ("drawn", 2, 40)
        );
        assert_eq!((data.train_x.len(), data.test_x.len()), (30, 10));
        // The maps cover the canvas, not the hull of the points.
        assert_eq!(data.bounds(), DRAW_CANVAS);
        let wide = drawn(2, vec![(5.0, 0.0, 0), (-1.0, -4.0, 1)]);
        assert_eq!(
            drawn_canvas(match &wide.source {
                DataSource::Drawn { points, .. } => points,
                _ => unreachable!(),
            }),
            [[-3.0, 5.0], [-4.0, 3.0]]
        );
    }

    #[test]
    fn drawn_sets_are_checked_when_read_with_the_reason() {
        let cases = [
            ("(source: Drawn(classes: 1, points: []))", "2 to 5 classes"),
            (
                "(source: Drawn(classes: 6, points: []))",
                "classes = 6 is out of range",
            ),
            (
                "(source: Drawn(classes: 2, points: [(1.0, NaN, 0)]))",
                "not a finite number",
            ),
            (
                "(source: Drawn(classes: 2, points: [(0, 0, 0), (inf, 0, 1)]))",
                "drawn point 2",
            ),
            (
                "(source: Drawn(classes: 2, points: [(0, 0, 7)]))",
                "at most 5 classes",
            ),
            ("(source: Drawn(classes: 2, points: [(0, 0)]))", ""),
            ("(source: Drawn(points: []))", "classes"),
        ];
        for (text, why) in cases {
            let e = ron::from_str::<DataSpec>(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
        }
        // A label the class count does not cover needs both fields: `check_drawn`.
        let e = check_drawn(2, &[(0.0, 0.0, 0), (1.0, 1.5, 2)]).unwrap_err();
        assert!(
            e.contains("drawn point 2 (1, 1.5, 2) has label 2") && e.contains("labels 0 to 1"),
            "{e}"
        );
        let e = drawn(2, vec![(0.0, 0.0, 2); 10])
            .build(&no_file)
            .unwrap_err();
        assert!(e.contains("label 2"), "{e}");
        let too_many = vec![(0.0, 0.0, 0); MAX_DRAWN_POINTS + 1];
        let e = check_drawn(2, &too_many).unwrap_err();
        assert!(e.contains("at most 5000"), "{e}");
        let text = ron::to_string(&drawn(2, too_many)).unwrap();
        let e = ron::from_str::<DataSpec>(&text).unwrap_err().to_string();
        assert!(e.contains("at most 5000"), "{e}");
    }

    #[test]
    fn drawn_sets_below_the_minimum_say_what_they_wait_for() {
        assert_eq!(
            drawn_shortfall(&[]).as_deref(),
            Some("draw 8 more points, at least one of a second class")
        );
        let mut points = drawn_points(3);
        assert_eq!(
            drawn_shortfall(&points).as_deref(),
            Some("draw 5 more points")
        );
        points.extend(drawn_points(7)[3..].iter().copied());
        assert_eq!(
            drawn_shortfall(&points).as_deref(),
            Some("draw 1 more point")
        );
        let one_class = vec![(0.5, 0.5, 1); 12];
        assert_eq!(
            drawn_shortfall(&one_class).as_deref(),
            Some("add a point of a second class")
        );
        assert_eq!(drawn_shortfall(&drawn_points(8)), None);
        for (points, why) in [
            (drawn_points(7), "draw 1 more point"),
            (one_class, "add a point of a second class"),
        ] {
            let e = drawn(2, points).build(&no_file).unwrap_err();
            assert!(e.contains(why) && e.contains("at least 8 points"), "{e}");
        }
        // Eight points of two classes run, whatever the split leaves.
        for fraction in [0.0, 0.5, 0.9] {
            let d = DataSpec {
                test_fraction: fraction,
                ..drawn(2, drawn_points(8))
            }
            .build(&no_file)
            .unwrap();
            assert!(!d.train_x.is_empty());
        }
    }

    #[test]
    fn a_drawn_point_moves_at_most_one_other_point_between_the_sets() {
        let mut points = drawn_points(60);
        let test_set = |points: &[DrawnPoint]| {
            let d = drawn(2, points.to_vec()).build(&no_file).unwrap();
            assert_eq!(
                d.test_x.len(),
                (points.len() as f64 * 0.25).round() as usize
            );
            d.test_x
        };
        let mut before = test_set(&points);
        for k in 0..20 {
            let t = 100.0 + k as f32;
            points.push((t.sin(), t.cos(), k % 2));
            let after = test_set(&points);
            let left = before.iter().filter(|p| !after.contains(p)).count();
            assert!(left <= 1, "adding point {k} moved {left} test points out");
            before = after;
        }
        // Removing a point from the middle likewise.
        points.remove(30);
        let after = test_set(&points);
        let joined = after.iter().filter(|p| !before.contains(p)).count();
        assert!(
            joined <= 1,
            "removing moved {joined} points into the test set"
        );
        // Another seed, another split.
        let other = DataSpec {
            seed: 9,
            ..drawn(2, points.clone())
        }
        .build(&no_file)
        .unwrap();
        assert_ne!(other.test_x, after);
    }

    #[test]
    fn exported_drawn_points_load_back_as_the_same_csv_points() {
        let mut points = drawn_points(50);
        // Numbers as a pointer and a quantiser leave them, and awkward ones.
        points.push((0.1, -2.9999998, 1));
        points.push((1.0e-7, 123.456_79, 0));
        points.push((-0.0, 2.0 / 3.0, 1));
        let text = drawn_csv(&points);
        assert!(text.starts_with("x,y,label\n"), "{text}");
        let (xy, labels) = parse_csv(&text, "drawn.csv").unwrap();
        let back: Vec<DrawnPoint> = xy
            .iter()
            .zip(&labels)
            .map(|(p, &l)| (p[0], p[1], l))
            .collect();
        assert_eq!(back.len(), points.len());
        for (a, b) in back.iter().zip(&points) {
            assert_eq!(
                (a.0.to_bits(), a.1.to_bits(), a.2),
                (b.0.to_bits(), b.1.to_bits(), b.2)
            );
        }
        // As a data source: the same points and labels, as a set (the split differs).
        let csv = DataSpec {
            source: DataSource::Csv {
                path: "drawn.csv".into(),
            },
            ..drawn(2, vec![])
        }
        .build(&|_| Ok(text.clone()))
        .unwrap();
        let original = drawn(2, points.clone()).build(&no_file).unwrap();
        let sorted = |d: &Dataset| {
            let mut all: Vec<(u32, u32, u32)> = (d.train_x.iter().zip(&d.train_y))
                .chain(d.test_x.iter().zip(&d.test_y))
                .map(|(p, &l)| (p[0].to_bits(), p[1].to_bits(), l))
                .collect();
            all.sort_unstable();
            all
        };
        assert_eq!((csv.classes, csv.len()), (2, points.len()));
        assert_eq!(sorted(&csv), sorted(&original));
        // And taken over again as drawn points: the same points.
        let DataSource::Drawn {
            classes,
            points: again,
        } = DataSource::drawn_from(&csv).unwrap()
        else {
            panic!("not drawn");
        };
        assert_eq!(classes, 2);
        let again = drawn(2, again).build(&no_file).unwrap();
        assert_eq!(sorted(&again), sorted(&original));
    }

    #[test]
    fn generated_sets_are_taken_over_as_drawn_points_within_the_limits() {
        let moons = DataSpec::default().build(&no_file).unwrap();
        let DataSource::Drawn { classes, points } = DataSource::drawn_from(&moons).unwrap() else {
            panic!("not drawn");
        };
        assert_eq!((classes, points.len()), (2, 400));
        assert_eq!(
            (points[0].0, points[0].1),
            (moons.train_x[0][0], moons.train_x[0][1])
        );
        let blobs = DataSpec {
            source: DataSource::Blobs { classes: 6 },
            ..DataSpec::default()
        }
        .build(&no_file)
        .unwrap();
        let e = DataSource::drawn_from(&blobs).unwrap_err();
        assert!(e.contains("6 classes") && e.contains("at most 5"), "{e}");
        let big = DataSpec {
            points: 6000,
            ..DataSpec::default()
        }
        .build(&no_file)
        .unwrap();
        let e = DataSource::drawn_from(&big).unwrap_err();
        assert!(e.contains("6000 drawn points"), "{e}");
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
            canvas: None,
        };
        assert_eq!(d.bounds(), [[-1.0, 1.0], [-1.0, 1.0]]);
        d.train_x = vec![[5.0, 1.0], [5.0, 3.0]];
        d.train_y = vec![0, 1];
        assert_close(d.bounds(), [[4.0, 6.0], [0.8, 3.2]]);
    }
}
