// Gradients of -log density, mirroring each family's `Gradient::gradient` in
// src/math/targets/<family>.rs, and the -log density itself (HMC's Metropolis test),
// mirroring each family's `Density::neg_log_density` in f32. The host passes the same f32
// constants the Rust code computes (see `Target::gpu_constants`).

// The constant of the target at `position` (its index in the family's `GPU_PARAMS`, generated
// as `PARAM_<FAMILY>_<NAME>`), packed four to a vec4 because arrays in a uniform need a
// 16-byte stride.
fn target_param(position: u32) -> f32 {
    return chain2_params.target_params[position / 4u][position % 4u];
}

fn gmm_gradient(t: vec2<f32>, spacing: f32, variance: f32) -> vec2<f32> {
    var d_min = 3.4028235e38;
    for (var k = 0u; k < 25u; k++) {
        let cx = f32(k % 5u) * spacing - 2.0 * spacing;
        let cy = f32(k / 5u) * spacing - 2.0 * spacing;
        let d = ((t.x - cx) * (t.x - cx) + (t.y - cy) * (t.y - cy)) / (2.0 * variance);
        d_min = min(d_min, d);
    }
    var w_sum = 0.0;
    var gx = 0.0;
    var gy = 0.0;
    for (var k = 0u; k < 25u; k++) {
        let cx = f32(k % 5u) * spacing - 2.0 * spacing;
        let cy = f32(k / 5u) * spacing - 2.0 * spacing;
        let d = ((t.x - cx) * (t.x - cx) + (t.y - cy) * (t.y - cy)) / (2.0 * variance);
        let w = exp(d_min - d);
        w_sum += w;
        gx += w * (t.x - cx);
        gy += w * (t.y - cy);
    }
    return vec2<f32>(gx / (variance * w_sum), gy / (variance * w_sum));
}

// P (t − μ) of the Gaussian with precision P and mean μ.
fn gaussian_gradient(t: vec2<f32>) -> vec2<f32> {
    let d0 = t.x - target_param(PARAM_GAUSSIAN_MEAN0);
    let d1 = t.y - target_param(PARAM_GAUSSIAN_MEAN1);
    let p0 = target_param(PARAM_GAUSSIAN_PRECISION00);
    let p1 = target_param(PARAM_GAUSSIAN_PRECISION01);
    let p2 = target_param(PARAM_GAUSSIAN_PRECISION11);
    return vec2<f32>(p0 * d0 + p1 * d1, p1 * d0 + p2 * d1);
}

fn logistic_gradient(t: vec2<f32>, rng: RngCounter) -> vec2<f32> {
    let n = chain2_params.data_n;
    let inv_var = target_param(PARAM_LOGISTIC_PRIOR_PRECISION);
    var g0 = 0.0;
    var g1 = 0.0;
    let full = chain2_params.batch_size >= n;
    for (var j = 0u; j < chain2_params.batch_size; j++) {
        var i = j;
        if (!full) {
            let bits = rng_bits4(rng, STREAM_MINIBATCH, j / 4u);
            i = index_below(bits[j % 4u], n);
        }
        let x = data[i];
        let z = t.x * x.x + t.y * x.y;
        let r = 1.0 / (1.0 + exp(-z)) - x.z;
        g0 += r * x.x;
        g1 += r * x.y;
    }
    let scale = f32(n) / f32(chain2_params.batch_size);
    return vec2<f32>(t.x * inv_var + scale * g0, t.y * inv_var + scale * g1);
}

// ln(1 + x) as `Num::ln1p_` in src/math/expr/program.rs computes it for expression targets:
// ln(u) x / (u - 1) with u = 1 + x rounded, x itself where u rounds to 1.
fn expr_ln1p(x: f32) -> f32 {
    let u = x + 1.0;
    let d = u - 1.0;
    return select(log(u) * (x / d), x, abs(d) < 1.17549435e-38);
}

// `SPECIALISED_TARGET`: the target this pipeline runs, set when the host compiles it.
fn target_gradient(t: vec2<f32>, rng: RngCounter) -> vec2<f32> {
    switch SPECIALISED_TARGET {
        case TARGET_GAUSSIAN: {
            return gaussian_gradient(t);
        }
        case TARGET_BANANA: {
            let a = target_param(PARAM_BANANA_A);
            let b = target_param(PARAM_BANANA_B);
            let s = target_param(PARAM_BANANA_S);
            let r = (t.y - b * (t.x * t.x - a * a)) / (s * s);
            return vec2<f32>(t.x / (a * a) - 2.0 * b * t.x * r, r);
        }
        case TARGET_DONUT: {
            let radius = target_param(PARAM_DONUT_RADIUS);
            let width_sq = target_param(PARAM_DONUT_WIDTH_SQ);
            let norm = sqrt(t.x * t.x + t.y * t.y);
            var f = 0.0;
            if (norm > 1e-20) {
                f = (norm - radius) / (width_sq * norm);
            }
            return vec2<f32>(f * t.x, f * t.y);
        }
        case TARGET_GMM25: {
            let spacing = target_param(PARAM_GMM25_SPACING);
            return gmm_gradient(t, spacing, target_param(PARAM_GMM25_VARIANCE));
        }
        case TARGET_FUNNEL: {
            let s2 = target_param(PARAM_FUNNEL_SIGMA_V_SQ);
            let e = exp(-t.y);
            return vec2<f32>(t.x * e, t.y / s2 - 0.5 * t.x * t.x * e + 0.5);
        }
        case TARGET_DOUBLE_WELL: {
            let mu2 = target_param(PARAM_DOUBLE_WELL_SEPARATION_SQ);
            let barrier = target_param(PARAM_DOUBLE_WELL_BARRIER);
            let q = t.x * t.x / mu2 - 1.0;
            return vec2<f32>(4.0 * barrier * q * t.x / mu2, t.y);
        }
        case TARGET_STUDENT_T: {
            let dof_scale_sq = target_param(PARAM_STUDENT_T_DOF_SCALE_SQ);
            let f = target_param(PARAM_STUDENT_T_DOF_PLUS_TWO) / ((t.x * t.x + t.y * t.y) + dof_scale_sq);
            return vec2<f32>(f * t.x, f * t.y);
        }
        case TARGET_EXPRESSION: {
            // Written from the formula's gradient program (src/math/expr/wgsl.rs); the
            // built-in targets' shader carries a stub.
            return expression_gradient(t);
        }
        default: {
            return logistic_gradient(t, rng);
        }
    }
}

// -log p(t) up to a constant, as `Density::neg_log_density` of each family (in f64 there):
// HMC's Metropolis test takes the difference at two positions.
fn target_energy(t: vec2<f32>) -> f32 {
    switch SPECIALISED_TARGET {
        case TARGET_GAUSSIAN: {
            // ½ dᵀ P d with d = t − μ: half the offset's product with the gradient P d.
            let d = t - vec2<f32>(target_param(PARAM_GAUSSIAN_MEAN0), target_param(PARAM_GAUSSIAN_MEAN1));
            return 0.5 * dot(d, gaussian_gradient(t));
        }
        case TARGET_BANANA: {
            let a = target_param(PARAM_BANANA_A);
            let b = target_param(PARAM_BANANA_B);
            let s = target_param(PARAM_BANANA_S);
            let r = t.y - b * (t.x * t.x - a * a);
            return t.x * t.x / (2.0 * a * a) + r * r / (2.0 * s * s);
        }
        case TARGET_DONUT: {
            let r = sqrt(t.x * t.x + t.y * t.y) - target_param(PARAM_DONUT_RADIUS);
            return r * r / (2.0 * target_param(PARAM_DONUT_WIDTH_SQ));
        }
        case TARGET_GMM25: {
            return gmm_energy(t, target_param(PARAM_GMM25_SPACING), target_param(PARAM_GMM25_VARIANCE));
        }
        case TARGET_FUNNEL: {
            let s2 = target_param(PARAM_FUNNEL_SIGMA_V_SQ);
            return t.y * t.y / (2.0 * s2) + 0.5 * t.x * t.x * exp(-t.y) + 0.5 * t.y;
        }
        case TARGET_DOUBLE_WELL: {
            let q = t.x * t.x / target_param(PARAM_DOUBLE_WELL_SEPARATION_SQ) - 1.0;
            return target_param(PARAM_DOUBLE_WELL_BARRIER) * q * q + 0.5 * t.y * t.y;
        }
        case TARGET_STUDENT_T: {
            let r2 = t.x * t.x + t.y * t.y;
            let dof_scale_sq = target_param(PARAM_STUDENT_T_DOF_SCALE_SQ);
            return 0.5 * target_param(PARAM_STUDENT_T_DOF_PLUS_TWO) * expr_ln1p(r2 / dof_scale_sq);
        }
        case TARGET_EXPRESSION: {
            return expression_energy(t);
        }
        default: {
            return logistic_energy(t);
        }
    }
}

// -log p(t) of the 25-component mixture: the nearest component's term less the log of the
// components' weights relative to it (as the f64 log-sum-exp of `Gmm25::neg_log_density`).
fn gmm_energy(t: vec2<f32>, spacing: f32, variance: f32) -> f32 {
    var d_min = 3.4028235e38;
    for (var k = 0u; k < 25u; k++) {
        let cx = f32(k % 5u) * spacing - 2.0 * spacing;
        let cy = f32(k / 5u) * spacing - 2.0 * spacing;
        d_min = min(d_min, ((t.x - cx) * (t.x - cx) + (t.y - cy) * (t.y - cy)) / (2.0 * variance));
    }
    var w_sum = 0.0;
    for (var k = 0u; k < 25u; k++) {
        let cx = f32(k % 5u) * spacing - 2.0 * spacing;
        let cy = f32(k / 5u) * spacing - 2.0 * spacing;
        w_sum += exp(d_min - ((t.x - cx) * (t.x - cx) + (t.y - cy) * (t.y - cy)) / (2.0 * variance));
    }
    return d_min - log(w_sum);
}

// The prior and every example's negative log-likelihood softplus(z) − y z (all N: the test
// needs the exact energy, whatever the minibatch of the gradient).
fn logistic_energy(t: vec2<f32>) -> f32 {
    var sum = 0.5 * target_param(PARAM_LOGISTIC_PRIOR_PRECISION) * (t.x * t.x + t.y * t.y);
    for (var i = 0u; i < chain2_params.data_n; i++) {
        let x = data[i];
        let z = t.x * x.x + t.y * x.y;
        sum += max(z, 0.0) + expr_ln1p(exp(-abs(z))) - x.z * z;
    }
    return sum;
}
