//! The gradient program written as WGSL: one `let` per SSA node, each operation spelled as
//! its Rust lane twin computes it ([`super::program::Num`]): `min`/`max`/`SelectLt` as
//! `select` on the same comparison, `ln1p` as `expr_ln1p` in `shaders/targets.wgsl`, `tanh`
//! as `tanh_rational` in `shaders/common.wgsl`, parameters read with `target_param(k)` from
//! the uniform block so that a parameter change rebuilds nothing.

use super::program::{Op, Ssa};
use std::fmt::Write;

/// A WGSL f32 literal with the bits of `v as f32` (non-finite values by their bits).
fn literal(v: f64) -> String {
    let x = v as f32;
    if x.is_finite() {
        let s = format!("{x:?}");
        let s = if s.contains(['.', 'e']) {
            s
        } else {
            format!("{s}.0")
        };
        format!("f32({s})")
    } else {
        format!("bitcast<f32>({:#010x}u)", x.to_bits())
    }
}

/// `fn expression_gradient(t: vec2<f32>) -> vec2<f32>` computing the two outputs of
/// `gradient`, and `fn expression_energy(t: vec2<f32>) -> f32` computing the one of `energy`
/// (HMC's Metropolis test).
pub fn write(gradient: &Ssa, energy: &Ssa) -> String {
    let mut out = String::from(
        "// Generated from the formula by src/math/expr/wgsl.rs (one line per SSA node).\n",
    );
    write_function(&mut out, gradient, "expression_gradient", "vec2<f32>");
    write_function(&mut out, energy, "expression_energy", "f32");
    out
}

/// One function of `t` returning the outputs of `ssa` as `ty`.
fn write_function(out: &mut String, ssa: &Ssa, name: &str, ty: &str) {
    let _ = writeln!(out, "fn {name}(t: vec2<f32>) -> {ty} {{");
    let v = |i: u32| format!("v{i}");
    for (i, n) in ssa.nodes.iter().enumerate() {
        let [a, b, c, d] = n.args.map(v);
        let e = match n.op {
            Op::Const => literal(n.value),
            Op::Param => format!("target_param({}u)", n.value as u32),
            Op::Theta1 => "t.x".into(),
            Op::Theta2 => "t.y".into(),
            Op::Add => format!("{a} + {b}"),
            Op::Sub => format!("{a} - {b}"),
            Op::Mul => format!("{a} * {b}"),
            Op::Div => format!("{a} / {b}"),
            Op::Neg => format!("-{a}"),
            Op::Exp => format!("exp({a})"),
            Op::Ln => format!("log({a})"),
            Op::Ln1p => format!("expr_ln1p({a})"),
            Op::Sqrt => format!("sqrt({a})"),
            Op::Sin => format!("sin({a})"),
            Op::Cos => format!("cos({a})"),
            Op::Tanh => format!("tanh_rational({a})"),
            Op::Abs => format!("abs({a})"),
            Op::Min => format!("select({b}, {a}, {a} < {b})"),
            Op::Max => format!("select({b}, {a}, {a} > {b})"),
            Op::SelectLt => format!("select({d}, {c}, {a} < {b})"),
            Op::Detach => a,
        };
        let _ = writeln!(out, "    let v{i}: f32 = {e};");
    }
    let outputs: Vec<String> = ssa.outputs.iter().map(|o| format!("v{o}")).collect();
    let _ = writeln!(out, "    return {ty}({});\n}}", outputs.join(", "));
}

/// The stub the built-in targets' shader carries in place of a formula.
pub const STUB: &str = "fn expression_gradient(t: vec2<f32>) -> vec2<f32> {\n    return vec2<f32>(0.0);\n}\n\
                        fn expression_energy(t: vec2<f32>) -> f32 {\n    return 0.0;\n}\n";
