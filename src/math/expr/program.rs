//! The compiled form of a formula: an SSA graph of primitive operations built with constant
//! folding and common-subexpression elimination, its exact gradient by reverse mode written
//! into the same graph (source transformation: the adjoints are new nodes, so the gradient is
//! again a straight-line program), and the flat register program the CPU engine runs over
//! lanes of chains. `super::wgsl` writes the same SSA nodes out as WGSL.

// Lane loops index several arrays in step.
#![allow(clippy::needless_range_loop)]

use crate::math::real::{Real, tanh_rational};
use std::collections::HashMap;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A primitive operation. Every other function of the language is lowered to these (see
/// `Builder`), so each has one Rust lane implementation ([`Num`]) and one WGSL spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A literal (`Node::value`).
    Const,
    /// Formula parameter number `Node::value`.
    Param,
    /// θ₁.
    Theta1,
    /// θ₂.
    Theta2,
    /// a + b.
    Add,
    /// a − b.
    Sub,
    /// a · b.
    Mul,
    /// a / b.
    Div,
    /// −a.
    Neg,
    /// eᵃ.
    Exp,
    /// ln a.
    Ln,
    /// ln(1 + a), accurate near 0.
    Ln1p,
    /// √a.
    Sqrt,
    /// sin a.
    Sin,
    /// cos a.
    Cos,
    /// tanh a (the rational approximation of `real::tanh_rational`).
    Tanh,
    /// |a|.
    Abs,
    /// `if a < b { a } else { b }`.
    Min,
    /// `if a > b { a } else { b }`.
    Max,
    /// `if a < b { c } else { d }`.
    SelectLt,
    /// a, with no derivative (the shift of a log-sum-exp; removed before evaluation).
    Detach,
}

impl Op {
    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Op::Const | Op::Param | Op::Theta1 | Op::Theta2 => 0,
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Min | Op::Max => 2,
            Op::SelectLt => 4,
            _ => 1,
        }
    }
}

/// One node of the SSA graph: an operation on earlier nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    /// The operation.
    pub op: Op,
    /// Indices of its arguments (earlier nodes); unused ones are 0.
    pub args: [u32; 4],
    /// The literal of a `Const`, the index of a `Param`.
    pub value: f64,
}

/// The arithmetic an SSA program runs on: `f64` (truth on grids, constant folding) and every
/// [`Real`] (`f32` and lanes of `f32`, the engines' arithmetic).
pub trait Num:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A constant.
    fn cst(v: f64) -> Self;
    /// eˣ.
    fn exp_(self) -> Self;
    /// ln x.
    fn ln_(self) -> Self;
    /// ln(1 + x).
    fn ln1p_(self) -> Self;
    /// √x.
    fn sqrt_(self) -> Self;
    /// sin x.
    fn sin_(self) -> Self;
    /// cos x.
    fn cos_(self) -> Self;
    /// tanh x.
    fn tanh_(self) -> Self;
    /// |x|.
    fn abs_(self) -> Self;
    /// `if self < o { self } else { o }`.
    fn min_(self, o: Self) -> Self;
    /// `if self > o { self } else { o }`.
    fn max_(self, o: Self) -> Self;
    /// `if self < bound { a } else { b }`.
    fn select_lt_(self, bound: Self, a: Self, b: Self) -> Self;
}

impl Num for f64 {
    fn cst(v: f64) -> Self {
        v
    }
    fn exp_(self) -> Self {
        self.exp()
    }
    fn ln_(self) -> Self {
        self.ln()
    }
    fn ln1p_(self) -> Self {
        self.ln_1p()
    }
    fn sqrt_(self) -> Self {
        self.sqrt()
    }
    fn sin_(self) -> Self {
        self.sin()
    }
    fn cos_(self) -> Self {
        self.cos()
    }
    fn tanh_(self) -> Self {
        self.tanh()
    }
    fn abs_(self) -> Self {
        self.abs()
    }
    fn min_(self, o: Self) -> Self {
        if self < o { self } else { o }
    }
    fn max_(self, o: Self) -> Self {
        if self > o { self } else { o }
    }
    fn select_lt_(self, bound: Self, a: Self, b: Self) -> Self {
        if self < bound { a } else { b }
    }
}

impl<R: Real> Num for R {
    #[inline(always)]
    fn cst(v: f64) -> Self {
        R::splat(v as f32)
    }
    #[inline(always)]
    fn exp_(self) -> Self {
        self.exp()
    }
    #[inline(always)]
    fn ln_(self) -> Self {
        self.ln()
    }
    /// ln(1 + x) = ln(u) · x / (u − 1) with u = 1 + x rounded (Goldberg's trick: the rounding
    /// of u cancels), x itself where u rounds to 1. Mirrored by `expr_ln1p` in the WGSL.
    #[inline(always)]
    fn ln1p_(self) -> Self {
        let u = self + 1.0;
        let d = u - 1.0;
        let r = u.ln() * (self / d);
        d.abs().select_lt(R::splat(f32::MIN_POSITIVE), self, r)
    }
    #[inline(always)]
    fn sqrt_(self) -> Self {
        self.sqrt()
    }
    #[inline(always)]
    fn sin_(self) -> Self {
        self.sin_cos().0
    }
    #[inline(always)]
    fn cos_(self) -> Self {
        self.sin_cos().1
    }
    #[inline(always)]
    fn tanh_(self) -> Self {
        R::from_fn(|l| tanh_rational(self.lane(l)))
    }
    #[inline(always)]
    fn abs_(self) -> Self {
        self.abs()
    }
    #[inline(always)]
    fn min_(self, o: Self) -> Self {
        self.min(o)
    }
    #[inline(always)]
    fn max_(self, o: Self) -> Self {
        self.max(o)
    }
    #[inline(always)]
    fn select_lt_(self, bound: Self, a: Self, b: Self) -> Self {
        self.select_lt(bound, a, b)
    }
}

/// Applies a computing operation (not `Const`, `Param`, `Theta*`) to its arguments.
#[inline(always)]
pub fn apply<N: Num>(op: Op, a: N, b: N, c: N, d: N) -> N {
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
        Op::Neg => -a,
        Op::Exp => a.exp_(),
        Op::Ln => a.ln_(),
        Op::Ln1p => a.ln1p_(),
        Op::Sqrt => a.sqrt_(),
        Op::Sin => a.sin_(),
        Op::Cos => a.cos_(),
        Op::Tanh => a.tanh_(),
        Op::Abs => a.abs_(),
        Op::Min => a.min_(b),
        Op::Max => a.max_(b),
        Op::SelectLt => a.select_lt_(b, c, d),
        Op::Detach => a,
        Op::Const | Op::Param | Op::Theta1 | Op::Theta2 => {
            unreachable!("leaves are loaded, not applied")
        }
    }
}

/// Builds the SSA graph: folds constants, reuses equal nodes.
#[derive(Default)]
pub struct Builder {
    /// The nodes, each after its arguments.
    pub nodes: Vec<Node>,
    seen: HashMap<(Op, [u32; 4], u64), u32>,
}

impl Builder {
    fn push(&mut self, op: Op, args: [u32; 4], value: f64) -> u32 {
        let key = (op, args, value.to_bits());
        if let Some(&id) = self.seen.get(&key) {
            return id;
        }
        let id = self.nodes.len() as u32;
        self.nodes.push(Node { op, args, value });
        self.seen.insert(key, id);
        id
    }

    fn constant_of(&self, id: u32) -> Option<f64> {
        let n = self.nodes[id as usize];
        (n.op == Op::Const).then_some(n.value)
    }

    /// A literal.
    pub fn constant(&mut self, v: f64) -> u32 {
        self.push(Op::Const, [0; 4], v)
    }

    /// Parameter number `k`.
    pub fn param(&mut self, k: usize) -> u32 {
        self.push(Op::Param, [0; 4], k as f64)
    }

    /// θ₁ (`c` = 0) or θ₂ (`c` = 1).
    pub fn theta(&mut self, c: usize) -> u32 {
        self.push(if c == 0 { Op::Theta1 } else { Op::Theta2 }, [0; 4], 0.0)
    }

    /// A primitive operation, folded when every argument is a literal and simplified where
    /// the result is exactly an argument (x + 0, x · 1, x / 1, −(−x)).
    pub fn op(&mut self, op: Op, args: &[u32]) -> u32 {
        debug_assert_eq!(args.len(), op.arity());
        let mut a = [0u32; 4];
        a[..args.len()].copy_from_slice(args);
        let consts: Vec<Option<f64>> = args.iter().map(|&x| self.constant_of(x)).collect();
        if op != Op::Detach && consts.iter().all(Option::is_some) {
            let v = |i: usize| consts.get(i).copied().flatten().unwrap_or(0.0);
            return self.constant(apply(op, v(0), v(1), v(2), v(3)));
        }
        let is = |i: usize, c: f64| consts[i] == Some(c);
        match op {
            Op::Add if is(1, 0.0) => return a[0],
            Op::Add if is(0, 0.0) => return a[1],
            Op::Sub if is(1, 0.0) => return a[0],
            Op::Sub if is(0, 0.0) => return self.op(Op::Neg, &[a[1]]),
            Op::Mul if is(1, 1.0) => return a[0],
            Op::Mul if is(0, 1.0) => return a[1],
            Op::Mul if is(1, -1.0) => return self.op(Op::Neg, &[a[0]]),
            Op::Mul if is(0, -1.0) => return self.op(Op::Neg, &[a[1]]),
            Op::Div if is(1, 1.0) => return a[0],
            Op::Neg if self.nodes[a[0] as usize].op == Op::Neg => {
                return self.nodes[a[0] as usize].args[0];
            }
            _ => {}
        }
        self.push(op, a, 0.0)
    }

    /// a + b.
    pub fn add(&mut self, a: u32, b: u32) -> u32 {
        self.op(Op::Add, &[a, b])
    }
    /// a − b.
    pub fn sub(&mut self, a: u32, b: u32) -> u32 {
        self.op(Op::Sub, &[a, b])
    }
    /// a · b.
    pub fn mul(&mut self, a: u32, b: u32) -> u32 {
        self.op(Op::Mul, &[a, b])
    }
    /// a / b.
    pub fn div(&mut self, a: u32, b: u32) -> u32 {
        self.op(Op::Div, &[a, b])
    }
    /// −a.
    pub fn neg(&mut self, a: u32) -> u32 {
        self.op(Op::Neg, &[a])
    }
    /// A one-argument operation.
    pub fn unary(&mut self, op: Op, a: u32) -> u32 {
        self.op(op, &[a])
    }
    /// `if p < q { x } else { y }`.
    pub fn select_lt(&mut self, p: u32, q: u32, x: u32, y: u32) -> u32 {
        self.op(Op::SelectLt, &[p, q, x, y])
    }

    /// aᵇ: a whole exponent of magnitude ≤ 64 by repeated squaring (a negative one as its
    /// reciprocal), so that it holds for negative a; any other exponent as exp(b ln a),
    /// defined for a > 0 only (NaN elsewhere, which the truth check refuses).
    pub fn pow(&mut self, a: u32, b: u32) -> u32 {
        if let Some(e) = self.constant_of(b)
            && e.fract() == 0.0
            && e.abs() <= 64.0
        {
            let mut n = e.abs() as u32;
            let mut result: Option<u32> = None;
            let mut base = a;
            while n > 0 {
                if n & 1 == 1 {
                    result = Some(match result {
                        Some(r) => self.mul(r, base),
                        None => base,
                    });
                }
                n >>= 1;
                if n > 0 {
                    base = self.mul(base, base);
                }
            }
            let one = self.constant(1.0);
            let r = result.unwrap_or(one);
            return if e < 0.0 { self.div(one, r) } else { r };
        }
        if let Some(e) = self.constant_of(b)
            && e == 0.5
        {
            return self.unary(Op::Sqrt, a);
        }
        let l = self.unary(Op::Ln, a);
        let p = self.mul(b, l);
        self.unary(Op::Exp, p)
    }

    /// sinh a = (eᵃ − e⁻ᵃ)/2.
    pub fn sinh(&mut self, a: u32) -> u32 {
        self.exp_pair(a, Op::Sub)
    }

    /// cosh a = (eᵃ + e⁻ᵃ)/2.
    pub fn cosh(&mut self, a: u32) -> u32 {
        self.exp_pair(a, Op::Add)
    }

    fn exp_pair(&mut self, a: u32, op: Op) -> u32 {
        let e = self.unary(Op::Exp, a);
        let m = self.neg(a);
        let f = self.unary(Op::Exp, m);
        let s = self.op(op, &[e, f]);
        let half = self.constant(0.5);
        self.mul(s, half)
    }

    /// min or max of one or more arguments, folded left.
    pub fn fold(&mut self, op: Op, args: &[u32]) -> u32 {
        let mut acc = args[0];
        for &x in &args[1..] {
            acc = self.op(op, &[acc, x]);
        }
        acc
    }

    /// log Σ eᵃⁱ = m + log Σ e^(aᵢ − m) with m = maxᵢ aᵢ held constant for the derivative
    /// (it cancels): no overflow, and the gradient is exactly the softmax weights.
    pub fn logsumexp(&mut self, args: &[u32]) -> u32 {
        if args.len() == 1 {
            return args[0];
        }
        let m = self.fold(Op::Max, args);
        let m = self.op(Op::Detach, &[m]);
        let mut sum: Option<u32> = None;
        for &x in args {
            let d = self.sub(x, m);
            let e = self.unary(Op::Exp, d);
            sum = Some(match sum {
                Some(s) => self.add(s, e),
                None => e,
            });
        }
        let l = self.unary(Op::Ln, sum.expect("at least two arguments"));
        self.add(m, l)
    }

    /// Reverse-mode derivative of node `out` with respect to θ₁ and θ₂, written as new nodes:
    /// each node's adjoint is the sum of its uses' contributions, visited from `out` down.
    /// Subgradients: |a|′ = sign a (0 at 0); min and max send the whole adjoint to the
    /// argument they return (the second one at a tie); `SelectLt` to the branch it takes.
    pub fn gradient(&mut self, out: u32) -> [u32; 2] {
        let n = out as usize + 1;
        let mut adj: Vec<Option<u32>> = vec![None; n];
        adj[out as usize] = Some(self.constant(1.0));
        let mut grad = [None, None];
        let zero = self.constant(0.0);
        for i in (0..n).rev() {
            let Some(g) = adj[i] else { continue };
            let node = self.nodes[i];
            let [a, b, c, d] = node.args;
            let me = i as u32;
            let mut acc = |s: &mut Self, j: u32, v: u32| {
                adj[j as usize] = Some(match adj[j as usize] {
                    Some(old) => s.add(old, v),
                    None => v,
                });
            };
            match node.op {
                Op::Const | Op::Param | Op::Detach => {}
                Op::Theta1 => grad[0] = Some(g),
                Op::Theta2 => grad[1] = Some(g),
                Op::Add => {
                    acc(self, a, g);
                    acc(self, b, g);
                }
                Op::Sub => {
                    acc(self, a, g);
                    let v = self.neg(g);
                    acc(self, b, v);
                }
                Op::Mul => {
                    let va = self.mul(g, b);
                    acc(self, a, va);
                    let vb = self.mul(g, a);
                    acc(self, b, vb);
                }
                Op::Div => {
                    let va = self.div(g, b);
                    acc(self, a, va);
                    // ∂(a/b)/∂b = −(a/b)/b
                    let q = self.mul(g, me);
                    let q = self.div(q, b);
                    let vb = self.neg(q);
                    acc(self, b, vb);
                }
                Op::Neg => {
                    let v = self.neg(g);
                    acc(self, a, v);
                }
                Op::Exp => {
                    let v = self.mul(g, me);
                    acc(self, a, v);
                }
                Op::Ln => {
                    let v = self.div(g, a);
                    acc(self, a, v);
                }
                Op::Ln1p => {
                    let one = self.constant(1.0);
                    let u = self.add(a, one);
                    let v = self.div(g, u);
                    acc(self, a, v);
                }
                Op::Sqrt => {
                    let half = self.constant(0.5);
                    let h = self.mul(g, half);
                    let v = self.div(h, me);
                    acc(self, a, v);
                }
                Op::Sin => {
                    let cos = self.unary(Op::Cos, a);
                    let v = self.mul(g, cos);
                    acc(self, a, v);
                }
                Op::Cos => {
                    let sin = self.unary(Op::Sin, a);
                    let s = self.mul(g, sin);
                    let v = self.neg(s);
                    acc(self, a, v);
                }
                Op::Tanh => {
                    let one = self.constant(1.0);
                    let sq = self.mul(me, me);
                    let d = self.sub(one, sq);
                    let v = self.mul(g, d);
                    acc(self, a, v);
                }
                Op::Abs => {
                    let ng = self.neg(g);
                    let pos = self.select_lt(zero, a, g, zero);
                    let v = self.select_lt(a, zero, ng, pos);
                    acc(self, a, v);
                }
                Op::Min => {
                    let va = self.select_lt(a, b, g, zero);
                    acc(self, a, va);
                    let vb = self.select_lt(a, b, zero, g);
                    acc(self, b, vb);
                }
                Op::Max => {
                    let va = self.select_lt(b, a, g, zero);
                    acc(self, a, va);
                    let vb = self.select_lt(b, a, zero, g);
                    acc(self, b, vb);
                }
                Op::SelectLt => {
                    let vc = self.select_lt(a, b, g, zero);
                    acc(self, c, vc);
                    let vd = self.select_lt(a, b, zero, g);
                    acc(self, d, vd);
                }
            }
        }
        grad.map(|g| g.unwrap_or(zero))
    }

    /// The nodes that `outputs` need, renumbered in order, with `Detach` nodes replaced by
    /// their argument: the program to evaluate.
    pub fn extract(&self, outputs: &[u32]) -> Ssa {
        let mut alias: Vec<u32> = (0..self.nodes.len() as u32).collect();
        for (i, n) in self.nodes.iter().enumerate() {
            if n.op == Op::Detach {
                alias[i] = alias[n.args[0] as usize];
            }
        }
        let mut live = vec![false; self.nodes.len()];
        for &o in outputs {
            live[alias[o as usize] as usize] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                let n = &self.nodes[i];
                for &arg in &n.args[..n.op.arity()] {
                    live[alias[arg as usize] as usize] = true;
                }
            }
        }
        let mut index = vec![u32::MAX; self.nodes.len()];
        let mut nodes = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !live[i] || n.op == Op::Detach {
                continue;
            }
            let mut n = *n;
            for k in 0..n.op.arity() {
                n.args[k] = index[alias[n.args[k] as usize] as usize];
            }
            index[i] = nodes.len() as u32;
            nodes.push(n);
        }
        Ssa {
            outputs: outputs
                .iter()
                .map(|&o| index[alias[o as usize] as usize])
                .collect(),
            nodes,
        }
    }
}

/// A straight-line program in SSA form: each node computed once, from earlier nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Ssa {
    /// The nodes in order.
    pub nodes: Vec<Node>,
    /// The nodes that are its results.
    pub outputs: Vec<u32>,
}

/// One instruction of a [`Flat`] program: `regs[dst] = op(regs[args…])`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instr {
    /// The operation.
    pub op: Op,
    /// The register written.
    pub dst: u16,
    /// The registers read.
    pub args: [u16; 4],
    /// The literal of a `Const`, the parameter index of a `Param`.
    pub value: f64,
}

/// An [`Ssa`] program with registers reused once a value is dead: the CPU engine's form,
/// run over lanes of chains with a register file on the stack.
#[derive(Clone, Debug, PartialEq)]
pub struct Flat {
    /// The instructions in order.
    pub instrs: Vec<Instr>,
    /// Registers used.
    pub registers: usize,
    /// The registers holding the results after a run.
    pub outputs: Vec<u16>,
}

impl Ssa {
    /// Assigns registers by a linear scan: a value's register is freed after its last use.
    pub fn flatten(&self) -> Flat {
        let n = self.nodes.len();
        let mut last_use = vec![0usize; n];
        for (i, node) in self.nodes.iter().enumerate() {
            last_use[i] = i;
            for &a in &node.args[..node.op.arity()] {
                last_use[a as usize] = i;
            }
        }
        for &o in &self.outputs {
            last_use[o as usize] = usize::MAX;
        }
        let mut reg = vec![0u16; n];
        let mut free: Vec<u16> = Vec::new();
        let mut registers = 0usize;
        let mut instrs = Vec::with_capacity(n);
        for (i, node) in self.nodes.iter().enumerate() {
            let mut args = [0u16; 4];
            for k in 0..node.op.arity() {
                args[k] = reg[node.args[k] as usize];
            }
            // Free the arguments that die here before choosing the destination: an
            // instruction reads all its arguments before it writes.
            for k in 0..node.op.arity() {
                let a = node.args[k] as usize;
                if last_use[a] == i && !node.args[..k].contains(&node.args[k]) {
                    free.push(reg[a]);
                }
            }
            let dst = free.pop().unwrap_or_else(|| {
                registers += 1;
                (registers - 1) as u16
            });
            reg[i] = dst;
            if last_use[i] == i {
                // Never read (cannot happen after `extract`, kept for safety).
                free.push(dst);
            }
            instrs.push(Instr {
                op: node.op,
                dst,
                args,
                value: node.value,
            });
        }
        Flat {
            instrs,
            registers: registers.max(1),
            outputs: self.outputs.iter().map(|&o| reg[o as usize]).collect(),
        }
    }

    /// Evaluates in f64 (truth on grids): the results, in the order of `outputs`.
    pub fn eval_f64(&self, theta: [f64; 2], params: &[f64], scratch: &mut Vec<f64>) -> Vec<f64> {
        scratch.clear();
        for node in &self.nodes {
            let v = |k: usize| scratch[node.args[k] as usize];
            let x = match node.op {
                Op::Const => node.value,
                Op::Param => params[node.value as usize],
                Op::Theta1 => theta[0],
                Op::Theta2 => theta[1],
                op => {
                    let ar = op.arity();
                    let get = |k: usize| if k < ar { v(k) } else { 0.0 };
                    apply(op, get(0), get(1), get(2), get(3))
                }
            };
            scratch.push(x);
        }
        self.outputs.iter().map(|&o| scratch[o as usize]).collect()
    }
}

impl Flat {
    /// Runs the program on `regs` (at least [`Self::registers`] long).
    #[inline(always)]
    pub fn run<N: Num>(&self, regs: &mut [N], theta: [N; 2], params: &[N]) {
        for ins in &self.instrs {
            let [a, b, c, d] = ins.args;
            let x = match ins.op {
                Op::Const => N::cst(ins.value),
                Op::Param => params[ins.value as usize],
                Op::Theta1 => theta[0],
                Op::Theta2 => theta[1],
                Op::Add => regs[a as usize] + regs[b as usize],
                Op::Sub => regs[a as usize] - regs[b as usize],
                Op::Mul => regs[a as usize] * regs[b as usize],
                Op::Div => regs[a as usize] / regs[b as usize],
                Op::Neg => -regs[a as usize],
                Op::SelectLt => regs[a as usize].select_lt_(
                    regs[b as usize],
                    regs[c as usize],
                    regs[d as usize],
                ),
                op => apply(
                    op,
                    regs[a as usize],
                    regs[b as usize],
                    regs[a as usize],
                    regs[a as usize],
                ),
            };
            regs[ins.dst as usize] = x;
        }
    }

    /// The two results of a gradient program for lanes of chains, with a register file of
    /// `CAP` registers on the stack.
    #[inline(always)]
    fn run2<R: Real, const CAP: usize>(&self, theta: [R; 2], params: &[R]) -> [R; 2] {
        let mut regs = [R::splat(0.0); CAP];
        self.run(&mut regs, theta, params);
        [
            regs[self.outputs[0] as usize],
            regs[self.outputs[1] as usize],
        ]
    }

    /// The two results (∂U/∂θ₁, ∂U/∂θ₂ for the gradient program) at θ, over lanes.
    #[inline(always)]
    pub fn eval2<R: Real>(&self, theta: [R; 2], params: &[R]) -> [R; 2] {
        match self.registers {
            0..=16 => self.run2::<R, 16>(theta, params),
            17..=64 => self.run2::<R, 64>(theta, params),
            65..=256 => self.run2::<R, 256>(theta, params),
            _ => {
                let mut regs = vec![R::splat(0.0); self.registers];
                self.run(&mut regs, theta, params);
                [
                    regs[self.outputs[0] as usize],
                    regs[self.outputs[1] as usize],
                ]
            }
        }
    }
}
