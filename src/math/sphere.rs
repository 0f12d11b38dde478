//! The sphere toy of MATH.md §5.4: parameters x ∈ ℝ³ used through their direction, per-object
//! losses ℓᵢ(x) = (aᵢ·x)²/|x|², and projected SGD (a step on a minibatch of objects, then back
//! onto the unit sphere), with optional heavy-ball momentum kept in the tangent plane.
//!
//! Random numbers are addressed like the 2-D chains': minibatch slot j of chain c at step s
//! is word j mod 4 of Philox((c, s, ⌊j/4⌋, `Minibatch`)), mapped to an object index.

use super::rng::{RngCounter, Stream, index_below};
use glam::DVec3;
use serde::{Deserialize, Serialize};

/// Which set of objects: the overparameterised problem has a common zero, the
/// underparameterised one has none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SphereProblem {
    /// Two objects whose zero great circles meet at ±(0, 0, 1): interpolation is possible.
    #[default]
    Overparameterised,
    /// Three objects with linearly independent normals: no point zeroes every loss.
    Underparameterised,
}

impl SphereProblem {
    /// The object vectors aᵢ (unit length).
    pub fn objects(self) -> Vec<DVec3> {
        match self {
            SphereProblem::Overparameterised => {
                let c = 3f64.sqrt() / 2.0;
                vec![DVec3::new(c, 0.5, 0.0), DVec3::new(c, -0.5, 0.0)]
            }
            SphereProblem::Underparameterised => {
                let s = 3f64.sqrt() / 2.0;
                [
                    DVec3::new(1.0, 0.0, 0.2),
                    DVec3::new(-0.5, s, 0.2),
                    DVec3::new(-0.5, -s, 0.2),
                ]
                .into_iter()
                .map(DVec3::normalize)
                .collect()
            }
        }
    }

    /// Short name: "OP" or "UP".
    pub fn short(self) -> &'static str {
        match self {
            SphereProblem::Overparameterised => "OP",
            SphereProblem::Underparameterised => "UP",
        }
    }
}

/// Where every chain starts: (−0.8, 0.6, 0.1), normalised.
pub fn start() -> DVec3 {
    DVec3::new(-0.8, 0.6, 0.1).normalize()
}

/// One object's loss (a·x)²/|x|².
pub fn object_loss(a: DVec3, x: DVec3) -> f64 {
    a.dot(x).powi(2) / x.length_squared()
}

/// The training loss: the mean of the objects' losses.
pub fn loss(objects: &[DVec3], x: DVec3) -> f64 {
    objects.iter().map(|&a| object_loss(a, x)).sum::<f64>() / objects.len() as f64
}

/// One object's gradient at a unit x: 2(a·x)(a − (a·x)x), tangent to the sphere (the loss is
/// scale-invariant).
pub fn object_gradient(a: DVec3, x: DVec3) -> DVec3 {
    let ax = a.dot(x);
    2.0 * ax * (a - ax * x)
}

/// The full gradient at a unit x.
pub fn full_gradient(objects: &[DVec3], x: DVec3) -> DVec3 {
    objects
        .iter()
        .map(|&a| object_gradient(a, x))
        .sum::<DVec3>()
        / objects.len() as f64
}

/// The gradient's signal and noise at a unit x: |∇L| and √(meanᵢ |gᵢ − ∇L|²) for a batch of
/// one object (MATH.md §5.4).
pub fn signal_and_noise(objects: &[DVec3], x: DVec3) -> (f64, f64) {
    let g = full_gradient(objects, x);
    let noise = objects
        .iter()
        .map(|&a| (object_gradient(a, x) - g).length_squared())
        .sum::<f64>()
        / objects.len() as f64;
    (g.length(), noise.sqrt())
}

/// The optimiser: projected SGD with learning rate `h`, heavy-ball `momentum` μ ∈ [0, 1) and
/// `batch` objects per step (drawn with replacement).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SphereOptimizer {
    /// Learning rate η.
    #[serde(deserialize_with = "super::ranges::de_sphere_h")]
    pub h: f64,
    /// Heavy-ball momentum μ (0: plain SGD).
    #[serde(default, deserialize_with = "super::ranges::de_momentum")]
    pub momentum: f64,
    /// Objects per minibatch.
    #[serde(default = "one", deserialize_with = "super::ranges::de_sphere_batch")]
    pub batch: u32,
}

fn one() -> u32 {
    1
}

impl Default for SphereOptimizer {
    fn default() -> Self {
        Self {
            h: 0.1,
            momentum: 0.0,
            batch: 1,
        }
    }
}

/// One chain: its direction and its velocity (tangent at x).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereChain {
    /// Unit vector.
    pub x: DVec3,
    /// Velocity of the heavy ball (zero for plain SGD).
    pub v: DVec3,
}

impl SphereChain {
    /// A chain at the common start, at rest.
    pub fn at_start() -> Self {
        Self {
            x: start(),
            v: DVec3::ZERO,
        }
    }
}

/// Index of minibatch slot `j` of a chain at a step, among `n` objects.
pub fn batch_index(rng: &RngCounter, j: u32, n: u32) -> u32 {
    index_below(rng.bits4(Stream::Minibatch, j / 4)[(j % 4) as usize], n)
}

/// One step of projected SGD (with momentum): v ← μv − η ĝ, x ← (x + v)/|x + v|, and v
/// projected onto the tangent plane at the new x.
pub fn step(objects: &[DVec3], opt: &SphereOptimizer, chain: &mut SphereChain, rng: &RngCounter) {
    let n = objects.len() as u32;
    let g = (0..opt.batch)
        .map(|j| object_gradient(objects[batch_index(rng, j, n) as usize], chain.x))
        .sum::<DVec3>()
        / f64::from(opt.batch);
    chain.v = opt.momentum * chain.v - opt.h * g;
    let moved = chain.x + chain.v;
    let length = moved.length();
    if length > 0.0 && length.is_finite() {
        chain.x = moved / length;
    }
    chain.v -= chain.v.dot(chain.x) * chain.x;
}

/// The smallest training loss on the sphere: the smallest eigenvalue of M = meanᵢ aᵢaᵢᵀ,
/// since L(x) = xᵀMx on unit vectors (closed form for a symmetric 3×3 matrix).
pub fn min_loss(objects: &[DVec3]) -> f64 {
    let n = objects.len() as f64;
    let m = |r: usize, c: usize| objects.iter().map(|a| a[r] * a[c]).sum::<f64>() / n;
    let (a, b, c) = (m(0, 0), m(1, 1), m(2, 2));
    let (d, e, f) = (m(0, 1), m(0, 2), m(1, 2));
    let q = (a + b + c) / 3.0;
    let off = d * d + e * e + f * f;
    let p = (((a - q).powi(2) + (b - q).powi(2) + (c - q).powi(2) + 2.0 * off) / 6.0).sqrt();
    if p == 0.0 {
        return q;
    }
    // det((M − qI)/p)/2 = cos 3φ; the smallest eigenvalue is q + 2p cos(φ + 2π/3).
    let (a, b, c) = ((a - q) / p, (b - q) / p, (c - q) / p);
    let (d, e, f) = (d / p, e / p, f / p);
    let det = a * (b * c - f * f) - d * (d * c - f * e) + e * (d * f - b * e);
    let phi = (det / 2.0).clamp(-1.0, 1.0).acos() / 3.0;
    q + 2.0 * p * (phi + 2.0 * std::f64::consts::PI / 3.0).cos()
}

/// `n` exact draws of the Gibbs law exp(−L/T)/Z of the toy with `objects` on the unit
/// sphere, by rejection from the uniform law: a uniform direction is kept with probability
/// exp(−(L − min L)/T). The reference the Gibbs test is checked against (MATH.md §5.6);
/// seeded. The acceptance rate is about T/(2 (λ₂ − λ₁)) near a minimum between eigenvalues
/// λ₁ < λ₂ of M, so very low temperatures take many proposals.
pub fn gibbs_samples(objects: &[DVec3], t: f64, n: usize, seed: u64) -> Vec<DVec3> {
    use rand::RngExt;
    use rand_distr::{Distribution, StandardNormal};
    let l_min = min_loss(objects);
    let mut rng = super::rng::SequentialRng::new(seed, 0);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let v = DVec3::new(
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
            StandardNormal.sample(&mut rng),
        );
        let length = v.length();
        if length == 0.0 {
            continue;
        }
        let x = v / length;
        if rng.random::<f64>() < (-(loss(objects, x) - l_min) / t).exp() {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed-form smallest eigenvalue is the minimum of the loss: the underparameterised
    /// problem's at the poles, (0.2)²/1.04; the overparameterised problem's 0.
    #[test]
    fn the_smallest_loss_is_the_poles_and_the_draws_are_hemisphere_symmetric() {
        let up = SphereProblem::Underparameterised.objects();
        assert!((min_loss(&up) - 0.04 / 1.04).abs() < 1e-12);
        assert!((loss(&up, DVec3::Z) - min_loss(&up)).abs() < 1e-12);
        assert!(min_loss(&SphereProblem::Overparameterised.objects()).abs() < 1e-12);
        let draws = gibbs_samples(&up, 0.01, 4000, 1);
        let upper = draws.iter().filter(|x| x.z > 0.0).count();
        // Half in each hemisphere: 2000 ± 32 (one standard deviation).
        assert!((upper as i64 - 2000).abs() < 130, "{upper}");
        let mean_excess = draws.iter().map(|&x| loss(&up, x)).sum::<f64>() / 4000.0 - min_loss(&up);
        // Two quadratic directions: E[L − min L] ≈ T.
        assert!((mean_excess / 0.01 - 1.0).abs() < 0.1, "{mean_excess}");
    }

    #[test]
    fn the_overparameterised_problem_interpolates_at_the_poles_and_the_other_does_not() {
        let op = SphereProblem::Overparameterised.objects();
        for pole in [DVec3::Z, -DVec3::Z] {
            assert!(loss(&op, pole) < 1e-30);
            assert_eq!(signal_and_noise(&op, pole), (0.0, 0.0));
        }
        let up = SphereProblem::Underparameterised.objects();
        // The normals are independent: the minimum over a fine grid stays well above zero.
        let mut best = f64::INFINITY;
        for i in 0..=200 {
            for j in 0..400 {
                let (t, p) = (
                    std::f64::consts::PI * f64::from(i) / 200.0,
                    std::f64::consts::TAU * f64::from(j) / 400.0,
                );
                let x = DVec3::new(t.sin() * p.cos(), t.sin() * p.sin(), t.cos());
                best = best.min(loss(&up, x));
            }
        }
        assert!(best > 1e-3, "UP minimum {best}");
    }

    #[test]
    fn object_gradients_are_tangent_and_match_finite_differences() {
        let objects = SphereProblem::Underparameterised.objects();
        let x = DVec3::new(0.3, -0.5, 0.8).normalize();
        for &a in &objects {
            let g = object_gradient(a, x);
            assert!(g.dot(x).abs() < 1e-12);
            let e = 1e-6;
            for axis in [DVec3::X, DVec3::Y, DVec3::Z] {
                let fd = (object_loss(a, x + e * axis) - object_loss(a, x - e * axis)) / (2.0 * e);
                assert!((fd - g.dot(axis)).abs() < 1e-6, "{fd} vs {}", g.dot(axis));
            }
        }
    }

    /// The signed area factor at the pole +z of one batch-1 step of projected SGD on object
    /// `a` alone: the Jacobian of `step` itself by central differences. The pole's
    /// neighbourhood is parametrised by (u, v) ↦ (u, v, 1)/|(u, v, 1)|, which keeps area at
    /// the pole, so the factor is the image's solid-angle element (∂ᵤF × ∂ᵥF)·F.
    fn pole_area_factor(a: DVec3, eta: f64) -> f64 {
        let opt = SphereOptimizer {
            h: eta,
            momentum: 0.0,
            batch: 1,
        };
        let image = |u: f64, v: f64| {
            let mut chain = SphereChain {
                x: DVec3::new(u, v, 1.0).normalize(),
                v: DVec3::ZERO,
            };
            // One object: every minibatch draw picks it.
            step(&[a], &opt, &mut chain, &RngCounter::new(0, 0, 0));
            chain.x
        };
        let e = 1e-6;
        let du = (image(e, 0.0) - image(-e, 0.0)) / (2.0 * e);
        let dv = (image(0.0, e) - image(0.0, -e)) / (2.0 * e);
        du.cross(dv).dot(image(0.0, 0.0))
    }

    /// MATH.md §5.6 ("Does S exist?"): on `sphere-up` with batch 1 the stationary law has no
    /// density where the three step maps together shrink area, 3|J(η)| < 1 with J the area
    /// factor at the pole. J from finite differences of the real step matches the closed form
    /// of MATH.md, and the interval's ends, found by bisection on it, are η = 0.372 and 0.785
    /// (the old statement, 3|1 − 1.92η| < 1, put them at 0.35 and 0.69).
    #[test]
    fn the_sphere_up_law_is_singular_where_three_pole_area_factors_sum_below_one() {
        let objects = SphereProblem::Underparameterised.objects();
        // aᵢ = (bᵢ, c): c² = 0.04/1.04 = 1/26 along z, |bᵢ|² = 25/26 in the plane.
        let (c2, b2) = (1.0 / 26.0, 25.0 / 26.0);
        let closed = |eta: f64| {
            let d = 4.0 * eta * eta * c2 * b2;
            (1.0 + 2.0 * eta * c2) * (1.0 - 2.0 * eta * (b2 - c2) + d) / (1.0 + d).powf(1.5)
        };
        for eta in [0.02, 0.1, 0.2, 0.37, 0.5, 0.6, 0.785, 1.0] {
            for &a in &objects {
                let j = pole_area_factor(a, eta);
                assert!(
                    (j - closed(eta)).abs() < 1e-7,
                    "η {eta}: {j} vs {}",
                    closed(eta)
                );
            }
        }
        // Bisection on 3J(η) = ±1 (J falls monotonically through the range).
        let a = objects[0];
        let root = |target: f64, mut lo: f64, mut hi: f64| {
            for _ in 0..50 {
                let mid = 0.5 * (lo + hi);
                if 3.0 * pole_area_factor(a, mid) > target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        };
        let (start, end) = (root(1.0, 0.2, 0.6), root(-1.0, 0.6, 1.2));
        assert!((start - 0.372).abs() < 5e-4, "singular from η = {start}");
        assert!((end - 0.785).abs() < 5e-4, "singular up to η = {end}");
        // The learning rates tests/it/thermo.rs measures: η = 0.2 keeps a density (3J = 1.92),
        // η = 0.5 has none (3J = 0.34).
        assert!((3.0 * pole_area_factor(a, 0.2) - 1.92).abs() < 0.005);
        assert!((3.0 * pole_area_factor(a, 0.5) - 0.336).abs() < 0.005);
    }

    #[test]
    fn a_step_stays_on_the_sphere_and_depends_only_on_its_address() {
        let objects = SphereProblem::Underparameterised.objects();
        let opt = SphereOptimizer {
            h: 0.3,
            momentum: 0.5,
            batch: 3,
        };
        let mut a = SphereChain::at_start();
        let mut b = SphereChain::at_start();
        for s in 0..50 {
            step(&objects, &opt, &mut a, &RngCounter::new(7, 3, s));
            step(&objects, &opt, &mut b, &RngCounter::new(7, 3, s));
            assert!((a.x.length() - 1.0).abs() < 1e-12);
            assert!(a.v.dot(a.x).abs() < 1e-12);
        }
        assert_eq!(a, b);
    }
}
