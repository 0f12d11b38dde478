//! Step-size adaptation by dual averaging (Hoffman & Gelman 2014, Algorithm 5), for HMC's
//! warm-up (MATH.md §10): each update moves log h against the gap between a target
//! acceptance rate and the one just seen; the averaged iterate h̄ is frozen afterwards.

/// Shrinkage toward μ = ln(10 h₀) (the paper's γ).
const GAMMA: f64 = 0.05;
/// Early iterations' damping (the paper's t₀).
const T0: f64 = 10.0;
/// The averaging's forgetting exponent (the paper's κ).
const KAPPA: f64 = 0.75;

/// The state of dual averaging of one step size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualAveraging {
    target: f64,
    mu: f64,
    /// H̄: the running average of target − acceptance.
    gap: f64,
    /// ln h̄: the averaged iterate, the step size kept after warm-up.
    log_h_bar: f64,
    /// ln h of the next iteration.
    log_h: f64,
    t: u32,
}

impl DualAveraging {
    /// Starts from step size `h0`, aiming at acceptance rate `target` (0.8 for HMC, MATH.md).
    pub fn new(h0: f64, target: f64) -> Self {
        Self {
            target,
            mu: (10.0 * h0).ln(),
            gap: 0.0,
            log_h_bar: h0.ln(),
            log_h: h0.ln(),
            t: 0,
        }
    }

    /// The step size to use next.
    pub fn step_size(&self) -> f64 {
        self.log_h.exp()
    }

    /// The averaged step size h̄, frozen once the warm-up ends.
    pub fn final_step_size(&self) -> f64 {
        self.log_h_bar.exp()
    }

    /// Takes the acceptance rate seen at the current step size; returns the next one.
    pub fn update(&mut self, acceptance: f64) -> f64 {
        self.t += 1;
        let t = f64::from(self.t);
        let w = 1.0 / (t + T0);
        self.gap = (1.0 - w) * self.gap + w * (self.target - acceptance.clamp(0.0, 1.0));
        self.log_h = self.mu - t.sqrt() / GAMMA * self.gap;
        let eta = t.powf(-KAPPA);
        self.log_h_bar = eta * self.log_h + (1.0 - eta) * self.log_h_bar;
        self.step_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against an acceptance rate that falls as h grows (e^{−h}, as a Gaussian target's
    /// does roughly), the averaged step size settles where the rate meets the target.
    #[test]
    fn the_step_size_settles_where_the_acceptance_meets_its_target() {
        let mut d = DualAveraging::new(2.0, 0.8);
        for _ in 0..2000 {
            let h = d.step_size();
            d.update((-h).exp());
        }
        let want = -(0.8f64).ln();
        let got = d.final_step_size();
        assert!((got - want).abs() < 0.02 * want, "h̄ = {got}, want {want}");
        // From far below too.
        let mut d = DualAveraging::new(1e-4, 0.8);
        for _ in 0..2000 {
            let h = d.step_size();
            d.update((-h).exp());
        }
        assert!((d.final_step_size() - want).abs() < 0.02 * want);
    }
}
