//! One verdict policy across the convergence instruments (docs/MATH.md §6, "Verdicts across
//! instruments"). Every instrument's limit is set so that a sampler of the target passes it
//! but for a rare false alarm: a failure is evidence, a pass may only mean the instrument
//! cannot see the problem. Each instrument is graded Fine, Mild or Severe against its own
//! limit; the run's verdict is the worst grade; a pass beside a severe failure that it is
//! known to be blind to is overruled and one sentence says which instruments to trust.

use super::ModeCoverage;
use super::convergence::{RHAT_ROOM, mixed};
use super::warnings::{FAR_ENERGY_RATIO, FAR_ENERGY_SDS, FAR_FROM_TARGET};
use serde::Serialize;

/// How far an instrument reads from what a sampler of the target gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Within the instrument's limit.
    Fine,
    /// Over the strict limit, within the lenient one.
    Mild,
    /// Over both.
    Severe,
}

impl Severity {
    /// "fine", "mild", "severe".
    pub fn word(self) -> &'static str {
        match self {
            Severity::Fine => "fine",
            Severity::Mild => "mild",
            Severity::Severe => "severe",
        }
    }
}

/// The instruments judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Instrument {
    /// Split R̂ of the rank-normalised draws.
    RhatBulk,
    /// Split R̂ of the folded draws.
    RhatTail,
    /// Nested R̂ of the superchains.
    NestedRhat,
    /// Kernel Stein discrepancy against its exact-draw baseline.
    Ksd,
    /// Energy distance to exact samples against its exact-draw baseline.
    EnergyDistance,
    /// Modes of a mixture the chains reached together.
    Modes,
}

impl Instrument {
    /// The name the app and `run` print.
    pub fn name(self) -> &'static str {
        match self {
            Instrument::RhatBulk => "R-hat bulk",
            Instrument::RhatTail => "R-hat tail",
            Instrument::NestedRhat => "nested R-hat",
            Instrument::Ksd => "the KSD",
            Instrument::EnergyDistance => "the energy distance",
            Instrument::Modes => "the modes visited",
        }
    }
}

/// R̂² room of the classical threshold 1.1 (Gelman et al., BDA3) above 1.
pub const CLASSICAL_RHAT_ROOM: f64 = 1.1 * 1.1 - 1.0;
/// Standard deviations of the exact-draw score within which a distance reads as exact draws
/// (one-sided 3 sd, the false-alarm rate of the R̂ limits).
pub const BASELINE_BAND_SDS: f64 = 3.0;
/// Expected visits per mode (tracked chains × modes per chain / modes) below which a missing
/// mode may be chance: at 10 a given mode is missed by chance with probability about e⁻¹⁰.
pub const MODE_VISITS_JUDGED: f64 = 10.0;

/// An R̂ graded against its stationary `limit`: Fine at or below it ([`mixed`]); Mild up to
/// the same limit with the classical 1.1's room in place of 1.01's, √(limit² + 1.1² − 1.01²);
/// Severe beyond, or infinite (chains stuck apart). None when undefined.
pub fn rhat_severity(value: f64, limit: f64) -> Option<Severity> {
    if value == f64::INFINITY {
        return Some(Severity::Severe);
    }
    Some(match mixed(value, limit)? {
        true => Severity::Fine,
        false if value * value <= limit * limit + (CLASSICAL_RHAT_ROOM - RHAT_ROOM) => {
            Severity::Mild
        }
        false => Severity::Severe,
    })
}

/// A distance against the `mean` ± `sd` that exact draws of the same size score: Fine inside
/// the [`BASELINE_BAND_SDS`] band, Severe when far ([`FAR_ENERGY_SDS`] sd above and `ratio`
/// times the mean: the far rule of `run`'s warnings), Mild between. None when undefined.
pub fn distance_severity(value: f64, mean: f64, sd: f64, ratio: f64) -> Option<Severity> {
    if !(value.is_finite() && mean.is_finite() && sd.is_finite()) {
        return None;
    }
    Some(if value <= mean + BASELINE_BAND_SDS * sd {
        Severity::Fine
    } else if value > mean + FAR_ENERGY_SDS * sd && value > ratio * mean {
        Severity::Severe
    } else {
        Severity::Mild
    })
}

/// The far ratio of the KSD: it is the square root of a V-statistic, so KSD² beyond
/// [`FAR_ENERGY_RATIO`] times the baseline's square is as far as the energy distance's rule.
pub fn ksd_far_ratio() -> f64 {
    FAR_ENERGY_RATIO.sqrt()
}

/// The modes an equal-weight mixture's chains reached together: Fine when all, Mild while at
/// most [`FAR_FROM_TARGET`] of them are missing, Severe beyond. None while too few visits are
/// expected for a missing mode to mean anything ([`MODE_VISITS_JUDGED`]).
pub fn modes_severity(c: &ModeCoverage) -> Option<Severity> {
    if c.modes == 0 || c.chains as f64 * c.per_chain / (c.modes as f64) < MODE_VISITS_JUDGED {
        return None;
    }
    let missing = (c.modes - c.ensemble.min(c.modes)) as f64 / c.modes as f64;
    Some(if missing == 0.0 {
        Severity::Fine
    } else if missing <= FAR_FROM_TARGET {
        Severity::Mild
    } else {
        Severity::Severe
    })
}

/// A statistic with its limit.
#[derive(Clone, Copy, Debug)]
pub struct Limited {
    /// The value.
    pub value: f64,
    /// Its stationary limit.
    pub limit: f64,
}

/// A statistic with what exact draws of the same size score.
#[derive(Clone, Copy, Debug)]
pub struct Baselined {
    /// The value.
    pub value: f64,
    /// The exact draws' mean.
    pub mean: f64,
    /// The exact draws' standard deviation.
    pub sd: f64,
}

/// The instruments of one run, each where measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Instruments {
    /// Split R̂ (bulk) with its limit.
    pub rhat_bulk: Option<Limited>,
    /// Split R̂ (tail) with its limit.
    pub rhat_tail: Option<Limited>,
    /// Nested R̂ with its limit.
    pub nested_rhat: Option<Limited>,
    /// The KSD with its exact-draw baseline.
    pub ksd: Option<Baselined>,
    /// The energy distance with its exact-draw baseline.
    pub energy_distance: Option<Baselined>,
    /// The modes reached, on a mixture.
    pub modes: Option<ModeCoverage>,
}

/// The graded instruments and what to make of them together.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Verdicts {
    /// Each judged instrument's grade.
    pub grades: Vec<(Instrument, Severity)>,
    /// The worst grade; None when nothing was judged.
    pub overall: Option<Severity>,
    /// Instruments that pass but cannot see what a severe one sees: their pass is overruled.
    pub blind: Vec<Instrument>,
    /// Which instruments to trust and why, when they disagree.
    pub trust: Option<String>,
}

impl Verdicts {
    /// The grade of `instrument`, when judged.
    pub fn of(&self, instrument: Instrument) -> Option<Severity> {
        self.grades
            .iter()
            .find(|(i, _)| *i == instrument)
            .map(|(_, s)| *s)
    }

    /// Whether `instrument`'s pass is overruled.
    pub fn is_blind(&self, instrument: Instrument) -> bool {
        self.blind.contains(&instrument)
    }

    /// One line for `run`: "R-hat bulk fine (blind here) · nested R-hat severe · …".
    pub fn line(&self) -> String {
        self.grades
            .iter()
            .map(|(i, s)| {
                let blind = if self.is_blind(*i) {
                    " (blind here)"
                } else {
                    ""
                };
                format!("{} {}{blind}", i.name(), s.word())
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// What each instrument cannot see and which instruments see it, with why.
const BLIND_SPOTS: &[(Instrument, &[Instrument], &str)] = &[
    (
        Instrument::Ksd,
        &[
            Instrument::NestedRhat,
            Instrument::EnergyDistance,
            Instrument::Modes,
        ],
        "a KSD with a fixed kernel cannot see modes the chains never reached (inside a mode the \
         target's score is that mode's own)",
    ),
    (
        Instrument::RhatBulk,
        &[Instrument::EnergyDistance, Instrument::Modes],
        "split R-hat compares the chains with one another, not with the target, and chains \
         stuck alike agree",
    ),
    (
        Instrument::RhatTail,
        &[Instrument::EnergyDistance, Instrument::Modes],
        "split R-hat compares the chains with one another, not with the target, and chains \
         stuck alike agree",
    ),
    (
        Instrument::NestedRhat,
        &[Instrument::EnergyDistance, Instrument::Modes],
        "nested R-hat compares the superchains with one another, and superchains that fell \
         into the same modes agree",
    ),
    (
        Instrument::EnergyDistance,
        &[
            Instrument::RhatBulk,
            Instrument::RhatTail,
            Instrument::NestedRhat,
        ],
        "the energy distance sees only the pooled chains, which can match the target while \
         each chain is stuck in its own region",
    ),
];

/// Grades `instruments` and says which to trust where a pass meets a severe failure it is
/// blind to.
pub fn judge(instruments: &Instruments) -> Verdicts {
    let i = instruments;
    let grades: Vec<(Instrument, Severity)> = [
        (
            Instrument::RhatBulk,
            i.rhat_bulk.and_then(|r| rhat_severity(r.value, r.limit)),
        ),
        (
            Instrument::RhatTail,
            i.rhat_tail.and_then(|r| rhat_severity(r.value, r.limit)),
        ),
        (
            Instrument::NestedRhat,
            i.nested_rhat.and_then(|r| rhat_severity(r.value, r.limit)),
        ),
        (
            Instrument::Ksd,
            i.ksd
                .and_then(|d| distance_severity(d.value, d.mean, d.sd, ksd_far_ratio())),
        ),
        (
            Instrument::EnergyDistance,
            i.energy_distance
                .and_then(|d| distance_severity(d.value, d.mean, d.sd, FAR_ENERGY_RATIO)),
        ),
        (Instrument::Modes, i.modes.as_ref().and_then(modes_severity)),
    ]
    .into_iter()
    .filter_map(|(instrument, grade)| grade.map(|g| (instrument, g)))
    .collect();
    let overall = grades.iter().map(|(_, s)| *s).max();
    let grade = |x: Instrument| grades.iter().find(|(i, _)| *i == x).map(|(_, s)| *s);
    let (mut blind, mut whys, mut seers) = (Vec::new(), Vec::<&str>::new(), Vec::new());
    for (instrument, seen_by, why) in BLIND_SPOTS {
        if grade(*instrument) != Some(Severity::Fine) {
            continue;
        }
        let severe: Vec<Instrument> = seen_by
            .iter()
            .copied()
            .filter(|s| grade(*s) == Some(Severity::Severe))
            .collect();
        if severe.is_empty() {
            continue;
        }
        blind.push(*instrument);
        if !whys.contains(why) {
            whys.push(why);
        }
        for s in severe {
            if !seers.contains(&s) {
                seers.push(s);
            }
        }
    }
    let trust = (!blind.is_empty()).then(|| {
        let names: Vec<&str> = blind.iter().map(|b| b.name()).collect();
        let trusted: Vec<&str> = seers.iter().map(|s| s.name()).collect();
        format!(
            "{} {} fine but cannot see this: {}; trust {}",
            and_list(&names),
            if names.len() == 1 { "reads" } else { "read" },
            whys.join("; "),
            and_list(&trusted)
        )
    });
    Verdicts {
        grades,
        overall,
        blind,
        trust,
    }
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::convergence::nested_level_and_limit;
    use crate::diagnostics::warnings::far_energy_distance;

    /// R̂ 1.089 and 2.78 were the same amber: graded against their own limit they differ.
    #[test]
    fn rhat_is_graded_against_its_own_limit() {
        assert_eq!(rhat_severity(1.03, 1.035), Some(Severity::Fine));
        assert_eq!(rhat_severity(1.089, 1.035), Some(Severity::Mild));
        assert_eq!(rhat_severity(2.78, 1.035), Some(Severity::Severe));
        assert_eq!(rhat_severity(1.089, 1.01), Some(Severity::Mild));
        assert_eq!(rhat_severity(1.11, 1.01), Some(Severity::Severe));
        assert_eq!(
            rhat_severity(f64::INFINITY, f64::NAN),
            Some(Severity::Severe)
        );
        assert_eq!(rhat_severity(f64::NAN, 1.01), None);
        let (_, limit) = nested_level_and_limit(10_000, 16);
        assert_eq!(rhat_severity(14.2, limit), Some(Severity::Severe));
        assert_eq!(rhat_severity(1.05, limit), Some(Severity::Mild));
        assert_eq!(rhat_severity(1.005, limit), Some(Severity::Fine));
    }

    /// One rule for the distances: the strip's 3-sd band is Fine, `run`'s "far" is Severe.
    #[test]
    fn distances_are_graded_against_what_exact_draws_score() {
        let r = ksd_far_ratio();
        assert_eq!(
            distance_severity(0.456, 0.515, 0.096, r),
            Some(Severity::Fine)
        );
        assert_eq!(
            distance_severity(0.9, 0.515, 0.096, r),
            Some(Severity::Mild)
        );
        assert_eq!(
            distance_severity(40.0 * 0.0172, 0.0172, 0.0087, FAR_ENERGY_RATIO),
            Some(Severity::Severe)
        );
        for v in [0.01, 0.05, 0.06, 0.2, 1.0] {
            assert_eq!(
                far_energy_distance(v, 0.0172, 0.0087).is_some(),
                distance_severity(v, 0.0172, 0.0087, FAR_ENERGY_RATIO) == Some(Severity::Severe),
                "{v}"
            );
        }
    }

    /// `cyclical-1-stuck` run headless: the KSD and split R̂ passed beside an energy distance
    /// 40 times its baseline and 1 of 25 modes. Their passes are overruled, and one sentence
    /// says why and what to trust.
    #[test]
    fn a_ksd_that_cannot_see_missing_modes_is_overruled_and_said_so() {
        let v = judge(&Instruments {
            rhat_bulk: Some(Limited {
                value: 1.02,
                limit: 1.035,
            }),
            ksd: Some(Baselined {
                value: 0.246,
                mean: 0.262,
                sd: 0.034,
            }),
            energy_distance: Some(Baselined {
                value: 40.0 * 0.0172,
                mean: 0.0172,
                sd: 0.0087,
            }),
            modes: Some(ModeCoverage {
                per_chain: 1.0,
                ensemble: 1,
                modes: 25,
                chains: 500,
            }),
            ..Instruments::default()
        });
        assert_eq!(v.of(Instrument::Ksd), Some(Severity::Fine));
        assert_eq!(v.overall, Some(Severity::Severe));
        assert!(
            v.is_blind(Instrument::Ksd) && v.is_blind(Instrument::RhatBulk),
            "{v:?}"
        );
        let t = v.trust.clone().expect("they disagree");
        assert!(
            t.contains("cannot see modes the chains never reached")
                && t.contains("trust the energy distance and the modes visited"),
            "{t}"
        );
        assert!(
            v.line().contains("the KSD fine (blind here)"),
            "{}",
            v.line()
        );
        // convergence-gmm25 live: nested R̂ 14.2 beside the same KSD: trust nested R̂.
        let live = judge(&Instruments {
            nested_rhat: Some(Limited {
                value: 14.2,
                limit: nested_level_and_limit(10_000, 16).1,
            }),
            ksd: Some(Baselined {
                value: 0.456,
                mean: 0.515,
                sd: 0.096,
            }),
            ..Instruments::default()
        });
        assert!(live.trust.unwrap().contains("trust nested R-hat"));
        // Instruments that agree say nothing more.
        let fine = judge(&Instruments {
            ksd: Some(Baselined {
                value: 0.5,
                mean: 0.515,
                sd: 0.096,
            }),
            rhat_bulk: Some(Limited {
                value: 1.0,
                limit: 1.01,
            }),
            ..Instruments::default()
        });
        assert_eq!((fine.trust, fine.overall), (None, Some(Severity::Fine)));
    }

    /// 64 tracked chains in one mode each expect 2.6 visits a mode: a miss is not judged.
    #[test]
    fn a_missing_mode_is_judged_only_with_enough_expected_visits() {
        let c = |chains, ensemble| ModeCoverage {
            per_chain: 1.0,
            ensemble,
            modes: 25,
            chains,
        };
        assert_eq!(modes_severity(&c(64, 20)), None);
        assert_eq!(modes_severity(&c(500, 25)), Some(Severity::Fine));
        assert_eq!(modes_severity(&c(500, 21)), Some(Severity::Mild));
        assert_eq!(modes_severity(&c(500, 1)), Some(Severity::Severe));
    }
}
