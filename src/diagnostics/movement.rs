//! Whether a run's chains ever left their start. A run far shorter than the target's
//! relaxation time still shows an ensemble (its initial one), whose U stops moving and whose
//! fitted Gibbs law can look fine; neither says anything about the sampler. Both the
//! thermodynamics verdicts and `run`'s warnings ask [`Movement::never_moved`] first.

/// Relaxation times a run must span (steps · h · λ, with λ = 1 / the target's largest
/// variance) before it can be said to have forgotten its start.
pub const MIN_RELAXATIONS: f64 = 1.0;

/// Root-mean-square displacement from the start, in the target's standard deviations (along
/// its widest axis), below which the chains count as having stayed where they began.
pub const MIN_DISPLACEMENT: f64 = 0.1;

/// Chains whose start `run` keeps to judge the movement (the first ones): enough for the
/// root-mean-square displacement, without a second copy of millions of chains.
pub const MOVEMENT_CHAINS: u32 = 10_000;

/// How far a run's chains went, measured against the target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Movement {
    /// Root-mean-square distance of the alive chains from their own start, over the target's
    /// standard deviation along its widest axis.
    pub displacement: f64,
    /// Steps taken over the relaxation time 1/(hλ), λ = 1 / the target's largest variance
    /// (the curvature of its slowest direction for a Gaussian).
    pub relaxations: f64,
}

impl Movement {
    /// [`Self::measure`] of the chains both `starts` and `ends` hold (`starts` may be a head
    /// of the chains), the alive ones by `ends.diverged_at`.
    pub fn between(
        starts: &crate::engine::ChainStates,
        ends: &crate::engine::ChainStates,
        target_cov: [f64; 3],
        h: f64,
        steps: u32,
    ) -> Option<Self> {
        let theta = |c: &crate::math::Chain2| [f64::from(c.theta[0]), f64::from(c.theta[1])];
        let (s, e): (Vec<[f64; 2]>, Vec<[f64; 2]>) = starts
            .chains
            .iter()
            .zip(&ends.chains)
            .zip(&ends.diverged_at)
            .filter(|(_, d)| **d == 0)
            .map(|((s, e), _)| (theta(s), theta(e)))
            .unzip();
        Self::measure(&s, &e, target_cov, h, steps)
    }

    /// The movement of chains that started at `starts` and ended at `ends` (paired by chain,
    /// the alive ones only) after `steps` steps of size `h`, on a target of covariance
    /// `target_cov` (c11, c12, c22). None without chains or without a finite, positive scale.
    pub fn measure(
        starts: &[[f64; 2]],
        ends: &[[f64; 2]],
        target_cov: [f64; 3],
        h: f64,
        steps: u32,
    ) -> Option<Self> {
        let [a, b, c] = target_cov;
        // The largest eigenvalue of the 2 × 2 covariance: the widest axis.
        let widest = 0.5 * (a + c) + (0.25 * (a - c).powi(2) + b * b).sqrt();
        if starts.is_empty() || starts.len() != ends.len() || !(widest.is_finite() && widest > 0.0)
        {
            return None;
        }
        let mean_square = starts
            .iter()
            .zip(ends)
            .map(|(s, e)| (e[0] - s[0]).powi(2) + (e[1] - s[1]).powi(2))
            .sum::<f64>()
            / starts.len() as f64;
        Some(Self {
            displacement: (mean_square / widest).sqrt(),
            relaxations: f64::from(steps) * h.abs() / widest,
        })
    }

    /// Why the run says nothing about its sampler, when its chains barely left their start
    /// in fewer steps than one relaxation time; None when they moved or had the time to.
    /// Both conditions are needed: a run at a low temperature started on the mode stays put
    /// legitimately, and a long run may end near where it began by chance.
    pub fn never_moved(&self) -> Option<String> {
        (self.displacement < MIN_DISPLACEMENT && self.relaxations < MIN_RELAXATIONS).then(|| {
            format!(
                "never moved: the chains went {:.3} target standard deviations from their start \
                 in {:.3} of a relaxation time 1/(hλ); run more steps or a larger step size",
                self.displacement, self.relaxations
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_at_a_tiny_step_never_moved_and_a_relaxed_one_did() {
        let starts = vec![[1.0, 0.0], [0.0, -1.0]];
        let crept = vec![[0.95, 0.0], [0.0, -0.95]];
        let m = Movement::measure(&starts, &crept, [1.0, 0.0, 1.0], 1e-3, 50).unwrap();
        assert!((m.displacement - 0.05).abs() < 1e-12 && (m.relaxations - 0.05).abs() < 1e-12);
        assert!(m.never_moved().unwrap().contains("never moved"));
        // The same small displacement after many relaxation times: settled, not stuck.
        let settled = Movement::measure(&starts, &crept, [1.0, 0.0, 1.0], 0.5, 600).unwrap();
        assert_eq!(settled.never_moved(), None);
        // A short run that went far moved.
        let far = vec![[-1.0, 0.0], [0.0, 1.0]];
        let jumped = Movement::measure(&starts, &far, [1.0, 0.0, 1.0], 1e-3, 50).unwrap();
        assert_eq!(jumped.never_moved(), None);
        assert_eq!(Movement::measure(&[], &[], [1.0, 0.0, 1.0], 0.1, 10), None);
    }
}
