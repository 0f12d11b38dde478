//! Truth for an expression target, from grids as for the built-in targets (docs/MATH.md §9):
//! the box (given, or grown until the mass at its edge is below 1e-4), refusals before any
//! work (U not finite somewhere in the box, checked at cell corners and between them; mass
//! that keeps leaving every box: not normalisable), the normaliser, cell masses and exact
//! samples. Each cell is integrated by a 3 × 3 midpoint rule, split in two along an axis
//! where U changes by more than [`STEEP`] across it and the density may matter there, so a
//! neck narrower than a cell (the typed funnel's) is resolved rather than stepped over.

use super::Formula;
use crate::math::grid::Grid2;
use crate::math::rng::{SequentialRng, Stream};
use rand::RngExt;
use rand::distr::weighted::WeightedIndex;
use rand_distr::Distribution;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

/// Samples per axis of a leaf cell.
const S: usize = 3;
/// A cell is split along an axis where U may change by more than this across it.
const STEEP: f64 = 2.0;
/// Below e^(−this) of the largest density a region is negligible and never split.
const NEGLIGIBLE: f64 = 40.0;
/// Most splits from a grid cell down to a leaf.
const MAX_DEPTH: u32 = 28;
/// Most leaves per grid cell (bounds the work for wildly oscillating formulas).
const MAX_LEAVES: u32 = 2048;
/// The largest |θ| a grown box may reach before the target counts as not normalisable.
pub const MAX_EXTENT: f64 = 1e5;
/// Mass allowed in the outermost cells of a found box, all four sides together.
pub const EDGE_MASS: f64 = 1e-4;
/// Cells per axis of the grids that find the box and the normaliser.
const SCAN_CELLS: u32 = 96;
const NORMALISER_CELLS: u32 = 256;

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
    /// The box (θ₁ range, θ₂ range) holding all but < 1e-4 of the mass.
    pub bounds: [[f64; 2]; 2],
    /// log ∫ exp(−U) over the box.
    pub log_normaliser: f64,
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
}

/// What a cell's samples say: integrate it as a leaf or split it.
enum Split {
    Leaf([f64; S * S]),
    Children(Vec<Rect>),
}

/// A point where U is not finite.
#[derive(Clone, Copy, Debug)]
struct Bad {
    at: [f64; 2],
    value: f64,
}

fn bad_message(formula: &Formula, bad: Bad) -> String {
    let what = if bad.value.is_nan() {
        "NaN".to_owned()
    } else {
        format!("{}", bad.value)
    };
    format!(
        "U = {what} at θ = ({:.4}, {:.4}) inside the box: the density must be finite \
         everywhere in the box (the formula '{}'{})",
        bad.at[0],
        bad.at[1],
        formula.text,
        if bad.value.is_nan() {
            ", e.g. a log or square root of a negative number, or 0/0"
        } else {
            ", e.g. a division by zero"
        }
    )
}

/// Compiled formulas by text and parameter names, and built targets by their spec: a
/// preset is validated and then built, and a slider move rebuilds only the truth.
type Cache<K, V> = LazyLock<Mutex<HashMap<K, V>>>;
static FORMULAS: Cache<(String, Vec<String>), Arc<Formula>> = LazyLock::new(Default::default);
type TargetKey = (String, Vec<(String, u64)>, Option<[[u64; 2]; 2]>);
static TARGETS: Cache<TargetKey, Result<Arc<ExprTarget>, String>> = LazyLock::new(Default::default);
const CACHE_SIZE: usize = 64;

/// The compiled formula, from the cache when it was compiled before.
pub fn compile_cached(text: &str, names: &[String]) -> Result<Arc<Formula>, super::ExprError> {
    let key = (text.to_owned(), names.to_vec());
    if let Some(f) = FORMULAS.lock().expect("formula cache").get(&key) {
        return Ok(f.clone());
    }
    let f = Arc::new(Formula::compile(text, names)?);
    let mut cache = FORMULAS.lock().expect("formula cache");
    if cache.len() >= CACHE_SIZE {
        cache.clear();
    }
    cache.insert(key, f.clone());
    Ok(f)
}

impl ExprTarget {
    /// Compiles `energy` and establishes its truth; refuses, with a message that says why,
    /// a formula that does not parse, is not finite somewhere in the box or is not
    /// normalisable. Results are cached by their arguments.
    pub fn cached(
        energy: &str,
        parameters: &BTreeMap<String, f64>,
        bounds: Option<[[f64; 2]; 2]>,
    ) -> Result<Arc<ExprTarget>, String> {
        let key: TargetKey = (
            energy.to_owned(),
            parameters
                .iter()
                .map(|(k, v)| (k.clone(), v.to_bits()))
                .collect(),
            bounds.map(|b| b.map(|r| r.map(f64::to_bits))),
        );
        if let Some(t) = TARGETS.lock().expect("target cache").get(&key) {
            return t.clone();
        }
        let made = Self::new(energy, parameters, bounds).map(Arc::new);
        let mut cache = TARGETS.lock().expect("target cache");
        if cache.len() >= CACHE_SIZE {
            cache.clear();
        }
        cache.insert(key, made.clone());
        made
    }

    /// See [`Self::cached`] (this one always does the work).
    pub fn new(
        energy: &str,
        parameters: &BTreeMap<String, f64>,
        bounds: Option<[[f64; 2]; 2]>,
    ) -> Result<ExprTarget, String> {
        let names: Vec<String> = parameters.keys().cloned().collect();
        let formula = compile_cached(energy, &names).map_err(|e| e.to_string())?;
        Self::with_formula(formula, parameters.values().copied().collect(), bounds)
    }

    /// The same formula with other parameter values (nothing recompiled).
    pub fn with_parameters(&self, values: &[f64]) -> Result<ExprTarget, String> {
        Self::with_formula(self.formula.clone(), values.to_vec(), None)
    }

    fn with_formula(
        formula: Arc<Formula>,
        values: Vec<f64>,
        bounds: Option<[[f64; 2]; 2]>,
    ) -> Result<ExprTarget, String> {
        if let Some((name, v)) = formula
            .parameters
            .iter()
            .zip(&values)
            .find(|(_, v)| !v.is_finite())
        {
            return Err(format!("parameter {name} = {v} is not a finite number"));
        }
        let mut values_f32 = [0.0f32; super::MAX_PARAMETERS];
        for (slot, v) in values_f32.iter_mut().zip(&values) {
            *slot = *v as f32;
        }
        let mut target = ExprTarget {
            formula,
            values,
            values_f32,
            bounds: [[-4.0, 4.0]; 2],
            log_normaliser: 0.0,
            last_masses: MassMemo::default(),
        };
        match bounds {
            Some(b) => {
                if !b
                    .iter()
                    .all(|r| r[0].is_finite() && r[1].is_finite() && r[0] < r[1])
                {
                    return Err(format!(
                        "the box {b:?} needs finite bounds, each range from low to high"
                    ));
                }
                target.bounds = b;
            }
            None => target.bounds = target.find_box()?,
        }
        // A finer probe of the final box: 512 × 512 cells, corners and centres.
        target.probe(Grid2::new(target.bounds[0], target.bounds[1], 512, 512))?;
        let grid = Grid2::new(
            target.bounds[0],
            target.bounds[1],
            NORMALISER_CELLS,
            NORMALISER_CELLS,
        );
        let shift = target.lowest_energy(&grid);
        let z: f64 = target.integrate_checked(&grid, shift)?.iter().sum();
        if !(z.is_finite() && z > 0.0) {
            return Err(format!(
                "exp(−U) integrates to {z} over the box {:?}: not a density",
                target.bounds
            ));
        }
        target.log_normaliser = z.ln() - shift;
        Ok(target)
    }

    /// U(θ) in f64.
    pub fn energy(&self, t: [f64; 2]) -> f64 {
        self.formula.energy(t, &self.values)
    }

    /// Refuses a box where U is not finite at a corner or centre of a cell of `grid`.
    fn probe(&self, grid: Grid2) -> Result<(), String> {
        use rayon::prelude::*;
        let [dx, dy] = grid.cell_size();
        let nx = grid.nx as usize * 2 + 1;
        let ny = grid.ny as usize * 2 + 1;
        let bad = (0..nx * ny).into_par_iter().find_map_any(|i| {
            let at = [
                grid.x[0] + (i % nx) as f64 * 0.5 * dx,
                grid.y[0] + (i / nx) as f64 * 0.5 * dy,
            ];
            let value = self.energy(at);
            (!value.is_finite()).then_some(Bad { at, value })
        });
        match bad {
            Some(b) => Err(bad_message(&self.formula, b)),
            None => Ok(()),
        }
    }

    /// The smallest U at the cell centres of `grid` (the shift that keeps exp finite).
    fn lowest_energy(&self, grid: &Grid2) -> f64 {
        let mut lowest = f64::INFINITY;
        for iy in 0..grid.ny {
            for ix in 0..grid.nx {
                let u = self.energy(grid.cell_center(ix, iy));
                if u < lowest {
                    lowest = u;
                }
            }
        }
        lowest
    }

    /// Grows a box from [−4, 4]² until the mass in its outermost cells is below
    /// [`EDGE_MASS`], then tightens it once to the marginals' 1e-6 quantiles with a margin.
    fn find_box(&self) -> Result<[[f64; 2]; 2], String> {
        let mut b = [[-4.0, 4.0]; 2];
        let mut tightened = false;
        for _ in 0..40 {
            let grid = Grid2::new(b[0], b[1], SCAN_CELLS, SCAN_CELLS);
            self.probe(grid)?;
            let shift = self.lowest_energy(&grid);
            let masses = self.integrate_raw(&grid, shift);
            let n = SCAN_CELLS as usize;
            // An overflowing cell on the edge: the density grows towards the edge faster than
            // exp can hold across one cell, i.e. it is escaping the box.
            let on_edge = |i: usize| {
                let (ix, iy) = (i % n, i / n);
                ix == 0 || iy == 0 || ix == n - 1 || iy == n - 1
            };
            let overflows = |edge: bool| {
                masses
                    .iter()
                    .enumerate()
                    .any(|(i, m)| m.is_infinite() && on_edge(i) == edge)
            };
            if overflows(true) && !overflows(false) {
                return Err(self.not_normalisable(1.0));
            }
            let masses = self.integrate_checked(&grid, shift)?;
            let total: f64 = masses.iter().sum();
            if !(total.is_finite() && total > 0.0) {
                return Err(format!(
                    "exp(−U) integrates to {total} over the box {b:?}: not a density"
                ));
            }
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
            if edge < EDGE_MASS {
                if tightened {
                    return Ok(b);
                }
                tightened = true;
                let mut tight = b;
                for c in 0..2 {
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
                    tight[c] = [(lo - pad).max(b[c][0]), (hi + pad).min(b[c][1])];
                }
                b = tight;
                continue;
            }
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
                return Err(self.not_normalisable(edge));
            }
        }
        Err("no box found: the mass at the edge kept changing".into())
    }

    /// [`Self::integrate_raw`], refusing a cell whose quadrature met a non-finite value: the
    /// refinement probes between grid nodes, where a pole or a NaN band may hide.
    fn integrate_checked(&self, grid: &Grid2, shift: f64) -> Result<Vec<f64>, String> {
        let masses = self.integrate_raw(grid, shift);
        if let Some(i) = masses.iter().position(|m| !m.is_finite()) {
            let c = grid.cell_center((i % grid.nx as usize) as u32, (i / grid.nx as usize) as u32);
            return Err(format!(
                "exp(−U) is {} in the cell around θ = ({:.4}, {:.4}), found between grid points \
                 (U is NaN, or falls to −∞ at a pole): the density must be finite in the box \
                 (the formula '{}')",
                masses[i], c[0], c[1], self.formula.text
            ));
        }
        Ok(masses)
    }

    fn not_normalisable(&self, edge: f64) -> String {
        format!(
            "exp(−U) is not normalisable: the mass at the edge of the box stays at {:.2}% as \
             the box grows towards ±{MAX_EXTENT:e} (U must grow to +∞ in every direction; \
             '{}' does not, or its density is wider than that)",
            100.0 * edge,
            self.formula.text
        )
    }

    /// ∫ exp(shift − U) over every cell of `grid` (row-major), 0 for a cell where U is not
    /// finite (the box was checked: only a display grid reaching beyond it meets one).
    fn integrate(&self, grid: &Grid2, shift: f64) -> Vec<f64> {
        let mut m = self.integrate_raw(grid, shift);
        for v in &mut m {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
        m
    }

    /// ∫ exp(shift − U) over every cell of `grid` (row-major), refined where needed.
    fn integrate_raw(&self, grid: &Grid2, shift: f64) -> Vec<f64> {
        use rayon::prelude::*;
        let [dx, dy] = grid.cell_size();
        (0..grid.cells())
            .into_par_iter()
            .map(|i| {
                let rect = Rect {
                    x0: grid.x[0] + (i % grid.nx as usize) as f64 * dx,
                    y0: grid.y[0] + (i / grid.nx as usize) as f64 * dy,
                    dx,
                    dy,
                };
                let mut leaves = 0;
                self.cell(rect, shift, 0, &mut leaves)
            })
            .collect()
    }

    /// One cell's samples: the leaf values exp(shift − U) · area / S², or the halves to
    /// split it into.
    fn split(&self, r: Rect, shift: f64, depth: u32, leaves: &mut u32) -> Split {
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
                values[b * S + a] = (shift - u).exp() * sx * sy;
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
        if !matters || depth >= MAX_DEPTH || *leaves >= MAX_LEAVES || !(split_x || split_y) {
            *leaves += 1;
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
    fn cell(&self, r: Rect, shift: f64, depth: u32, leaves: &mut u32) -> f64 {
        match self.split(r, shift, depth, leaves) {
            Split::Leaf(v) => v.iter().sum(),
            Split::Children(c) => c
                .into_iter()
                .map(|c| self.cell(c, shift, depth + 1, leaves))
                .sum(),
        }
    }

    /// A point drawn from exp(−U) restricted to `r`: down the same refinement as
    /// [`Self::cell`], a child by its mass, then a leaf's sub-square by its midpoint value
    /// and a uniform point inside it.
    fn sample_in(&self, r: Rect, shift: f64, rng: &mut SequentialRng) -> [f64; 2] {
        let mut r = r;
        let mut depth = 0;
        let mut leaves = 0;
        loop {
            match self.split(r, shift, depth, &mut leaves) {
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
                            let mut l = leaves;
                            self.cell(c, shift, depth + 1, &mut l)
                        })
                        .collect();
                    let k = WeightedIndex::new(&masses).map_or(0, |w| w.sample(rng));
                    r = children[k];
                    depth += 1;
                }
            }
        }
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
