// Counter-based random numbers: Philox4x32-10, mirroring src/math/rng.rs bit for bit.
// Counter layout: (chain, step, coordinate / 4, stream); key: (seed_lo, seed_hi).

const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
const PHILOX_W0: u32 = 0x9E3779B9u;
const PHILOX_W1: u32 = 0xBB67AE85u;

// The stream numbers `STREAM_*` are generated from `Stream` (src/engine/shader_interface.rs).

// The 32x32 -> 64-bit product as (high, low), from 16-bit halves: WGSL has no u64.
fn mul_hi_lo(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    let hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, a * b);
}

fn philox4x32_10(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = key;
    for (var r = 0u; r < 10u; r++) {
        if (r > 0u) {
            k = vec2<u32>(k.x + PHILOX_W0, k.y + PHILOX_W1);
        }
        let p0 = mul_hi_lo(PHILOX_M0, c.x);
        let p1 = mul_hi_lo(PHILOX_M1, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
    }
    return c;
}

fn uniform_from_bits(bits: u32) -> f32 {
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}

fn uniform_open_closed_from_bits(bits: u32) -> f32 {
    return f32((bits >> 8u) + 1u) * (1.0 / 16777216.0);
}

fn box_muller(bits_radius: u32, bits_angle: u32) -> vec2<f32> {
    let u = uniform_open_closed_from_bits(bits_radius);
    let radius = sqrt(-2.0 * log(u));
    let angle = 6.2831855 * uniform_from_bits(bits_angle);
    return vec2<f32>(radius * cos(angle), radius * sin(angle));
}

struct RngCounter {
    key: vec2<u32>,
    chain: u32,
    step: u32,
}

fn rng_bits4(rng: RngCounter, stream: u32, block: u32) -> vec4<u32> {
    return philox4x32_10(vec4<u32>(rng.chain, rng.step, block, stream), rng.key);
}

fn rng_normal2(rng: RngCounter, stream: u32, block: u32) -> vec2<f32> {
    let b = rng_bits4(rng, stream, block);
    return box_muller(b.x, b.y);
}

fn rng_normal4(rng: RngCounter, stream: u32, block: u32) -> vec4<f32> {
    let b = rng_bits4(rng, stream, block);
    return vec4<f32>(box_muller(b.x, b.y), box_muller(b.z, b.w));
}

// Uniform index in 0..n from one word (multiply-shift), as `index_below` in Rust.
fn index_below(bits: u32, n: u32) -> u32 {
    return mul_hi_lo(bits, n).x;
}
