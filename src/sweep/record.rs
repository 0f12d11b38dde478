//! What a sweep writes, typed: the first line of a shard file ([`Header`]: the sweep, its
//! base preset as an [`AnyPreset`], its seed policy and its measure), one [`Record`] per point
//! after it, and the hashes that tie a shard file to its sweep ([`SweepHashes`]).
//!
//! The lines keep the JSON shape earlier releases wrote: the header names the base's kind
//! (`base_kind`: `toy`, `mlp` or `sphere`, [`BaseKind`]) beside the base's JSON, the seeds as
//! `same` or `per_point` and the measure as `run` or `thermo`. Every such name is written and
//! read here, by an explicit table, never by a Rust name: renaming a variant changes no file.

use crate::preset::AnyPreset;
use crate::preset::fields::preset_json;
use crate::preset::sweep_file::{Combine, MAX_POINTS, Measure, SeedPolicy, Sweep};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Shard, hash, is_thermo};

/// The kind of a sweep's base preset, as its header names it (`base_kind`). A comparison is
/// no kind: it cannot be swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseKind {
    /// A 2-D toy posterior ([`AnyPreset::Toy`]): `toy`.
    Toy,
    /// A Bayesian MLP posterior ([`AnyPreset::Mlp`]): `mlp`.
    Mlp,
    /// Projected SGD on the sphere ([`AnyPreset::Sphere`]): `sphere`.
    Sphere,
}

impl BaseKind {
    /// Every kind.
    pub const ALL: [BaseKind; 3] = [BaseKind::Toy, BaseKind::Mlp, BaseKind::Sphere];

    /// The kind of `preset`; None for a comparison.
    pub fn of(preset: &AnyPreset) -> Option<BaseKind> {
        // No wildcard: a new kind of preset must say here whether it can be swept.
        match preset {
            AnyPreset::Toy(_) => Some(BaseKind::Toy),
            AnyPreset::Mlp(_) => Some(BaseKind::Mlp),
            AnyPreset::Sphere(_) => Some(BaseKind::Sphere),
            AnyPreset::Comparison(_) => None,
        }
    }

    /// Its name in a header.
    pub fn name(self) -> &'static str {
        match self {
            BaseKind::Toy => "toy",
            BaseKind::Mlp => "mlp",
            BaseKind::Sphere => "sphere",
        }
    }

    /// The kind named `name` in a header.
    pub fn from_name(name: &str) -> Result<BaseKind, String> {
        from_name(&BaseKind::ALL, BaseKind::name, "base_kind", name)
    }

    /// The preset of this kind whose JSON is `base`.
    pub fn decode(self, base: Value) -> Result<AnyPreset, String> {
        let decoded = match self {
            BaseKind::Toy => serde_json::from_value(base).map(AnyPreset::Toy),
            BaseKind::Mlp => serde_json::from_value(base).map(AnyPreset::Mlp),
            BaseKind::Sphere => serde_json::from_value(base).map(AnyPreset::Sphere),
        };
        decoded.map_err(|e| format!("base: not a {} preset: {e}", self.name()))
    }

    /// `preset`'s kind and its JSON, as a header holds them; an error for a comparison.
    pub fn encode(preset: &AnyPreset) -> Result<(BaseKind, Value), String> {
        let kind = BaseKind::of(preset)
            .ok_or("a comparison is no sweep's base: only 2-D, MLP and sphere presets are")?;
        Ok((kind, preset_json(preset)))
    }
}

/// The name of a seed policy in a header and in the canonical form.
pub fn seeds_name(seeds: SeedPolicy) -> &'static str {
    match seeds {
        SeedPolicy::Same => "same",
        SeedPolicy::PerPoint => "per_point",
    }
}

/// The name of a measure in a header and in the canonical form.
pub fn measure_name(measure: Measure) -> &'static str {
    match measure {
        Measure::Run => "run",
        Measure::Thermo => "thermo",
    }
}

/// The name of a way to combine axes in the canonical form (version 2).
fn combine_name(combine: Combine) -> &'static str {
    match combine {
        Combine::Product => "product",
        Combine::Zip => "zip",
    }
}

/// The value of `all` whose name is `name`, or an error listing the names of `what`.
fn from_name<T: Copy>(
    all: &[T],
    name_of: fn(T) -> &'static str,
    what: &str,
    name: &str,
) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|v| name_of(*v) == name)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|v| name_of(*v)).collect();
            format!("{what}: `{name}` is none of {}", names.join(", "))
        })
}

/// What a sweep measures at its points: thermodynamics when its file says so, and always on
/// the sphere.
pub fn measure_of(sweep: &Sweep) -> Measure {
    if is_thermo(sweep) {
        Measure::Thermo
    } else {
        Measure::Run
    }
}

/// The first line of every shard file: what sweep the records belong to.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "HeaderLine")]
pub struct Header {
    /// The sweep's title.
    pub sweep: String,
    /// What it shows.
    pub description: String,
    /// Hash of everything that decides the records (base preset, axes, seeds, kept fields,
    /// measure): one of the sweep's [`SweepHashes`].
    pub sweep_hash: String,
    /// Hash of the base preset alone.
    pub base_hash: String,
    /// Points of the whole sweep.
    pub points: usize,
    /// This file's shard.
    pub shard: Shard,
    /// The swept fields, in axis order.
    pub fields: Vec<String>,
    /// The values of each axis.
    pub axis_values: Vec<Vec<f64>>,
    /// The base preset (a point's preset is it with the coordinates applied); its kind
    /// decides which view opens a point.
    pub base: AnyPreset,
    /// The seed of each point.
    pub seeds: SeedPolicy,
    /// What the records hold: run statistics or thermodynamic measurements.
    pub measure: Measure,
}

/// A header as its JSON line has it: the field order and names of the files.
#[derive(Serialize, Deserialize)]
struct HeaderLine {
    sweep: String,
    description: String,
    sweep_hash: String,
    base_hash: String,
    points: usize,
    shard: Shard,
    fields: Vec<String>,
    axis_values: Vec<Vec<f64>>,
    base_kind: String,
    base: Value,
    seeds: String,
    /// Absent in files written before thermodynamic sweeps: `run`.
    #[serde(default = "run_measure")]
    measure: String,
}

fn run_measure() -> String {
    measure_name(Measure::Run).to_owned()
}

impl TryFrom<HeaderLine> for Header {
    type Error = String;

    fn try_from(line: HeaderLine) -> Result<Header, String> {
        Ok(Header {
            base: BaseKind::from_name(&line.base_kind)?.decode(line.base)?,
            seeds: from_name(
                &[SeedPolicy::Same, SeedPolicy::PerPoint],
                seeds_name,
                "seeds",
                &line.seeds,
            )?,
            measure: from_name(
                &[Measure::Run, Measure::Thermo],
                measure_name,
                "measure",
                &line.measure,
            )?,
            sweep: line.sweep,
            description: line.description,
            sweep_hash: line.sweep_hash,
            base_hash: line.base_hash,
            points: line.points,
            shard: line.shard,
            fields: line.fields,
            axis_values: line.axis_values,
        })
    }
}

impl Serialize for Header {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (kind, base) = BaseKind::encode(&self.base).map_err(serde::ser::Error::custom)?;
        HeaderLine {
            sweep: self.sweep.clone(),
            description: self.description.clone(),
            sweep_hash: self.sweep_hash.clone(),
            base_hash: self.base_hash.clone(),
            points: self.points,
            shard: self.shard,
            fields: self.fields.clone(),
            axis_values: self.axis_values.clone(),
            base_kind: kind.name().to_owned(),
            base,
            seeds: seeds_name(self.seeds).to_owned(),
            measure: measure_name(self.measure).to_owned(),
        }
        .serialize(serializer)
    }
}

impl Header {
    /// Whether the header describes a sweep that can exist, checked before anything is sized
    /// by it (a header claiming 1e15 points aborted on allocation): as many fields as axes,
    /// none empty, 1 to [`MAX_POINTS`] points that the axes give (their product, or their
    /// common length when zipped), and a shard within its count.
    pub fn check(&self) -> Result<(), String> {
        if self.fields.len() != self.axis_values.len() {
            return Err(format!(
                "{} fields but {} axes of values",
                self.fields.len(),
                self.axis_values.len()
            ));
        }
        if let Some((field, _)) = self
            .fields
            .iter()
            .zip(&self.axis_values)
            .find(|(_, v)| v.is_empty())
        {
            return Err(format!("axis {field} has no values"));
        }
        if !(1..=MAX_POINTS).contains(&self.points) {
            return Err(format!(
                "{} points: a sweep has 1 to {MAX_POINTS}",
                self.points
            ));
        }
        let lengths: Vec<usize> = self.axis_values.iter().map(Vec::len).collect();
        let product = lengths.iter().try_fold(1usize, |p, &l| p.checked_mul(l));
        let zipped = lengths.iter().all(|&l| l == self.points);
        if product != Some(self.points) && !zipped {
            return Err(format!(
                "{} points, but axes of {lengths:?} values give {} (or zipped, one length)",
                self.points,
                product.map_or("more than can be counted".to_owned(), |p| p.to_string())
            ));
        }
        if self.shard.count == 0 || self.shard.index >= self.shard.count {
            return Err(format!(
                "shard {}/{}: the index must lie below the count",
                self.shard.index, self.shard.count
            ));
        }
        Ok(())
    }

    /// The coordinates of point `index` (product order, or zip).
    pub fn coords(&self, index: usize) -> Vec<f64> {
        let zip = self.axis_values.iter().map(Vec::len).product::<usize>() != self.points;
        if zip {
            return self.axis_values.iter().map(|v| v[index]).collect();
        }
        let mut rest = index;
        let mut coords = vec![0.0; self.axis_values.len()];
        for (c, values) in coords.iter_mut().zip(&self.axis_values).rev() {
            *c = values[rest % values.len()];
            rest /= values.len();
        }
        coords
    }
}

/// One point's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The point's index in the sweep.
    pub index: usize,
    /// Its coordinates, one per axis (in the header's field order).
    pub coords: Vec<f64>,
    /// The seed it ran with.
    pub seed: u64,
    /// The run's JSON (as `atmc-lab run` prints it, without its timings).
    pub run: Value,
}

impl Record {
    /// Whether the record is a point of the sweep `header` describes (already
    /// [`Header::check`]ed): its index within the sweep and its coordinates the ones the
    /// axes give that index (a record whose coordinates lie on no axis merged silently).
    pub fn check(&self, header: &Header) -> Result<(), String> {
        if self.index >= header.points {
            return Err(format!(
                "point {} is beyond the sweep's {} points",
                self.index, header.points
            ));
        }
        let expected = header.coords(self.index);
        if self.coords != expected {
            let show = |c: &[f64]| {
                header
                    .fields
                    .iter()
                    .zip(c)
                    .map(|(f, v)| format!("{f} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(format!(
                "point {} has coordinates ({}) where the sweep's axes give ({})",
                self.index,
                if self.coords.len() == expected.len() {
                    show(&self.coords)
                } else {
                    format!("{} values for {} axes", self.coords.len(), expected.len())
                },
                show(&expected)
            ));
        }
        Ok(())
    }
}

/// The version of the canonical form [`SweepHashes::current`] hashes.
pub const HASH_VERSION: u32 = 2;

/// The hashes that identify a sweep's shard files: the one written now and the one the
/// releases before [`HASH_VERSION`] 2 wrote. A shard file with either belongs to the sweep,
/// so a folder an earlier release wrote resumes and merges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepHashes {
    /// `v2-` and 64-bit FNV-1a of the canonical form (16 hex digits): what new shard files
    /// carry.
    pub current: String,
    /// Version 1 (16 hex digits, no prefix): FNV-1a of the same facts in the form the
    /// releases before typed records hashed, kept bit for bit.
    pub v1: String,
}

impl SweepHashes {
    /// The hashes of `sweep`.
    pub fn of(sweep: &Sweep) -> SweepHashes {
        SweepHashes {
            current: format!(
                "v{HASH_VERSION}-{}",
                hash(&canonical_json(&canonical_form(sweep)))
            ),
            v1: hash(&canonical_json(&v1_form(sweep))),
        }
    }

    /// Whether a shard file carrying `found` holds points of this sweep.
    pub fn accepts(&self, found: &str) -> bool {
        found == self.current || found == self.v1
    }
}

/// The short form of a sweep hash, for folder names: its first 8 hex digits.
pub fn short_hash(sweep_hash: &str) -> &str {
    let digits = sweep_hash.rsplit('-').next().unwrap_or(sweep_hash);
    &digits[..8.min(digits.len())]
}

/// Everything that decides a sweep's records, as the object [`SweepHashes::current`] hashes
/// (serialised by [`canonical_json`]): `version` ([`HASH_VERSION`]), `base_kind` and `base`
/// (the base preset, `set` applied, as its JSON), `fields` and `axis_values` (in axis
/// order), `combine` (`product` or `zip`), `seeds` (`same` or `per_point`), `keep` (as
/// written) and `measure` (`run` or `thermo`). Names and title are left out: they decide no
/// record.
pub fn canonical_form(sweep: &Sweep) -> Value {
    let (kind, base) =
        BaseKind::encode(&sweep.base).expect("a loaded sweep's base is no comparison");
    serde_json::json!({
        "version": HASH_VERSION,
        "base_kind": kind.name(),
        "base": base,
        "fields": sweep.fields(),
        "axis_values": sweep.axis_values,
        "combine": combine_name(sweep.spec.combine),
        "seeds": seeds_name(sweep.spec.seeds),
        "keep": sweep.spec.keep,
        "measure": measure_name(measure_of(sweep)),
    })
}

/// The form the releases before [`HASH_VERSION`] 2 hashed, frozen: `combine` as the Rust
/// variant's name was then (`Product`, `Zip`), `measure` only when `thermo`, no version and
/// no kind.
fn v1_form(sweep: &Sweep) -> Value {
    let combine = match sweep.spec.combine {
        Combine::Product => "Product",
        Combine::Zip => "Zip",
    };
    let mut form = serde_json::json!({
        "base": preset_json(&sweep.base),
        "fields": sweep.fields(),
        "axis_values": sweep.axis_values,
        "combine": combine,
        "seeds": seeds_name(sweep.spec.seeds),
        "keep": sweep.spec.keep,
    });
    if measure_of(sweep) == Measure::Thermo {
        form["measure"] = measure_name(Measure::Thermo).into();
    }
    form
}

/// `value` as compact JSON with the keys of every object in byte order, whatever order the
/// map keeps them in: the text the hashes are taken of. Numbers are written as serde_json
/// writes them (shortest round-tripping decimal).
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                out.push('{');
                for (i, (key, child)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(child, out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, child) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(child, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// The header of `sweep`'s shard `shard`, with the current hash.
pub fn header(sweep: &Sweep, shard: Shard) -> Header {
    let base_json = preset_json(&sweep.base);
    Header {
        sweep: sweep.spec.name.clone(),
        description: sweep.spec.description.clone(),
        sweep_hash: SweepHashes::of(sweep).current,
        base_hash: hash(&canonical_json(&base_json)),
        points: sweep.points,
        shard,
        fields: sweep.fields().iter().map(|f| f.to_string()).collect(),
        axis_values: sweep.axis_values.clone(),
        base: sweep.base.clone(),
        seeds: sweep.spec.seeds,
        measure: measure_of(sweep),
    }
}

/// The seed a point's preset runs with (a comparison has none of its own: 0).
pub fn seed_of(preset: &AnyPreset) -> u64 {
    match preset {
        AnyPreset::Toy(p) => p.seed,
        AnyPreset::Mlp(p) => p.seed,
        AnyPreset::Sphere(p) => p.seed,
        AnyPreset::Comparison(_) => 0,
    }
}

/// Where a preset's sampler's kinetic temperature should settle (`SamplerSpec::kinetic_target`:
/// T, or 1 for HMC), where it has one (a comparison and the sphere's projected SGD have none).
pub fn kinetic_target(preset: &AnyPreset) -> Option<f64> {
    match preset {
        AnyPreset::Toy(p) => Some(p.sampler.kinetic_target()),
        AnyPreset::Mlp(p) => Some(p.sampler.kinetic_target()),
        AnyPreset::Comparison(_) | AnyPreset::Sphere(_) => None,
    }
}

/// The temperature T of a preset's sampler (none for a comparison or the sphere).
pub fn sampler_temperature(preset: &AnyPreset) -> Option<f64> {
    match preset {
        AnyPreset::Toy(p) => Some(p.sampler.temperature),
        AnyPreset::Mlp(p) => Some(p.sampler.temperature),
        AnyPreset::Comparison(_) | AnyPreset::Sphere(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// The folder of the sweep-v1 fixture: shard files of the release before typed records.
    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-v1")
    }

    /// The fixture's sweep file, edited by `edit`, loaded from the fixture's folder.
    fn fixture_sweep(edit: impl Fn(String) -> String) -> Sweep {
        let text = std::fs::read_to_string(fixture().join("sweep.ron")).unwrap();
        Sweep::parse(&edit(text), "sweep.ron", &fixture()).unwrap()
    }

    #[test]
    fn the_hashes_of_a_fixed_sweep_file_stay_what_they_are() {
        // The v1 values are the ones the release before typed records wrote into the
        // fixture's headers (tests/fixtures/sweep-v1/README.md); the current one is frozen
        // here: a change to either strands every shard folder users have.
        let sweep = fixture_sweep(|t| t);
        let hashes = SweepHashes::of(&sweep);
        assert_eq!(hashes.v1, "264668d29dbb57b2");
        assert_eq!(hashes.current, "v2-9562afcc530605af");
        let h = header(&sweep, Shard::ALL);
        assert_eq!(h.sweep_hash, hashes.current);
        assert_eq!(h.base_hash, "240159bfede00f0c");
        let written = std::fs::read_to_string(fixture().join("merged.jsonl")).unwrap();
        assert!(
            written.contains(r#""sweep_hash":"264668d29dbb57b2","base_hash":"240159bfede00f0c""#)
        );

        let thermo =
            fixture_sweep(|t| t.replace("combine: Zip,", "combine: Zip, measure: Thermo,"));
        assert_eq!(SweepHashes::of(&thermo).v1, "f1d2e1e1a381131d");
        let plain = fixture_sweep(|t| {
            t.lines()
                .filter(|l| {
                    !["combine:", "seeds:", "keep:"]
                        .iter()
                        .any(|k| l.trim().starts_with(k))
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
        assert_eq!(SweepHashes::of(&plain).v1, "f77cb3c68b231bed");
        for other in [&thermo, &plain] {
            let theirs = SweepHashes::of(other);
            assert!(!hashes.accepts(&theirs.current) && !hashes.accepts(&theirs.v1));
        }
        assert!(hashes.accepts(&hashes.v1) && hashes.accepts(&hashes.current));
        assert_eq!(short_hash(&hashes.current), "9562afcc");
        assert_eq!(short_hash(&hashes.v1), "264668d2");
    }

    #[test]
    fn the_canonical_form_names_everything_by_its_file_name_and_version() {
        let mut form = canonical_form(&fixture_sweep(|t| t));
        form["base"] = Value::Null;
        assert_eq!(
            canonical_json(&form),
            r#"{"axis_values":[[-0.5,0.5,1.0,1.0],[0.01,0.02,0.03,0.05]],"base":null,"base_kind":"toy","combine":"zip","fields":["sampler.friction_sign","sampler.h"],"keep":["diverged_fraction","mean","energy_distance","kinetic_temperature_error"],"measure":"run","seeds":"per_point","version":2}"#
        );
    }

    /// A shipped preset of every kind a sweep can have.
    fn one_of_each_kind() -> Vec<AnyPreset> {
        let presets: Vec<AnyPreset> = ["default", "mlp-op", "sphere-op"]
            .iter()
            .map(|name| AnyPreset::load(name).unwrap())
            .collect();
        let kinds: Vec<Option<BaseKind>> = presets.iter().map(BaseKind::of).collect();
        assert_eq!(kinds, BaseKind::ALL.map(Some));
        presets
    }

    #[test]
    fn every_base_kind_round_trips_through_its_name_and_json() {
        for preset in one_of_each_kind() {
            let (kind, json) = BaseKind::encode(&preset).unwrap();
            assert_eq!(BaseKind::from_name(kind.name()), Ok(kind));
            let decoded = kind.decode(json.clone()).unwrap();
            assert_eq!(decoded, preset, "{}", kind.name());
            assert_eq!(
                canonical_json(&preset_json(&decoded)),
                canonical_json(&json),
                "{}: the same bytes again",
                kind.name()
            );
            let other = BaseKind::ALL.into_iter().find(|k| *k != kind).unwrap();
            let e = other.decode(json).unwrap_err();
            assert!(e.contains(&format!("not a {} preset", other.name())), "{e}");
        }
        let e = BaseKind::from_name("network").unwrap_err();
        assert_eq!(e, "base_kind: `network` is none of toy, mlp, sphere");
        let comparison = AnyPreset::load("cyclical-2-large-small").unwrap();
        assert!(matches!(comparison, AnyPreset::Comparison(_)));
        assert!(BaseKind::encode(&comparison).is_err());
    }

    #[test]
    fn headers_of_every_kind_read_back_to_the_same_header_and_bytes() {
        for preset in one_of_each_kind() {
            let kind = BaseKind::of(&preset).unwrap();
            let name = match kind {
                BaseKind::Toy => "default",
                BaseKind::Mlp => "mlp-op",
                BaseKind::Sphere => "sphere-op",
            };
            let sweep = Sweep::parse(
                &format!(
                    "Sweep(base: \"{name}\", seeds: PerPoint, axes: [(field: \"seed\", values: List([3, 4]))])"
                ),
                "s.ron",
                Path::new("."),
            )
            .unwrap();
            let h = header(&sweep, Shard { index: 1, count: 2 });
            assert_eq!(h.base, preset);
            assert_eq!(h.seeds, SeedPolicy::PerPoint);
            assert_eq!(
                h.measure,
                if kind == BaseKind::Sphere {
                    Measure::Thermo
                } else {
                    Measure::Run
                }
            );
            let line = serde_json::to_string(&h).unwrap();
            assert!(line.contains(&format!(r#""base_kind":"{}","base":{{"#, kind.name())));
            let read: Header = serde_json::from_str(&line).unwrap();
            assert_eq!(read, h);
            assert_eq!(serde_json::to_string(&read).unwrap(), line);
        }
    }

    #[test]
    fn a_header_with_a_name_it_does_not_know_is_refused_naming_it() {
        let line = serde_json::to_string(&header(&fixture_sweep(|t| t), Shard::ALL)).unwrap();
        for (from, to, needle) in [
            (
                r#""seeds":"per_point""#,
                r#""seeds":"PerPoint""#,
                "seeds: `PerPoint` is none of same, per_point",
            ),
            (
                r#""measure":"run""#,
                r#""measure":"thermo!""#,
                "measure: `thermo!` is none of run, thermo",
            ),
            (
                r#""base_kind":"toy""#,
                r#""base_kind":"mlp""#,
                "base: not a mlp preset",
            ),
        ] {
            let e = serde_json::from_str::<Header>(&line.replace(from, to)).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
        }
        // A header from before thermodynamic sweeps has no measure: it measured runs.
        let old: Header = serde_json::from_str(&line.replace(r#","measure":"run""#, "")).unwrap();
        assert_eq!(old.measure, Measure::Run);
    }
}
