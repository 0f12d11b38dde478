//! `atmc-lab handout`: a lecture as one self-contained HTML page for a course website, with a
//! picture of every lesson rendered offscreen after its steps (the renderer of `screenshot`)
//! and its challenges listed as exercises.

use super::{Failure, in_range, progress_bar, whole_in_range};
use crate::diagnostics::challenge::goal_text;
use crate::engine::BackendChoice;
use crate::fsutil::{FolderWriter, OutputKind};
use crate::math::ranges;
use crate::preset::Lecture;
use crate::preset::story::{Script, script_runs};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Options of `atmc-lab handout`.
#[derive(Debug, clap::Args)]
pub struct HandoutArgs {
    /// The lecture: a shipped lecture's name (`atmc`), a lecture file, or a lecture folder.
    lecture: String,
    /// Folder to write index.html and the pictures into: a new folder, an empty one or an
    /// earlier handout (replaced whole when the new one is complete).
    #[arg(long)]
    out: PathBuf,
    /// Steps at most before a lesson's picture, for lessons that do not set `handout_steps`
    /// (a lesson runs its own steps up to this cap).
    #[arg(long, default_value_t = 2000, value_parser = whole_in_range(ranges::STEPS))]
    max_steps: u32,
    /// Picture size in points, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_name = "WIDTHxHEIGHT", value_parser = super::render::parse_size)]
    size: [u32; 2],
    /// Pixels per point (2: print resolution, 2560×1440 pixels at the default size).
    #[arg(long, default_value_t = 2.0, value_parser = in_range(super::render::SCALE))]
    scale: f64,
    /// Backend of the engine: the CPU by default, so that a handout's pictures are the same
    /// on every machine (and carry no notice about the machine's GPU).
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendChoice,
    /// The light theme (prints better).
    #[arg(long)]
    light: bool,
}

/// The kind of folder a handout is ([`crate::fsutil::MANIFEST`]): written whole, and
/// replacing only an earlier handout.
pub const HANDOUT: OutputKind = OutputKind {
    name: "handout",
    example: "handout",
};

/// Steps before lesson `k`'s picture: its `handout_steps`, else its own steps up to `cap`.
fn lesson_steps(step: &crate::preset::Step, cap: u32) -> u32 {
    let story = step.preset.story();
    story
        .and_then(|s| s.handout_steps)
        .unwrap_or_else(|| step.preset.steps().min(cap))
}

/// `atmc-lab handout`.
pub fn handout(args: &HandoutArgs) -> Result<(), Failure> {
    let lecture = Lecture::load(&args.lecture).map_err(|e| Failure::usage(e.to_string()))?;
    let scale = args.scale as f32;
    crate::app::screenshot::check_picture_size(args.size, scale)
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    if args.out.is_file() {
        return Err(Failure::usage(format!(
            "--out {}: a file, not a folder",
            args.out.display()
        )));
    }
    // The folders above `--out` are created as asked; `--out` itself is written whole, into a
    // temporary folder beside it that replaces it when every picture is made. Taken (checked
    // and locked) before any picture is rendered.
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty())
        && args.out.file_name().is_some()
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::usage(format!(
                "--out {}: cannot create its folder {}: {e}",
                args.out.display(),
                parent.display()
            ))
        })?;
    }
    let mut folder =
        FolderWriter::begin(&args.out, HANDOUT).map_err(|e| Failure::usage(format!("{e:#}")))?;
    let appearance = crate::app::classroom::Appearance {
        presentation: false,
        light: args.light,
    };
    let bar = progress_bar(
        lecture.steps.len() as u64,
        "lessons",
        "rendering the handout",
    );
    let mut pictures = Vec::with_capacity(lecture.steps.len());
    for (k, step) in lecture.steps.iter().enumerate() {
        let steps = lesson_steps(step, args.max_steps);
        let started = std::time::Instant::now();
        let image = crate::app::screenshot::render_figure(
            step.preset.clone(),
            steps,
            args.size,
            scale,
            args.backend,
            appearance,
        )
        .map_err(|e| Failure::runtime(format!("lesson {} ({step}): {e:#}", k + 1)))?;
        let name = picture_name(k);
        folder.write(&name, crate::app::screenshot::png_bytes(&image)?)?;
        pictures.push((name, steps, image.width(), image.height()));
        // Which lessons cost the time: a lecturer caps them with `handout_steps`.
        let seconds = started.elapsed().as_secs_f64();
        bar.suspend(|| note!("lesson {} ({step}): {steps} steps in {seconds:.1} s", k + 1));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let page = page(&lecture, &pictures);
    folder.write("index.html", page.as_bytes())?;
    let committed = folder.commit()?;
    note!(
        "wrote {} and {} pictures",
        args.out.join("index.html").display(),
        lecture.steps.len()
    );
    if let Some(notice) = committed.notice() {
        note!("note: {notice}");
    }
    Ok(())
}

/// The file name of lesson `k`'s picture (0-based).
pub fn picture_name(k: usize) -> String {
    format!("lesson-{:02}.png", k + 1)
}

/// Text escaped for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Lesson text as HTML: formulas' raised and lowered runs as `<sup>` and `<sub>`, everything
/// else escaped.
pub fn formula_html(text: &str) -> String {
    script_runs(text)
        .into_iter()
        .map(|(run, script)| match script {
            Script::Normal => escape(&run),
            Script::Super => format!("<sup>{}</sup>", escape(&run)),
            Script::Sub => format!("<sub>{}</sub>", escape(&run)),
        })
        .collect()
}

/// The page's style: readable on a screen and on paper, no external resources.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;\
padding:0 1rem;line-height:1.5;color:#222}img{max-width:100%;height:auto;border:1px solid #ccc}\
section{margin:2.5rem 0}.exercise{border-left:4px solid #4a7;padding:.5rem 1rem;background:#f4faf6}\
.meta{color:#666;font-size:.9em}";

/// The HTML page: the lecture's title and description, a table of contents, every lesson
/// with its picture (`pictures[k]`: file, steps, width, height), text and what to look at,
/// then the challenges as exercises.
pub fn page(lecture: &Lecture, pictures: &[(String, u32, u32, u32)]) -> String {
    let mut h = String::new();
    let title = escape(&lecture.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n\
         <p>{}</p>\n<nav>\n<ol>\n",
        formula_html(&lecture.description)
    );
    for (k, step) in lecture.steps.iter().enumerate() {
        let _ = writeln!(
            h,
            "<li><a href=\"#lesson-{}\">{}</a></li>",
            k + 1,
            escape(step.preset.name())
        );
    }
    h.push_str("</ol>\n</nav>\n");
    let mut exercises = Vec::new();
    for (k, step) in lecture.steps.iter().enumerate() {
        let (file, steps, w, hgt) = &pictures[k];
        let name = escape(step.preset.name());
        let _ = write!(
            h,
            "<section id=\"lesson-{n}\">\n<h2>{n}. {name}</h2>\n\
             <img src=\"{file}\" width=\"{w}\" height=\"{hgt}\" alt=\"{name}, after {steps} steps\">\n\
             <p class=\"meta\">After {steps} steps · preset {}</p>\n",
            escape(&step.source),
            n = k + 1,
        );
        if let Some(story) = step.preset.story() {
            let _ = writeln!(h, "<p>{}</p>", formula_html(&story.text));
            if !story.look_at.is_empty() {
                h.push_str("<h3>What to look at</h3>\n<ul>\n");
                for line in &story.look_at {
                    let _ = writeln!(h, "<li>{}</li>", formula_html(line));
                }
                h.push_str("</ul>\n");
            }
            if let Some(c) = &story.challenge {
                let _ = write!(
                    h,
                    "<div class=\"exercise\">\n<h3>Exercise {}</h3>\n<p>{}</p>\n\
                     <p><strong>Goal:</strong> {}.</p>\n\
                     <details><summary>Hint</summary><p>{}</p></details>\n</div>\n",
                    exercises.len() + 1,
                    formula_html(&c.task),
                    escape(&goal_text(c)),
                    formula_html(&c.hint)
                );
                exercises.push((k, c));
            }
        }
        h.push_str("</section>\n");
    }
    if !exercises.is_empty() {
        h.push_str("<section id=\"exercises\">\n<h2>Exercises</h2>\n<ol>\n");
        for (k, c) in &exercises {
            let _ = writeln!(
                h,
                "<li>(<a href=\"#lesson-{n}\">lesson {n}</a>) {} <em>Goal: {}.</em></li>",
                formula_html(&c.task),
                escape(&goal_text(c)),
                n = k + 1
            );
        }
        h.push_str(
            "</ol>\n<p class=\"meta\">Open the lesson in atmc-lab (Lectures menu, or File → Open \
             lecture), set it up and press Check.</p>\n</section>\n",
        );
    }
    h.push_str("</body>\n</html>\n");
    h
}
