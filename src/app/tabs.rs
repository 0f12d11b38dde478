//! The tabs of the lab. One table, [`TABS`], says for every tab its label, what it shows, its
//! short name, which presets it shows and how its view is made; everything else the shell
//! knows about tabs is read from that table. A new view is one panel type and one row here.

use super::view::View;
use super::{Folders, compare, mlp, posterior, sweep, thermodynamics, training};
use crate::engine::BackendChoice;
use crate::preset::{AnyPreset, Comparison, MlpPreset, Preset};

/// The tabs of the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// 2-D toy posteriors: phase portraits of θ, p, ξ ([`posterior::PosteriorView`]).
    Posterior,
    /// Two to four samplers side by side in lockstep ([`compare::CompareView`]).
    Compare,
    /// Bayesian MLPs on 2-D classification data ([`mlp::MlpView`]).
    Mlp,
    /// ResNet++ trained in the background ([`training::TrainingView`]).
    Training,
    /// A statistic of a parameter sweep over its grid ([`sweep::SweepView`]).
    Sweep,
    /// The free energy of SGD over learning rates ([`thermodynamics::ThermoView`]).
    Thermo,
}

/// What a tab's view is made from.
pub struct ViewStart<'a> {
    /// The UI, for repaints from the view's worker.
    pub ctx: &'a egui::Context,
    /// Where the view's engines run.
    pub backend: BackendChoice,
    /// Where the view writes what it makes without asking for a path.
    pub folders: &'a Folders,
    /// The preset to open on (one the tab [shows](TabSpec::shows)); None: the tab's default.
    pub preset: Option<AnyPreset>,
    /// Running, or paused.
    pub playing: bool,
}

/// One tab: everything the shell needs to know about it.
pub struct TabSpec {
    /// The tab.
    pub tab: Tab,
    /// The label in the menu bar.
    pub label: &'static str,
    /// What the tab shows, on hover and in the Help menu.
    pub hover: &'static str,
    /// The short name (`atmc-lab screenshot --tab NAME`).
    pub name: &'static str,
    /// Whether a preset of this kind opens in this tab.
    pub shows: fn(&AnyPreset) -> bool,
    /// The tab's view.
    pub create: fn(ViewStart) -> Box<dyn View>,
}

/// Every tab, in menu order.
pub const TABS: [TabSpec; 6] = [
    TabSpec {
        tab: Tab::Posterior,
        label: "2-D posteriors",
        hover: "Thousands of chains on 2-D toy posteriors: phase portraits of θ, p, ξ",
        name: "posterior",
        shows: |p| matches!(p, AnyPreset::Toy(_)),
        create: posterior_view,
    },
    TabSpec {
        tab: Tab::Compare,
        label: "Side by side",
        hover: "Two to four samplers on the same target, seed and gradient noise, in lockstep",
        name: "compare",
        shows: |p| matches!(p, AnyPreset::Comparison(_)),
        create: compare_view,
    },
    TabSpec {
        tab: Tab::Mlp,
        label: "Bayesian MLPs",
        hover: "Thousands of small networks on 2-D classification data",
        name: "mlp",
        shows: |p| matches!(p, AnyPreset::Mlp(_)),
        create: mlp_view,
    },
    TabSpec {
        tab: Tab::Training,
        label: "ResNet++ training",
        hover: "ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD, in the background",
        name: "training",
        shows: |_| false,
        create: |start| Box::new(training::TrainingView::new(start.ctx)),
    },
    TabSpec {
        tab: Tab::Sweep,
        label: "Sweeps",
        hover: "A statistic over a grid of parameter values, one run per point; click a \
                point to open it live",
        name: "sweep",
        shows: |_| false,
        create: |start| {
            Box::new(sweep::SweepView::new(
                start.backend,
                start.folders.sweeps.clone(),
            ))
        },
    },
    TabSpec {
        tab: Tab::Thermo,
        label: "Thermodynamics",
        hover: "SGD as free-energy minimisation: U, S and two temperatures over learning \
                rates, the Gibbs test, the sphere toy",
        name: "thermo",
        shows: |p| matches!(p, AnyPreset::Sphere(_)),
        create: thermodynamics_view,
    },
];

fn posterior_view(start: ViewStart) -> Box<dyn View> {
    let preset = match start.preset {
        Some(AnyPreset::Toy(p)) => p,
        _ => Preset::default_preset(),
    };
    Box::new(posterior::PosteriorView::new(
        start.ctx,
        preset,
        start.backend,
        start.playing,
    ))
}

fn compare_view(start: ViewStart) -> Box<dyn View> {
    let preset = match start.preset {
        Some(AnyPreset::Comparison(p)) => p,
        _ => Comparison::default_comparison(),
    };
    Box::new(compare::CompareView::new(
        start.ctx,
        preset,
        start.backend,
        start.playing,
    ))
}

fn mlp_view(start: ViewStart) -> Box<dyn View> {
    let preset = match start.preset {
        Some(AnyPreset::Mlp(p)) => p,
        _ => MlpPreset::default_preset(),
    };
    Box::new(mlp::MlpView::new(
        start.ctx,
        preset,
        start.backend,
        start.playing,
    ))
}

fn thermodynamics_view(start: ViewStart) -> Box<dyn View> {
    let mut view = thermodynamics::ThermoView::new(start.backend, start.folders.sweeps.clone());
    if let Some(preset) = start.preset {
        view.load(preset);
    }
    Box::new(view)
}

impl Tab {
    /// Every tab, in menu order.
    pub const ALL: [Tab; TABS.len()] = {
        let mut all = [Tab::Posterior; TABS.len()];
        let mut k = 0;
        while k < TABS.len() {
            all[k] = TABS[k].tab;
            k += 1;
        }
        all
    };

    /// The tab's row of [`TABS`].
    pub fn spec(self) -> &'static TabSpec {
        &TABS[self.index()]
    }

    /// The label in the menu bar.
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// What the tab shows, on hover.
    pub fn hover(self) -> &'static str {
        self.spec().hover
    }

    /// The tab's place in the menu (and in [`TABS`]).
    pub(super) fn index(self) -> usize {
        TABS.iter()
            .position(|spec| spec.tab == self)
            .expect("every tab has a row in TABS")
    }

    /// The tab with this name (its label, lower case, or its short name: posterior,
    /// compare, mlp, training, sweep, thermo).
    pub fn named(name: &str) -> Option<Tab> {
        let name = name.to_lowercase();
        TABS.iter()
            .find(|spec| spec.label.to_lowercase() == name || spec.name == name)
            .map(|spec| spec.tab)
    }

    /// The tab that shows a kind of preset.
    pub fn of(preset: &AnyPreset) -> Tab {
        TABS.iter()
            .find(|spec| (spec.shows)(preset))
            .expect("every kind of preset has a tab")
            .tab
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tab_has_one_row_and_every_kind_of_preset_one_tab() {
        for (k, spec) in TABS.iter().enumerate() {
            assert_eq!(spec.tab.index(), k, "{:?} has one row", spec.tab);
            assert_eq!(Tab::named(spec.name), Some(spec.tab));
            assert_eq!(Tab::named(spec.label), Some(spec.tab));
        }
        let presets = [
            AnyPreset::Toy(Preset::default_preset()),
            AnyPreset::Comparison(Comparison::default_comparison()),
            AnyPreset::Mlp(MlpPreset::default_preset()),
            AnyPreset::load("sphere-up").expect("shipped"),
        ];
        for preset in &presets {
            let showing: Vec<Tab> = TABS
                .iter()
                .filter(|spec| (spec.shows)(preset))
                .map(|spec| spec.tab)
                .collect();
            assert_eq!(showing.len(), 1, "{} opens in {showing:?}", preset.name());
        }
        assert_eq!(Tab::of(&presets[3]), Tab::Thermo);
        assert_eq!(Tab::named("nothing"), None);
    }
}
