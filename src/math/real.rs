//! Scalars and lanes of scalars behind one interface, so that each sampler formula is
//! written once (`SamplerParams`, ordered by `Model::advance`) and runs either on one chain
//! (`f32`, the reference, with the C library's exp/ln/sin/cos) or on [`Lanes`] of chains at
//! once (branch-free polynomial exp/ln/sin/cos that the compiler turns into SIMD). The two
//! differ only by float rounding, like the CPU and GPU engines.

// Lane loops index several arrays in step: the indexed form is what vectorises.
#![allow(clippy::needless_range_loop)]

use super::rng::{
    RngCounter, Stream, philox4x32_10, uniform_from_bits, uniform_open_closed_from_bits,
};
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// Arithmetic of the samplers: `f32` or lanes of `f32`.
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + Add<f32, Output = Self>
    + Sub<f32, Output = Self>
    + Mul<f32, Output = Self>
    + Div<f32, Output = Self>
{
    /// Number of lanes.
    const LANES: usize;
    /// Every lane set to `v`.
    fn splat(v: f32) -> Self;
    /// Lane `l`.
    fn lane(self, l: usize) -> f32;
    /// A value from its lanes.
    fn from_fn(f: impl FnMut(usize) -> f32) -> Self;
    /// Lane-wise maximum.
    fn max(self, o: Self) -> Self;
    /// Lane-wise minimum.
    fn min(self, o: Self) -> Self;
    /// Lane-wise absolute value.
    fn abs(self) -> Self;
    /// Lane-wise square root.
    fn sqrt(self) -> Self;
    /// Lane-wise e^x.
    fn exp(self) -> Self;
    /// Lane-wise natural logarithm (of positive values).
    fn ln(self) -> Self;
    /// Lane-wise (sin x, cos x).
    fn sin_cos(self) -> (Self, Self);
    /// Lane-wise `if self < bound { a } else { b }`.
    fn select_lt(self, bound: Self, a: Self, b: Self) -> Self;
}

impl Real for f32 {
    const LANES: usize = 1;
    #[inline(always)]
    fn splat(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn lane(self, _: usize) -> f32 {
        self
    }
    #[inline(always)]
    fn from_fn(mut f: impl FnMut(usize) -> f32) -> Self {
        f(0)
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        f32::max(self, o)
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        f32::min(self, o)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        f32::abs(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        f32::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f32::ln(self)
    }
    #[inline(always)]
    fn sin_cos(self) -> (Self, Self) {
        f32::sin_cos(self)
    }
    #[inline(always)]
    fn select_lt(self, bound: Self, a: Self, b: Self) -> Self {
        if self < bound { a } else { b }
    }
}

/// `N` values of `f32` processed together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes<const N: usize>(pub [f32; N]);

impl<const N: usize> Default for Lanes<N> {
    fn default() -> Self {
        Lanes([0.0; N])
    }
}

macro_rules! lane_op {
    ($trait:ident, $method:ident, $op:tt) => {
        impl<const N: usize> $trait for Lanes<N> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, o: Self) -> Self {
                let mut r = self.0;
                for l in 0..N {
                    r[l] = self.0[l] $op o.0[l];
                }
                Lanes(r)
            }
        }
        impl<const N: usize> $trait<f32> for Lanes<N> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, o: f32) -> Self {
                Lanes(self.0.map(|v| v $op o))
            }
        }
    };
}

lane_op!(Add, add, +);
lane_op!(Sub, sub, -);
lane_op!(Mul, mul, *);
lane_op!(Div, div, /);

impl<const N: usize> Neg for Lanes<N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Lanes(self.0.map(|v| -v))
    }
}

impl<const N: usize> AddAssign for Lanes<N> {
    #[inline(always)]
    fn add_assign(&mut self, o: Self) {
        *self = *self + o;
    }
}

impl<const N: usize> SubAssign for Lanes<N> {
    #[inline(always)]
    fn sub_assign(&mut self, o: Self) {
        *self = *self - o;
    }
}

impl<const N: usize> Lanes<N> {
    #[inline(always)]
    fn map(self, f: impl Fn(f32) -> f32) -> Self {
        let mut r = self.0;
        for v in r.iter_mut() {
            *v = f(*v);
        }
        Lanes(r)
    }
}

/// e^x without branches: x = n ln 2 + r, |r| ≤ ln 2 / 2, a degree-6 Taylor polynomial for
/// e^r (error < 2e-7 relative) and 2^n from the exponent bits; ±inf and 0 beyond the range.
#[inline(always)]
fn exp_poly(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let xc = x.clamp(-87.0, 88.0);
    let n = (xc * std::f32::consts::LOG2_E).round();
    let r = xc - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let y = p * scale;
    // Outside [−87, 88] the true value is (nearly) 0 or beyond f32: keep ±inf and NaN visible.
    let y = if x > 88.72 { f32::INFINITY } else { y };
    let y = if x < -87.0 { 0.0 } else { y };
    if x.is_nan() { x } else { y }
}

/// Where [`tanh_rational`] reaches ±1 in f32: it clamps its argument to ±this.
pub const TANH_RATIONAL_CLAMP: f32 = 7.905_311;
/// The numerator of [`tanh_rational`], in x², lowest power first.
pub const TANH_RATIONAL_ALPHA: [f32; 7] = [
    4.893_524_6e-3,
    6.372_619_3e-4,
    1.485_722_4e-5,
    5.122_297e-8,
    -8.604_672e-11,
    2.000_188e-13,
    -2.760_768_5e-16,
];
/// The denominator of [`tanh_rational`], in x², lowest power first.
pub const TANH_RATIONAL_BETA: [f32; 4] =
    [4.893_525e-3, 2.268_434_6e-3, 1.185_347_1e-4, 1.198_258_4e-6];

/// tanh x as an odd rational function p(x)/q(x) (degree 13 over degree 6) on [−c, c],
/// c ≈ 7.905, where it reaches 1 in f32, and ±1 beyond: relative error below 5e-7
/// everywhere (tested against f64), with no exponential and no branch. The library's
/// `f32::tanh` costs a call to `expm1` per activation, most of what the MLP samplers spent.
/// The WGSL twin is generated from the same constants (`engine::shader_interface`), in the
/// same Horner order.
#[inline(always)]
pub fn tanh_rational(x: f32) -> f32 {
    let x = x.clamp(-TANH_RATIONAL_CLAMP, TANH_RATIONAL_CLAMP);
    let x2 = x * x;
    let mut p = TANH_RATIONAL_ALPHA[6];
    for &a in TANH_RATIONAL_ALPHA[..6].iter().rev() {
        p = p * x2 + a;
    }
    let mut q = TANH_RATIONAL_BETA[3];
    for &b in TANH_RATIONAL_BETA[..3].iter().rev() {
        q = q * x2 + b;
    }
    x * p / q
}

/// ln x for x > 0: x = m 2^e with m in [√½, √2), ln m = 2 atanh(s), s = (m − 1)/(m + 1).
#[inline(always)]
fn ln_poly(x: f32) -> f32 {
    let bits = x.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 127;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let big = m > std::f32::consts::SQRT_2;
    let m = if big { 0.5 * m } else { m };
    let e = if big { e + 1 } else { e } as f32;
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let atanh =
        s * (1.0 + s2 * (1.0 / 3.0 + s2 * (1.0 / 5.0 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0)))));
    e * std::f32::consts::LN_2 + 2.0 * atanh
}

/// (sin x, cos x): x = k π/2 + r with |r| ≤ π/4, Taylor polynomials, quadrant by k mod 4.
#[inline(always)]
fn sin_cos_poly(x: f32) -> (f32, f32) {
    // π/2 split in two so that k·π/2 is subtracted without rounding error in the high part.
    const PIO2_HI: f32 = std::f32::consts::FRAC_PI_2;
    const PIO2_LO: f32 = -4.371_139e-8;
    let k = (x * std::f32::consts::FRAC_2_PI).round();
    let r = x - k * PIO2_HI - k * PIO2_LO;
    let r2 = r * r;
    let s = r
        * (1.0
            + r2 * (-1.0 / 6.0
                + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362_880.0)))));
    let c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40_320.0))));
    let q = (k as i32) & 3;
    let (sin, cos) = if q & 1 == 1 { (c, s) } else { (s, c) };
    let sin = if q & 2 == 2 { -sin } else { sin };
    let cos = if (q + 1) & 2 == 2 { -cos } else { cos };
    (sin, cos)
}

impl<const N: usize> Real for Lanes<N> {
    const LANES: usize = N;
    #[inline(always)]
    fn splat(v: f32) -> Self {
        Lanes([v; N])
    }
    #[inline(always)]
    fn lane(self, l: usize) -> f32 {
        self.0[l]
    }
    #[inline(always)]
    fn from_fn(f: impl FnMut(usize) -> f32) -> Self {
        Lanes(std::array::from_fn(f))
    }
    #[inline(always)]
    fn max(self, o: Self) -> Self {
        let mut r = self.0;
        for l in 0..N {
            r[l] = if self.0[l] > o.0[l] {
                self.0[l]
            } else {
                o.0[l]
            };
        }
        Lanes(r)
    }
    #[inline(always)]
    fn min(self, o: Self) -> Self {
        let mut r = self.0;
        for l in 0..N {
            r[l] = if self.0[l] < o.0[l] {
                self.0[l]
            } else {
                o.0[l]
            };
        }
        Lanes(r)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.map(f32::abs)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        self.map(f32::sqrt)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        self.map(exp_poly)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.map(ln_poly)
    }
    #[inline(always)]
    fn sin_cos(self) -> (Self, Self) {
        let mut s = self.0;
        let mut c = self.0;
        for l in 0..N {
            let (a, b) = sin_cos_poly(self.0[l]);
            s[l] = a;
            c[l] = b;
        }
        (Lanes(s), Lanes(c))
    }
    #[inline(always)]
    fn select_lt(self, bound: Self, a: Self, b: Self) -> Self {
        let mut r = b.0;
        for l in 0..N {
            if self.0[l] < bound.0[l] {
                r[l] = a.0[l];
            }
        }
        Lanes(r)
    }
}

/// The random numbers of one step of one chain (`RngCounter`) or of lanes of chains.
pub trait StepRng<R: Real> {
    /// Global step index.
    fn step(&self) -> u32;
    /// The first two normals of a coordinate block of a stream, per lane.
    fn normal2(&self, stream: Stream, block: u32) -> [R; 2];
    /// The counter of lane `l` (scalar fallbacks such as minibatch gathers).
    fn lane(&self, l: usize) -> RngCounter;
    /// Two uniforms in (0, 1] per lane from the first two words of a coordinate block of a
    /// stream (safe inside a logarithm).
    fn uniform2(&self, stream: Stream, block: u32) -> [R; 2];
}

impl StepRng<f32> for RngCounter {
    #[inline(always)]
    fn step(&self) -> u32 {
        self.step
    }
    #[inline(always)]
    fn normal2(&self, stream: Stream, block: u32) -> [f32; 2] {
        RngCounter::normal2(self, stream, block)
    }
    #[inline(always)]
    fn lane(&self, _: usize) -> RngCounter {
        *self
    }
    #[inline(always)]
    fn uniform2(&self, stream: Stream, block: u32) -> [f32; 2] {
        let b = self.bits4(stream, block);
        [
            uniform_open_closed_from_bits(b[0]),
            uniform_open_closed_from_bits(b[1]),
        ]
    }
}

/// Counters of `N` consecutive chains at one step.
#[derive(Clone, Copy, Debug)]
pub struct RngLanes<const N: usize> {
    /// Philox key.
    pub key: [u32; 2],
    /// Chain index of each lane.
    pub chains: [u32; N],
    /// Global step index.
    pub step: u32,
}

impl<const N: usize> StepRng<Lanes<N>> for RngLanes<N> {
    #[inline(always)]
    fn step(&self) -> u32 {
        self.step
    }
    #[inline(always)]
    fn normal2(&self, stream: Stream, block: u32) -> [Lanes<N>; 2] {
        let mut radius = [0.0f32; N];
        let mut angle = [0.0f32; N];
        for l in 0..N {
            let b = philox4x32_10([self.chains[l], self.step, block, stream as u32], self.key);
            radius[l] = uniform_open_closed_from_bits(b[0]);
            angle[l] = std::f32::consts::TAU * uniform_from_bits(b[1]);
        }
        let radius = (Lanes(radius).ln() * -2.0).sqrt();
        let (s, c) = Lanes(angle).sin_cos();
        [radius * c, radius * s]
    }
    #[inline(always)]
    fn lane(&self, l: usize) -> RngCounter {
        RngCounter {
            key: self.key,
            chain: self.chains[l],
            step: self.step,
        }
    }
    #[inline(always)]
    fn uniform2(&self, stream: Stream, block: u32) -> [Lanes<N>; 2] {
        let mut u = [[0.0f32; N]; 2];
        for l in 0..N {
            let b = philox4x32_10([self.chains[l], self.step, block, stream as u32], self.key);
            u[0][l] = uniform_open_closed_from_bits(b[0]);
            u[1][l] = uniform_open_closed_from_bits(b[1]);
        }
        u.map(Lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rational_tanh_is_within_5e7_of_tanh_everywhere() {
        let mut worst = 0.0f64;
        for k in -2_000_000..=2_000_000 {
            let x = k as f32 * 1e-5;
            let exact = f64::from(x).tanh();
            let got = f64::from(tanh_rational(x));
            worst = worst.max((got - exact).abs() / exact.abs().max(1e-30));
        }
        assert!(worst < 5e-7, "worst relative error {worst:e}");
        for x in [30.0f32, 1e30, f32::INFINITY] {
            assert_eq!(tanh_rational(x), 1.0);
            assert_eq!(tanh_rational(-x), -1.0);
        }
        assert_eq!(tanh_rational(0.0), 0.0);
        assert!(tanh_rational(f32::NAN).is_nan());
    }

    #[test]
    fn polynomial_functions_match_the_c_library() {
        let mut worst = [0.0f64; 4];
        for i in 0..200_000 {
            let x = -30.0 + 60.0 * i as f32 / 200_000.0;
            let e = f64::from(exp_poly(x));
            let want = f64::from(x).exp();
            worst[0] = worst[0].max(((e - want) / want).abs());
            let u = (i as f32 + 1.0) / 200_000.0;
            let l = f64::from(ln_poly(u));
            let want = f64::from(u).ln();
            // About one f32 ulp of the result (the input itself is exact).
            worst[1] = worst[1].max((l - want).abs() / want.abs().max(1.0));
            let a = std::f32::consts::TAU * i as f32 / 200_000.0;
            let (s, c) = sin_cos_poly(a);
            worst[2] = worst[2].max((f64::from(s) - f64::from(a).sin()).abs());
            worst[3] = worst[3].max((f64::from(c) - f64::from(a).cos()).abs());
        }
        assert!(worst[0] < 5e-7, "exp {}", worst[0]);
        assert!(worst[1] < 2e-7, "ln {}", worst[1]);
        assert!(worst[2] < 5e-7 && worst[3] < 5e-7, "sin/cos {worst:?}");
        assert_eq!(exp_poly(100.0), f32::INFINITY);
        assert_eq!(exp_poly(-100.0), 0.0);
        assert!(exp_poly(f32::NAN).is_nan());
        assert_eq!(exp_poly(f32::INFINITY), f32::INFINITY);
        assert!((ln_poly(1.0 / 16_777_216.0) + 16.635_532).abs() < 1e-4);
    }

    #[test]
    fn lanes_draw_the_same_normals_as_single_chains() {
        let key = [7, 9];
        let rng = RngLanes::<8> {
            key,
            chains: std::array::from_fn(|l| 100 + l as u32),
            step: 33,
        };
        let z = rng.normal2(Stream::Injected, 0);
        for l in 0..8 {
            let s = RngCounter {
                key,
                chain: 100 + l as u32,
                step: 33,
            }
            .normal2(Stream::Injected, 0);
            assert!((z[0].0[l] - s[0]).abs() < 2e-6 && (z[1].0[l] - s[1]).abs() < 2e-6);
        }
    }
}
