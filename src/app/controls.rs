//! The control panel: every field of the preset as a live widget. The controls only edit a
//! [`Preset`]; [`Preset::change_from`] decides what the change means for the running chains
//! and the view's worker carries it out.

use crate::math::{
    ExploringThermostat, Kinetic, NoiseMass, NoiseSpec, SamplerKind, SamplerSpec, ScheduleSpec,
    TargetSpec, XiUpdate, ranges, targets::TARGET_NAMES,
};
use crate::preset::{ControlGroup, Preset};
use egui::{RichText, Slider, Ui};

/// What the user asked for besides editing the preset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// Play or pause toggled.
    pub toggle_play: bool,
    /// One tick while paused.
    pub step: bool,
    /// Start the chains over.
    pub reset: bool,
    /// File → Save preset… (asked from the formula panel).
    pub save_preset: bool,
}

/// A warning line in the control panel.
pub(crate) fn warn(ui: &mut Ui, text: &str) {
    ui.label(
        RichText::new(text)
            .color(super::palette::warning(ui.visuals()))
            .small(),
    );
}

/// Why the number typed last into a numeric entry was refused, kept until a value is
/// accepted.
#[derive(Clone, Debug)]
struct Refused(String);

/// Every numeric entry of the app: a slider whose number can also be typed. A typed number
/// is read on Enter or when the field loses focus, never keystroke by keystroke (typing
/// "0.05" passes through "0", which a range may refuse, and a refused keystroke would
/// rewrite the text being typed). A value that `allowed` refuses leaves the old one in place
/// and the reason stays under the slider until a value is accepted. `build` adds the label
/// and the scale; the clamping and the editing rule are set here. `changed()` of the
/// response holds only for an accepted value.
pub(crate) fn number<N: egui::emath::Numeric>(
    ui: &mut Ui,
    value: &mut N,
    slider_range: std::ops::RangeInclusive<N>,
    allowed: impl Fn(f64) -> Result<(), String>,
    build: impl for<'b> FnOnce(Slider<'b>) -> Slider<'b>,
) -> egui::Response {
    let before = *value;
    // The slider's own id: the response is the number field's while it has focus, and the
    // reason must stay with the slider afterwards.
    let id = ui.next_auto_id();
    let mut response = ui.add(
        build(Slider::new(value, slider_range))
            .clamping(egui::SliderClamping::Never)
            .update_while_editing(false),
    );
    judge(ui, id, value, before, allowed, &mut response);
    response
}

/// Keeps `value` when `allowed` accepts it, else puts `before` back and remembers why under
/// `id`; then draws the reason remembered, if any.
fn judge<N: egui::emath::Numeric>(
    ui: &mut Ui,
    id: egui::Id,
    value: &mut N,
    before: N,
    allowed: impl Fn(f64) -> Result<(), String>,
    response: &mut egui::Response,
) {
    if *value != before {
        match allowed(value.to_f64()) {
            Ok(()) => ui.data_mut(|d| d.remove::<Refused>(id)),
            Err(why) => {
                *value = before;
                response.flags.remove(egui::response::Flags::CHANGED);
                ui.data_mut(|d| d.insert_temp(id, Refused(format!("refused: {why}"))));
            }
        }
    }
    if let Some(Refused(why)) = ui.data(|d| d.get_temp::<Refused>(id)) {
        warn(ui, &why);
    }
}

/// A number typed without a slider (a drag would move it linearly across decades), read and
/// judged as [`number`] does: on Enter or focus loss, refused values explained. `range` is
/// what is allowed; `label` names the field.
pub(crate) fn typed(
    ui: &mut Ui,
    value: &mut f64,
    range: std::ops::RangeInclusive<f64>,
    label: &str,
) -> egui::Response {
    let before = *value;
    let (lo, hi) = (*range.start(), *range.end());
    let mut response = ui
        .horizontal(|ui| {
            let name = ui.label(label);
            ui.add(
                egui::DragValue::new(value)
                    .speed(0.0)
                    .update_while_editing(false)
                    .custom_formatter(|v, _| super::axes::short(v)),
            )
            .labelled_by(name.id)
        })
        .inner;
    let id = response.id;
    judge(
        ui,
        id,
        value,
        before,
        |v| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!(
                    "{label} = {} is outside {} to {}",
                    ranges::short_number(v),
                    ranges::short_number(lo),
                    ranges::short_number(hi)
                ))
            }
        },
        &mut response,
    );
    response
}

/// A [`number`] between `lo` and `hi`, both allowed: the slider's ends are the whole range.
pub(crate) fn bounded<N: egui::emath::Numeric>(
    ui: &mut Ui,
    value: &mut N,
    range: std::ops::RangeInclusive<N>,
    build: impl for<'b> FnOnce(Slider<'b>) -> Slider<'b>,
) -> egui::Response {
    let (lo, hi) = (range.start().to_f64(), range.end().to_f64());
    let integer = N::INTEGRAL;
    number(
        ui,
        value,
        range,
        move |v| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                let show = |x: f64| {
                    if integer {
                        format!("{x:.0}")
                    } else {
                        ranges::short_number(x)
                    }
                };
                Err(format!(
                    "{} is outside {} to {}",
                    show(v),
                    show(lo),
                    show(hi)
                ))
            }
        },
        build,
    )
}

/// A [`number`] checked against one of the ranges the preset files are checked against
/// (`range`); the slider covers the usual values `lo`…`hi`. A preset's value beyond them is
/// kept, never clamped (that would silently change the run), and a typed value may go
/// anywhere the range allows. True when the value changed.
pub(crate) fn slider(
    ui: &mut Ui,
    value: &mut f64,
    range: ranges::Range,
    lo: f64,
    hi: f64,
    log: bool,
    label: &str,
) -> bool {
    let lo = lo.max(range.min);
    let hi = hi.min(range.max);
    number(
        ui,
        value,
        lo..=hi,
        |v| range.check(v).map(|_| ()),
        |s| s.logarithmic(log).text(label),
    )
    .on_hover_text(format!("allowed {}", range.describe()))
    .changed()
}

/// Play/pause, step and reset buttons. `playing` labels the play button.
pub fn transport(ui: &mut Ui, playing: bool, reset_label: &str) -> Actions {
    let mut actions = Actions::default();
    ui.horizontal(|ui| {
        let label = if playing { "❚❚ Pause" } else { "▶ Play" };
        if ui.button(label).on_hover_text("Space").clicked() {
            actions.toggle_play = true;
        }
        if ui
            .add_enabled(!playing, egui::Button::new("Step ▸"))
            .clicked()
        {
            actions.step = true;
        }
        if ui.button(reset_label).clicked() {
            actions.reset = true;
        }
    });
    actions
}

/// Draws the controls of a 2-D preset, leaving out the `hidden` groups (a lesson's choice).
/// `playing` labels the play button.
pub fn show(ui: &mut Ui, p: &mut Preset, playing: bool, hidden: &[ControlGroup]) -> Actions {
    let mut actions = transport(ui, playing, "↺ Reset chains");
    let shown = |g: ControlGroup| !hidden.contains(&g);
    run_controls(ui, p, hidden);
    ui.separator();
    if shown(ControlGroup::Sampler) {
        egui::CollapsingHeader::new(RichText::new("Sampler").strong())
            .default_open(true)
            .show(ui, |ui| sampler_controls(ui, &mut p.sampler));
    }
    actions.save_preset = model_controls(ui, p, hidden);
    actions
}

/// Everything of a 2-D preset but the sampler: what the columns of a comparison share. True
/// when Save preset was asked for.
pub fn shared_controls(ui: &mut Ui, p: &mut Preset) -> bool {
    run_controls(ui, p, &[]);
    model_controls(ui, p, &[])
}

/// One speed slider from one step per second (slow motion) to thousands of steps a frame.
pub fn speed_control(ui: &mut Ui, view: &mut crate::preset::ViewHints) {
    let mut speed = view.speed();
    if ui
        .add(
            Slider::new(&mut speed, 1.0..=120_000.0)
                .clamping(egui::SliderClamping::Edits)
                .logarithmic(true)
                .text("speed (steps/s)")
                .custom_formatter(|v, _| {
                    if v < 60.0 {
                        format!("{v:.0} (slow)")
                    } else {
                        format!("{v:.0}")
                    }
                }),
        )
        .on_hover_text(
            "Steps per second at 60 frames per second; below 60 the chains move in slow \
             motion, one step at a time (+/− on the keyboard)",
        )
        .changed()
    {
        view.set_speed(speed);
    }
}

/// Speed, number of chains and seed.
fn run_controls(ui: &mut Ui, p: &mut Preset, hidden: &[ControlGroup]) {
    if !hidden.contains(&ControlGroup::Speed) {
        speed_control(ui, &mut p.view);
    }
    if hidden.contains(&ControlGroup::Chains) {
        return;
    }
    ui.horizontal(|ui| {
        let mut chains = f64::from(p.chains);
        if ui
            .add(
                Slider::new(&mut chains, 100.0..=1_000_000.0)
                    .clamping(egui::SliderClamping::Edits)
                    .logarithmic(true)
                    .text("chains"),
            )
            .on_hover_text("Changing the number of chains reallocates and restarts them")
            .changed()
        {
            p.chains = chains.round() as u32;
            fit_chains_to_superchains(p);
        }
    });
    ui.horizontal(|ui| {
        ui.label("seed");
        ui.add(egui::DragValue::new(&mut p.seed))
            .on_hover_text("A new seed restarts the chains");
    });
    egui::CollapsingHeader::new(RichText::new("Initial state").strong())
        .default_open(false)
        .show(ui, |ui| init_controls(ui, p));
}

/// Rounds the chains to a multiple of the superchains (at least two chains each), so that
/// the preset stays valid and every superchain has as many chains.
fn fit_chains_to_superchains(p: &mut Preset) {
    if let Some(k) = p.init.superchains.filter(|&k| k >= 2) {
        let rounded = (f64::from(p.chains) / f64::from(k)).round() as u32 * k;
        p.chains = rounded.max(2 * k);
    }
}

/// Where the chains start: centre, spread, normal or uniform, and superchains for nested
/// R-hat. Any change restarts the chains.
fn init_controls(ui: &mut Ui, p: &mut Preset) {
    let init = &mut p.init;
    ui.horizontal(|ui| {
        ui.label("centre");
        ui.add(egui::DragValue::new(&mut init.center[0]).speed(0.1));
        ui.add(egui::DragValue::new(&mut init.center[1]).speed(0.1));
    });
    slider(
        ui,
        &mut init.scale,
        const { field_range("init.scale") },
        0.01,
        20.0,
        true,
        "spread",
    );
    ui.checkbox(&mut init.uniform, "uniform on centre ± spread")
        .on_hover_text("Off: normal with the spread as standard deviation");
    let mut grouped = init.superchains.is_some();
    if ui
        .checkbox(&mut grouped, "superchains")
        .on_hover_text(
            "Groups of chains that share a start, the starts drawn as above: nested R-hat asks \
             whether the groups have forgotten where they began (Plots → convergence)",
        )
        .changed()
    {
        init.superchains = grouped.then_some(16);
    }
    if let Some(k) = &mut init.superchains {
        let most = (p.chains / 2).clamp(2, crate::math::init::MAX_SUPERCHAINS);
        ui.horizontal(|ui| {
            ui.add(egui::DragValue::new(k).range(2..=most))
                .on_hover_text("The chains are rounded to a multiple of the superchains");
            ui.label(format!("of {} chains each", p.chains / (*k).max(1)));
        });
    }
    fit_chains_to_superchains(p);
}

/// Target, gradient noise, schedule and view. True when Save preset was asked for.
fn model_controls(ui: &mut Ui, p: &mut Preset, hidden: &[ControlGroup]) -> bool {
    let shown = |g: ControlGroup| !hidden.contains(&g);
    let mut save = false;
    if shown(ControlGroup::Target) {
        egui::CollapsingHeader::new(RichText::new("Target").strong())
            .default_open(true)
            .show(ui, |ui| save = target_controls(ui, &mut p.target));
    }
    if shown(ControlGroup::Noise) {
        egui::CollapsingHeader::new(RichText::new("Gradient noise").strong())
            .default_open(true)
            .show(ui, |ui| noise_controls(ui, &mut p.noise));
    }
    if shown(ControlGroup::Schedule) {
        egui::CollapsingHeader::new(RichText::new("Step-size schedule").strong())
            .default_open(false)
            .show(ui, |ui| schedule_controls(ui, &mut p.schedule, p.steps));
    }
    if shown(ControlGroup::View) {
        egui::CollapsingHeader::new(RichText::new("View").strong())
            .default_open(false)
            .show(ui, |ui| {
                ui.horizontal(|ui| {
                    ui.label("coordinate i");
                    ui.selectable_value(&mut p.view.coordinate, 0, "1");
                    ui.selectable_value(&mut p.view.coordinate, 1, "2");
                });
                ui.checkbox(&mut p.view.log_scale, "logarithmic density");
                ui.horizontal(|ui| {
                    ui.label("plots");
                    ui.selectable_value(
                        &mut p.view.plots,
                        crate::preset::PlotPanel::TimeSeries,
                        "time series",
                    );
                    ui.selectable_value(
                        &mut p.view.plots,
                        crate::preset::PlotPanel::Growth,
                        "growth",
                    );
                    ui.selectable_value(
                        &mut p.view.plots,
                        crate::preset::PlotPanel::Convergence,
                        "convergence",
                    );
                });
                bounded(ui, &mut p.view.highlighted_chains, 0..=1000, |s| {
                    s.text("highlighted chains")
                });
            });
    }
    save
}

/// The range of the field at `path` of a 2-D preset (an MLP preset's sampler and schedule
/// have the same), from the table that the command line's flags and the sweeps' axes are
/// checked against. Called in a `const` block, a path the table lacks does not compile.
pub(crate) const fn field_range(path: &str) -> ranges::Range {
    crate::preset::fields::range(crate::preset::fields::Kind::Toy, path)
}

/// Every parameter of the sampler, ATMC's printed switches included, offering every
/// sampler.
pub fn sampler_controls(ui: &mut Ui, s: &mut SamplerSpec) {
    sampler_controls_of(ui, s, &SamplerKind::ALL, Temperature::Linear);
}

/// How the temperature slider reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temperature {
    /// 0 … 5 on a linear scale (the 2-D targets' lessons).
    Linear,
    /// 10⁻⁴ … 10 on a log scale, with T = 0 as a button and the meaning written beside it
    /// (the networks' cold-posterior experiments).
    Tempering,
}

/// [`sampler_controls`] offering only `kinds` (networks have no HMC yet), with the
/// temperature read as `temperature` says.
pub fn sampler_controls_of(
    ui: &mut Ui,
    s: &mut SamplerSpec,
    kinds: &[(SamplerKind, &str)],
    temperature: Temperature,
) {
    egui::ComboBox::from_label("sampler")
        .selected_text(s.kind.name().to_uppercase())
        .show_ui(ui, |ui| {
            for &(kind, name) in kinds {
                ui.selectable_value(&mut s.kind, kind, name.to_uppercase());
            }
        });
    let h_label = if s.kind == SamplerKind::Sgd {
        "learning rate h"
    } else {
        "step size h"
    };
    let h_range = const { field_range("sampler.h") };
    slider(ui, &mut s.h, h_range, 1e-4, 1.0, true, h_label);
    let t_range = const { field_range("sampler.temperature") };
    match temperature {
        _ if s.kind == SamplerKind::Sgd => {}
        Temperature::Linear => {
            slider(
                ui,
                &mut s.temperature,
                t_range,
                0.0,
                5.0,
                false,
                "temperature T",
            );
        }
        Temperature::Tempering => tempering_controls(ui, s, t_range),
    }
    if s.kind.has_momentum() {
        let mass_range = const { field_range("sampler.mass") };
        slider(ui, &mut s.mass, mass_range, 0.01, 100.0, true, "mass m");
    }
    match s.kind {
        SamplerKind::Atmc => {
            slider(
                ui,
                &mut s.friction_floor,
                const { field_range("sampler.friction_floor") },
                0.0,
                100.0,
                true,
                "friction floor D",
            );
            let sign = const { field_range("sampler.friction_sign") };
            bounded(ui, &mut s.friction_sign, sign.min..=sign.max, |s| {
                s.text("friction sign φ").step_by(0.05)
            })
            .on_hover_text(
                "+1: e^(−βh), correct. −1: e^(+βh), as printed in the paper. 0: no friction.",
            );
            ui.horizontal(|ui| {
                ui.small("−1 as printed");
                ui.add_space(40.0);
                ui.small("0 none");
                ui.add_space(40.0);
                ui.small("+1 correct");
            });
            ui.horizontal(|ui| {
                ui.label("thermostat");
                ui.selectable_value(&mut s.xi_update, XiUpdate::Accumulate, "accumulate");
                ui.selectable_value(&mut s.xi_update, XiUpdate::Overwrite, "overwrite")
                    .on_hover_text("As printed in Algorithm 1: ξ ← h m (K'² − T K'')");
            });
            ui.horizontal(|ui| {
                ui.label("noise mass");
                ui.selectable_value(&mut s.noise_mass, NoiseMass::With, "with m");
                ui.selectable_value(&mut s.noise_mass, NoiseMass::Without, "without m")
                    .on_hover_text("As printed: the injected noise lacks the factor m");
            });
            let mut hyperbolic = matches!(s.kinetic, Kinetic::Hyperbolic { .. });
            ui.horizontal(|ui| {
                ui.label("kinetic energy");
                ui.selectable_value(&mut hyperbolic, false, "Gaussian");
                ui.selectable_value(&mut hyperbolic, true, "hyperbolic");
            });
            match (&mut s.kinetic, hyperbolic) {
                (Kinetic::Hyperbolic { c }, true) => {
                    let speed = const { field_range("sampler.kinetic.c") };
                    slider(ui, c, speed, 0.01, 100.0, true, "speed limit c");
                    ui.small(
                        "Hyperbolic K: the OU step freezes s = √(1 + p²/(m²c²)), an approximation.",
                    );
                }
                (Kinetic::Gaussian, true) => s.kinetic = Kinetic::Hyperbolic { c: 1.0 },
                (Kinetic::Hyperbolic { .. }, false) => s.kinetic = Kinetic::Gaussian,
                (Kinetic::Gaussian, false) => {}
            }
            if s.friction_sign < 0.0 {
                warn(
                    ui,
                    "φ < 0 amplifies the momentum every step (by e⁺ᵝʰ): expect an explosion.",
                );
            } else if s.friction_sign == 0.0 {
                warn(
                    ui,
                    "φ = 0: no friction, the injected noise heats the chains without bound.",
                );
            }
            if s.xi_update == XiUpdate::Overwrite {
                warn(
                    ui,
                    "Overwrite: ξ forgets the noise level; noisy gradients run hot.",
                );
            }
            if s.noise_mass == NoiseMass::Without && s.mass != 1.0 {
                warn(
                    ui,
                    "Without m: ξ settles at a wrong value that hides the defect (watch mean ξ).",
                );
            }
        }
        SamplerKind::Sghmc => {
            slider(
                ui,
                &mut s.sghmc_friction,
                const { field_range("sampler.sghmc_friction") },
                0.0,
                50.0,
                false,
                "friction C",
            );
            slider(
                ui,
                &mut s.sghmc_noise_estimate,
                const { field_range("sampler.sghmc_noise_estimate") },
                0.0,
                50.0,
                false,
                "noise estimate B̂",
            );
            if s.sghmc_noise_estimate > s.sghmc_friction {
                warn(
                    ui,
                    "B̂ must not exceed C (the injected variance 2(C − B̂)h would be negative): B̂ = C is used.",
                );
                s.sghmc_noise_estimate = s.sghmc_friction;
            }
        }
        SamplerKind::Sgnht => {
            slider(
                ui,
                &mut s.sgnht_diffusion,
                const { field_range("sampler.sgnht_diffusion") },
                0.0,
                50.0,
                false,
                "diffusion A",
            );
            ui.checkbox(
                &mut s.sgnht_shared_xi,
                "one ξ shared by all coordinates (paper)",
            );
        }
        SamplerKind::Sgd => {
            slider(
                ui,
                &mut s.sgd_momentum,
                const { field_range("sampler.sgd_momentum") },
                0.0,
                0.99,
                false,
                "momentum μ",
            );
        }
        SamplerKind::Hmc => {
            let steps = const { field_range("sampler.leapfrog_steps") };
            bounded(
                ui,
                &mut s.leapfrog_steps,
                steps.min as u32..=steps.max as u32,
                |s| s.logarithmic(true).text("leapfrog steps L"),
            )
            .on_hover_text(format!("allowed {}", steps.describe()));
            ui.label(
                "Each step: a fresh momentum, L leapfrog steps of size h, then the Metropolis \
                 test keeps the proposal or the old position (exact at any h).",
            );
        }
        SamplerKind::Sgld => {}
    }
}

/// The temperature of a posterior tempered as p(θ|D)^{1/T}: a log slider over 10⁻⁴ … 10, a
/// button for T = 0 (no injected noise) and a line saying what the value means.
fn tempering_controls(ui: &mut Ui, s: &mut SamplerSpec, range: ranges::Range) {
    // The log slider cannot reach 0: a button sets it, and the slider brings it back.
    if s.temperature == 0.0 {
        let mut t = 1e-4;
        if slider(ui, &mut t, range, 1e-4, 10.0, true, "temperature T") {
            s.temperature = t;
        }
    } else {
        slider(
            ui,
            &mut s.temperature,
            range,
            1e-4,
            10.0,
            true,
            "temperature T",
        );
    }
    let t = s.temperature;
    let meaning = if t == 0.0 {
        "no noise: each network descends to a mode (optimisation, not sampling)".into()
    } else if (t - 1.0).abs() < 1e-9 {
        "T = 1: the Bayes posterior p(θ|D)".into()
    } else if t < 1.0 {
        format!(
            "a cold posterior p(θ|D)^{{1/T}}: sharper than Bayes, raised to {}",
            ranges::short_number(1.0 / t)
        )
    } else {
        format!(
            "a warm posterior p(θ|D)^{{1/T}}: flatter than Bayes, raised to {}",
            ranges::short_number(1.0 / t)
        )
    };
    ui.horizontal_wrapped(|ui| {
        if ui
            .selectable_label(t == 0.0, "T = 0")
            .on_hover_text(
                "No injected noise: the chains optimise instead of sampling (again: T = 1)",
            )
            .clicked()
        {
            s.temperature = if t == 0.0 { 1.0 } else { 0.0 };
        }
        ui.small(meaning);
    });
}

/// The target's family and its parameters; a typed formula gets the formula panel. True
/// when Save preset was asked for.
fn target_controls(ui: &mut Ui, t: &mut TargetSpec) -> bool {
    let current = t.name();
    egui::ComboBox::from_label("target")
        .selected_text(current)
        .show_ui(ui, |ui| {
            for (name, description) in TARGET_NAMES {
                if ui
                    .selectable_label(current == *name, *name)
                    .on_hover_text(*description)
                    .clicked()
                    && current != *name
                {
                    *t = TargetSpec::from_name(name).expect("listed target");
                }
            }
            let typed = "expression";
            if ui
                .selectable_label(current == typed, "expression (typed formula)")
                .on_hover_text("Your own energy U(θ₁, θ₂), starting from the ring of eight modes")
                .clicked()
                && current != typed
            {
                // A shipped example: it passed its checks when the preset tests ran.
                if let Some(spec) = super::formula::gallery_target(super::formula::GALLERY[0].1)
                    && spec.check().is_ok()
                {
                    *t = spec;
                }
            }
        });
    if let TargetSpec::Expression { .. } = t {
        return super::formula::formula_controls(ui, t);
    }
    // Each family lists its continuous parameters with the ranges its file is checked
    // against; the logistic posterior adds its whole-number data settings.
    for (parameter, value) in t.parameters_mut() {
        let [lo, hi] = parameter.usual;
        slider(
            ui,
            value,
            parameter.range,
            lo,
            hi,
            parameter.log,
            parameter.label,
        );
    }
    if let TargetSpec::Logistic {
        data_points,
        batch_size,
        data_seed,
        ..
    } = t
    {
        bounded(ui, data_points, 10..=ranges::DATA_POINTS.max as u32, |s| {
            s.logarithmic(true).text("data points N")
        });
        bounded(ui, batch_size, 1..=(*data_points).max(1), |s| {
            s.logarithmic(true).text("batch size n")
        });
        ui.horizontal(|ui| {
            ui.label("data seed");
            ui.add(egui::DragValue::new(data_seed));
        });
    }
    false
}

fn noise_controls(ui: &mut Ui, n: &mut NoiseSpec) {
    let name = match n {
        NoiseSpec::None => "none",
        NoiseSpec::Isotropic { .. } => "isotropic",
        NoiseSpec::Anisotropic { .. } => "anisotropic",
        NoiseSpec::StateDependent { .. } => "state-dependent",
    };
    let sigma = match *n {
        NoiseSpec::None => 1.0,
        NoiseSpec::Isotropic { sigma } | NoiseSpec::StateDependent { sigma, .. } => sigma,
        NoiseSpec::Anisotropic { sigma1, .. } => sigma1,
    };
    egui::ComboBox::from_label("noise model")
        .selected_text(name)
        .show_ui(ui, |ui| {
            let options = [
                ("none", NoiseSpec::None),
                ("isotropic", NoiseSpec::Isotropic { sigma }),
                (
                    "anisotropic",
                    NoiseSpec::Anisotropic {
                        sigma1: sigma,
                        sigma2: sigma,
                    },
                ),
                (
                    "state-dependent",
                    NoiseSpec::StateDependent { sigma, kappa: 0.5 },
                ),
            ];
            for (label, spec) in options {
                if ui.selectable_label(name == label, label).clicked() && name != label {
                    *n = spec;
                }
            }
        });
    match n {
        NoiseSpec::None => {}
        NoiseSpec::Isotropic { sigma } => {
            let range = const { field_range("noise.sigma") };
            slider(ui, sigma, range, 0.0, 100.0, false, "σ");
        }
        NoiseSpec::Anisotropic { sigma1, sigma2 } => {
            let range = const { field_range("noise.sigma1") };
            slider(ui, sigma1, range, 0.0, 100.0, false, "σ₁");
            let range = const { field_range("noise.sigma2") };
            slider(ui, sigma2, range, 0.0, 100.0, false, "σ₂");
        }
        NoiseSpec::StateDependent { sigma, kappa } => {
            let range = const { field_range("noise.sigma") };
            slider(ui, sigma, range, 0.0, 100.0, false, "σ");
            let range = const { field_range("noise.kappa") };
            slider(ui, kappa, range, 0.0, 10.0, false, "κ");
            ui.small("σ(θ) = σ(1 + κ|θ|) breaks ATMC's constant-noise assumption.");
        }
    }
}

/// Constant or cyclical step size.
pub fn schedule_controls(ui: &mut Ui, s: &mut ScheduleSpec, steps: u32) {
    let mut cyclical = matches!(s, ScheduleSpec::Cyclical { .. });
    ui.horizontal(|ui| {
        ui.selectable_value(&mut cyclical, false, "constant");
        ui.selectable_value(&mut cyclical, true, "cyclical");
    });
    match (&mut *s, cyclical) {
        (ScheduleSpec::Constant, true) => {
            *s = ScheduleSpec::Cyclical {
                total_steps: steps.max(100),
                cycles: 4,
                explore_fraction: 0.8,
                thermostat_while_exploring: ExploringThermostat::Frozen,
            }
        }
        (ScheduleSpec::Cyclical { .. }, false) => *s = ScheduleSpec::Constant,
        (
            ScheduleSpec::Cyclical {
                total_steps,
                cycles,
                explore_fraction,
                thermostat_while_exploring,
            },
            true,
        ) => {
            bounded(ui, total_steps, 10..=1_000_000, |s| {
                s.logarithmic(true).text("total steps K")
            });
            bounded(ui, cycles, 1..=100, |s| {
                s.logarithmic(true).text("cycles M")
            });
            let mut f = *explore_fraction;
            if slider(
                ui,
                &mut f,
                const { field_range("schedule.explore_fraction") },
                0.0,
                1.0,
                false,
                "exploration fraction",
            ) {
                *explore_fraction = f;
            }
            ui.horizontal(|ui| {
                ui.label("thermostat while exploring:");
                for (choice, name) in ExploringThermostat::ALL {
                    ui.selectable_value(thermostat_while_exploring, choice, name);
                }
            });
            ui.small(match thermostat_while_exploring {
                ExploringThermostat::Frozen => {
                    "While exploring, no noise is injected and the thermostat ξ is frozen; \
                     statistics use the sampling stage only."
                }
                ExploringThermostat::Running => {
                    "Running: while exploring, ξ keeps heating toward T = 0 and ratchets up \
                     cycle by cycle (MATH.md §3.1); the chains end up too cold."
                }
            });
        }
        (ScheduleSpec::Constant, false) => {}
    }
}
