// Helpers on the uniform block. The block itself (`struct Params`, bound as `params`), the
// other host-shared structs and every constant the host also uses (enum codes, flag bits,
// workgroup sizes, array bounds) are generated from Rust by src/engine/shader_interface.rs
// and precede this file in every composed shader: declare none of them here by hand.

// The i-th f32 constant of the target (`Target::gpu_constants`), packed four to a vec4
// because arrays in a uniform need a 16-byte stride.
fn target_param(i: u32) -> f32 {
    return params.target_params[i / 4u][i % 4u];
}
