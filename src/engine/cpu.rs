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

/// The instruction set the chain loop was compiled for, chosen at run time: the release
/// binary targets baseline x86-64 (or aarch64 with NEON), and the same generic formulas are
/// compiled again inside `#[target_feature]` functions for wider vectors, so one binary runs
/// everywhere and uses what the machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdPath {
    /// The binary's baseline (SSE2 on x86-64, NEON on aarch64): 8 lanes as pairs of 4.
    Baseline,
    /// AVX2 and FMA registers: 8 lanes of f32 in one 256-bit register.
    Avx2,
    /// AVX-512: 16 lanes in one 512-bit register.
    Avx512,
}

impl SimdPath {
    /// The widest path this machine runs.
    pub fn detect() -> SimdPath {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return SimdPath::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return SimdPath::Avx2;
            }
        }
        SimdPath::Baseline
    }

    /// Every path this machine can run, baseline first.
    pub fn available() -> Vec<SimdPath> {
        let best = Self::detect();
        [SimdPath::Baseline, SimdPath::Avx2, SimdPath::Avx512]
            .into_iter()
            .filter(|p| *p as u8 <= best as u8)
            .collect()
    }

    /// Its name, as `bench` reports it.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Baseline if cfg!(target_arch = "aarch64") => "neon",
            SimdPath::Baseline => "sse2 (baseline)",
            SimdPath::Avx2 => "avx2+fma",
            SimdPath::Avx512 => "avx512",
        }
    }
}

/// The path chosen once per process: the widest available, unless `ATMC_SIMD` names a
/// narrower one (`baseline`, `avx2`) to compare them.
pub fn simd_path() -> SimdPath {
    static PATH: std::sync::OnceLock<SimdPath> = std::sync::OnceLock::new();
    *PATH.get_or_init(|| {
        let best = SimdPath::detect();
        match std::env::var("ATMC_SIMD").as_deref() {
            Ok("baseline") => SimdPath::Baseline,
            Ok("avx2") if best != SimdPath::Baseline => SimdPath::Avx2,
            _ => best,
        }
    })
}

/// Advances up to `N` chains (`group`) by `steps` steps as lanes of one vector: the same
/// `Model::advance` as a single chain, on [`Lanes`]. A lane that diverges is frozen in the
/// state it diverged in, exactly as the scalar path would leave it.
#[inline(always)]
fn advance_lanes<const N: usize>(
    model: &Model,
    seed: u64,
    base: u32,
    step0: u32,
    steps: u32,
    group: &mut [Chain2],
    diverged_at: &mut [u32],
) {
    let n = group.len();
    let mut alive = [false; N];
    let mut state = ChainOf::<Lanes<N>>::default();
    for l in 0..n {
        alive[l] = diverged_at[l] == 0;
        state.set(l, &group[l]);
    }
    let mut rng = RngLanes {
        key: seed_key(seed),
        chains: std::array::from_fn(|l| base + l as u32),
        step: step0,
    };
    let sp = &model.sampler;
    let mut all_alive = alive.iter().all(|&a| a);
    let mut frozen = !alive.iter().any(|&a| a);
    for k in 0..steps {
        if frozen {
            break;
        }
        rng.step = step0.wrapping_add(k);
        if all_alive {
            // The common case: no lane to hold still, nothing to copy.
            model.advance(&mut state, &rng);
        } else {
            let before = state;
            model.advance(&mut state, &rng);
            for l in (0..N).filter(|&l| !alive[l]) {
                // Padding or an already frozen chain: undo the step.
                let c = before.get(l);
                state.set(l, &c);
            }
        }
        // The divergence test of every lane at once (the rule of
        // `SamplerParams::coordinate_diverged`, written on the lanes so it vectorises);
        // the rare lane that just diverged is handled one by one.
        let mut newly = [false; N];
        let mut any_new = false;
        for l in 0..N {
            let ok = |c: usize| {
                state.p[c].0[l].abs() <= sp.divergence_bound
                    && state.theta[c].0[l].abs() <= sp.theta_bound
                    && state.xi[c].0[l].is_finite()
            };
            newly[l] = alive[l] & !(ok(0) & ok(1));
            any_new |= newly[l];
        }
        if any_new {
            for l in (0..N).filter(|&l| newly[l]) {
                diverged_at[l] = rng.step + 1;
                alive[l] = false;
            }
            all_alive = false;
            frozen = !alive.iter().any(|&a| a);
        }
    }
    for (l, chain) in group.iter_mut().enumerate() {
        *chain = state.get(l);
    }
}

/// What every chunk of one `advance` shares: the model, the run's seed, the first step and
/// the number of steps; `first` is the index of the chunk's first chain.
#[derive(Clone, Copy)]
struct Chunk<'a> {
    model: &'a Model,
    seed: u64,
    first: usize,
    step0: u32,
    steps: u32,
}

/// Advances one chunk of chains as groups of `N` lanes and returns the moments of the alive
/// ones.
#[inline(always)]
fn advance_chunk<const N: usize>(
    job: Chunk,
    chains: &mut [Chain2],
    diverged_at: &mut [u32],
) -> Moments {
    let mut moments = Moments::default();
    for (g, (group, diverged_at)) in chains
        .chunks_mut(N)
        .zip(diverged_at.chunks_mut(N))
        .enumerate()
    {
        let base = (job.first + g * N) as u32;
        advance_lanes::<N>(
            job.model,
            job.seed,
            base,
            job.step0,
            job.steps,
            group,
            diverged_at,
        );
        for (chain, d) in group.iter().zip(diverged_at.iter()) {
            if *d == 0 {
                moments.add(chain, job.model);
            } else {
                moments.diverged += 1;
            }
        }
    }
    moments
}

/// [`advance_chunk`] compiled for AVX2 + FMA (8 lanes in one register).
///
/// # Safety
/// The CPU must have AVX2 and FMA ([`SimdPath::detect`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn advance_chunk_avx2(
    job: Chunk,
    chains: &mut [Chain2],
    diverged_at: &mut [u32],
) -> Moments {
    advance_chunk::<8>(job, chains, diverged_at)
}

/// [`advance_chunk`] compiled for AVX-512 (16 lanes in one register).
///
/// # Safety
/// The CPU must have AVX-512 F/VL/DQ, AVX2 and FMA ([`SimdPath::detect`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn advance_chunk_avx512(
    job: Chunk,
    chains: &mut [Chain2],
    diverged_at: &mut [u32],
) -> Moments {
    advance_chunk::<16>(job, chains, diverged_at)
}

/// [`advance_chunk`] on the given path (one this machine has: see [`SimdPath::available`]).
fn advance_chunk_on(
    path: SimdPath,
    job: Chunk,
    chains: &mut [Chain2],
    diverged_at: &mut [u32],
) -> Moments {
    match path {
        // SAFETY: the paths are only chosen when detected (`SimdPath::available`).
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx2 => unsafe { advance_chunk_avx2(job, chains, diverged_at) },
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx512 => unsafe { advance_chunk_avx512(job, chains, diverged_at) },
        _ => advance_chunk::<8>(job, chains, diverged_at),
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
    simd: SimdPath,
    /// Superchains to reduce per advance (0: none).
    superchains: u32,
}

impl CpuEngine {
    /// Runs the chain loop on `path` instead of the process's ([`simd_path`]); a path the
    /// machine lacks falls back to the widest it has.
    pub fn with_simd(mut self, path: SimdPath) -> Self {
        self.simd = if SimdPath::available().contains(&path) {
            path
        } else {
            SimdPath::detect()
        };
        self
    }

    /// The path the chain loop runs on.
    pub fn simd(&self) -> SimdPath {
        self.simd
    }

    /// `chains` chains initialised from `init`.
    pub fn new(model: Model, chains: u32, init: &InitSpec, seed: u64) -> Self {
        let mut engine = Self {
            model,
            seed,
            step: 0,
            chains: Vec::new(),
            diverged_at: Vec::new(),
            simd: simd_path(),
            superchains: 0,
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
            device: format!(
                "{} threads, {}",
                rayon::current_num_threads(),
                self.simd.name()
            ),
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
        let (seed, step0, simd) = (self.seed, self.step, self.simd);
        let moments = self
            .chains
            .par_chunks_mut(CHUNK)
            .zip(self.diverged_at.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(chunk_index, (chains, diverged_at))| {
                let job = Chunk {
                    model,
                    seed,
                    first: chunk_index * CHUNK,
                    step0,
                    steps,
                };
                advance_chunk_on(simd, job, chains, diverged_at)
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
        let superchains =
            super::moments::superchain_moments(&self.chains, &self.diverged_at, self.superchains);
        Ok(Report {
            step: self.step,
            moments,
            histograms,
            superchains,
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
        self.superchains = init.superchains.unwrap_or(0);
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
            target: TargetSpec::from_name(target).unwrap().build().unwrap(),
            noise: NoiseSpec::Isotropic { sigma: 2.0 }.model(),
            schedule: ScheduleSpec::Constant.schedule(),
        }
    }

    /// The SIMD lanes run the same `Model::advance` as one chain: trajectories agree to float
    /// rounding (polynomial vs C-library exp/ln/sin/cos), divergence steps exactly, including
    /// a ragged last group of lanes; and every dispatched SIMD path (baseline, AVX2, AVX-512
    /// with 16 lanes) gives the same bits.
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
            // Every SIMD path this machine has runs the same lanes: bit for bit the same.
            let paths = SimdPath::available();
            let runs: Vec<ChainStates> = paths
                .iter()
                .map(|&path| {
                    let mut engine = CpuEngine::new(m.clone(), chains, &init, 5).with_simd(path);
                    assert_eq!(engine.simd(), path);
                    engine.advance(60, &[]).unwrap();
                    engine.read_chains(0, chains).unwrap()
                })
                .collect();
            for (path, run) in paths.iter().zip(&runs).skip(1) {
                assert_eq!(run.diverged_at, runs[0].diverged_at, "{target}: {path:?}");
                for (a, b) in run.chains.iter().zip(&runs[0].chains) {
                    assert_eq!(
                        a.theta.map(f32::to_bits),
                        b.theta.map(f32::to_bits),
                        "{path:?}"
                    );
                    assert_eq!(a.p.map(f32::to_bits), b.p.map(f32::to_bits), "{path:?}");
                }
            }
            let state = runs.last().expect("the baseline at least").clone();
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
