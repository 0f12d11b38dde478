//! Expression targets (issue #25, docs/MATH.md §9): an energy U(θ₁, θ₂) typed as a formula
//! with named parameters, compiled once into a flat program with its exact gradient.
//!
//! The one compiled program has two outputs: the CPU engine runs it over SIMD lanes
//! ([`Formula::gradient`], registers on the stack) and [`Formula::wgsl`] writes the same SSA
//! nodes as a WGSL function for the GPU engine, so every WGSL line has its Rust twin by
//! construction. Truth on grids runs the energy in f64 ([`Formula::energy`]).
//!
//! What a formula panel calls: [`Formula::compile`] (an [`ExprError`] names the character
//! where the problem is), then [`ExprTarget::new`] (the truth checks: normalisable, finite in
//! the box); a parameter is changed by building again with new values, which reuses the
//! compiled program (see [`ExprTarget::with_parameters`]) and recompiles nothing on the GPU.

pub mod parse;
pub mod program;
pub mod truth;
pub mod wgsl;

pub use truth::ExprTarget;

use program::{Builder, Flat, Ssa};
use std::fmt;

/// Longest formula, in bytes.
pub const MAX_FORMULA_BYTES: usize = 10_000;
/// Deepest nesting of parentheses, function calls, signs and exponents.
pub const MAX_NESTING: usize = 64;
/// Most parameters of a formula: they travel to the GPU in the 8 target constants of
/// `GpuChain2Params` (`TARGET_PARAMS`).
pub const MAX_PARAMETERS: usize = crate::math::targets::TARGET_PARAMS;
/// Most nodes of the compiled energy and gradient together.
pub const MAX_NODES: usize = 50_000;

/// A problem with a formula, at a character of its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// Byte offset of the problem in the formula.
    pub byte: usize,
    /// Character index (0-based) of the problem: what a text field's cursor counts.
    pub char: usize,
    /// What is wrong.
    pub message: String,
    /// The name, when the problem is a symbol the formula does not know (a UI offers to
    /// make it a parameter).
    pub unknown_symbol: Option<String>,
}

impl ExprError {
    /// An error at byte `byte` of `text`.
    pub fn at(text: &str, byte: usize, message: String) -> Self {
        Self {
            byte,
            char: Self::char_index(text, byte),
            message,
            unknown_symbol: None,
        }
    }

    /// The character index of byte offset `byte`.
    pub fn char_index(text: &str, byte: usize) -> usize {
        let byte = byte.min(text.len());
        text.char_indices().take_while(|&(i, _)| i < byte).count()
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.char + 1, self.message)
    }
}

impl std::error::Error for ExprError {}

/// A compiled formula: U and ∇U as straight-line programs.
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    /// The text it was compiled from.
    pub text: String,
    /// The parameter names, in the order their values are passed.
    pub parameters: Vec<String>,
    /// U, ∂U/∂θ₁, ∂U/∂θ₂ (outputs in that order), for truth and tests.
    pub full: Ssa,
    /// U alone (f64 grids).
    pub energy: Ssa,
    /// ∂U/∂θ₁ and ∂U/∂θ₂ (the engines' program; the WGSL is written from it).
    pub gradient: Ssa,
    /// [`Self::gradient`] with registers allocated (the CPU engine's form).
    pub flat: Flat,
    /// [`Self::full`] with registers allocated (truth on grids).
    pub full_flat: Flat,
    /// [`Self::energy`] with registers allocated.
    pub energy_flat: Flat,
    /// [`Self::gradient`] written as WGSL (see [`Self::wgsl`]).
    wgsl: String,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `flat` in f64 on a per-thread register file and returns output `k`.
fn run_f64<const K: usize>(flat: &Flat, theta: [f64; 2], params: &[f64]) -> [f64; K] {
    SCRATCH.with(|s| {
        let mut regs = s.borrow_mut();
        if regs.len() < flat.registers {
            regs.resize(flat.registers, 0.0);
        }
        flat.run(&mut regs, theta, params);
        std::array::from_fn(|k| regs[flat.outputs[k] as usize])
    })
}

/// The range of a parameter's slider: the preset's (`given`), else around the value (a
/// quarter to four times it, keeping its sign; −1 to 1 around 0); widened to hold the value.
pub fn slider_range(value: f64, given: Option<&[f64; 2]>) -> [f64; 2] {
    let [lo, hi] = match given {
        Some(r) => *r,
        None if value > 0.0 => [value / 4.0, value * 4.0],
        None if value < 0.0 => [value * 4.0, value / 4.0],
        None => [-1.0, 1.0],
    };
    [lo.min(value), hi.max(value)]
}

/// Checks a parameter name: an identifier, not a name the language takes.
pub fn check_parameter_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "parameter '{name}' is not a name: use letters, digits and '_', starting with a letter"
        ));
    }
    if parse::FUNCTIONS.iter().any(|(f, _)| *f == name) {
        return Err(format!(
            "parameter '{name}' is named like a function: choose another name"
        ));
    }
    if parse::is_reserved(name) {
        return Err(format!(
            "parameter '{name}' is named like a variable or constant of the language: choose \
             another name"
        ));
    }
    Ok(())
}

impl Formula {
    /// Parses and compiles `text` with the parameters `parameters` (names, in the order the
    /// values will be passed). Errors name a character of `text`; a bad parameter name is
    /// reported at character 1.
    pub fn compile(text: &str, parameters: &[String]) -> Result<Formula, ExprError> {
        if parameters.len() > MAX_PARAMETERS {
            return Err(ExprError::at(
                text,
                0,
                format!(
                    "{} parameters: at most {MAX_PARAMETERS} (the GPU's target constants)",
                    parameters.len()
                ),
            ));
        }
        for name in parameters {
            check_parameter_name(name).map_err(|m| ExprError::at(text, 0, m))?;
        }
        let (mut builder, root): (Builder, u32) = parse::Parser::parse(text, parameters)?;
        if builder.nodes.len() > MAX_NODES / 4 {
            return Err(ExprError::at(
                text,
                0,
                format!(
                    "the formula compiles to {} operations: at most {}",
                    builder.nodes.len(),
                    MAX_NODES / 4
                ),
            ));
        }
        let grad = builder.gradient(root);
        if builder.nodes.len() > MAX_NODES {
            return Err(ExprError::at(
                text,
                0,
                format!(
                    "the formula and its gradient need {} operations: at most {MAX_NODES}",
                    builder.nodes.len()
                ),
            ));
        }
        let full = builder.extract(&[root, grad[0], grad[1]]);
        let energy = builder.extract(&[root]);
        let gradient = builder.extract(&grad);
        let flat = gradient.flatten();
        let full_flat = full.flatten();
        let energy_flat = energy.flatten();
        let wgsl = wgsl::write(&gradient, &energy);
        Ok(Formula {
            wgsl,
            full_flat,
            energy_flat,
            text: text.to_owned(),
            parameters: parameters.to_vec(),
            full,
            energy,
            gradient,
            flat,
        })
    }

    /// U(θ) in f64.
    pub fn energy(&self, theta: [f64; 2], params: &[f64]) -> f64 {
        run_f64::<1>(&self.energy_flat, theta, params)[0]
    }

    /// (U, ∂U/∂θ₁, ∂U/∂θ₂) in f64.
    pub fn energy_and_gradient(&self, theta: [f64; 2], params: &[f64]) -> [f64; 3] {
        run_f64::<3>(&self.full_flat, theta, params)
    }

    /// ∇U(θ) in the engines' arithmetic, for one chain or lanes of chains.
    #[inline(always)]
    pub fn gradient<R: crate::math::Real>(&self, theta: [R; 2], params: &[f32]) -> [R; 2] {
        let mut p = [R::splat(0.0); MAX_PARAMETERS];
        for (slot, v) in p.iter_mut().zip(params) {
            *slot = R::splat(*v);
        }
        self.flat.eval2(theta, &p)
    }

    /// The gradient as a WGSL function `expression_gradient(t: vec2<f32>) -> vec2<f32>`.
    pub fn wgsl(&self) -> &str {
        &self.wgsl
    }
}

#[cfg(test)]
mod tests;
