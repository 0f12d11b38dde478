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
    let n = moments.alive as f64;
    let mean = moments.mean();
    let s = moments.sum_theta_sq;
    let cov = [
        s[0] / n - mean[0] * mean[0],
        s[1] / n - mean[0] * mean[1],
        s[2] / n - mean[1] * mean[1],
    ];
    far_from_target(mean, cov, truth)
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
/// (None when it could not be measured).
pub fn run_warnings(
    sampler: &SamplerSpec,
    summary: &Summary,
    truth: &Truth,
    movement: Option<Movement>,
) -> Vec<String> {
    let mut out = Vec::new();
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
            causes(sampler)
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
            causes(sampler)
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
