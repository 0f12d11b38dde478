//! Special functions of the normal distribution, accurate to near machine precision: exact
//! cell probabilities of targets and rank normalisation in the diagnostics both rely on them.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

// ---------------------------------------------------------------------------
// Error function (W. J. Cody, "Rational Chebyshev approximations for the error
// function", Math. Comp. 23 (1969), as in the Netlib routine CALERF).
// ---------------------------------------------------------------------------

// The coefficients are quoted verbatim from CALERF so that they can be checked
// against the published tables; the extra digits are harmless.
#[allow(clippy::excessive_precision)]
const CODY_A: [f64; 5] = [
    3.16112374387056560e00,
    1.13864154151050156e02,
    3.77485237685302021e02,
    3.20937758913846947e03,
    1.85777706184603153e-1,
];
#[allow(clippy::excessive_precision)]
const CODY_B: [f64; 4] = [
    2.36012909523441209e01,
    2.44024637934444173e02,
    1.28261652607737228e03,
    2.84423683343917062e03,
];
#[allow(clippy::excessive_precision)]
const CODY_C: [f64; 9] = [
    5.64188496988670089e-1,
    8.88314979438837594e00,
    6.61191906371416295e01,
    2.98635138197400131e02,
    8.81952221241769090e02,
    1.71204761263407058e03,
    2.05107837782607147e03,
    1.23033935479799725e03,
    2.15311535474403846e-8,
];
#[allow(clippy::excessive_precision)]
const CODY_D: [f64; 8] = [
    1.57449261107098347e01,
    1.17693950891312499e02,
    5.37181101862009858e02,
    1.62138957456669019e03,
    3.29079923573345963e03,
    4.36261909014324716e03,
    3.43936767414372164e03,
    1.23033935480374942e03,
];
#[allow(clippy::excessive_precision)]
const CODY_P: [f64; 6] = [
    3.05326634961232344e-1,
    3.60344899949804439e-1,
    1.25781726111229246e-1,
    1.60837851487422766e-2,
    6.58749161529837803e-4,
    1.63153871373020978e-2,
];
#[allow(clippy::excessive_precision)]
const CODY_Q: [f64; 5] = [
    2.56852019228982242e00,
    1.87295284992346725e00,
    5.27905102951428412e-1,
    6.05183413124413191e-2,
    2.33520497626869185e-3,
];
/// 1/sqrt(pi).
#[allow(clippy::excessive_precision)]
const FRAC_1_SQRT_PI: f64 = 5.6418958354775628695e-1;
/// Below this |x|, x^2 underflows relative to 1 and the series is just x·a.
const CODY_XSMALL: f64 = 1.11e-16;
/// Above this, erfc(x) underflows to zero in double precision.
const CODY_XBIG: f64 = 26.543;

/// exp(-y^2) computed as exp(-r^2)·exp(-(y-r)(y+r)) with r = y rounded down to
/// a multiple of 1/16: r^2 is then exact, which avoids the relative error of
/// about 2y^2·eps that a direct exp(-y*y) would have for large y.
fn exp_neg_square(y: f64) -> f64 {
    let r = (y * 16.0).trunc() / 16.0;
    let del = (y - r) * (y + r);
    (-r * r).exp() * (-del).exp()
}

/// erfc(y) for y > 0.46875 (Cody's second and third ranges).
fn erfc_positive_tail(y: f64) -> f64 {
    if y <= 4.0 {
        let mut num = CODY_C[8] * y;
        let mut den = y;
        for (c, d) in CODY_C[..7].iter().zip(&CODY_D[..7]) {
            num = (num + c) * y;
            den = (den + d) * y;
        }
        (num + CODY_C[7]) / (den + CODY_D[7]) * exp_neg_square(y)
    } else if y >= CODY_XBIG {
        0.0
    } else {
        let ysq = 1.0 / (y * y);
        let mut num = CODY_P[5] * ysq;
        let mut den = ysq;
        for (p, q) in CODY_P[..4].iter().zip(&CODY_Q[..4]) {
            num = (num + p) * ysq;
            den = (den + q) * ysq;
        }
        let r = ysq * (num + CODY_P[4]) / (den + CODY_Q[4]);
        (FRAC_1_SQRT_PI - r) / y * exp_neg_square(y)
    }
}

/// erf(x) for |x| <= 0.46875 (Cody's first range).
fn erf_small(x: f64) -> f64 {
    let y = x.abs();
    let ysq = if y > CODY_XSMALL { y * y } else { 0.0 };
    let mut num = CODY_A[4] * ysq;
    let mut den = ysq;
    for (a, b) in CODY_A[..3].iter().zip(&CODY_B[..3]) {
        num = (num + a) * ysq;
        den = (den + b) * ysq;
    }
    x * (num + CODY_A[3]) / (den + CODY_B[3])
}

/// The error function erf(x) = 2/√π ∫₀ˣ e^{-t²} dt.
///
/// Cody's rational Chebyshev approximations; relative error below about 1e-15
/// over the whole real line. NaN in, NaN out.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let y = x.abs();
    if y <= 0.46875 {
        return erf_small(x);
    }
    // Computed via erfc so that the leading 1 is subtracted only once.
    let r = (0.5 - erfc_positive_tail(y)) + 0.5;
    if x < 0.0 { -r } else { r }
}

/// The complementary error function erfc(x) = 1 − erf(x).
///
/// Accurate in *relative* terms in the upper tail (down to underflow near
/// x ≈ 26.5), which a literal `1.0 - erf(x)` is not. NaN in, NaN out.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let y = x.abs();
    if y <= 0.46875 {
        return 1.0 - erf_small(x);
    }
    let tail = erfc_positive_tail(y);
    if x < 0.0 { 2.0 - tail } else { tail }
}

/// The standard normal distribution function Φ(x) = P(Z ≤ x), Z ~ N(0, 1).
///
/// Uses [`erfc`], so Φ(x) keeps full relative accuracy in the lower tail
/// (down to underflow near x ≈ −37.5).
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x * FRAC_1_SQRT_2)
}

// ---------------------------------------------------------------------------
// Normal quantile: P. J. Acklam's rational approximation (relative error
// 1.15e-9) followed by one Halley step on Φ(x) − p, which roughly triples the
// number of correct digits and so reaches machine precision.
// ---------------------------------------------------------------------------

const ACKLAM_A: [f64; 6] = [
    -3.969683028665376e1,
    2.209460984245205e2,
    -2.759285104469687e2,
    1.38357751867269e2,
    -3.066479806614716e1,
    2.506628277459239e0,
];
const ACKLAM_B: [f64; 5] = [
    -5.447609879822406e1,
    1.615858368580409e2,
    -1.556989798598866e2,
    6.680131188771972e1,
    -1.328068155288572e1,
];
const ACKLAM_C: [f64; 6] = [
    -7.784894002430293e-3,
    -3.223964580411365e-1,
    -2.400758277161838e0,
    -2.549732539343734e0,
    4.374664141464968e0,
    2.938163982698783e0,
];
const ACKLAM_D: [f64; 4] = [
    7.784695709041462e-3,
    3.224671290700398e-1,
    2.445134137142996e0,
    3.754408661907416e0,
];
const ACKLAM_P_LOW: f64 = 0.02425;

/// Quantile for 0 < p <= 0.5 (lower half only; see `inverse_normal_cdf`).
fn lower_normal_quantile(p: f64) -> f64 {
    let [a0, a1, a2, a3, a4, a5] = ACKLAM_A;
    let [b0, b1, b2, b3, b4] = ACKLAM_B;
    let [c0, c1, c2, c3, c4, c5] = ACKLAM_C;
    let [d0, d1, d2, d3] = ACKLAM_D;
    let x = if p < ACKLAM_P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((c0 * q + c1) * q + c2) * q + c3) * q + c4) * q + c5)
            / ((((d0 * q + d1) * q + d2) * q + d3) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((a0 * r + a1) * r + a2) * r + a3) * r + a4) * r + a5) * q
            / (((((b0 * r + b1) * r + b2) * r + b3) * r + b4) * r + 1.0)
    };
    // Below about -37.5, Φ(x) underflows (p is subnormal), so the Newton-type
    // correction would be meaningless; Acklam's value is already good to 1e-9.
    if x < -37.5 {
        return x;
    }
    let e = normal_cdf(x) - p;
    let u = e * (2.0 * PI).sqrt() * (0.5 * x * x).exp();
    x - u / (1.0 + 0.5 * x * u)
}

/// The standard normal quantile Φ⁻¹(p).
///
/// Acklam's algorithm refined by one Halley step using [`erfc`]; relative
/// error about 1e-15 in practice (and well within 1e-9 everywhere).
/// Returns −∞ for p = 0, +∞ for p = 1 and NaN for p outside [0, 1] or NaN.
pub fn inverse_normal_cdf(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        // 1 − p is exact for p in [0.5, 1] (Sterbenz), so reflecting loses
        // nothing and the tail is always handled from the accurate side.
        -lower_normal_quantile(1.0 - p)
    } else {
        lower_normal_quantile(p)
    }
}
