//! The host–shader interface, written once, in Rust.
//!
//! Everything the host writes and a WGSL shader reads with a shared meaning is declared here,
//! and the WGSL side is generated from it, so the two cannot drift apart:
//!
//! - **Structs.** The uniform blocks — [`GpuSamplerParams`] (`SamplerParams`, the sampler
//!   block of the 2-D and MLP engines), [`GpuChain2Params`], [`GpuMlpParams`] and
//!   [`GpuSphereParams`] (one block per program) and [`MlpSlice`] (`Slice`, the MLP engine's
//!   per-dispatch uniform) — and the chain layouts [`GpuChain`] (`Chain`) and
//!   [`GpuSphereChain`] (`SphereChain`) are declared by `shader_structs!` (below): each
//!   field is written once, with its Rust type, and the WGSL type follows from it (`u32`,
//!   `f32`; `[S; 2..=4]` is `vecN<S>`; `[[S; 4]; N]` is `array<vec4<S>, N>`). The same macro
//!   checks at compile time that every field sits at the offset WGSL gives it and that
//!   arrays in a uniform have a 16-byte stride, so a field added in the wrong place fails the
//!   build, not a GPU run.
//! - **Bindings.** [`Chain2Binding`], [`MlpBinding`] and [`SphereBinding`] list each
//!   program's buffers (`shader_bindings!`): a variant's position is its binding number, its
//!   [`BindingDecl`] says name, uniform or storage, access and type. The prelude declares the
//!   variables from them and `engine::gpu` makes the bind group layouts and the bind groups
//!   from the same tables.
//! - **Overrides.** [`SPECIALISED_SAMPLER`], [`SPECIALISED_TARGET`],
//!   [`SPECIALISED_ACTIVATION`] and the `MAY_*` features are Rust constants the pipelines
//!   are made with; [`Program::overrides`] declares them in each program's prelude.
//! - **Constants.** [`constants`] lists every `const NAME: u32 = Nu;` of the generated WGSL,
//!   each taken from the Rust value the host uses: the enum codes (`SamplerKind::gpu_code`,
//!   `TargetKind`, `Stream`, `Activation`, [`MlpRegion`], [`Axis::index`]), the partial-sum
//!   slots ([`ChainPartial`], [`MlpPartial`]), the target constants' positions
//!   (each family's `Gradient::GPU_PARAMS`), the flag bits, workgroup sizes and buffer strides, and the
//!   MLP shader's array bounds.
//!
//! [`prelude`] is a [`Program`]'s generated WGSL (its structs, the constants, its overrides
//! and bindings) followed by the hand-written helpers of `shaders/common.wgsl`; [`compose`]
//! puts it in front of the program's `.wgsl` files. [`check_wgsl`] parses WGSL with naga and
//! lists every place where it disagrees with this module; `tests/it/shader_interface.rs` runs it
//! on the three programs and on deliberately altered copies. Constants only the shaders use
//! (Philox's multipliers, SELU's λ and α, π) stay in the `.wgsl` files.

use super::Axis;
use super::mlp::MAX_LAYERS;
use crate::math::SamplerKind;
use crate::math::mlp::{Activation, MAX_ACTIVATIONS, MAX_CLASSES, MAX_HIDDEN_LAYERS, MAX_WIDTH};
use crate::math::rng::Stream;
use crate::math::targets::{TARGET_PARAMS, TargetKind};
use bytemuck::{Pod, Zeroable};
use std::fmt::Write as _;
use wgpu::naga;

/// A WGSL type a field of a shared struct can have, with its host-shareable layout (WGSL
/// §14.4 "Memory Layout"): `u32`, `f32`, arrays of them (2 to 4 make a vector) and arrays of
/// those.
pub trait WgslType {
    /// Whether the type is a WGSL scalar (arrays of 2 to 4 scalars are vectors).
    const SCALAR: bool;
    /// Its alignment in WGSL.
    const ALIGN: usize;
    /// Its size in WGSL.
    const SIZE: usize;
    /// The element stride when the type is a WGSL array, 0 otherwise.
    const ARRAY_STRIDE: usize;
    /// The WGSL spelling of the type.
    fn wgsl() -> String;
}

impl WgslType for u32 {
    const SCALAR: bool = true;
    const ALIGN: usize = 4;
    const SIZE: usize = 4;
    const ARRAY_STRIDE: usize = 0;
    fn wgsl() -> String {
        "u32".into()
    }
}

impl WgslType for f32 {
    const SCALAR: bool = true;
    const ALIGN: usize = 4;
    const SIZE: usize = 4;
    const ARRAY_STRIDE: usize = 0;
    fn wgsl() -> String {
        "f32".into()
    }
}

const fn round_up(x: usize, align: usize) -> usize {
    x.div_ceil(align) * align
}

const fn is_vector<T: WgslType>(n: usize) -> bool {
    T::SCALAR && n >= 2 && n <= 4
}

impl<T: WgslType, const N: usize> WgslType for [T; N] {
    const SCALAR: bool = false;
    // vec2 aligns to twice its scalar, vec3 and vec4 to four times.
    const ALIGN: usize = if is_vector::<T>(N) {
        if N == 2 { 2 * T::SIZE } else { 4 * T::SIZE }
    } else {
        T::ALIGN
    };
    const SIZE: usize = if is_vector::<T>(N) {
        N * T::SIZE
    } else {
        N * round_up(T::SIZE, T::ALIGN)
    };
    const ARRAY_STRIDE: usize = if is_vector::<T>(N) {
        0
    } else {
        round_up(T::SIZE, T::ALIGN)
    };
    fn wgsl() -> String {
        if is_vector::<T>(N) {
            format!("vec{N}<{}>", T::wgsl())
        } else {
            format!("array<{}, {N}>", T::wgsl())
        }
    }
}

/// Where a shared struct lives on the GPU: uniforms have stricter layout rules (arrays need a
/// 16-byte stride).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage>`.
    Storage,
}

/// One field of a shared struct, as the Rust compiler laid it out.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The field's name, the same on both sides.
    pub name: &'static str,
    /// `offset_of!` in the Rust struct.
    pub offset: usize,
    /// `size_of` of the Rust field.
    pub size: usize,
    /// The WGSL type, derived from the Rust type.
    pub wgsl_type: fn() -> String,
    /// The field's doc comment, copied into the WGSL as a comment.
    pub doc: &'static [&'static str],
}

/// A struct shared by the host and the shaders.
#[derive(Clone, Copy, Debug)]
pub struct SharedStruct {
    /// The Rust name.
    pub rust_name: &'static str,
    /// The WGSL name.
    pub wgsl_name: &'static str,
    /// Where it is bound.
    pub space: Space,
    /// `size_of` of the Rust struct.
    pub size: usize,
    /// Its fields in declaration order.
    pub fields: &'static [Field],
}

impl SharedStruct {
    /// The WGSL declaration.
    pub fn wgsl(&self) -> String {
        let mut out = format!(
            "// `{}` in src/engine/shader_interface.rs ({} bytes).\nstruct {} {{\n",
            self.rust_name, self.size, self.wgsl_name
        );
        for f in self.fields {
            for line in f.doc {
                let _ = writeln!(out, "    //{line}");
            }
            let _ = writeln!(out, "    {}: {},", f.name, (f.wgsl_type)());
        }
        out.push_str("}\n");
        out
    }
}

/// Declares `#[repr(C)]` Pod structs shared with WGSL: each field once, with its Rust type;
/// generates the [`SharedStruct`] description the WGSL is written from, and checks at compile
/// time that Rust and WGSL place every field at the same offset and agree on the size.
///
/// ```text
/// shader_structs! {
///     /// Docs.
///     pub struct RustName as "WgslName" in Uniform {
///         /// Field docs (copied into the WGSL).
///         pub field: u32,
///     }
/// }
/// ```
macro_rules! shader_structs {
    ($(
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident as $wgsl:literal in $space:ident {
            $(
                $(#[doc = $doc:literal])*
                pub $field:ident : $ty:ty,
            )*
        }
    )*) => {
        $(
            $(#[doc = $sdoc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Pod, Zeroable)]
            pub struct $name {
                $(
                    $(#[doc = $doc])*
                    pub $field: $ty,
                )*
            }

            impl $name {
                /// The description the WGSL declaration is generated from.
                pub const SHARED: SharedStruct = SharedStruct {
                    rust_name: stringify!($name),
                    wgsl_name: $wgsl,
                    space: Space::$space,
                    size: ::core::mem::size_of::<$name>(),
                    fields: &[$(Field {
                        name: stringify!($field),
                        offset: ::core::mem::offset_of!($name, $field),
                        size: ::core::mem::size_of::<$ty>(),
                        wgsl_type: <$ty as WgslType>::wgsl,
                        doc: &[$($doc),*],
                    }),*],
                };
            }

            // WGSL's layout of the same fields, field by field, against Rust's.
            const _: () = {
                let uniform = matches!(Space::$space, Space::Uniform);
                let mut end = 0usize;
                let mut align = 1usize;
                $(
                    let a = <$ty as WgslType>::ALIGN;
                    let offset = round_up(end, a);
                    assert!(
                        offset == ::core::mem::offset_of!($name, $field),
                        concat!(
                            stringify!($name), ".", stringify!($field),
                            ": WGSL aligns this field differently from Rust; add padding before it"
                        )
                    );
                    assert!(
                        <$ty as WgslType>::SIZE == ::core::mem::size_of::<$ty>(),
                        concat!(
                            stringify!($name), ".", stringify!($field),
                            ": the WGSL type has another size than the Rust type"
                        )
                    );
                    assert!(
                        !uniform || <$ty as WgslType>::ARRAY_STRIDE % 16 == 0,
                        concat!(
                            stringify!($name), ".", stringify!($field),
                            ": arrays in a uniform need a 16-byte stride: use [[S; 4]; N]"
                        )
                    );
                    end = offset + <$ty as WgslType>::SIZE;
                    if a > align {
                        align = a;
                    }
                )*
                assert!(
                    round_up(end, align) == ::core::mem::size_of::<$name>(),
                    concat!(
                        stringify!($name),
                        ": WGSL's struct size differs from Rust's; pad the end"
                    )
                );
            };
        )*

        /// Every struct shared with the shaders, in the order the prelude declares them.
        pub const SHARED_STRUCTS: &[SharedStruct] = &[$($name::SHARED),*];
    };
}

shader_structs! {
    /// The sampler block (`SamplerParams`, bound as `sampler_params`): what the per-coordinate
    /// updates of `shaders/samplers.wgsl` read, shared by the 2-D engine and the MLP engine so
    /// the sampler fields have one host-side writer (`GpuSamplerParams::for_sampler`).
    pub struct GpuSamplerParams as "SamplerParams" in Uniform {
        /// Low word of the run seed (the Philox key).
        pub seed_lo: u32,
        /// High word of the run seed.
        pub seed_hi: u32,
        /// Number of chains.
        pub chains: u32,
        /// `FLAG_*` bits.
        pub flags: u32,
        /// Peak step size h₀ (`SamplerParams::h`).
        pub h: f32,
        /// Mass m.
        pub mass: f32,
        /// 1 / m.
        pub inv_mass: f32,
        /// ATMC's friction floor D.
        pub friction_floor: f32,
        /// Temperature T.
        pub temperature: f32,
        /// Speed limit c of the hyperbolic kinetic energy; 0 selects the Gaussian one.
        pub speed: f32,
        /// Friction sign φ.
        pub friction_sign: f32,
        /// The mass factor of ATMC's injected noise: m (correct) or 1 (printed).
        pub noise_mass: f32,
        /// |p| beyond which a chain diverges.
        pub divergence_bound: f32,
        /// Divergence bound on |θ|.
        pub theta_bound: f32,
        /// SGHMC's friction C.
        pub sghmc_friction: f32,
        /// SGHMC's gradient-noise estimate B̂.
        pub sghmc_noise_estimate: f32,
        /// SGNHT's diffusion A.
        pub sgnht_diffusion: f32,
        /// Cycle length of the cyclical schedule; 0 for a constant step.
        pub cycle_len: u32,
        /// Fraction of a cycle spent exploring.
        pub explore_fraction: f32,
        /// SGD's heavy-ball momentum μ (0: plain SGD; it took the block's padding word, so
        /// the block stays five 16-byte rows).
        pub sgd_momentum: f32,
    }

    /// The 2-D engine's block (`Chain2Params`, bound as `chain2_params`): the dispatch, the
    /// target, the synthetic gradient noise and the histograms.
    pub struct GpuChain2Params as "Chain2Params" in Uniform {
        /// Global index of the dispatch's first step.
        pub step0: u32,
        /// Steps of this dispatch.
        pub steps: u32,
        /// Workgroups along x of the dispatch.
        pub groups_x: u32,
        /// Histograms to fill.
        pub hist_count: u32,
        /// Size N of the data set.
        pub data_n: u32,
        /// Minibatch size n.
        pub batch_size: u32,
        /// State dependence κ of the synthetic gradient noise.
        pub noise_kappa: f32,
        /// Standard deviation of the synthetic gradient noise, coordinate 0.
        pub noise_sigma0: f32,
        /// Standard deviation of the synthetic gradient noise, coordinate 1.
        pub noise_sigma1: f32,
        /// Superchains K to reduce in `reduce_superchains` (chain i in superchain i mod K).
        pub superchains: u32,
        /// HMC's leapfrog steps L (`SamplerParams::leapfrog_steps`; 2-D chains only, so it
        /// lives in this block and took its padding word).
        pub leapfrog_steps: u32,
        /// Padding.
        pub pad3: u32,
        /// The target's f32 constants (`Target::gpu_constants`) at their positions in its
        /// family's `GPU_PARAMS`, read by `target_param(PARAM_*)`.
        pub target_params: [[f32; 4]; TARGET_PARAMS / 4],
        /// Per histogram: origin x, origin y, scale x, scale y.
        pub hist_f: [[f32; 4]; super::MAX_HISTOGRAMS],
        /// Per histogram: nx, ny, axes (x | y << HIST_AXIS_SHIFT), offset of its first cell.
        pub hist_u: [[u32; 4]; super::MAX_HISTOGRAMS],
    }

    /// The MLP engine's block (`MlpParams`, bound as `mlp_params`): the posterior and the
    /// prediction requests.
    pub struct GpuMlpParams as "MlpParams" in Uniform {
        /// Size N of the data set.
        pub data_n: u32,
        /// Minibatch size n.
        pub batch_size: u32,
        /// Weight layers.
        pub layers: u32,
        /// Parameters P per chain.
        pub param_count: u32,
        /// Prior precision 1/σ².
        pub prior_precision: f32,
        /// Prediction: points.
        pub points: u32,
        /// Prediction: the chain whose own map is drawn.
        pub focus_chain: u32,
        /// Padding before the array.
        pub pad: u32,
        /// Units per layer, from the 2 inputs to the classes.
        pub sizes: [[u32; 4]; 2],
    }

    /// The sphere engine's block (`SphereParams`, bound as `sphere_params`).
    pub struct GpuSphereParams as "SphereParams" in Uniform {
        /// Low word of the run seed (the Philox key).
        pub seed_lo: u32,
        /// High word of the run seed.
        pub seed_hi: u32,
        /// Global index of the dispatch's first step.
        pub step0: u32,
        /// Steps of this dispatch.
        pub steps: u32,
        /// Number of chains.
        pub chains: u32,
        /// Workgroups along x of the dispatch.
        pub groups_x: u32,
        /// Number of objects.
        pub data_n: u32,
        /// Minibatch size n.
        pub batch_size: u32,
        /// Step size η.
        pub h: f32,
        /// Heavy-ball momentum μ.
        pub momentum: f32,
        /// Padding: a uniform block is a whole number of 16-byte rows.
        pub pad1: u32,
        /// Padding.
        pub pad2: u32,
    }

    /// What varies between the dispatches of one MLP submission (`Slice`): the step, and the
    /// slice [first, end) of minibatch slots or chains the dispatch covers.
    pub struct MlpSlice as "Slice" in Uniform {
        /// Global step index.
        pub step: u32,
        /// First slot or chain.
        pub first: u32,
        /// One past the last slot or chain.
        pub end: u32,
        /// 1 when this prediction dispatch also stores the focus chain's probabilities.
        pub with_focus: u32,
    }

    /// A 2-D chain as stored on the GPU (`Chain`).
    pub struct GpuChain as "Chain" in Storage {
        /// Position θ.
        pub theta: [f32; 2],
        /// Momentum p.
        pub p: [f32; 2],
        /// Thermostat ξ.
        pub xi: [f32; 2],
    }

    /// A chain of the sphere engine (`SphereChain`): a unit direction and its velocity, each
    /// a `vec4` whose last component is unused (a `vec3` would pad to 16 bytes anyway).
    pub struct GpuSphereChain as "SphereChain" in Storage {
        /// Direction x (|x| = 1).
        pub x: [f32; 4],
        /// Velocity v, tangent at x.
        pub v: [f32; 4],
    }
}

const _: () = assert!(
    TARGET_PARAMS.is_multiple_of(4),
    "target constants travel four to a vec4"
);

/// `GpuSamplerParams::flags`: ATMC's thermostat overwrites ξ (as printed) instead of
/// accumulating.
pub const FLAG_XI_OVERWRITE: u32 = 1 << 0;
/// `GpuSamplerParams::flags`: SGNHT with one ξ shared by all coordinates.
pub const FLAG_SGNHT_SHARED: u32 = 1 << 1;
/// `GpuSamplerParams::flags`: the thermostat keeps running while a cyclical schedule explores
/// (the ratchet of MATH.md §3.1) instead of being frozen.
pub const FLAG_THERMOSTAT_RUNNING: u32 = 1 << 2;

/// Invocations per workgroup of the 2-D engine (`CHAIN_WORKGROUP`).
pub const CHAIN_WORKGROUP: u32 = 256;
/// Partial sums per workgroup of the 2-D engine (`partials`): the [`ChainPartial`] slots and
/// one unused.
pub const CHAIN_PARTIALS: u32 = 12;
/// Floats per superchain in `superchain_sums`: alive, two means, two centred sums of squares.
pub const SUPERCHAIN_FIELDS: u32 = 5;
// The superchain reduction shares the chain workgroup and its scratch rows.
const _: () = assert!(CHAIN_WORKGROUP as usize == super::moments::SUPERCHAIN_LANES);
const _: () = assert!(CHAIN_PARTIALS >= 3);
/// Invocations per workgroup of the MLP engine (`MLP_WORKGROUP`).
pub const MLP_WORKGROUP: u32 = 64;
/// Partial sums per workgroup of the MLP engine (`partials`): the [`MlpPartial`] slots, the
/// last of them once per weight layer.
pub const MLP_PARTIALS: u32 = MlpPartial::Layers.slot(MAX_LAYERS) as u32;
/// Invocations of the workgroup that computes one network's gradient (`MLP_NET_WORKGROUP`):
/// one example each in the forward pass and the error sent back, one parameter each in the
/// weight gradient. The minibatch goes through in tiles of this many examples.
pub const MLP_NET_WORKGROUP: u32 = 64;
/// Parameters of the largest network (`MLP_NET_PARAMS`): θ in workgroup memory.
pub const MLP_NET_PARAMS: u32 = mlp_net_layer_params(MAX_HIDDEN_LAYERS, true);
/// Rows × examples of one tile's inputs or errors of a weight layer (`MLP_NET_STAGE`).
pub const MLP_NET_STAGE: u32 = MAX_WIDTH as u32 * MLP_NET_WORKGROUP;
/// Gradient sums one invocation of `MLP_NET_WORKGROUP` keeps (`MLP_NET_OWNED`): every
/// `MLP_NET_WORKGROUP`-th parameter of each layer of the largest network.
pub const MLP_NET_OWNED: u32 = mlp_net_layer_params(MAX_HIDDEN_LAYERS, false);
/// Bytes of workgroup memory the one-network kernel declares: θ, inputs and errors.
pub const MLP_NET_WORKGROUP_BYTES: u32 = 4 * (MLP_NET_PARAMS + 2 * MLP_NET_STAGE) + 16;

/// Over the weight layers of the largest network of `hidden` hidden layers: the parameters
/// (`all`), or the parameters per invocation of `MLP_NET_WORKGROUP`, rounded up layer by layer.
const fn mlp_net_layer_params(hidden: usize, all: bool) -> u32 {
    let mut total = 0;
    let mut l = 0;
    while l <= hidden {
        let inputs = if l == 0 { 2 } else { MAX_WIDTH };
        let outputs = if l == hidden { MAX_CLASSES } else { MAX_WIDTH };
        let params = ((inputs + 1) * outputs) as u32;
        total += if all {
            params
        } else {
            params.div_ceil(MLP_NET_WORKGROUP)
        };
        l += 1;
    }
    total
}
/// Bits of each axis code in `hist_u[i].z` (x in the low bits, y above).
pub const HIST_AXIS_SHIFT: u32 = 8;

const _: () = assert!(
    MAX_LAYERS == MAX_HIDDEN_LAYERS + 1,
    "the MLP engine reports every weight layer"
);

/// A slot of the 2-D engine's per-workgroup partial sums over its alive chains (`PARTIAL_*`):
/// `shaders/engine.wgsl` writes them, `GpuEngine::advance` adds them up into `Moments`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ChainPartial {
    /// Chains alive.
    Alive,
    /// Chains diverged.
    Diverged,
    /// Σθ₀.
    Theta0,
    /// Σθ₁.
    Theta1,
    /// Σθ₀θ₀.
    Theta00,
    /// Σθ₀θ₁.
    Theta01,
    /// Σθ₁θ₁.
    Theta11,
    /// Σ p₀K'(p₀).
    Heat0,
    /// Σ p₁K'(p₁).
    Heat1,
    /// Σξ₀.
    Xi0,
    /// Σξ₁.
    Xi1,
}

impl ChainPartial {
    /// Every slot, in buffer order.
    pub const ALL: [ChainPartial; 11] = [
        ChainPartial::Alive,
        ChainPartial::Diverged,
        ChainPartial::Theta0,
        ChainPartial::Theta1,
        ChainPartial::Theta00,
        ChainPartial::Theta01,
        ChainPartial::Theta11,
        ChainPartial::Heat0,
        ChainPartial::Heat1,
        ChainPartial::Xi0,
        ChainPartial::Xi1,
    ];

    /// The slot's index in a workgroup's partial sums, on the host and in WGSL.
    pub const fn slot(self) -> usize {
        self as usize
    }
}

const _: () = assert!(ChainPartial::ALL.len() <= CHAIN_PARTIALS as usize);

/// A slot of the MLP engine's per-workgroup partial sums (`PARTIAL_MLP_*`):
/// `mlp_statistics` in `shaders/mlp.wgsl` writes them, `MlpGpuEngine::advance` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MlpPartial {
    /// Chains alive.
    Alive,
    /// Chains diverged.
    Diverged,
    /// The first of the per-layer pairs: weight layer l has Σ pK'(p) at `Layers + 2l` and
    /// Σ ξ at `Layers + 2l + 1`.
    Layers,
}

impl MlpPartial {
    /// Every slot, in buffer order.
    pub const ALL: [MlpPartial; 3] = [MlpPartial::Alive, MlpPartial::Diverged, MlpPartial::Layers];

    /// The slot's index; for [`MlpPartial::Layers`] the first slot of weight layer `layer`
    /// (other slots ignore it).
    pub const fn slot(self, layer: usize) -> usize {
        match self {
            MlpPartial::Layers => self as usize + 2 * layer,
            _ => self as usize,
        }
    }
}

/// The four regions of the MLP engine's state buffer (`REGION_*`), each P × chains with the
/// chain index fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MlpRegion {
    /// Parameters θ.
    Theta,
    /// Momenta p.
    P,
    /// Thermostats ξ.
    Xi,
    /// Gradient scratch (SGNHT: the heat once the gradient is used).
    Gradient,
}

impl MlpRegion {
    /// Every region, in buffer order.
    pub const ALL: [MlpRegion; 4] = [
        MlpRegion::Theta,
        MlpRegion::P,
        MlpRegion::Xi,
        MlpRegion::Gradient,
    ];

    /// The region's index in the buffer, on the host and (as `REGION_*`) in WGSL.
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }
}

/// One generated `const NAME: u32 = VALUEu;` of the WGSL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WgslConst {
    /// The WGSL name.
    pub name: String,
    /// The value the host uses.
    pub value: u32,
}

/// The prefixes of the generated constant families; `shaders/*.wgsl` must declare no
/// constant that starts with one of them.
pub const GENERATED_PREFIXES: &[&str] = &[
    "SAMPLER_", "FLAG_", "TARGET_", "STREAM_", "ACT_", "REGION_", "AXIS_", "PARTIAL_", "PARAM_",
];

/// "DoubleWell" → "DOUBLE_WELL": the WGSL spelling of a Rust variant name.
fn screaming_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_uppercase());
    }
    out
}

fn sampler_name(kind: SamplerKind) -> &'static str {
    match kind {
        SamplerKind::Atmc => "ATMC",
        SamplerKind::Sgld => "SGLD",
        SamplerKind::Sghmc => "SGHMC",
        SamplerKind::Sgnht => "SGNHT",
        SamplerKind::Sgd => "SGD",
        SamplerKind::Hmc => "HMC",
    }
}

/// A family's name in WGSL constants: `DoubleWell` → `DOUBLE_WELL`.
fn target_name(kind: TargetKind) -> String {
    screaming_snake(&format!("{kind:?}"))
}

fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Injected => "INJECTED",
        Stream::GradientNoise => "GRADIENT_NOISE",
        Stream::Minibatch => "MINIBATCH",
        Stream::Init => "INIT",
        Stream::Exact => "EXACT",
        Stream::Metropolis => "METROPOLIS",
    }
}

fn activation_name(activation: Activation) -> &'static str {
    match activation {
        Activation::Tanh => "TANH",
        Activation::Relu => "RELU",
        Activation::Selu => "SELU",
    }
}

fn region_name(region: MlpRegion) -> &'static str {
    match region {
        MlpRegion::Theta => "THETA",
        MlpRegion::P => "P",
        MlpRegion::Xi => "XI",
        MlpRegion::Gradient => "GRADIENT",
    }
}

fn axis_name(axis: Axis) -> String {
    match axis {
        Axis::Theta(c) => format!("THETA{c}"),
        Axis::P(c) => format!("P{c}"),
        Axis::Xi(c) => format!("XI{c}"),
    }
}

/// Every generated WGSL constant with the value the host uses, in prelude order.
pub fn constants() -> Vec<WgslConst> {
    let mut out = Vec::new();
    let mut push = |name: String, value: u32| out.push(WgslConst { name, value });
    for (kind, _) in SamplerKind::ALL {
        push(format!("SAMPLER_{}", sampler_name(kind)), kind.gpu_code());
    }
    push("FLAG_XI_OVERWRITE".into(), FLAG_XI_OVERWRITE);
    push("FLAG_SGNHT_SHARED".into(), FLAG_SGNHT_SHARED);
    push("FLAG_THERMOSTAT_RUNNING".into(), FLAG_THERMOSTAT_RUNNING);
    for kind in TargetKind::ALL {
        push(format!("TARGET_{}", target_name(kind)), kind.gpu_code());
    }
    for stream in Stream::ALL {
        push(format!("STREAM_{}", stream_name(stream)), stream.gpu_code());
    }
    for axis in [0, 1]
        .map(Axis::Theta)
        .into_iter()
        .chain([0, 1].map(Axis::P))
        .chain([0, 1].map(Axis::Xi))
    {
        push(format!("AXIS_{}", axis_name(axis)), axis.index());
    }
    push("HIST_AXIS_SHIFT".into(), HIST_AXIS_SHIFT);
    push("CHAIN_WORKGROUP".into(), CHAIN_WORKGROUP);
    push("CHAIN_PARTIALS".into(), CHAIN_PARTIALS);
    push("SUPERCHAIN_FIELDS".into(), SUPERCHAIN_FIELDS);
    for activation in Activation::ALL {
        push(
            format!("ACT_{}", activation_name(activation)),
            activation.gpu_code(),
        );
    }
    for region in MlpRegion::ALL {
        push(format!("REGION_{}", region_name(region)), region.gpu_code());
    }
    push("MLP_WORKGROUP".into(), MLP_WORKGROUP);
    push("MLP_PARTIALS".into(), MLP_PARTIALS);
    push("MLP_NET_WORKGROUP".into(), MLP_NET_WORKGROUP);
    push("MLP_NET_PARAMS".into(), MLP_NET_PARAMS);
    push("MLP_NET_STAGE".into(), MLP_NET_STAGE);
    push("MLP_NET_OWNED".into(), MLP_NET_OWNED);
    push("MAX_WIDTH".into(), MAX_WIDTH as u32);
    push("MAX_CLASSES".into(), MAX_CLASSES as u32);
    push("MAX_LAYERS".into(), MAX_LAYERS as u32);
    push("MAX_ACTIVATIONS".into(), MAX_ACTIVATIONS as u32);
    for slot in ChainPartial::ALL {
        push(
            format!("PARTIAL_{}", screaming_snake(&format!("{slot:?}"))),
            slot.slot() as u32,
        );
    }
    for slot in MlpPartial::ALL {
        push(
            format!("PARTIAL_MLP_{}", screaming_snake(&format!("{slot:?}"))),
            slot.slot(0) as u32,
        );
    }
    for kind in TargetKind::ALL {
        for (position, name) in kind.gpu_params().iter().enumerate() {
            push(
                format!("PARAM_{}_{name}", target_name(kind)),
                position as u32,
            );
        }
    }
    out
}

/// How a buffer is bound (`var<uniform>`, `var<storage, read>`, `var<storage, read_write>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindingSpace {
    /// A uniform block of `size` bytes; `dynamic` when it is bound at a dynamic offset.
    Uniform {
        /// Its size in bytes (the binding's minimum size).
        size: usize,
        /// Bound at a dynamic offset (one block of a larger buffer per dispatch).
        dynamic: bool,
    },
    /// A storage buffer.
    Storage {
        /// `var<storage, read>` rather than `read_write`.
        read_only: bool,
    },
}

/// One binding of group 0 of a program: the host makes the bind group layout entry and the
/// bind group entry from it, the prelude declares it.
#[derive(Clone, Copy, Debug)]
pub struct BindingDecl {
    /// The WGSL variable.
    pub name: &'static str,
    /// Uniform or storage.
    pub space: BindingSpace,
    /// The WGSL type of the variable.
    pub wgsl_type: &'static str,
}

impl BindingDecl {
    /// A uniform block holding `block`.
    pub const fn uniform(name: &'static str, block: &SharedStruct) -> Self {
        Self {
            name,
            space: BindingSpace::Uniform {
                size: block.size,
                dynamic: false,
            },
            wgsl_type: block.wgsl_name,
        }
    }

    /// A uniform `block` bound at a dynamic offset.
    pub const fn dynamic_uniform(name: &'static str, block: &SharedStruct) -> Self {
        Self {
            name,
            space: BindingSpace::Uniform {
                size: block.size,
                dynamic: true,
            },
            wgsl_type: block.wgsl_name,
        }
    }

    /// A read-only storage buffer.
    pub const fn read(name: &'static str, wgsl_type: &'static str) -> Self {
        Self {
            name,
            space: BindingSpace::Storage { read_only: true },
            wgsl_type,
        }
    }

    /// A read-write storage buffer.
    pub const fn read_write(name: &'static str, wgsl_type: &'static str) -> Self {
        Self {
            name,
            space: BindingSpace::Storage { read_only: false },
            wgsl_type,
        }
    }

    /// The WGSL declaration at `binding` of group 0.
    pub fn wgsl(&self, binding: u32) -> String {
        let space = match self.space {
            BindingSpace::Uniform { .. } => "uniform",
            BindingSpace::Storage { read_only: true } => "storage, read",
            BindingSpace::Storage { read_only: false } => "storage, read_write",
        };
        format!(
            "@group(0) @binding({binding}) var<{space}> {}: {};",
            self.name, self.wgsl_type
        )
    }
}

/// The bindings of one program, one enum variant per binding: the variant's position is its
/// binding number, so the host names a binding and never writes its number.
pub trait ProgramBindings: Copy + std::fmt::Debug + 'static {
    /// Every binding, by binding number.
    const ALL: &'static [Self];
    /// The binding's declaration.
    fn decl(self) -> BindingDecl;
    /// The binding number in group 0.
    fn index(self) -> u32;
}

/// Declares the bindings of a program as an enum whose variants are numbered in order, with
/// their [`BindingDecl`]s and doc comments (copied into the WGSL).
macro_rules! shader_bindings {
    ($(
        $(#[doc = $edoc:literal])*
        pub enum $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $variant:ident = $decl:expr,
            )*
        }
    )*) => {
        $(
            $(#[doc = $edoc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            #[repr(u32)]
            pub enum $name {
                $(
                    $(#[doc = $doc])*
                    $variant,
                )*
            }

            impl $name {
                /// Each binding's doc comment, by binding number.
                pub const DOCS: &'static [&'static [&'static str]] = &[$(&[$($doc),*]),*];
            }

            impl ProgramBindings for $name {
                const ALL: &'static [Self] = &[$($name::$variant),*];

                fn decl(self) -> BindingDecl {
                    match self {
                        $($name::$variant => $decl,)*
                    }
                }

                fn index(self) -> u32 {
                    self as u32
                }
            }
        )*
    };
}

shader_bindings! {
    /// The bindings of the 2-D engine (`GpuEngine`).
    pub enum Chain2Binding {
        /// The sampler block.
        Sampler = BindingDecl::uniform("sampler_params", &GpuSamplerParams::SHARED),
        /// The 2-D engine's block.
        Params = BindingDecl::uniform("chain2_params", &GpuChain2Params::SHARED),
        /// The chains.
        Chains = BindingDecl::read_write("chains", "array<Chain>"),
        /// Per chain: 0 while alive, else one past the step at which it diverged.
        DivergedAt = BindingDecl::read_write("diverged_at", "array<u32>"),
        /// Per workgroup: the `PARTIAL_*` sums of its alive chains.
        Partials = BindingDecl::read_write("partials", "array<array<f32, CHAIN_PARTIALS>>"),
        /// Histograms one after another: each one's cells, then its count of chains outside
        /// the grid.
        Histogram = BindingDecl::read_write("histogram", "array<atomic<u32>>"),
        /// Logistic regression data: (x0, x1, label, unused) per point.
        Data = BindingDecl::read("data", "array<vec4<f32>>"),
        /// Per superchain: alive chains, mean θ₁, mean θ₂, Σ(θ₁ − mean)², Σ(θ₂ − mean)².
        SuperchainSums = BindingDecl::read_write(
            "superchain_sums",
            "array<array<f32, SUPERCHAIN_FIELDS>>"
        ),
    }

    /// The bindings of the MLP engine (`MlpGpuEngine`).
    pub enum MlpBinding {
        /// The sampler block.
        Sampler = BindingDecl::uniform("sampler_params", &GpuSamplerParams::SHARED),
        /// The MLP engine's block.
        Params = BindingDecl::uniform("mlp_params", &GpuMlpParams::SHARED),
        /// The four `REGION_*` regions of every chain, each P × chains, chain index fastest.
        State = BindingDecl::read_write("state", "array<f32>"),
        /// Per chain: 0 while alive, else one past the step at which it diverged.
        DivergedAt = BindingDecl::read_write("diverged_at", "array<u32>"),
        /// Training points: (x, y, label, unused).
        Data = BindingDecl::read("data", "array<vec4<f32>>"),
        /// Per workgroup: the `PARTIAL_MLP_*` sums.
        Partials = BindingDecl::read_write("partials", "array<array<f32, MLP_PARTIALS>>"),
        /// Prediction inputs.
        Points = BindingDecl::read("points", "array<vec2<f32>>"),
        /// Prediction outputs: per point, the sums of the class probabilities over the chains
        /// and of their squares, the focus chain's probabilities, and the number of chains
        /// summed (the host divides).
        Predictions = BindingDecl::read_write("predictions", "array<f32>"),
        /// What varies between the dispatches of one submission, at a dynamic offset.
        Slice = BindingDecl::dynamic_uniform("slice", &MlpSlice::SHARED),
    }

    /// The bindings of the sphere engine (`GpuSphereEngine`).
    pub enum SphereBinding {
        /// The sphere engine's block.
        Params = BindingDecl::uniform("sphere_params", &GpuSphereParams::SHARED),
        /// The chains.
        Chains = BindingDecl::read_write("chains", "array<SphereChain>"),
        /// The objects aᵢ (unit length; w unused), `sphere_params.data_n` of them.
        Objects = BindingDecl::read("objects", "array<vec4<f32>>"),
    }
}

/// The override constant of the sampler a pipeline runs (`SamplerKind::gpu_code`).
pub const SPECIALISED_SAMPLER: &str = "SPECIALISED_SAMPLER";
/// The override constant of the target a 2-D pipeline runs (`TargetKind::gpu_code`).
pub const SPECIALISED_TARGET: &str = "SPECIALISED_TARGET";
/// The override constant of the activation an MLP pipeline runs (`Activation::gpu_code`).
pub const SPECIALISED_ACTIVATION: &str = "SPECIALISED_ACTIVATION";
/// The override constant: the schedule may be cyclical (`Features`).
pub const MAY_BE_CYCLICAL: &str = "MAY_BE_CYCLICAL";
/// The override constant: the kinetic energy may be hyperbolic (`Features`).
pub const MAY_BE_HYPERBOLIC: &str = "MAY_BE_HYPERBOLIC";
/// The override constant: ATMC's thermostat may overwrite ξ (`Features`).
pub const MAY_OVERWRITE_XI: &str = "MAY_OVERWRITE_XI";
/// The override constant: the 2-D preset may have synthetic gradient noise (`PipelineKey`).
pub const MAY_HAVE_GRADIENT_NOISE: &str = "MAY_HAVE_GRADIENT_NOISE";

/// One pipeline-overridable constant of a program: the host sets it by [`Self::name`] when it
/// makes a pipeline, the prelude declares it.
#[derive(Clone, Copy, Debug)]
pub struct OverrideDecl {
    /// The WGSL name, one of the `SPECIALISED_*`/`MAY_*` constants of this module.
    pub name: &'static str,
    /// `u32` (a code, set by every pipeline) or `bool` (a feature, default on).
    pub is_bool: bool,
    /// Why it exists, copied into the WGSL.
    pub doc: &'static str,
}

const fn code_override(name: &'static str, doc: &'static str) -> OverrideDecl {
    OverrideDecl {
        name,
        is_bool: false,
        doc,
    }
}

const fn feature_override(name: &'static str, doc: &'static str) -> OverrideDecl {
    OverrideDecl {
        name,
        is_bool: true,
        doc,
    }
}

impl OverrideDecl {
    /// The WGSL declaration: codes have no default (every pipeline sets them); features
    /// default to on, which keeps the run-time tests.
    pub fn wgsl(&self) -> String {
        if self.is_bool {
            format!("// {}\noverride {}: bool = true;", self.doc, self.name)
        } else {
            format!("// {}\noverride {}: u32;", self.doc, self.name)
        }
    }
}

/// The overrides of `shaders/samplers.wgsl`, in every program that steps a sampler.
const SAMPLER_OVERRIDES: [OverrideDecl; 4] = [
    code_override(
        SPECIALISED_SAMPLER,
        "The sampler this pipeline runs (`SamplerKind::gpu_code`): the other samplers' \
         branches are compiled out (llvmpipe runs every branch of a switch it cannot prove \
         uniform).",
    ),
    feature_override(
        MAY_BE_CYCLICAL,
        "With this off (`Features`), the cyclical schedule's cosine is compiled out.",
    ),
    feature_override(
        MAY_BE_HYPERBOLIC,
        "With this off, the hyperbolic kinetic energy's square roots are compiled out.",
    ),
    feature_override(
        MAY_OVERWRITE_XI,
        "With this off, the thermostat's overwrite (as printed) is compiled out.",
    ),
];

const CHAIN2_OVERRIDES: [OverrideDecl; 6] = [
    SAMPLER_OVERRIDES[0],
    SAMPLER_OVERRIDES[1],
    SAMPLER_OVERRIDES[2],
    SAMPLER_OVERRIDES[3],
    code_override(
        SPECIALISED_TARGET,
        "The target this pipeline runs (`TargetKind::gpu_code`).",
    ),
    feature_override(
        MAY_HAVE_GRADIENT_NOISE,
        "With this off (`PipelineKey`), the synthetic gradient noise's Philox block and \
         Box-Muller pair are compiled out.",
    ),
];

const MLP_OVERRIDES: [OverrideDecl; 5] = [
    SAMPLER_OVERRIDES[0],
    SAMPLER_OVERRIDES[1],
    SAMPLER_OVERRIDES[2],
    SAMPLER_OVERRIDES[3],
    code_override(
        SPECIALISED_ACTIVATION,
        "The activation this pipeline runs (`Activation::gpu_code`): its switch sits in the \
         innermost loops.",
    ),
];

/// A compute program of the engines: what its generated prelude declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The 2-D engine (`GpuEngine`).
    Chain2,
    /// The MLP engine (`MlpGpuEngine`).
    Mlp,
    /// The sphere engine (`GpuSphereEngine`).
    Sphere,
}

impl Program {
    /// Every program.
    pub const ALL: [Program; 3] = [Program::Chain2, Program::Mlp, Program::Sphere];

    /// The shared structs the program sees: its parameter blocks and its chain layout.
    pub fn structs(self) -> &'static [SharedStruct] {
        match self {
            Program::Chain2 => &[
                GpuSamplerParams::SHARED,
                GpuChain2Params::SHARED,
                GpuChain::SHARED,
            ],
            Program::Mlp => &[
                GpuSamplerParams::SHARED,
                GpuMlpParams::SHARED,
                MlpSlice::SHARED,
            ],
            Program::Sphere => &[GpuSphereParams::SHARED, GpuSphereChain::SHARED],
        }
    }

    /// Its bindings, by binding number, with their doc comments.
    pub fn bindings(self) -> Vec<(BindingDecl, &'static [&'static str])> {
        fn of<B: ProgramBindings>(
            docs: &[&'static [&'static str]],
        ) -> Vec<(BindingDecl, &'static [&'static str])> {
            B::ALL
                .iter()
                .zip(docs)
                .map(|(b, d)| (b.decl(), *d))
                .collect()
        }
        match self {
            Program::Chain2 => of::<Chain2Binding>(Chain2Binding::DOCS),
            Program::Mlp => of::<MlpBinding>(MlpBinding::DOCS),
            Program::Sphere => of::<SphereBinding>(SphereBinding::DOCS),
        }
    }

    /// The hand-written files of `shaders/` it is made of, after the prelude, in order: the
    /// one list of them (ARCHITECTURE.md's `shaders/` section names the same).
    pub fn files(self) -> &'static [(&'static str, &'static str)] {
        const RNG: (&str, &str) = ("rng.wgsl", include_str!("../../shaders/rng.wgsl"));
        const SAMPLERS: (&str, &str) =
            ("samplers.wgsl", include_str!("../../shaders/samplers.wgsl"));
        match self {
            Program::Chain2 => &[
                RNG,
                ("targets.wgsl", include_str!("../../shaders/targets.wgsl")),
                SAMPLERS,
                ("chain2.wgsl", include_str!("../../shaders/chain2.wgsl")),
                ("engine.wgsl", include_str!("../../shaders/engine.wgsl")),
            ],
            Program::Mlp => &[
                RNG,
                SAMPLERS,
                ("mlp.wgsl", include_str!("../../shaders/mlp.wgsl")),
            ],
            Program::Sphere => &[
                RNG,
                ("sphere.wgsl", include_str!("../../shaders/sphere.wgsl")),
            ],
        }
    }

    /// Its override constants.
    pub fn overrides(self) -> &'static [OverrideDecl] {
        match self {
            Program::Chain2 => &CHAIN2_OVERRIDES,
            Program::Mlp => &MLP_OVERRIDES,
            Program::Sphere => &[],
        }
    }
}

/// `fn tanh_rational` in WGSL from the coefficients of [`crate::math::real::tanh_rational`],
/// evaluated in the same Horner order, so the two sides cannot drift apart.
fn tanh_rational_wgsl() -> String {
    use crate::math::real::{TANH_RATIONAL_ALPHA, TANH_RATIONAL_BETA, TANH_RATIONAL_CLAMP};
    let f = |v: f32| format!("f32({v:?})");
    let mut out = String::from(
        "// `real::tanh_rational`: an odd rational function, ±1 beyond the clamp, with no\n\
         // exponential (a builtin tanh may overflow e^{2x} to NaN).\n\
         fn tanh_rational(a: f32) -> f32 {\n",
    );
    let c = f(TANH_RATIONAL_CLAMP);
    let _ = writeln!(out, "    let x = clamp(a, -{c}, {c});\n    let x2 = x * x;");
    let (top, rest) = TANH_RATIONAL_ALPHA.split_last().expect("coefficients");
    let _ = writeln!(out, "    var p = {};", f(*top));
    for a in rest.iter().rev() {
        let _ = writeln!(out, "    p = p * x2 + {};", f(*a));
    }
    let (top, rest) = TANH_RATIONAL_BETA.split_last().expect("coefficients");
    let _ = writeln!(out, "    var q = {};", f(*top));
    for b in rest.iter().rev() {
        let _ = writeln!(out, "    q = q * x2 + {};", f(*b));
    }
    out.push_str("    return x * p / q;\n}\n");
    out
}

/// The generated part of a program's prelude: its structs, every constant, its overrides,
/// its bindings and `tanh_rational`.
pub fn generated_wgsl(program: Program) -> String {
    let mut out = String::from(
        "// Generated by src/engine/shader_interface.rs: edit the Rust, not this text.\n\n",
    );
    for s in program.structs() {
        out.push_str(&s.wgsl());
        out.push('\n');
    }
    for c in constants() {
        let _ = writeln!(out, "const {}: u32 = {}u;", c.name, c.value);
    }
    // HMC's step-size jitter (`samplers::HMC_STEP_JITTER`), with the bits of the f32.
    let _ = writeln!(
        out,
        "const HMC_STEP_JITTER: f32 = {:?};\nconst HMC_DIVERGENCE: f32 = {:?};",
        crate::math::samplers::HMC_STEP_JITTER,
        crate::math::samplers::HMC_DIVERGENCE
    );
    out.push('\n');
    for o in program.overrides() {
        let _ = writeln!(out, "{}", o.wgsl());
    }
    out.push('\n');
    for (i, (b, doc)) in program.bindings().iter().enumerate() {
        for line in *doc {
            let _ = writeln!(out, "//{line}");
        }
        let _ = writeln!(out, "{}", b.wgsl(i as u32));
    }
    out.push('\n');
    out.push_str(&tanh_rational_wgsl());
    out
}

/// The WGSL a program's shaders start with: [`generated_wgsl`], then the hand-written
/// helpers of `shaders/common.wgsl`. WGSL snippets that use the engines' helper files
/// (tests) put it first too.
pub fn prelude(program: Program) -> String {
    format!(
        "{}\n// ---- shaders/common.wgsl ----\n{}",
        generated_wgsl(program),
        include_str!("../../shaders/common.wgsl")
    )
}

/// The [`prelude`] of `program`, then `generated` (`(name, source)` pieces written at run
/// time, such as a typed target's gradient), then the program's files ([`Program::files`]),
/// each under a comment with its name. WGSL declarations may come in any order.
pub fn compose(program: Program, generated: &[(&str, &str)]) -> String {
    let mut out = prelude(program);
    for (name, source) in generated.iter().chain(program.files()) {
        let _ = write!(out, "\n// ---- shaders/{name} ----\n{source}");
    }
    out
}

fn scalar_wgsl(s: naga::Scalar) -> String {
    match (s.kind, s.width) {
        (naga::ScalarKind::Uint, 4) => "u32".into(),
        (naga::ScalarKind::Sint, 4) => "i32".into(),
        (naga::ScalarKind::Float, 4) => "f32".into(),
        (naga::ScalarKind::Float, 2) => "f16".into(),
        (naga::ScalarKind::Bool, _) => "bool".into(),
        (kind, width) => format!("{kind:?}{}", 8 * width),
    }
}

/// The WGSL spelling of a naga type, as [`WgslType::wgsl`] writes it.
fn naga_type_wgsl(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    let t = &module.types[ty];
    match &t.inner {
        naga::TypeInner::Scalar(s) => scalar_wgsl(*s),
        naga::TypeInner::Vector { size, scalar } => {
            format!("vec{}<{}>", *size as u8, scalar_wgsl(*scalar))
        }
        naga::TypeInner::Array {
            base,
            size: naga::ArraySize::Constant(n),
            ..
        } => format!("array<{}, {n}>", naga_type_wgsl(module, *base)),
        other => t.name.clone().unwrap_or_else(|| format!("{other:?}")),
    }
}

/// Parses WGSL `source` with naga and compares it with what this module declares for
/// `program`: for every struct of [`Program::structs`] the members (name, order, offset,
/// size, type) and the struct's size; for every constant of [`constants`] its type (`u32`)
/// and value; for every binding of [`Program::bindings`] its variable (name, group 0 and
/// number, address space and access, and a uniform's struct), and that no other variable is
/// bound; for every override of [`Program::overrides`] its name and type, and that there is
/// no other. Returns one line per disagreement, naming the member, constant, binding or
/// override; empty when WGSL and Rust agree. A source that does not parse gives one line with
/// naga's error.
pub fn check_wgsl(source: &str, program: Program) -> Vec<String> {
    let module = match naga::front::wgsl::parse_str(source) {
        Ok(m) => m,
        Err(e) => {
            return vec![format!(
                "the WGSL does not parse: {}",
                e.emit_to_string(source)
            )];
        }
    };
    let mut layouter = naga::proc::Layouter::default();
    if let Err(e) = layouter.update(module.to_ctx()) {
        return vec![format!("naga cannot lay out the WGSL's types: {e}")];
    }
    let mut problems = Vec::new();
    for s in program.structs() {
        let found = module.types.iter().find_map(|(handle, t)| match &t.inner {
            naga::TypeInner::Struct { members, span } if t.name.as_deref() == Some(s.wgsl_name) => {
                Some((handle, members, *span))
            }
            _ => None,
        });
        let Some((_, members, span)) = found else {
            problems.push(format!("struct {}: missing from the WGSL", s.wgsl_name));
            continue;
        };
        let name = s.wgsl_name;
        if span as usize != s.size {
            problems.push(format!(
                "{name}: {span} bytes in the WGSL, {} in Rust ({})",
                s.size, s.rust_name
            ));
        }
        for (i, f) in s.fields.iter().enumerate() {
            let Some((j, m)) = members
                .iter()
                .enumerate()
                .find(|(_, m)| m.name.as_deref() == Some(f.name))
            else {
                problems.push(format!("{name}.{}: missing from the WGSL", f.name));
                continue;
            };
            if i != j {
                problems.push(format!(
                    "{name}.{}: member {j} in the WGSL, field {i} in Rust",
                    f.name
                ));
            }
            if m.offset as usize != f.offset {
                problems.push(format!(
                    "{name}.{}: offset {} in the WGSL, {} in Rust",
                    f.name, m.offset, f.offset
                ));
            }
            let (wgsl, rust) = (naga_type_wgsl(&module, m.ty), (f.wgsl_type)());
            if wgsl != rust {
                problems.push(format!(
                    "{name}.{}: type {wgsl} in the WGSL, {rust} in Rust",
                    f.name
                ));
            }
            let size = layouter[m.ty].size as usize;
            if size != f.size {
                problems.push(format!(
                    "{name}.{}: {size} bytes in the WGSL, {} in Rust",
                    f.name, f.size
                ));
            }
        }
        for m in members.iter() {
            let member = m.name.as_deref().unwrap_or("?");
            if !s.fields.iter().any(|f| f.name == member) {
                problems.push(format!("{name}.{member}: in the WGSL only"));
            }
        }
    }
    for c in constants() {
        let Some((_, k)) = module
            .constants
            .iter()
            .find(|(_, k)| k.name.as_deref() == Some(c.name.as_str()))
        else {
            problems.push(format!("{}: missing from the WGSL", c.name));
            continue;
        };
        match module.global_expressions[k.init] {
            naga::Expression::Literal(naga::Literal::U32(v)) if v == c.value => {}
            naga::Expression::Literal(naga::Literal::U32(v)) => {
                problems.push(format!("{}: {v} in the WGSL, {} in Rust", c.name, c.value))
            }
            ref other => problems.push(format!(
                "{}: {other:?} in the WGSL, {}u in Rust",
                c.name, c.value
            )),
        }
    }
    check_bindings(&module, program, &mut problems);
    check_overrides(&module, program, &mut problems);
    problems
}

/// The bindings of `module` against [`Program::bindings`].
fn check_bindings(module: &naga::Module, program: Program, problems: &mut Vec<String>) {
    let bindings = program.bindings();
    for (i, (b, _)) in bindings.iter().enumerate() {
        let name = b.name;
        let Some((_, var)) = module
            .global_variables
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some(name))
        else {
            problems.push(format!("binding {name}: missing from the WGSL"));
            continue;
        };
        match var.binding.as_ref().map(|b| (b.group, b.binding)) {
            Some((0, binding)) if binding == i as u32 => {}
            Some((group, binding)) => problems.push(format!(
                "binding {name}: @group({group}) @binding({binding}) in the WGSL, \
                 @group(0) @binding({i}) in Rust"
            )),
            None => problems.push(format!("binding {name}: not bound in the WGSL")),
        }
        let space = match var.space {
            naga::AddressSpace::Uniform => Some(("uniform", None)),
            naga::AddressSpace::Storage { access } => Some((
                "storage",
                Some(!access.contains(naga::StorageAccess::STORE)),
            )),
            _ => None,
        };
        let expected = match b.space {
            BindingSpace::Uniform { .. } => ("uniform", None),
            BindingSpace::Storage { read_only } => ("storage", Some(read_only)),
        };
        if space != Some(expected) {
            let spell = |s: Option<(&str, Option<bool>)>| match s {
                Some((space, None)) => space.to_owned(),
                Some((space, Some(true))) => format!("{space}, read"),
                Some((space, Some(false))) => format!("{space}, read_write"),
                None => format!("{:?}", var.space),
            };
            problems.push(format!(
                "binding {name}: var<{}> in the WGSL, var<{}> in Rust",
                spell(space),
                spell(Some(expected))
            ));
        }
        if let BindingSpace::Uniform { .. } = b.space {
            let wgsl = naga_type_wgsl(module, var.ty);
            if wgsl != b.wgsl_type {
                problems.push(format!(
                    "binding {name}: type {wgsl} in the WGSL, {} in Rust",
                    b.wgsl_type
                ));
            }
        }
    }
    for (_, var) in module.global_variables.iter() {
        let name = var.name.as_deref().unwrap_or("?");
        if let Some(b) = &var.binding
            && !bindings.iter().any(|(decl, _)| decl.name == name)
        {
            problems.push(format!(
                "binding {name}: @group({}) @binding({}) in the WGSL only",
                b.group, b.binding
            ));
        }
    }
}

/// The override constants of `module` against [`Program::overrides`].
fn check_overrides(module: &naga::Module, program: Program, problems: &mut Vec<String>) {
    let overrides = program.overrides();
    for o in overrides {
        let name = o.name;
        let Some((_, found)) = module
            .overrides
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some(name))
        else {
            problems.push(format!("override {name}: missing from the WGSL"));
            continue;
        };
        let wgsl = naga_type_wgsl(module, found.ty);
        let rust = if o.is_bool { "bool" } else { "u32" };
        if wgsl != rust {
            problems.push(format!(
                "override {name}: type {wgsl} in the WGSL, {rust} in Rust"
            ));
        }
    }
    for (_, found) in module.overrides.iter() {
        let name = found.name.as_deref().unwrap_or("?");
        if !overrides.iter().any(|o| o.name == name) {
            problems.push(format!("override {name}: in the WGSL only"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_table_is_rusts_layout() {
        let f = |s: &SharedStruct, name| s.fields.iter().find(|f| f.name == name).copied().unwrap();
        let chain2 = GpuChain2Params::SHARED;
        assert_eq!(
            f(&chain2, "target_params").offset,
            core::mem::offset_of!(GpuChain2Params, target_params)
        );
        assert_eq!(
            f(&GpuMlpParams::SHARED, "focus_chain").offset,
            core::mem::offset_of!(GpuMlpParams, focus_chain)
        );
        assert_eq!((f(&chain2, "hist_u").wgsl_type)(), "array<vec4<u32>, 3>");
        assert_eq!(
            (f(&GpuMlpParams::SHARED, "sizes").wgsl_type)(),
            "array<vec4<u32>, 2>"
        );
        assert_eq!(<[f32; 2] as WgslType>::wgsl(), "vec2<f32>");
        assert_eq!(GpuSamplerParams::SHARED.size, 80);
        assert_eq!(GpuChain2Params::SHARED.size, 176);
        assert_eq!(GpuMlpParams::SHARED.size, 64);
        assert_eq!(GpuSphereParams::SHARED.size, 48);
        assert_eq!(GpuChain::SHARED.size, 24);
    }

    #[test]
    fn constant_names_are_unique_and_codes_dense() {
        let all = constants();
        let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "duplicate constant names");
        // Every enum family numbers its members 0, 1, 2, … so the shaders' switch defaults
        // and the host's arrays line up.
        for prefix in ["SAMPLER_", "TARGET_", "STREAM_", "ACT_", "REGION_", "AXIS_"] {
            let codes: Vec<u32> = all
                .iter()
                .filter(|c| c.name.starts_with(prefix))
                .map(|c| c.value)
                .collect();
            assert_eq!(
                codes,
                (0..codes.len() as u32).collect::<Vec<_>>(),
                "{prefix}"
            );
        }
    }

    /// Each family's constants fit the uniform, and `shaders/targets.wgsl` reads every one
    /// of them (a constant the shader never reads is a gradient that drifted from the host's).
    #[test]
    fn every_target_constant_fits_and_is_read_by_the_shader() {
        let wgsl = include_str!("../../shaders/targets.wgsl");
        for kind in TargetKind::ALL {
            let params = kind.gpu_params();
            assert!(params.len() <= TARGET_PARAMS, "{kind:?}");
            assert_eq!(
                params.is_empty(),
                kind == TargetKind::Expression,
                "{kind:?}: only a formula passes its own parameters"
            );
            for name in params {
                let constant = format!("PARAM_{}_{name}", target_name(kind));
                assert!(wgsl.contains(&constant), "{constant} is never read");
            }
        }
    }

    #[test]
    fn preludes_match_rust() {
        for program in Program::ALL {
            assert_eq!(
                check_wgsl(&prelude(program), program),
                Vec::<String>::new(),
                "{program:?}"
            );
        }
    }
}
