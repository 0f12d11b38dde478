//! Names the commit the binary was built from, for `atmc-lab --version`: the environment
//! variable `ATMC_LAB_COMMIT` when a packager sets it, else git's HEAD (with "+ local
//! changes" when tracked files differ from it), else "commit unknown" — a build outside a
//! git checkout (a source tarball) still builds.

use std::path::{Path, PathBuf};
use std::process::Command;

/// git's answer to `args` in the crate's folder, trimmed; None when git is missing, this is
/// no checkout, or the answer is empty.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// The crate's folder as cargo names it to this run. Read at run time, not with `env!`: cargo
/// reuses a compiled build script for a checkout at another path (a shared `CARGO_TARGET_DIR`),
/// and a path baked in at compile time then names a folder that may no longer exist, which
/// made every later build say "commit unknown".
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from("."), PathBuf::from)
}

fn main() {
    println!("cargo:rerun-if-env-changed=ATMC_LAB_COMMIT");
    // Set by .cargo/config.toml to this checkout's folder. Cargo compares rerun-if-changed
    // paths by time only, so a checkout at another path sharing the target folder would
    // otherwise inherit the commit of whichever checkout ran this last.
    println!("cargo:rerun-if-env-changed=ATMC_LAB_CHECKOUT");
    // Registered whatever git answers: a build whose git call failed once (git busy, a
    // checkout being moved) runs this again on the next change instead of keeping "commit
    // unknown" for good.
    for source in [
        "src",
        "shaders",
        "presets",
        "assets",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={source}");
    }
    let commit = match std::env::var("ATMC_LAB_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => from_git().unwrap_or_else(|| {
            // In a checkout git could not read, any change to it (a commit, a checkout) is
            // another chance.
            if Path::new(".git").exists() {
                println!("cargo:rerun-if-changed=.git");
            }
            "commit unknown".into()
        }),
    };
    println!("cargo:rustc-env=ATMC_LAB_COMMIT={commit}");
}

/// "commit 0123abcd4567 2026-12-02[, + local changes]", with the files whose change moves it
/// registered so that cargo runs this again when HEAD moves or a source changes.
fn from_git() -> Option<String> {
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_default();
    // HEAD, the branch it points to and the packed refs (a worktree keeps HEAD apart from
    // the shared refs; `--git-path` finds each), and the index and sources for the dirty
    // mark.
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".into(), "index".into()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            let path = manifest_dir().join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some();
    let mut text = format!("commit {hash}");
    if !date.is_empty() {
        text.push_str(&format!(" {date}"));
    }
    if dirty {
        text.push_str(", + local changes");
    }
    Some(text)
}
