// One step of one 2-D chain: mirrors `Model::step` in src/math/samplers.rs line by line.

struct Chain {
    theta: vec2<f32>,
    p: vec2<f32>,
    xi: vec2<f32>,
}

fn schedule_at(step: u32) -> vec2<f32> {
    // (step size, 1.0 while exploring else 0.0)
    if (params.cycle_len == 0u) {
        return vec2<f32>(params.h, 0.0);
    }
    let r = f32(step % params.cycle_len) / f32(params.cycle_len);
    let h = 0.5 * params.h * (cos(3.14159274 * r) + 1.0);
    return vec2<f32>(h, select(0.0, 1.0, r < params.explore_fraction));
}

fn one_minus_exp_neg_over_x(x: f32, exp_neg_x: f32) -> f32 {
    if (abs(x) < 0.25) {
        return 1.0 + x * (-1.0 / 2.0 + x * (1.0 / 6.0 + x * (-1.0 / 24.0
            + x * (1.0 / 120.0 + x * (-1.0 / 720.0 + x * (1.0 / 5040.0))))));
    }
    return (1.0 - exp_neg_x) / x;
}

// (K'(p), K''(p), s) for the Gaussian (speed 0) or hyperbolic kinetic energy.
fn kinetic_derivatives(p: f32, mass: f32, speed: f32) -> vec3<f32> {
    if (speed == 0.0) {
        return vec3<f32>(p / mass, 1.0 / mass, 1.0);
    }
    let q = p / (mass * speed);
    let s = sqrt(1.0 + q * q);
    return vec3<f32>(p / (mass * s), 1.0 / (mass * s * s * s), s);
}

fn stochastic_gradient(theta: vec2<f32>, rng: RngCounter) -> vec2<f32> {
    var g = target_gradient(theta, rng);
    if (params.noise_sigma0 != 0.0 || params.noise_sigma1 != 0.0) {
        let z = rng_normal2(rng, STREAM_GRADIENT_NOISE, 0u);
        let factor = 1.0 + params.noise_kappa * sqrt(theta.x * theta.x + theta.y * theta.y);
        g.x += params.noise_sigma0 * factor * z.x;
        g.y += params.noise_sigma1 * factor * z.y;
    }
    return g;
}

fn thermostat_half_step(xi: f32, k1: f32, k2: f32, h: f32, t: f32) -> f32 {
    let heat = params.mass * (k1 * k1 - t * k2);
    if ((params.flags & FLAG_XI_OVERWRITE) != 0u) {
        return h * heat;
    }
    return xi + 0.5 * h * heat;
}

fn atmc_step(chain: ptr<function, Chain>, rng: RngCounter, h: f32, t: f32) {
    let m = params.mass;
    for (var c = 0u; c < 2u; c++) {
        let k = kinetic_derivatives((*chain).p[c], m, params.speed);
        (*chain).theta[c] += 0.5 * h * k.x;
        (*chain).xi[c] = thermostat_half_step((*chain).xi[c], k.x, k.y, h, t);
    }
    let g = stochastic_gradient((*chain).theta, rng);
    let z = rng_normal2(rng, STREAM_INJECTED, 0u);
    for (var c = 0u; c < 2u; c++) {
        let xi = (*chain).xi[c];
        let beta = max(params.friction_floor, xi);
        let alpha = max(params.friction_floor - xi, 0.0);
        let s = kinetic_derivatives((*chain).p[c], m, params.speed).z;
        let x = params.friction_sign * beta * h / s;
        let decay = exp(-x);
        let drift = h * one_minus_exp_neg_over_x(x, decay);
        let variance = 2.0 * alpha * params.noise_mass * t * h
            * one_minus_exp_neg_over_x(2.0 * x, decay * decay);
        (*chain).p[c] = decay * (*chain).p[c] - drift * g[c] + sqrt(variance) * z[c];
        let k = kinetic_derivatives((*chain).p[c], m, params.speed);
        (*chain).xi[c] = thermostat_half_step((*chain).xi[c], k.x, k.y, h, t);
        (*chain).theta[c] += 0.5 * h * k.x;
    }
}

// Advances one chain by one step; returns true when it diverged.
fn model_step(chain: ptr<function, Chain>, rng: RngCounter) -> bool {
    let schedule = schedule_at(rng.step);
    let h = schedule.x;
    let t = select(params.temperature, 0.0, schedule.y > 0.5);
    switch params.sampler_kind {
        case SAMPLER_ATMC: {
            atmc_step(chain, rng, h, t);
        }
        case SAMPLER_SGLD: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            let scale = sqrt(2.0 * h * t);
            for (var c = 0u; c < 2u; c++) {
                (*chain).theta[c] += -h * g[c] + scale * z[c];
            }
        }
        case SAMPLER_SGHMC: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            let scale = sqrt(max(2.0 * (params.sghmc_friction - params.sghmc_noise_estimate) * h * t, 0.0));
            for (var c = 0u; c < 2u; c++) {
                let p = (*chain).p[c];
                (*chain).p[c] = p - h * g[c] - h * params.sghmc_friction * p / params.mass + scale * z[c];
                (*chain).theta[c] += h * (*chain).p[c] / params.mass;
            }
        }
        case SAMPLER_SGNHT: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            let scale = sqrt(2.0 * params.sgnht_diffusion * h * t);
            for (var c = 0u; c < 2u; c++) {
                let p = (*chain).p[c];
                (*chain).p[c] = p - h * g[c] - h * (*chain).xi[c] * p + scale * z[c];
                (*chain).theta[c] += h * (*chain).p[c] / params.mass;
            }
            let heat = vec2<f32>(
                (*chain).p.x * (*chain).p.x / params.mass - t,
                (*chain).p.y * (*chain).p.y / params.mass - t,
            );
            if ((params.flags & FLAG_SGNHT_SHARED) != 0u) {
                let mean = 0.5 * (heat.x + heat.y);
                (*chain).xi = vec2<f32>((*chain).xi.x + h * mean, (*chain).xi.y + h * mean);
            } else {
                (*chain).xi = vec2<f32>((*chain).xi.x + h * heat.x, (*chain).xi.y + h * heat.y);
            }
        }
        default: {
            let g = stochastic_gradient((*chain).theta, rng);
            for (var c = 0u; c < 2u; c++) {
                (*chain).theta[c] -= h * g[c];
            }
        }
    }
    return is_diverged(*chain);
}

fn is_finite(v: f32) -> bool {
    // NaN fails every comparison; infinities exceed the largest finite f32.
    return abs(v) <= 3.4028235e38;
}

fn is_diverged(chain: Chain) -> bool {
    var ok = true;
    for (var c = 0u; c < 2u; c++) {
        ok = ok && abs(chain.p[c]) <= params.divergence_bound && is_finite(chain.theta[c])
            && is_finite(chain.xi[c]);
    }
    return !ok;
}

fn kinetic_heat(p: f32) -> f32 {
    return p * kinetic_derivatives(p, params.mass, params.speed).x;
}
