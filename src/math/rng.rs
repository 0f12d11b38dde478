//! Counter-based random numbers: Philox4x32-10 (Salmon et al. 2011, "Parallel random numbers:
//! as easy as 1, 2, 3").
//!
//! Every random number in a run is a pure function of (seed, chain, step, coordinate, stream),
//! so a chain's trajectory does not depend on how chains are split across threads or GPU
//! invocations, and `shaders/rng.wgsl` reproduces the same bits with plain `u32` arithmetic.
//!
//! Counter layout: `ctr = [chain, step, coordinate / 4, stream]`, `key = [seed_lo, seed_hi]`.
//! One Philox call yields four `u32`, which Box–Muller turns into four normals, one per
//! coordinate in a block of four.
//!
//! Host-side work draws in sequence from [`SequentialRng`], the same Philox in counter mode,
//! through `rand` and `rand_distr`.

use rand_core::block::{BlockRng, Generator};
use rand_core::{Infallible, SeedableRng, TryRng};

/// Philox multipliers and Weyl key increments (Random123's constants).
const PHILOX_M0: u32 = 0xD251_1F53;
const PHILOX_M1: u32 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;

/// Independent random streams used by the samplers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Stream {
    /// Injected noise of the sampler (momentum or position).
    Injected = 0,
    /// Synthetic gradient noise of toy targets.
    GradientNoise = 1,
    /// Minibatch indices of data-based targets.
    Minibatch = 2,
    /// Initial state of the chains.
    Init = 3,
    /// Exact samples of targets (reference draws for distances).
    Exact = 4,
    /// HMC's Metropolis test: one uniform per chain and step.
    Metropolis = 5,
}

impl Stream {
    /// Every stream, in number order (the generated WGSL has a `STREAM_*` for each).
    pub const ALL: [Stream; 6] = [
        Stream::Injected,
        Stream::GradientNoise,
        Stream::Minibatch,
        Stream::Init,
        Stream::Exact,
        Stream::Metropolis,
    ];

    /// The stream's number in the Philox counter, here and (as `STREAM_*`) in WGSL.
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }
}

/// The 32×32→64 bit product split into (high, low) words. The WGSL twin builds it from
/// 16-bit halves because WGSL has no 64-bit integers.
#[inline(always)]
fn mul_hi_lo(a: u32, b: u32) -> (u32, u32) {
    let product = u64::from(a) * u64::from(b);
    ((product >> 32) as u32, product as u32)
}

/// Philox4x32 with 10 rounds: a bijection of the 128-bit counter under a 64-bit key.
#[inline(always)]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(PHILOX_W0);
            k[1] = k[1].wrapping_add(PHILOX_W1);
        }
        let (hi0, lo0) = mul_hi_lo(PHILOX_M0, c[0]);
        let (hi1, lo1) = mul_hi_lo(PHILOX_M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// The Philox key of a run seed.
#[inline(always)]
pub fn seed_key(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// A uniform in [0, 1) from the top 24 bits (exactly representable in f32).
#[inline(always)]
pub fn uniform_from_bits(bits: u32) -> f32 {
    (bits >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform in (0, 1]: safe inside a logarithm.
#[inline(always)]
pub fn uniform_open_closed_from_bits(bits: u32) -> f32 {
    ((bits >> 8) + 1) as f32 * (1.0 / 16_777_216.0)
}

/// Box–Muller: two independent N(0, 1) from two uniform words.
#[inline(always)]
pub fn box_muller(bits_radius: u32, bits_angle: u32) -> (f32, f32) {
    let u = uniform_open_closed_from_bits(bits_radius);
    let radius = (-2.0 * u.ln()).sqrt();
    let angle = std::f32::consts::TAU * uniform_from_bits(bits_angle);
    let (s, c) = angle.sin_cos();
    (radius * c, radius * s)
}

/// The address of one block of four random numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngCounter {
    /// Philox key derived from the run seed.
    pub key: [u32; 2],
    /// Chain index.
    pub chain: u32,
    /// Global step index (0 for the first step of a run).
    pub step: u32,
}

impl RngCounter {
    /// The counter for `chain` at `step` of a run with `seed`.
    #[inline(always)]
    pub fn new(seed: u64, chain: u32, step: u32) -> Self {
        Self {
            key: seed_key(seed),
            chain,
            step,
        }
    }

    /// Four raw words for coordinate block `block` of `stream`.
    #[inline(always)]
    pub fn bits4(&self, stream: Stream, block: u32) -> [u32; 4] {
        philox4x32_10([self.chain, self.step, block, stream.gpu_code()], self.key)
    }

    /// Four standard normals for coordinates `4 * block .. 4 * block + 4` of `stream`.
    #[inline(always)]
    pub fn normal4(&self, stream: Stream, block: u32) -> [f32; 4] {
        let b = self.bits4(stream, block);
        let (z0, z1) = box_muller(b[0], b[1]);
        let (z2, z3) = box_muller(b[2], b[3]);
        [z0, z1, z2, z3]
    }

    /// The first two normals of [`Self::normal4`] (coordinates `4 * block`, `4 * block + 1`)
    /// at half the cost: 2-D chains need no more.
    #[inline(always)]
    pub fn normal2(&self, stream: Stream, block: u32) -> [f32; 2] {
        let b = self.bits4(stream, block);
        let (z0, z1) = box_muller(b[0], b[1]);
        [z0, z1]
    }

    /// The standard normal of one coordinate (convenience; loops should use [`Self::normal4`]).
    pub fn normal(&self, stream: Stream, coordinate: u32) -> f32 {
        self.normal4(stream, coordinate / 4)[(coordinate % 4) as usize]
    }

    /// Fills `out` with the normals of coordinates `0..out.len()` of `stream`.
    #[inline(always)]
    pub fn fill_normals(&self, stream: Stream, out: &mut [f32]) {
        for (block, chunk) in out.chunks_mut(4).enumerate() {
            let z = self.normal4(stream, block as u32);
            chunk.copy_from_slice(&z[..chunk.len()]);
        }
    }
}

/// A sequential generator for host-side work (exact reference samples, synthetic data sets,
/// shuffles, weight init): Philox in counter mode over one stream, counter
/// `[c mod 2³², ⌊c/2³²⌋, 0x5eed0000, stream]` for block c. Not used inside the samplers.
///
/// It is a [`rand_core::Rng`] (through [`TryRng`]), so `rand` and `rand_distr` draw from it:
/// `StandardNormal.sample(&mut rng)`, `rng.random_range(0..n)`, `slice.shuffle(&mut rng)`.
#[derive(Clone, Debug)]
pub struct SequentialRng(BlockRng<PhiloxBlocks>);

/// The block generator behind [`SequentialRng`]: one Philox call per block of four words.
#[derive(Clone, Debug)]
struct PhiloxBlocks {
    key: [u32; 2],
    counter: u64,
    stream: u32,
}

impl Generator for PhiloxBlocks {
    type Output = [u32; 4];

    fn generate(&mut self, output: &mut [u32; 4]) {
        let c = self.counter;
        *output = philox4x32_10(
            [c as u32, (c >> 32) as u32, 0x5eed_0000, self.stream],
            self.key,
        );
        self.counter += 1;
    }
}

impl SequentialRng {
    /// A generator for `seed` on a private `stream` (distinct streams never overlap).
    pub fn new(seed: u64, stream: u32) -> Self {
        Self(BlockRng::new(PhiloxBlocks {
            key: seed_key(seed),
            counter: 0,
            stream,
        }))
    }
}

impl TryRng for SequentialRng {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.0.next_word())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_u64_from_u32())
    }

    #[inline]
    fn try_fill_bytes(&mut self, bytes: &mut [u8]) -> Result<(), Infallible> {
        self.0.fill_bytes(bytes);
        Ok(())
    }
}

impl SeedableRng for SequentialRng {
    /// The run seed (8 bytes) and the stream (4 bytes), little-endian.
    type Seed = [u8; 12];

    fn from_seed(seed: [u8; 12]) -> Self {
        let [s @ .., t0, t1, t2, t3] = seed;
        Self::new(u64::from_le_bytes(s), u32::from_le_bytes([t0, t1, t2, t3]))
    }

    /// Stream 0 of `seed`. The seed is Philox's key, which needs no extra mixing (nearby keys
    /// give unrelated streams), so this skips the PCG expansion of the default method.
    fn seed_from_u64(seed: u64) -> Self {
        Self::new(seed, 0)
    }
}

/// Index of a uniformly drawn element of `0..n` from one raw word (multiply-shift, as in WGSL).
#[inline(always)]
pub fn index_below(bits: u32, n: u32) -> u32 {
    mul_hi_lo(bits, n).0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known answers of Philox4x32-10 published with Random123 (kat_vectors).
    #[test]
    fn philox_matches_random123_known_answers() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    /// atmc-lab's own known answers: the address layout and Box–Muller. `tests/it/gpu_rng.rs`
    /// checks Philox and Box–Muller of `shaders/rng.wgsl` against these functions; the
    /// layout on the GPU is checked through the trajectories of `tests/it/gpu.rs`.
    #[test]
    fn counter_layout_known_answers() {
        let c = RngCounter::new(42, 7, 3);
        assert_eq!(c.key, [42, 0]);
        assert_eq!(
            c.bits4(Stream::Injected, 0),
            philox4x32_10([7, 3, 0, 0], [42, 0])
        );
        let seed = 0x0123_4567_89ab_cdef_u64;
        let c = RngCounter::new(seed, 1, 2);
        assert_eq!(c.key, [0x89ab_cdef, 0x0123_4567]);
        assert_eq!(
            c.bits4(Stream::GradientNoise, 5),
            philox4x32_10([1, 2, 5, 1], [0x89ab_cdef, 0x0123_4567])
        );
        // Extremes of the uniform maps.
        assert_eq!(uniform_from_bits(0), 0.0);
        assert_eq!(uniform_from_bits(u32::MAX), 1.0 - 1.0 / 16_777_216.0);
        assert_eq!(uniform_open_closed_from_bits(u32::MAX), 1.0);
        assert_eq!(uniform_open_closed_from_bits(0), 1.0 / 16_777_216.0);
        // u = 1 gives radius 0; the smallest u gives the largest normal, about 5.77.
        assert_eq!(box_muller(u32::MAX, 0), (0.0, 0.0));
        let (z, _) = box_muller(0, 0);
        assert!((z - 5.768_108).abs() < 1e-5, "{z}");
        assert_eq!(index_below(u32::MAX, 10), 9);
        assert_eq!(index_below(0, 10), 0);
    }

    #[test]
    fn normals_have_unit_moments_and_blocks_are_consistent() {
        let n = 200_000u32;
        let (mut s1, mut s2, mut s4) = (0.0f64, 0.0f64, 0.0f64);
        for chain in 0..n / 4 {
            let z = RngCounter::new(9, chain, 11).normal4(Stream::Injected, 0);
            for v in z {
                let v = f64::from(v);
                s1 += v;
                s2 += v * v;
                s4 += v * v * v * v;
            }
        }
        let nf = f64::from(n);
        assert!((s1 / nf).abs() < 0.01);
        assert!((s2 / nf - 1.0).abs() < 0.01);
        // sd of the fourth-moment estimate: sqrt(96 / n) ≈ 0.022.
        assert!((s4 / nf - 3.0).abs() < 0.09, "kurtosis {}", s4 / nf);
        let c = RngCounter::new(5, 3, 8);
        let mut all = [0.0f32; 6];
        c.fill_normals(Stream::GradientNoise, &mut all);
        for (i, v) in all.iter().enumerate() {
            assert_eq!(*v, c.normal(Stream::GradientNoise, i as u32));
        }
    }

    #[test]
    fn sequential_rng_is_uniform_and_streams_differ() {
        use rand::{Rng, RngExt};
        let mut a = SequentialRng::new(1, 0);
        let mut b = SequentialRng::new(1, 1);
        assert_ne!(a.next_u32(), b.next_u32());
        // The counter layout of MATH.md §0: block c of stream s is Philox at
        // (c mod 2³², ⌊c/2³²⌋, 0x5eed0000, s), read word by word.
        let mut r = SequentialRng::new(7, 4);
        let words: Vec<u32> = (0..8).map(|_| r.next_u32()).collect();
        assert_eq!(
            words[..4],
            philox4x32_10([0, 0, 0x5eed_0000, 4], seed_key(7))
        );
        assert_eq!(
            words[4..],
            philox4x32_10([1, 0, 0x5eed_0000, 4], seed_key(7))
        );
        let mut seeded = SequentialRng::from_seed([7, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0]);
        assert_eq!(seeded.next_u32(), words[0]);
        assert_eq!(
            SequentialRng::seed_from_u64(7).next_u32(),
            SequentialRng::new(7, 0).next_u32()
        );

        let mut r = SequentialRng::new(3, 0);
        let mean: f64 = (0..100_000).map(|_| r.random::<f64>()).sum::<f64>() / 1e5;
        assert!((mean - 0.5).abs() < 0.005);
        let counts = (0..100_000).fold([0u32; 5], |mut acc, _| {
            acc[r.random_range(0..5usize)] += 1;
            acc
        });
        assert!(counts.iter().all(|&c| (19_000..21_000).contains(&c)));
    }
}
