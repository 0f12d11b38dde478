//! The sphere toy's engine (MATH.md §5.4): N chains of projected SGD on the unit sphere,
//! stepped on the CPU with rayon, each chain's minibatches addressed by (seed, chain, step)
//! like every other chain of the lab. A chain is a direction and a velocity in f64: an
//! overparameterised problem collapses the chains onto a pole, and f64 keeps how close they
//! get measurable.

use crate::math::rng::RngCounter;
use crate::math::sphere::{self, SphereChain, SphereOptimizer, SphereProblem};
use glam::DVec3;
use rayon::prelude::*;

/// Chains stepped by one rayon task.
const CHUNK: usize = 256;

/// Projected SGD chains on the sphere.
pub struct SphereEngine {
    objects: Vec<DVec3>,
    optimizer: SphereOptimizer,
    chains: Vec<SphereChain>,
    seed: u64,
    steps_done: u32,
}

impl SphereEngine {
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

    /// The objects of the problem.
    pub fn objects(&self) -> &[DVec3] {
        &self.objects
    }

    /// Steps done so far.
    pub fn steps_done(&self) -> u32 {
        self.steps_done
    }

    /// Changes the learning rate, momentum or batch for the steps to come.
    pub fn set_optimizer(&mut self, optimizer: SphereOptimizer) {
        self.optimizer = optimizer;
    }

    /// Advances every chain `steps` steps.
    pub fn advance(&mut self, steps: u32) {
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
    }

    /// The chains' directions.
    pub fn positions(&self) -> Vec<DVec3> {
        self.chains.iter().map(|c| c.x).collect()
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
        let mut a = SphereEngine::new(SphereProblem::Underparameterised, opt, 1000, 5);
        let mut b = SphereEngine::new(SphereProblem::Underparameterised, opt, 1000, 5);
        a.advance(100);
        b.advance(37);
        b.advance(63);
        assert_eq!(a.positions(), b.positions());
        // Chains differ from one another (their minibatches do).
        let p = a.positions();
        assert!(p[0].distance(p[1]) > 1e-6);
    }
}
