//! Presets of the sphere toy (MATH.md §5.4): `SpherePreset(...)` files.

use super::{PresetError, Story, parse_ron, pretty_ron};
use crate::math::sphere::{SphereOptimizer, SphereProblem};
use serde::{Deserialize, Serialize};

/// Projected SGD on the unit sphere, many chains from one start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "SpherePreset")]
pub struct SpherePreset {
    /// Short title.
    #[serde(default)]
    pub name: String,
    /// What the preset shows.
    #[serde(default)]
    pub description: String,
    /// A lesson told beside the view.
    #[serde(default, skip_serializing_if = "Story::is_empty")]
    pub story: Story,
    /// Overparameterised (interpolating) or underparameterised objects.
    #[serde(default)]
    pub problem: SphereProblem,
    /// Learning rate, momentum and batch size.
    #[serde(default)]
    pub sampler: SphereOptimizer,
    /// Number of chains.
    #[serde(
        default = "default_chains",
        deserialize_with = "crate::math::ranges::de_chains"
    )]
    pub chains: u32,
    /// Steps per run.
    #[serde(
        default = "default_steps",
        deserialize_with = "crate::math::ranges::de_steps"
    )]
    pub steps: u32,
    /// Seed of the minibatch draws.
    #[serde(default)]
    pub seed: u64,
}

fn default_chains() -> u32 {
    4000
}

fn default_steps() -> u32 {
    2000
}

impl Default for SpherePreset {
    fn default() -> Self {
        Self {
            name: String::new(),
            description: String::new(),
            story: Story::default(),
            problem: SphereProblem::default(),
            sampler: SphereOptimizer::default(),
            chains: default_chains(),
            steps: default_steps(),
            seed: 0,
        }
    }
}

impl SpherePreset {
    /// Parses and checks RON text.
    pub fn parse(text: &str, origin: &str) -> Result<SpherePreset, PresetError> {
        parse_ron(text, origin, SpherePreset::validate)
    }

    /// Checks what its fields' ranges do not: a sphere preset's lesson has no challenge.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.story.only_judged_on_2d()
    }

    /// RON text that parses back to the same preset.
    pub fn to_ron(&self) -> String {
        pretty_ron(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_file_parses_and_round_trips() {
        let p = SpherePreset::parse(
            "SpherePreset(problem: Underparameterised, sampler: (h: 0.05, batch: 2))",
            "t.ron",
        )
        .unwrap();
        assert_eq!(p.problem, SphereProblem::Underparameterised);
        assert_eq!(p.sampler.batch, 2);
        assert_eq!(p.chains, 4000);
        assert_eq!(SpherePreset::parse(&p.to_ron(), "again").unwrap(), p);
        let e = SpherePreset::parse("SpherePreset(sampler: (h: 0.0))", "t.ron").unwrap_err();
        assert!(e.to_string().contains("learning rate"), "{e}");
        let e = SpherePreset::parse("SpherePreset(sampler: (h: 0.1, momentum: 1.0))", "t.ron")
            .unwrap_err();
        assert!(e.to_string().contains("momentum"), "{e}");
    }
}
