// The chain engine: each invocation advances one chain by `chain2_params.steps` steps with its
// state in registers, then the workgroup reduces the moments of its alive chains and bins them
// into the requested histograms (`chain2_params.hist_count`). Mirrors `CpuEngine::advance` in
// src/engine/cpu.rs.

// `chains`, `diverged_at`, `partials` (the `PARTIAL_*` slots per workgroup) and `histogram`
// (each histogram's cells, then its count of chains outside the grid) are generated bindings.

var<workgroup> scratch: array<array<f32, CHAIN_PARTIALS>, CHAIN_WORKGROUP>;

// Axis a of the state (`Axis::index` in src/engine/mod.rs).
fn state_value(chain: Chain, a: u32) -> f32 {
    switch a {
        case AXIS_THETA0: { return chain.theta.x; }
        case AXIS_THETA1: { return chain.theta.y; }
        case AXIS_P0: { return chain.p.x; }
        case AXIS_P1: { return chain.p.y; }
        case AXIS_XI0: { return chain.xi.x; }
        default: { return chain.xi.y; }
    }
}

// Bins one alive chain into histogram `i` with the rule of `BinRule::bin` in src/math/grid.rs;
// the slot after the cells counts chains outside the grid.
fn bin_into(i: u32, chain: Chain) {
    let f = chain2_params.hist_f[i];
    let u = chain2_params.hist_u[i];
    let x = state_value(chain, u.z & ((1u << HIST_AXIS_SHIFT) - 1u));
    let y = state_value(chain, u.z >> HIST_AXIS_SHIFT);
    let fx = floor((x - f.x) * f.z);
    let fy = floor((y - f.y) * f.w);
    var slot = u.w + u.x * u.y;
    if (fx >= 0.0 && fy >= 0.0 && fx < f32(u.x) && fy < f32(u.y)) {
        slot = u.w + u32(fy) * u.x + u32(fx);
    }
    atomicAdd(&histogram[slot], 1u);
}

@compute @workgroup_size(CHAIN_WORKGROUP)
fn advance(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let group_index = workgroup.y * chain2_params.groups_x + workgroup.x;
    let index = group_index * CHAIN_WORKGROUP + lane;
    var contribution: array<f32, CHAIN_PARTIALS>;
    for (var f = 0u; f < CHAIN_PARTIALS; f++) {
        contribution[f] = 0.0;
    }
    if (index < sampler_params.chains) {
        var chain = chains[index];
        var diverged = diverged_at[index];
        if (diverged == 0u) {
            let key = vec2<u32>(sampler_params.seed_lo, sampler_params.seed_hi);
            for (var k = 0u; k < chain2_params.steps; k++) {
                let step_index = chain2_params.step0 + k;
                if (model_step(&chain, RngCounter(key, index, step_index))) {
                    diverged = step_index + 1u;
                    break;
                }
            }
            chains[index] = chain;
            diverged_at[index] = diverged;
        }
        if (diverged == 0u) {
            contribution[PARTIAL_ALIVE] = 1.0;
            contribution[PARTIAL_THETA0] = chain.theta.x;
            contribution[PARTIAL_THETA1] = chain.theta.y;
            contribution[PARTIAL_THETA00] = chain.theta.x * chain.theta.x;
            contribution[PARTIAL_THETA01] = chain.theta.x * chain.theta.y;
            contribution[PARTIAL_THETA11] = chain.theta.y * chain.theta.y;
            contribution[PARTIAL_HEAT0] = kinetic_heat(chain.p.x);
            contribution[PARTIAL_HEAT1] = kinetic_heat(chain.p.y);
            contribution[PARTIAL_XI0] = chain.xi.x;
            contribution[PARTIAL_XI1] = chain.xi.y;
            for (var i = 0u; i < chain2_params.hist_count; i++) {
                bin_into(i, chain);
            }
        } else {
            contribution[PARTIAL_DIVERGED] = 1.0;
        }
    }
    scratch[lane] = contribution;
    scratch_tree_sum(lane, CHAIN_PARTIALS);
    if (lane == 0u) {
        partials[group_index] = scratch[0];
    }
}

// Adds the first `fields` entries of the workgroup's scratch rows pairwise, halving the stride,
// into row 0 (`tree_sum` in src/engine/moments.rs). Every lane must call it.
fn scratch_tree_sum(lane: u32, fields: u32) {
    workgroupBarrier();
    for (var stride = CHAIN_WORKGROUP / 2u; stride > 0u; stride = stride / 2u) {
        if (lane < stride) {
            for (var f = 0u; f < fields; f++) {
                scratch[lane][f] += scratch[lane + stride][f];
            }
        }
        workgroupBarrier();
    }
}

// The moments of superchain `workgroup_id.x` over its alive chains (chain i belongs to
// superchain i mod K): lane j sums the members j, j + CHAIN_WORKGROUP, … (chain s + K·m for
// member m), the lanes add as a tree; then the same for the squares about the mean. Mirrors
// `superchain_moments` in src/engine/moments.rs (in f32 here).
@compute @workgroup_size(CHAIN_WORKGROUP)
fn reduce_superchains(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let k = chain2_params.superchains;
    let s = workgroup.x;
    let stride = CHAIN_WORKGROUP * k;
    var sums = vec3<f32>(0.0);
    for (var i = s + lane * k; i < sampler_params.chains; i += stride) {
        if (diverged_at[i] == 0u) {
            sums += vec3<f32>(1.0, chains[i].theta);
        }
    }
    scratch[lane][0] = sums.x;
    scratch[lane][1] = sums.y;
    scratch[lane][2] = sums.z;
    scratch_tree_sum(lane, 3u);
    let alive = scratch[0][0];
    var mean = vec2<f32>(0.0);
    if (alive > 0.0) {
        mean = vec2<f32>(scratch[0][1], scratch[0][2]) / alive;
    }
    workgroupBarrier();
    var squares = vec2<f32>(0.0);
    for (var i = s + lane * k; i < sampler_params.chains; i += stride) {
        if (diverged_at[i] == 0u) {
            let d = chains[i].theta - mean;
            squares += d * d;
        }
    }
    scratch[lane][0] = squares.x;
    scratch[lane][1] = squares.y;
    scratch_tree_sum(lane, 2u);
    if (lane == 0u) {
        superchain_sums[s] = array<f32, SUPERCHAIN_FIELDS>(
            alive, mean.x, mean.y, scratch[0][0], scratch[0][1]
        );
    }
}
