//! What one MLP thermodynamics point's entropies cost: the ensemble's k-NN S and the windowed
//! S of single networks' iterates, timed while one learning rate of an MLP preset runs (a
//! measurement behind docs/thermodynamics.md, not a check).
//!
//! ```text
//! cargo run --release --example entropy_cost [-- PRESET,NETWORKS,STEPS,ETA,cpu|gpu[,HIDDEN]]
//! cargo run --release --example entropy_cost -- mlp-op,512,3000,0.004,cpu   # the default
//! ```
//!
//! HIDDEN replaces the preset's hidden layer widths (`16-16`: two layers of 16 units).

use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::AnyPreset;
use atmc_lab::runner::thermodynamics::measure_mlp_costed;

fn main() {
    let spec = std::env::args()
        .nth(1)
        .unwrap_or("mlp-op,512,3000,0.004,cpu".into());
    let f: Vec<&str> = spec.split(',').collect();
    let AnyPreset::Mlp(mut p) = AnyPreset::load(f[0]).unwrap() else {
        panic!("an MLP preset")
    };
    p.chains = f[1].parse().unwrap();
    p.steps = f[2].parse().unwrap();
    p.sampler.h = f[3].parse().unwrap();
    if let Some(h) = f.get(5) {
        p.network.hidden = h.split('-').map(|w| w.parse().unwrap()).collect();
    }
    let backend = if f[4] == "gpu" {
        BackendChoice::Gpu
    } else {
        BackendChoice::Cpu
    };
    let clock = std::time::Instant::now();
    let (point, cost) = measure_mlp_costed(&p, backend, &mut |_| {}).unwrap();
    eprintln!(
        "{spec}: total {:.2} s; {cost:?}\nS_knn {:?} over {:?} networks, note {:?}\nwindow {:?}\nU {} stationary {} {:?}",
        clock.elapsed().as_secs_f64(),
        point.s_knn,
        point.knn_networks,
        point.ensemble_entropy_note,
        point.window,
        point.u,
        point.stationary,
        point.excluded
    );
}
