//! The CPU engine: the reference backend, multi-threaded over chains with rayon.
//!
//! Each thread takes a chunk of chains and advances each chain through all K steps while its
//! state stays in registers, the same schedule as one GPU invocation.

use super::{
    BackendInfo, ChainStates, Engine, HistogramSpec, InitSpec, MAX_HISTOGRAMS, Moments, Report,
};
use crate::math::rng::seed_key;
use crate::math::{Chain2, ChainOf, Lanes, Model, RngLanes};
use rayon::prelude::*;

/// Chains per rayon task: large enough to amortise scheduling, small enough to balance.
const CHUNK: usize = 2048;

/// Chains stepped together as SIMD lanes.
const LANES: usize = 8;

/// Advances up to [`LANES`] chains (`group`) by `steps` steps as lanes of one vector: the
/// same `Model::advance` as a single chain, on [`Lanes`]. A lane that diverges is frozen in
/// the state it diverged in, exactly as the scalar path would leave it.
fn advance_lanes(
    model: &Model,
    seed: u64,
    base: u32,
    step0: u32,
    steps: u32,
    group: &mut [Chain2],
    diverged_at: &mut [u32],
) {
    let n = group.len();
    let mut alive = [false; LANES];
    let mut state = ChainOf::<Lanes<LANES>>::default();
    for l in 0..n {
        alive[l] = diverged_at[l] == 0;
        state.set(l, &group[l]);
    }
    let mut rng = RngLanes {
        key: seed_key(seed),
        chains: std::array::from_fn(|l| base + l as u32),
        step: step0,
    };
    let mut frozen = !alive.iter().any(|&a| a);
    for k in 0..steps {
        if frozen {
            break;
        }
        rng.step = step0.wrapping_add(k);
        let before = state;
        model.advance(&mut state, &rng);
        for l in 0..LANES {
            if !alive[l] {
                // Padding or an already frozen chain: undo the step.
                let c = before.get(l);
                state.set(l, &c);
            } else if model.is_diverged(&state.get(l)) {
                diverged_at[l] = rng.step + 1;
                alive[l] = false;
            }
        }
        frozen = !alive.iter().any(|&a| a);
    }
    for (l, chain) in group.iter_mut().enumerate() {
        *chain = state.get(l);
    }
}

/// The CPU backend.
#[derive(Clone, Debug)]
pub struct CpuEngine {
    model: Model,
    seed: u64,
    step: u32,
    chains: Vec<Chain2>,
    diverged_at: Vec<u32>,
}

impl CpuEngine {
    /// `chains` chains initialised from `init`.
    pub fn new(model: Model, chains: u32, init: &InitSpec, seed: u64) -> Self {
        let mut engine = Self {
            model,
            seed,
            step: 0,
            chains: Vec::new(),
            diverged_at: Vec::new(),
        };
        engine.chains = vec![Chain2::default(); chains as usize];
        engine.reset(init, seed);
        engine
    }
}

impl Engine for CpuEngine {
    fn backend(&self) -> BackendInfo {
        BackendInfo {
            kind: "cpu",
            device: format!("{} threads", rayon::current_num_threads()),
        }
    }

    fn chains(&self) -> u32 {
        self.chains.len() as u32
    }

    fn steps_done(&self) -> u32 {
        self.step
    }

    fn model(&self) -> &Model {
        &self.model
    }

    fn set_model(&mut self, model: Model) {
        self.model = model;
    }

    fn advance(&mut self, steps: u32, histograms: &[HistogramSpec]) -> anyhow::Result<Report> {
        if histograms.len() > MAX_HISTOGRAMS {
            anyhow::bail!("at most {MAX_HISTOGRAMS} histograms per advance");
        }
        let model = &self.model;
        let (seed, step0) = (self.seed, self.step);
        let moments = self
            .chains
            .par_chunks_mut(CHUNK)
            .zip(self.diverged_at.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(chunk_index, (chains, diverged_at))| {
                let mut moments = Moments::default();
                let first = chunk_index * CHUNK;
                for (g, (group, diverged_at)) in chains
                    .chunks_mut(LANES)
                    .zip(diverged_at.chunks_mut(LANES))
                    .enumerate()
                {
                    let base = (first + g * LANES) as u32;
                    advance_lanes(model, seed, base, step0, steps, group, diverged_at);
                    for (chain, d) in group.iter().zip(diverged_at.iter()) {
                        if *d == 0 {
                            moments.add(chain, model);
                        } else {
                            moments.diverged += 1;
                        }
                    }
                }
                moments
            })
            .collect::<Vec<Moments>>()
            .iter()
            // Summed in chunk order, not in rayon's split order: the moments (and so every
            // statistic) are bit-identical however many threads ran.
            .fold(Moments::default(), |a, b| a.merge(b));
        self.step = step0.wrapping_add(steps);
        let histograms = histograms
            .iter()
            .map(|spec| spec.bin(&self.chains, &self.diverged_at))
            .collect();
        Ok(Report {
            step: self.step,
            moments,
            histograms,
        })
    }

    fn read_chains(&mut self, first: u32, count: u32) -> anyhow::Result<ChainStates> {
        let n = self.chains.len();
        let start = (first as usize).min(n);
        let end = start.saturating_add(count as usize).min(n);
        Ok(ChainStates {
            chains: self.chains[start..end].to_vec(),
            diverged_at: self.diverged_at[start..end].to_vec(),
        })
    }

    fn write_chains(&mut self, first: u32, states: &ChainStates) -> anyhow::Result<()> {
        let n = self.chains.len();
        let start = (first as usize).min(n);
        let end = start.saturating_add(states.chains.len()).min(n);
        self.chains[start..end].copy_from_slice(&states.chains[..end - start]);
        self.diverged_at[start..end].copy_from_slice(&states.diverged_at[..end - start]);
        Ok(())
    }

    fn reset(&mut self, init: &InitSpec, seed: u64) {
        self.seed = seed;
        self.step = 0;
        let model = &self.model;
        self.chains
            .par_iter_mut()
            .enumerate()
            .for_each(|(i, c)| *c = init.chain(model, seed, i as u32));
        self.diverged_at = vec![0; self.chains.len()];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{NoiseSpec, RngCounter, SamplerKind, SamplerSpec, ScheduleSpec, TargetSpec};

    fn model(kind: SamplerKind, target: &str, friction_sign: f64) -> Model {
        let mut sampler = SamplerSpec::new(kind);
        sampler.friction_sign = friction_sign;
        Model {
            sampler: sampler.params(),
            target: TargetSpec::from_name(target).unwrap().build(),
            noise: NoiseSpec::Isotropic { sigma: 2.0 }.model(),
            schedule: ScheduleSpec::Constant.schedule(),
        }
    }

    /// The SIMD lanes run the same `Model::advance` as one chain: trajectories agree to float
    /// rounding (polynomial vs C-library exp/ln/sin/cos), divergence steps exactly, including
    /// a ragged last group of lanes.
    #[test]
    fn lanes_follow_the_scalar_reference() {
        for (kind, target, sign) in [
            (SamplerKind::Atmc, "banana", 1.0),
            (SamplerKind::Atmc, "gmm25", 1.0),
            (SamplerKind::Atmc, "gaussian", -1.0),
            (SamplerKind::Sghmc, "logistic", 1.0),
            (SamplerKind::Sgnht, "funnel", 1.0),
        ] {
            let m = model(kind, target, sign);
            let init = InitSpec::default();
            let chains = 1003;
            let mut engine = CpuEngine::new(m.clone(), chains, &init, 5);
            engine.advance(60, &[]).unwrap();
            let state = engine.read_chains(0, chains).unwrap();
            let mut worst = 0.0f32;
            for i in 0..chains {
                let mut c = init.chain(&m, 5, i);
                let mut diverged = 0;
                for k in 0..60 {
                    if m.step(&mut c, &RngCounter::new(5, i, k)) {
                        diverged = k + 1;
                        break;
                    }
                }
                assert_eq!(
                    diverged, state.diverged_at[i as usize],
                    "{target}: chain {i}"
                );
                if diverged == 0 {
                    let l = state.chains[i as usize];
                    for k in 0..2 {
                        worst =
                            worst.max((l.theta[k] - c.theta[k]).abs() / (1.0 + c.theta[k].abs()));
                    }
                }
            }
            assert!(worst < 1e-3, "{target}: lanes deviate by {worst}");
        }
    }
}
