//! The layering of ARCHITECTURE.md, enforced: every `crate::` path in a module's source must
//! name a module that the table "module | uses" of ARCHITECTURE.md allows it to use.
//!
//! The table is read from ARCHITECTURE.md itself, so the document and the check cannot drift
//! apart: allowing a new edge means writing it into the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The top-level modules: the folders and files directly under src/ (main.rs and lib.rs are
/// not modules).
fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(root().join("src"))
        .expect("src/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| {
            let stem = path.file_stem()?.to_str()?.to_string();
            let is_module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
            (is_module && stem != "main" && stem != "lib").then_some(stem)
        })
        .collect()
}

/// Removes every parenthesised remark, so "diagnostics (classifier metrics)" reads
/// "diagnostics ".
fn without_parentheses(text: &str) -> String {
    let mut depth = 0usize;
    let mut out = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// ARCHITECTURE.md's table: module → the modules it may use.
fn allowed_edges(modules: &BTreeSet<String>) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("| module | uses |"));
    assert!(
        lines.next().is_some(),
        "ARCHITECTURE.md has no table starting with `| module | uses |`"
    );
    let mut table = BTreeMap::new();
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 2, "a row of two cells: {line}");
        let module = cells[0].trim_matches('`').to_string();
        assert!(
            modules.contains(&module),
            "ARCHITECTURE.md's table names `{module}`, which is no module in src/"
        );
        let uses: BTreeSet<String> = without_parentheses(cells[1])
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| modules.contains(*word))
            .map(str::to_string)
            .collect();
        table.insert(module, uses);
    }
    table
}

/// Every `.rs` file below `path` (or `path` itself).
fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).expect("a readable folder") {
        let entry = entry.expect("a directory entry").path();
        if entry.is_dir() {
            files.extend(rust_files(&entry));
        } else if entry.extension().is_some_and(|e| e == "rs") {
            files.push(entry);
        }
    }
    files.sort();
    files
}

/// The source without comments (line comments and doc comments; the project writes no block
/// comments), so a doc link to `crate::sweep` does not count as a use of it.
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|line| {
            // A `//` inside a string literal would cut the line short; the check only needs the
            // paths before it, and no path in this crate follows a "//" on its line.
            match line.find("//") {
                Some(at) => &line[..at],
                None => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a file's code names: `crate::m` paths and the members of
/// `use crate::{a, b::c}` groups. Returns (module, line number) pairs.
fn used_modules(code: &str, modules: &BTreeSet<String>) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut rest = 0;
    while let Some(offset) = code[rest..].find("crate::") {
        let at = rest + offset;
        rest = at + "crate::".len();
        // `atmc_lab::crate::` never occurs; `$crate::` (macros) names the macro's crate.
        if code[..at].ends_with('$')
            || code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let after = &code[rest..];
        if let Some(group) = after.strip_prefix('{') {
            // The members of the brace group, split at its top-level commas (nested groups
            // only add deeper segments); each member's first segment is the module it names.
            let mut depth = 0usize;
            let mut members = vec![String::new()];
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => members.push(String::new()),
                    _ => {}
                }
                if depth == 0 && c != ',' {
                    members.last_mut().expect("one member at least").push(c);
                }
            }
            for member in members {
                let word: String = member
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if modules.contains(&word) {
                    found.push((word, line_of(at)));
                }
            }
        } else {
            let word: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&word) {
                found.push((word, line_of(at)));
            }
        }
    }
    found
}

/// Every edge from `module`'s files to another top-level module that the table does not allow.
fn violations_of(
    module: &str,
    allowed: &BTreeSet<String>,
    modules: &BTreeSet<String>,
) -> Vec<String> {
    let src = root().join("src");
    let path = if src.join(module).is_dir() {
        src.join(module)
    } else {
        src.join(format!("{module}.rs"))
    };
    let mut violations = Vec::new();
    for file in rust_files(&path) {
        let source = std::fs::read_to_string(&file).expect("a readable source file");
        for (used, line) in used_modules(&code_of(&source), modules) {
            if used != module && !allowed.contains(&used) {
                violations.push(format!(
                    "{}:{line}: `{module}` uses `crate::{used}`, which ARCHITECTURE.md's table \
                     does not allow (it allows: {})",
                    file.strip_prefix(root()).unwrap_or(&file).display(),
                    allowed.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
    }
    violations
}

#[test]
fn every_module_uses_only_what_architecture_md_allows() {
    let modules = top_level_modules();
    let table = allowed_edges(&modules);
    let missing: Vec<_> = modules.iter().filter(|m| !table.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's table lists no row for {missing:?}"
    );
    let violations: Vec<String> = table
        .iter()
        .flat_map(|(module, allowed)| violations_of(module, allowed, &modules))
        .collect();
    assert!(
        violations.is_empty(),
        "layering broken:\n{}",
        violations.join("\n")
    );
}

/// A CPU engine serves as its GPU twin's oracle only while the two share nothing but their
/// parent's trait and types.
#[test]
fn cpu_and_gpu_engines_do_not_import_each_other() {
    let src = root().join("src/engine");
    for (folder, prefix) in [
        ("", "crate::engine"),
        ("mlp", "crate::engine::mlp"),
        ("sphere", "crate::engine::sphere"),
    ] {
        for (from, to) in [("cpu", "gpu"), ("gpu", "cpu")] {
            let file = src.join(folder).join(format!("{from}.rs"));
            let code = code_of(&std::fs::read_to_string(&file).expect("an engine file"));
            for forbidden in [format!("{prefix}::{to}"), format!("super::{to}")] {
                assert!(
                    !code.contains(&forbidden),
                    "{} names `{forbidden}`: the {from} engine must not use the {to} engine",
                    file.display()
                );
            }
        }
    }
}

/// The math knows no GPU and no UI; only the front ends know the UI toolkit.
#[test]
fn no_layer_below_the_front_ends_names_the_ui_or_the_gpu_api_out_of_turn() {
    let modules = top_level_modules();
    let forbidden: &[(&str, &[&str])] = &[
        ("math", &["wgpu::", "egui", "eframe", "burn::"]),
        ("engine", &["egui", "eframe", "burn::"]),
        ("diagnostics", &["wgpu::", "egui", "eframe", "burn::"]),
        ("preset", &["wgpu::", "egui", "eframe", "burn::"]),
        ("runner", &["egui", "eframe", "burn::"]),
        ("sweep", &["egui", "eframe", "burn::"]),
        ("train", &["wgpu::", "egui", "eframe"]),
    ];
    let mut violations = Vec::new();
    for (module, names) in forbidden {
        assert!(modules.contains(*module), "no module `{module}` in src/");
        for file in rust_files(&root().join("src").join(module)) {
            let code = code_of(&std::fs::read_to_string(&file).expect("a readable source file"));
            for name in *names {
                if code.contains(name) {
                    violations.push(format!("{}: names `{name}`", file.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn the_check_catches_a_forbidden_import_in_each_form_it_can_take() {
    let modules: BTreeSet<String> = ["app", "math", "runner", "sweep"].map(String::from).into();
    let seen = |code: &str| -> Vec<String> {
        used_modules(&code_of(code), &modules)
            .into_iter()
            .map(|(m, _)| m)
            .collect()
    };
    assert_eq!(
        seen("use crate::runner::thermo_measure::Histogram;"),
        ["runner"]
    );
    assert_eq!(
        seen("use crate::{math::Grid2, runner::run};"),
        ["math", "runner"]
    );
    assert_eq!(
        seen("use crate::{\n    math,\n    sweep::{self, Shard},\n};"),
        ["math", "sweep"]
    );
    assert_eq!(seen("let x = crate::app::run_native(a, b);"), ["app"]);
    assert_eq!(
        seen("/// See [`crate::runner`].\nfn f() {}"),
        Vec::<String>::new()
    );
    assert_eq!(seen("$crate::math::x!()"), Vec::<String>::new());
    assert_eq!(
        without_parentheses("diagnostics (classifier metrics), math (reads `runner`)"),
        "diagnostics , math "
    );
}
