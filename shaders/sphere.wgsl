// The sphere toy (MATH.md §5.4): projected SGD with heavy-ball momentum on the unit sphere.
// Mirrors src/math/sphere.rs function by function; each invocation advances one chain by
// `sphere_params.steps` steps with its state in registers. The minibatch of chain c at step s is
// drawn from Philox((c, s, ⌊j/4⌋, STREAM_MINIBATCH)) exactly as on the CPU, so both
// engines pick the same objects and differ only by float rounding (f32 here, f64 there).

// `chains` and `objects` (the aᵢ, unit length, w unused) are generated bindings.

// `object_gradient`: 2(a·x)(a − (a·x)x), tangent at a unit x.
fn object_gradient(a: vec3<f32>, x: vec3<f32>) -> vec3<f32> {
    let ax = dot(a, x);
    return 2.0 * ax * (a - ax * x);
}

// `batch_index`: minibatch slot j among n objects.
fn batch_index(rng: RngCounter, j: u32, n: u32) -> u32 {
    return index_below(rng_bits4(rng, STREAM_MINIBATCH, j / 4u)[j % 4u], n);
}

// `step`: v ← μv − η ĝ, x ← (x + v)/|x + v|, v projected onto the tangent plane at the new x.
fn sphere_step(chain: ptr<function, SphereChain>, rng: RngCounter) {
    var x = (*chain).x.xyz;
    var v = (*chain).v.xyz;
    var g = vec3<f32>(0.0);
    for (var j = 0u; j < sphere_params.batch_size; j++) {
        g += object_gradient(objects[batch_index(rng, j, sphere_params.data_n)].xyz, x);
    }
    g = g / f32(sphere_params.batch_size);
    v = sphere_params.momentum * v - sphere_params.h * g;
    let moved = x + v;
    let len = length(moved);
    if (len > 0.0 && is_finite(len)) {
        x = moved / len;
    }
    v -= dot(v, x) * x;
    *chain = SphereChain(vec4<f32>(x, 0.0), vec4<f32>(v, 0.0));
}

@compute @workgroup_size(CHAIN_WORKGROUP)
fn advance_sphere(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let index = (workgroup.y * sphere_params.groups_x + workgroup.x) * CHAIN_WORKGROUP + lane;
    if (index >= sphere_params.chains) {
        return;
    }
    var chain = chains[index];
    let key = vec2<u32>(sphere_params.seed_lo, sphere_params.seed_hi);
    for (var k = 0u; k < sphere_params.steps; k++) {
        sphere_step(&chain, RngCounter(key, index, sphere_params.step0 + k));
    }
    chains[index] = chain;
}
