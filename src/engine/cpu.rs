//! The CPU engine: the reference backend, multi-threaded over chains with rayon.
//!
//! Each thread takes a chunk of chains and advances each chain through all K steps while its
//! state stays in registers, the same schedule as one GPU invocation.

use super::{
    BackendInfo, ChainStates, Engine, HistogramSpec, InitSpec, MAX_HISTOGRAMS, Moments, Report,
};
use crate::math::{Chain2, Model, RngCounter};
use rayon::prelude::*;

/// Chains per rayon task: large enough to amortise scheduling, small enough to balance.
const CHUNK: usize = 2048;

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
                for (j, (chain, diverged)) in chains.iter_mut().zip(diverged_at).enumerate() {
                    let index = (first + j) as u32;
                    if *diverged == 0 {
                        for k in 0..steps {
                            let step = step0.wrapping_add(k);
                            if model.step(chain, &RngCounter::new(seed, index, step)) {
                                *diverged = step + 1;
                                break;
                            }
                        }
                    }
                    if *diverged == 0 {
                        moments.add(chain, model);
                    } else {
                        moments.diverged += 1;
                    }
                }
                moments
            })
            .reduce(Moments::default, |a, b| a.merge(&b));
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
