// Bayesian MLP posteriors: one invocation per chain (one network) for the sampler's halves,
// and for the gradient one workgroup per network (`mlp_net_accumulate`, at the end) or, on
// devices without its workgroup memory, one invocation (`mlp_accumulate`); mirroring
// src/math/mlp.rs function by function. The state of every chain lives in one buffer of four
// regions (θ, p, ξ, gradient scratch), each P × chains with the chain index fastest, so the
// invocations of a workgroup read neighbouring words.
//
// One sampler step is several dispatches: the first half, the minibatch in slices, the second
// half. llvmpipe (lavapipe) stops any shader invocation after 65,535 loop iterations in all
// (LP_MAX_TGSI_LOOP_ITERATIONS, shared by every loop of the shader), so no invocation may run
// a whole minibatch of backward passes; `MlpGpuEngine` sizes the slices to stay below it
// (`example_iterations`, `net_iterations`). On other GPUs the slices cost a few extra
// dispatches and nothing else.

// The bindings, the blocks `SamplerParams`, `MlpParams` and `Slice`, MLP_WORKGROUP, MAX_WIDTH,
// MAX_CLASSES, MAX_LAYERS, MAX_ACTIVATIONS, MLP_PARTIALS and its slots PARTIAL_MLP_*, the
// activations ACT_* and the state regions REGION_* are generated from Rust
// (src/engine/shader_interface.rs). SELU's λ and α are the shader's own copies of
// `SELU_LAMBDA` and `SELU_ALPHA` in src/math/mlp.rs.
const SELU_LAMBDA: f32 = 1.050701;
const SELU_ALPHA: f32 = 1.6732632;

fn state_index(region: u32, i: u32, chain: u32) -> u32 {
    return (region * mlp_params.param_count + i) * sampler_params.chains + chain;
}

fn theta_at(i: u32, chain: u32) -> f32 {
    return state[state_index(REGION_THETA, i, chain)];
}

fn layer_size(k: u32) -> u32 {
    return mlp_params.sizes[k / 4u][k % 4u];
}

fn classes() -> u32 {
    return layer_size(mlp_params.layers);
}

// Offset of weight layer l's matrix (`Architecture::layer`).
fn layer_offset(l: u32) -> u32 {
    var offset = 0u;
    for (var k = 0u; k < l; k++) {
        offset += (layer_size(k) + 1u) * layer_size(k + 1u);
    }
    return offset;
}

// `SPECIALISED_ACTIVATION` and `SPECIALISED_SAMPLER` are the activation and the sampler this
// pipeline runs (`Activation::gpu_code`, `SamplerKind::gpu_code`), set when the host compiles
// it: their switches sit in the innermost loops, and with the values known the other branches
// are compiled out (`MlpGpuEngine` makes new pipelines when the sampler or its `Features`
// change).

fn activation_apply(a: f32) -> f32 {
    switch SPECIALISED_ACTIVATION {
        case ACT_TANH: {
            return tanh_rational(a);
        }
        case ACT_RELU: {
            return max(a, 0.0);
        }
        default: {
            if (a > 0.0) {
                return SELU_LAMBDA * a;
            }
            return SELU_LAMBDA * SELU_ALPHA * (exp(min(a, 0.0)) - 1.0);
        }
    }
}

fn activation_derivative_from_output(y: f32) -> f32 {
    switch SPECIALISED_ACTIVATION {
        case ACT_TANH: {
            return 1.0 - y * y;
        }
        case ACT_RELU: {
            return select(0.0, 1.0, y > 0.0);
        }
        default: {
            return select(y + SELU_LAMBDA * SELU_ALPHA, SELU_LAMBDA, y > 0.0);
        }
    }
}

// Runs chain `chain`'s network on x, leaving every layer's output in `acts`; returns the
// offset of the logits.
fn forward_into(chain: u32, x: vec2<f32>, acts: ptr<function, array<f32, MAX_ACTIVATIONS>>) -> u32 {
    (*acts)[0] = x.x;
    (*acts)[1] = x.y;
    var input = 0u;
    var offset = 0u;
    let layers = mlp_params.layers;
    for (var l = 0u; l < layers; l++) {
        let n_in = layer_size(l);
        let n_out = layer_size(l + 1u);
        let output = input + n_in;
        let biases = offset + n_in * n_out;
        for (var o = 0u; o < n_out; o++) {
            var a = theta_at(biases + o, chain);
            for (var i = 0u; i < n_in; i++) {
                a += theta_at(offset + o * n_in + i, chain) * (*acts)[input + i];
            }
            if (l + 1u < layers) {
                a = activation_apply(a);
            }
            (*acts)[output + o] = a;
        }
        input = output;
        offset = biases + n_out;
    }
    return input;
}

fn softmax_at(acts: ptr<function, array<f32, MAX_ACTIVATIONS>>, logits: u32) -> array<f32, MAX_CLASSES> {
    let k = classes();
    var m = -3.4028235e38;
    for (var c = 0u; c < k; c++) {
        m = max(m, (*acts)[logits + c]);
    }
    var probs: array<f32, MAX_CLASSES>;
    var sum = 0.0;
    for (var c = 0u; c < k; c++) {
        probs[c] = exp((*acts)[logits + c] - m);
        sum += probs[c];
    }
    let inv = 1.0 / sum;
    for (var c = 0u; c < k; c++) {
        probs[c] *= inv;
    }
    return probs;
}

// Adds ∇θ CE of one example to the chain's gradient region: one backward pass.
fn accumulate_example(chain: u32, x: vec2<f32>, y: u32, acts: ptr<function, array<f32, MAX_ACTIVATIONS>>) {
    let logits = forward_into(chain, x, acts);
    let probs = softmax_at(acts, logits);
    var delta: array<f32, MAX_WIDTH>;
    for (var c = 0u; c < classes(); c++) {
        delta[c] = probs[c] - select(0.0, 1.0, c == y);
    }
    var output = logits;
    for (var back = 0u; back < mlp_params.layers; back++) {
        let l = mlp_params.layers - 1u - back;
        let n_in = layer_size(l);
        let n_out = layer_size(l + 1u);
        let weights = layer_offset(l);
        let biases = weights + n_in * n_out;
        let input = output - n_in;
        for (var o = 0u; o < n_out; o++) {
            let d = delta[o];
            let b = state_index(REGION_GRADIENT, biases + o, chain);
            state[b] += d;
            for (var i = 0u; i < n_in; i++) {
                let w = state_index(REGION_GRADIENT, weights + o * n_in + i, chain);
                state[w] += d * (*acts)[input + i];
            }
        }
        if (l > 0u) {
            var previous: array<f32, MAX_WIDTH>;
            for (var i = 0u; i < n_in; i++) {
                var sum = 0.0;
                for (var o = 0u; o < n_out; o++) {
                    sum += theta_at(weights + o * n_in + i, chain) * delta[o];
                }
                previous[i] = sum * activation_derivative_from_output((*acts)[input + i]);
            }
            delta = previous;
        }
        output = input;
    }
}

fn chain_rng(chain: u32) -> RngCounter {
    let key = vec2<u32>(sampler_params.seed_lo, sampler_params.seed_hi);
    return RngCounter(key, chain, slice.step);
}

// The example of minibatch slot j (`MlpPosterior::batch_index`).
fn batch_index(j: u32, rng: RngCounter) -> u32 {
    if (mlp_params.batch_size >= mlp_params.data_n) {
        return j;
    }
    let bits = rng_bits4(rng, STREAM_MINIBATCH, j / 4u);
    return index_below(bits[j % 4u], mlp_params.data_n);
}

fn zero_gradient(chain: u32) {
    for (var i = 0u; i < mlp_params.param_count; i++) {
        state[state_index(REGION_GRADIENT, i, chain)] = 0.0;
    }
}

// Σ over minibatch slots [slice.first, slice.end) of ∇CE, added to the gradient region.
fn accumulate_slice(chain: u32) {
    let rng = chain_rng(chain);
    var acts: array<f32, MAX_ACTIVATIONS>;
    for (var j = slice.first; j < slice.end; j++) {
        let point = data[batch_index(j, rng)];
        accumulate_example(chain, point.xy, u32(point.z), &acts);
    }
}

// g̃ = θ/σ² + (N/n) Σ_batch ∇CE (`MlpPosterior::stochastic_gradient`, after the sum).
fn finish_gradient(chain: u32) {
    let scale = f32(mlp_params.data_n) / f32(mlp_params.batch_size);
    for (var i = 0u; i < mlp_params.param_count; i++) {
        let g = state_index(REGION_GRADIENT, i, chain);
        state[g] = theta_at(i, chain) * mlp_params.prior_precision + state[g] * scale;
    }
}

fn load_coord(i: u32, chain: u32) -> Coord {
    return Coord(
        state[state_index(REGION_THETA, i, chain)],
        state[state_index(REGION_P, i, chain)],
        state[state_index(REGION_XI, i, chain)],
        1.0,
    );
}

fn store_coord(i: u32, chain: u32, c: Coord) {
    state[state_index(REGION_THETA, i, chain)] = c.theta;
    state[state_index(REGION_P, i, chain)] = c.p;
    state[state_index(REGION_XI, i, chain)] = c.xi;
}

fn gradient_at(i: u32, chain: u32) -> f32 {
    return state[state_index(REGION_GRADIENT, i, chain)];
}

// `MlpModel::advance` up to the gradient: ATMC's first half; every sampler clears the sum.
fn sampler_first_half(chain: u32) {
    if (SPECIALISED_SAMPLER == SAMPLER_ATMC) {
        let phase = step_phase(slice.step);
        for (var i = 0u; i < mlp_params.param_count; i++) {
            store_coord(i, chain, atmc_first_half(load_coord(i, chain), phase));
        }
    }
    zero_gradient(chain);
}

// `MlpModel::advance` after the gradient; returns true when the network diverged.
fn sampler_second_half(chain: u32) -> bool {
    finish_gradient(chain);
    let rng = chain_rng(chain);
    let phase = step_phase(slice.step);
    let n = mlp_params.param_count;
    var z4 = vec4<f32>(0.0);
    switch SPECIALISED_SAMPLER {
        case SAMPLER_ATMC: {
            for (var i = 0u; i < n; i++) {
                if (i % 4u == 0u) {
                    z4 = rng_normal4(rng, STREAM_INJECTED, i / 4u);
                }
                var c = load_coord(i, chain);
                // p is unchanged since the first half: s there is s here.
                c.s = kinetic_derivatives(
                    c.p,
                    sampler_params.mass,
                    sampler_params.inv_mass,
                    sampler_params.speed,
                ).s;
                store_coord(i, chain, atmc_second_half(c, gradient_at(i, chain), z4[i % 4u], phase));
            }
        }
        case SAMPLER_SGLD: {
            for (var i = 0u; i < n; i++) {
                if (i % 4u == 0u) {
                    z4 = rng_normal4(rng, STREAM_INJECTED, i / 4u);
                }
                let k = state_index(REGION_THETA, i, chain);
                state[k] = sgld_update(state[k], gradient_at(i, chain), z4[i % 4u], phase);
            }
        }
        case SAMPLER_SGHMC: {
            for (var i = 0u; i < n; i++) {
                if (i % 4u == 0u) {
                    z4 = rng_normal4(rng, STREAM_INJECTED, i / 4u);
                }
                let c = sghmc_update(load_coord(i, chain), gradient_at(i, chain), z4[i % 4u], phase);
                store_coord(i, chain, c);
            }
        }
        case SAMPLER_SGNHT: {
            var heat_sum = 0.0;
            for (var i = 0u; i < n; i++) {
                if (i % 4u == 0u) {
                    z4 = rng_normal4(rng, STREAM_INJECTED, i / 4u);
                }
                let c = sgnht_update(load_coord(i, chain), gradient_at(i, chain), z4[i % 4u], phase);
                store_coord(i, chain, c);
                // The heat of each parameter replaces its gradient once used.
                state[state_index(REGION_GRADIENT, i, chain)] = c.s;
                heat_sum += c.s;
            }
            let shared_xi = (sampler_params.flags & FLAG_SGNHT_SHARED) != 0u;
            for (var i = 0u; i < n; i++) {
                let heat = select(gradient_at(i, chain), heat_sum / f32(n), shared_xi);
                let k = state_index(REGION_XI, i, chain);
                state[k] = sgnht_thermostat(state[k], heat, phase);
            }
        }
        default: {
            // μ = 0 leaves p alone, as `MlpModel::advance` does.
            if (sampler_params.sgd_momentum == 0.0) {
                for (var i = 0u; i < n; i++) {
                    let k = state_index(REGION_THETA, i, chain);
                    state[k] = sgd_update(state[k], gradient_at(i, chain), phase);
                }
            } else {
                for (var i = 0u; i < n; i++) {
                    let c = sgd_momentum_update(load_coord(i, chain), gradient_at(i, chain), phase);
                    store_coord(i, chain, c);
                }
            }
        }
    }
    var diverged = false;
    for (var i = 0u; i < n; i++) {
        let c = load_coord(i, chain);
        diverged = diverged || coordinate_diverged(c.theta, c.p, c.xi);
    }
    return diverged;
}

fn alive(chain: u32) -> bool {
    return chain < sampler_params.chains && diverged_at[chain] == 0u;
}

@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_first_half(@builtin(global_invocation_id) id: vec3<u32>) {
    if (alive(id.x)) {
        sampler_first_half(id.x);
    }
}

@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_accumulate(@builtin(global_invocation_id) id: vec3<u32>) {
    if (alive(id.x)) {
        accumulate_slice(id.x);
    }
}

@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_second_half(@builtin(global_invocation_id) id: vec3<u32>) {
    if (alive(id.x) && sampler_second_half(id.x)) {
        diverged_at[id.x] = slice.step + 1u;
    }
}

// The gradient alone, for tests: clear, then the slices, then this.
@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_clear_gradient(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < sampler_params.chains) {
        zero_gradient(id.x);
    }
}

@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_finish_gradient(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < sampler_params.chains) {
        finish_gradient(id.x);
    }
}

@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_accumulate_all(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < sampler_params.chains) {
        accumulate_slice(id.x);
    }
}

var<workgroup> mlp_scratch: array<array<f32, MLP_PARTIALS>, MLP_WORKGROUP>;

// Per-layer kinetic temperature and ξ sums of the alive chains, reduced per workgroup.
@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_statistics(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let index = workgroup.x * MLP_WORKGROUP + lane;
    var contribution: array<f32, MLP_PARTIALS>;
    if (alive(index)) {
        contribution[PARTIAL_MLP_ALIVE] = 1.0;
        var offset = 0u;
        for (var l = 0u; l < mlp_params.layers; l++) {
            let end = offset + (layer_size(l) + 1u) * layer_size(l + 1u);
            for (var i = offset; i < end; i++) {
                let heat = PARTIAL_MLP_LAYERS + 2u * l;
                contribution[heat] += kinetic_heat(state[state_index(REGION_P, i, index)]);
                contribution[heat + 1u] += state[state_index(REGION_XI, i, index)];
            }
            offset = end;
        }
    } else if (index < sampler_params.chains) {
        contribution[PARTIAL_MLP_DIVERGED] = 1.0;
    }
    mlp_scratch[lane] = contribution;
    workgroupBarrier();
    for (var stride = MLP_WORKGROUP / 2u; stride > 0u; stride = stride / 2u) {
        if (lane < stride) {
            for (var f = 0u; f < MLP_PARTIALS; f++) {
                mlp_scratch[lane][f] += mlp_scratch[lane + stride][f];
            }
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        partials[workgroup.x] = mlp_scratch[0];
    }
}

// Adds the class probabilities of the alive chains in [slice.first, slice.end) at one point
// to its sums (the buffer starts cleared); one dispatch also stores the focus chain's own
// probabilities.
@compute @workgroup_size(MLP_WORKGROUP)
fn mlp_predict(@builtin(global_invocation_id) id: vec3<u32>) {
    let index = id.x;
    if (index >= mlp_params.points) {
        return;
    }
    let k = classes();
    let base = index * (3u * k + 1u);
    let x = points[index];
    var acts: array<f32, MAX_ACTIVATIONS>;
    var sum: array<f32, MAX_CLASSES>;
    var square: array<f32, MAX_CLASSES>;
    for (var c = 0u; c < k; c++) {
        sum[c] = predictions[base + c];
        square[c] = predictions[base + k + c];
    }
    var count = predictions[base + 3u * k];
    for (var chain = slice.first; chain < slice.end; chain++) {
        if (diverged_at[chain] != 0u) {
            continue;
        }
        let probs = softmax_at(&acts, forward_into(chain, x, &acts));
        for (var c = 0u; c < k; c++) {
            sum[c] += probs[c];
            square[c] += probs[c] * probs[c];
        }
        count += 1.0;
    }
    for (var c = 0u; c < k; c++) {
        predictions[base + c] = sum[c];
        predictions[base + k + c] = square[c];
    }
    predictions[base + 3u * k] = count;
    if (slice.with_focus != 0u) {
        let own = softmax_at(&acts, forward_into(mlp_params.focus_chain, x, &acts));
        for (var c = 0u; c < k; c++) {
            predictions[base + 2u * k + c] = own[c];
        }
    }
}

// ---- One workgroup per network: the gradient with MLP_NET_WORKGROUP invocations each ----
//
// `mlp_net_accumulate` gives every network a workgroup of its own (an H200 keeps tens of
// thousands of invocations busy where one per network kept a few thousand). θ is copied once
// into workgroup memory; the minibatch slots [slice.first, slice.end) then go through in tiles
// of MLP_NET_WORKGROUP examples:
// - forward and error: invocation e runs example first + e of the tile alone, reading θ from
//   workgroup memory (every invocation the same word, a broadcast);
// - weight gradient, layer by layer from the logits down: each invocation puts its example's
//   inputs and output errors of the layer in workgroup memory, then every invocation adds
//   the tile's examples, in order, into the gradient sums of the parameters it owns
//   (parameter k, k + MLP_NET_WORKGROUP, … of the layer), kept in registers across tiles.
// Every gradient entry is one running sum over the minibatch slots 0, 1, …, each product
// rounded and added (no fused multiply-add written), the biases likewise: the order of
// `MlpPosterior::stochastic_gradient_per_example`, this kernel's Rust twin (docs/MATH.md §7).
// No tree: an entry never has two partial sums. The sums start from the gradient region and
// go back to it, so a minibatch split into dispatches (llvmpipe's loop limit) keeps the order.

var<workgroup> net_theta: array<f32, MLP_NET_PARAMS>;
// One tile's inputs of a weight layer and errors of its outputs, [unit * MLP_NET_WORKGROUP + e].
var<workgroup> net_inputs: array<f32, MLP_NET_STAGE>;
var<workgroup> net_errors: array<f32, MLP_NET_STAGE>;
var<workgroup> net_live: u32;

// `forward_into` with θ from workgroup memory: the same sums in the same order.
fn net_forward(x: vec2<f32>, acts: ptr<function, array<f32, MAX_ACTIVATIONS>>) -> u32 {
    (*acts)[0] = x.x;
    (*acts)[1] = x.y;
    var input = 0u;
    var weights = 0u;
    let layers = mlp_params.layers;
    for (var l = 0u; l < layers; l++) {
        let width = layer_size(l);
        let units = layer_size(l + 1u);
        let first_bias = weights + width * units;
        for (var u = 0u; u < units; u++) {
            var sum = net_theta[first_bias + u];
            let row = weights + u * width;
            for (var i = 0u; i < width; i++) {
                sum += net_theta[row + i] * (*acts)[input + i];
            }
            if (l + 1u < layers) {
                sum = activation_apply(sum);
            }
            (*acts)[input + width + u] = sum;
        }
        input += width;
        weights = first_bias + units;
    }
    return input;
}

// Gradient slots before weight layer l's in an invocation's `owned` array.
fn net_slot_base(l: u32) -> u32 {
    var base = 0u;
    for (var k = 0u; k < l; k++) {
        base += ((layer_size(k) + 1u) * layer_size(k + 1u) + MLP_NET_WORKGROUP - 1u) / MLP_NET_WORKGROUP;
    }
    return base;
}

// Moves the gradient sums invocation `lane` owns between the state and `owned`: loads them
// when `store` is false, stores them when true.
fn net_owned_io(network: u32, lane: u32, owned: ptr<function, array<f32, MLP_NET_OWNED>>, store: bool) {
    var slot = 0u;
    var offset = 0u;
    for (var l = 0u; l < mlp_params.layers; l++) {
        let size = (layer_size(l) + 1u) * layer_size(l + 1u);
        for (var q = lane; q < size; q += MLP_NET_WORKGROUP) {
            let k = state_index(REGION_GRADIENT, offset + q, network);
            let s = slot + q / MLP_NET_WORKGROUP;
            if (store) {
                state[k] = (*owned)[s];
            } else {
                (*owned)[s] = state[k];
            }
        }
        slot += (size + MLP_NET_WORKGROUP - 1u) / MLP_NET_WORKGROUP;
        offset += size;
    }
}

// Adds the tile's `count` examples, in order, to the sums of weight layer l's parameters that
// invocation `lane` owns, from the inputs and errors in workgroup memory.
fn net_layer_gradient(l: u32, lane: u32, count: u32, owned: ptr<function, array<f32, MLP_NET_OWNED>>) {
    let width = layer_size(l);
    let units = layer_size(l + 1u);
    let weights = width * units;
    let base = net_slot_base(l);
    for (var m = 0u; m * MLP_NET_WORKGROUP < weights + units; m++) {
        let q = lane + m * MLP_NET_WORKGROUP;
        if (q < weights) {
            let errors = (q / width) * MLP_NET_WORKGROUP;
            let inputs = (q % width) * MLP_NET_WORKGROUP;
            var g = (*owned)[base + m];
            for (var e = 0u; e < count; e++) {
                g += net_errors[errors + e] * net_inputs[inputs + e];
            }
            (*owned)[base + m] = g;
        } else if (q < weights + units) {
            let errors = (q - weights) * MLP_NET_WORKGROUP;
            var g = (*owned)[base + m];
            for (var e = 0u; e < count; e++) {
                g += net_errors[errors + e];
            }
            (*owned)[base + m] = g;
        }
    }
}

// Σ over minibatch slots [slice.first, slice.end) of ∇CE of network `network`, added to its
// gradient region by the MLP_NET_WORKGROUP invocations of one workgroup.
fn net_accumulate(network: u32, lane: u32) {
    for (var i = lane; i < mlp_params.param_count; i += MLP_NET_WORKGROUP) {
        net_theta[i] = theta_at(i, network);
    }
    var owned: array<f32, MLP_NET_OWNED>;
    net_owned_io(network, lane, &owned, false);
    workgroupBarrier();
    let rng = chain_rng(network);
    let layers = mlp_params.layers;
    var acts: array<f32, MAX_ACTIVATIONS>;
    var delta: array<f32, MAX_WIDTH>;
    for (var first = slice.first; first < slice.end; first += MLP_NET_WORKGROUP) {
        let count = min(MLP_NET_WORKGROUP, slice.end - first);
        let busy = lane < count;
        // The logits' offset in `acts`, the same for every invocation.
        var output = 0u;
        for (var l = 0u; l < layers; l++) {
            output += layer_size(l);
        }
        if (busy) {
            let point = data[batch_index(first + lane, rng)];
            let probs = softmax_at(&acts, net_forward(point.xy, &acts));
            for (var c = 0u; c < classes(); c++) {
                delta[c] = probs[c] - select(0.0, 1.0, c == u32(point.z));
            }
        }
        var weights = mlp_params.param_count;
        for (var back = 0u; back < layers; back++) {
            let l = layers - 1u - back;
            let width = layer_size(l);
            let units = layer_size(l + 1u);
            weights -= (width + 1u) * units;
            let input = output - width;
            if (busy) {
                for (var u = 0u; u < units; u++) {
                    net_errors[u * MLP_NET_WORKGROUP + lane] = delta[u];
                }
                for (var i = 0u; i < width; i++) {
                    net_inputs[i * MLP_NET_WORKGROUP + lane] = acts[input + i];
                }
                // The error of the layer below (`back_sums`, then f').
                if (l > 0u) {
                    var below: array<f32, MAX_WIDTH>;
                    for (var i = 0u; i < width; i++) {
                        var sum = 0.0;
                        for (var u = 0u; u < units; u++) {
                            sum += net_theta[weights + u * width + i] * delta[u];
                        }
                        below[i] = sum * activation_derivative_from_output(acts[input + i]);
                    }
                    delta = below;
                }
            }
            output = input;
            workgroupBarrier();
            net_layer_gradient(l, lane, count, &owned);
            workgroupBarrier();
        }
    }
    net_owned_io(network, lane, &owned, true);
}

// The network of this workgroup (a 2-D grid where the chains outnumber one dimension's
// workgroups) and whether it runs: `live` reads `diverged_at` unless `all`.
fn net_entry(workgroup: vec3<u32>, groups: vec3<u32>, lane: u32, all: bool) {
    let network = workgroup.y * groups.x + workgroup.x;
    if (lane == 0u) {
        let runs = network < sampler_params.chains && (all || diverged_at[network] == 0u);
        net_live = select(0u, 1u, runs);
    }
    if (workgroupUniformLoad(&net_live) != 0u) {
        net_accumulate(network, lane);
    }
}

@compute @workgroup_size(MLP_NET_WORKGROUP)
fn mlp_net_accumulate(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    net_entry(workgroup, groups, lane, false);
}

// The gradient alone, for tests: every network, diverged or not.
@compute @workgroup_size(MLP_NET_WORKGROUP)
fn mlp_net_accumulate_all(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    net_entry(workgroup, groups, lane, true);
}
