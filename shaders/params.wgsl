// Helpers on the uniform block, and the float test every shader uses. The block itself (`struct Params`, bound as `params`), the
// other host-shared structs and every constant the host also uses (enum codes, flag bits,
// workgroup sizes, array bounds) are generated from Rust by src/engine/shader_interface.rs
// and precede this file in every composed shader: declare none of them here by hand.

// The i-th f32 constant of the target (`Target::gpu_constants`), packed four to a vec4
// because arrays in a uniform need a 16-byte stride.
fn target_param(i: u32) -> f32 {
    return params.target_params[i / 4u][i % 4u];
}

// Non-finite (±inf or NaN) from the bit pattern: an all-ones exponent. Comparisons with NaN
// may be folded away by fast-math shader compilers (e.g. Metal), bit tests cannot.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}
