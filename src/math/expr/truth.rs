//! Truth for an expression target, from grids as for the built-in targets (docs/MATH.md §9).
//!
//! Refused before any grid: a parameter or constant that the engines' f32 cannot hold, a box
//! out of range. Then the box: the preset's (checked to hold the mass that chains will
//! sample), or found by growing, moving and shrinking a box towards the mass until the mass
//! in its outermost cells is below [`EDGE_MASS`]. Refused with the cause, the place and the
//! allowed range: U not finite in the box or within the chains' reach around it, a pole, a
//! gradient that overflows f32, features finer than the grid or f32 resolves, mass that keeps
//! leaving every box. Then the normaliser, cell masses and exact samples. Each cell is
//! integrated by a 3 × 3 midpoint rule, split in two along an axis where U changes by more
//! than [`STEEP`] across it and the density may matter there, so a neck narrower than a cell
//! (the typed funnel's) is resolved rather than stepped over.
//!
//! The work is bounded: every evaluation of U counts against one limit ([`evaluation_limit`]:
//! [`WORK_LIMIT`] operations of the compiled formula, so a long formula gets fewer
//! evaluations and the limit is about the same time for every formula), and a truth that
//! would need more is refused with what to change. Progress goes to an observer
//! the caller installs ([`set_observer`]): math never prints; the command line prints the
//! lines and the app shows them.
//!
//! The truth is that of exp(−U) restricted to the box. What lies beyond it, the share of the
//! mass outside and moments over a box grown until they settle, is [`Beyond`] (in `beyond`).

mod beyond;
use beyond::Sums;
pub use beyond::{Beyond, Growth, MOMENT_TOLERANCE, Moment, NEGLIGIBLE_STRIP, Unsettled};

use super::Formula;
use super::program::Op;
use crate::math::grid::Grid2;
use crate::math::ranges::short_number;
use crate::math::rng::{SequentialRng, Stream};
use rand::RngExt;
use rand::distr::weighted::WeightedIndex;
use rand_distr::Distribution;
use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// Samples per axis of a leaf cell.
const S: usize = 3;
/// A cell is split along an axis where U may change by more than this across it.
const STEEP: f64 = 2.0;
/// Below e^(−this) of the largest density a region is negligible and never split.
const NEGLIGIBLE: f64 = 40.0;
/// Most splits from a grid cell down to a leaf.
const MAX_DEPTH: u32 = 28;
/// Most leaves per cell of the normaliser's grid: density that would need more is not
/// resolved, and the truth is refused rather than integrated wrong.
const MAX_LEAVES: u32 = 2048;
/// Most leaves per cell while the box is searched: only the mass near its edges decides, so
/// a coarser look does (and a formula that oscillates everywhere costs less per round).
const SCAN_LEAVES: u32 = 32;
/// The largest |θ| a box may reach: a grown box beyond it counts as not normalisable, and a
/// given box must lie within it.
pub const MAX_EXTENT: f64 = 1e5;
/// The narrowest box the search shrinks to, per axis: chains start at scale 1 around the
/// origin by default, and a chain beyond 1000 times the box counts as diverged.
pub const MIN_WIDTH: f64 = 0.01;
/// Mass allowed in the outermost cells of a found box, all four sides together. It bounds the
/// mass at the box's edge, not the mass beyond it: a heavy tail leaves more outside (the typed
/// funnel's box misses about 10⁻³), which [`Beyond::outside_mass`] estimates.
pub const EDGE_MASS: f64 = 1e-4;
/// Share of the mass within the chains' reach ([`reach`]) that may lie outside a given box.
pub const OUTSIDE_MASS: f64 = 0.01;
/// Share of the mass allowed in cells the refinement could not resolve.
const UNRESOLVED_MASS: f64 = 1e-3;
/// Steps of f32 a box must span per axis: the engines' θ lives on that lattice.
pub const F32_STEPS: f64 = 256.0;
/// Steps of f32 a feature of the density (a mode's width) must span.
const F32_FEATURE_STEPS: f64 = 16.0;
/// Cells per axis of the grids that find the box and the normaliser.
const SCAN_CELLS: u32 = 96;
const NORMALISER_CELLS: u32 = 256;
/// Cells per axis of the grid whose corners and centres are probed in the final box.
const PROBE_CELLS: u32 = 128;
/// Nodes per axis where the engines' f32 gradient is checked.
const F32_NODES: u32 = 129;
/// Rounds of the box search.
const MAX_ROUNDS: u32 = 60;
/// Grid cells integrated between two looks at the work limit and the observer (the
/// normaliser's, densest first, in smaller chunks: a formula it cannot resolve is refused after
/// its densest cells).
const CHUNK: usize = 1024;
const FINAL_CHUNK: usize = 256;
/// Operations of the compiled formula (U and ∇U, one evaluation) that one target's truth may
/// spend, some seconds of one core: a formula whose truth would need more is refused with what
/// to change. The gallery's formulas need a tenth of it at the ends of their sliders.
pub const WORK_LIMIT: u64 = 4_000_000_000;

/// The evaluations of U that the truth of `formula` may spend: [`WORK_LIMIT`] operations.
pub fn evaluation_limit(formula: &Formula) -> u64 {
    WORK_LIMIT / formula.full_flat.instrs.len().max(1) as u64
}

/// An expression target ready to sample: the compiled formula, its parameter values, the
/// box its truth lives on and its normaliser.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprTarget {
    /// The compiled formula (shared by every parameter setting).
    pub formula: Arc<Formula>,
    /// Parameter values in [`Formula::parameters`] order.
    pub values: Vec<f64>,
    /// The same in f32, padded to the GPU's target constants.
    pub values_f32: [f32; super::MAX_PARAMETERS],
    /// The box (θ₁ range, θ₂ range) the truth lives on: the preset's, or found so that its
    /// outermost cells hold less than [`EDGE_MASS`] of the mass. The mass beyond it is not
    /// bounded by that: see [`Self::outside_mass`].
    pub bounds: [[f64; 2]; 2],
    /// log ∫ exp(−U) over the box.
    pub log_normaliser: f64,
    /// What lies beyond the box: the share of the mass outside it, and the box the moments
    /// are taken over.
    pub beyond: Beyond,
    /// The masses of the grid integrated last: the moments and the exact samples use the
    /// same 400 × 400 grid, integrated once.
    last_masses: MassMemo,
}

/// The cell masses of one grid, shared by clones of a target (equal targets, equal masses).
#[derive(Clone, Debug, Default)]
struct MassMemo(Arc<Mutex<Option<GridMasses>>>);

/// A grid and the masses of its cells.
type GridMasses = (Grid2, Arc<Vec<f64>>);

impl PartialEq for MassMemo {
    /// A memo holds nothing the target's other fields do not determine.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What a truth computation is doing, for progress lines.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stage {
    /// Searching the box that holds the mass: round `round` scans `bounds`.
    FindingBox {
        /// 1, 2, … .
        round: u32,
        /// The box scanned.
        bounds: [[f64; 2]; 2],
    },
    /// Checking U (finite in f64) and its gradient (finite in the engines' f32) in the box.
    CheckingBox,
    /// Integrating exp(−U) over the box.
    Normalising,
    /// Checking U where chains can go around the box (and that a given box holds the mass).
    CheckingSurroundings,
    /// Integrating exp(−U) beyond the box, grown round by round from `bounds`: the mass
    /// outside it and the moments of a box large enough that they settle.
    LookingBeyond {
        /// 1, 2, … .
        round: u32,
        /// The box grown so far.
        bounds: [[f64; 2]; 2],
    },
    /// Done: the truth was found (`accepted`) or refused.
    Finished {
        /// Whether the target passed.
        accepted: bool,
    },
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::FindingBox { round, bounds } => {
                write!(f, "finding the box (round {round}: {})", box_text(bounds))
            }
            Stage::CheckingBox => write!(f, "checking U in the box"),
            Stage::Normalising => write!(f, "integrating exp(−U) over the box"),
            Stage::CheckingSurroundings => {
                write!(f, "checking U around the box, where chains can go")
            }
            Stage::LookingBeyond { round, bounds } => write!(
                f,
                "integrating beyond the box (round {round}: {})",
                box_text(bounds)
            ),
            Stage::Finished { accepted: true } => write!(f, "done"),
            Stage::Finished { accepted: false } => write!(f, "refused"),
        }
    }
}

/// A progress report of one truth computation, given to the observer of [`set_observer`].
#[derive(Clone, Debug, PartialEq)]
pub struct TruthProgress {
    /// The target: its formula (shortened) and parameter values.
    pub target: String,
    /// What it is doing.
    pub stage: Stage,
    /// Evaluations of U so far.
    pub evaluations: u64,
    /// The work limit in evaluations ([`evaluation_limit`] unless the caller chose another).
    pub limit: u64,
    /// Since the computation started.
    pub elapsed: Duration,
}

impl fmt::Display for TruthProgress {
    /// One line: `truth of U = …: finding the box (…) · 12.3 M of 120 M evaluations · 4.1 s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "truth of U = {}: {} · {} of {} evaluations of U · {:.1} s",
            self.target,
            self.stage,
            millions(self.evaluations),
            millions(self.limit),
            self.elapsed.as_secs_f64()
        )
    }
}

/// A count in millions for a progress line.
fn millions(n: u64) -> String {
    format!("{:.1} M", n as f64 / 1e6)
}

/// `θ₁ ∈ [a, b], θ₂ ∈ [c, d]`: a box in a message.
pub fn box_text(b: &[[f64; 2]; 2]) -> String {
    format!(
        "θ₁ ∈ [{}, {}], θ₂ ∈ [{}, {}]",
        short_number(b[0][0]),
        short_number(b[0][1]),
        short_number(b[1][0]),
        short_number(b[1][1])
    )
}

/// `(x, y)` for a message.
fn point_text(at: [f64; 2]) -> String {
    point_near(at, 0.0)
}

/// `(x, y)` for a message about features `scale` wide: a coordinate far below it is 0.
fn point_near(at: [f64; 2], scale: f64) -> String {
    let coordinate = |v: f64| if v.abs() < 1e-3 * scale { 0.0 } else { v };
    format!("({}, {})", num(coordinate(at[0])), num(coordinate(at[1])))
}

/// A number for a message: six significant digits, in scientific notation when tiny.
fn num(v: f64) -> String {
    if v != 0.0 && v.abs() < 1e-3 {
        let text = format!("{v:.3e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        format!("{mantissa}e{exponent}")
    } else {
        short_number(format!("{v:.5e}").parse().unwrap_or(v))
    }
}

/// Receives the progress of the truth computations that this thread starts.
pub type Observer = Box<dyn FnMut(&TruthProgress)>;

thread_local! {
    static OBSERVER: RefCell<Option<Observer>> = const { RefCell::new(None) };
}

/// Installs `observer` for the truth computations this thread starts, returning the one it
/// replaces (`None` removes it). A typed target's truth can take seconds: the caller shows
/// its progress (the command line prints a line to stderr after 2 s, the app shows it). The
/// observer is told at every stage and about ten times a second in between, on this thread.
pub fn set_observer(observer: Option<Observer>) -> Option<Observer> {
    OBSERVER.with_borrow_mut(|o| std::mem::replace(o, observer))
}

/// The formula (shortened) and its parameter values, for progress lines.
fn target_text(formula: &Formula, values: &[f64]) -> String {
    let mut text: String = formula.text.chars().take(48).collect();
    if formula.text.chars().count() > 48 {
        text.push('…');
    }
    for (name, v) in formula.parameters.iter().zip(values) {
        text.push_str(&format!(", {name} = {}", short_number(*v)));
    }
    text
}

/// One truth computation's work: evaluations of U counted against a limit, from every thread.
struct Work {
    spent: AtomicU64,
    limit: u64,
}

impl Work {
    fn new(limit: u64) -> Self {
        Self {
            spent: AtomicU64::new(0),
            limit,
        }
    }

    fn spend(&self, evaluations: u64) {
        self.spent.fetch_add(evaluations, Ordering::Relaxed);
    }

    fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    fn exhausted(&self) -> bool {
        self.spent() > self.limit
    }
}

/// A truth computation in progress: its work, its stage and the observer told of them (on
/// the computing thread).
struct Watch<'o> {
    work: Work,
    target: String,
    stage: Stage,
    started: Instant,
    told: Option<Instant>,
    observer: Option<&'o mut dyn FnMut(&TruthProgress)>,
    /// The last box scanned and the share of its mass in its outermost cells.
    last_scan: Option<([[f64; 2]; 2], f64)>,
}

impl<'o> Watch<'o> {
    fn new(
        target: String,
        limit: u64,
        observer: Option<&'o mut dyn FnMut(&TruthProgress)>,
    ) -> Self {
        Self {
            work: Work::new(limit),
            target,
            stage: Stage::CheckingBox,
            started: Instant::now(),
            told: None,
            observer,
            last_scan: None,
        }
    }

    /// A work limit nobody watches (grids after the truth was accepted).
    fn unwatched() -> Watch<'static> {
        Watch::new(String::new(), u64::MAX, None)
    }

    /// Enters `stage` and tells the observer.
    fn enter(&mut self, stage: Stage) {
        self.stage = stage;
        self.tell(true);
    }

    /// Tells the observer how far the work is, at most ten times a second.
    fn tick(&mut self) {
        self.tell(false);
    }

    fn tell(&mut self, always: bool) {
        let Some(observer) = self.observer.as_mut() else {
            return;
        };
        let now = Instant::now();
        if !always
            && self
                .told
                .is_some_and(|t| now - t < Duration::from_millis(100))
        {
            return;
        }
        self.told = Some(now);
        observer(&TruthProgress {
            target: self.target.clone(),
            stage: self.stage,
            evaluations: self.work.spent(),
            limit: self.work.limit,
            elapsed: now - self.started,
        });
    }
}

/// A rectangle [x0, x0 + dx) × [y0, y0 + dy).
#[derive(Clone, Copy, Debug)]
struct Rect {
    x0: f64,
    y0: f64,
    dx: f64,
    dy: f64,
}

impl Rect {
    /// The two halves of the rectangle, split across θ₁ (`along_x`) or θ₂.
    fn halves(self, along_x: bool) -> [Rect; 2] {
        if along_x {
            let h = self.dx / 2.0;
            [
                Rect { dx: h, ..self },
                Rect {
                    x0: self.x0 + h,
                    dx: h,
                    ..self
                },
            ]
        } else {
            let h = self.dy / 2.0;
            [
                Rect { dy: h, ..self },
                Rect {
                    y0: self.y0 + h,
                    dy: h,
                    ..self
                },
            ]
        }
    }

    fn centre(self) -> [f64; 2] {
        [self.x0 + 0.5 * self.dx, self.y0 + 0.5 * self.dy]
    }
}

/// What a cell's samples say: integrate it as a leaf or split it.
enum Split {
    Leaf([f64; S * S]),
    Children(Vec<Rect>),
}

/// What the integration of one grid cell met on its way down the refinement.
#[derive(Clone, Copy, Debug)]
struct Walk {
    /// Leaves so far (the cap counts them).
    leaves: u32,
    /// Most leaves.
    cap: u32,
    /// Evaluations of U.
    evaluations: u64,
    /// The lowest U sampled, and where.
    lowest: f64,
    lowest_at: [f64; 2],
    /// A sample where U is NaN.
    nan_at: Option<[f64; 2]>,
    /// Where a cell that matters needed a split that the cap or the depth refused.
    unresolved_at: Option<[f64; 2]>,
}

impl Walk {
    fn new(cap: u32) -> Self {
        Self {
            leaves: 0,
            cap,
            evaluations: 0,
            lowest: f64::INFINITY,
            lowest_at: [f64::NAN; 2],
            nan_at: None,
            unresolved_at: None,
        }
    }
}

/// What integrating a grid found.
struct Pass {
    /// ∫ exp(shift − U) over every cell (row-major).
    masses: Vec<f64>,
    /// Whether every cell was integrated (false: the work limit stopped it).
    complete: bool,
    /// The lowest U sampled, and where.
    lowest: f64,
    lowest_at: [f64; 2],
    /// A sample where U is NaN.
    nan_at: Option<[f64; 2]>,
    /// The mass of the cells the refinement could not resolve, and where the densest is.
    unresolved_mass: f64,
    unresolved_at: Option<([f64; 2], f64)>,
    /// The most leaves of one cell, and where.
    deepest: (u32, [f64; 2]),
}

/// How closely a pass over a grid looks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Look {
    /// The box search and the surroundings: at most [`SCAN_LEAVES`] pieces per cell, in order.
    Scan,
    /// The normaliser: at most [`MAX_LEAVES`] pieces per cell, the densest cells first.
    Final,
}

/// Where a check looks, for messages.
#[derive(Clone, Copy, Debug)]
enum Region {
    /// The box.
    Box([[f64; 2]; 2]),
    /// Around the box, within the chains' reach.
    Reach {
        bounds: [[f64; 2]; 2],
        reach: [[f64; 2]; 2],
    },
}

impl Region {
    fn describe(self) -> String {
        match self {
            Region::Box(b) => format!("inside the box {}", box_text(&b)),
            Region::Reach { bounds, reach } => format!(
                "outside the box {} but within the chains' reach ({}, the box widened by half \
                 its width on each side): the engines do not keep chains inside the box, so U \
                 must be defined where they can go",
                box_text(&bounds),
                box_text(&reach)
            ),
        }
    }
}

/// The box widened by half its width on each side: where chains started in it can go. A
/// given box's mass and U's domain are checked there.
pub fn reach(b: [[f64; 2]; 2]) -> [[f64; 2]; 2] {
    b.map(|[lo, hi]| {
        let half = 0.5 * (hi - lo);
        [lo - half, hi + half]
    })
}

/// The spacing of f32 values near |v|: the engines' resolution there.
pub fn f32_step(v: f64) -> f64 {
    let f = (v.abs() as f32).max(f32::MIN_POSITIVE);
    if !f.is_finite() {
        return f64::INFINITY;
    }
    f64::from(f32::from_bits(f.to_bits() + 1)) - f64::from(f)
}

/// Compiled formulas by text and parameter names.
type Cache<K, V> = LazyLock<Mutex<HashMap<K, V>>>;
static FORMULAS: Cache<(String, Vec<String>), Arc<Formula>> = LazyLock::new(Default::default);
const FORMULA_CACHE_SIZE: usize = 64;

/// A target's spec: the formula, its parameters (values as bits) and the box (as bits).
type TargetKey = (String, Vec<(String, u64)>, Option<[[u64; 2]; 2]>);

/// Built targets by their spec, kept without their grids' masses (a sweep over a parameter
/// holds thousands): a preset is validated and then built, a sweep checks every point when it
/// is loaded and builds it again when it runs, a slider move rebuilds only the truth. Two
/// generations: when the newer is full the older is dropped, so a target in use stays.
#[derive(Default)]
struct TargetCache {
    current: HashMap<TargetKey, Result<ExprTarget, String>>,
    previous: HashMap<TargetKey, Result<ExprTarget, String>>,
    /// How often each spec's truth was computed (by a hash of the spec).
    computed: HashMap<u64, u32>,
}

/// Targets per generation of [`TargetCache`].
const TARGET_CACHE_SIZE: usize = 4096;

static TARGETS: LazyLock<Mutex<TargetCache>> = LazyLock::new(Default::default);

impl TargetCache {
    fn get(&mut self, key: &TargetKey) -> Option<Result<ExprTarget, String>> {
        if let Some(found) = self.current.get(key) {
            return Some(found.clone());
        }
        let found = self.previous.remove(key)?;
        self.insert(key.clone(), found.clone());
        Some(found)
    }

    fn insert(&mut self, key: TargetKey, made: Result<ExprTarget, String>) {
        if self.current.len() >= TARGET_CACHE_SIZE {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, made);
    }
}

fn target_key(
    energy: &str,
    parameters: &BTreeMap<String, f64>,
    bounds: Option<[[f64; 2]; 2]>,
) -> TargetKey {
    (
        energy.to_owned(),
        parameters
            .iter()
            .map(|(k, v)| (k.clone(), v.to_bits()))
            .collect(),
        bounds.map(|b| b.map(|r| r.map(f64::to_bits))),
    )
}

fn key_hash(key: &TargetKey) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// How many times the truth of this target was computed by [`ExprTarget::cached`] in this
/// process (a sweep computes each distinct target once).
pub fn times_computed(
    energy: &str,
    parameters: &BTreeMap<String, f64>,
    bounds: Option<[[f64; 2]; 2]>,
) -> u32 {
    let key = key_hash(&target_key(energy, parameters, bounds));
    let cache = TARGETS.lock().expect("target cache");
    cache.computed.get(&key).copied().unwrap_or(0)
}

/// The compiled formula, from the cache when it was compiled before.
pub fn compile_cached(text: &str, names: &[String]) -> Result<Arc<Formula>, super::ExprError> {
    let key = (text.to_owned(), names.to_vec());
    if let Some(f) = FORMULAS.lock().expect("formula cache").get(&key) {
        return Ok(f.clone());
    }
    let f = Arc::new(Formula::compile(text, names)?);
    let mut cache = FORMULAS.lock().expect("formula cache");
    if cache.len() >= FORMULA_CACHE_SIZE {
        cache.clear();
    }
    cache.insert(key, f.clone());
    Ok(f)
}

/// Refuses a parameter value that the engines' f32 cannot hold, naming it.
fn check_parameters(formula: &Formula, values: &[f64]) -> Result<(), String> {
    for (name, &v) in formula.parameters.iter().zip(values) {
        if !v.is_finite() {
            return Err(format!(
                "parameter {name} = {v} is not a finite number: allowed |{name}| ≤ {:e} (the \
                 engines compute in f32)",
                f32::MAX
            ));
        }
        let single = v as f32;
        if single.is_infinite() {
            return Err(format!(
                "parameter {name} = {} is beyond the range of f32, in which the engines \
                 compute: allowed |{name}| ≤ {:e}",
                short_number(v),
                f32::MAX
            ));
        }
        if v != 0.0 && single.abs() < f32::MIN_POSITIVE {
            return Err(format!(
                "parameter {name} = {} rounds to {single:e} in f32, in which the engines \
                 compute: allowed 0 or |{name}| ≥ {:e}",
                short_number(v),
                f32::MIN_POSITIVE
            ));
        }
    }
    Ok(())
}

/// Refuses a constant of the engines' program (folded from the formula's numbers) that f32
/// cannot hold: the GPU and the CPU engine would compute with ±∞ or 0 instead.
fn check_constants(formula: &Formula) -> Result<(), String> {
    let bad = formula.flat.instrs.iter().find(|ins| {
        let single = ins.value as f32;
        ins.op == Op::Const
            && (single.is_infinite() || (ins.value != 0.0 && single.abs() < f32::MIN_POSITIVE))
    });
    match bad {
        Some(ins) => Err(format!(
            "the formula '{}' computes with the constant {} (its numbers folded together), \
             which f32, the engines' precision, cannot hold: allowed 0 or {:e} ≤ |c| ≤ {:e}; \
             write it with smaller numbers or a parameter",
            shortened(&formula.text),
            short_number(ins.value),
            f32::MIN_POSITIVE,
            f32::MAX
        )),
        None => Ok(()),
    }
}

/// A given box: finite ranges from low to high within ±[`MAX_EXTENT`], each at least
/// [`F32_STEPS`] f32 steps wide.
fn check_box(b: [[f64; 2]; 2]) -> Result<(), String> {
    for (c, [lo, hi]) in b.into_iter().enumerate() {
        let axis = ["θ₁", "θ₂"][c];
        let range = format!("({}, {})", short_number(lo), short_number(hi));
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(format!(
                "box: the {axis} range {range} must run from a low to a higher finite number"
            ));
        }
        if lo.abs() > MAX_EXTENT || hi.abs() > MAX_EXTENT {
            return Err(format!(
                "box: the {axis} range {range} is out of range: a box lies within \
                 ±{MAX_EXTENT:e} (the largest box the truth integrates over; the engines \
                 compute in f32)"
            ));
        }
        let step = f32_step(lo.abs().max(hi.abs()));
        if hi - lo < F32_STEPS * step {
            return Err(format!(
                "box: the {axis} range {range} is narrower than f32, the engines' precision, \
                 resolves there: its values are {} apart near {}, and a range must span at \
                 least {F32_STEPS} of them ({})",
                num(step),
                num(lo.abs().max(hi.abs())),
                num(F32_STEPS * step)
            ));
        }
    }
    Ok(())
}

/// The formula's text, shortened for a message.
fn shortened(text: &str) -> String {
    if text.chars().count() <= 80 {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(79).collect();
        s.push('…');
        s
    }
}

/// Where a descent from a point ended: a local minimum of U, or a point where U falls
/// without bound.
struct Local {
    at: [f64; 2],
    u: f64,
    /// U falls by more than 1 within 10⁻⁹ (relative) of `at`: a pole, or a feature far finer
    /// than f32 holds.
    singular: bool,
}

impl ExprTarget {
    /// Compiles `energy` and establishes its truth; refuses, with a message that says why,
    /// a formula that does not parse, is not finite somewhere in the box or is not
    /// normalisable. Results are cached by their arguments: each distinct target's truth is
    /// computed once (see [`times_computed`]).
    pub fn cached(
        energy: &str,
        parameters: &BTreeMap<String, f64>,
        bounds: Option<[[f64; 2]; 2]>,
    ) -> Result<Arc<ExprTarget>, String> {
        let key = target_key(energy, parameters, bounds);
        if let Some(t) = TARGETS.lock().expect("target cache").get(&key) {
            return t.map(|t| Arc::new(t.unshared()));
        }
        let made = Self::new(energy, parameters, bounds);
        let mut cache = TARGETS.lock().expect("target cache");
        *cache.computed.entry(key_hash(&key)).or_insert(0) += 1;
        cache.insert(
            key,
            made.as_ref()
                .map(ExprTarget::unshared)
                .map_err(String::clone),
        );
        made.map(Arc::new)
    }

    /// The same target with a memo of its own (the cache keeps none of the grids' masses).
    fn unshared(&self) -> ExprTarget {
        ExprTarget {
            last_masses: MassMemo::default(),
            ..self.clone()
        }
    }

    /// See [`Self::cached`] (this one always does the work), within [`evaluation_limit`] and
    /// telling this thread's observer ([`set_observer`]).
    pub fn new(
        energy: &str,
        parameters: &BTreeMap<String, f64>,
        bounds: Option<[[f64; 2]; 2]>,
    ) -> Result<ExprTarget, String> {
        with_observer(|observer| Self::new_with(energy, parameters, bounds, None, observer))
    }

    /// [`Self::new`] within `limit` evaluations of U (`None`: [`evaluation_limit`]), telling
    /// `observer` of its progress.
    pub fn new_with(
        energy: &str,
        parameters: &BTreeMap<String, f64>,
        bounds: Option<[[f64; 2]; 2]>,
        limit: Option<u64>,
        observer: Option<&mut dyn FnMut(&TruthProgress)>,
    ) -> Result<ExprTarget, String> {
        let names: Vec<String> = parameters.keys().cloned().collect();
        let formula = compile_cached(energy, &names).map_err(|e| e.to_string())?;
        let values: Vec<f64> = parameters.values().copied().collect();
        let limit = limit.unwrap_or_else(|| evaluation_limit(&formula));
        let mut watch = Watch::new(target_text(&formula, &values), limit, observer);
        let made = Self::with_formula(formula, values, bounds, &mut watch);
        watch.enter(Stage::Finished {
            accepted: made.is_ok(),
        });
        made
    }

    /// The same formula with other parameter values (nothing recompiled).
    pub fn with_parameters(&self, values: &[f64]) -> Result<ExprTarget, String> {
        with_observer(|observer| {
            let mut watch = Watch::new(
                target_text(&self.formula, values),
                evaluation_limit(&self.formula),
                observer,
            );
            let made = Self::with_formula(self.formula.clone(), values.to_vec(), None, &mut watch);
            watch.enter(Stage::Finished {
                accepted: made.is_ok(),
            });
            made
        })
    }

    fn with_formula(
        formula: Arc<Formula>,
        values: Vec<f64>,
        bounds: Option<[[f64; 2]; 2]>,
        watch: &mut Watch,
    ) -> Result<ExprTarget, String> {
        check_parameters(&formula, &values)?;
        check_constants(&formula)?;
        if let Some(b) = bounds {
            check_box(b)?;
        }
        let mut values_f32 = [0.0f32; super::MAX_PARAMETERS];
        for (slot, v) in values_f32.iter_mut().zip(&values) {
            *slot = *v as f32;
        }
        let mut target = ExprTarget {
            formula,
            values,
            values_f32,
            bounds: bounds.unwrap_or([[-4.0, 4.0]; 2]),
            log_normaliser: 0.0,
            beyond: Beyond::unknown([[-4.0, 4.0]; 2]),
            last_masses: MassMemo::default(),
        };
        if bounds.is_none() {
            target.bounds = target.find_box(watch)?;
            target.check_found_box_f32(watch)?;
        }
        watch.enter(Stage::CheckingBox);
        let region = Region::Box(target.bounds);
        let probe = Grid2::new(target.bounds[0], target.bounds[1], PROBE_CELLS, PROBE_CELLS);
        let (lowest, _) = target.probe(&probe, watch, region)?;
        target.check_f32_gradient()?;
        watch.enter(Stage::Normalising);
        let grid = Grid2::new(
            target.bounds[0],
            target.bounds[1],
            NORMALISER_CELLS,
            NORMALISER_CELLS,
        );
        let (pass, shift) = target.integrate_shifted(&grid, lowest, Look::Final, watch, region)?;
        let z: f64 = pass.masses.iter().sum();
        if !(z.is_finite() && z > 0.0) {
            // The lowest U lies between every sample: the density is finer than the grid.
            return Err(target.unresolved_message(pass.lowest_at, target.bounds, watch));
        }
        if let Some((at, _)) = pass.unresolved_at
            && pass.unresolved_mass > UNRESOLVED_MASS * z
        {
            return Err(target.unresolved_message(at, target.bounds, watch));
        }
        target.log_normaliser = z.ln() - shift;
        target.check_surroundings(watch, bounds.is_some())?;
        let inside = Sums::of_cells(&grid, &pass.masses, 1.0 / z, beyond::centre(target.bounds));
        target.beyond = target.look_beyond(inside, watch);
        Ok(target)
    }

    /// U(θ) in f64.
    pub fn energy(&self, t: [f64; 2]) -> f64 {
        self.formula.energy(t, &self.values)
    }

    /// Refuses `region` where U is not finite at a corner or centre of a cell of `grid`;
    /// returns the lowest U found and where.
    fn probe(
        &self,
        grid: &Grid2,
        watch: &mut Watch,
        region: Region,
    ) -> Result<(f64, [f64; 2]), String> {
        use rayon::prelude::*;
        let [dx, dy] = grid.cell_size();
        let nx = grid.nx as usize * 2 + 1;
        let ny = grid.ny as usize * 2 + 1;
        let at = |i: usize| {
            [
                grid.x[0] + (i % nx) as f64 * 0.5 * dx,
                grid.y[0] + (i / nx) as f64 * 0.5 * dy,
            ]
        };
        let values: Vec<f64> = (0..nx * ny)
            .into_par_iter()
            .map(|i| self.energy(at(i)))
            .collect();
        watch.work.spend(values.len() as u64);
        watch.tick();
        if let Some(i) = values.iter().position(|u| !u.is_finite()) {
            return Err(self.not_finite(at(i), values[i], region));
        }
        let (i, lowest) = values
            .iter()
            .copied()
            .enumerate()
            .fold((0, f64::INFINITY), |a, b| if b.1 < a.1 { b } else { a });
        Ok((lowest, at(i)))
    }

    /// Why U = `value` (not finite) at `at` in `region` is refused.
    fn not_finite(&self, at: [f64; 2], value: f64, region: Region) -> String {
        let (what, example) = if value.is_nan() {
            (
                "NaN".to_owned(),
                "e.g. a log or square root of a negative number, or 0/0",
            )
        } else if value < 0.0 {
            (
                "−∞".to_owned(),
                "a pole where exp(−U) is infinite, e.g. −1/x² or −log(x²) at 0",
            )
        } else {
            ("∞".to_owned(), "e.g. a division by zero")
        };
        format!(
            "U = {what} at θ = {} {}: the density must be finite there ({example}; the formula \
             '{}')",
            point_text(at),
            region.describe(),
            shortened(&self.formula.text)
        )
    }

    /// Grows a box from [−4, 4]², moving its sides towards the mass, until the mass in its
    /// outermost cells is below [`EDGE_MASS`]; then tightens it to the marginals' 1e-6
    /// quantiles with a margin, again while that shrinks it by half or more (not below
    /// [`MIN_WIDTH`]), and checks the tightened box once more.
    fn find_box(&self, watch: &mut Watch) -> Result<[[f64; 2]; 2], String> {
        let mut b = [[-4.0, 4.0]; 2];
        let mut tightened = false;
        let mut from_tightening = false;
        // The local minimum the box was last centred on (after a scan that saw no mass).
        let mut centred_on: Option<[f64; 2]> = None;
        let n = SCAN_CELLS as usize;
        for round in 1..=MAX_ROUNDS {
            watch.enter(Stage::FindingBox { round, bounds: b });
            let grid = Grid2::new(b[0], b[1], SCAN_CELLS, SCAN_CELLS);
            let region = Region::Box(b);
            let (lowest, lowest_at) = self.probe(&grid, watch, region)?;
            let (pass, _) = self.integrate_shifted(&grid, lowest, Look::Scan, watch, region)?;
            let total: f64 = pass.masses.iter().sum();
            if !(total.is_finite() && total > 0.0) {
                // All the mass is at one point, finer than the grid's samples see: descend to
                // it and look again at a small box around it (a narrow mode, an off-centre
                // one beyond the box), or say why there is none (a pole, U falling forever).
                let from = if pass.lowest < lowest {
                    pass.lowest_at
                } else {
                    lowest_at
                };
                let local = self.local_minimum(from, &watch.work);
                let seen = centred_on
                    .is_some_and(|c| (0..2).all(|k| (c[k] - local.at[k]).abs() < MIN_WIDTH));
                if local.singular || seen {
                    let smallest = local.at.map(|v| [v - 0.5 * MIN_WIDTH, v + 0.5 * MIN_WIDTH]);
                    return Err(self.unresolved_message(local.at, smallest, watch));
                }
                if local.at.iter().any(|v| v.abs() > MAX_EXTENT) {
                    return Err(format!(
                        "exp(−U) is not normalisable within ±{MAX_EXTENT:e}: U keeps falling \
                         from θ = {} towards θ = {} (U = {} there). U must grow to +∞ in every \
                         direction ('{}' does not), or its mass lies beyond ±{MAX_EXTENT:e} \
                         (rescale the formula, or give a box)",
                        point_text(from),
                        point_text(local.at),
                        num(local.u),
                        shortened(&self.formula.text)
                    ));
                }
                centred_on = Some(local.at);
                b = local.at.map(|v| [v - 0.5 * MIN_WIDTH, v + 0.5 * MIN_WIDTH]);
                (tightened, from_tightening) = (false, false);
                continue;
            }
            let masses = pass.masses;
            let mut marginals = [vec![0.0; n], vec![0.0; n]];
            for (i, m) in masses.iter().enumerate() {
                marginals[0][i % n] += m / total;
                marginals[1][i / n] += m / total;
            }
            // Mass in the first and last column and row.
            let sides = [
                [marginals[0][0], marginals[0][n - 1]],
                [marginals[1][0], marginals[1][n - 1]],
            ];
            let edge: f64 = sides.iter().flatten().sum();
            watch.last_scan = Some((b, edge));
            if edge < EDGE_MASS {
                // A box grown again after a tightening is final: tightening it anew could
                // go back and forth.
                if tightened && !from_tightening {
                    return Ok(b);
                }
                let tight = tightened_box(b, &marginals);
                let shrinks = (0..2).any(|c| tight[c][1] - tight[c][0] < 0.5 * (b[c][1] - b[c][0]));
                if from_tightening && !shrinks {
                    return Ok(b);
                }
                b = tight;
                tightened = true;
                from_tightening = true;
                continue;
            }
            from_tightening = false;
            let before = b;
            for c in 0..2 {
                let width = b[c][1] - b[c][0];
                if sides[c][0] > EDGE_MASS / 4.0 {
                    b[c][0] -= width;
                }
                if sides[c][1] > EDGE_MASS / 4.0 {
                    b[c][1] += width;
                }
            }
            if b.iter().flatten().any(|v| v.abs() > MAX_EXTENT) {
                return Err(self.not_normalisable(before, edge, sides));
            }
        }
        Err(format!(
            "no box holds the mass of exp(−U): after {MAX_ROUNDS} rounds the box {} still \
             changes (the formula '{}'); give a box",
            box_text(&b),
            shortened(&self.formula.text)
        ))
    }

    fn not_normalisable(&self, b: [[f64; 2]; 2], edge: f64, sides: [[f64; 2]; 2]) -> String {
        let names = [
            [
                format!("θ₁ ≈ {}", short_number(b[0][0])),
                format!("θ₁ ≈ {}", short_number(b[0][1])),
            ],
            [
                format!("θ₂ ≈ {}", short_number(b[1][0])),
                format!("θ₂ ≈ {}", short_number(b[1][1])),
            ],
        ];
        let (mut c, mut s) = (0, 0);
        for (ci, pair) in sides.iter().enumerate() {
            for (si, m) in pair.iter().enumerate() {
                if *m > sides[c][s] {
                    (c, s) = (ci, si);
                }
            }
        }
        format!(
            "exp(−U) is not normalisable within ±{MAX_EXTENT:e}: grown to {}, the box still \
             has {:.2}% of the mass in its outermost cells (at most {}% allowed), most at {} \
             ({:.2}%). U must grow to +∞ in every direction ('{}' does not), or its mass lies \
             beyond ±{MAX_EXTENT:e} (rescale the formula, or give a box)",
            box_text(&b),
            100.0 * edge,
            100.0 * EDGE_MASS,
            names[c][s],
            100.0 * sides[c][s],
            shortened(&self.formula.text)
        )
    }

    /// Refuses a found box narrower than f32 resolves where it lies (a density far narrower
    /// than its distance from the origin), naming the density's width.
    fn check_found_box_f32(&self, watch: &mut Watch) -> Result<(), String> {
        let b = self.bounds;
        let too_narrow = (0..2).any(|c| {
            let step = f32_step(b[c][0].abs().max(b[c][1].abs()));
            b[c][1] - b[c][0] < F32_STEPS * step
        });
        if !too_narrow {
            return Ok(());
        }
        let centre = [0.5 * (b[0][0] + b[0][1]), 0.5 * (b[1][0] + b[1][1])];
        let local = self.local_minimum(centre, &watch.work);
        let width = self.feature_width(local.at, MIN_WIDTH, &watch.work);
        Err(self.f32_message(local.at, width))
    }

    /// The density is about `width` wide near `at`, finer than f32 resolves there.
    fn f32_message(&self, at: [f64; 2], width: f64) -> String {
        let far = at[0].abs().max(at[1].abs());
        let step = f32_step(far);
        format!(
            "exp(−U) is about {} wide near θ = {}, finer than f32 (the engines' precision) \
             resolves there: f32 values are {} apart near {}, and a feature of the density \
             must span at least {F32_FEATURE_STEPS} of them ({}) and a box {F32_STEPS} ({}). \
             Move it nearer the origin (e.g. write x − {} as x) or widen it (the formula '{}')",
            num(width),
            point_text(at),
            num(step),
            num(far),
            num(F32_FEATURE_STEPS * step),
            num(F32_STEPS * step),
            num(far),
            shortened(&self.formula.text)
        )
    }

    /// Refuses a gradient that is finite in f64 but not in the engines' f32 at a node of the
    /// box: the chains' steps there would be infinite.
    fn check_f32_gradient(&self) -> Result<(), String> {
        use rayon::prelude::*;
        let b = self.bounds;
        let n = F32_NODES as usize;
        let at = |i: usize| {
            let fx = (i % n) as f64 / (n - 1) as f64;
            let fy = (i / n) as f64 / (n - 1) as f64;
            [
                b[0][0] + fx * (b[0][1] - b[0][0]),
                b[1][0] + fy * (b[1][1] - b[1][0]),
            ]
        };
        let bad = (0..n * n).into_par_iter().find_first(|&i| {
            let t = at(i);
            let g = self
                .formula
                .gradient::<f32>([t[0] as f32, t[1] as f32], &self.values_f32);
            if g.iter().all(|v| v.is_finite()) {
                return false;
            }
            let [_, gx, gy] = self.formula.energy_and_gradient(t, &self.values);
            gx.is_finite() && gy.is_finite()
        });
        let Some(i) = bad else { return Ok(()) };
        let t = at(i);
        let [_, gx, gy] = self.formula.energy_and_gradient(t, &self.values);
        Err(format!(
            "∇U at θ = {} is ({}, {}) in f64 but not finite in f32, the engines' precision \
             (f32 holds up to {:e}, intermediate values included): the chains' gradient there \
             would be infinite. Rescale the formula (smaller constants or parameters) or give a \
             smaller box (the formula '{}')",
            point_text(t),
            num(gx),
            num(gy),
            f32::MAX,
            shortened(&self.formula.text)
        ))
    }

    /// Refuses U not finite within the chains' reach around the box ([`reach`]), and a given
    /// box that misses more than [`OUTSIDE_MASS`] of the mass there.
    fn check_surroundings(&self, watch: &mut Watch, given: bool) -> Result<(), String> {
        watch.enter(Stage::CheckingSurroundings);
        let b = self.bounds;
        let wide = reach(b);
        let region = Region::Reach {
            bounds: b,
            reach: wide,
        };
        let grid = Grid2::new(wide[0], wide[1], SCAN_CELLS, SCAN_CELLS);
        let (lowest, _) = self.probe(&grid, watch, region)?;
        if !given {
            return Ok(());
        }
        let (pass, _) = self.integrate_shifted(&grid, lowest, Look::Scan, watch, region)?;
        let total: f64 = pass.masses.iter().sum();
        let mut inside = 0.0;
        let mut heaviest = (0.0, [0.0; 2]);
        for (i, m) in pass.masses.iter().enumerate() {
            let c = grid.cell_center((i % grid.nx as usize) as u32, (i / grid.nx as usize) as u32);
            let within = (0..2).all(|k| c[k] > b[k][0] && c[k] < b[k][1]);
            if within {
                inside += m;
            } else if *m > heaviest.0 {
                heaviest = (*m, c);
            }
        }
        let outside = 1.0 - inside / total;
        if total.is_finite() && total > 0.0 && outside > OUTSIDE_MASS {
            return Err(format!(
                "the box {} misses the mass of exp(−U): {:.2}% of the mass within the chains' \
                 reach around it ({}) lies outside the box (at most {}% allowed), most near θ = \
                 {}. The chains would sample that mass and the truth would not see it: leave \
                 the box out to have it found, or move or widen it (the formula '{}')",
                box_text(&b),
                100.0 * outside,
                box_text(&wide),
                100.0 * OUTSIDE_MASS,
                point_text(heaviest.1),
                shortened(&self.formula.text)
            ));
        }
        Ok(())
    }

    /// [`Self::pass`] with the shift lowered to the lowest U met whenever a cell overflowed
    /// (exp(shift − U) beyond f64: the probed nodes missed the lowest U), at most three times.
    /// A NaN, a U of −∞, an overflow that persists and the work limit are refused with their
    /// cause and place. Returns the pass and its shift.
    fn integrate_shifted(
        &self,
        grid: &Grid2,
        lowest: f64,
        look: Look,
        watch: &mut Watch,
        region: Region,
    ) -> Result<(Pass, f64), String> {
        let mut shift = lowest;
        let mut last_low = [f64::NAN; 2];
        for _ in 0..3 {
            let pass = match look {
                Look::Scan => self.pass(grid, shift, SCAN_LEAVES, watch, false),
                Look::Final => self.pass(grid, shift, MAX_LEAVES, watch, true),
            };
            if !pass.complete {
                return Err(self.over_limit(watch, pass.deepest));
            }
            if let Some(at) = pass.nan_at {
                return Err(self.not_finite(at, f64::NAN, region));
            }
            if pass.lowest == f64::NEG_INFINITY {
                return Err(self.not_finite(pass.lowest_at, pass.lowest, region));
            }
            if pass.masses.iter().all(|m| m.is_finite()) {
                return Ok((pass, shift));
            }
            shift = pass.lowest;
            last_low = pass.lowest_at;
        }
        Err(self.unresolved_message(last_low, [grid.x, grid.y], watch))
    }

    /// Why the work limit was reached, and what to change.
    fn over_limit(&self, watch: &Watch, deepest: (u32, [f64; 2])) -> String {
        let head = format!(
            "the truth of '{}' needs more than {} evaluations of U (the work limit) while {}",
            shortened(&self.formula.text),
            millions(watch.work.limit),
            watch.stage
        );
        match (watch.stage, watch.last_scan) {
            (Stage::FindingBox { .. }, Some((b, edge))) if edge >= EDGE_MASS => format!(
                "{head}: grown to {}, the box still has {:.2}% of the mass in its outermost \
                 cells (at most {}% allowed). Either U does not grow to +∞ in every direction \
                 (not normalisable), or the energy varies faster than the grid can resolve \
                 (the refinement went deepest near θ = {}, {} pieces in one cell): give a box \
                 (box: ((low, high), (low, high))) or a smoother formula",
                box_text(&b),
                100.0 * edge,
                100.0 * EDGE_MASS,
                point_text(deepest.1),
                deepest.0
            ),
            _ => format!(
                "{head}: the energy varies faster than the grid can resolve; the cells near θ = \
                 {} needed {} pieces each (U changes by more than {STEEP} across each). Smooth \
                 the formula (fewer or slower oscillations) or give a smaller box",
                point_text(deepest.1),
                deepest.0
            ),
        }
    }

    /// Why the density near `at` could not be integrated over the box `b`: a pole, a feature
    /// finer than f32 resolves there, or one finer than the normaliser's grid resolves.
    fn unresolved_message(&self, at: [f64; 2], b: [[f64; 2]; 2], watch: &Watch) -> String {
        let local = self.local_minimum(at, &watch.work);
        if local.singular && !self.oscillates(local.at, &watch.work) {
            return format!(
                "U falls without bound near θ = {}: a pole where exp(−U) → ∞ (U = {} there and \
                 still falling within 10⁻⁹ of it); the density must be finite everywhere. \
                 Remove the pole, e.g. add a small constant under the division or the log \
                 (the formula '{}')",
                point_text(local.at),
                num(local.u),
                shortened(&self.formula.text)
            );
        }
        let cell = (b[0][1] - b[0][0]).max(b[1][1] - b[1][0]) / f64::from(NORMALISER_CELLS);
        let width = self.feature_width(local.at, cell, &watch.work);
        let far = local.at[0].abs().max(local.at[1].abs());
        if width < F32_FEATURE_STEPS * f32_step(far) {
            return self.f32_message(local.at, width);
        }
        let piece = cell / f64::from(MAX_LEAVES).sqrt();
        format!(
            "the energy varies faster than the grid can resolve: near θ = {} exp(−U) has \
             features about {} wide (U changes by 1/2 within that), while the truth's cells of \
             {} over the box {}, split into at most {MAX_LEAVES} pieces each, resolve about {} \
             (the box shrinks to {MIN_WIDTH} at the least). Smooth or rescale the formula \
             (write it in units of that width), or give a smaller box around the features \
             (the formula '{}')",
            point_near(local.at, width),
            num(width),
            num(cell),
            box_text(&b),
            num(piece),
            shortened(&self.formula.text)
        )
    }

    /// Descends from `from` along −∇U (backtracking) to a local minimum of U, or to where U
    /// falls without bound.
    fn local_minimum(&self, from: [f64; 2], work: &Work) -> Local {
        let full = |t: [f64; 2]| self.formula.energy_and_gradient(t, &self.values);
        let mut at = from;
        let [mut u, mut gx, mut gy] = full(at);
        let mut evaluations = 1u64;
        let mut t = 1.0 / (gx * gx + gy * gy).max(f64::MIN_POSITIVE);
        for _ in 0..400 {
            let g2 = gx * gx + gy * gy;
            if !(g2 > 0.0 && g2.is_finite() && u.is_finite()) {
                break;
            }
            let mut moved = false;
            for _ in 0..100 {
                let next = [at[0] - t * gx, at[1] - t * gy];
                let [v, hx, hy] = full(next);
                evaluations += 1;
                if v <= u - 0.5 * t * g2 {
                    (at, u, gx, gy) = (next, v, hx, hy);
                    t *= 2.0;
                    moved = true;
                    break;
                }
                t *= 0.5;
            }
            if !moved {
                break;
            }
        }
        work.spend(evaluations);
        let scale = 1.0 + at[0].abs().max(at[1].abs());
        let g = gx.hypot(gy);
        Local {
            at,
            u,
            singular: u == f64::NEG_INFINITY || g * 1e-9 * scale > 1.0,
        }
    }

    /// Whether U's slope near `at` flips sign back and forth along an axis (eight or more
    /// flips over 32 points a millionth of |θ| apart): an oscillation too fast for the
    /// grid (`sin(1e30·x)`), whose steep slope is no pole. A pole's slope keeps its sign
    /// on a line through it, or flips once where the line crosses it.
    fn oscillates(&self, at: [f64; 2], work: &Work) -> bool {
        let h = 1e-6 * (1.0 + at[0].abs().max(at[1].abs()));
        work.spend(64);
        (0..2).any(|c| {
            let slopes: Vec<f64> = (0..32)
                .map(|k| {
                    let mut t = at;
                    t[c] += (f64::from(k) - 15.5) * h;
                    self.formula.energy_and_gradient(t, &self.values)[1 + c]
                })
                .filter(|g| g.is_finite() && *g != 0.0)
                .collect();
            slopes
                .windows(2)
                .filter(|w| (w[0] > 0.0) != (w[1] > 0.0))
                .count()
                >= 8
        })
    }

    /// The smallest distance from `at` along an axis over which U changes by 1/2 (at most
    /// `largest`): the width of the density's features there.
    fn feature_width(&self, at: [f64; 2], largest: f64, work: &Work) -> f64 {
        let u0 = self.energy(at);
        let mut width = largest;
        let mut evaluations = 1u64;
        for (c, sign) in [(0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)] {
            let mut h = 1e-12 * (1.0 + at[0].abs().max(at[1].abs()));
            while h < width {
                let mut t = at;
                t[c] += sign * h;
                let u = self.energy(t);
                evaluations += 1;
                // A NaN counts as a change: U is undefined that close.
                if (u - u0).abs() >= 0.5 || u.is_nan() {
                    width = h;
                    break;
                }
                h *= 2.0;
            }
        }
        work.spend(evaluations);
        width
    }

    /// ∫ exp(shift − U) over every cell of `grid` (row-major), 0 for a cell where U is not
    /// finite (the box was checked: only a display grid reaching beyond it meets one).
    fn integrate(&self, grid: &Grid2, shift: f64) -> Vec<f64> {
        let mut m = self
            .pass(grid, shift, MAX_LEAVES, &mut Watch::unwatched(), false)
            .masses;
        for v in &mut m {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
        m
    }

    /// ∫ exp(shift − U) over every cell of `grid` (row-major), refined where needed (at most
    /// `cap` pieces per cell), in chunks between which the work limit is looked at and the
    /// observer told. `densest_first`: the cells go in the order of U at their centres, and
    /// the pass stops early once the cells it could not resolve hold a hundredth of the mass
    /// (the midpoint estimate of the total, or what it has integrated, whichever is larger):
    /// a formula that oscillates everywhere is refused after its densest cells, not all.
    fn pass(
        &self,
        grid: &Grid2,
        shift: f64,
        cap: u32,
        watch: &mut Watch,
        densest_first: bool,
    ) -> Pass {
        use rayon::prelude::*;
        let [dx, dy] = grid.cell_size();
        let cells = grid.cells();
        let mut pass = Pass {
            masses: vec![0.0; cells],
            complete: true,
            lowest: f64::INFINITY,
            lowest_at: [f64::NAN; 2],
            nan_at: None,
            unresolved_mass: 0.0,
            unresolved_at: None,
            deepest: (0, [f64::NAN; 2]),
        };
        let rect = |i: usize| Rect {
            x0: grid.x[0] + (i % grid.nx as usize) as f64 * dx,
            y0: grid.y[0] + (i / grid.nx as usize) as f64 * dy,
            dx,
            dy,
        };
        let (order, estimate) = if densest_first {
            let centres: Vec<f64> = (0..cells)
                .into_par_iter()
                .map(|i| {
                    let u = self.energy(rect(i).centre());
                    if u.is_nan() { f64::INFINITY } else { u }
                })
                .collect();
            watch.work.spend(cells as u64);
            let mut order: Vec<usize> = (0..cells).collect();
            order.sort_by(|&a, &b| centres[a].total_cmp(&centres[b]));
            let area = dx * dy;
            let estimate: f64 = centres.iter().map(|u| (shift - u).exp() * area).sum();
            (order, estimate)
        } else {
            ((0..cells).collect(), 0.0)
        };
        let mut total = 0.0;
        let chunk_size = if densest_first { FINAL_CHUNK } else { CHUNK };
        for chunk in order.chunks(chunk_size) {
            let work = &watch.work;
            let walks: Vec<(usize, f64, Walk)> = chunk
                .par_iter()
                .map(|&i| {
                    let mut walk = Walk::new(cap);
                    if work.exhausted() {
                        return (i, 0.0, walk);
                    }
                    let mass = self.cell(rect(i), shift, 0, &mut walk);
                    work.spend(walk.evaluations);
                    (i, mass, walk)
                })
                .collect();
            for (i, mass, walk) in walks {
                pass.masses[i] = mass;
                total += mass;
                if walk.lowest < pass.lowest {
                    (pass.lowest, pass.lowest_at) = (walk.lowest, walk.lowest_at);
                }
                if pass.nan_at.is_none() {
                    pass.nan_at = walk.nan_at;
                }
                if let Some(at) = walk.unresolved_at {
                    pass.unresolved_mass += mass;
                    if pass.unresolved_at.is_none_or(|(_, m)| mass > m) {
                        pass.unresolved_at = Some((at, mass));
                    }
                }
                if walk.leaves > pass.deepest.0 {
                    pass.deepest = (walk.leaves, rect(i).centre());
                }
            }
            watch.tick();
            if watch.work.exhausted() {
                pass.complete = false;
                return pass;
            }
            if densest_first && pass.unresolved_mass > 10.0 * UNRESOLVED_MASS * estimate.max(total)
            {
                return pass;
            }
        }
        pass
    }

    /// One cell's samples: the leaf values exp(shift − U) · area / S², or the halves to
    /// split it into.
    fn split(&self, r: Rect, shift: f64, depth: u32, walk: &mut Walk) -> Split {
        let mut values = [0.0; S * S];
        let (mut steep_x, mut steep_y) = (0.0f64, 0.0f64);
        let mut lowest = f64::INFINITY;
        let (sx, sy) = (r.dx / S as f64, r.dy / S as f64);
        for b in 0..S {
            for a in 0..S {
                let fx = (a as f64 + 0.5) / S as f64;
                let fy = (b as f64 + 0.5) / S as f64;
                let t = [r.x0 + fx * r.dx, r.y0 + fy * r.dy];
                let [u, gx, gy] = self.formula.energy_and_gradient(t, &self.values);
                walk.evaluations += 1;
                if u.is_nan() {
                    walk.nan_at.get_or_insert(t);
                } else if u < walk.lowest {
                    (walk.lowest, walk.lowest_at) = (u, t);
                }
                let value = (shift - u).exp() * sx * sy;
                values[b * S + a] = if value.is_nan() { 0.0 } else { value };
                // U along −∇U to the cell's edge, to first order: how low it may get near
                // this sample. Only samples near which the density may matter say how steep
                // the cell is (off the funnel's neck ∂U/∂θ₂ is huge, and irrelevant).
                let to_x = if gx > 0.0 { fx } else { 1.0 - fx } * r.dx;
                let to_y = if gy > 0.0 { fy } else { 1.0 - fy } * r.dy;
                // An axis counts as steep only where moving along it alone may reach density
                // that matters: near the neck, U rises steeply in θ₂ too, but only across θ₁
                // does it fall to the neck.
                let low = u - gx.abs() * to_x - gy.abs() * to_y;
                let near = |l: f64| l.is_nan() || l < shift + NEGLIGIBLE;
                if near(low) {
                    lowest = lowest.min(low);
                }
                if near(u) || near(u - gx.abs() * to_x) {
                    steep_x = steep_x.max(gx.abs() * r.dx);
                }
                if near(u) || near(u - gy.abs() * to_y) {
                    steep_y = steep_y.max(gy.abs() * r.dy);
                }
            }
        }
        let matters = lowest.is_nan() || lowest < shift + NEGLIGIBLE;
        let (split_x, split_y) = (steep_x > STEEP, steep_y > STEEP);
        if !matters || !(split_x || split_y) {
            walk.leaves += 1;
            return Split::Leaf(values);
        }
        if depth >= MAX_DEPTH || walk.leaves >= walk.cap {
            walk.unresolved_at.get_or_insert(r.centre());
            walk.leaves += 1;
            return Split::Leaf(values);
        }
        let mut children = vec![r];
        if split_x {
            children = children.into_iter().flat_map(|c| c.halves(true)).collect();
        }
        if split_y {
            children = children.into_iter().flat_map(|c| c.halves(false)).collect();
        }
        Split::Children(children)
    }

    /// ∫ exp(shift − U) over `r`.
    fn cell(&self, r: Rect, shift: f64, depth: u32, walk: &mut Walk) -> f64 {
        match self.split(r, shift, depth, walk) {
            Split::Leaf(v) => v.iter().sum(),
            Split::Children(c) => c
                .into_iter()
                .map(|c| self.cell(c, shift, depth + 1, walk))
                .sum(),
        }
    }

    /// A point drawn from exp(−U) restricted to `r`: down the same refinement as
    /// [`Self::cell`], a child by its mass, then a leaf's sub-square by its midpoint value
    /// and a uniform point inside it.
    fn sample_in(&self, r: Rect, shift: f64, rng: &mut SequentialRng) -> [f64; 2] {
        let mut r = r;
        let mut depth = 0;
        let mut walk = Walk::new(MAX_LEAVES);
        loop {
            match self.split(r, shift, depth, &mut walk) {
                Split::Leaf(v) => {
                    let k = WeightedIndex::new(v).map_or(S * S / 2, |w| w.sample(rng));
                    let (sx, sy) = (r.dx / S as f64, r.dy / S as f64);
                    let (ux, uy): (f64, f64) = (rng.random(), rng.random());
                    return [
                        r.x0 + ((k % S) as f64 + ux) * sx,
                        r.y0 + ((k / S) as f64 + uy) * sy,
                    ];
                }
                Split::Children(children) => {
                    let masses: Vec<f64> = children
                        .iter()
                        .map(|&c| {
                            let mut w = walk;
                            self.cell(c, shift, depth + 1, &mut w)
                        })
                        .collect();
                    let k = WeightedIndex::new(&masses).map_or(0, |w| w.sample(rng));
                    r = children[k];
                    depth += 1;
                }
            }
        }
    }

    /// The estimated share of the whole mass of exp(−U) outside [`Self::bounds`]: the truth
    /// (cell masses, exact samples) is the density restricted to the box, which leaves this
    /// out. NaN when it could not be estimated ([`Beyond`] says why and how).
    pub fn outside_mass(&self) -> f64 {
        self.beyond.outside_mass
    }

    /// Mean and covariance (c11, c12, c22) of exp(−U) within [`Beyond::moment_box`]: the box's
    /// 400 × 400 grid (the exact samples'), plus the strips integrated beyond it where the
    /// moments needed a larger box to settle.
    pub fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let grid = Grid2::new(self.bounds[0], self.bounds[1], 400, 400);
        let masses = self.shared_masses(&grid);
        let origin = beyond::centre(self.bounds);
        Sums::of_cells(&grid, &masses, 1.0, origin)
            .plus(self.beyond.added)
            .moments(origin)
    }

    /// The probability mass of every cell of `grid`, normalised by the box's normaliser.
    pub fn cell_masses(&self, grid: &Grid2) -> Vec<f64> {
        self.shared_masses(grid).to_vec()
    }

    /// [`Self::cell_masses`], from the memo when `grid` was the last one integrated.
    fn shared_masses(&self, grid: &Grid2) -> Arc<Vec<f64>> {
        let memo = &self.last_masses.0;
        if let Some((g, m)) = memo.lock().expect("mass memo").as_ref()
            && g == grid
        {
            return m.clone();
        }
        // exp(shift − U) = exp(−U) / Z
        let masses = Arc::new(self.integrate(grid, -self.log_normaliser));
        *memo.lock().expect("mass memo") = Some((*grid, masses.clone()));
        masses
    }

    /// `n` exact samples (flattened pairs): a cell of a 400 × 400 grid over the box by its
    /// mass, then a point inside it down the refinement (inverse CDF on the grid).
    pub fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SequentialRng::new(seed, Stream::Exact as u32);
        let grid = Grid2::new(self.bounds[0], self.bounds[1], 400, 400);
        let shift = -self.log_normaliser;
        let masses = self.shared_masses(&grid);
        let cells = WeightedIndex::new(masses.iter()).expect("a normalisable target has mass");
        let [dx, dy] = grid.cell_size();
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let i = cells.sample(&mut rng) as u32;
            let rect = Rect {
                x0: grid.x[0] + f64::from(i % grid.nx) * dx,
                y0: grid.y[0] + f64::from(i / grid.nx) * dy,
                dx,
                dy,
            };
            out.extend(self.sample_in(rect, shift, &mut rng));
        }
        out
    }
}

/// The box tightened to the marginals' 1e-6 quantiles plus 15 % (or two cells) on each side,
/// within `b`, and at least [`MIN_WIDTH`] wide.
fn tightened_box(b: [[f64; 2]; 2], marginals: &[Vec<f64>; 2]) -> [[f64; 2]; 2] {
    let mut tight = b;
    for c in 0..2 {
        let n = marginals[c].len();
        let cell = (b[c][1] - b[c][0]) / n as f64;
        let mut acc = 0.0;
        let first = marginals[c]
            .iter()
            .position(|m| {
                acc += m;
                acc > 1e-6
            })
            .unwrap_or(0);
        let mut acc = 0.0;
        let last = marginals[c]
            .iter()
            .rposition(|m| {
                acc += m;
                acc > 1e-6
            })
            .unwrap_or(n - 1);
        let lo = b[c][0] + first as f64 * cell;
        let hi = b[c][0] + (last + 1) as f64 * cell;
        let pad = (0.15 * (hi - lo)).max(2.0 * cell);
        let [mut lo, mut hi] = [(lo - pad).max(b[c][0]), (hi + pad).min(b[c][1])];
        if hi - lo < MIN_WIDTH {
            let mid = 0.5 * (lo + hi);
            (lo, hi) = (mid - 0.5 * MIN_WIDTH, mid + 0.5 * MIN_WIDTH);
        }
        tight[c] = [lo, hi];
    }
    tight
}

/// Runs `f` with this thread's observer (taken out meanwhile, so that `f` may own it).
fn with_observer<T>(f: impl FnOnce(Option<&mut dyn FnMut(&TruthProgress)>) -> T) -> T {
    let mut installed = OBSERVER.with_borrow_mut(Option::take);
    let result = match installed.as_mut() {
        Some(observer) => f(Some(&mut **observer)),
        None => f(None),
    };
    OBSERVER.with_borrow_mut(|o| {
        if o.is_none() {
            *o = installed;
        }
    });
    result
}
