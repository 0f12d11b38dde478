//! The formula panel of a typed target (issue #25, docs/MATH.md §9): the energy typed with
//! its parse errors marked where they are, parameters as live sliders, a gallery to start
//! from, and the box of its truth.
//!
//! A new formula or parameter value reaches the running chains only once it has passed the
//! same checks a preset file passes (it parses; U is finite in the box; exp(−U) is
//! normalisable). Those checks integrate the density on grids, so they run on a thread of
//! their own, one at a time, the newest edit first; typing waits [`DEBOUNCE`] before its
//! formula is checked. Until a candidate passes, the previous target keeps running and the
//! panel says why the candidate was refused.

use crate::math::expr::truth::TruthProgress;
use crate::math::expr::{self, ExprError, ExprTarget};
use crate::math::{TargetSpec, ranges};
use egui::text::{LayoutJob, TextFormat};
use egui::{Color32, RichText, Ui};
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long typing must pause before the formula's density is checked and replaces the
/// running one.
pub const DEBOUNCE: Duration = Duration::from_millis(400);

/// The gallery: a title and the shipped preset whose target it takes.
pub const GALLERY: [(&str, &str); 5] = [
    ("ring of eight modes", "expr-ring8"),
    ("Neal's funnel", "expr-funnel"),
    ("Himmelblau's function", "expr-himmelblau"),
    ("double banana", "expr-double-banana"),
    ("sombrero", "expr-sombrero"),
];

/// The target of gallery example `name` (a shipped preset's).
pub fn gallery_target(name: &str) -> Option<TargetSpec> {
    let (_, text) = crate::preset::SHIPPED.iter().find(|(n, _)| *n == name)?;
    crate::preset::Preset::parse(text, name)
        .ok()
        .map(|p| p.target)
}

/// What the latest check of a candidate found.
#[derive(Clone, Debug)]
enum Verdict {
    /// It runs: its box and log normaliser, what its truth covers (the box of its moments and
    /// the mass outside) and the warning when its moments do not settle as the box grows.
    Running {
        bounds: [[f64; 2]; 2],
        log_z: f64,
        extent: String,
        unsettled: Option<String>,
    },
    /// Refused, with the reason.
    Refused(String),
}

impl Verdict {
    /// The verdict on a target that passed its checks, its truth described by `diagnostics`.
    fn running(t: &ExprTarget) -> Self {
        Verdict::Running {
            bounds: t.bounds,
            log_z: t.log_normaliser,
            extent: crate::diagnostics::warnings::truth_extent(t),
            unsettled: crate::diagnostics::warnings::unsettled_moments(t),
        }
    }
}

/// A check on its thread: the candidate, where its verdict arrives and how far it is.
struct InFlight {
    candidate: TargetSpec,
    verdict: Receiver<Result<Arc<ExprTarget>, String>>,
    /// The check's latest progress report (the truth of a hard formula takes seconds).
    progress: Arc<Mutex<Option<TruthProgress>>>,
}

/// The panel's state, kept between frames in egui's memory (one per control panel).
pub struct FormulaEditor {
    /// The target the chains run on, as the editor last gave or saw it.
    running: TargetSpec,
    /// The formula being typed.
    text: String,
    /// Parameter values by name.
    parameters: BTreeMap<String, f64>,
    /// Slider ranges that belong to the target: the preset's, and those fixed when the user
    /// added a parameter (so a saved preset carries them).
    ranges: BTreeMap<String, [f64; 2]>,
    /// Slider ranges fixed here for loaded parameters the preset gave none: set once from the
    /// value at load, never from the value being dragged (a range that follows the knob runs
    /// away, since egui sets the value from the pointer's place on the rail every frame).
    fixed_ranges: BTreeMap<String, [f64; 2]>,
    /// The box, when the user (or the preset) sets it; `None`: found.
    bounds: Option<[[f64; 2]; 2]>,
    /// The parse error of the text as it is, with the text it belongs to.
    parse_error: Option<(String, ExprError)>,
    /// The candidate waiting for its check, and when it is due.
    due: Option<(TargetSpec, Instant)>,
    /// The check running now.
    in_flight: Option<InFlight>,
    /// The verdict on the formula the editor shows, once known.
    verdict: Option<Verdict>,
    /// A parameter name being typed.
    new_parameter: String,
    /// Why the last parameter name was refused.
    name_refused: Option<String>,
}

impl FormulaEditor {
    /// An editor showing `spec` (a running expression target).
    pub fn new(spec: &TargetSpec) -> Self {
        let mut editor = Self {
            running: spec.clone(),
            text: String::new(),
            parameters: BTreeMap::new(),
            ranges: BTreeMap::new(),
            fixed_ranges: BTreeMap::new(),
            bounds: None,
            parse_error: None,
            due: None,
            in_flight: None,
            verdict: None,
            new_parameter: String::new(),
            name_refused: None,
        };
        editor.show_spec(spec);
        editor
    }

    /// Shows the running `spec` in the fields, dropping any edit not yet running, with its
    /// verdict (from the cache: a running target was checked).
    fn show_spec(&mut self, spec: &TargetSpec) {
        self.set_fields(spec);
        self.verdict = spec.build().ok().and_then(|t| match t {
            crate::math::Target::Expression(e) => Some(Verdict::running(&e)),
            _ => None,
        });
    }

    /// Puts `spec` in the fields.
    fn set_fields(&mut self, spec: &TargetSpec) {
        if let TargetSpec::Expression {
            energy,
            parameters,
            bounds,
            ranges,
        } = spec
        {
            self.text = energy.clone();
            self.parameters = parameters.clone();
            self.bounds = *bounds;
            self.ranges = ranges.clone();
            // A range fixed earlier stays while it still holds its parameter's value.
            self.fixed_ranges.retain(|name, r| {
                parameters
                    .get(name)
                    .is_some_and(|v| r[0] <= *v && *v <= r[1])
            });
        }
        self.parse_error = None;
        self.due = None;
    }

    /// Adds parameter `name` at `value` with its slider range fixed now, a quarter to four
    /// times the value, kept in the target's `ranges`.
    fn add_parameter(&mut self, name: String, value: f64) {
        self.ranges
            .entry(name.clone())
            .or_insert_with(|| expr::slider_range(value, None));
        self.parameters.insert(name, value);
    }

    /// The slider range of parameter `name`: the target's, else one fixed the first time it
    /// is asked for. Never recomputed from the value.
    fn range_of(&mut self, name: &str) -> [f64; 2] {
        if let Some(r) = self.ranges.get(name) {
            return *r;
        }
        let value = self.parameters.get(name).copied().unwrap_or(1.0);
        *self
            .fixed_ranges
            .entry(name.to_owned())
            .or_insert_with(|| expr::slider_range(value, None))
    }

    /// Widens `name`'s range once to hold a typed `value` beyond it (a drag is clamped to the
    /// rail, so only typing gets there), leaving the knob at the end to be dragged back.
    fn widen_to(&mut self, name: &str, value: f64) {
        let r = match self.ranges.get_mut(name) {
            Some(r) => r,
            None => match self.fixed_ranges.get_mut(name) {
                Some(r) => r,
                None => return,
            },
        };
        if value.is_finite() {
            *r = [r[0].min(value), r[1].max(value)];
        }
    }

    /// The target the fields describe.
    fn candidate(&self) -> TargetSpec {
        TargetSpec::Expression {
            energy: self.text.clone(),
            parameters: self.parameters.clone(),
            bounds: self.bounds,
            ranges: self
                .ranges
                .iter()
                .filter(|(name, _)| self.parameters.contains_key(*name))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        }
    }

    /// Parses the fields; a formula that parses is checked after `wait`.
    fn edited(&mut self, wait: Duration) {
        let names: Vec<String> = self.parameters.keys().cloned().collect();
        match expr::truth::compile_cached(&self.text, &names) {
            Err(e) => {
                self.parse_error = Some((self.text.clone(), e));
                self.due = None;
                self.verdict = None;
            }
            Ok(_) => {
                self.parse_error = None;
                self.verdict = None;
                self.due = Some((self.candidate(), Instant::now() + wait));
            }
        }
    }

    /// Starts the due check when none is running, takes the verdict of a finished one, and
    /// writes a candidate that passed into `target`. Returns how soon to look again.
    fn poll(&mut self, ctx: &egui::Context, target: &mut TargetSpec) -> Option<Duration> {
        if let Some(flight) = &self.in_flight {
            match flight.verdict.try_recv() {
                Err(TryRecvError::Empty) => return Some(Duration::from_millis(30)),
                Err(TryRecvError::Disconnected) => {
                    self.in_flight = None;
                    self.verdict = Some(Verdict::Refused(
                        "the check of the density stopped without a verdict".into(),
                    ));
                }
                Ok(result) => {
                    let flight = self.in_flight.take().expect("checked above");
                    // A verdict on what the fields no longer show is of no use: the newer
                    // candidate is checked next.
                    if flight.candidate == self.candidate() {
                        self.verdict = Some(match result {
                            Ok(t) => {
                                *target = flight.candidate.clone();
                                self.running = flight.candidate;
                                Verdict::running(&t)
                            }
                            Err(why) => Verdict::Refused(why),
                        });
                    }
                }
            }
        }
        let (candidate, at) = self.due.clone()?;
        let now = Instant::now();
        if at > now {
            return Some(at - now);
        }
        self.due = None;
        if candidate == self.running {
            self.verdict = None;
            self.show_spec(&candidate);
            return None;
        }
        let (send, verdict) = channel();
        let TargetSpec::Expression {
            energy,
            parameters,
            bounds,
            ..
        } = &candidate
        else {
            return None;
        };
        let (energy, parameters, bounds) = (energy.clone(), parameters.clone(), *bounds);
        let ctx = ctx.clone();
        let progress = Arc::new(Mutex::new(None));
        let told = progress.clone();
        std::thread::Builder::new()
            .name("formula check".into())
            .spawn(move || {
                let repaint = ctx.clone();
                expr::truth::set_observer(Some(Box::new(move |p: &TruthProgress| {
                    if let Ok(mut slot) = told.lock() {
                        *slot = Some(p.clone());
                    }
                    repaint.request_repaint();
                })));
                // The cache keeps the result, so the worker builds the same target at once.
                let _ = send.send(ExprTarget::cached(&energy, &parameters, bounds));
                ctx.request_repaint();
            })
            .ok()?;
        self.in_flight = Some(InFlight {
            candidate,
            verdict,
            progress,
        });
        Some(Duration::from_millis(30))
    }
}

/// The formula panel for an expression target `t`; true when Save preset was asked for.
pub fn formula_controls(ui: &mut Ui, t: &mut TargetSpec) -> bool {
    let id = ui.scope_id().with("formula editor");
    let shared = ui.data_mut(|d| {
        d.get_temp_mut_or_insert_with(id, || Arc::new(Mutex::new(FormulaEditor::new(t))))
            .clone()
    });
    let mut editor = shared.lock().expect("formula editor");
    // A preset loaded, a lesson chosen: the fields follow a target changed elsewhere, and a
    // check still running for an older edit is dropped (its verdict must not overwrite the
    // new target).
    if *t != editor.running {
        *editor = FormulaEditor::new(t);
    }
    let save = editor.ui(ui, t);
    if let Some(wait) = editor.poll(ui.ctx(), t) {
        ui.ctx().request_repaint_after(wait);
    }
    save
}

impl FormulaEditor {
    fn ui(&mut self, ui: &mut Ui, t: &mut TargetSpec) -> bool {
        self.gallery(ui);
        ui.label("U(θ₁, θ₂) = −log density + const")
            .on_hover_text(language_help());
        let error = self.parse_error.clone();
        let error_colour = super::palette::error(ui.visuals());
        let mut layouter = |ui: &Ui, buf: &dyn egui::TextBuffer, wrap_width: f32| {
            let mut job = marked(
                ui,
                buf.as_str(),
                error
                    .as_ref()
                    .filter(|(text, _)| text == buf.as_str())
                    .map(|(_, e)| e.byte),
                error_colour,
            );
            job.wrap.max_width = wrap_width;
            ui.fonts_mut(|f| f.layout_job(job))
        };
        let response = ui.add(
            egui::TextEdit::multiline(&mut self.text)
                .code_editor()
                .desired_rows(3)
                .desired_width(f32::INFINITY)
                .hint_text("e.g. (x^2 + y^2)/2")
                .layouter(&mut layouter),
        );
        if response.changed() {
            self.edited(DEBOUNCE);
        }
        if let Some((_, e)) = self.parse_error.clone() {
            ui.label(RichText::new(format!("✖ {e}")).color(error_colour).small());
            if let Some(name) = &e.unknown_symbol {
                let allowed = expr::check_parameter_name(name).is_ok()
                    && self.parameters.len() < expr::MAX_PARAMETERS;
                if allowed
                    && ui
                        .button(format!("add '{name}' as a parameter"))
                        .on_hover_text("A parameter is a live slider; it starts at 1")
                        .clicked()
                {
                    self.add_parameter(name.clone(), 1.0);
                    self.edited(Duration::ZERO);
                }
            }
        }
        self.parameter_sliders(ui);
        self.box_controls(ui);
        self.status(ui, t);
        ui.button("Save preset…")
            .on_hover_text(
                "Write this run, formula included, to a preset file (File → Save preset…)",
            )
            .clicked()
    }

    fn gallery(&mut self, ui: &mut Ui) {
        egui::ComboBox::from_label("examples")
            .selected_text("start from…")
            .show_ui(ui, |ui| {
                for (title, preset) in GALLERY {
                    if ui.selectable_label(false, title).clicked()
                        && let Some(spec) = gallery_target(preset)
                    {
                        self.set_fields(&spec);
                        self.edited(Duration::ZERO);
                    }
                }
            });
    }

    /// One slider per parameter, its range the parameter's own (from the preset, or fixed when
    /// it was added or loaded); × removes it.
    fn parameter_sliders(&mut self, ui: &mut Ui) {
        let mut changed = false;
        let mut removed = None;
        let names: Vec<String> = self.parameters.keys().cloned().collect();
        for name in names {
            let range = self.range_of(&name);
            let value = self.parameters.get_mut(&name).expect("listed");
            let mut typed = None;
            ui.horizontal(|ui| {
                if ui
                    .small_button("×")
                    .on_hover_text(format!("remove the parameter {name}"))
                    .clicked()
                {
                    removed = Some(name.clone());
                }
                let response = ui
                    .add(
                        egui::Slider::new(value, range[0]..=range[1])
                            .clamping(egui::SliderClamping::Never)
                            .update_while_editing(false)
                            .text(name.clone()),
                    )
                    .on_hover_text(format!(
                        "{name}: slider from {} to {} (a preset sets it in `ranges`); a typed \
                         value may go beyond. Moving it changes the density under the running \
                         chains.",
                        ranges::short_number(range[0]),
                        ranges::short_number(range[1])
                    ));
                if response.changed() {
                    changed = true;
                    typed = Some(*value);
                }
            });
            if let Some(v) = typed.filter(|v| *v < range[0] || *v > range[1]) {
                self.widen_to(&name, v);
            }
        }
        if let Some(name) = removed {
            self.parameters.remove(&name);
            self.ranges.remove(&name);
            self.fixed_ranges.remove(&name);
            changed = true;
        }
        if self.parameters.len() < expr::MAX_PARAMETERS {
            ui.horizontal(|ui| {
                let field = ui.add(
                    egui::TextEdit::singleline(&mut self.new_parameter)
                        .desired_width(90.0)
                        .hint_text("name"),
                );
                let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if (ui.button("add parameter").clicked() || enter)
                    && !self.new_parameter.trim().is_empty()
                {
                    let name = self.new_parameter.trim().to_owned();
                    match expr::check_parameter_name(&name) {
                        Err(why) => self.name_refused = Some(why),
                        Ok(()) if self.parameters.contains_key(&name) => {
                            self.name_refused = Some(format!("there is a parameter {name}"))
                        }
                        Ok(()) => {
                            self.add_parameter(name, 1.0);
                            self.new_parameter.clear();
                            self.name_refused = None;
                            changed = true;
                        }
                    }
                }
            });
            if let Some(why) = &self.name_refused {
                super::controls::warn(ui, why);
            }
        } else {
            ui.small(format!(
                "{} parameters, the most a formula takes (the GPU's target constants)",
                expr::MAX_PARAMETERS
            ));
        }
        if changed {
            self.edited(Duration::ZERO);
        }
    }

    /// The box of the truth: found, or set by hand.
    fn box_controls(&mut self, ui: &mut Ui) {
        let mut by_hand = self.bounds.is_some();
        let response = ui
            .checkbox(&mut by_hand, "set the box by hand")
            .on_hover_text(
                "Off: the box grows until the mass at its edge is below 1e-4. The exact \
                 truth (contours, marginals, distances) is the density within the box; the \
                 Truth line under the verdict says how much of the mass lies outside it, and \
                 within which box the moments settle.",
            );
        if response.changed() {
            self.bounds = if by_hand {
                match &self.verdict {
                    Some(Verdict::Running { bounds, .. }) => Some(*bounds),
                    _ => Some([[-4.0, 4.0]; 2]),
                }
            } else {
                None
            };
            self.edited(Duration::ZERO);
        }
        if let Some(b) = &mut self.bounds {
            let mut changed = false;
            for (axis, r) in ["θ₁", "θ₂"].iter().zip(b.iter_mut()) {
                ui.horizontal(|ui| {
                    ui.label(*axis);
                    for v in r.iter_mut() {
                        changed |= ui
                            .add(
                                egui::DragValue::new(v)
                                    .speed(0.05)
                                    .update_while_editing(false),
                            )
                            .changed();
                    }
                });
            }
            if changed {
                self.edited(DEBOUNCE);
            }
        }
    }

    /// Whether the formula shown runs, is being checked, or was refused (and why).
    fn status(&self, ui: &mut Ui, t: &TargetSpec) {
        let checking = self.in_flight.is_some() || self.due.is_some();
        if checking {
            // After a second, what the check is doing and how much of its work limit it used.
            let progress = self
                .in_flight
                .as_ref()
                .and_then(|f| f.progress.lock().ok()?.clone())
                .filter(|p| p.elapsed.as_secs_f64() >= 1.0);
            ui.horizontal(|ui| {
                ui.spinner();
                match progress {
                    Some(p) => ui.small(format!(
                        "checking the density: {} · {:.0}% of the work limit · {:.0} s",
                        p.stage,
                        100.0 * p.evaluations as f64 / p.limit as f64,
                        p.elapsed.as_secs_f64()
                    )),
                    None => ui.small("checking the density…"),
                };
            });
        }
        match &self.verdict {
            Some(Verdict::Running {
                bounds,
                log_z,
                extent,
                unsettled,
            }) if !checking => {
                ui.label(
                    RichText::new(format!(
                        "✔ running · box θ₁ ∈ [{}, {}], θ₂ ∈ [{}, {}] · log Z = {}",
                        ranges::short_number(bounds[0][0]),
                        ranges::short_number(bounds[0][1]),
                        ranges::short_number(bounds[1][0]),
                        ranges::short_number(bounds[1][1]),
                        ranges::short_number(*log_z)
                    ))
                    .color(super::palette::good(ui.visuals()))
                    .small(),
                );
                ui.small(format!("Truth: {extent}."));
                if let Some(warning) = unsettled {
                    ui.label(
                        RichText::new(format!("⚠ {warning}"))
                            .color(super::palette::warning(ui.visuals()))
                            .small(),
                    );
                }
            }
            Some(Verdict::Refused(why)) => {
                ui.label(
                    RichText::new(format!("✖ refused: {why}"))
                        .color(super::palette::error(ui.visuals()))
                        .small(),
                );
            }
            _ => {}
        }
        let pending = self.parse_error.is_some()
            || matches!(self.verdict, Some(Verdict::Refused(_)))
            || checking;
        if pending
            && *t == self.running
            && self.candidate() != self.running
            && let TargetSpec::Expression { energy, .. } = t
        {
            ui.small(format!(
                "The chains keep running on U = {}",
                shortened(energy, 60)
            ));
        }
    }
}

/// The formula as a layout job in the code font, the character at `error` (a byte offset)
/// marked: underlined on a tinted background, a space past the end marked the same way.
fn marked(ui: &Ui, text: &str, error: Option<usize>, colour: Color32) -> LayoutJob {
    let font = egui::TextStyle::Monospace.resolve(ui.style());
    let normal = TextFormat::simple(font.clone(), ui.visuals().text_color());
    let bad = TextFormat {
        background: colour.gamma_multiply(0.35),
        underline: egui::Stroke::new(2.0, colour),
        ..normal.clone()
    };
    let mut job = LayoutJob::default();
    match error {
        Some(at) if at < text.len() => {
            let end = text[at..]
                .char_indices()
                .nth(1)
                .map_or(text.len(), |(i, _)| at + i);
            job.append(&text[..at], 0.0, normal.clone());
            job.append(&text[at..end], 0.0, bad);
            job.append(&text[end..], 0.0, normal);
        }
        Some(_) => {
            job.append(text, 0.0, normal);
            job.append(" ", 0.0, bad);
        }
        None => job.append(text, 0.0, normal),
    }
    job
}

/// `text` cut to at most `chars` characters, an ellipsis marking the cut.
fn shortened(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The language in one hover text.
fn language_help() -> String {
    format!(
        "θ₁, θ₂ (also x, y or t1, t2), numbers, + − * / ^, parentheses, pi, named parameters \
         and the functions {}. logsumexp(a, b, …) is safe for mixtures: U = −logsumexp(−U₁, \
         −U₂, …). Where abs, min or max have no derivative the standard subgradient is used \
         (docs/MATH.md §9). At most {} characters, {} nested levels and {} parameters.",
        expr::parse::FUNCTIONS
            .iter()
            .map(|(f, _)| *f)
            .collect::<Vec<_>>()
            .join(", "),
        expr::MAX_FORMULA_BYTES,
        expr::MAX_NESTING,
        expr::MAX_PARAMETERS
    )
}
