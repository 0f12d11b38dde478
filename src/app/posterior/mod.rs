//! The 2-D view: live phase portraits of thousands of chains on a 2-D toy posterior (θ₁–θ₂
//! over the target's contours, θᵢ–pᵢ, pᵢ–ξᵢ), marginals against the exact ones, time series
//! and every control of a [`Preset`]. The chains run in [`session`].

pub mod session;

use super::colormap::Colormap;
use super::controls;
use super::plots;
use super::portrait::{self, Backdrop, PortraitData, ViewRange};
use super::simulated::{Simulated, SimulationHandle};
use super::view::{Action, Shell, View};
use super::worker::Control;
use crate::diagnostics::views::marginals;
use crate::engine::{Axis, BackendChoice, HistogramSpec};
use crate::preset::{AnyPreset, PlotPanel, Preset};
use egui::{RichText, Ui};
use session::{Command, Session, Snapshot};

/// Where the three portraits look.
#[derive(Clone, Copy, Debug)]
struct Views {
    theta: ViewRange,
    phase: ViewRange,
    thermostat: ViewRange,
}

/// Steps replayed before a divergence, and how fast.
const REPLAY_STEPS: u32 = 60;
const REPLAY_STEPS_PER_SECOND: f64 = 6.0;

/// A replay of the tracked chains' last steps before they diverged, in slow motion.
#[derive(Clone, Copy, Debug)]
struct Replay {
    from: u32,
    to: u32,
    started: std::time::Instant,
}

impl Replay {
    /// The step shown now.
    fn cursor(&self) -> u32 {
        let advanced = self.started.elapsed().as_secs_f64() * REPLAY_STEPS_PER_SECOND;
        (self.from + advanced as u32).min(self.to)
    }

    fn done(&self) -> bool {
        self.cursor() >= self.to
    }
}

/// What portrait `k` (θ–θ, θ–p, p–ξ) says instead of drawing data the sampler does not
/// have: ξ of a sampler without a thermostat (SGHMC) is a constant, not a cloud.
fn portrait_note(k: usize, kind: crate::math::SamplerKind) -> Option<&'static str> {
    match k {
        0 => None,
        _ if !kind.has_momentum() => Some("this sampler has no momentum p\nand no thermostat ξ"),
        2 if !kind.has_thermostat() => Some("this sampler has no thermostat ξ"),
        _ => None,
    }
}

/// The 2-D view's state.
pub struct PosteriorView {
    sim: Simulated<Command, Snapshot>,
    /// Presets loaded so far: snapshots of an older generation show the previous preset.
    generation: u64,
    /// The preset being edited (the controls' model).
    pub preset: Preset,
    applied: Preset,
    views: Views,
    textures: [portrait::PortraitTextures; 3],
    colormap: Colormap,
    /// The applied target's display grid (auto-range of θ) and contours.
    backdrop: Backdrop,
    panel_rects: [egui::Rect; 3],
    sent_views: Vec<HistogramSpec>,
    replay: Option<Replay>,
}

impl PosteriorView {
    /// The view on `preset`, with its engine on `backend`, running or paused.
    pub fn new(ctx: &egui::Context, preset: Preset, backend: BackendChoice, playing: bool) -> Self {
        let repaint = ctx.clone();
        let session = Session::start(preset.clone(), backend, playing, move || {
            repaint.request_repaint()
        });
        let backdrop = Backdrop::new(&preset.target);
        let r = backdrop.ranges(preset.view.coordinate as usize, &preset.sampler, None, None);
        let mut view = Self {
            sim: Simulated::new(session),
            generation: 0,
            applied: preset.clone(),
            preset,
            views: Views {
                theta: ViewRange::auto(r.theta.0, r.theta.1),
                phase: ViewRange::auto(r.phase.0, r.phase.1),
                thermostat: ViewRange::auto(r.thermostat.0, r.thermostat.1),
            },
            textures: Default::default(),
            colormap: Colormap::inferno(),
            backdrop,
            panel_rects: [egui::Rect::NOTHING; 3],
            sent_views: Vec::new(),
            replay: None,
        };
        view.send_views();
        view
    }

    /// The worker's handle (tests and tools wait on it).
    pub fn session(&self) -> &Session {
        self.sim.session()
    }

    /// The histograms the three portraits need.
    pub fn specs(&self) -> Vec<HistogramSpec> {
        let c = self.preset.view.coordinate as u8;
        let m = self.sim.snapshot().moments;
        let r = portrait::resolution_for(
            self.preset.chains,
            (m.alive + m.diverged > 0).then_some(m.alive),
        );
        vec![
            HistogramSpec::theta(self.views.theta.grid(r)),
            HistogramSpec {
                grid: self.views.phase.grid(r),
                axes: [Axis::Theta(c), Axis::P(c)],
            },
            HistogramSpec {
                grid: self.views.thermostat.grid(r),
                axes: [Axis::P(c), Axis::Xi(c)],
            },
        ]
    }

    /// Tells the worker which histograms to bin, when they changed.
    fn send_views(&mut self) {
        let specs = self.specs();
        if specs != self.sent_views {
            self.sim.command(Command::Views(specs.clone()));
            self.sent_views = specs;
        }
    }

    /// Whether the worker has yet to answer for the preset loaded last.
    pub fn loading(&self) -> bool {
        self.sim.snapshot().generation < self.generation
    }

    /// Loads a preset: the chains start over and the portraits auto-range.
    pub fn load_preset(&mut self, preset: Preset) {
        self.preset = preset;
        self.replay = None;
        self.apply_changes(true);
        for v in [
            &mut self.views.theta,
            &mut self.views.phase,
            &mut self.views.thermostat,
        ] {
            v.auto = true;
        }
    }

    /// Sends the edited preset to the worker when it changed (or, with `restart`, always);
    /// [`Preset::change_from`] decides there whether the chains go on or start over.
    fn apply_changes(&mut self, restart: bool) {
        if self.preset == self.applied && !restart {
            return;
        }
        self.backdrop.set_target(&self.preset.target);
        if restart {
            self.generation += 1;
        }
        self.sim.command(Command::Apply {
            preset: Box::new(self.preset.clone()),
            restart,
            generation: self.generation,
        });
        self.applied = self.preset.clone();
    }

    /// Moves the auto-ranging views to the ranges of the snapshot (within `tolerance` of
    /// their width; 0 settles them exactly).
    fn follow_views(&mut self, tolerance: f64) {
        let s = self.sim.snapshot();
        let r = self.backdrop.ranges(
            self.preset.view.coordinate as usize,
            &self.preset.sampler,
            Some(&s.moments),
            s.extents.as_ref(),
        );
        self.views.theta.follow(r.theta, tolerance);
        self.views.phase.follow(r.phase, tolerance);
        self.views.thermostat.follow(r.thermostat, tolerance);
    }

    fn explosion_banner(&mut self, ui: &mut Ui) {
        let s = self.sim.snapshot();
        let total = s.moments.diverged + s.moments.alive;
        let text = format!(
            "⚠ Momentum explosion: {} of {} chains diverged ({:.1}%), first seen at step {}. Diverged chains are frozen and excluded from every statistic.",
            s.moments.diverged,
            total,
            100.0 * s.moments.diverged_fraction(),
            s.first_divergence.unwrap_or(s.step)
        );
        if super::explosion_banner(ui, &text, "↺ Reset chains") {
            self.replay = None;
            self.sim.control(Control::Reset);
        }
    }

    fn portraits(&mut self, ui: &mut Ui, side: f32) {
        let c = self.preset.view.coordinate as u8;
        let names = [
            (
                "θ₁ – θ₂ over the target".to_owned(),
                [Axis::Theta(0), Axis::Theta(1)],
            ),
            (
                format!(
                    "phase space {} – {}",
                    Axis::Theta(c).label(),
                    Axis::P(c).label()
                ),
                [Axis::Theta(c), Axis::P(c)],
            ),
            (
                format!(
                    "thermostat {} – {}",
                    Axis::P(c).label(),
                    Axis::Xi(c).label()
                ),
                [Axis::P(c), Axis::Xi(c)],
            ),
        ];
        let replayed = self.replay.map(|r| self.replayed_trails(r.cursor()));
        let s = self.sim.snapshot().clone();
        let contours = self.backdrop.contours(s.contour_truth.as_deref());
        let (trails, trail_diverged_at) = match &replayed {
            Some((t, d)) => (t.as_slice(), d.as_slice()),
            None => (s.trails.as_slice(), s.trail_diverged_at.as_slice()),
        };
        let kind = self.preset.sampler.kind;
        ui.horizontal(|ui| {
            for (k, (title, axes)) in names.iter().enumerate() {
                // A portrait of axes the sampler lacks (SGLD's p and ξ) gives its room to the
                // others.
                if portrait_note(k, kind).is_some() {
                    self.panel_rects[k] = egui::Rect::NOTHING;
                    continue;
                }
                let spec_ok = s.specs.get(k).is_some_and(|sp| sp.axes == *axes);
                let histogram = if spec_ok {
                    s.histograms
                        .get(k)
                        .map(|(counts, _)| (&s.specs[k].grid, counts.as_slice()))
                } else {
                    None
                };
                let data = PortraitData {
                    title: title.clone(),
                    axes: *axes,
                    histogram,
                    trails,
                    trail_diverged_at,
                    contours: if k == 0 { contours } else { &[] },
                    log_scale: self.preset.view.log_scale,
                    note: portrait_note(k, self.preset.sampler.kind),
                    leapfrog: &s.history.leapfrog,
                };
                let view = match k {
                    0 => &mut self.views.theta,
                    1 => &mut self.views.phase,
                    _ => &mut self.views.thermostat,
                };
                let response =
                    portrait::show(ui, side, view, &data, &mut self.textures[k], &self.colormap);
                self.panel_rects[k] = response.rect;
            }
        });
    }

    /// The tracked chains' trails as they were at step `cursor` of a replay, and which of
    /// them had diverged by then.
    fn replayed_trails(
        &self,
        cursor: u32,
    ) -> (
        Vec<std::collections::VecDeque<crate::math::Chain2>>,
        Vec<u32>,
    ) {
        let h = &self.sim.snapshot().history;
        let trails = h
            .paths
            .iter()
            .map(|path| {
                path.iter()
                    .filter(|(step, _)| *step <= cursor && *step + 24 > cursor)
                    .map(|(_, c)| *c)
                    .collect()
            })
            .collect();
        let diverged = h
            .diverged_at
            .iter()
            .map(|&d| if d != 0 && d <= cursor { d } else { 0 })
            .collect();
        (trails, diverged)
    }

    /// Where a replay of the tracked chains' last steps before divergence would run, if any
    /// of them diverged: from [`REPLAY_STEPS`] before the first divergence to the last one.
    fn replay_range(&self) -> Option<(u32, u32)> {
        let h = &self.sim.snapshot().history;
        let first = h.diverged_at.iter().copied().filter(|&d| d != 0).min()?;
        let last = h.diverged_at.iter().copied().max()?;
        let earliest = h
            .paths
            .iter()
            .filter_map(|p| p.front())
            .map(|(s, _)| *s)
            .min()?;
        Some((first.saturating_sub(REPLAY_STEPS).max(earliest), last))
    }

    /// The row above the plots: what they show, the replay, modes visited.
    fn plot_bar(&mut self, ui: &mut Ui) {
        ui.horizontal_wrapped(|ui| {
            let v = &mut self.preset.view;
            ui.selectable_value(&mut v.plots, PlotPanel::TimeSeries, "time series");
            ui.selectable_value(&mut v.plots, PlotPanel::Growth, "growth (log axes)")
                .on_hover_text("|p|, |θ| and ξ of the tracked chains and the ensemble's quantiles, with the slope the printed O-step predicts");
            ui.selectable_value(&mut v.plots, PlotPanel::Convergence, "convergence")
                .on_hover_text("R-hat, nested R-hat, ESS and the kernel Stein discrepancy as the chains run, with rank plots: have the chains mixed?");
            if let Some((from, to)) = self.replay_range() {
                let label = match self.replay {
                    Some(r) => format!("replaying step {}… (click to stop)", r.cursor()),
                    None => format!("⟲ replay the {} steps before divergence", to - from),
                };
                if ui.button(label).clicked() {
                    self.replay = match self.replay {
                        Some(_) => None,
                        None => {
                            self.sim.control(Control::Play(false));
                            Some(Replay {
                                from,
                                to,
                                started: std::time::Instant::now(),
                            })
                        }
                    };
                }
            }
            if let Some(coverage) = self.sim.snapshot().modes_visited {
                ui.label(coverage.to_string())
                    .on_hover_text("Highlighted chains: modes visited per chain (on average), and by all of them together");
            }
            let s = self.sim.snapshot();
            if self.preset.sampler.kind.has_acceptance() && s.moments.alive > 0 {
                let [accepted, divergent] = s.moments.hmc_rates();
                let text = if divergent > 0.0 {
                    format!(
                        "acceptance {:.0} % · divergent {:.1} %",
                        100.0 * accepted,
                        100.0 * divergent
                    )
                } else {
                    format!("acceptance {:.0} %", 100.0 * accepted)
                };
                ui.label(text)
                    .on_hover_text(
                        "HMC: the share of chains whose last proposal the Metropolis test \
                         kept, and of those whose trajectory diverged (its energy grew by more \
                         than 1000: rejected). Near 1 the step size is timid; near 0 the chains \
                         barely move (0.65 to 0.8 is the usual aim).",
                    );
            }
            if let Some(variances) = self.sim.snapshot().moments.variances_text() {
                ui.label(variances).on_hover_text(
                    "Variance of each coordinate over all alive chains at this step (the \
                     target's is in its description; a far one is warned about above)",
                );
            }
        });
    }

    fn marginal_plots(&self, ui: &mut Ui, width: f32, height: f32) {
        let s = self.sim.snapshot();
        let (Some(spec), Some((counts, _))) = (s.specs.first(), s.histograms.first()) else {
            return;
        };
        let g = spec.grid;
        let (nx, ny) = (g.nx as usize, g.ny as usize);
        let counts: Vec<f64> = counts.iter().map(|&c| f64::from(c)).collect();
        let [mx, my] = marginals(&counts, nx, ny);
        let [tx, ty] = match s.view_truth.as_deref() {
            Some((tg, masses)) if *tg == g => marginals(masses, nx, ny),
            _ => [vec![0.0; nx], vec![0.0; ny]],
        };
        let size = egui::vec2(width, height);
        plots::marginal(ui, "marginal 1", "θ₁", g.x, &mx, &tx, size);
        plots::marginal(ui, "marginal 2", "θ₂", g.y, &my, &ty, size);
    }
}

impl View for PosteriorView {
    fn refresh(&mut self) {
        self.sim.refresh();
    }

    fn simulation(&self) -> Option<&dyn SimulationHandle> {
        Some(&self.sim)
    }

    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let hidden = self.preset.story.hide.clone();
        let playing = self.sim.snapshot().playing;
        let actions = controls::show(ui, &mut self.preset, playing, &hidden);
        shell.save_preset |= actions.save_preset;
        if actions.toggle_play {
            self.act(Action::TogglePlay);
        }
        if actions.step {
            self.act(Action::Step);
        }
        if actions.reset {
            self.act(Action::Reset);
        }
        self.apply_changes(false);
    }

    fn central(&mut self, ui: &mut Ui, _shell: &mut Shell) {
        if self.loading() {
            // The worker has not answered for the preset just loaded: rather than the old
            // preset's chains on the new axes, say what is happening.
            ui.centered_and_justified(|ui| {
                ui.horizontal_wrapped(|ui| {
                    ui.spinner();
                    ui.label(format!(
                        "Loading \"{}\": computing the target's exact truth and starting the \
                         chains…",
                        self.preset.name
                    ));
                });
            });
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(50));
            return;
        }
        let snapshot = self.sim.snapshot().clone();
        if let Some(notice) = &snapshot.notice {
            ui.label(
                RichText::new(format!("⚠ {notice}")).color(super::palette::warning(ui.visuals())),
            );
        }
        if snapshot.moments.diverged > 0 {
            self.explosion_banner(ui);
        }
        if let Some(far) = &snapshot.far_from_target {
            ui.label(
                RichText::new(format!("⚠ Far from the target: {far}"))
                    .color(super::palette::warning(ui.visuals())),
            )
            .on_hover_text(
                "The alive chains' moments miss the exact ones by more than 20% although this \
                 sampler is meant to sample the target (checked past half the preset's steps).",
            );
        }
        self.follow_views(0.15);
        let spacing = ui.spacing().item_spacing.x;
        let available = ui.available_size();
        let shown = (0..3)
            .filter(|&k| portrait_note(k, self.preset.sampler.kind).is_none())
            .count();
        // With fewer than three portraits the marginals take the place of one.
        let places = (shown + 1).min(3) as f32;
        let side = ((available.x - places * spacing) / places - 2.0)
            .min(available.y * 0.56)
            .max(120.0);
        // With fewer than three portraits (SGLD, SGD, SGHMC) the marginals move up beside
        // them, where the missing portraits were, and the plots below get the whole width.
        let marginals_beside = shown < 3 && self.preset.view.plots == PlotPanel::TimeSeries;
        let beside_width = available.x - shown as f32 * (side + spacing) - spacing;
        // A replay ends when it is done, and when the run it replays is gone (reset, a new
        // preset): its label and the growth plots' cursor would describe chains that no
        // longer exist.
        if self
            .replay
            .is_some_and(|r| r.done() || snapshot.step < r.to || self.replay_range().is_none())
        {
            self.replay = None;
        }
        if self.replay.is_some() {
            ui.ctx().request_repaint();
        }
        if marginals_beside {
            ui.horizontal(|ui| {
                self.portraits(ui, side);
                ui.vertical(|ui| {
                    self.marginal_plots(
                        ui,
                        beside_width.max(120.0),
                        (side - ui.spacing().item_spacing.y) / 2.0,
                    );
                });
            });
        } else {
            self.portraits(ui, side);
        }
        self.send_views();
        self.plot_bar(ui);
        let rest = ui.available_size();
        // Down to the status bar: plots folded onto two rows need the height.
        let plot_height = (rest.y - 12.0).clamp(80.0, 420.0);
        if self.preset.view.plots == PlotPanel::Growth {
            plots::growth(
                ui,
                &snapshot.history,
                &snapshot.growth,
                snapshot.sampler.as_ref(),
                snapshot.growth_rate.as_ref(),
                self.replay.map(|r| r.cursor()),
                rest.x,
                // Under the growth rate's line and the legend.
                (rest.y - 40.0).clamp(80.0, 320.0),
            );
            return;
        }
        if self.preset.view.plots == PlotPanel::Convergence {
            super::convergence_strip::strip(
                ui,
                &snapshot.series,
                snapshot.convergence.as_deref(),
                &mut self.preset.view.rank_plots,
                rest.x,
                rest.y - 12.0,
            );
            return;
        }
        let kind = self.preset.sampler.kind;
        let series = |ui: &mut Ui, width: f32| {
            plots::time_series(
                ui,
                &snapshot.series,
                self.preset.sampler.kinetic_target(),
                snapshot.chains,
                (kind.has_momentum(), kind.has_thermostat()),
                width,
                plot_height,
            );
        };
        if marginals_beside {
            series(ui, rest.x);
            return;
        }
        ui.horizontal(|ui| {
            let marginal_width = (rest.x * 0.28).max(120.0);
            ui.vertical(|ui| {
                self.marginal_plots(ui, marginal_width, (plot_height - 8.0) / 2.0);
            });
            ui.vertical(|ui| series(ui, rest.x - marginal_width - 2.0 * spacing));
        });
    }

    fn act(&mut self, action: Action) {
        if action == Action::Reset {
            self.replay = None;
        }
        if self.sim.transport(action) {
            return;
        }
        match action {
            Action::FlipSign => self.preset.sampler.flip_friction_sign(),
            Action::Faster => self.preset.view.set_speed(2.0 * self.preset.view.speed()),
            Action::Slower => self.preset.view.set_speed(0.5 * self.preset.view.speed()),
            _ => {}
        }
        self.apply_changes(false);
    }

    fn preset(&self) -> Option<AnyPreset> {
        Some(AnyPreset::Toy(self.preset.clone()))
    }

    fn load(&mut self, preset: AnyPreset) -> bool {
        match preset {
            AnyPreset::Toy(p) => {
                self.load_preset(p);
                true
            }
            _ => false,
        }
    }

    fn series_csv(&self) -> Option<String> {
        Some(crate::diagnostics::series_csv(&self.sim.snapshot().series))
    }

    fn export_draws(
        &self,
        path: &std::path::Path,
        loaded: Option<&AnyPreset>,
    ) -> Option<anyhow::Result<String>> {
        let snapshot = self.sim.snapshot();
        let Some(c) = snapshot.convergence.as_deref() else {
            return Some(Err(anyhow::anyhow!(
                "no draws yet: run the chains for a few frames first"
            )));
        };
        let draws = &c.draws;
        let applied = match self.applied.clone().validated() {
            Ok(applied) => applied,
            Err((_, message)) => return Some(Err(anyhow::anyhow!("{message}"))),
        };
        // Named for what ran: changed live since it was loaded, it says so, as Save does.
        let stored = match loaded {
            Some(loaded) => AnyPreset::Toy(self.applied.clone()).marked_modified(loaded),
            None => AnyPreset::Toy(self.applied.clone()),
        };
        let summary = serde_json::to_value(c.latest).unwrap_or_default();
        Some(
            draws
                .write_zarr(
                    path,
                    &applied.model(),
                    c.superchains,
                    &stored.to_ron(),
                    &summary,
                )
                .map(|committed| {
                    let what = format!(
                        "the last {} of the first {} chains (one per frame, up to step {})",
                        match draws.draws() {
                            1 => "draw".to_owned(),
                            n => format!("{n} draws"),
                        },
                        draws.chains(),
                        snapshot.step
                    );
                    match committed.notice() {
                        Some(notice) => format!("{what} ({notice})"),
                        None => what,
                    }
                }),
        )
    }

    fn panels(&self) -> Vec<(String, egui::Rect)> {
        ["θ₁–θ₂ panel", "θᵢ–pᵢ panel", "pᵢ–ξᵢ panel"]
            .iter()
            .zip(self.panel_rects)
            .filter(|(_, r)| r.is_positive())
            .map(|(l, r)| (l.to_string(), r))
            .collect()
    }

    fn error(&self) -> Option<String> {
        self.session().with_snapshot(|s| s.failed.clone())
    }

    fn settled_at(&mut self, step: u32) -> bool {
        let arrived = self
            .session()
            .with_snapshot(|s| s.step >= step && s.run_to.is_none());
        if !arrived {
            return false;
        }
        // The views follow the ensemble: settle them on the final snapshot, then wait for
        // the histograms binned on exactly those views (still at step N: the worker is
        // paused), so the picture does not depend on which snapshots the UI happened to see.
        self.refresh();
        self.follow_views(0.0);
        self.send_views();
        let specs = self.specs();
        self.session()
            .with_snapshot(|s| s.histograms.len() == 3 && s.specs == specs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SamplerKind;

    #[test]
    fn portraits_say_what_a_sampler_lacks() {
        assert_eq!(portrait_note(0, SamplerKind::Sgld), None);
        assert!(portrait_note(1, SamplerKind::Sgld).is_some());
        assert_eq!(portrait_note(1, SamplerKind::Sghmc), None);
        assert_eq!(
            portrait_note(2, SamplerKind::Sghmc),
            Some("this sampler has no thermostat ξ")
        );
        assert_eq!(portrait_note(2, SamplerKind::Atmc), None);
        assert_eq!(portrait_note(2, SamplerKind::Sgnht), None);
    }
}
