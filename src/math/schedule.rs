//! Step-size schedules: constant, and the cyclical schedule of Zhang et al. (2019), MATH.md §3.

use serde::{Deserialize, Serialize};

/// A step-size schedule.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum ScheduleSpec {
    /// h_k = h₀.
    Constant,
    /// Cosine cycles with an exploration stage (no injected noise) at the start of each.
    Cyclical {
        /// Total steps K the cycles are spread over.
        #[serde(deserialize_with = "crate::math::ranges::de_steps")]
        total_steps: u32,
        /// Number of cycles M.
        #[serde(deserialize_with = "crate::math::ranges::de_cycles")]
        cycles: u32,
        /// Fraction of each cycle spent exploring (β in the paper; 0.8 by default).
        #[serde(
            default = "default_explore",
            deserialize_with = "crate::math::ranges::de_fraction"
        )]
        explore_fraction: f64,
        /// What the thermostat ξ does while exploring: frozen (correct, the default) or
        /// running toward the exploration stage's temperature 0, which ratchets ξ up from
        /// cycle to cycle (MATH.md §3.1). Left out of the serialised preset when frozen, so
        /// that presets and sweep hashes written before the switch existed are unchanged.
        #[serde(default, skip_serializing_if = "ExploringThermostat::is_frozen")]
        thermostat_while_exploring: ExploringThermostat,
    },
}

/// What a thermostat (ATMC's, SGNHT's ξ) does during a cyclical schedule's exploration stage
/// (MATH.md §3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExploringThermostat {
    /// ξ is not updated while exploring (correct).
    #[default]
    Frozen,
    /// ξ keeps being updated while exploring, toward the stage's temperature 0 (no noise is
    /// injected): dξ = m K'(p)² ≥ 0, the ratchet MATH.md §3.1 warns of.
    Running,
}

impl ExploringThermostat {
    /// Both choices with the names the controls show.
    pub const ALL: [(ExploringThermostat, &'static str); 2] = [
        (ExploringThermostat::Frozen, "frozen"),
        (ExploringThermostat::Running, "running"),
    ];

    /// Whether this is the correct, default choice (serde's `skip_serializing_if`).
    pub fn is_frozen(&self) -> bool {
        *self == ExploringThermostat::Frozen
    }
}

fn default_explore() -> f64 {
    0.8
}

/// Runtime form, identical on CPU and GPU: all arithmetic in f32 on the same integers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Cycle length ⌈K/M⌉ in steps; 0 for a constant schedule.
    pub cycle_len: u32,
    /// Exploration fraction.
    pub explore_fraction: f32,
    /// The thermostat keeps running while exploring (the ratchet of MATH.md §3.1) instead of
    /// being frozen.
    pub thermostat_running: bool,
}

impl ScheduleSpec {
    /// Checks what the field ranges cannot: a cyclical schedule needs at least one step and
    /// at least two steps per cycle (otherwise every step explores and nothing is sampled).
    /// Returns the field to point at and the message.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let ScheduleSpec::Cyclical {
            total_steps,
            cycles,
            ..
        } = *self
        {
            if total_steps == 0 {
                return Err((
                    "total_steps",
                    "total_steps = 0: a cyclical schedule needs at least one step".into(),
                ));
            }
            if 2 * u64::from(cycles) > u64::from(total_steps) {
                return Err((
                    "cycles",
                    format!(
                        "cycles = {cycles} over total_steps = {total_steps}: each cycle needs at \
                         least two steps (an exploration and a sampling stage)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The runtime schedule.
    pub fn schedule(&self) -> Schedule {
        match *self {
            ScheduleSpec::Constant => Schedule {
                cycle_len: 0,
                explore_fraction: 0.0,
                thermostat_running: false,
            },
            ScheduleSpec::Cyclical {
                total_steps,
                cycles,
                explore_fraction,
                thermostat_while_exploring,
            } => Schedule {
                cycle_len: total_steps.div_ceil(cycles.max(1)).max(1),
                explore_fraction: explore_fraction as f32,
                thermostat_running: thermostat_while_exploring == ExploringThermostat::Running,
            },
        }
    }
}

impl Schedule {
    /// Step size and whether the step explores (no injected noise, thermostat frozen unless
    /// [`Self::thermostat_running`]: see `SamplerParams::phase`) at global step index `step` (0-based; the paper's k = step + 1).
    #[inline(always)]
    pub fn at(&self, h0: f32, step: u32) -> (f32, bool) {
        if self.cycle_len == 0 {
            return (h0, false);
        }
        let r = (step % self.cycle_len) as f32 / self.cycle_len as f32;
        let h = 0.5 * h0 * ((std::f32::consts::PI * r).cos() + 1.0);
        (h, r < self.explore_fraction)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclical_schedule_follows_the_formula() {
        let s = ScheduleSpec::Cyclical {
            total_steps: 1000,
            cycles: 4,
            explore_fraction: 0.8,
            thermostat_while_exploring: ExploringThermostat::Frozen,
        }
        .schedule();
        assert_eq!(s.cycle_len, 250);
        assert_eq!(s.at(0.1, 0), (0.1, true));
        let (h, explore) = s.at(0.1, 125);
        assert!((h - 0.05).abs() < 1e-7 && explore);
        let (h, explore) = s.at(0.1, 249);
        assert!(h < 1e-5 && !explore);
        assert_eq!(s.at(0.1, 250), (0.1, true));
        assert!(!s.at(0.1, 200).1 && s.at(0.1, 199).1);
        assert_eq!(ScheduleSpec::Constant.schedule().at(0.3, 77), (0.3, false));
    }
}
