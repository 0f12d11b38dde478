//! The one way to set a preset's fields from outside its file: a sweep's axes and fixed
//! fields, the command line's flags, a sweep's point opened in the app. Every path ends in
//! [`set`], which checks each value against [`FIELDS`], writes it at its dotted path, reads
//! the preset back through the same deserialisers as a file and validates the whole preset.
//!
//! A field is named by its path in the preset as written, with dots: `sampler.h`,
//! `target.b` (an enum variant's name, `Banana`, may be left out), `noise.sigma`, `chains`.
//! A command-line flag is a shorthand for one of these paths (`--h` for `sampler.h`), and the
//! app's sliders take their ranges from the same table, so the three cannot disagree on what
//! is allowed.

use super::{AnyPreset, Preset};
use crate::math::ranges::{self, Range, short_number, short_text};
use crate::math::targets::TARGET_NAMES;
use crate::math::{NoiseMass, NoiseSpec, SamplerKind, SamplerSpec, TargetSpec, XiUpdate};
use serde_json::Value;

/// A value for a field: a real number, or a whole number kept exact (a seed beyond 2⁵³ would
/// lose its last digits as an `f64`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// A real number (a sweep's values are all of this kind).
    Real(f64),
    /// A whole number, exact.
    Whole(u64),
}

impl Number {
    /// The value as an `f64` (a whole number beyond 2⁵³ rounded).
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Real(v) => v,
            Number::Whole(v) => v as f64,
        }
    }
}

impl From<f64> for Number {
    fn from(v: f64) -> Self {
        Number::Real(v)
    }
}

impl From<u32> for Number {
    fn from(v: u32) -> Self {
        Number::Whole(v.into())
    }
}

impl From<u64> for Number {
    fn from(v: u64) -> Self {
        Number::Whole(v)
    }
}

/// The kind of preset a field belongs to. A comparison's fields are its base's, a 2-D
/// preset's, but for the sampler, which belongs to its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A 2-D preset (`Preset`).
    Toy,
    /// A Bayesian MLP preset (`MlpPreset`).
    Mlp,
    /// A sphere preset (`SpherePreset`).
    Sphere,
}

impl Kind {
    /// The kind whose fields `preset` has (a comparison: its base's).
    pub fn of(preset: &AnyPreset) -> Kind {
        match preset {
            AnyPreset::Toy(_) | AnyPreset::Comparison(_) => Kind::Toy,
            AnyPreset::Mlp(_) => Kind::Mlp,
            AnyPreset::Sphere(_) => Kind::Sphere,
        }
    }

    /// The kind's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Toy => "2-D",
            Kind::Mlp => "MLP",
            Kind::Sphere => "sphere",
        }
    }
}

/// A numeric field that may be set from outside a file, with the range it is checked
/// against and the command-line flag that is its shorthand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    /// Dotted path (variant names left out).
    pub path: &'static str,
    /// The flag of `run` that sets it, if any.
    pub flag: Option<&'static str>,
    /// What the preset's deserialiser allows: the same constant, so a file, a flag, a sweep
    /// and a slider agree.
    pub range: Range,
    /// Whether it takes whole numbers only.
    pub whole: bool,
    /// The kinds of preset that have it (with this range).
    pub kinds: &'static [Kind],
}

const TOY: &[Kind] = &[Kind::Toy];
/// A 2-D preset's sampler and an MLP preset's are one `SamplerSpec`.
const SAMPLED: &[Kind] = &[Kind::Toy, Kind::Mlp];
const MLP: &[Kind] = &[Kind::Mlp];
const SPHERE: &[Kind] = &[Kind::Sphere];
const TOY_AND_SPHERE: &[Kind] = &[Kind::Toy, Kind::Sphere];
const EVERY: &[Kind] = &[Kind::Toy, Kind::Mlp, Kind::Sphere];

/// A seed: any `u64` (the top as an `f64`, 2⁶⁴, stands for `u64::MAX`).
const SEED: Range = Range::closed_range("seed", 0.0, u64::MAX as f64);

const fn real(
    path: &'static str,
    flag: Option<&'static str>,
    range: Range,
    kinds: &'static [Kind],
) -> Field {
    Field {
        path,
        flag,
        range,
        whole: false,
        kinds,
    }
}

const fn whole(
    path: &'static str,
    flag: Option<&'static str>,
    range: Range,
    kinds: &'static [Kind],
) -> Field {
    Field {
        path,
        flag,
        range,
        whole: true,
        kinds,
    }
}

/// Every numeric field a user may set from outside a file (by a flag or a slider), per kind
/// of preset. A sweep may set any numeric field; those not listed here are checked by the
/// preset's deserialiser alone.
pub const FIELDS: &[Field] = &[
    real("sampler.h", Some("--h"), ranges::STEP_SIZE, SAMPLED),
    real("sampler.h", Some("--h"), ranges::SPHERE_STEP_SIZE, SPHERE),
    real(
        "sampler.friction_floor",
        Some("--D"),
        ranges::FRICTION_FLOOR,
        SAMPLED,
    ),
    real("sampler.mass", Some("--m"), ranges::MASS, SAMPLED),
    real(
        "sampler.temperature",
        Some("--temperature"),
        ranges::TEMPERATURE,
        SAMPLED,
    ),
    real(
        "sampler.friction_sign",
        Some("--friction-sign"),
        ranges::FRICTION_SIGN,
        SAMPLED,
    ),
    real(
        "sampler.sgd_momentum",
        Some("--sgd-momentum"),
        ranges::MOMENTUM,
        SAMPLED,
    ),
    whole(
        "sampler.leapfrog_steps",
        Some("--leapfrog-steps"),
        ranges::LEAPFROG_STEPS,
        SAMPLED,
    ),
    real(
        "sampler.target_acceptance",
        Some("--target-acceptance"),
        ranges::TARGET_ACCEPTANCE,
        TOY,
    ),
    real("sampler.sghmc_friction", None, ranges::FRICTION, SAMPLED),
    real(
        "sampler.sghmc_noise_estimate",
        None,
        ranges::FRICTION,
        SAMPLED,
    ),
    real("sampler.sgnht_diffusion", None, ranges::FRICTION, SAMPLED),
    real("sampler.kinetic.c", None, ranges::SPEED, SAMPLED),
    real("sampler.momentum", None, ranges::MOMENTUM, SPHERE),
    whole("sampler.batch", None, ranges::SPHERE_BATCH, SPHERE),
    // `--noise σ` is no plain shorthand: 0 switches the noise off, any other σ makes it
    // isotropic; σ itself is checked here.
    real("noise.sigma", Some("--noise"), ranges::NOISE_SIGMA, TOY),
    real("noise.sigma1", None, ranges::NOISE_SIGMA, TOY),
    real("noise.sigma2", None, ranges::NOISE_SIGMA, TOY),
    real("noise.kappa", None, ranges::NOISE_KAPPA, TOY),
    real("schedule.explore_fraction", None, ranges::FRACTION, SAMPLED),
    real("init.scale", None, ranges::INIT_SCALE, TOY),
    real("baseline.h", None, ranges::STEP_SIZE, MLP),
    real("network.prior_scale", None, ranges::SIGMA, MLP),
    whole("chains", Some("--chains"), ranges::CHAINS, TOY_AND_SPHERE),
    whole("chains", Some("--chains"), ranges::MLP_CHAINS, MLP),
    whole("steps", Some("--steps"), ranges::STEPS, EVERY),
    whole("seed", Some("--seed"), SEED, EVERY),
];

/// Whether two strings are equal (`==` is not available in a `const fn`).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl Field {
    /// Whether presets of `kind` have this field.
    pub const fn has(&self, kind: Kind) -> bool {
        let mut i = 0;
        while i < self.kinds.len() {
            if self.kinds[i] as u8 == kind as u8 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// The field as messages name it: its path, and its flag when it has one
    /// (`sampler.h (--h)`).
    pub fn label(&self) -> String {
        match self.flag {
            Some(flag) => format!("{} ({flag})", self.path),
            None => self.path.to_owned(),
        }
    }

    /// `Ok` for a value the field allows; otherwise the message every way of setting it
    /// shows: the field, the value and the allowed range.
    pub fn check(&self, value: Number) -> Result<(), String> {
        let v = value.as_f64();
        self.range
            .check(v)
            .map_err(|m| format!("{}: {m}", self.label()))?;
        if self.whole && v.fract() != 0.0 {
            return Err(format!(
                "{}: {} = {} is not a whole number: allowed whole numbers in {}",
                self.label(),
                self.range.name,
                short_number(v),
                self.range.describe()
            ));
        }
        Ok(())
    }
}

/// The table's entry for `path` in presets of `kind`, if it has one.
pub const fn lookup(kind: Kind, path: &str) -> Option<&'static Field> {
    let mut i = 0;
    while i < FIELDS.len() {
        let field = &FIELDS[i];
        if field.has(kind) && same(field.path, path) {
            return Some(field);
        }
        i += 1;
    }
    None
}

/// The range of `path` in presets of `kind`, for a slider; a path the table lacks is a
/// mistake of the program (evaluated in a `const` block, it does not compile).
pub const fn range(kind: Kind, path: &str) -> Range {
    match lookup(kind, path) {
        Some(field) => field.range,
        None => panic!("no field of that path in fields::FIELDS for that kind of preset"),
    }
}

/// The dotted path a flag of `run` is the shorthand of (`--h` → `sampler.h`).
pub fn shorthand(flag: &str) -> Option<&'static str> {
    FIELDS.iter().find(|f| f.flag == Some(flag)).map(|f| f.path)
}

/// Checks `value` for `path` in presets of `kind` against the table; a path it lacks is
/// left to the preset's own checks.
pub fn check(kind: Kind, path: &str, value: Number) -> Result<(), String> {
    lookup(kind, path).map_or(Ok(()), |field| field.check(value))
}

/// Parses the number given to a numeric flag (the range is checked later, against the
/// preset's kind); a text that is no number is refused naming what the flag allows.
pub fn parse_flag(flag: &str, text: &str) -> Result<f64, String> {
    text.trim().parse().map_err(|_| {
        let mut entries = FIELDS.iter().filter(|f| f.flag == Some(flag));
        let Some(first) = entries.next() else {
            return format!("'{}' is not a number", short_text(text));
        };
        let mut message = format!(
            "{} = '{}' is not a number: allowed {} ({})",
            first.range.name,
            short_text(text),
            first.range.describe(),
            first.path
        );
        for other in entries {
            let kinds: Vec<&str> = other.kinds.iter().map(|k| k.name()).collect();
            message.push_str(&format!(
                "; on a {} preset, {} in {}",
                kinds.join(" or "),
                other.range.name,
                other.range.describe()
            ));
        }
        message
    })
}

/// Why the sampler options of `run` are refused on a comparison.
const COLUMN_SAMPLER: &str = "sampler options belong to one column of a comparison: edit its file";

/// `preset` with each `(path, value)` set and the seed moved by `seed_offset`, checked like a
/// preset file: each value against [`FIELDS`] first (one message whichever way it came),
/// then every field by the preset's deserialisers, then the whole preset's validation.
/// A comparison's fields are its base's; its sampler options belong to its columns and are
/// refused.
pub fn set(
    preset: &AnyPreset,
    assignments: &[(&str, Number)],
    seed_offset: Option<u64>,
) -> Result<AnyPreset, String> {
    let kind = Kind::of(preset);
    let comparison = matches!(preset, AnyPreset::Comparison(_));
    let mut json = preset_json(preset);
    let fields = if comparison {
        &mut json["base"]
    } else {
        &mut json
    };
    for &(path, value) in assignments {
        if comparison && path.starts_with("sampler.") {
            return Err(COLUMN_SAMPLER.into());
        }
        let known = lookup(kind, path);
        if let Some(field) = known {
            field.check(value)?;
        }
        set_field(fields, path, value, known)?;
    }
    if let Some(offset) = seed_offset {
        let seed = fields["seed"].as_u64().unwrap_or(0).wrapping_add(offset);
        fields["seed"] = Value::from(seed);
    }
    from_json(preset, json)
}

/// The preset of `like`'s kind that `json` describes, read by the deserialisers a file is
/// read by and validated as a whole.
fn from_json(like: &AnyPreset, json: Value) -> Result<AnyPreset, String> {
    fn decode<T: serde::de::DeserializeOwned>(json: Value) -> Result<T, String> {
        // serde_json appends " at line 1 column N" of its own text, which means nothing
        // here; "expected u32" is given its range.
        serde_json::from_value(json).map_err(|e| {
            let m = e.to_string();
            super::with_type_ranges(match m.rfind(" at line ") {
                Some(i) => &m[..i],
                None => &m,
            })
        })
    }
    let invalid = |(_, message): (&'static str, String)| message;
    Ok(match like {
        AnyPreset::Toy(_) => {
            let p: Preset = decode(json)?;
            p.validate().map_err(invalid)?;
            AnyPreset::Toy(p)
        }
        AnyPreset::Mlp(_) => {
            let p: super::MlpPreset = decode(json)?;
            p.validate().map_err(invalid)?;
            AnyPreset::Mlp(p)
        }
        AnyPreset::Sphere(_) => {
            let p: super::sphere::SpherePreset = decode(json)?;
            p.validate().map_err(invalid)?;
            AnyPreset::Sphere(p)
        }
        AnyPreset::Comparison(_) => {
            let c: super::Comparison = decode(json)?;
            c.validate().map_err(invalid)?;
            AnyPreset::Comparison(c)
        }
    })
}

/// Whether a sweep may name `path` on `preset`: a numeric field it has, or one of the
/// table's that its file leaves out (`sampler.sgd_momentum` at 0 and
/// `sampler.leapfrog_steps` at its default are not written).
pub fn check_path(preset: &AnyPreset, path: &str) -> Result<(), String> {
    let json = preset_json(preset);
    match field_value(&json, path) {
        Ok(_) => Ok(()),
        Err(_) if lookup(Kind::of(preset), path).is_some() && insertable(&json, path) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether `path`'s parent is a plain object of `json` (not an enum variant), where a field
/// left out of the serialised preset can be written.
fn insertable(json: &Value, path: &str) -> bool {
    let parent = match path.rsplit_once('.') {
        Some((parent, _)) => parent
            .split('.')
            .try_fold(json, |node, part| step_into(node, part)),
        None => Some(json),
    };
    parent
        .and_then(Value::as_object)
        .is_some_and(|map| !(map.len() == 1 && map.keys().all(|k| is_variant(k))))
}

/// What the command line sets on a preset: numbers by dotted path (each flag's shorthand)
/// and the options that are not numbers. [`Overrides::apply`] refuses what the preset's kind
/// does not have, sets the rest and checks the result through [`set`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// Numbers by dotted path, in the order given.
    pub numbers: Vec<(&'static str, Number)>,
    /// `--noise σ`: 0 switches the synthetic gradient noise off, any other σ makes it
    /// isotropic (checked against `noise.sigma`'s range).
    pub noise: Option<f64>,
    /// The sampler by name (`atmc`, `sgld`, …).
    pub sampler: Option<String>,
    /// A built-in target by name.
    pub target: Option<String>,
    /// A typed energy as the target.
    pub energy: Option<String>,
    /// `NAME=VALUE` parameters of the typed energy.
    pub params: Vec<String>,
    /// ATMC's thermostat update.
    pub xi_update: Option<XiUpdate>,
    /// ATMC's noise mass factor.
    pub noise_mass: Option<NoiseMass>,
}

impl Overrides {
    /// Adds the value of a numeric flag (`--h`) as an assignment of the path it is the
    /// shorthand of; `--noise` keeps its own meaning. A flag outside [`FIELDS`] is a mistake
    /// of the program.
    pub fn flag(&mut self, flag: &str, value: Option<Number>) {
        let Some(value) = value else { return };
        if flag == "--noise" {
            self.noise = Some(value.as_f64());
            return;
        }
        let path = shorthand(flag).unwrap_or_else(|| panic!("{flag} is no flag of FIELDS"));
        self.numbers.push((path, value));
    }

    /// Whether a sampler option (by name or by number) is given.
    fn sampler_given(&self) -> bool {
        self.sampler.is_some()
            || self.xi_update.is_some()
            || self.noise_mass.is_some()
            || self.numbers.iter().any(|(p, _)| p.starts_with("sampler."))
    }

    /// Whether an option of a 2-D preset's target or noise is given.
    fn target_given(&self) -> bool {
        self.target.is_some()
            || self.energy.is_some()
            || !self.params.is_empty()
            || self.noise.is_some()
    }

    /// `preset` with everything given set, checked as a whole; or why it cannot be.
    pub fn apply(&self, preset: &AnyPreset) -> Result<AnyPreset, String> {
        let mut typed = preset.clone();
        match &mut typed {
            AnyPreset::Toy(p) => {
                self.set_sampler(&mut p.sampler)?;
                self.set_target(p)?;
            }
            AnyPreset::Mlp(p) => {
                if self.target_given() {
                    return Err(
                        "--target, --energy, --param and --noise belong to 2-D presets: \
                                an MLP preset's posterior is its network and data set, and its \
                                gradient noise comes from real minibatches"
                            .into(),
                    );
                }
                self.set_sampler(&mut p.sampler)?;
            }
            AnyPreset::Comparison(c) => {
                if self.sampler_given() {
                    return Err(COLUMN_SAMPLER.into());
                }
                self.set_target(&mut c.base)?;
            }
            AnyPreset::Sphere(_) => {
                let foreign = self
                    .numbers
                    .iter()
                    .any(|(path, _)| lookup(Kind::Sphere, path).is_none());
                if foreign
                    || self.target_given()
                    || self.sampler.is_some()
                    || self.xi_update.is_some()
                    || self.noise_mass.is_some()
                {
                    return Err(sphere_options());
                }
            }
        }
        set(&typed, &self.numbers, None)
    }

    /// `--sampler`, `--xi-update`, `--noise-mass`.
    fn set_sampler(&self, s: &mut SamplerSpec) -> Result<(), String> {
        if let Some(name) = &self.sampler {
            s.kind = SamplerKind::from_name(name).ok_or_else(|| {
                let names: Vec<_> = SamplerKind::ALL.iter().map(|(_, n)| *n).collect();
                format!(
                    "unknown sampler '{}': choose one of {}",
                    short_text(name),
                    names.join(", ")
                )
            })?;
        }
        s.xi_update = self.xi_update.unwrap_or(s.xi_update);
        s.noise_mass = self.noise_mass.unwrap_or(s.noise_mass);
        Ok(())
    }

    /// `--target`, `--energy`, `--param` and `--noise` on a 2-D preset (a comparison's base).
    /// The energy is checked (compiled, finite, normalisable) with the whole preset.
    fn set_target(&self, preset: &mut Preset) -> Result<(), String> {
        if let Some(name) = &self.target {
            preset.target = TargetSpec::from_name(name).ok_or_else(|| {
                let names: Vec<_> = TARGET_NAMES.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown target '{}': choose one of {}",
                    short_text(name),
                    names.join(", ")
                )
            })?;
        }
        if let Some(energy) = &self.energy {
            preset.target = TargetSpec::Expression {
                energy: energy.clone(),
                parameters: Default::default(),
                bounds: None,
                ranges: Default::default(),
            };
        }
        self.set_parameters(&mut preset.target)?;
        if let Some(sigma) = self.noise {
            check(Kind::Toy, "noise.sigma", Number::Real(sigma))?;
            preset.noise = if sigma == 0.0 {
                NoiseSpec::None
            } else {
                NoiseSpec::Isotropic { sigma }
            };
        }
        Ok(())
    }

    /// `--param NAME=VALUE`: a parameter of the typed energy (of `--energy`, or one the
    /// preset's energy has).
    fn set_parameters(&self, target: &mut TargetSpec) -> Result<(), String> {
        if self.params.is_empty() {
            return Ok(());
        }
        let TargetSpec::Expression { parameters, .. } = target else {
            return Err(
                "--param sets a parameter of a typed energy: give --energy or an expression preset"
                    .into(),
            );
        };
        for given in &self.params {
            let item = short_text(given);
            let (name, value) = given
                .split_once('=')
                .ok_or_else(|| format!("--param {item}: write NAME=VALUE"))?;
            let value: f64 = value
                .trim()
                .parse()
                .map_err(|_| format!("--param {item}: '{}' is not a number", short_text(value)))?;
            if self.energy.is_none() && !parameters.contains_key(name.trim()) {
                let known: Vec<&str> = parameters.keys().map(String::as_str).collect();
                return Err(format!(
                    "--param {item}: the preset's energy has no parameter '{}' (it has: {})",
                    short_text(name.trim()),
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ));
            }
            parameters.insert(name.trim().to_owned(), value);
        }
        Ok(())
    }
}

/// Why an option is refused on a sphere preset: the flags it takes, from [`FIELDS`].
pub fn sphere_options() -> String {
    let flags: Vec<&str> = FIELDS
        .iter()
        .filter(|f| f.has(Kind::Sphere))
        .filter_map(|f| f.flag)
        .collect();
    let (last, rest) = flags.split_last().expect("a sphere preset has flags");
    format!(
        "a sphere preset takes {} and {last} (projected SGD has no other option on the command \
         line; edit the file for momentum and batch)",
        rest.join(", ")
    )
}

/// The preset as JSON (the shape fields are addressed in).
pub fn preset_json(preset: &AnyPreset) -> Value {
    match preset {
        AnyPreset::Toy(p) => serde_json::to_value(p),
        AnyPreset::Mlp(p) => serde_json::to_value(p),
        AnyPreset::Comparison(p) => serde_json::to_value(p),
        AnyPreset::Sphere(p) => serde_json::to_value(p),
    }
    .expect("presets serialise to JSON")
}

/// The numeric value at a dotted path, or what is wrong with the path.
pub fn field_value(json: &Value, path: &str) -> Result<f64, String> {
    let mut node = json;
    for part in path.split('.') {
        node = step_into(node, part).ok_or_else(|| unknown_field(json, path))?;
    }
    node.as_f64().ok_or_else(|| {
        format!(
            "{path} is not a number (it is {}); numeric fields: {}",
            node,
            numeric_fields(json).join(", ")
        )
    })
}

/// Writes `value` at `path`; a field of the table (`known`) that the serialised preset leaves
/// out is written where its parent is, as a whole number where the field is one.
fn set_field(
    json: &mut Value,
    path: &str,
    value: Number,
    known: Option<&Field>,
) -> Result<(), String> {
    if let Some(field) = known
        && field_value(json, path).is_err()
        && insertable(json, path)
    {
        let (parent, leaf) = path.rsplit_once('.').unwrap_or(("", path));
        let mut node = &mut *json;
        for part in parent.split('.').filter(|p| !p.is_empty()) {
            node = step_into_mut(node, part).expect("an insertable path's parent exists");
        }
        if let Some(map) = node.as_object_mut() {
            // A zero of the field's kind, overwritten by `value` below.
            let zero = if field.whole {
                Value::from(0u64)
            } else {
                Value::from(0.0)
            };
            map.entry(leaf).or_insert(zero);
        }
    }
    let snapshot = json.clone();
    let mut node = json;
    for part in path.split('.') {
        node = step_into_mut(node, part).ok_or_else(|| unknown_field(&snapshot, path))?;
    }
    *node = match (&*node, value) {
        (Value::Number(n), Number::Whole(v)) if n.is_u64() || n.is_i64() => Value::from(v),
        (Value::Number(n), Number::Real(v)) if n.is_u64() || n.is_i64() => {
            if v.fract() != 0.0 || v < 0.0 || v > u64::MAX as f64 {
                return Err(format!(
                    "{path} takes whole numbers in [0, {}], not {}",
                    short_number(u64::MAX as f64),
                    short_number(v)
                ));
            }
            Value::from(v as u64)
        }
        (Value::Number(_), value) => {
            Value::from(serde_json::Number::from_f64(value.as_f64()).ok_or("not a finite number")?)
        }
        (other, _) => return Err(format!("{path} is not a number (it is {other})")),
    };
    Ok(())
}

/// The child `part` of `node`; an enum variant's name may be left out of a path.
fn step_into<'a>(node: &'a Value, part: &str) -> Option<&'a Value> {
    let map = node.as_object()?;
    if let Some(child) = map.get(part) {
        return Some(child);
    }
    match map.iter().next() {
        Some((variant, inner)) if map.len() == 1 && is_variant(variant) => inner.get(part),
        _ => None,
    }
}

fn step_into_mut<'a>(node: &'a mut Value, part: &str) -> Option<&'a mut Value> {
    let map = node.as_object_mut()?;
    if map.contains_key(part) {
        return map.get_mut(part);
    }
    if map.len() == 1 {
        let (variant, inner) = map.iter_mut().next()?;
        if is_variant(variant) {
            return inner.get_mut(part);
        }
    }
    None
}

fn is_variant(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_uppercase())
}

fn unknown_field(json: &Value, path: &str) -> String {
    format!(
        "unknown field {path}: numeric fields of the base preset are {}",
        numeric_fields(json).join(", ")
    )
}

/// Dotted paths of every numeric field (variant names left out), for messages and the app.
pub fn numeric_fields(json: &Value) -> Vec<String> {
    fn walk(node: &Value, prefix: &str, out: &mut Vec<String>) {
        match node {
            Value::Number(_) if !prefix.is_empty() => out.push(prefix.to_owned()),
            Value::Object(map) => {
                for (key, child) in map {
                    let path = if is_variant(key) && map.len() == 1 {
                        prefix.to_owned()
                    } else if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(child, &path, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(json, "", &mut out);
    out.retain(|f| !f.starts_with("view.") && !f.starts_with("story."));
    out
}

/// Presets of `kind` between them having every field of [`FIELDS`] (a hyperbolic kinetic
/// energy, a cyclical schedule, each kind of noise), for the tests here and the command
/// line's.
#[cfg(test)]
pub(crate) fn example_presets(kind: Kind) -> Vec<AnyPreset> {
    use crate::math::{ExploringThermostat, Kinetic, ScheduleSpec};
    let cyclical = ScheduleSpec::Cyclical {
        total_steps: 1000,
        cycles: 4,
        explore_fraction: 0.8,
        thermostat_while_exploring: ExploringThermostat::Frozen,
    };
    let hyperbolic = Kinetic::Hyperbolic { c: 1.0 };
    match kind {
        Kind::Toy => {
            let plain = Preset::default_preset();
            let noises = [
                NoiseSpec::Isotropic { sigma: 1.0 },
                NoiseSpec::Anisotropic {
                    sigma1: 1.0,
                    sigma2: 2.0,
                },
                NoiseSpec::StateDependent {
                    sigma: 1.0,
                    kappa: 0.5,
                },
            ];
            let mut presets = vec![AnyPreset::Toy(plain.clone())];
            presets.extend(noises.into_iter().map(|noise| {
                let mut p = plain.clone();
                p.noise = noise;
                p.sampler.kinetic = hyperbolic;
                p.schedule = cyclical;
                AnyPreset::Toy(p)
            }));
            presets
        }
        Kind::Mlp => {
            let plain = AnyPreset::load("two-moons").expect("two-moons is shipped");
            let mut rich = plain.clone();
            if let AnyPreset::Mlp(p) = &mut rich {
                p.sampler.kinetic = hyperbolic;
                p.schedule = cyclical;
            }
            vec![plain, rich]
        }
        Kind::Sphere => vec![AnyPreset::load("sphere-op").expect("sphere-op is shipped")],
    }
}

/// The first of [`example_presets`] that has `field.path`.
#[cfg(test)]
pub(crate) fn example_with(kind: Kind, field: &Field) -> AnyPreset {
    example_presets(kind)
        .into_iter()
        .find(|p| check_path(p, field.path).is_ok())
        .unwrap_or_else(|| panic!("no example {} preset has {}", kind.name(), field.path))
}

/// The values just outside `field`'s range, below and above (for a whole number, the next
/// whole number).
#[cfg(test)]
pub(crate) fn just_outside(field: &Field) -> [f64; 2] {
    let r = field.range;
    let below = if r.min_open {
        r.min
    } else if field.whole {
        r.min - 1.0
    } else {
        r.min.next_down()
    };
    let above = if field.whole && r.max < u64::MAX as f64 {
        r.max + 1.0
    } else {
        r.max.next_up()
    };
    [below, above]
}

/// The ends of `field`'s range that belong to it.
#[cfg(test)]
pub(crate) fn ends(field: &Field) -> Vec<f64> {
    let r = field.range;
    if r.min_open {
        vec![r.max]
    } else {
        vec![r.min, r.max]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_field_and_kind() -> impl Iterator<Item = (&'static Field, Kind)> {
        FIELDS
            .iter()
            .flat_map(|f| f.kinds.iter().map(move |&k| (f, k)))
    }

    /// Without the table's check, a preset's own deserialisers refuse what the table
    /// refuses and take its ends: the table names the ranges files are read with.
    #[test]
    fn the_table_and_the_files_agree_on_every_range() {
        for (field, kind) in every_field_and_kind() {
            let preset = example_with(kind, field);
            let unchecked = |v: f64| {
                let mut json = preset_json(&preset);
                set_field(&mut json, field.path, Number::Real(v), Some(field))
                    .and_then(|()| from_json(&preset, json))
            };
            for v in just_outside(field) {
                let by_table = field.check(Number::Real(v)).unwrap_err();
                assert!(
                    unchecked(v).is_err(),
                    "{} of a {} preset: a file takes {v}, the table says {by_table}",
                    field.path,
                    kind.name()
                );
            }
            for v in ends(field) {
                unchecked(v).unwrap_or_else(|e| panic!("{} = {v}: {e}", field.path));
            }
        }
    }

    /// `set` refuses a value outside the range with the table's message (the field, its
    /// flag, the value and the range), and takes the ends.
    #[test]
    fn set_refuses_with_the_tables_message_and_takes_the_ends() {
        for (field, kind) in every_field_and_kind() {
            let preset = example_with(kind, field);
            for v in just_outside(field) {
                let expected = check(kind, field.path, Number::Real(v)).unwrap_err();
                assert!(expected.starts_with(&field.label()), "{expected}");
                assert!(expected.contains(&field.range.describe()), "{expected}");
                let got = set(&preset, &[(field.path, Number::Real(v))], None).unwrap_err();
                assert_eq!(got, expected);
            }
            for v in ends(field) {
                let set = set(&preset, &[(field.path, Number::Real(v))], None)
                    .unwrap_or_else(|e| panic!("{} = {v}: {e}", field.path));
                // `sgd_momentum` at 0 and `leapfrog_steps` at 10 are left out of the
                // serialised preset.
                let skipped = if field.path == "sampler.leapfrog_steps" {
                    f64::from(crate::math::samplers::DEFAULT_LEAPFROG_STEPS)
                } else {
                    0.0
                };
                let written = field_value(&preset_json(&set), field.path).unwrap_or(skipped);
                assert_eq!(written, v.min(u64::MAX as f64), "{}", field.path);
            }
        }
        let e = set(
            &example_presets(Kind::Toy)[0],
            &[("chains", Number::Real(1.5))],
            None,
        )
        .unwrap_err();
        assert!(
            e.contains("chains (--chains)") && e.contains("whole numbers"),
            "{e}"
        );
    }

    #[test]
    fn every_flag_is_the_shorthand_of_one_path_and_lookups_are_by_kind() {
        for field in FIELDS {
            if let Some(flag) = field.flag {
                assert_eq!(shorthand(flag), Some(field.path), "{flag}");
            }
            for &kind in field.kinds {
                assert_eq!(lookup(kind, field.path), Some(field), "{}", field.path);
                assert_eq!(range(kind, field.path), field.range);
            }
        }
        assert_eq!(range(Kind::Sphere, "sampler.h"), ranges::SPHERE_STEP_SIZE);
        assert_eq!(range(Kind::Mlp, "chains"), ranges::MLP_CHAINS);
        assert_eq!(lookup(Kind::Sphere, "sampler.mass"), None);
        assert_eq!(shorthand("--nope"), None);
        // A text that is no number names what the flag allows on each kind of preset.
        let e = parse_flag("--h", "fast").unwrap_err();
        assert!(
            e == "step size h = 'fast' is not a number: allowed (0, 10] (sampler.h); on a \
                  sphere preset, learning rate η in (0, 10]",
            "{e}"
        );
        assert_eq!(parse_flag("--m", " 2 "), Ok(2.0));
    }

    /// Every slider of the control panels takes its range from the table by a path the table
    /// has for the preset's kind, and the sampler and noise panels name no range by hand.
    #[test]
    fn the_sliders_take_their_ranges_from_the_table() {
        let read = |file: &str| {
            std::fs::read_to_string(format!("{}/src/app/{file}", env!("CARGO_MANIFEST_DIR")))
                .unwrap()
        };
        let quoted_after = |text: &str, call: &str| -> Vec<String> {
            text.match_indices(call)
                .map(|(i, _)| {
                    let rest = &text[i + call.len()..];
                    let start = rest.find('"').unwrap() + 1;
                    assert!(start < 20, "a path right after {call}");
                    let end = start + rest[start..].find('"').unwrap();
                    rest[start..end].to_owned()
                })
                .collect()
        };
        let controls = read("controls.rs");
        let toy = quoted_after(&controls, "{ field_range(");
        assert!(toy.len() >= 14, "{toy:?}");
        for path in &toy {
            assert!(lookup(Kind::Toy, path).is_some(), "controls.rs: {path}");
            assert!(lookup(Kind::Mlp, path).is_some() || !path.starts_with("sampler."));
        }
        let mlp = read("mlp/mod.rs");
        let network = quoted_after(&mlp, "fields::range(Kind::Mlp, ");
        assert_eq!(network.len(), 2, "{network:?}");
        for path in &network {
            assert!(lookup(Kind::Mlp, path).is_some(), "mlp/mod.rs: {path}");
        }
        for function in ["pub fn sampler_controls(", "fn noise_controls("] {
            let body = &controls[controls.find(function).unwrap()..];
            let body = &body[..body[1..].find("\n}\n").unwrap()];
            assert!(
                !body.contains("ranges::"),
                "{function} names a range by hand"
            );
        }
    }

    /// The chains, steps and seed a command sets, on every kind of preset (a comparison's go
    /// to its base); an MLP preset's chains are networks, with their own range.
    #[test]
    fn chains_steps_and_seed_are_set_on_every_kind() {
        let given = [
            ("chains", Number::Whole(300)),
            ("steps", Number::Whole(40)),
            ("seed", Number::Whole(u64::MAX)),
        ];
        for name in ["default", "two-moons", "lesson-defects", "sphere-op"] {
            let preset = set(&AnyPreset::load(name).unwrap(), &given, None).unwrap();
            let (chains, steps, seed) = match &preset {
                AnyPreset::Toy(p) => (p.chains, p.steps, p.seed),
                AnyPreset::Mlp(p) => (p.chains, p.steps, p.seed),
                AnyPreset::Sphere(p) => (p.chains, p.steps, p.seed),
                AnyPreset::Comparison(c) => (c.base.chains, c.base.steps, c.base.seed),
            };
            // The seed beyond 2⁵³ is kept to its last digit.
            assert_eq!((chains, steps, seed), (300, 40, u64::MAX), "{name}");
        }
        let mlp = AnyPreset::load("two-moons").unwrap();
        let e = set(&mlp, &[("chains", Number::Whole(100_000))], None).unwrap_err();
        assert_eq!(
            e,
            "chains (--chains): networks = 100000 is out of range: allowed [1, 65536]"
        );
        let comparison = AnyPreset::load("lesson-defects").unwrap();
        let e = set(&comparison, &[("sampler.h", Number::Real(0.1))], None).unwrap_err();
        assert!(e.contains("one column of a comparison"), "{e}");
    }

    /// What the command line sets besides numbers, and what each kind refuses.
    #[test]
    fn overrides_refuse_what_a_kind_does_not_have() {
        let mut o = Overrides::default();
        o.flag("--noise", Some(Number::Real(0.0)));
        o.flag("--h", Some(Number::Real(0.02)));
        o.sampler = Some("sgld".into());
        let AnyPreset::Toy(p) = o
            .apply(&AnyPreset::load("thermostat-vs-noise").unwrap())
            .unwrap()
        else {
            panic!("a 2-D preset stays one")
        };
        assert_eq!(
            (p.noise, p.sampler.kind, p.sampler.h),
            (NoiseSpec::None, SamplerKind::Sgld, 0.02)
        );
        let mut noisy = Overrides::default();
        noisy.flag("--noise", Some(Number::Real(-2.0)));
        let e = noisy
            .apply(&AnyPreset::load("default").unwrap())
            .unwrap_err();
        assert_eq!(
            e,
            "noise.sigma (--noise): gradient noise σ = -2 is out of range: allowed [0, 10000]"
        );
        let e = noisy
            .apply(&AnyPreset::load("two-moons").unwrap())
            .unwrap_err();
        assert!(e.contains("belong to 2-D presets"), "{e}");
        let mut d = Overrides::default();
        d.flag("--D", Some(Number::Real(2.0)));
        let e = d.apply(&AnyPreset::load("sphere-op").unwrap()).unwrap_err();
        assert!(
            e.starts_with("a sphere preset takes --h, --chains, --steps and --seed"),
            "{e}"
        );
        let e = d
            .apply(&AnyPreset::load("lesson-defects").unwrap())
            .unwrap_err();
        assert_eq!(e, COLUMN_SAMPLER);
    }

    /// `sgd_momentum` is left out of a file at 0; the flag, the table and a sweep still reach it.
    #[test]
    fn a_field_left_out_of_the_file_can_be_set() {
        let mut plain = AnyPreset::load("default").unwrap();
        if let AnyPreset::Toy(p) = &mut plain {
            p.noise = NoiseSpec::None;
        }
        assert!(field_value(&preset_json(&plain), "sampler.sgd_momentum").is_err());
        check_path(&plain, "sampler.sgd_momentum").unwrap();
        let AnyPreset::Toy(p) =
            set(&plain, &[("sampler.sgd_momentum", Number::Real(0.5))], None).unwrap()
        else {
            panic!()
        };
        assert_eq!(p.sampler.sgd_momentum, 0.5);
        // A variant's fields are not made up: `noise.sigma` of no noise stays unknown.
        assert!(check_path(&plain, "noise.sigma").is_err());
        assert!(check_path(&plain, "sampler.nope").is_err());
    }
}
