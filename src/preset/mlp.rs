//! Presets of Bayesian MLP posteriors: `MlpPreset(...)` files. A file is told apart from a
//! 2-D preset by the name of its outer struct ([`AnyPreset`]).

use super::{PresetError, SHIPPED, parse_ron, pretty_ron};
use crate::math::datasets::check_drawn;
use crate::math::mlp::{Architecture, MlpInit, MlpModel, MlpSpec};
use crate::math::{DataSource, Dataset, SamplerKind, SamplerSpec, ScheduleSpec, ranges};
use crate::preset::Preset;
use serde::{Deserialize, Serialize};

/// The single network trained beside the posterior: plain SGD on the same minibatches
/// (MATH.md §3), the baseline a posterior predictive is compared against.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// Learning rate on the summed loss (the N-scaled gradient, as the samplers see it).
    #[serde(default = "d_baseline_h", deserialize_with = "ranges::de_step_size")]
    pub h: f64,
}

fn d_baseline_h() -> f64 {
    1e-3
}

impl Default for Baseline {
    fn default() -> Self {
        Self { h: d_baseline_h() }
    }
}

/// Hints for the app's MLP views (ignored by headless runs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpViewHints {
    /// The parameter drawn in the θ–p and p–ξ portraits and the histogram.
    #[serde(default)]
    pub parameter: u32,
    /// The network whose own decision map is drawn.
    #[serde(default)]
    pub focus_chain: u32,
    /// Networks averaged into the predictive map.
    #[serde(
        default = "d_predictive",
        deserialize_with = "ranges::de_predictive_chains"
    )]
    pub predictive_chains: u32,
    /// Cells per side of the maps.
    #[serde(
        default = "d_resolution",
        deserialize_with = "ranges::de_map_resolution"
    )]
    pub map_resolution: u32,
    /// Sampler steps per rendered frame.
    #[serde(
        default = "d_steps_per_frame",
        deserialize_with = "ranges::de_steps_per_frame"
    )]
    pub steps_per_frame: u32,
    /// Steps between two refreshes of the maps and metrics (always at multiples of it, so
    /// pictures of step N do not depend on timing).
    #[serde(default = "d_map_every", deserialize_with = "ranges::de_record_every")]
    pub map_every: u32,
    /// Draw mode: the first map takes points drawn by hand (written only when on).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draw: bool,
}

fn d_predictive() -> u32 {
    512
}
fn d_resolution() -> u32 {
    48
}
fn d_steps_per_frame() -> u32 {
    2
}
fn d_map_every() -> u32 {
    20
}

impl Default for MlpViewHints {
    fn default() -> Self {
        Self {
            parameter: 0,
            focus_chain: 0,
            predictive_chains: d_predictive(),
            map_resolution: d_resolution(),
            steps_per_frame: d_steps_per_frame(),
            map_every: d_map_every(),
            draw: false,
        }
    }
}

/// A complete, reproducible MLP posterior run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpPreset {
    /// Short title.
    #[serde(default)]
    pub name: String,
    /// What the preset shows.
    #[serde(default)]
    pub description: String,
    /// The lesson, when the preset is part of a lecture.
    #[serde(default, skip_serializing_if = "super::Story::is_empty")]
    pub story: super::Story,
    /// Sampler and its parameters (per weight p and ξ).
    pub sampler: SamplerSpec,
    /// Step-size schedule.
    #[serde(default = "d_schedule")]
    pub schedule: ScheduleSpec,
    /// Data, architecture, prior and minibatch.
    #[serde(default)]
    pub network: MlpSpec,
    /// Number of networks (chains).
    #[serde(default = "d_chains", deserialize_with = "ranges::de_mlp_chains")]
    pub chains: u32,
    /// Steps of a headless run.
    #[serde(default = "d_steps", deserialize_with = "ranges::de_steps")]
    pub steps: u32,
    /// Seed of every random number of the sampler (the data set has its own).
    #[serde(default)]
    pub seed: u64,
    /// Steps between recorded statistics.
    #[serde(
        default = "d_record_every",
        deserialize_with = "ranges::de_record_every"
    )]
    pub record_every: u32,
    /// Initial state.
    #[serde(default)]
    pub init: MlpInit,
    /// The SGD-trained network compared against.
    #[serde(default)]
    pub baseline: Baseline,
    /// View hints for the app.
    #[serde(default)]
    pub view: MlpViewHints,
}

fn d_schedule() -> ScheduleSpec {
    ScheduleSpec::Constant
}
fn d_chains() -> u32 {
    1024
}
fn d_steps() -> u32 {
    2000
}
fn d_record_every() -> u32 {
    50
}

impl MlpPreset {
    /// Parses RON text; `origin` names the source in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<MlpPreset, PresetError> {
        parse_ron(text, origin, MlpPreset::validate)
    }

    /// RON text that parses back to the same preset.
    pub fn to_ron(&self) -> String {
        pretty_ron(self)
    }

    /// Checks what spans several fields; returns the field to point at and the message.
    /// Building the data set (which may read a CSV file) is left to [`Self::build`]; a file's
    /// data is checked when it is loaded ([`AnyPreset::load`]).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.sampler
            .validate()
            .map_err(|m| ("sghmc_noise_estimate", m))?;
        if !crate::math::mlp::NETWORK_SAMPLERS
            .iter()
            .any(|(k, _)| *k == self.sampler.kind)
        {
            return Err((
                "kind",
                "sampler kind Hmc is not available for networks yet (2-D targets only): \
                 choose Atmc, Sgld, Sghmc, Sgnht or Sgd"
                    .into(),
            ));
        }
        self.schedule.validate()?;
        if let DataSource::Drawn { classes, points } = &self.network.data.source {
            // Each point and the class count were checked as they were read; here the labels
            // against the class count.
            check_drawn(*classes, points).map_err(|m| ("classes", m))?;
        }
        let classes = self.network.data.source.classes().unwrap_or(2);
        let arch = Architecture::new(&self.network.hidden, classes, self.network.activation)
            .map_err(|m| ("hidden", m))?;
        if self.view.parameter as usize >= arch.params() {
            return Err((
                "parameter",
                format!(
                    "parameter = {} is out of range: the network has {} parameters",
                    self.view.parameter,
                    arch.params()
                ),
            ));
        }
        if self.view.focus_chain >= self.chains {
            return Err((
                "focus_chain",
                format!(
                    "focus_chain = {} is out of range: there are {} networks",
                    self.view.focus_chain, self.chains
                ),
            ));
        }
        self.story.validate()?;
        self.story.only_divergence_on_networks()?;
        Ok(())
    }

    /// The data set (a CSV file read within the limit of data files) and the runtime model of
    /// the sampled networks.
    pub fn build(&self) -> Result<(MlpModel, Dataset), String> {
        let (posterior, data) = super::data::build_network(&self.network)?;
        let mut sampler = self.sampler.params();
        // A weight ten thousand prior standard deviations out has run away.
        sampler.theta_bound = (1e4 * self.network.prior_scale) as f32;
        let model = MlpModel {
            sampler,
            schedule: self.schedule.schedule(),
            posterior,
        };
        Ok((model, data))
    }

    /// The MLP view's built-in preset: the shipped `two-moons`.
    pub fn default_preset() -> MlpPreset {
        let (_, text) = SHIPPED
            .iter()
            .find(|(n, _)| *n == "two-moons")
            .expect("two-moons is shipped");
        MlpPreset::parse(text, "presets/two-moons.ron").expect("the shipped two-moons parses")
    }

    /// What going from `old` to this preset does to running networks: a new number of
    /// networks or a new network shape rebuilds them, a new seed or initial state restarts
    /// them, everything else (sampler, schedule, prior, minibatch, data, view) changes live.
    /// A data set with another number of classes changes the output layer, so the shape:
    /// where both sources know their classes (generated or drawn: a new drawn class) that
    /// rebuilds here; a CSV file's classes are known only once it is read, and the worker
    /// rebuilds when it finds them changed.
    pub fn change_from(&self, old: &MlpPreset) -> super::Change {
        use super::Change;
        let new_classes = matches!(
            (self.network.data.source.classes(), old.network.data.source.classes()),
            (Some(new), Some(old)) if new != old
        );
        if self == old {
            Change::None
        } else if self.chains != old.chains
            || self.network.hidden != old.network.hidden
            || self.network.activation != old.network.activation
            || new_classes
        {
            Change::Reallocate
        } else if self.seed != old.seed || self.init != old.init {
            Change::Restart
        } else {
            Change::Live
        }
    }

    /// The SGD baseline's model: the same posterior and minibatches, plain SGD at the
    /// baseline's learning rate.
    pub fn baseline_model(&self, model: &MlpModel) -> MlpModel {
        let mut sgd = SamplerSpec::new(SamplerKind::Sgd);
        sgd.h = self.baseline.h;
        let mut sampler = sgd.params();
        sampler.theta_bound = model.sampler.theta_bound;
        MlpModel {
            sampler,
            schedule: ScheduleSpec::Constant.schedule(),
            posterior: model.posterior.clone(),
        }
    }
}

/// What a preset command says of a lecture file: what it is, and how to open it.
fn lecture_message(text: &str, origin: &str) -> String {
    let lessons = super::Lecture::parse(text, origin)
        .map(|l| l.steps.into_iter().map(|s| s.source).collect::<Vec<_>>())
        .unwrap_or_default();
    let first = lessons.first().map_or("lesson-langevin", String::as_str);
    format!(
        "this is a lecture (a sequence of presets, opened in the app), not a preset: open \
         `atmc-lab app` and choose it in the Lectures menu, or run one of its lessons as a \
         preset, e.g. `atmc-lab run {first}`{}",
        if lessons.is_empty() {
            String::new()
        } else {
            format!(" (its lessons: {})", lessons.join(", "))
        }
    )
}

/// Any kind of preset file.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyPreset {
    /// A 2-D toy posterior: `Preset(...)`.
    Toy(Preset),
    /// A Bayesian MLP posterior: `MlpPreset(...)`.
    Mlp(MlpPreset),
    /// Samplers side by side: `Comparison(...)`.
    Comparison(super::Comparison),
    /// Projected SGD on the sphere toy: `SpherePreset(...)`.
    Sphere(super::sphere::SpherePreset),
}

impl AnyPreset {
    /// Parses any kind, told apart by the outer struct name.
    pub fn parse(text: &str, origin: &str) -> Result<AnyPreset, PresetError> {
        match outer_name(text) {
            Some("MlpPreset") => MlpPreset::parse(text, origin).map(AnyPreset::Mlp),
            Some("Comparison") => super::Comparison::parse(text, origin).map(AnyPreset::Comparison),
            Some("SpherePreset") => {
                super::sphere::SpherePreset::parse(text, origin).map(AnyPreset::Sphere)
            }
            Some("Lecture") => Err(PresetError {
                file: origin.to_owned(),
                line: 1,
                column: 1,
                message: lecture_message(text, origin),
            }),
            Some("Sweep") => Err(PresetError {
                file: origin.to_owned(),
                line: 1,
                column: 1,
                message: "this is a sweep file, not a preset: run it with `atmc-lab sweep FILE` \
                          or open it in the app's Sweeps tab"
                    .into(),
            }),
            _ => Preset::parse(text, origin).map(AnyPreset::Toy),
        }
    }

    /// Loads a preset file, or a shipped preset by name (see [`super::preset_source`] for
    /// which wins when both exist).
    /// A file's `Csv(path:)` is resolved relative to the file's folder, and the data file is
    /// read and checked now (see [`super::data`]).
    pub fn load(path: &str) -> Result<AnyPreset, PresetError> {
        let source = super::preset_source(path)?;
        let mut preset = AnyPreset::parse(&source.text, &source.origin)?;
        if let Some(folder) = &source.folder {
            super::data::resolve(&mut preset, super::data::Place::File(folder))
                .map_err(|m| source.error_at("path", m))?;
        }
        Ok(preset)
    }

    /// The title.
    pub fn name(&self) -> &str {
        match self {
            AnyPreset::Toy(p) => &p.name,
            AnyPreset::Mlp(p) => &p.name,
            AnyPreset::Comparison(p) => &p.name,
            AnyPreset::Sphere(p) => &p.name,
        }
    }

    /// What the preset shows.
    pub fn description(&self) -> &str {
        match self {
            AnyPreset::Toy(p) => &p.description,
            AnyPreset::Mlp(p) => &p.description,
            AnyPreset::Comparison(p) => &p.description,
            AnyPreset::Sphere(p) => &p.description,
        }
    }

    /// Steps of a headless run.
    pub fn steps(&self) -> u32 {
        match self {
            AnyPreset::Toy(p) => p.steps,
            AnyPreset::Mlp(p) => p.steps,
            AnyPreset::Comparison(p) => p.base.steps,
            AnyPreset::Sphere(p) => p.steps,
        }
    }

    /// The lesson, if the preset has one.
    pub fn story(&self) -> Option<&super::Story> {
        let story = match self {
            AnyPreset::Toy(p) => &p.story,
            AnyPreset::Mlp(p) => &p.story,
            AnyPreset::Comparison(p) => &p.story,
            AnyPreset::Sphere(p) => &p.story,
        };
        (!story.is_empty()).then_some(story)
    }

    /// This preset as a file should describe it when it was changed after `loaded` was
    /// loaded: the name says "(modified)" and the description says from what, so a saved
    /// file is not taken for the preset it started from. Unchanged, it is returned as is.
    pub fn marked_modified(mut self, loaded: &AnyPreset) -> AnyPreset {
        if self == *loaded {
            return self;
        }
        const MARK: &str = " (modified)";
        // A 2-D preset whose target changed family, or whose typed formula changed, is no
        // longer the loaded preset changed a little: it is named for what now runs, so draws
        // of a typed formula do not say "on a banana".
        let retargeted = match (&self, loaded) {
            (AnyPreset::Toy(p), AnyPreset::Toy(l)) if retargeted(&p.target, &l.target) => {
                let target = match &p.target {
                    crate::math::TargetSpec::Expression { energy, .. } => format!("U = {energy}"),
                    t => format!("the {} target", t.name()),
                };
                Some((p.sampler.kind.name().to_uppercase(), target))
            }
            _ => None,
        };
        let (name, description) = match &mut self {
            AnyPreset::Toy(p) => (&mut p.name, &mut p.description),
            AnyPreset::Mlp(p) => (&mut p.name, &mut p.description),
            AnyPreset::Comparison(p) => (&mut p.name, &mut p.description),
            AnyPreset::Sphere(p) => (&mut p.name, &mut p.description),
        };
        if let Some((sampler, target)) = &retargeted {
            if *name == loaded.name() {
                *name = format!("{sampler} on {target}{MARK}");
            }
            if *description == loaded.description() {
                // The loaded description is dropped: it describes the old target.
                *description = format!(
                    "Changed in the app from \"{}\": the target is now {target}.",
                    loaded.name()
                );
            }
            return self;
        }
        if *name == loaded.name() && !name.ends_with(MARK) {
            name.push_str(MARK);
        }
        if *description == loaded.description() {
            *description = format!(
                "Changed in the app from \"{}\". {}",
                loaded.name(),
                loaded.description()
            )
            .trim_end()
            .to_owned();
        }
        self
    }

    /// RON text that parses back to the same preset.
    pub fn to_ron(&self) -> String {
        match self {
            AnyPreset::Toy(p) => p.to_ron(),
            AnyPreset::Mlp(p) => p.to_ron(),
            AnyPreset::Comparison(p) => p.to_ron(),
            AnyPreset::Sphere(p) => p.to_ron(),
        }
    }
}

/// The identifier before the first `(` after comments and attributes, if any.
pub(crate) fn outer_name(text: &str) -> Option<&str> {
    let mut rest = super::without_bom(text);
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else if rest.starts_with("#!") {
            rest = rest.split_once(']').map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Whether `now` is another target than `loaded` rather than the same one with other numbers:
/// another family, or another typed formula. (The family, not [`TargetSpec::name`], which
/// calls a Gaussian "correlated" once ρ moves off 0.)
///
/// [`TargetSpec::name`]: crate::math::TargetSpec::name
fn retargeted(now: &crate::math::TargetSpec, loaded: &crate::math::TargetSpec) -> bool {
    use crate::math::TargetSpec::Expression;
    match (now, loaded) {
        (Expression { energy: a, .. }, Expression { energy: b, .. }) => a != b,
        _ => std::mem::discriminant(now) != std::mem::discriminant(loaded),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_preset_is_marked_modified() {
        let loaded = AnyPreset::load("default").unwrap();
        assert_eq!(loaded.clone().marked_modified(&loaded), loaded);
        let mut changed = loaded.clone();
        if let AnyPreset::Toy(p) = &mut changed {
            p.sampler.h *= 2.0;
        }
        let marked = changed.marked_modified(&loaded);
        assert_eq!(marked.name(), format!("{} (modified)", loaded.name()));
        assert!(
            marked
                .description()
                .starts_with(&format!("Changed in the app from \"{}\".", loaded.name())),
            "{}",
            marked.description()
        );
        // Saved twice, it stays marked once.
        let again = marked.clone().marked_modified(&loaded);
        assert_eq!(again.name(), marked.name());
        assert_eq!(again.description(), marked.description());
    }

    /// Issue #44 item 6d: a typed formula over the banana is not "the banana, modified".
    #[test]
    fn a_preset_switched_to_another_target_is_named_for_it() {
        let loaded = AnyPreset::load("default").unwrap();
        let AnyPreset::Toy(ring) = AnyPreset::load("expr-ring8").unwrap() else {
            panic!("a 2-D preset")
        };
        let mut changed = loaded.clone();
        if let AnyPreset::Toy(p) = &mut changed {
            p.target = ring.target.clone();
        }
        let marked = changed.clone().marked_modified(&loaded);
        assert!(!marked.name().contains("banana"), "{}", marked.name());
        assert!(
            marked.name().starts_with("ATMC on U = "),
            "{}",
            marked.name()
        );
        assert!(marked.name().ends_with(" (modified)"), "{}", marked.name());
        assert!(
            marked.description().starts_with(&format!(
                "Changed in the app from \"{}\": the target is now U = ",
                loaded.name()
            )),
            "{}",
            marked.description()
        );
        let again = marked.clone().marked_modified(&loaded);
        assert_eq!(again, marked, "marked twice, it is marked once");
        // A correlated Gaussian is still the Gaussian it was loaded as.
        let AnyPreset::Toy(mut g) = changed.clone() else {
            unreachable!()
        };
        g.target = crate::math::TargetSpec::Gaussian {
            sigma1: 1.0,
            sigma2: 1.0,
            rho: 0.0,
            mean: [0.0, 0.0],
        };
        let loaded_g = AnyPreset::Toy(g.clone());
        if let crate::math::TargetSpec::Gaussian { rho, .. } = &mut g.target {
            *rho = 0.5;
        }
        let moved = AnyPreset::Toy(g).marked_modified(&loaded_g);
        assert!(moved.name().ends_with(" (modified)") && !moved.name().contains(" on the "));
    }

    #[test]
    fn outer_names() {
        assert_eq!(
            outer_name("// c\n/* x */ MlpPreset(a: 1)"),
            Some("MlpPreset")
        );
        assert_eq!(
            outer_name("#![enable(implicit_some)]\nPreset()"),
            Some("Preset")
        );
        assert_eq!(outer_name("(sampler: ())"), None);
    }

    #[test]
    fn minimal_mlp_preset_has_defaults() {
        let p = match AnyPreset::parse("MlpPreset(sampler: (kind: Atmc))", "min.ron").unwrap() {
            AnyPreset::Mlp(p) => p,
            other => panic!("{other:?}"),
        };
        assert_eq!(p.chains, 1024);
        assert_eq!(p.network.hidden, vec![16, 16]);
        let (model, data) = p.build().unwrap();
        assert_eq!(model.posterior.params(), 354);
        assert_eq!(data.train_x.len() + data.test_x.len(), 400);
    }

    fn drawn_preset(classes: u32, points: Vec<(f32, f32, u32)>) -> MlpPreset {
        let mut p = MlpPreset::default_preset();
        p.network.data.source = DataSource::Drawn { classes, points };
        p
    }

    #[test]
    fn drawn_data_round_trips_through_a_saved_preset() {
        let points: Vec<_> = (0..20)
            .map(|i| (i as f32 * 0.25 - 2.5, (i % 7) as f32 * 0.5 - 1.0, i % 3))
            .collect();
        let mut p = drawn_preset(3, points);
        p.view.draw = true;
        let text = p.to_ron();
        assert!(text.contains("Drawn(classes: 3, points: [("), "{text}");
        assert!(text.contains("draw: true"), "{text}");
        let back = MlpPreset::parse(&text, "saved.ron").unwrap();
        assert_eq!(back, p);
        // Draw mode off is not written: existing presets read and write as before.
        p.view.draw = false;
        assert!(!p.to_ron().contains("draw:"));
        let (model, data) = back.build().unwrap();
        assert_eq!((data.classes, data.len()), (3, 20));
        assert_eq!(model.posterior.arch.classes(), 3);
    }

    #[test]
    fn drawn_labels_beyond_the_classes_are_refused_where_the_classes_are() {
        let text = "MlpPreset(sampler: (kind: Atmc), network: (data: (\n  source: Drawn(\n    \
                    classes: 2,\n    points: [(0.0, 0.0, 0), (1.0, 1.0, 3)]))))";
        let e = AnyPreset::parse(text, "drawn.ron").unwrap_err().to_string();
        assert!(
            e.starts_with("drawn.ron:3:5:") && e.contains("drawn point 2") && e.contains("label 3"),
            "{e}"
        );
        let text = "MlpPreset(sampler: (kind: Atmc), network: (data: (source: Drawn(\n classes: 2,\n \
                    points: [(0.0, 0.0, 0),\n (NaN, 1.0, 1)]))))";
        let e = AnyPreset::parse(text, "drawn.ron").unwrap_err().to_string();
        // Where RON read the list: its start or its end.
        assert!(
            (e.starts_with("drawn.ron:3:") || e.starts_with("drawn.ron:4:"))
                && e.contains("drawn point 2")
                && e.contains("not a finite number"),
            "{e}"
        );
    }

    #[test]
    fn a_new_drawn_class_rebuilds_the_networks_and_a_new_point_changes_live() {
        use crate::preset::Change;
        let points: Vec<_> = (0..10).map(|i| (i as f32 * 0.3, 0.5, i % 2)).collect();
        let old = drawn_preset(2, points.clone());
        let mut more = points.clone();
        more.push((-1.0, -1.0, 1));
        assert_eq!(drawn_preset(2, more).change_from(&old), Change::Live);
        let mut fewer = points.clone();
        fewer.remove(3);
        assert_eq!(drawn_preset(2, fewer).change_from(&old), Change::Live);
        let mut third = points.clone();
        third.push((-1.0, -1.0, 2));
        assert_eq!(drawn_preset(3, third).change_from(&old), Change::Reallocate);
        // The same goes for generated sets that know their classes, not for CSV files.
        let mut blobs = old.clone();
        blobs.network.data.source = DataSource::Blobs { classes: 3 };
        assert_eq!(blobs.change_from(&old), Change::Reallocate);
        let mut csv = old.clone();
        csv.network.data.source = DataSource::Csv {
            path: "x.csv".into(),
        };
        assert_eq!(csv.change_from(&old), Change::Live);
        // Below the minimum the preset is valid (the view waits), but it does not build.
        let small = drawn_preset(2, points[..5].to_vec());
        assert!(small.validate().is_ok());
        let e = small.build().unwrap_err();
        assert!(e.contains("draw 3 more points"), "{e}");
    }

    #[test]
    fn errors_point_at_the_field() {
        let text = "MlpPreset(\n  sampler: (kind: Atmc),\n  network: (hidden: [8, 40]),\n)";
        let e = AnyPreset::parse(text, "bad.ron").unwrap_err().to_string();
        assert!(
            e.starts_with("bad.ron:3:") && e.contains("allowed 1 to 32"),
            "{e}"
        );
        let text = "MlpPreset(sampler: (kind: Atmc), chains: 70000)";
        let e = AnyPreset::parse(text, "bad.ron").unwrap_err().to_string();
        assert!(e.contains("networks = 70000 is out of range"), "{e}");
        let text = "MlpPreset(sampler: (kind: Atmc),\n view: (parameter: 400))";
        let e = AnyPreset::parse(text, "bad.ron").unwrap_err().to_string();
        assert!(
            e.starts_with("bad.ron:2:") && e.contains("354 parameters"),
            "{e}"
        );
    }
}
