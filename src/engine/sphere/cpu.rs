//! The sphere engine on the CPU: the oracle, stepping `math::sphere::step` with rayon. A chain
//! is a direction and a velocity in f64: an overparameterised problem collapses the chains
//! onto a pole, and f64 keeps how close they get measurable down to 1e-15.

use super::SphereEngine;
use crate::engine::BackendInfo;
use crate::math::rng::RngCounter;
use crate::math::sphere::{self, SphereChain, SphereOptimizer, SphereProblem};
use glam::DVec3;
use rayon::prelude::*;

/// Chains stepped by one rayon task.
const CHUNK: usize = 256;

/// Projected SGD chains on the sphere, stepped on the CPU.
pub struct CpuSphereEngine {
    objects: Vec<DVec3>,
    optimizer: SphereOptimizer,
    chains: Vec<SphereChain>,
    seed: u64,
    steps_done: u32,
}

impl CpuSphereEngine {
    /// `chains` chains at the common start, at rest.
    pub fn new(problem: SphereProblem, optimizer: SphereOptimizer, chains: u32, seed: u64) -> Self {
        Self {
            objects: problem.objects(),
            optimizer,
            chains: vec![SphereChain::at_start(); chains as usize],
            seed,
            steps_done: 0,
        }
    }
}

impl SphereEngine for CpuSphereEngine {
    fn backend(&self) -> BackendInfo {
        BackendInfo {
            kind: "cpu",
            device: format!("{} threads, f64", rayon::current_num_threads()),
        }
    }

    fn objects(&self) -> &[DVec3] {
        &self.objects
    }

    fn steps_done(&self) -> u32 {
        self.steps_done
    }

    fn set_optimizer(&mut self, optimizer: SphereOptimizer) {
        self.optimizer = optimizer;
    }

    fn advance(&mut self, steps: u32) -> anyhow::Result<()> {
        let (objects, opt, seed, first) =
            (&self.objects, self.optimizer, self.seed, self.steps_done);
        self.chains
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, chunk)| {
                for (i, chain) in chunk.iter_mut().enumerate() {
                    let index = (k * CHUNK + i) as u32;
                    for s in first..first + steps {
                        sphere::step(objects, &opt, chain, &RngCounter::new(seed, index, s));
                    }
                }
            });
        self.steps_done += steps;
        Ok(())
    }

    fn positions(&mut self) -> anyhow::Result<Vec<DVec3>> {
        Ok(self.chains.iter().map(|c| c.x).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_do_not_depend_on_how_the_steps_are_split() {
        let opt = SphereOptimizer {
            h: 0.2,
            momentum: 0.3,
            batch: 1,
        };
        let mut a = CpuSphereEngine::new(SphereProblem::Underparameterised, opt, 1000, 5);
        let mut b = CpuSphereEngine::new(SphereProblem::Underparameterised, opt, 1000, 5);
        a.advance(100).unwrap();
        b.advance(37).unwrap();
        b.advance(63).unwrap();
        let p = a.positions().unwrap();
        assert_eq!(p, b.positions().unwrap());
        // Chains differ from one another (their minibatches do).
        assert!(p[0].distance(p[1]) > 1e-6);
    }
}
