//! What a user should be told about a run's statistics: chains that diverged, chains that
//! never left their start, and stationary moments or an energy distance far from the
//! target's for a sampler that is meant to sample it; and what a typed target's truth leaves
//! out (the mass beyond its box, moments that do not settle as the box grows).

use super::movement::Movement;
use super::{Summary, Truth};
use crate::engine::Moments;
use crate::math::expr::ExprTarget;
use crate::math::expr::truth::{Growth, Moment, box_text};
use crate::math::{SamplerKind, SamplerSpec, Target};

/// Relative miss (of a variance, or of a mean in target standard deviations) beyond which
/// stationary moments count as far from the target. Well above the Monte-Carlo error of
/// thousands of chains (about 3% for a variance) and above the step-size bias of presets
/// that are meant to sample well, well below the misses of a sampler that is broken.
pub const FAR_FROM_TARGET: f64 = 0.2;

/// Whether the sampler is meant to sample the target: SGD is an optimiser, and ATMC with a
/// printed defect is expected to be wrong.
pub fn should_sample(sampler: &SamplerSpec) -> bool {
    sampler.kind != SamplerKind::Sgd && !sampler.has_printed_defect()
}

/// Standardised fourth moment of the exact samples beyond which a coordinate's variance is
/// not judged: its sample variance is then too unstable to compare (the funnel's θ₁ has a
/// kurtosis of about 3·e⁹; a Gaussian's is 3).
pub const HEAVY_TAIL_KURTOSIS: f64 = 20.0;

/// Standardised fourth moment of coordinate `c` of the truth's exact samples.
fn kurtosis(truth: &Truth, c: usize) -> f64 {
    let xs: Vec<f64> = truth.samples.iter().skip(c).step_by(2).copied().collect();
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let m2 = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let m4 = xs.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
    m4 / (m2 * m2)
}

/// The first moment that misses the target by more than [`FAR_FROM_TARGET`], described; `None`
/// when the moments agree or there is nothing to compare. `cov` is (c11, c12, c22). The
/// variance of a heavy-tailed coordinate (kurtosis above [`HEAVY_TAIL_KURTOSIS`]) is not
/// judged; its mean still is.
pub fn far_from_target(mean: [f64; 2], cov: [f64; 3], truth: &Truth) -> Option<String> {
    for c in 0..2 {
        let (var, true_var) = (cov[2 * c], truth.cov[2 * c]);
        let judged = kurtosis(truth, c) <= HEAVY_TAIL_KURTOSIS;
        if !var.is_finite() || (judged && (var / true_var - 1.0).abs() > FAR_FROM_TARGET) {
            return Some(format!(
                "Var θ{} = {} where the target has {}",
                c + 1,
                rounded(var),
                rounded(true_var)
            ));
        }
        if !mean[c].is_finite()
            || (mean[c] - truth.mean[c]).abs() > FAR_FROM_TARGET * true_var.sqrt()
        {
            return Some(format!(
                "mean θ{} = {} where the target has {}",
                c + 1,
                rounded(mean[c]),
                rounded(truth.mean[c])
            ));
        }
    }
    None
}

/// [`far_from_target`] for the alive chains at one instant (the live view's check); `None`
/// with fewer than 100 alive chains, whose moments are too noisy to judge.
pub fn instant_far_from_target(moments: &Moments, truth: &Truth) -> Option<String> {
    if moments.alive < 100 {
        return None;
    }
    let (mean, cov) = instant_moments(moments);
    far_from_target(mean, cov, truth)
}

/// The alive chains' mean and covariance (c11, c12, c22) at one instant.
fn instant_moments(moments: &Moments) -> ([f64; 2], [f64; 3]) {
    (moments.mean(), moments.covariance())
}

/// [`instant_far_from_target`] with the causes ordered by the same moments' evidence
/// ([`causes_by_evidence`]): "Var θ1 = … where the target has … (causes)".
pub fn instant_far_with_causes(
    moments: &Moments,
    truth: &Truth,
    sampler: &SamplerSpec,
    modes: Option<super::ModeCoverage>,
    gradient_noise: bool,
) -> Option<String> {
    let far = instant_far_from_target(moments, truth)?;
    let (_, cov) = instant_moments(moments);
    let diverged = moments.diverged as f64 / (moments.alive + moments.diverged) as f64;
    let evidence = CauseEvidence::of_moments(cov, truth, diverged, modes, gradient_noise);
    Some(format!(
        "{far} ({})",
        causes_by_evidence(sampler, &evidence)
    ))
}

/// `v` to four significant digits, in scientific notation outside [1e-3, 1e5).
fn rounded(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    if !(1e-3..1e5).contains(&v.abs()) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// Standard deviations of the exact-sample baseline beyond which an energy distance counts
/// as far from the target; it must also exceed [`FAR_ENERGY_RATIO`] times the baseline's
/// mean, so a sampler's small step-size bias, which thousands of chains resolve, is not a
/// warning.
pub const FAR_ENERGY_SDS: f64 = 10.0;

/// See [`FAR_ENERGY_SDS`].
pub const FAR_ENERGY_RATIO: f64 = 3.0;

/// The energy distance described when it lies well outside what exact samples of the same
/// size score ([`FAR_ENERGY_SDS`], [`FAR_ENERGY_RATIO`]); None when it does not or there is
/// nothing to compare.
pub fn far_energy_distance(value: f64, baseline: f64, baseline_sd: f64) -> Option<String> {
    let judged = value.is_finite() && baseline.is_finite() && baseline_sd.is_finite();
    (judged
        && value > baseline + FAR_ENERGY_SDS * baseline_sd
        && value > FAR_ENERGY_RATIO * baseline)
        .then(|| {
            format!(
                "energy distance {} where exact samples score {} ± {}",
                rounded(value),
                rounded(baseline),
                rounded(baseline_sd)
            )
        })
}

/// The warnings of a finished run; `movement` is how far its chains went from their start
/// (None when it could not be measured), `modes` the modes its tracked chains reached on a
/// mixture, `gradient_noise` whether its gradients carry noise: with the moments they order
/// the causes of a miss by evidence ([`causes_by_evidence`]).
pub fn run_warnings(
    sampler: &SamplerSpec,
    summary: &Summary,
    truth: &Truth,
    movement: Option<Movement>,
    modes: Option<super::ModeCoverage>,
    gradient_noise: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let cov = [summary.cov[0][0], summary.cov[0][1], summary.cov[1][1]];
    let evidence =
        CauseEvidence::of_moments(cov, truth, summary.diverged_fraction, modes, gradient_noise);
    if let Some(why) = movement.and_then(|m| m.never_moved()) {
        out.push(format!(
            "the statistics describe the start, not the sampler: {why}"
        ));
    }
    if summary.diverged_fraction > 0.0 {
        out.push(format!(
            "{:.2}% of the chains diverged (the first at step {}); the statistics leave their \
             whole history out",
            100.0 * summary.diverged_fraction,
            summary.first_divergence_step.unwrap_or(0)
        ));
    }
    if should_sample(sampler)
        && summary.pooled_states > 0
        && summary.diverged_fraction < 1.0
        && let Some(far) = far_from_target(
            summary.mean,
            [summary.cov[0][0], summary.cov[0][1], summary.cov[1][1]],
            truth,
        )
    {
        out.push(format!(
            "the stationary statistics are far from the target: {far} ({})",
            causes_by_evidence(sampler, &evidence)
        ));
    }
    if should_sample(sampler)
        && summary.diverged_fraction < 1.0
        && let Some(far) = far_energy_distance(
            summary.energy_distance,
            summary.energy_distance_baseline,
            summary.energy_distance_baseline_sd,
        )
    {
        out.push(format!(
            "the chains are far from the target: {far} ({})",
            causes_by_evidence(sampler, &evidence)
        ));
    }
    if let Target::Expression(e) = &truth.target
        && let Some(unsettled) = unsettled_moments(e)
    {
        out.push(unsettled);
    }
    out
}

/// The usual reasons moments miss the target, for the warning.
pub const CAUSES: &str = "a step size too large for the target, too few steps, or gradient \
                          noise the sampler cannot absorb";

/// The reasons a miss is certain that the sampler's own settings give away, before any
/// statistic is looked at: a sampler that injects no noise, or one that samples another
/// temperature. Empty when its settings are those of a sampler of the target.
pub fn known_causes(sampler: &SamplerSpec) -> Vec<String> {
    let mut out = Vec::new();
    let (c, b) = (sampler.sghmc_friction, sampler.sghmc_noise_estimate);
    if sampler.kind == SamplerKind::Sghmc && b >= c {
        out.push(format!(
            "SGHMC with B̂ = C = {} injects no noise (√(2(C − B̂)h) = 0): the chains only \
             descend the gradient and settle at its modes unless the gradient noise is exactly \
             B̂",
            rounded(c)
        ));
    }
    if sampler.kind == SamplerKind::Sgnht && sampler.sgnht_diffusion == 0.0 {
        out.push(
            "SGNHT with diffusion A = 0 injects no noise (√(2Ah) = 0): only the gradient noise \
             moves the chains"
                .to_owned(),
        );
    }
    if sampler.kind != SamplerKind::Sgd && sampler.temperature != 1.0 {
        out.push(format!(
            "temperature T = {} samples the target raised to the power 1/T, not the target",
            rounded(sampler.temperature)
        ));
    }
    out
}

/// The causes a far-from-target warning names: the [`known_causes`] first, then the usual
/// ones ([`CAUSES`]).
pub fn causes(sampler: &SamplerSpec) -> String {
    let known = known_causes(sampler);
    if known.is_empty() {
        CAUSES.to_owned()
    } else {
        format!("{}; otherwise: {CAUSES}", known.join("; "))
    }
}

/// Modes a chain visits on average below which the chains each stay in about the mode they
/// started in: a step too small to cross the barriers, whatever the pooled moments say.
pub const STUCK_MODES_PER_CHAIN: f64 = 1.5;

/// What a run shows about why it missed the target, for ordering the causes
/// ([`causes_by_evidence`]). NaN or None where not measured.
#[derive(Clone, Copy, Debug)]
pub struct CauseEvidence {
    /// Share of the chains that diverged.
    pub diverged_fraction: f64,
    /// Each coordinate's variance over the target's; NaN where not judged (a heavy tail).
    pub variance_ratio: [f64; 2],
    /// The modes the tracked chains reached, on a mixture.
    pub modes: Option<super::ModeCoverage>,
    /// Whether the gradients carry noise.
    pub gradient_noise: bool,
}

impl CauseEvidence {
    /// Nothing measured: every cause stays open, in [`CAUSES`]' order.
    pub fn unknown() -> Self {
        Self {
            diverged_fraction: f64::NAN,
            variance_ratio: [f64::NAN; 2],
            modes: None,
            gradient_noise: true,
        }
    }

    /// The evidence of stationary moments `cov` (c11, c12, c22) against `truth`.
    pub fn of_moments(
        cov: [f64; 3],
        truth: &Truth,
        diverged_fraction: f64,
        modes: Option<super::ModeCoverage>,
        gradient_noise: bool,
    ) -> Self {
        let ratio = |c: usize| {
            if kurtosis(truth, c) <= HEAVY_TAIL_KURTOSIS {
                cov[2 * c] / truth.cov[2 * c]
            } else {
                f64::NAN
            }
        };
        Self {
            diverged_fraction,
            variance_ratio: [ratio(0), ratio(1)],
            modes,
            gradient_noise,
        }
    }

    /// The largest variance ratio of a judged coordinate spreading wider than the target by
    /// more than [`FAR_FROM_TARGET`]. Not on a mixture: there the pooled variance says which
    /// modes the chains sit in, not how widely each spreads.
    fn wider(&self) -> Option<f64> {
        if self.modes.is_some() {
            return None;
        }
        self.variance_ratio
            .iter()
            .copied()
            .filter(|r| r.is_finite() && *r > 1.0 + FAR_FROM_TARGET)
            .reduce(f64::max)
    }

    /// The largest variance ratio when every judged coordinate (one at least) is narrower
    /// than the target by more than [`FAR_FROM_TARGET`]. Not on a mixture (see [`Self::wider`]).
    fn narrower(&self) -> Option<f64> {
        if self.modes.is_some() {
            return None;
        }
        let judged: Vec<f64> = self
            .variance_ratio
            .iter()
            .copied()
            .filter(|r| r.is_finite())
            .collect();
        (!judged.is_empty() && judged.iter().all(|r| *r < 1.0 - FAR_FROM_TARGET))
            .then(|| judged.iter().copied().fold(0.0, f64::max))
    }

    /// The coverage of a mixture whose chains left modes unreached: together, when enough
    /// visits were expected for that to count ([`super::verdict::modes_severity`]), or each
    /// staying in about one mode ([`STUCK_MODES_PER_CHAIN`]).
    fn missing_modes(&self) -> Option<super::ModeCoverage> {
        self.modes.filter(|m| {
            m.ensemble < m.modes
                && (m.per_chain < STUCK_MODES_PER_CHAIN
                    || super::verdict::modes_severity(m)
                        .is_some_and(|s| s != super::verdict::Severity::Fine))
        })
    }
}

/// The causes of a miss ordered by `evidence` (docs/MATH.md §6, "Far from the target"): the
/// [`known_causes`] first, then the causes the evidence points at, then those it leaves
/// open, and last those it rules out, with the reason. A larger step and gradient noise only
/// widen a Langevin sampler's spread (Var θ = (hσ² + 2T)/(λ(2 − hλ)) ≥ T/λ), so chains
/// narrower than the target with none diverged rule both out, and point at a step too small
/// to spread them (or, on a mixture with modes unreached, to cross between the modes).
/// Without evidence the causes are [`CAUSES`].
pub fn causes_by_evidence(sampler: &SamplerSpec, evidence: &CauseEvidence) -> String {
    let e = evidence;
    let none_diverged = e.diverged_fraction == 0.0;
    let (mut pointed, mut open, mut ruled_out) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(m) = e.missing_modes() {
        pointed.push(format!(
            "a step size too small to cross between the target's modes (each chain visited {} \
             on average, all together {} of {})",
            rounded(m.per_chain),
            m.ensemble,
            m.modes
        ));
    } else if none_diverged && let Some(r) = e.narrower() {
        pointed.push(format!(
            "a step size too small to spread the chains over the target (they hold {} of its \
             variance)",
            rounded(r)
        ));
    }
    let large = "a step size too large for the target";
    if e.diverged_fraction > 0.0 {
        pointed.push(format!(
            "{large} ({:.2}% of the chains diverged)",
            100.0 * e.diverged_fraction
        ));
    } else if let Some(r) = e.wider() {
        pointed.push(format!(
            "{large} (the chains spread {} times the target's variance)",
            rounded(r)
        ));
    } else if none_diverged && let Some(r) = e.narrower() {
        ruled_out.push(format!(
            "not {large}: no chain diverged, and a larger step only widens the spread while \
             these chains hold {} of the target's variance",
            rounded(r)
        ));
    } else if none_diverged
        && e.missing_modes()
            .is_some_and(|m| m.per_chain < STUCK_MODES_PER_CHAIN)
    {
        ruled_out.push(format!(
            "not {large}: no chain diverged and each stays in the mode it reached, which a step \
             too large for the modes would not let it"
        ));
    } else {
        open.push(large.to_owned());
    }
    open.push("too few steps".to_owned());
    let noise = "gradient noise the sampler cannot absorb";
    if !e.gradient_noise {
        ruled_out.push(format!("not {noise}: the gradients are exact"));
    } else if none_diverged && e.wider().is_some() {
        pointed.push(noise.to_owned());
    } else if none_diverged && e.narrower().is_some() {
        ruled_out.push(format!("not {noise}: it too only widens the spread"));
    } else {
        open.push(noise.to_owned());
    }
    let likely: Vec<String> = pointed.into_iter().chain(open).collect();
    let mut text = match likely.as_slice() {
        [one] => one.clone(),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
        [] => String::new(),
    };
    for not in ruled_out {
        text.push_str("; ");
        text.push_str(&not);
    }
    let known = known_causes(sampler);
    if known.is_empty() {
        text
    } else {
        format!("{}; otherwise: {text}", known.join("; "))
    }
}

/// A share of the mass for reading: a percentage to two significant digits down to a
/// thousandth of a percent ("0.096 %", "12 %"), smaller shares as a number ("4.4e-10").
pub fn mass_share(share: f64) -> String {
    if share == 0.0 || !share.is_finite() {
        return format!("{share}");
    }
    if share < 1e-5 {
        return format!("{share:.1e}");
    }
    let percent = 100.0 * share;
    let decimals = (1 - percent.log10().floor() as i32).max(0) as usize;
    format!("{percent:.decimals$} %")
}

/// What a typed target's truth covers, in one sentence for the formula panel and the command
/// line: "moments of the density within the box θ₁ ∈ [a, b], θ₂ ∈ [c, d]; 0.096 % of the
/// mass lies outside", and, where the moments were taken over a box grown beyond the truth's
/// until they settle, the truth's box (its cell masses and exact samples) with the mass
/// outside it too (docs/MATH.md §9, *Beyond the box*).
pub fn truth_extent(target: &ExprTarget) -> String {
    let beyond = &target.beyond;
    let outside = |share: f64| {
        if share.is_nan() {
            "the mass outside was not estimated (the work limit ran out first)".to_owned()
        } else if beyond.at_least {
            format!("at least {} of the mass lies outside", mass_share(share))
        } else {
            format!("{} of the mass lies outside", mass_share(share))
        }
    };
    let moments = format!(
        "moments of the density within the box {}; {}",
        box_text(&beyond.moment_box),
        outside(beyond.moment_box_outside)
    );
    if beyond.moment_box == target.bounds {
        moments
    } else {
        format!(
            "{moments}. Cell masses, contours and exact samples: the density within the box {}; \
             {} it",
            box_text(&target.bounds),
            outside(beyond.outside_mass)
        )
    }
}

/// The warning for a typed target whose moments did not settle as its box grew: which
/// moment, its values within two boxes, and why the growth stopped; `None` when they settled.
pub fn unsettled_moments(target: &ExprTarget) -> Option<String> {
    let beyond = &target.beyond;
    let u = beyond.unsettled.as_ref()?;
    let why = match beyond.growth {
        Growth::Extent => "the box reached the largest it may, ±1e5".to_owned(),
        Growth::WorkLimit => "the work the truth may spend ran out".to_owned(),
        Growth::NotFinite { at } => format!(
            "exp(−U) could not be integrated near θ = ({}, {})",
            rounded(at[0]),
            rounded(at[1])
        ),
        Growth::Settled => "it settled".to_owned(),
    };
    let which = match u.moment {
        Moment::Mean(_) => "mean",
        Moment::Variance(_) => "variance",
    };
    Some(format!(
        "the truth's moments do not settle as its box grows: {} = {} within the box {} but {} \
         within {} (the growth stopped: {why}). The density's {which} may not exist, or \
         depends on mass farther out: the truth's moments are those within the larger box, \
         and a sampler's need not match them",
        u.moment,
        rounded(u.values[0]),
        box_text(&u.boxes[0]),
        rounded(u.values[1]),
        box_text(&u.boxes[1]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::TargetSpec;

    /// A chain stuck because its step is small is not blamed on a large step (#44): the
    /// causes follow the evidence, and without evidence they are the usual list.
    #[test]
    fn causes_are_ordered_by_their_evidence() {
        let sgld = SamplerSpec {
            kind: SamplerKind::Sgld,
            h: 0.01,
            ..SamplerSpec::default()
        };
        let coverage = |ensemble| {
            Some(super::super::ModeCoverage {
                per_chain: 1.0,
                ensemble,
                modes: 25,
                chains: 500,
            })
        };
        let stuck = CauseEvidence {
            diverged_fraction: 0.0,
            variance_ratio: [0.005, 0.005],
            modes: coverage(1),
            gradient_noise: true,
        };
        let c = causes_by_evidence(&sgld, &stuck);
        assert!(
            c.starts_with("a step size too small to cross between the target's modes")
                && c.contains("all together 1 of 25"),
            "{c}"
        );
        assert!(c.contains("; not a step size too large"), "{c}");
        assert!(c.contains("or gradient noise"), "{c}");
        // On a mixture the pooled variance says which modes the chains sit in: chains each in
        // one mode, nine modes together, wider than the target, are still stuck (#44: the
        // live banner had blamed a large step on `convergence-gmm25`).
        let sitting = CauseEvidence {
            variance_ratio: [1.75, 1.4],
            modes: Some(super::super::ModeCoverage {
                per_chain: 1.0,
                ensemble: 9,
                modes: 25,
                chains: 64,
            }),
            ..stuck
        };
        let c = causes_by_evidence(&sgld, &sitting);
        assert!(c.starts_with("a step size too small to cross"), "{c}");
        assert!(!c.contains("too large for the target ("), "{c}");
        // Narrower without modes to miss: too small to spread.
        let narrow = CauseEvidence {
            modes: None,
            ..stuck
        };
        assert!(causes_by_evidence(&sgld, &narrow).starts_with("a step size too small to spread"));
        // Wider, or diverged: a large step first.
        let wide = CauseEvidence {
            variance_ratio: [4.0, 4.0],
            modes: None,
            gradient_noise: false,
            diverged_fraction: 0.0,
        };
        let c = causes_by_evidence(&sgld, &wide);
        assert!(c.starts_with("a step size too large"), "{c}");
        assert!(
            c.contains("not gradient noise the sampler cannot absorb: the gradients are exact")
        );
        let blown = CauseEvidence {
            diverged_fraction: 0.05,
            modes: coverage(25),
            ..stuck
        };
        assert!(causes_by_evidence(&sgld, &blown).starts_with("a step size too large"));
        assert_eq!(causes_by_evidence(&sgld, &CauseEvidence::unknown()), CAUSES);
        // What the settings give away still comes first.
        let silent = SamplerSpec {
            kind: SamplerKind::Sgnht,
            sgnht_diffusion: 0.0,
            ..sgld
        };
        assert!(causes_by_evidence(&silent, &stuck).starts_with("SGNHT with diffusion A = 0"));
    }

    #[test]
    fn the_knowable_cause_is_named_first() {
        let mut s = SamplerSpec {
            kind: SamplerKind::Sghmc,
            sghmc_friction: 1.0,
            sghmc_noise_estimate: 0.5,
            ..SamplerSpec::default()
        };
        assert!(known_causes(&s).is_empty());
        assert_eq!(causes(&s), CAUSES);
        s.sghmc_noise_estimate = 1.0;
        let c = causes(&s);
        assert!(
            c.starts_with("SGHMC with B̂ = C = 1 injects no noise"),
            "{c}"
        );
        assert!(c.ends_with(CAUSES), "{c}");
        s.temperature = 0.5;
        assert_eq!(known_causes(&s).len(), 2);
        assert!(known_causes(&s)[1].contains("T = 0.5"));
        s.kind = SamplerKind::Sgnht;
        s.sgnht_diffusion = 0.0;
        s.temperature = 1.0;
        assert!(causes(&s).starts_with("SGNHT with diffusion A = 0"));
    }

    #[test]
    fn exact_moments_are_not_far_and_wrong_ones_are() {
        let truth = Truth::new(&TargetSpec::from_name("gaussian").unwrap().build().unwrap());
        assert_eq!(far_from_target([0.0, 0.0], [1.0, 0.0, 1.0], &truth), None);
        assert_eq!(far_from_target([0.1, -0.1], [1.15, 0.0, 0.9], &truth), None);
        let inflated = far_from_target([0.0, 0.0], [2543.0, 0.0, 1.0], &truth).unwrap();
        assert!(inflated.contains("Var θ1"), "{inflated}");
        let shifted = far_from_target([0.0, 0.5], [1.0, 0.0, 1.0], &truth).unwrap();
        assert!(shifted.contains("mean θ2"), "{shifted}");
        let nan = far_from_target([f64::NAN, 0.0], [1.0, 0.0, 1.0], &truth);
        assert!(nan.is_some());
    }

    #[test]
    fn numbers_are_rounded_for_reading() {
        assert_eq!(rounded(8.03), "8.03");
        assert_eq!(rounded(5323.679), "5324");
        assert_eq!(rounded(0.1234567), "0.1235");
        assert_eq!(rounded(2.5e7), "2.500e7");
        assert_eq!(rounded(-1.0), "-1");
        assert_eq!(rounded(0.0), "0");
    }

    #[test]
    fn mass_shares_are_written_for_reading() {
        assert_eq!(mass_share(9.6e-4), "0.096 %");
        assert_eq!(mass_share(1.27e-4), "0.013 %");
        assert_eq!(mass_share(0.123), "12 %");
        assert_eq!(mass_share(4.35e-10), "4.3e-10");
        assert_eq!(mass_share(0.0), "0");
    }

    /// A typed target's truth says what its box leaves out: the funnel's sentence names the
    /// box of its moments, the truth's box and the share of the mass outside each; a
    /// Student-t with ν = 2, which has no variance, gets the warning that its variance does not
    /// settle, with its values within two boxes.
    #[test]
    fn a_typed_truth_says_what_it_leaves_out() {
        use std::collections::BTreeMap;
        let params = BTreeMap::from([("sv".to_owned(), 3.0)]);
        let funnel =
            ExprTarget::cached("y^2/(2*sv^2) + x^2*exp(-y)/2 + y/2", &params, None).unwrap();
        let extent = truth_extent(&funnel);
        eprintln!("{extent}");
        assert!(
            extent.starts_with("moments of the density within the box θ₁ ∈ [-13824, 13824]")
                && extent.contains(
                    "exact samples: the density within the box θ₁ ∈ [-108, 108], θ₂ ∈ [-12, 12]; \
                     0.09"
                )
                && extent.ends_with("% of the mass lies outside it"),
            "{extent}"
        );
        assert_eq!(unsettled_moments(&funnel), None);
        let gaussian = ExprTarget::cached("x^2/2 + y^2/2", &BTreeMap::new(), None).unwrap();
        let extent = truth_extent(&gaussian);
        assert!(
            extent.contains("0.013 % of the mass lies outside"),
            "{extent}"
        );
        let t = ExprTarget::cached("2*log(1 + (x^2 + y^2)/2)", &BTreeMap::new(), None).unwrap();
        let warning = unsettled_moments(&t).expect("no variance");
        eprintln!("{}\n{warning}", truth_extent(&t));
        assert!(
            warning.starts_with("the truth's moments do not settle as its box grows: Var θ")
                && warning.contains("within the box θ₁ ∈ [-36864, 36864]")
                && warning.contains("within θ₁ ∈ [-100000, 100000]")
                && warning.contains("±1e5")
                && warning.contains("variance may not exist"),
            "{warning}"
        );
    }

    #[test]
    fn heavy_tails_are_judged_by_their_mean_only() {
        let truth = Truth::new(&TargetSpec::from_name("funnel").unwrap().build().unwrap());
        assert!(kurtosis(&truth, 0) > HEAVY_TAIL_KURTOSIS);
        assert!(kurtosis(&truth, 1) < 4.0);
        // Var θ₁ = 90 in theory; a finite run sees far less, which is not a warning.
        assert_eq!(far_from_target([0.0, 0.0], [14.5, 0.0, 8.5], &truth), None);
        assert!(far_from_target([5.0, 0.0], [14.5, 0.0, 8.5], &truth).is_some());
        assert!(far_from_target([0.0, 0.0], [14.5, 0.0, 20.0], &truth).is_some());
    }
}
