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
        seen("use crate::runner::thermodynamics::Histogram;"),
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

/// ARCHITECTURE.md's section from the heading `start` up to the next heading of the same level.
fn architecture_section(start: &str) -> String {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let level = start.chars().take_while(|c| *c == '#').count();
    let mut lines = text.lines().skip_while(|l| *l != start);
    assert!(
        lines.next().is_some(),
        "ARCHITECTURE.md has no heading {start:?}"
    );
    lines
        .take_while(|l| {
            let hashes = l.chars().take_while(|c| *c == '#').count();
            !(hashes > 0 && hashes <= level && l[hashes..].starts_with(' '))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every source file is named in the code map, in the section of its top-level folder: a file
/// as `name.rs` (or its path below that folder), a nested module's `mod.rs` by its folder
/// (`expr/`). A file added without a word in the map fails here.
#[test]
fn every_source_file_is_in_the_code_map() {
    let map = architecture_section("## Code Map");
    let mut missing = Vec::new();
    for file in rust_files(&root().join("src")) {
        let relative = file.strip_prefix(root().join("src")).expect("below src/");
        let parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let (section, names) = match parts.as_slice() {
            // main.rs, lib.rs, fsutil.rs: anywhere in the map.
            [file] => (map.clone(), vec![file.clone()]),
            [top, rest @ ..] => {
                let section = architecture_section(&format!("### `src/{top}/`"));
                let below = rest.join("/");
                // A top-level folder's `mod.rs` is named by its section's heading.
                if rest == ["mod.rs"] {
                    continue;
                }
                let names = if rest.len() > 1 && rest.last().is_some_and(|f| f == "mod.rs") {
                    vec![format!("{}/", rest[..rest.len() - 1].join("/"))]
                } else {
                    vec![below.clone(), rest.last().expect("a file").clone()]
                };
                (section, names)
            }
            [] => unreachable!("a file has a name"),
        };
        if !names.iter().any(|n| section.contains(n.as_str())) {
            missing.push(format!(
                "src/{} (as {})",
                relative.display(),
                names.join(" or ")
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name:\n{}",
        missing.join("\n")
    );
}

/// Every WGSL function has its row in the twin table ("Every WGSL function has a Rust twin"),
/// written as `` `name` ``: a shader function added without saying what it mirrors fails here.
#[test]
fn every_wgsl_function_is_in_the_twin_table() {
    let table = architecture_section("### Every WGSL function has a Rust twin");
    let mut missing = Vec::new();
    let mut shaders: Vec<PathBuf> = std::fs::read_dir(root().join("shaders"))
        .expect("shaders/")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    shaders.sort();
    assert!(!shaders.is_empty(), "no WGSL files in shaders/");
    for shader in shaders {
        let source = std::fs::read_to_string(&shader).expect("a readable shader");
        for line in source.lines() {
            let Some(rest) = line.trim_start().strip_prefix("fn ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !table.contains(&format!("`{name}`")) {
                missing.push(format!(
                    "{}: fn {name}",
                    shader.file_name().expect("a file").to_string_lossy()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's twin table misses:\n{}",
        missing.join("\n")
    );
}

/// The dependencies of Cargo.toml, by the name code uses (`-` read as `_`).
fn dependency_names() -> BTreeSet<String> {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    manifest
        .lines()
        .skip_while(|l| l.trim() != "[dependencies]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| {
            let name = l.split('=').next()?.trim();
            (!name.is_empty() && !name.starts_with('#')).then(|| name.replace('-', "_"))
        })
        .collect()
}

/// The code of a file before its test module (the crate writes `#[cfg(test)]` modules last).
fn code_before_tests(source: &str) -> String {
    let code = code_of(source);
    match code.find("#[cfg(test)]\nmod ") {
        Some(at) => code[..at].to_string(),
        None => code,
    }
}

/// ARCHITECTURE.md's table "module | external crates", enforced like the module table: a layer
/// that starts using a crate (the UI toolkit in `math`, say) must say so there first.
#[test]
fn every_module_uses_only_the_external_crates_architecture_md_lists() {
    let modules = top_level_modules();
    let dependencies = dependency_names();
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("| module | external crates |"));
    assert!(
        lines.next().is_some(),
        "ARCHITECTURE.md has no table starting with `| module | external crates |`"
    );
    let mut listed = BTreeMap::new();
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 2, "a row of two cells: {line}");
        let module = cells[0].trim_matches('`').to_string();
        let crates: BTreeSet<String> = without_parentheses(cells[1])
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| dependencies.contains(*w))
            .map(str::to_string)
            .collect();
        listed.insert(module, crates);
    }
    let mut violations = Vec::new();
    for module in &modules {
        let Some(allowed) = listed.get(module) else {
            violations.push(format!("no row for `{module}`"));
            continue;
        };
        let src = root().join("src");
        let path = if src.join(module).is_dir() {
            src.join(module)
        } else {
            src.join(format!("{module}.rs"))
        };
        // A `tests.rs` file is a module's test module (`#[cfg(test)] mod tests;`).
        for file in rust_files(&path)
            .into_iter()
            .filter(|f| !f.ends_with("tests.rs"))
        {
            let code = code_before_tests(&std::fs::read_to_string(&file).expect("a source file"));
            for dependency in &dependencies {
                let named = code
                    .match_indices(&format!("{dependency}::"))
                    .any(|(at, _)| {
                        !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':')
                    });
                if named && !allowed.contains(dependency) {
                    violations.push(format!(
                        "{}: `{module}` uses the crate `{dependency}`, which ARCHITECTURE.md does \
                         not list for it",
                        file.strip_prefix(root()).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
