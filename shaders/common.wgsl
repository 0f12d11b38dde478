// Helpers every program uses. The uniform blocks, the other host-shared structs, every
// constant the host also uses (enum codes, flag bits, partial-sum slots, target-constant
// positions, workgroup sizes, array bounds), the override constants, the bindings and
// `tanh_rational` (from the coefficients of `real::tanh_rational`) are generated from Rust by
// src/engine/shader_interface.rs and precede this file in every composed shader: declare none
// of them here by hand.

// Non-finite (±inf or NaN) from the bit pattern: an all-ones exponent. Comparisons with NaN
// may be folded away by fast-math shader compilers (e.g. Metal), bit tests cannot.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}
