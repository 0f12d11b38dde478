//! Presets: the shipped ones parse and round-trip; malformed ones give one clear message with
//! file, line:column and (for numbers) the allowed range.

use atmc_lab::preset::{AnyPreset, MlpPreset, Preset, SHIPPED};

#[test]
fn shipped_presets_parse_and_round_trip() {
    assert!(SHIPPED.len() >= 5);
    let (mut toys, mut mlps, mut comparisons, mut spheres) = (0, 0, 0, 0);
    for (name, text) in SHIPPED {
        let p = AnyPreset::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
        let description = match &p {
            AnyPreset::Toy(t) => {
                toys += 1;
                &t.description
            }
            AnyPreset::Mlp(m) => {
                mlps += 1;
                // The data set is generated or read only by build(): a shipped preset must
                // build too.
                m.build().unwrap_or_else(|e| panic!("{name}: {e}"));
                &m.description
            }
            AnyPreset::Comparison(c) => {
                comparisons += 1;
                &c.description
            }
            AnyPreset::Sphere(s) => {
                spheres += 1;
                &s.description
            }
        };
        assert!(!p.name().is_empty() && !description.is_empty(), "{name}");
        let again = AnyPreset::parse(&p.to_ron(), "round-trip").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p, again, "{name} does not round-trip");
        // The files on disk are the compiled-in ones.
        let on_disk =
            std::fs::read_to_string(format!("{}/presets/{name}.ron", env!("CARGO_MANIFEST_DIR")))
                .unwrap();
        assert_eq!(&on_disk, text);
    }
    // Every kind is shipped, so every parser was exercised above.
    assert!(
        toys >= 5 && mlps >= 2 && comparisons >= 2 && spheres >= 2,
        "{toys} 2-D, {mlps} MLP presets and {comparisons} comparisons"
    );
}

#[test]
fn minimal_preset_gets_defaults() {
    let p = Preset::parse("(sampler: (kind: Sgld), target: Donut())", "min.ron").unwrap();
    assert_eq!(p.chains, 10_000);
    assert_eq!(p.sampler.h, 0.05);
    assert_eq!(p.seed, 0);
}

/// (what is wrong, preset text, expected line, text the message must contain)
const MALFORMED: &[(&str, &str, usize, &str)] = &[
    ("empty file", "", 1, "Expected opening `(`"),
    ("not RON", "hello", 1, ""),
    ("missing target", "(sampler: (kind: Atmc))", 1, "target"),
    ("missing sampler", "(target: Donut())", 1, "sampler"),
    (
        "unknown sampler",
        "(sampler: (kind: Nuts), target: Donut())",
        1,
        "Nuts",
    ),
    (
        "unknown target",
        "(sampler: (kind: Atmc),\n target: Moon())",
        2,
        "Moon",
    ),
    (
        "unknown field",
        "(sampler: (kind: Atmc, hh: 0.1), target: Donut())",
        1,
        "hh",
    ),
    (
        "unknown top-level field",
        "(sampler: (kind: Atmc), target: Donut(),\n colour: 3)",
        2,
        "colour",
    ),
    (
        "negative step size",
        "(sampler: (kind: Atmc,\n  h: -0.1), target: Donut())",
        2,
        "allowed (0, 10]",
    ),
    (
        "zero step size",
        "(sampler: (kind: Atmc, h: 0.0), target: Donut())",
        1,
        "step size h = 0",
    ),
    (
        "huge step size",
        "(sampler: (kind: Atmc, h: 100.0), target: Donut())",
        1,
        "allowed (0, 10]",
    ),
    (
        "friction sign above 1",
        "(sampler: (kind: Atmc, friction_sign: 2.0), target: Donut())",
        1,
        "allowed [-1, 1]",
    ),
    (
        "friction sign below -1",
        "(sampler: (kind: Atmc, friction_sign: -1.5), target: Donut())",
        1,
        "friction sign",
    ),
    (
        "zero mass",
        "(sampler: (kind: Atmc, mass: 0.0), target: Donut())",
        1,
        "mass m",
    ),
    (
        "negative temperature",
        "(sampler: (kind: Atmc, temperature: -1.0), target: Donut())",
        1,
        "temperature T",
    ),
    (
        "negative D",
        "(sampler: (kind: Atmc, friction_floor: -1.0), target: Donut())",
        1,
        "friction floor D",
    ),
    (
        "correlation 1",
        "(sampler: (kind: Atmc),\n\n target: Gaussian(rho: 1.0))",
        3,
        "allowed [-0.999, 0.999]",
    ),
    (
        "zero chains",
        "(sampler: (kind: Atmc), target: Donut(), chains: 0)",
        1,
        "chains = 0",
    ),
    (
        "too many chains",
        "(sampler: (kind: Atmc), target: Donut(), chains: 100000000)",
        1,
        "chains",
    ),
    (
        "negative noise",
        "(sampler: (kind: Atmc), target: Donut(), noise: Isotropic(sigma: -2.0))",
        1,
        "gradient noise σ",
    ),
    (
        "noise without sigma",
        "(sampler: (kind: Atmc), target: Donut(), noise: Isotropic())",
        1,
        "sigma",
    ),
    (
        "string for number",
        "(sampler: (kind: Atmc, h: \"big\"), target: Donut())",
        1,
        "",
    ),
    (
        "B̂ above C",
        "(sampler: (kind: Sghmc, sghmc_friction: 1.0,\n   sghmc_noise_estimate: 2.0), target: Donut())",
        2,
        "B̂ = 2 exceeds",
    ),
    (
        "zero cycles",
        "(sampler: (kind: Sgld), target: Donut(), schedule: Cyclical(total_steps: 100, cycles: 0))",
        1,
        "cycles",
    ),
    (
        "exploration fraction above 1",
        "(sampler: (kind: Sgld), target: Donut(), schedule: Cyclical(total_steps: 100, cycles: 2, explore_fraction: 1.5))",
        1,
        "exploration fraction",
    ),
    (
        "cyclical with zero steps",
        "(sampler: (kind: Sgld), target: Donut(),\n schedule: Cyclical(total_steps: 0, cycles: 1))",
        2,
        "steps = 0 is out of range",
    ),
    (
        "hyperbolic c = 0",
        "(sampler: (kind: Atmc, kinetic: Hyperbolic(c: 0.0)), target: Donut())",
        1,
        "speed limit c",
    ),
    (
        "coordinate 5",
        "(sampler: (kind: Atmc), target: Donut(), view: (coordinate: 5))",
        1,
        "coordinate",
    ),
    (
        "unclosed paren",
        "(sampler: (kind: Atmc), target: Donut()",
        1,
        "",
    ),
    (
        "batch too large",
        "(sampler: (kind: Atmc), target: Logistic(batch_size: 1000000))",
        1,
        "batch size",
    ),
    (
        "bad xi update",
        "(sampler: (kind: Atmc, xi_update: Sometimes), target: Donut())",
        1,
        "Sometimes",
    ),
    (
        "negative seed",
        "(sampler: (kind: Atmc), target: Donut(), seed: -1)",
        1,
        "",
    ),
];

#[test]
fn malformed_presets_give_one_clear_located_message() {
    assert!(MALFORMED.len() >= 20);
    let mut problems = Vec::new();
    for (what, text, line, needle) in MALFORMED {
        let err = match Preset::parse(text, "bad.ron") {
            Ok(p) => {
                problems.push(format!("{what}: parsed as {p:?}"));
                continue;
            }
            Err(e) => e,
        };
        let msg = err.to_string();
        if !msg.starts_with("bad.ron:")
            || err.line != *line
            || err.column < 1
            || !msg.contains(needle)
            || msg.lines().count() != 1
        {
            problems.push(format!("{what} (want line {line}, '{needle}'): {msg}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn loading_a_missing_file_names_it_and_the_shipped_presets() {
    let err = Preset::load("/no/such/preset.ron").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("/no/such/preset.ron:1:1: cannot read"),
        "{msg}"
    );
    // Where the shipped presets are: the command that lists them, and the closest names to
    // a mistyped one.
    assert!(msg.contains("`atmc-lab presets` lists all"), "{msg}");
    assert!(Preset::load("printed").is_ok());
    let err = AnyPreset::load("/no/such/two-moon.ron")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/no/such/two-moon.ron:1:1: cannot read")
            && err.contains("did you mean two-moons"),
        "{err}"
    );
    assert!(matches!(
        AnyPreset::load("two-moons"),
        Ok(AnyPreset::Mlp(_))
    ));
    assert!(matches!(AnyPreset::load("printed"), Ok(AnyPreset::Toy(_))));
}

/// (what is wrong, MLP preset text, expected line, expected column, text the message must
/// contain). Columns point at the offending field (validation) or value (parsing).
const MALFORMED_MLP: &[(&str, &str, usize, usize, &str)] = &[
    (
        "hidden layer of 40 units",
        "MlpPreset(\n  sampler: (kind: Atmc),\n  network: (hidden: [16, 40]),\n)",
        3,
        13,
        "hidden layer of 40 units: allowed 1 to 32",
    ),
    (
        "4 hidden layers",
        "MlpPreset(sampler: (kind: Atmc),\n network: (hidden: [8, 8, 8, 8]))",
        2,
        12,
        "hidden = [8, 8, 8, 8]: an MLP has 1 to 3 hidden layers",
    ),
    (
        "70000 networks",
        "MlpPreset(sampler: (kind: Atmc),\n chains: 70000)",
        2,
        10,
        "networks = 70000 is out of range: allowed [1, 65536]",
    ),
    (
        "unknown activation",
        "MlpPreset(sampler: (kind: Atmc),\n network: (activation: Sigmoid))",
        2,
        24,
        "Sigmoid",
    ),
    (
        "parameter beyond the network",
        // 2-4-2: (2 + 1)·4 + (4 + 1)·2 = 22 parameters, indices 0..=21.
        "MlpPreset(sampler: (kind: Atmc),\n network: (hidden: [4]),\n view: (parameter: 22))",
        3,
        9,
        "parameter = 22 is out of range: the network has 22 parameters",
    ),
    (
        "focus network beyond the ensemble",
        "MlpPreset(sampler: (kind: Atmc), chains: 8,\n view: (focus_chain: 8))",
        2,
        9,
        "focus_chain = 8 is out of range: there are 8 networks",
    ),
    (
        "unknown data source",
        "MlpPreset(sampler: (kind: Atmc),\n network: (data: (source: Moons)))",
        2,
        27,
        "Moons",
    ),
    (
        "missing sampler",
        // RON reports a missing field at the closing parenthesis.
        "MlpPreset(network: (hidden: [8]))",
        1,
        33,
        "missing field named `sampler`",
    ),
];

#[test]
fn malformed_mlp_presets_give_one_clear_located_message() {
    let mut problems = Vec::new();
    for (what, text, line, column, needle) in MALFORMED_MLP {
        let err = match AnyPreset::parse(text, "bad.ron") {
            Ok(p) => {
                problems.push(format!("{what}: parsed as {p:?}"));
                continue;
            }
            Err(e) => e,
        };
        let msg = err.to_string();
        let at = format!("bad.ron:{line}:{column}: ");
        if !msg.starts_with(&at) || !msg.contains(needle) || msg.lines().count() != 1 {
            problems.push(format!("{what} (want {at}…'{needle}'): {msg}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_missing_csv_data_file_fails_at_build_naming_the_path() {
    let path = "/no/such/dir/points.csv";
    let text = format!(
        "MlpPreset(sampler: (kind: Atmc), network: (data: (source: Csv(path: \"{path}\"))))"
    );
    // The file is read when the data set is built, not when the preset is parsed (the app
    // parses presets it may never run).
    let preset = MlpPreset::parse(&text, "csv.ron").unwrap_or_else(|e| panic!("{e}"));
    let err = preset.build().unwrap_err();
    assert!(
        err.contains(&format!("cannot read data file {path}")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
