//! Every decimal number and percentage a lesson's story cites (its paragraph and its "look
//! at" lines) is catalogued here with where it comes from, and each source is checked:
//! - a setting of the preset appears in the preset's own RON, outside its story;
//! - a value the story asks the student to set names a control that exists;
//! - a derived value equals its formula to the digits cited (17.6 for 17.654 fails);
//! - a measured value names the test that bounds it and the readout a student reads it from.
//!
//! A lesson that gains, loses or changes a number fails here until the catalogue says where
//! the number is on screen and which test holds it to the text (#44: numbers a student can
//! read off the screen).

use atmc_lab::preset::{AnyPreset, SHIPPED};
use std::path::Path;

/// Where a cited number comes from.
enum Source {
    /// A value of the preset: written in its RON outside the story.
    Setting,
    /// A value the story asks the student to set, with the label of the control that sets it.
    Edit(&'static str),
    /// A fixed level, not measured: why it is that number.
    Convention(&'static str),
    /// Arithmetic from the settings or a closed form: its exact value, to be equal to the
    /// cited number at the digits cited.
    Derived(f64),
    /// Produced by running the lesson: the test that bounds it, and the label of the readout
    /// on screen that shows it.
    Measured(&'static str, &'static str),
}

use Source::*;

/// The tests that hold measured numbers to the lessons' texts.
const BDL_2: &str = "bayesian_dl_2_the_posterior_predictive_is_better_calibrated";
const CYCLICAL_1: &str = "cyclical_1_a_small_step_stays_in_its_mode";
const CYCLICAL_2: &str = "cyclical_2_a_large_step_explores_a_small_step_samples";
const CYCLICAL_4: &str = "cyclical_4_a_running_thermostat_ratchets";
const CYCLICAL_6: &str = "cyclical_6_more_cycles_more_modes_per_chain";
const FE_1: &str = "free_energy_1_sgd_on_a_quadratic_has_the_known_variance";
const FE_2: &str = "free_energy_2_the_naive_temperature_fails_at_large_eta";
const FE_6: &str = "free_energy_6_two_independent_temperatures_meet_the_known_answer";
const DEFECTS: &str = "each_printed_defect_shows_its_face";
const STATE_NOISE: &str = "state_dependent_noise_breaks_the_assumption";

const RHAT: Source = Convention("R-hat's usual threshold");
const CALIBRATION: Source = Convention("an example in calibration's definition");
const LEVEL_95: Source = Convention("the test's level: exact draws' 95th percentile");

/// (lesson, number as cited, source), in the order the numbers occur in each story.
fn catalogue() -> Vec<(&'static str, &'static str, Source)> {
    // Nested R-hat's limit with 16 superchains of `m` chains (the dashed line).
    let limit = |m: u32| atmc_lab::diagnostics::convergence::nested_level_and_limit(16 * m, 16).1;
    // SGD's stationary temperature on the quadratic with λ = σ = 1.
    let quadratic_t = |eta: f64| eta / (2.0 - eta);
    // The Gibbs test opens on the middle of the Thermodynamics tab's twelve learning rates
    // 0.18 … 1.8.
    let middle_eta = 0.18 * 10f64.powf(6.0 / 11.0);
    vec![
        ("bayesian-dl-2-calibration", "80%", CALIBRATION),
        ("bayesian-dl-2-calibration", "80%", CALIBRATION),
        (
            "bayesian-dl-2-calibration",
            "95%",
            Measured(BDL_2, "accuracy"),
        ),
        (
            "convergence-gaussian",
            "1.0008",
            Derived((1.0f64 + 1.0 / 625.0).sqrt()),
        ),
        ("convergence-gaussian", "1.011", Derived(limit(625))),
        ("convergence-gmm25", "1.01", RHAT),
        ("cyclical-1-stuck", "0.03", Setting),
        ("cyclical-1-stuck", "0.01", Setting),
        ("cyclical-1-stuck", "0.03", Setting),
        ("cyclical-1-stuck", "0.06", Derived(2.0 * 0.03)),
        (
            "cyclical-1-stuck",
            "0.036",
            Measured(CYCLICAL_1, "Far from the target"),
        ),
        ("cyclical-1-stuck", "8.03", Derived(0.03 + 2.0 * 2.0 * 2.0)),
        ("cyclical-2-large-small", "0.03", Setting),
        ("cyclical-2-large-small", "0.06", Derived(2.0 * 0.03)),
        ("cyclical-2-large-small", "0.07", Setting),
        (
            "cyclical-2-large-small",
            "0.2",
            Measured(CYCLICAL_2, "distance to truth"),
        ),
        ("cyclical-2-large-small", "0.01", Setting),
        ("cyclical-2-large-small", "0.07", Setting),
        (
            "cyclical-2-large-small",
            "0.2",
            Measured(CYCLICAL_2, "distance to truth"),
        ),
        ("cyclical-3-stages", "0.8", Setting),
        (
            "cyclical-4-thermostat",
            "0.46",
            Measured(CYCLICAL_4, "Var θ"),
        ),
        (
            "cyclical-4-thermostat",
            "0.5",
            Measured(CYCLICAL_4, "kinetic temperature"),
        ),
        ("cyclical-4-thermostat", "0.8", Edit("exploration fraction")),
        ("cyclical-4-thermostat", "0.8", Edit("exploration fraction")),
        (
            "cyclical-6-cycles",
            "1.9",
            Measured(CYCLICAL_6, "modes per chain"),
        ),
        (
            "cyclical-6-cycles",
            "7.7",
            Measured(CYCLICAL_6, "modes per chain"),
        ),
        ("cyclical-8-nested", "1.01", RHAT),
        ("cyclical-8-nested", "1.01", RHAT),
        ("cyclical-8-nested", "1.015", Derived(limit(100))),
        ("cyclical-8-nested", "1.01", RHAT),
        ("cyclical-8-nested", "0.01", Edit("step size h")),
        ("free-energy-1-quadratic", "0.5", Setting),
        ("free-energy-1-quadratic", "0.5", Setting),
        ("free-energy-1-quadratic", "0.333", Measured(FE_1, "Var θ")),
        ("free-energy-2-large-eta", "0.2", Setting),
        ("free-energy-2-large-eta", "10%", Derived(100.0 * 0.2 / 2.0)),
        ("free-energy-2-large-eta", "1.8", Setting),
        ("free-energy-2-large-eta", "0.9", Derived(1.8 / 2.0)),
        ("free-energy-2-large-eta", "0.111", Measured(FE_2, "Var θ")),
        ("free-energy-2-large-eta", "1.00", Measured(FE_2, "Var θ")),
        ("free-energy-2-large-eta", "9.0", Measured(FE_2, "Var θ")),
        ("free-energy-2-large-eta", "0.5", Derived(1.0 / 2.0)),
        ("free-energy-3-gibbs", "0.02", Setting),
        ("free-energy-3-gibbs", "95%", LEVEL_95),
        ("free-energy-3-gibbs", "0.02", Setting),
        ("free-energy-3-gibbs", "95%", LEVEL_95),
        ("free-energy-3-gibbs", "0.02", Setting),
        ("free-energy-5-batch", "0.2", Setting),
        (
            "free-energy-6-circular",
            "5%",
            Measured(FE_6, "T (slope dU/dS)"),
        ),
        ("free-energy-6-circular", "0.632", Derived(middle_eta)),
        (
            "free-energy-6-circular",
            "0.462",
            Derived(quadratic_t(middle_eta)),
        ),
        (
            "free-energy-6-circular",
            "2%",
            Measured(FE_6, "T (Gibbs fit)"),
        ),
        ("free-energy-6-circular", "0.333", Measured(FE_6, "Var θ")),
        ("lesson-convergence", "1.01", RHAT),
        ("lesson-convergence", "0.07", Edit("step size h")),
        (
            "lesson-convergence",
            "1.0008",
            Derived((1.0f64 + 1.0 / 625.0).sqrt()),
        ),
        ("lesson-cyclical", "0.03", Setting),
        (
            "lesson-cyclical",
            "17.7",
            Derived(25.0 * (1.0 - 0.96f64.powi(30))),
        ),
        ("lesson-defects", "−2.8", Measured(DEFECTS, "mean ξ")),
        ("lesson-defects", "0.06", Derived(0.05 * 9.0 / (2.0 * 4.0))),
        ("lesson-langevin", "0.8", Setting),
        ("lesson-state-noise", "1.24", Measured(STATE_NOISE, "Var θ")),
        ("lesson-thermostat", "0.225", Derived(0.05 * 9.0 / 2.0)),
    ]
}

/// The decimal numbers ("0.333", "−2.8") and percentages ("95%") of a text, as written, in
/// order. Digits inside a word or a markup group (θ_{1}, e^{2}) are not numbers; integers
/// other than percentages are counts and settings, not measurements, and are left out.
fn cited_numbers(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let mut decimal = false;
        while i < chars.len() {
            let c = chars[i];
            let joins_digits = matches!(c, '.' | ',')
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                && i > start;
            if c.is_ascii_digit() {
                i += 1;
            } else if joins_digits {
                decimal |= c == '.';
                i += 1;
            } else {
                break;
            }
        }
        let mut after = i;
        while chars.get(after) == Some(&' ') {
            after += 1;
        }
        let percent = chars.get(after) == Some(&'%');
        let before = start.checked_sub(1).map(|k| chars[k]);
        let signed = matches!(before, Some('−' | '-'))
            && start
                .checked_sub(2)
                .is_none_or(|k| !chars[k].is_alphanumeric());
        let in_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "^_{".contains(c));
        let number: String = chars[start..i].iter().collect();
        if percent {
            found.push(format!("{number}%"));
        } else if decimal && !in_word(before) {
            let sign = if signed {
                before.unwrap().to_string()
            } else {
                String::new()
            };
            found.push(format!("{sign}{number}"));
        }
    }
    found
}

/// The preset's RON with its story, description and comments left out: where its settings
/// are written.
fn settings_text(ron: &str) -> String {
    let without_comments: String = ron
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut text = without_comments;
    for field in ["story:", "description:"] {
        while let Some(at) = text.find(field) {
            let end = end_of_value(&text, at + field.len());
            text.replace_range(at..end, "");
        }
    }
    text
}

/// The end of the RON value starting after `from`: a string, or a parenthesised group
/// (strings inside it skipped).
fn end_of_value(text: &str, from: usize) -> usize {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut started = false;
    for (k, c) in text[from..].char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    in_string = false;
                    if depth == 0 {
                        return from + k + 1;
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                started = true;
            }
            '(' | '[' => {
                depth += 1;
                started = true;
            }
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return from + k + 1;
                }
            }
            _ if started && depth == 0 => return from + k,
            _ => {}
        }
    }
    text.len()
}

/// Whether `number` occurs in `text` as a whole number (no digit or point around it).
fn contains_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && !after.is_some_and(|c| c.is_ascii_digit() || c == '.')
    })
}

/// Every `.rs` file under `dir`, concatenated.
fn sources(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text += &sources(&path);
        } else if path.extension().is_some_and(|e| e == "rs") {
            text += &std::fs::read_to_string(&path).unwrap();
        }
    }
    text
}

/// The numbers each shipped lesson cites, in order: (lesson, its RON, numbers).
fn lessons() -> Vec<(&'static str, &'static str, Vec<String>)> {
    SHIPPED
        .iter()
        .filter_map(|&(name, ron)| {
            let preset = AnyPreset::load(name).expect("a shipped preset loads");
            let story = preset.story()?;
            let text = std::iter::once(story.text.as_str())
                .chain(story.look_at.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join("\n");
            Some((name, ron, cited_numbers(&text)))
        })
        .collect()
}

#[test]
fn the_scanner_finds_decimals_and_percentages_only() {
    assert_eq!(
        cited_numbers(
            "T = 1/3 at η = 0.5 (95 % level), θ_{1}, e^{2.5}, 1,500 steps, 10% off, ξ −2.8, x2.5"
        ),
        ["0.5", "95%", "10%", "−2.8"]
    );
    assert!(contains_number("h: 0.03,", "0.03") && !contains_number("h: 0.035", "0.03"));
    let settings = settings_text(
        "// h 0.7\nPreset(description: \"η = 0.4\", story: (text: \"0.5 (sic\", look_at: []), h: 0.6)",
    );
    assert!(
        settings.contains("0.6") && !settings.contains("0.4") && !settings.contains("0.5"),
        "{settings}"
    );
    assert!(!settings.contains("0.7"), "{settings}");
}

/// Every number each lesson cites is catalogued, in order, and nothing catalogued is gone.
#[test]
fn every_number_a_lesson_cites_is_catalogued() {
    let catalogue = catalogue();
    let mut problems = Vec::new();
    for (name, _, cited) in lessons() {
        let listed: Vec<&str> = catalogue
            .iter()
            .filter(|(lesson, _, _)| *lesson == name)
            .map(|(_, number, _)| *number)
            .collect();
        if cited != listed {
            problems.push(format!(
                "{name}: the story cites {cited:?}, the catalogue lists {listed:?}"
            ));
        }
    }
    for (lesson, _, _) in &catalogue {
        if AnyPreset::load(lesson)
            .ok()
            .and_then(|p| p.story().cloned())
            .is_none()
        {
            problems.push(format!("{lesson}: catalogued, but not a shipped lesson"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each catalogued number's source holds: settings are the preset's, derivations agree to the
/// digits cited, measured values name an existing test and readout, edits an existing control.
#[test]
fn every_cited_number_has_a_source_that_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tests = sources(&root.join("tests"));
    let code = sources(&root.join("src"));
    let mut problems = Vec::new();
    for (lesson, number, source) in catalogue() {
        let ron = SHIPPED
            .iter()
            .find(|(name, _)| *name == lesson)
            .map_or("", |(_, ron)| ron);
        let problem = match source {
            Setting => (!contains_number(&settings_text(ron), number))
                .then(|| "is not among the preset's settings".to_owned()),
            Edit(control) => (!code.contains(&format!("\"{control}")))
                .then(|| format!("asks for control '{control}', which no view has")),
            Convention(why) => why
                .is_empty()
                .then(|| "a convention needs its reason".to_owned()),
            Derived(exact) => {
                let digits = number
                    .split('.')
                    .nth(1)
                    .map_or(0, |d| d.trim_end_matches('%').len());
                let cited: f64 = number
                    .trim_end_matches('%')
                    .replace('−', "-")
                    .parse()
                    .expect("a number");
                let half_unit = 0.5 * 10f64.powi(-(digits as i32));
                ((cited - exact).abs() > half_unit * (1.0 + 1e-9))
                    .then(|| format!("is {exact} rounded to {digits} decimals"))
            }
            Measured(test, readout) => {
                if !tests.contains(&format!("fn {test}(")) {
                    Some(format!("names test {test}, which does not exist"))
                } else {
                    (!code.contains(readout))
                        .then(|| format!("is read from '{readout}', which no view shows"))
                }
            }
        };
        if let Some(p) = problem {
            problems.push(format!("{lesson} cites {number}: {p}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
