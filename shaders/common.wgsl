// Helpers every program uses. The uniform blocks, the other host-shared structs, every
// constant the host also uses (enum codes, flag bits, partial-sum slots, target-constant
// positions, workgroup sizes, array bounds), the override constants and the bindings are
// generated from Rust by src/engine/shader_interface.rs and precede this file in every
// composed shader: declare none of them here by hand.

// Non-finite (±inf or NaN) from the bit pattern: an all-ones exponent. Comparisons with NaN
// may be folded away by fast-math shader compilers (e.g. Metal), bit tests cannot.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

// Mirrors `real::tanh_rational` (the MLP activation and `tanh` in expression targets): an
// odd rational function, ±1 beyond the clamp. The same
// formula on both sides, and no exponential (a builtin tanh may overflow e^{2x} to NaN).
fn tanh_rational(a: f32) -> f32 {
    let x = clamp(a, -7.905311, 7.905311);
    let x2 = x * x;
    var p = -2.7607685e-16;
    p = p * x2 + 2.000188e-13;
    p = p * x2 - 8.604672e-11;
    p = p * x2 + 5.122297e-8;
    p = p * x2 + 1.4857224e-5;
    p = p * x2 + 6.3726193e-4;
    p = p * x2 + 4.8935246e-3;
    var q = 1.1982584e-6;
    q = q * x2 + 1.1853471e-4;
    q = q * x2 + 2.2684346e-3;
    q = q * x2 + 4.893525e-3;
    return x * p / q;
}
