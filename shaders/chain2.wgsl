// One step of one 2-D chain: mirrors `Model::advance` in src/math/samplers.rs, calling the
// per-coordinate updates of samplers.wgsl in the same order. `Chain` (one chain's θ, p, ξ)
// is generated from `GpuChain` in src/engine/shader_interface.rs.

// `MAY_HAVE_GRADIENT_NOISE` (`PipelineKey`): without synthetic gradient noise, the second
// Philox block and its Box-Muller pair are compiled out rather than run beside a false branch.
fn stochastic_gradient(theta: vec2<f32>, rng: RngCounter) -> vec2<f32> {
    var g = target_gradient(theta, rng);
    if (MAY_HAVE_GRADIENT_NOISE
        && (chain2_params.noise_sigma0 != 0.0 || chain2_params.noise_sigma1 != 0.0)) {
        let z = rng_normal2(rng, STREAM_GRADIENT_NOISE, 0u);
        let factor = 1.0 + chain2_params.noise_kappa * sqrt(theta.x * theta.x + theta.y * theta.y);
        let sigma = vec2<f32>(
            chain2_params.noise_sigma0 * factor,
            chain2_params.noise_sigma1 * factor,
        );
        g += sigma * z;
    }
    return g;
}

fn coord_of(chain: Chain, k: u32) -> Coord {
    return Coord(chain.theta[k], chain.p[k], chain.xi[k], 1.0);
}

fn chain_of(a: Coord, b: Coord) -> Chain {
    return Chain(vec2<f32>(a.theta, b.theta), vec2<f32>(a.p, b.p), vec2<f32>(a.xi, b.xi));
}

// `SPECIALISED_SAMPLER` is the sampler this pipeline runs, set when the host compiles it: the
// other samplers' branches are compiled out (`GpuEngine` keeps one pipeline per
// `PipelineKey`; a run-time switch costs llvmpipe every branch).
// Advances one chain by one step; returns true when it diverged.
fn model_step(chain: ptr<function, Chain>, rng: RngCounter) -> bool {
    let phase = step_phase(rng.step);
    var a = coord_of(*chain, 0u);
    var b = coord_of(*chain, 1u);
    switch SPECIALISED_SAMPLER {
        case SAMPLER_ATMC: {
            a = atmc_first_half(a, phase);
            b = atmc_first_half(b, phase);
            let g = stochastic_gradient(vec2<f32>(a.theta, b.theta), rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            a = atmc_second_half(a, g.x, z.x, phase);
            b = atmc_second_half(b, g.y, z.y, phase);
        }
        case SAMPLER_SGLD: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            a.theta = sgld_update(a.theta, g.x, z.x, phase);
            b.theta = sgld_update(b.theta, g.y, z.y, phase);
        }
        case SAMPLER_SGHMC: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            a = sghmc_update(a, g.x, z.x, phase);
            b = sghmc_update(b, g.y, z.y, phase);
        }
        case SAMPLER_SGNHT: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            a = sgnht_update(a, g.x, z.x, phase);
            b = sgnht_update(b, g.y, z.y, phase);
            var heat = vec2<f32>(a.s, b.s);
            if ((sampler_params.flags & FLAG_SGNHT_SHARED) != 0u) {
                heat = vec2<f32>(0.5 * (heat.x + heat.y));
            }
            a.xi = sgnht_thermostat(a.xi, heat.x, phase);
            b.xi = sgnht_thermostat(b.xi, heat.y, phase);
        }
        case SAMPLER_HMC: {
            *chain = hmc_iteration(*chain, rng);
            return false;
        }
        default: {
            let g = stochastic_gradient((*chain).theta, rng);
            // μ = 0 leaves p alone, as `Model::advance` does.
            if (sampler_params.sgd_momentum == 0.0) {
                a.theta = sgd_update(a.theta, g.x, phase);
                b.theta = sgd_update(b.theta, g.y, phase);
            } else {
                a = sgd_momentum_update(a, g.x, phase);
                b = sgd_momentum_update(b, g.y, phase);
            }
        }
    }
    *chain = chain_of(a, b);
    return coordinate_diverged(a.theta, a.p, a.xi) || coordinate_diverged(b.theta, b.p, b.xi);
}

// One HMC iteration: mirrors `Model::hmc_iteration` (a fresh momentum, L leapfrog steps on
// H = U/T + |p|²/(2m), the Metropolis test; ξ₀ = 1 when accepted, ξ₁ = 1 when divergent).
// An accepted state is finite and a rejected one is the old state: no chain diverges.
fn hmc_iteration(start: Chain, rng: RngCounter) -> Chain {
    let bits = rng_bits4(rng, STREAM_METROPOLIS, 0u);
    // The step size drawn in h (1 ± HMC_STEP_JITTER), as the Rust twin draws it.
    let jitter = (uniform_open_closed_from_bits(bits.y) * 2.0 - 1.0) * HMC_STEP_JITTER + 1.0;
    let h = jitter * step_phase(rng.step).h;
    let t = sampler_params.temperature;
    let p0 = rng_normal2(rng, STREAM_INJECTED, 0u) * sqrt(sampler_params.mass);
    var theta = start.theta;
    var p = p0;
    // The force of U/T: the half kick carries the 1/T.
    let half = h * (0.5 / t);
    let drift = h * sampler_params.inv_mass;
    var g = stochastic_gradient(theta, rng);
    for (var l = 0u; l < chain2_params.leapfrog_steps; l++) {
        p -= g * half;
        theta += p * drift;
        g = stochastic_gradient(theta, rng);
        p -= g * half;
    }
    let kinetic = 0.5 * sampler_params.inv_mass;
    let delta_h = (target_energy(theta) - target_energy(start.theta)) * (1.0 / t)
        + (p.x * p.x + p.y * p.y) * kinetic - (p0.x * p0.x + p0.y * p0.y) * kinetic;
    let ln_u = log(uniform_open_closed_from_bits(bits.x));
    // A NaN ΔH compares false: rejected.
    let accept = ln_u < -delta_h;
    // Divergent unless ΔH is finite and at most the bound.
    let divergent = !(delta_h < HMC_DIVERGENCE);
    return Chain(
        select(start.theta, theta, accept),
        select(p0, p, accept),
        vec2<f32>(select(0.0, 1.0, accept), select(0.0, 1.0, divergent)),
    );
}
