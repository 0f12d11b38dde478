//! Differential entropy of an ensemble (MATH.md §5.2): the Kozachenko–Leonenko k-nearest-
//! neighbour estimator in the plane and in space (on a k-d tree, O(N log N)), its geodesic
//! form on the unit sphere (also of a law folded by x → −x), the plug-in histogram estimator
//! on a grid, and a check that an estimate has converged in the number of points.

use crate::math::Grid2;

/// The digamma function ψ(x) for x > 0: recurrence up to x ≥ 12, then the asymptotic series
/// (error below 1e-12 there).
pub fn digamma(mut x: f64) -> f64 {
    let mut shift = 0.0;
    while x < 12.0 {
        shift -= 1.0 / x;
        x += 1.0;
    }
    let inv2 = 1.0 / (x * x);
    let series = inv2 * (1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 / 240.0)));
    shift + x.ln() - 0.5 / x - series
}

/// A static k-d tree over points of dimension `D`, for k-nearest-neighbour distances.
struct KdTree<'a, const D: usize> {
    points: &'a [[f64; D]],
    /// Point indices, arranged so that every subtree is a contiguous range whose median
    /// element splits it along `depth % D`.
    order: Vec<u32>,
}

impl<'a, const D: usize> KdTree<'a, D> {
    fn new(points: &'a [[f64; D]]) -> Self {
        let mut order: Vec<u32> = (0..points.len() as u32).collect();
        Self::build(points, &mut order, 0);
        Self { points, order }
    }

    fn build(points: &[[f64; D]], order: &mut [u32], depth: usize) {
        if order.len() <= 1 {
            return;
        }
        let axis = depth % D;
        let mid = order.len() / 2;
        order.select_nth_unstable_by(mid, |&a, &b| {
            points[a as usize][axis].total_cmp(&points[b as usize][axis])
        });
        let (left, right) = order.split_at_mut(mid);
        Self::build(points, left, depth + 1);
        Self::build(points, &mut right[1..], depth + 1);
    }

    /// Squared distance from point `query` (an index, excluded from its own neighbours) to
    /// its k-th nearest neighbour.
    fn kth_distance_sq(&self, query: usize, k: usize) -> f64 {
        // The k best squared distances so far, sorted ascending.
        let mut best: Vec<f64> = Vec::with_capacity(k + 1);
        self.search(&self.order, 0, query, k, &mut best);
        best.last().copied().unwrap_or(f64::INFINITY)
    }

    fn search(&self, range: &[u32], depth: usize, query: usize, k: usize, best: &mut Vec<f64>) {
        if range.is_empty() {
            return;
        }
        let mid = range.len() / 2;
        let index = range[mid] as usize;
        let q = &self.points[query];
        let p = &self.points[index];
        if index != query {
            let d: f64 = (0..D).map(|a| (q[a] - p[a]).powi(2)).sum();
            if best.len() < k || d < best[k - 1] {
                let at = best.partition_point(|&b| b <= d);
                best.insert(at, d);
                best.truncate(k);
            }
        }
        let axis = depth % D;
        let delta = q[axis] - p[axis];
        let (near, far) = if delta < 0.0 {
            (&range[..mid], &range[mid + 1..])
        } else {
            (&range[mid + 1..], &range[..mid])
        };
        self.search(near, depth + 1, query, k, best);
        if best.len() < k || delta * delta < best[k - 1] {
            self.search(far, depth + 1, query, k, best);
        }
    }
}

/// Distances below this count as this (a collapsed ensemble has many identical points, whose
/// log-distance would be −∞).
pub const MIN_DISTANCE: f64 = 1e-12;

/// ln of the volume π^{d/2}/Γ(d/2 + 1) of the unit ball in `d` dimensions, in logs so that
/// network weight spaces (thousands of dimensions) neither overflow nor underflow.
fn ln_unit_ball_volume(d: usize) -> f64 {
    // Γ(x + 1) = x Γ(x) down to Γ(1) = 1 or Γ(1/2) = √π.
    let mut x = d as f64 / 2.0;
    let mut ln_gamma = 0.0;
    while x > 0.25 {
        ln_gamma += x.ln();
        x -= 1.0;
    }
    if x < -0.25 {
        ln_gamma += 0.5 * std::f64::consts::PI.ln();
    }
    d as f64 / 2.0 * std::f64::consts::PI.ln() - ln_gamma
}

/// Kozachenko–Leonenko entropy (nats) of points in `D` dimensions from the distance to each
/// point's `k`-th nearest neighbour. Needs more than `k` points; `None` otherwise.
pub fn knn_entropy<const D: usize>(points: &[[f64; D]], k: usize) -> Option<f64> {
    knn(points, k).map(|e| e.entropy)
}

/// ln of a k-th neighbour distance from its square, floored at [`MIN_DISTANCE`].
fn ln_distance(squared: f64) -> f64 {
    0.5 * squared.max(MIN_DISTANCE * MIN_DISTANCE).ln()
}

/// The estimator ψ(N) − ψ(k) + ln V_d + (d/N) Σᵢ ln εᵢ from the sum of the log distances.
fn estimate(n: usize, k: usize, dim: usize, sum_log: f64) -> f64 {
    digamma(n as f64) - digamma(k as f64)
        + ln_unit_ball_volume(dim)
        + dim as f64 * sum_log / n as f64
}

/// Kozachenko–Leonenko entropy (nats) of `points.len() / dim` points in `dim` dimensions
/// (point-major), by brute force: a k-d tree is no help in a network's weight space, and N²·d
/// work over a thousand networks takes about a second. In thousands of dimensions with a
/// thousand points the estimate is biased (MATH.md §5.2): compare its changes along η, not
/// its value. `None` with `k` or fewer points.
pub fn knn_entropy_dense(points: &[f32], dim: usize, k: usize) -> Option<f64> {
    use rayon::prelude::*;
    if dim == 0 {
        return None;
    }
    let n = points.len() / dim;
    if k == 0 || n <= k {
        return None;
    }
    let point = |i: usize| &points[i * dim..(i + 1) * dim];
    // Each point's log distance in parallel, summed in point order: a parallel sum's grouping
    // depends on the thread count, and the estimate must be the same on every machine.
    let logs: Vec<f64> = (0..n)
        .into_par_iter()
        .map(|i| {
            // The k smallest squared distances to the other points, ascending.
            let mut nearest = vec![f64::INFINITY; k];
            for j in (0..n).filter(|&j| j != i) {
                let d2: f64 = point(i)
                    .iter()
                    .zip(point(j))
                    .map(|(a, b)| f64::from(a - b).powi(2))
                    .sum();
                if d2 < nearest[k - 1] {
                    let at = nearest.partition_point(|&x| x <= d2);
                    nearest.insert(at, d2);
                    nearest.pop();
                }
            }
            ln_distance(nearest[k - 1])
        })
        .collect();
    Some(estimate(n, k, dim, logs.iter().sum()))
}

/// A k-nearest-neighbour entropy estimate with the scale it was read at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KnnEstimate {
    /// The entropy (nats).
    pub entropy: f64,
    /// The mean of ln εᵢ over the points, εᵢ the distance to the k-th neighbour (geodesic on
    /// the sphere): how far apart the points are. For a fixed law in d dimensions it is about
    /// (S − ψ(N) + ψ(k) − ln V_d)/d, so it shrinks as the points multiply (MATH.md §5.6: the
    /// collapse rule therefore thresholds the entropy, not this).
    pub mean_ln_distance: f64,
}

/// The geodesic Kozachenko–Leonenko entropy (nats, with respect to area) of points on the
/// unit sphere: the k-th neighbour by chord distance (monotone in the geodesic one), the
/// ball replaced by the geodesic cap of area 2π(1 − cos ε).
pub fn sphere_knn_entropy(points: &[[f64; 3]], k: usize) -> Option<f64> {
    sphere_knn(points, k, false).map(|e| e.entropy)
}

/// [`sphere_knn_entropy`], optionally of the law folded by the antipodal symmetry x → −x
/// (MATH.md §5.6): with `folded`, a point's neighbours are the others or their mirror
/// images, whichever is nearer (the distance of the projective plane, which identifies x
/// with −x), and the entropy is that of the folded law on a hemisphere, ln 2 below the
/// entropy of a symmetric law on the whole sphere. A split of the chains between the two
/// hemispheres then adds nothing to it.
pub fn sphere_knn(points: &[[f64; 3]], k: usize, folded: bool) -> Option<KnnEstimate> {
    let n = points.len();
    if k == 0 || n <= k {
        return None;
    }
    // Folded: the points and their mirrors, so the k-th nearest of the 2N (a point's own
    // mirror is 2 away) is its k-th nearest in the projective distance, up to chords of √2
    // (a quarter circle), beyond which the whole hemisphere is one cap.
    let doubled: Vec<[f64; 3]>;
    let (cloud, largest_chord) = if folded {
        doubled = points
            .iter()
            .copied()
            .chain(points.iter().map(|p| p.map(|c| -c)))
            .collect();
        (doubled.as_slice(), std::f64::consts::SQRT_2)
    } else {
        (points, 2.0)
    };
    let tree = KdTree::new(cloud);
    let (mut sum_ln_cap, mut sum_ln_distance) = (0.0, 0.0);
    for i in 0..n {
        let chord = tree.kth_distance_sq(i, k).sqrt().min(largest_chord);
        let geodesic = (2.0 * (chord / 2.0).asin()).max(MIN_DISTANCE);
        // 1 − cos ε = 2 sin²(ε/2): exact for tiny ε, where 1 − cos loses every digit.
        let cap = 2.0 * std::f64::consts::PI * 2.0 * (geodesic / 2.0).sin().powi(2);
        sum_ln_cap += cap.ln();
        sum_ln_distance += geodesic.ln();
    }
    Some(KnnEstimate {
        entropy: digamma(n as f64) - digamma(k as f64) + sum_ln_cap / n as f64,
        mean_ln_distance: sum_ln_distance / n as f64,
    })
}

/// [`knn_entropy`] with the mean ln εᵢ of its neighbour distances.
pub fn knn<const D: usize>(points: &[[f64; D]], k: usize) -> Option<KnnEstimate> {
    let n = points.len();
    if k == 0 || n <= k {
        return None;
    }
    let tree = KdTree::new(points);
    let sum_log: f64 = (0..n)
        .map(|i| ln_distance(tree.kth_distance_sq(i, k)))
        .sum();
    Some(KnnEstimate {
        entropy: estimate(n, k, D, sum_log),
        mean_ln_distance: sum_log / n as f64,
    })
}

/// Whether a k-NN entropy has converged in the number of points: the estimate on quarters
/// of the points against the estimate on all of them (MATH.md §5.6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SubsampleCheck {
    /// The estimate on all N points.
    pub full: f64,
    /// The mean of the estimates on the four disjoint quarters (N/4 points each).
    pub quarter: f64,
    /// The standard error of that mean, from the spread of the four.
    pub quarter_se: f64,
}

/// Drift of the quarter estimate from the full one, in nats, that a smooth density's
/// finite-sample bias stays below (MATH.md §5.6).
pub const ENTROPY_DRIFT_FLOOR: f64 = 0.1;

impl SubsampleCheck {
    /// Whether the estimate moves with N: the quarters' mean differs from the full estimate
    /// by more than three standard errors and more than [`ENTROPY_DRIFT_FLOOR`]. A law with a
    /// density has an entropy the estimate converges to; a law on a set of dimension below d
    /// (no density) has none, and the estimate falls without bound as N grows.
    pub fn drifts(&self) -> bool {
        let drift = (self.quarter - self.full).abs();
        drift > 3.0 * self.quarter_se && drift > ENTROPY_DRIFT_FLOOR
    }
}

/// [`SubsampleCheck`] of an estimator whose estimate on all `n` points is `full`:
/// `estimate(indices)` estimates from the points at those indices. The quarters are
/// interleaved (every fourth point), so an order in the points (chains are independent, but
/// a caller may sort them) cannot bias them. None when an estimate is missing (too few
/// points).
pub fn subsample_check(
    full: f64,
    n: usize,
    estimate: &(dyn Fn(&[usize]) -> Option<f64> + Sync),
) -> Option<SubsampleCheck> {
    use rayon::prelude::*;
    let quarters: Vec<f64> = (0..4)
        .into_par_iter()
        .map(|q| estimate(&(q..n).step_by(4).collect::<Vec<usize>>()))
        .collect::<Option<_>>()?;
    let mean = quarters.iter().sum::<f64>() / 4.0;
    let var = quarters.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / 3.0;
    Some(SubsampleCheck {
        full,
        quarter: mean,
        quarter_se: (var / 4.0).sqrt(),
    })
}

/// The plug-in histogram entropy (nats) of points on `grid` with the Miller–Madow
/// correction, and the fraction of points outside the grid (which it cannot see). `None`
/// when no point falls inside.
pub fn histogram_entropy(points: &[[f64; 2]], grid: &Grid2) -> Option<(f64, f64)> {
    let rule = grid.bin_rule();
    let mut counts = vec![0u32; grid.cells()];
    let mut inside = 0usize;
    for p in points {
        if let Some(c) = rule.bin(p[0] as f32, p[1] as f32) {
            counts[c] += 1;
            inside += 1;
        }
    }
    if inside == 0 {
        return None;
    }
    let [dx, dy] = grid.cell_size();
    let n = inside as f64;
    let outside = 1.0 - n / points.len() as f64;
    Some((plug_in_entropy(&counts, dx * dy, n), outside))
}

/// The plug-in entropy (nats) of `n` points counted in cells of equal `area`, −Σ pᵢ ln(pᵢ/Δ),
/// with the Miller–Madow correction (occupied cells − 1)/(2N) (MATH.md §5.2).
pub fn plug_in_entropy(counts: &[u32], area: f64, n: f64) -> f64 {
    let occupied = counts.iter().filter(|&&c| c > 0).count() as f64;
    let plug_in: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * (p / area).ln()
        })
        .sum();
    plug_in + (occupied - 1.0) / (2.0 * n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use rand_distr::{Distribution, StandardNormal};

    fn normals(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = SequentialRng::new(seed, 90);
        (0..n)
            .map(|_| (0..d).map(|_| StandardNormal.sample(&mut rng)).collect())
            .collect()
    }

    #[test]
    fn digamma_matches_known_values() {
        let euler = 0.577_215_664_901_532_9;
        assert!((digamma(1.0) + euler).abs() < 1e-12);
        assert!((digamma(0.5) + euler + 2.0 * 2f64.ln()).abs() < 1e-12);
        // ψ(n) = −γ + H(n−1).
        let h: f64 = (1..100).map(|k| 1.0 / f64::from(k)).sum();
        assert!((digamma(100.0) - (h - euler)).abs() < 1e-12);
    }

    #[test]
    fn the_kd_tree_finds_the_same_neighbours_as_brute_force() {
        let pts: Vec<[f64; 3]> = normals(500, 3, 4)
            .into_iter()
            .map(|v| [v[0], v[1], v[2]])
            .collect();
        let tree = KdTree::new(&pts);
        for i in (0..500).step_by(37) {
            let mut d: Vec<f64> = (0..500)
                .filter(|&j| j != i)
                .map(|j| (0..3).map(|a| (pts[i][a] - pts[j][a]).powi(2)).sum())
                .collect();
            d.sort_by(f64::total_cmp);
            for k in [1, 4, 9] {
                assert_eq!(tree.kth_distance_sq(i, k), d[k - 1]);
            }
        }
    }

    /// Within 0.05 nats of the exact entropy of 2-D and 3-D Gaussians at 1e4 samples.
    #[test]
    fn knn_entropy_of_gaussians_is_within_five_hundredths_of_a_nat() {
        let n = 10_000;
        // A correlated 2-D Gaussian: x = z₁, y = 0.8 z₁ + 0.6 z₂ scaled by 2, det Σ = 4·0.36.
        let p2: Vec<[f64; 2]> = normals(n, 2, 1)
            .into_iter()
            .map(|v| [v[0], 2.0 * (0.8 * v[0] + 0.6 * v[1])])
            .collect();
        let det2: f64 = 4.0 * 0.36;
        let exact2 =
            0.5 * (2.0 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln()) + 0.5 * det2.ln();
        let p3: Vec<[f64; 3]> = normals(n, 3, 2)
            .into_iter()
            .map(|v| [0.5 * v[0], v[1], 3.0 * v[2]])
            .collect();
        let exact3 =
            1.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln() + (0.5f64 * 3.0).ln();
        for k in [1, 5, 10] {
            let s2 = knn_entropy(&p2, k).unwrap();
            let s3 = knn_entropy(&p3, k).unwrap();
            assert!((s2 - exact2).abs() < 0.05, "k {k}: 2-D {s2} vs {exact2}");
            assert!((s3 - exact3).abs() < 0.05, "k {k}: 3-D {s3} vs {exact3}");
        }
    }

    #[test]
    fn the_unit_ball_volume_holds_in_thousands_of_dimensions() {
        let pi = std::f64::consts::PI;
        for (d, v) in [(1, 2.0), (2, pi), (3, 4.0 / 3.0 * pi), (4, pi * pi / 2.0)] {
            assert!((ln_unit_ball_volume(d) - f64::ln(v)).abs() < 1e-12, "d {d}");
        }
        // V_d = (2π/d) V_{d−2}, where π^{d/2} and Γ(d/2 + 1) alone overflow.
        for d in [1001, 4482] {
            let step = ln_unit_ball_volume(d) - ln_unit_ball_volume(d - 2);
            assert!((step - (2.0 * pi / d as f64).ln()).abs() < 1e-9, "d {d}");
        }
    }

    /// The brute-force estimator of weight spaces gives the k-d tree's answer in 3-D, and
    /// scaling the points by c adds d ln c in 300 dimensions.
    #[test]
    fn the_dense_estimator_agrees_with_the_tree_and_scales_with_the_points() {
        let p3: Vec<[f64; 3]> = normals(2000, 3, 6)
            .into_iter()
            .map(|v| [v[0], 2.0 * v[1], 0.5 * v[2]])
            .collect();
        let flat: Vec<f32> = p3.iter().flatten().map(|&x| x as f32).collect();
        let (tree, dense) = (
            knn_entropy(&p3, 5).unwrap(),
            knn_entropy_dense(&flat, 3, 5).unwrap(),
        );
        assert!((tree - dense).abs() < 1e-4, "{tree} vs {dense}");
        let d = 300;
        let wide: Vec<f32> = normals(400, d, 7)
            .into_iter()
            .flatten()
            .map(|x| x as f32)
            .collect();
        let scaled: Vec<f32> = wide.iter().map(|x| 3.0 * x).collect();
        let (a, b) = (
            knn_entropy_dense(&wide, d, 5).unwrap(),
            knn_entropy_dense(&scaled, d, 5).unwrap(),
        );
        assert!((b - a - d as f64 * 3f64.ln()).abs() < 1e-3, "{a} → {b}");
        assert!(knn_entropy_dense(&wide[..5 * d], d, 5).is_none());
    }

    #[test]
    fn geodesic_entropy_of_the_uniform_sphere_is_log_four_pi() {
        let pts: Vec<[f64; 3]> = normals(10_000, 3, 3)
            .into_iter()
            .map(|v| {
                let r = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                [v[0] / r, v[1] / r, v[2] / r]
            })
            .collect();
        let exact = (4.0 * std::f64::consts::PI).ln();
        for k in [1, 5, 10] {
            let s = sphere_knn_entropy(&pts, k).unwrap();
            assert!((s - exact).abs() < 0.05, "k {k}: {s} vs {exact}");
        }
        // A collapsed ensemble: finite, and far below any spread one.
        let collapsed = vec![[0.0, 0.0, 1.0]; 1000];
        assert!(sphere_knn_entropy(&collapsed, 5).unwrap() < -40.0);
    }

    /// Folded by x → −x, the uniform sphere is the uniform hemisphere (ln 2π), and a cap
    /// split unevenly between the two poles has the entropy of the cap at one pole.
    #[test]
    fn the_folded_estimate_ignores_how_chains_split_between_the_hemispheres() {
        let unit = |v: [f64; 3]| {
            let r = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            v.map(|c| c / r)
        };
        let uniform: Vec<[f64; 3]> = normals(8000, 3, 8)
            .iter()
            .map(|v| unit([v[0], v[1], v[2]]))
            .collect();
        let folded = sphere_knn(&uniform, 5, true).unwrap().entropy;
        let half = (2.0 * std::f64::consts::PI).ln();
        assert!((folded - half).abs() < 0.05, "{folded} vs {half}");
        // A narrow cap (σ = 0.1 rad) at +z, then 70 % of it moved to −z.
        let cap: Vec<[f64; 3]> = normals(8000, 2, 9)
            .iter()
            .map(|v| unit([0.1 * v[0], 0.1 * v[1], 1.0]))
            .collect();
        let split: Vec<[f64; 3]> = cap
            .iter()
            .enumerate()
            .map(|(i, p)| if i % 10 < 7 { p.map(|c| -c) } else { *p })
            .collect();
        let one_pole = sphere_knn(&cap, 5, true).unwrap().entropy;
        let both = sphere_knn(&split, 5, true).unwrap().entropy;
        assert!((both - one_pole).abs() < 1e-9, "{both} vs {one_pole}");
        // Unfolded, the split adds its mixing entropy, −0.7 ln 0.7 − 0.3 ln 0.3 = 0.61.
        let unfolded = sphere_knn_entropy(&split, 5).unwrap();
        assert!(
            (unfolded - one_pole - 0.611).abs() < 0.05,
            "{unfolded} vs {one_pole}"
        );
    }

    /// The quarter estimate agrees with the full one for a Gaussian (a density) and falls
    /// away from it for points on a line in the plane (no density: the estimate drops by
    /// about ln 4 each time N quadruples).
    #[test]
    fn the_subsample_check_tells_a_density_from_a_law_without_one() {
        let gauss: Vec<[f64; 2]> = normals(4000, 2, 10).iter().map(|v| [v[0], v[1]]).collect();
        let line: Vec<[f64; 2]> = normals(4000, 1, 11)
            .iter()
            .map(|v| [v[0], 0.5 * v[0]])
            .collect();
        let check = |pts: &[[f64; 2]]| {
            let full = knn_entropy(pts, 5).unwrap();
            subsample_check(full, pts.len(), &|idx| {
                let part: Vec<[f64; 2]> = idx.iter().map(|&i| pts[i]).collect();
                knn_entropy(&part, 5)
            })
            .unwrap()
        };
        let (g, l) = (check(&gauss), check(&line));
        assert!(!g.drifts(), "{g:?}");
        assert!(l.drifts(), "{l:?}");
        assert!((l.quarter - l.full - 4f64.ln()).abs() < 0.2, "{l:?}");
    }

    #[test]
    fn histogram_entropy_of_a_gaussian_is_close_on_a_fine_enough_grid() {
        let pts: Vec<[f64; 2]> = normals(100_000, 2, 5)
            .into_iter()
            .map(|v| [v[0], v[1]])
            .collect();
        let grid = Grid2::new([-6.0, 6.0], [-6.0, 6.0], 120, 120);
        let (s, outside) = histogram_entropy(&pts, &grid).unwrap();
        let exact = (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
        assert!((s - exact).abs() < 0.05, "{s} vs {exact}");
        assert!(outside < 1e-4);
        assert!(knn_entropy::<2>(&pts[..3], 5).is_none());
    }
}
