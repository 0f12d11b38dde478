//! The front page and the reference stay connected: every relative link and image of
//! README.md and `docs/*.md` names a file or folder of the repository, and every `#anchor`
//! into a Markdown file names one of its headings (as GitHub makes them), so moving a section
//! or a picture without its links fails here rather than on the page.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file in `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let docs = std::fs::read_dir(root().join("docs")).expect("docs/");
    for entry in docs {
        let path = entry.expect("a docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The text outside fenced code blocks and inline code spans, line by line (1-based), where
/// a link is a link and not an example of one.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop `code spans`: between the odd and the next even backtick.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        lines.push((i + 1, prose));
    }
    lines
}

/// The targets of the inline links and images `[text](target)` and of the reference
/// definitions `[name]: target` in `text`, with their line numbers.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (line_number, line) in prose_lines(text) {
        if let Some(rest) = line.trim_start().strip_prefix('[')
            && let Some((_, target)) = rest.split_once("]: ")
        {
            targets.push((line_number, target.trim().to_string()));
            continue;
        }
        let mut rest = line.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            // The target ends at the parenthesis that closes the one opened by "](".
            let mut depth = 1;
            let end = after.char_indices().find_map(|(k, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(k)
            });
            let Some(end) = end else { break };
            // A title ("…") after the target is not part of it.
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push((line_number, target.to_string()));
            rest = &after[end..];
        }
    }
    targets
}

/// A heading's anchor as GitHub makes it: lower case, every character that is not a letter,
/// a digit, a space, `-` or `_` dropped, spaces made hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings; a repeated heading gets `-1`, `-2`, … as on
/// GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        if in_fence {
            continue;
        }
        let base = slug(heading.trim_start_matches('#'));
        let mut anchor = base.clone();
        let mut repeat = 0;
        while seen.contains(&anchor) {
            repeat += 1;
            anchor = format!("{base}-{repeat}");
        }
        seen.insert(anchor);
    }
    seen
}

/// `path` without `.` and `..`, or `None` when `..` climbs above where it started.
fn normalised(path: &Path) -> Option<PathBuf> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            other => parts.push(other.as_os_str().to_owned()),
        }
    }
    Some(parts.iter().collect())
}

/// What is wrong with the links of `document` (a path relative to `root`), whose text is
/// `text`: one line per broken link, naming the file, line and target.
fn broken_links(root: &Path, document: &Path, text: &str) -> Vec<String> {
    let folder = document.parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for (line, target) in link_targets(text) {
        let at = format!("{}:{line}: `{target}`", document.display());
        if target.is_empty() {
            broken.push(format!("{at}: an empty link"));
            continue;
        }
        // Web addresses are not checked here (no network in the tests).
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        // An anchor alone points into this document.
        if path.is_empty() {
            if let Some(anchor) = anchor
                && !anchors(text).contains(anchor)
            {
                broken.push(format!("{at}: no heading here has the anchor #{anchor}"));
            }
            continue;
        }
        let Some(linked) = normalised(&folder.join(path)) else {
            broken.push(format!("{at}: leaves the repository"));
            continue;
        };
        let full = root.join(&linked);
        if !full.exists() {
            broken.push(format!("{at}: {} does not exist", linked.display()));
            continue;
        }
        if let Some(anchor) = anchor
            && linked.extension().is_some_and(|e| e == "md")
        {
            let headings = std::fs::read_to_string(&full).map(|t| anchors(&t));
            if !headings.is_ok_and(|h| h.contains(anchor)) {
                broken.push(format!(
                    "{at}: {} has no heading with the anchor #{anchor}",
                    linked.display()
                ));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_resolves() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).expect("a readable Markdown file");
        let document = path.strip_prefix(&root).expect("inside the repository");
        checked += link_targets(&text).len();
        broken.extend(broken_links(&root, document, &text));
    }
    assert!(
        broken.is_empty(),
        "broken links (a moved section or picture?):\n{}",
        broken.join("\n")
    );
    // The front page links the reference: no links found would mean the parser broke.
    assert!(checked > 50, "only {checked} links found");
}

#[test]
fn the_check_catches_each_kind_of_broken_link() {
    let root = root();
    let text = "\
# A page

## Where to `read` on

[one level too low](ARCHITECTURE.md) ![fine](screenshots/explosion-step60.png) [fine](#where-to-read-on)
[fine](MATH.md) [fine](../ARCHITECTURE.md#code-map) [a site](https://example.org/missing) `[in code](missing.md)`
[gone](missing.md)
![gone](screenshots/missing.png)
[no such heading](development.md#no-such-heading)
[no such heading here](#nowhere)
[above the repository](../../outside.md)
[reference]: also-missing.md

```sh
[in a fence](missing-too.md)
```
";
    let broken = broken_links(&root, Path::new("docs/page.md"), text);
    let named: Vec<&str> = broken
        .iter()
        .map(|b| b.split('`').nth(1).expect("the target in backticks"))
        .collect();
    assert_eq!(
        named,
        [
            "ARCHITECTURE.md",
            "missing.md",
            "screenshots/missing.png",
            "development.md#no-such-heading",
            "#nowhere",
            "../../outside.md",
            "also-missing.md",
        ],
        "{broken:#?}"
    );
}
