// Per-coordinate sampler updates: mirrors the `impl SamplerParams` block of
// src/math/samplers.rs function by function. The 2-D chains (chain2.wgsl) and the MLP
// posteriors (mlp.wgsl) both call these, so every formula of MATH.md §1–3 is written once.

// What a pipeline may meet, the generated overrides `MAY_BE_CYCLICAL`, `MAY_BE_HYPERBOLIC`
// and `MAY_OVERWRITE_XI`, set by the host from the preset (`Features` in src/engine/gpu.rs):
// with one off, its branch is compiled out. llvmpipe runs both sides of a branch on a value it
// cannot prove uniform, so a cyclical schedule's cosine, the hyperbolic kinetic energy's
// square roots and the overwrite would cost every step of every preset. The defaults keep the
// run-time tests.

// One step of the schedule: `StepPhase` in src/math/samplers.rs. While a cyclical schedule
// explores, no noise is injected and the thermostat is frozen, unless FLAG_THERMOSTAT_RUNNING
// lets it run toward temperature 0 (the ratchet of MATH.md §3.1).
struct StepPhase {
    h: f32,
    temperature: f32,
    noise_temperature: f32,
    exploring: bool,
    thermostat_frozen: bool,
}

// `SamplerParams::phase`.
fn step_phase(step: u32) -> StepPhase {
    if (!MAY_BE_CYCLICAL || sampler_params.cycle_len == 0u) {
        let t = sampler_params.temperature;
        return StepPhase(sampler_params.h, t, t, false, false);
    }
    let r = f32(step % sampler_params.cycle_len) / f32(sampler_params.cycle_len);
    let h = 0.5 * sampler_params.h * (cos(3.14159274 * r) + 1.0);
    let exploring = r < sampler_params.explore_fraction;
    let running = (sampler_params.flags & FLAG_THERMOSTAT_RUNNING) != 0u;
    let t = sampler_params.temperature;
    return StepPhase(
        h,
        select(t, 0.0, exploring && running),
        select(t, 0.0, exploring),
        exploring,
        exploring && !running,
    );
}

fn one_minus_exp_neg_over_x(x: f32, exp_neg_x: f32) -> f32 {
    let series = 1.0 + x * (-1.0 / 2.0 + x * (1.0 / 6.0 + x * (-1.0 / 24.0
        + x * (1.0 / 120.0 + x * (-1.0 / 720.0 + x * (1.0 / 5040.0))))));
    return select((1.0 - exp_neg_x) / x, series, abs(x) < 0.25);
}

// K'(p), K''(p) and s for the Gaussian (speed 0) or hyperbolic kinetic energy.
struct Kinetic {
    k1: f32,
    k2: f32,
    s: f32,
}

fn kinetic_derivatives(p: f32, mass: f32, inv_mass: f32, speed: f32) -> Kinetic {
    if (!MAY_BE_HYPERBOLIC || speed == 0.0) {
        return Kinetic(p * inv_mass, inv_mass, 1.0);
    }
    let q = p / (mass * speed);
    let s = sqrt(1.0 + q * q);
    return Kinetic(p / (mass * s), 1.0 / (mass * s * s * s), s);
}

// One coordinate's state; `s` carries the relativistic factor between the two ATMC halves.
struct Coord {
    theta: f32,
    p: f32,
    xi: f32,
    s: f32,
}

fn thermostat_half_step(xi: f32, k: Kinetic, phase: StepPhase) -> f32 {
    if (phase.thermostat_frozen) {
        return xi;
    }
    let heat = sampler_params.mass * (k.k1 * k.k1 - phase.temperature * k.k2);
    if (MAY_OVERWRITE_XI && (sampler_params.flags & FLAG_XI_OVERWRITE) != 0u) {
        return phase.h * heat;
    }
    return xi + 0.5 * phase.h * heat;
}

fn atmc_first_half(c: Coord, phase: StepPhase) -> Coord {
    let k = kinetic_derivatives(
        c.p,
        sampler_params.mass,
        sampler_params.inv_mass,
        sampler_params.speed,
    );
    var r = c;
    r.theta += 0.5 * phase.h * k.k1;
    r.xi = thermostat_half_step(c.xi, k, phase);
    r.s = k.s;
    return r;
}

fn atmc_second_half(c: Coord, g: f32, z: f32, phase: StepPhase) -> Coord {
    let h = phase.h;
    let t = phase.noise_temperature;
    var r = c;
    let beta = max(sampler_params.friction_floor, c.xi);
    let alpha = max(sampler_params.friction_floor - c.xi, 0.0);
    // Exact OU step with friction φβ/s (s frozen over the step for hyperbolic K).
    var x = sampler_params.friction_sign * beta * h;
    if (MAY_BE_HYPERBOLIC && sampler_params.speed != 0.0) {
        x = x / c.s;
    }
    let decay = exp(-x);
    let drift = h * one_minus_exp_neg_over_x(x, decay);
    let variance = 2.0 * alpha * sampler_params.noise_mass * t * h
        * one_minus_exp_neg_over_x(2.0 * x, decay * decay);
    r.p = decay * c.p - drift * g + sqrt(variance) * z;
    let k = kinetic_derivatives(
        r.p,
        sampler_params.mass,
        sampler_params.inv_mass,
        sampler_params.speed,
    );
    r.xi = thermostat_half_step(c.xi, k, phase);
    r.theta += 0.5 * h * k.k1;
    return r;
}

fn sgld_update(theta: f32, g: f32, z: f32, phase: StepPhase) -> f32 {
    let h = phase.h;
    return theta + (-h * g + sqrt(2.0 * h * phase.noise_temperature) * z);
}

fn sghmc_update(c: Coord, g: f32, z: f32, phase: StepPhase) -> Coord {
    let h = phase.h;
    let t = phase.noise_temperature;
    var r = c;
    let excess = sampler_params.sghmc_friction - sampler_params.sghmc_noise_estimate;
    let scale = sqrt(max(2.0 * excess * h * t, 0.0));
    r.p = c.p - h * g - h * sampler_params.sghmc_friction * c.p * sampler_params.inv_mass
        + scale * z;
    r.theta += h * r.p * sampler_params.inv_mass;
    return r;
}

// Momentum and position of SGNHT; the heat p²/m − T goes to `sgnht_thermostat` (averaged
// first when ξ is shared), returned in `s`.
fn sgnht_update(c: Coord, g: f32, z: f32, phase: StepPhase) -> Coord {
    let h = phase.h;
    var r = c;
    let scale = sqrt(2.0 * sampler_params.sgnht_diffusion * h * phase.noise_temperature);
    r.p = c.p - h * g - h * c.xi * c.p + scale * z;
    r.theta += h * r.p * sampler_params.inv_mass;
    r.s = r.p * r.p * sampler_params.inv_mass - phase.temperature;
    return r;
}

fn sgnht_thermostat(xi: f32, heat: f32, phase: StepPhase) -> f32 {
    if (phase.thermostat_frozen) {
        return xi;
    }
    return xi + phase.h * heat;
}

fn sgd_update(theta: f32, g: f32, phase: StepPhase) -> f32 {
    return theta - phase.h * g;
}

// Heavy-ball momentum μ: v ← μv − h g̃, θ ← θ + v, the velocity in p (MATH.md §5.3).
fn sgd_momentum_update(c: Coord, g: f32, phase: StepPhase) -> Coord {
    var r = c;
    r.p = c.p * sampler_params.sgd_momentum - g * phase.h;
    r.theta = c.theta + r.p;
    return r;
}

// `SamplerParams::coordinate_diverged`: non-finite values, or |p| or |θ| beyond their bounds.
fn coordinate_diverged(theta: f32, p: f32, xi: f32) -> bool {
    return !(is_finite(theta) && is_finite(p) && is_finite(xi))
        || abs(p) > sampler_params.divergence_bound
        || abs(theta) > sampler_params.theta_bound;
}

fn kinetic_heat(p: f32) -> f32 {
    let k = kinetic_derivatives(
        p,
        sampler_params.mass,
        sampler_params.inv_mass,
        sampler_params.speed,
    );
    return p * k.k1;
}
