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

// Both coordinates at once: vec2 arithmetic keeps the state in registers (indexing a vector
// through a pointer makes some compilers spill it to memory). Per component, every operation
// is the one `Model::step` performs, in the same order.

fn one_minus_exp_neg_over_x(x: vec2<f32>, exp_neg_x: vec2<f32>) -> vec2<f32> {
    let series = 1.0 + x * (-1.0 / 2.0 + x * (1.0 / 6.0 + x * (-1.0 / 24.0
        + x * (1.0 / 120.0 + x * (-1.0 / 720.0 + x * (1.0 / 5040.0))))));
    return select((1.0 - exp_neg_x) / x, series, abs(x) < vec2<f32>(0.25));
}

// K'(p), K''(p) and s for the Gaussian (speed 0) or hyperbolic kinetic energy.
struct Kinetic {
    k1: vec2<f32>,
    k2: vec2<f32>,
    s: vec2<f32>,
}

fn kinetic_derivatives(p: vec2<f32>, mass: f32, inv_mass: f32, speed: f32) -> Kinetic {
    if (speed == 0.0) {
        return Kinetic(p * inv_mass, vec2<f32>(inv_mass), vec2<f32>(1.0));
    }
    let q = p / (mass * speed);
    let s = sqrt(1.0 + q * q);
    return Kinetic(p / (mass * s), 1.0 / (mass * s * s * s), s);
}

fn stochastic_gradient(theta: vec2<f32>, rng: RngCounter) -> vec2<f32> {
    var g = target_gradient(theta, rng);
    if (params.noise_sigma0 != 0.0 || params.noise_sigma1 != 0.0) {
        let z = rng_normal2(rng, STREAM_GRADIENT_NOISE, 0u);
        let factor = 1.0 + params.noise_kappa * sqrt(theta.x * theta.x + theta.y * theta.y);
        let sigma = vec2<f32>(params.noise_sigma0 * factor, params.noise_sigma1 * factor);
        g += sigma * z;
    }
    return g;
}

fn thermostat_half_step(xi: vec2<f32>, k: Kinetic, h: f32, t: f32) -> vec2<f32> {
    let heat = params.mass * (k.k1 * k.k1 - t * k.k2);
    if ((params.flags & FLAG_XI_OVERWRITE) != 0u) {
        return h * heat;
    }
    return xi + 0.5 * h * heat;
}

fn atmc_step(chain: ptr<function, Chain>, rng: RngCounter, h: f32, t: f32) {
    let m = params.mass;
    let k0 = kinetic_derivatives((*chain).p, m, params.inv_mass, params.speed);
    (*chain).theta += 0.5 * h * k0.k1;
    (*chain).xi = thermostat_half_step((*chain).xi, k0, h, t);
    let g = stochastic_gradient((*chain).theta, rng);
    let z = rng_normal2(rng, STREAM_INJECTED, 0u);
    let xi = (*chain).xi;
    let beta = max(vec2<f32>(params.friction_floor), xi);
    let alpha = max(params.friction_floor - xi, vec2<f32>(0.0));
    // Exact OU step with friction φβ/s (s frozen over the step for hyperbolic K).
    var x = params.friction_sign * beta * h;
    if (params.speed != 0.0) {
        x = x / k0.s;
    }
    let decay = exp(-x);
    let drift = h * one_minus_exp_neg_over_x(x, decay);
    let variance = 2.0 * alpha * params.noise_mass * t * h
        * one_minus_exp_neg_over_x(2.0 * x, decay * decay);
    (*chain).p = decay * (*chain).p - drift * g + sqrt(variance) * z;
    let k1 = kinetic_derivatives((*chain).p, m, params.inv_mass, params.speed);
    (*chain).xi = thermostat_half_step((*chain).xi, k1, h, t);
    (*chain).theta += 0.5 * h * k1.k1;
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
            (*chain).theta += -h * g + scale * z;
        }
        case SAMPLER_SGHMC: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            let scale = sqrt(max(2.0 * (params.sghmc_friction - params.sghmc_noise_estimate) * h * t, 0.0));
            let p = (*chain).p;
            (*chain).p = p - h * g - h * params.sghmc_friction * p * params.inv_mass + scale * z;
            (*chain).theta += h * (*chain).p * params.inv_mass;
        }
        case SAMPLER_SGNHT: {
            let g = stochastic_gradient((*chain).theta, rng);
            let z = rng_normal2(rng, STREAM_INJECTED, 0u);
            let scale = sqrt(2.0 * params.sgnht_diffusion * h * t);
            let p = (*chain).p;
            (*chain).p = p - h * g - h * (*chain).xi * p + scale * z;
            (*chain).theta += h * (*chain).p * params.inv_mass;
            let heat = (*chain).p * (*chain).p * params.inv_mass - t;
            if ((params.flags & FLAG_SGNHT_SHARED) != 0u) {
                let mean = 0.5 * (heat.x + heat.y);
                (*chain).xi += vec2<f32>(h * mean);
            } else {
                (*chain).xi += h * heat;
            }
        }
        default: {
            let g = stochastic_gradient((*chain).theta, rng);
            (*chain).theta -= h * g;
        }
    }
    return is_diverged(*chain);
}

fn is_finite2(v: vec2<f32>) -> bool {
    // NaN fails every comparison; infinities exceed the largest finite f32.
    return all(abs(v) <= vec2<f32>(3.4028235e38));
}

fn is_diverged(chain: Chain) -> bool {
    let ok = all(abs(chain.p) <= vec2<f32>(params.divergence_bound)) && is_finite2(chain.theta)
        && is_finite2(chain.xi);
    return !ok;
}

fn kinetic_heat(p: vec2<f32>) -> vec2<f32> {
    return p * kinetic_derivatives(p, params.mass, params.inv_mass, params.speed).k1;
}
