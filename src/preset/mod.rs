//! Presets: everything needed to reproduce a run (or an animation) in one RON file.
//!
//! Parsing reports the first problem as `file:line:column: message`, with the allowed range
//! for numbers out of range; it never panics. Messages are one line: what a user wrote is
//! echoed with its control characters escaped and cut when long.
//!
//! Files are read within [`crate::fsutil::TEXT_FILES`]' limit (presets, lectures, sweeps:
//! 4 MB) and data files within [`crate::fsutil::DATA_FILES`]' (64 MB), as regular files only.

pub mod data;
pub mod fields;
pub mod mlp;
pub mod sphere;
pub mod story;
pub mod sweep_file;

pub use mlp::{AnyPreset, MlpPreset};
pub use story::{Column, Comparison, ControlGroup, Lecture, Step, Story};

use crate::math::{InitSpec, Model, NoiseSpec, SamplerSpec, ScheduleSpec, TargetSpec, ranges};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// Hints for the app's views (ignored by headless runs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViewHints {
    /// Coordinate i of the θᵢ–pᵢ and pᵢ–ξᵢ portraits.
    #[serde(default, deserialize_with = "ranges::de_coordinate")]
    pub coordinate: u32,
    /// Logarithmic density scale.
    #[serde(default = "yes")]
    pub log_scale: bool,
    /// Chains drawn with trails.
    #[serde(default = "d_highlighted", deserialize_with = "ranges::de_highlighted")]
    pub highlighted_chains: u32,
    /// Sampler steps per rendered frame.
    #[serde(
        default = "d_steps_per_frame",
        deserialize_with = "ranges::de_steps_per_frame"
    )]
    pub steps_per_frame: u32,
    /// Slow motion: at most this many steps per second (0: as fast as the frames go).
    #[serde(default, deserialize_with = "ranges::de_steps_per_second")]
    pub steps_per_second: f64,
    /// What the plots below the portraits show.
    #[serde(default)]
    pub plots: PlotPanel,
    /// Whether the convergence plots' rank-plot drawer is open.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rank_plots: bool,
}

/// Frames per second the speed is quoted at (a display refreshes about this often).
pub const FRAMES_PER_SECOND: f64 = 60.0;

impl ViewHints {
    /// The speed in steps per second: slow motion's rate, or the steps per frame at
    /// [`FRAMES_PER_SECOND`].
    pub fn speed(&self) -> f64 {
        if self.steps_per_second > 0.0 {
            self.steps_per_second
        } else {
            FRAMES_PER_SECOND * f64::from(self.steps_per_frame)
        }
    }

    /// Sets the speed in steps per second: below one step a frame it becomes slow motion
    /// (one step a tick, ticks paced), above it steps per frame.
    pub fn set_speed(&mut self, steps_per_second: f64) {
        let v = steps_per_second.clamp(1.0, FRAMES_PER_SECOND * 1e5);
        if v < FRAMES_PER_SECOND {
            self.steps_per_frame = 1;
            self.steps_per_second = v;
        } else {
            self.steps_per_frame = (v / FRAMES_PER_SECOND).round() as u32;
            self.steps_per_second = 0.0;
        }
    }
}

/// What the 2-D view plots below its portraits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlotPanel {
    /// Marginals and time series (kinetic temperature, ξ, divergence, distance, step size).
    #[default]
    TimeSeries,
    /// The growth of |p|, |θ| and ξ on log axes against the predicted slope: the momentum
    /// explosion in slow motion.
    Growth,
    /// The convergence instruments: split and nested R̂, ESS, KSD and rank plots.
    Convergence,
}

fn yes() -> bool {
    true
}
fn d_highlighted() -> u32 {
    64
}
fn d_steps_per_frame() -> u32 {
    5
}

impl Default for ViewHints {
    fn default() -> Self {
        Self {
            coordinate: 0,
            log_scale: true,
            highlighted_chains: d_highlighted(),
            steps_per_frame: d_steps_per_frame(),
            steps_per_second: 0.0,
            plots: PlotPanel::TimeSeries,
            rank_plots: false,
        }
    }
}

/// How a running view takes an edited preset. Each kind of preset decides it in one place
/// ([`Preset::change_from`], [`MlpPreset::change_from`]); the workers only carry it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// Nothing changed.
    None,
    /// Parameters change under the running chains (sliders).
    Live,
    /// The chains start over from their initial state.
    Restart,
    /// The engine is rebuilt (a new number of chains, a new network shape).
    Reallocate,
}

/// A complete, reproducible run description.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Short title.
    #[serde(default)]
    pub name: String,
    /// What the preset shows.
    #[serde(default)]
    pub description: String,
    /// The lesson, when the preset is part of a lecture.
    #[serde(default, skip_serializing_if = "Story::is_empty")]
    pub story: Story,
    /// Sampler and its parameters.
    pub sampler: SamplerSpec,
    /// Target posterior.
    pub target: TargetSpec,
    /// Synthetic gradient noise.
    #[serde(default = "d_noise")]
    pub noise: NoiseSpec,
    /// Step-size schedule.
    #[serde(default = "d_schedule")]
    pub schedule: ScheduleSpec,
    /// Number of chains.
    #[serde(default = "d_chains", deserialize_with = "ranges::de_chains")]
    pub chains: u32,
    /// Steps of a headless run.
    #[serde(default = "d_steps", deserialize_with = "ranges::de_steps")]
    pub steps: u32,
    /// Seed of every random number.
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
    pub init: InitSpec,
    /// View hints for the app.
    #[serde(default)]
    pub view: ViewHints,
}

fn d_noise() -> NoiseSpec {
    NoiseSpec::None
}
fn d_schedule() -> ScheduleSpec {
    ScheduleSpec::Constant
}
fn d_chains() -> u32 {
    10_000
}
fn d_steps() -> u32 {
    2_000
}
fn d_record_every() -> u32 {
    10
}

/// A preset problem located in its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetError {
    /// File name (or `<built-in NAME>`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            ranges::escaped(&self.file),
            self.line,
            self.column,
            one_line(&self.message)
        )
    }
}

/// Characters of a message kept whole; beyond, it is cut (a 170 kB line helps nobody).
const MESSAGE_CHARS: usize = 1000;
/// Characters of one quoted piece of input (between backticks or double quotes) kept whole.
const QUOTED_CHARS: usize = 60;

/// A message as one readable line: control characters escaped (a newline, a terminal's
/// escape sequences that a name could carry), every quoted piece of input longer than
/// [`QUOTED_CHARS`] cut with an ellipsis, and the whole cut at [`MESSAGE_CHARS`].
fn one_line(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * MESSAGE_CHARS));
    let mut quote: Option<char> = None;
    let mut quoted = 0usize;
    let mut written = 0usize;
    for c in message.chars() {
        if written >= MESSAGE_CHARS {
            out.push_str(&format!(
                "… ({} characters in all)",
                message.chars().count()
            ));
            break;
        }
        match quote {
            Some(q) if c == q => {
                if quoted > QUOTED_CHARS {
                    out.push_str(&format!("… ({quoted} characters)"));
                }
                quote = None;
            }
            None if c == '`' || c == '"' => {
                quote = Some(c);
                quoted = 0;
            }
            Some(_) => {
                quoted += 1;
                if quoted > QUOTED_CHARS {
                    continue;
                }
            }
            None => {}
        }
        out.push_str(&ranges::printable(&c.to_string()));
        written += 1;
    }
    if quote.is_some() && quoted > QUOTED_CHARS && written < MESSAGE_CHARS {
        // A quote left open (a name holding a quote mark) ran to the end.
        out.push_str(&format!("… ({quoted} characters)"));
    }
    out
}

impl std::error::Error for PresetError {}

/// Presets shipped in `presets/`, compiled in so they work from any directory.
pub const SHIPPED: &[(&str, &str)] = &[
    ("default", include_str!("../../presets/default.ron")),
    ("printed", include_str!("../../presets/printed.ron")),
    (
        "thermostat-vs-noise",
        include_str!("../../presets/thermostat-vs-noise.ron"),
    ),
    (
        "cyclical-gmm25",
        include_str!("../../presets/cyclical-gmm25.ron"),
    ),
    ("logistic", include_str!("../../presets/logistic.ron")),
    ("student-t", include_str!("../../presets/student-t.ron")),
    (
        "missing-mass",
        include_str!("../../presets/missing-mass.ron"),
    ),
    ("funnel", include_str!("../../presets/funnel.ron")),
    ("hmc-banana", include_str!("../../presets/hmc-banana.ron")),
    (
        "convergence-gmm25",
        include_str!("../../presets/convergence-gmm25.ron"),
    ),
    (
        "convergence-gaussian",
        include_str!("../../presets/convergence-gaussian.ron"),
    ),
    ("expr-ring8", include_str!("../../presets/expr-ring8.ron")),
    ("expr-funnel", include_str!("../../presets/expr-funnel.ron")),
    (
        "expr-himmelblau",
        include_str!("../../presets/expr-himmelblau.ron"),
    ),
    (
        "expr-double-banana",
        include_str!("../../presets/expr-double-banana.ron"),
    ),
    (
        "expr-sombrero",
        include_str!("../../presets/expr-sombrero.ron"),
    ),
    ("two-moons", include_str!("../../presets/two-moons.ron")),
    ("drawn-xor", include_str!("../../presets/drawn-xor.ron")),
    (
        "thermo-quadratic",
        include_str!("../../presets/thermo-quadratic.ron"),
    ),
    ("sphere-op", include_str!("../../presets/sphere-op.ron")),
    ("sphere-up", include_str!("../../presets/sphere-up.ron")),
    ("mlp-up", include_str!("../../presets/mlp-up.ron")),
    ("mlp-op", include_str!("../../presets/mlp-op.ron")),
    (
        "lesson-langevin",
        include_str!("../../presets/lesson-langevin.ron"),
    ),
    (
        "lesson-momentum",
        include_str!("../../presets/lesson-momentum.ron"),
    ),
    (
        "lesson-explosion",
        include_str!("../../presets/lesson-explosion.ron"),
    ),
    (
        "lesson-thermostat",
        include_str!("../../presets/lesson-thermostat.ron"),
    ),
    (
        "lesson-defects",
        include_str!("../../presets/lesson-defects.ron"),
    ),
    (
        "lesson-state-noise",
        include_str!("../../presets/lesson-state-noise.ron"),
    ),
    (
        "lesson-cyclical",
        include_str!("../../presets/lesson-cyclical.ron"),
    ),
    (
        "lesson-hyperbolic",
        include_str!("../../presets/lesson-hyperbolic.ron"),
    ),
    ("lesson-mlp", include_str!("../../presets/lesson-mlp.ron")),
    (
        "lesson-convergence",
        include_str!("../../presets/lesson-convergence.ron"),
    ),
    (
        "spirals-printed",
        include_str!("../../presets/spirals-printed.ron"),
    ),
    (
        "cyclical-1-stuck",
        include_str!("../../presets/cyclical-1-stuck.ron"),
    ),
    (
        "cyclical-2-large-small",
        include_str!("../../presets/cyclical-2-large-small.ron"),
    ),
    (
        "cyclical-3-stages",
        include_str!("../../presets/cyclical-3-stages.ron"),
    ),
    (
        "cyclical-4-thermostat",
        include_str!("../../presets/cyclical-4-thermostat.ron"),
    ),
    (
        "cyclical-6-cycles",
        include_str!("../../presets/cyclical-6-cycles.ron"),
    ),
    (
        "cyclical-8-nested",
        include_str!("../../presets/cyclical-8-nested.ron"),
    ),
    (
        "free-energy-1-quadratic",
        include_str!("../../presets/free-energy-1-quadratic.ron"),
    ),
    (
        "free-energy-2-large-eta",
        include_str!("../../presets/free-energy-2-large-eta.ron"),
    ),
    (
        "free-energy-3-gibbs",
        include_str!("../../presets/free-energy-3-gibbs.ron"),
    ),
    (
        "free-energy-4-collapse",
        include_str!("../../presets/free-energy-4-collapse.ron"),
    ),
    (
        "free-energy-5-batch",
        include_str!("../../presets/free-energy-5-batch.ron"),
    ),
    (
        "free-energy-6-circular",
        include_str!("../../presets/free-energy-6-circular.ron"),
    ),
    (
        "cyclical-7-mlp",
        include_str!("../../presets/cyclical-7-mlp.ron"),
    ),
    (
        "bayesian-dl-2-calibration",
        include_str!("../../presets/bayesian-dl-2-calibration.ron"),
    ),
    (
        "bayesian-dl-3-printed",
        include_str!("../../presets/bayesian-dl-3-printed.ron"),
    ),
    (
        "bayesian-dl-5-resnet",
        include_str!("../../presets/bayesian-dl-5-resnet.ron"),
    ),
];

impl Preset {
    /// Whether the gradients carry noise: added noise, or minibatches of a data set.
    pub fn gradient_noise(&self) -> bool {
        let minibatches = match self.target {
            crate::math::TargetSpec::Logistic {
                batch_size,
                data_points,
                ..
            } => batch_size != 0 && batch_size < data_points,
            _ => false,
        };
        minibatches || !matches!(self.noise, crate::math::NoiseSpec::None)
    }

    /// Parses RON text; `origin` names the source in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Preset, PresetError> {
        parse_ron(text, origin, Preset::validate)
    }

    /// Loads a preset file, or a shipped preset by name (`default`, `printed`, …); see
    /// [`preset_source`] for which wins when both exist.
    pub fn load(path: &str) -> Result<Preset, PresetError> {
        let source = preset_source(path)?;
        Preset::parse(&source.text, &source.origin)
    }

    /// The built-in default preset.
    pub fn default_preset() -> Preset {
        Preset::parse(SHIPPED[0].1, "presets/default.ron").expect("shipped default preset parses")
    }

    /// RON text that parses back to the same preset.
    pub fn to_ron(&self) -> String {
        pretty_ron(self)
    }

    /// Checks constraints spanning several fields. Returns the field to point at and the
    /// message.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.sampler
            .validate()
            .map_err(|m| ("sghmc_noise_estimate", m))?;
        self.schedule.validate()?;
        self.init
            .validate(self.chains)
            .map_err(|m| ("superchains", m))?;
        self.target.check().map_err(|m| ("energy", m))?;
        self.story.validate()?;
        if let Some(c) = &self.story.challenge {
            c.check_target(self.target.countable_modes(), self.target.name())?;
        }
        if let Some(c) = &self.story.challenge
            && c.column != 0
        {
            return Err((
                "column",
                "a 2-D preset has one run: the challenge's column is 0".into(),
            ));
        }
        Ok(())
    }

    /// What going from `old` to this preset does to running chains: a new number of chains
    /// reallocates them, a new seed or initial state restarts them, everything else (sampler,
    /// target, noise, schedule, view) changes live.
    pub fn change_from(&self, old: &Preset) -> Change {
        if self == old {
            Change::None
        } else if self.chains != old.chains {
            Change::Reallocate
        } else if self.seed != old.seed || self.init != old.init {
            Change::Restart
        } else {
            Change::Live
        }
    }

    /// This preset, checked: the only way to a [`Validated`] one, from which its model is
    /// built.
    pub fn validated(self) -> Result<Validated<Preset>, (&'static str, String)> {
        self.validate()?;
        Ok(Validated(self))
    }
}

/// A preset that passed its checks ([`Preset::validated`] is the only way to make one):
/// what needs a whole preset — building its model, starting a run — takes this, so an
/// unchecked typed formula can never reach a target's build. It reads as the preset it holds;
/// changing it means taking the preset out and checking it again.
#[derive(Clone, Debug, PartialEq)]
pub struct Validated<P>(P);

impl<P> std::ops::Deref for Validated<P> {
    type Target = P;

    fn deref(&self) -> &P {
        &self.0
    }
}

impl<P> Validated<P> {
    /// The preset, to change (and check again).
    pub fn into_inner(self) -> P {
        self.0
    }
}

impl Validated<Preset> {
    /// The runtime model of this preset.
    pub fn model(&self) -> Model {
        self.model_on(self.built_target())
    }

    /// The preset's target, built.
    pub fn built_target(&self) -> crate::math::Target {
        // `validate` built an expression target (its truth is cached) and every other family
        // builds from numbers in range: this cannot fail.
        self.target
            .build()
            .unwrap_or_else(|m| unreachable!("a validated preset's target builds: {m}"))
    }

    /// [`Self::model`] on a target already built from `self.target`: building one can be
    /// costly (a logistic posterior's quadrature passes over all its data), so a run builds it
    /// once.
    ///
    /// HMC is the exact reference: it runs on the full-batch gradient (a logistic target's
    /// whole data set) without the preset's synthetic gradient noise (MATH.md §10).
    pub fn model_on(&self, mut target: crate::math::Target) -> Model {
        let mut sampler = self.sampler.params();
        sampler.theta_bound = target.theta_bound();
        let exact = self.sampler.kind == crate::math::SamplerKind::Hmc;
        let mut noise = self.noise.model();
        if exact {
            target.use_full_batch();
            noise = crate::math::noise::NoiseSpec::None.model();
        }
        Model {
            sampler,
            target,
            noise,
            schedule: self.schedule.schedule(),
        }
    }
}

/// Parses RON text into a preset of either kind and checks it with `validate`; a problem is
/// reported at its line and column (`validate` names the field to point at).
fn parse_ron<'a, T: Deserialize<'a>>(
    text: &'a str,
    origin: &str,
    validate: impl FnOnce(&T) -> Result<(), (&'static str, String)>,
) -> Result<T, PresetError> {
    // Editors on Windows may start a UTF-8 file with a byte-order mark; RON would stop at it.
    let text = without_bom(text);
    let preset: T = ron::from_str(text).map_err(|e| PresetError {
        file: origin.to_string(),
        line: e.span.start.line.max(1),
        column: e.span.start.col.max(1),
        message: ron_message(text, &e),
    })?;
    validate(&preset).map_err(|(field, message)| {
        let (line, column) = locate(text, field);
        PresetError {
            file: origin.to_string(),
            line,
            column,
            message,
        }
    })?;
    Ok(preset)
}

/// `text` without a leading UTF-8 byte-order mark.
pub(crate) fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// How deep RON reads nested brackets before it refuses (`ron::Options`' default).
const RON_DEPTH: usize = 128;

/// The line of `text` an error position is on, and the byte offset of its column in it.
fn line_at(text: &str, position: ron::error::Position) -> (&str, usize) {
    let line = text
        .lines()
        .nth(position.line.saturating_sub(1))
        .unwrap_or("");
    let col = line
        .char_indices()
        .nth(position.col.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i);
    (line, col)
}

/// The field a value at `position` belongs to (`superchains` in `superchains: 16`) and the
/// value as written, up to the next `,` or `)`, when they are on the line.
fn field_and_value(text: &str, position: ron::error::Position) -> Option<(&str, &str)> {
    let (line, col) = line_at(text, position);
    let colon = line[..col].rfind(':')?;
    let before = line[..colon].trim_end();
    let start = before
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let name = &before[start..];
    let value = line[colon + 1..]
        .split([',', ')'])
        .next()
        .unwrap_or("")
        .trim();
    (!name.is_empty() && !value.is_empty()).then_some((name, value))
}

/// Whether RON stopped at the fraction of a number (`1.5` where a whole number goes: it reads
/// `1` and then expects a comma at the point).
fn fraction_at(text: &str, position: ron::error::Position) -> bool {
    let (line, col) = line_at(text, position);
    let (before, after) = line.split_at(col);
    before.ends_with(|c: char| c.is_ascii_digit())
        && after.starts_with('.')
        && after[1..].starts_with(|c: char| c.is_ascii_digit())
}

/// The range of a whole-number type as serde names it (`u32`), for a message.
fn type_range(expected: &str) -> Option<String> {
    let max = match expected {
        "u8" => u64::from(u8::MAX),
        "u16" => u64::from(u16::MAX),
        "u32" => u64::from(u32::MAX),
        "u64" | "usize" => u64::MAX,
        _ => return None,
    };
    Some(format!("a whole number from 0 to {max}"))
}

/// A serde message with the range of every whole-number type it expects: "expected u32"
/// becomes "expected a whole number from 0 to 4294967295 (u32)".
pub(crate) fn with_type_ranges(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(i) = rest.find("expected ") {
        let (before, after) = rest.split_at(i + "expected ".len());
        out.push_str(before);
        let word_end = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        let (word, tail) = after.split_at(word_end);
        match type_range(word) {
            Some(range) => out.push_str(&format!("{range} ({word})")),
            None => out.push_str(word),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// RON's message for a parse error, with what it leaves out where that helps: an integer
/// too large for its field names the number (shortened) and the ranges of the whole-number
/// fields; a value of the wrong type names the type's range; an optional field says how to
/// write it; nesting too deep says so in a lecturer's words.
fn ron_message(text: &str, e: &ron::error::SpannedError) -> String {
    match &e.code {
        ron::Error::ExceededRecursionLimit => format!(
            "the text is nested more than {RON_DEPTH} levels deep (brackets within brackets); a \
             preset needs a few: look for brackets that are never closed"
        ),
        ron::Error::ExpectedOption => match field_and_value(text, e.span.start) {
            Some((field, value)) => format!(
                "{field} is optional: write `{field}: Some({value})`, or `{field}: None` to leave \
                 it out"
            ),
            None => "an optional value: write Some(VALUE), or None to leave it out".into(),
        },
        ron::Error::InvalidValueForType { expected, found } => match type_range(expected) {
            Some(range) => format!("expected {range} ({expected}) but found {found}"),
            None => e.code.to_string(),
        },
        ron::Error::ExpectedComma if fraction_at(text, e.span.start) => {
            match field_and_value(text, e.span.start) {
                Some((field, value)) => format!(
                    "{field} takes a whole number, not {value}: write it without a fraction"
                ),
                None => "a whole number is expected here, not a fraction".into(),
            }
        }
        ron::Error::Message(m) => with_type_ranges(m),
        ron::Error::IntegerOutOfBounds => {
            // The number RON stopped at: the digits around the error's position.
            let line = text
                .lines()
                .nth(e.span.start.line.saturating_sub(1))
                .unwrap_or("");
            let col = e.span.start.col.saturating_sub(1).min(line.len());
            let is_digit = |c: char| c.is_ascii_digit() || "-+_".contains(c);
            let start = line[..col]
                .rfind(|c: char| !is_digit(c))
                .map_or(0, |i| i + 1);
            let end = line[start..]
                .find(|c: char| !is_digit(c))
                .map_or(line.len(), |i| start + i);
            let number = &line[start..end];
            let shown = if number.len() > 24 {
                format!("{}… ({} digits)", &number[..20], number.len())
            } else {
                number.to_owned()
            };
            format!(
                "the whole number {shown} is out of bounds: counts (chains, steps, …) take 0 to \
                 {} and a seed 0 to {}, each count within its own range below that",
                u32::MAX,
                u64::MAX
            )
        }
        code => code.to_string(),
    }
}

/// Pretty RON with struct names, the way the shipped presets are written.
fn pretty_ron<T: Serialize>(preset: &T) -> String {
    let config = ron::ser::PrettyConfig::new()
        .depth_limit(3)
        .struct_names(true)
        .separate_tuple_members(false);
    ron::ser::to_string_pretty(preset, config).expect("presets serialise")
}

/// A preset's text, where it came from, and where its relative paths start.
pub(crate) struct Source {
    /// The RON text.
    pub text: String,
    /// The file, or `presets/NAME.ron` for a shipped preset, for messages.
    pub origin: String,
    /// The folder of the file (`None` for a shipped preset).
    pub folder: Option<std::path::PathBuf>,
}

impl Source {
    /// A problem of the preset located at the first `field:` of its text.
    pub fn error_at(&self, field: &str, message: String) -> PresetError {
        let (line, column) = locate(&self.text, field);
        PresetError {
            file: self.origin.clone(),
            line,
            column,
            message,
        }
    }
}

/// The text of the preset `path` names: the file `path` when one exists (an explicit file
/// always wins, even over a shipped name: it is what the user made), else the shipped preset
/// of that name. A folder is never a preset: one named like a shipped preset (a sweep's output
/// folder `mlp-up/`, say) does not hide it, and any other folder is refused as a folder.
pub(crate) fn preset_source(path: &str) -> Result<Source, PresetError> {
    let p = Path::new(path);
    if !p.is_file()
        && let Some((name, text)) = SHIPPED.iter().find(|(n, _)| *n == path)
    {
        return Ok(Source {
            text: (*text).to_owned(),
            origin: format!("presets/{name}.ron"),
            folder: None,
        });
    }
    if p.is_dir() {
        return Err(PresetError {
            file: path.to_string(),
            line: 1,
            column: 1,
            message: format!(
                "a folder, not a preset file (give a .ron file, or a shipped preset: {})",
                shipped_names(path)
            ),
        });
    }
    Ok(Source {
        text: read_preset_file(path)?,
        origin: path.to_owned(),
        folder: Some(p.parent().unwrap_or(Path::new("")).to_owned()),
    })
}

/// Where to find the shipped presets, for `asked`, a name that is none of them: the closest
/// names (by edit distance, at most three) and the command that lists them all. The whole
/// list (some fifty names with the lectures' lessons) no longer fits an error's one line.
pub(crate) fn shipped_names(asked: &str) -> String {
    let stem = std::path::Path::new(asked)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(asked);
    let mut near: Vec<(f64, &str)> = SHIPPED
        .iter()
        .map(|(n, _)| (strsim::normalized_damerau_levenshtein(stem, n), *n))
        .filter(|(score, _)| *score >= 0.5)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0));
    let all = format!("`atmc-lab presets` lists all {}", SHIPPED.len());
    match near.len() {
        0 => all,
        _ => format!(
            "did you mean {}? {all}",
            near.iter()
                .take(3)
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Reads a preset file (a regular file within [`crate::fsutil::TEXT_FILES`]' limit), naming
/// the shipped presets when there is none, and what a shipped sweep or lecture of that name
/// is.
fn read_preset_file(path: &str) -> Result<String, PresetError> {
    crate::fsutil::read_text(Path::new(path), crate::fsutil::TEXT_FILES).map_err(|e| {
        let message = if !e.is_not_found() {
            format!("cannot read the preset: {}", e.reason())
        } else if sweep_file::SHIPPED_SWEEPS.iter().any(|(n, _)| *n == path) {
            format!(
                "\"{path}\" is the name of a shipped sweep, not of a preset: run it with \
                 `atmc-lab sweep {path}`"
            )
        } else if story::SHIPPED_LECTURES.iter().any(|(n, _)| *n == path) {
            format!(
                "\"{path}\" is the name of a shipped lecture, not of a preset: open it in the \
                 app's Lectures menu, or write its handout with `atmc-lab handout {path}`"
            )
        } else {
            format!(
                "cannot read the preset: {} (shipped presets: {})",
                e.reason(),
                shipped_names(path)
            )
        };
        PresetError {
            file: path.to_string(),
            line: 1,
            column: 1,
            message,
        }
    })
}

/// Line and column (1-based) of the first `field:` in `text`, or 1:1.
fn locate(text: &str, field: &str) -> (usize, usize) {
    for (i, line) in text.lines().enumerate() {
        if let Some(col) = line.find(&format!("{field}:")) {
            return (i + 1, col + 1);
        }
    }
    (1, 1)
}

impl From<Preset> for AnyPreset {
    fn from(p: Preset) -> Self {
        AnyPreset::Toy(p)
    }
}

impl From<MlpPreset> for AnyPreset {
    fn from(p: MlpPreset) -> Self {
        AnyPreset::Mlp(p)
    }
}

impl From<Comparison> for AnyPreset {
    fn from(p: Comparison) -> Self {
        AnyPreset::Comparison(p)
    }
}

#[cfg(test)]
mod tests {
    use super::{SHIPPED, shipped_names};

    /// A mistyped name gets the closest shipped names, a name like none of them only the
    /// command that lists them; either way one short line.
    #[test]
    fn an_unknown_name_points_to_the_closest_shipped_presets() {
        let near = shipped_names("cyclical-gmm");
        assert!(near.starts_with("did you mean cyclical-gmm25"), "{near}");
        assert!(
            near.ends_with(&format!("lists all {}", SHIPPED.len())),
            "{near}"
        );
        assert_eq!(
            shipped_names("nope"),
            format!("`atmc-lab presets` lists all {}", SHIPPED.len())
        );
        assert!(shipped_names("some/folder/two-moon.ron").contains("two-moons"));
    }

    /// A typed formula that fails its checks never reaches a model: the preset cannot be
    /// validated (the message says why) and building its target is an error, not a panic.
    #[test]
    fn only_a_checked_preset_builds_a_model() {
        let mut preset = super::Preset::default_preset();
        preset.target = crate::math::TargetSpec::Expression {
            energy: "θ₁^2 +".into(),
            parameters: Default::default(),
            bounds: None,
            ranges: Default::default(),
        };
        let (field, message) = preset.clone().validated().unwrap_err();
        assert_eq!(field, "energy");
        assert!(!message.is_empty());
        assert!(preset.target.build().is_err());
        let fine = super::Preset::default_preset().validated().unwrap();
        assert_eq!(
            fine.model().target.kind(),
            fine.target.build().unwrap().kind()
        );
    }

    /// The time of each shipped typed preset's truth (`ExprTarget::new_with`, uncached, and
    /// its moments), printed with the work and time spent before the look beyond the box
    /// began: run with `cargo test --lib typed_truth_timings -- --ignored --nocapture` to
    /// compare a change to the truth's cost (dev profile: the ratios matter).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn typed_truth_timings() {
        use crate::math::expr::ExprTarget;
        use crate::math::expr::truth::{Stage, TruthProgress};
        for (name, text) in SHIPPED.iter().filter(|(n, _)| n.starts_with("expr-")) {
            let preset = super::Preset::parse(text, name).expect("a shipped preset parses");
            let crate::math::TargetSpec::Expression {
                energy,
                parameters,
                bounds,
                ..
            } = &preset.target
            else {
                continue;
            };
            let mut before_beyond = None;
            let mut last = None;
            let mut observer = |p: &TruthProgress| {
                if matches!(p.stage, Stage::LookingBeyond { .. }) && before_beyond.is_none() {
                    before_beyond = Some((p.elapsed.as_secs_f64(), p.evaluations));
                }
                last = Some((p.elapsed.as_secs_f64(), p.evaluations));
            };
            let start = std::time::Instant::now();
            let target =
                ExprTarget::new_with(energy, parameters, *bounds, None, Some(&mut observer))
                    .expect("its truth");
            let truth = start.elapsed().as_secs_f64();
            let start = std::time::Instant::now();
            let built = crate::math::Target::Expression(std::sync::Arc::new(target.clone()));
            let (mean, cov) = built.moments();
            let moments = start.elapsed().as_secs_f64();
            let (t, e) = last.unwrap_or_default();
            let (tb, eb) = before_beyond.unwrap_or((t, e));
            eprintln!(
                "{name}: truth {truth:.2} s ({:.1} M evaluations), of which beyond the box \
                 {:.2} s ({:.2} M); moments {moments:.2} s; box {:?}; mean {mean:?} cov \
                 {cov:?}; outside mass {:e}; moment box {:?}; {:?}",
                e as f64 / 1e6,
                t - tb,
                (e - eb) as f64 / 1e6,
                target.bounds,
                target.outside_mass(),
                target.beyond.moment_box,
                target.beyond.growth,
            );
        }
    }

    /// The shipped typed presets with each parameter at either end of its slider (the formula
    /// panel's range): every truth is accepted within the work limit, printed with its time, the
    /// share of the limit it spent and what lies beyond its box. Run as
    /// `cargo test --lib typed_truth_at_slider_ends -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn typed_truth_at_slider_ends() {
        use crate::math::expr::truth::{TruthProgress, evaluation_limit};
        use crate::math::expr::{ExprTarget, slider_range, truth::compile_cached};
        for (name, text) in SHIPPED.iter().filter(|(n, _)| n.starts_with("expr-")) {
            let preset = super::Preset::parse(text, name).expect("a shipped preset parses");
            let crate::math::TargetSpec::Expression {
                energy,
                parameters,
                bounds,
                ranges,
            } = &preset.target
            else {
                continue;
            };
            let names: Vec<String> = parameters.keys().cloned().collect();
            let limit = evaluation_limit(&compile_cached(energy, &names).expect("compiles"));
            for (key, value) in parameters {
                for end in slider_range(*value, ranges.get(key)) {
                    let mut at = parameters.clone();
                    at.insert(key.clone(), end);
                    let mut spent = 0;
                    let mut observer = |p: &TruthProgress| spent = p.evaluations;
                    let start = std::time::Instant::now();
                    let made =
                        ExprTarget::new_with(energy, &at, *bounds, None, Some(&mut observer));
                    let time = start.elapsed().as_secs_f64();
                    let t = made.unwrap_or_else(|e| panic!("{name} at {key} = {end}: {e}"));
                    eprintln!(
                        "{name} at {key} = {end}: {time:.2} s, {:.1} % of the limit; outside {:e}; \
                         {:?}; unsettled {:?}",
                        100.0 * spent as f64 / limit as f64,
                        t.outside_mass(),
                        t.beyond.growth,
                        t.beyond.unsettled.as_ref().map(|u| (u.moment, u.values))
                    );
                }
            }
        }
    }

    /// A column's own schedule is checked before any work, as the base's is (the fuzz suite
    /// found a comparison whose column ran into "each cycle needs at least two steps" only
    /// once the run started).
    #[test]
    fn a_columns_schedule_is_checked_when_the_comparison_is_read() {
        let (_, text) = SHIPPED
            .iter()
            .find(|(n, _)| *n == "lesson-cyclical")
            .expect("shipped");
        let bad = text.replace(
            "Cyclical(total_steps: 20000, cycles: 30, explore_fraction: 0.8)",
            "Cyclical(total_steps: 16, cycles: 10, explore_fraction: 0.8)",
        );
        assert_ne!(&bad, text, "the shipped column schedule moved");
        let e = super::Comparison::parse(&bad, "bad.ron").expect_err("refused");
        let message = e.to_string();
        assert!(
            message.contains("column 'cyclical SGLD'")
                && message.contains("each cycle needs at least two steps"),
            "{message}"
        );
    }

    /// MATH.md §3.1, "What to expect": the cyclical lecture's thermostat lesson
    /// (`cyclical-4-thermostat`: ATMC on N(0, I), σ = 3, 10 cycles in 5,000 steps) with
    /// h₀ = 0.05 and exploration fraction 0.8 has sampling stages of 100 steps whose step sizes
    /// sum to Σh = 0.164 (not 0.24), about a sixth of the relaxation time 1/D = 1; at the
    /// lesson's own h₀ = 0.3 and fraction 0.5 a stage lasts Σh = 13.7.
    #[test]
    fn the_thermostat_lessons_sampling_stage_lasts_the_time_math_md_states() {
        use crate::math::ScheduleSpec;
        let super::AnyPreset::Comparison(lesson) =
            super::AnyPreset::load("cyclical-4-thermostat").unwrap()
        else {
            panic!("cyclical-4-thermostat is a comparison");
        };
        let ScheduleSpec::Cyclical {
            total_steps,
            cycles,
            explore_fraction,
            thermostat_while_exploring,
        } = lesson.base.schedule
        else {
            panic!("the lesson's schedule is cyclical");
        };
        assert_eq!((total_steps, cycles, explore_fraction), (5000, 10, 0.5));
        // Σh and the number of steps over the sampling stage of the first cycle.
        let stage = |h0: f32, explore_fraction: f64| {
            let schedule = ScheduleSpec::Cyclical {
                total_steps,
                cycles,
                explore_fraction,
                thermostat_while_exploring,
            }
            .schedule();
            assert_eq!(schedule.cycle_len, 500);
            (0..schedule.cycle_len)
                .map(|step| schedule.at(h0, step))
                .filter(|&(_, exploring)| !exploring)
                .fold((0.0, 0), |(sum, n), (h, _)| (sum + f64::from(h), n + 1))
        };
        let (sum, steps) = stage(0.05, 0.8);
        assert_eq!(steps, 100);
        assert!((sum - 0.164).abs() < 5e-4, "Σh = {sum}");
        let (sum, steps) = stage(0.3, 0.5);
        assert_eq!(steps, 250);
        assert!((sum - 13.70).abs() < 5e-3, "Σh = {sum}");
    }
}
