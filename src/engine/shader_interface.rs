//! The host–shader interface, written once, in Rust.
//!
//! Everything the host writes and a WGSL shader reads with a shared meaning is declared here,
//! and the WGSL side is generated from it, so the two cannot drift apart:
//!
//! - **Structs.** [`GpuParams`] (the uniform block `Params` of both engines), [`MlpSlice`]
//!   (`Slice`, the per-dispatch uniform of the MLP engine), [`GpuChain`] (`Chain`, one 2-D
//!   chain in a storage buffer) and [`GpuSphereChain`] (`SphereChain`, the sphere engine's) are declared by `shader_structs!` (below): each field is written once,
//!   with its Rust type, and the WGSL type follows from it (`u32`, `f32`; `[S; 2..=4]` is
//!   `vecN<S>`; `[[S; 4]; N]` is `array<vec4<S>, N>`). The same macro checks at compile time
//!   that every field sits at the offset WGSL gives it and that arrays in a uniform have a
//!   16-byte stride, so a field added in the wrong place fails the build, not a GPU run.
//! - **Constants.** [`constants`] lists every `const NAME: u32 = Nu;` of the generated WGSL,
//!   each taken from the Rust value the host uses: the enum codes (`SamplerKind::gpu_code`,
//!   `TargetKind`, `Stream`, `Activation`, [`MlpRegion`], [`Axis::index`]), the flag bits,
//!   workgroup sizes and buffer strides, and the MLP shader's array bounds.
//!
//! [`prelude`] is the generated WGSL (structs, constants, the `params` binding) followed by
//! the hand-written helpers of `shaders/params.wgsl`; [`compose`] puts it in front of an
//! engine's `.wgsl` files. [`check_wgsl`] parses WGSL with naga and lists every place where
//! it disagrees with this module; `tests/shader_interface.rs` runs it on both engines'
//! shaders and on deliberately altered copies. Constants only the shaders use (Philox's
//! multipliers, SELU's λ and α, π) stay in the `.wgsl` files.

use super::Axis;
use super::mlp::MAX_LAYERS;
use crate::math::SamplerKind;
use crate::math::mlp::{Activation, MAX_ACTIVATIONS, MAX_CLASSES, MAX_HIDDEN_LAYERS, MAX_WIDTH};
use crate::math::rng::Stream;
use crate::math::targets::TargetKind;
use bytemuck::{Pod, Zeroable};
use std::fmt::Write as _;
use std::sync::LazyLock;
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
    /// The uniform parameters of a dispatch (`Params`, bound as `params` at
    /// [`PARAMS_BINDING`]). The 2-D engine and the MLP engine share it, so the sampler fields
    /// have one host-side writer (`GpuParams::for_sampler`).
    pub struct GpuParams as "Params" in Uniform {
        /// Low word of the run seed (the Philox key).
        pub seed_lo: u32,
        /// High word of the run seed.
        pub seed_hi: u32,
        /// Global index of the dispatch's first step.
        pub step0: u32,
        /// Steps of this dispatch (2-D engine).
        pub steps: u32,
        /// Number of chains.
        pub chains: u32,
        /// `SAMPLER_*`: `SamplerKind::gpu_code`.
        pub sampler_kind: u32,
        /// `TARGET_*`: `TargetKind::gpu_code`.
        pub target_kind: u32,
        /// `FLAG_*` bits.
        pub flags: u32,
        /// Peak step size h₀ (`SamplerParams::h`).
        pub h: f32,
        /// Mass m.
        pub mass: f32,
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
        /// SGHMC's friction C.
        pub sghmc_friction: f32,
        /// SGHMC's gradient-noise estimate B̂.
        pub sghmc_noise_estimate: f32,
        /// SGNHT's diffusion A.
        pub sgnht_diffusion: f32,
        /// State dependence κ of the synthetic gradient noise.
        pub noise_kappa: f32,
        /// Standard deviation of the synthetic gradient noise, coordinate 0.
        pub noise_sigma0: f32,
        /// Standard deviation of the synthetic gradient noise, coordinate 1.
        pub noise_sigma1: f32,
        /// Cycle length of the cyclical schedule; 0 for a constant step.
        pub cycle_len: u32,
        /// Fraction of a cycle spent exploring.
        pub explore_fraction: f32,
        /// The target's f32 constants (`Target::gpu_constants`), read by `target_param`.
        pub target_params: [[f32; 4]; 2],
        /// Per histogram: origin x, origin y, scale x, scale y.
        pub hist_f: [[f32; 4]; super::MAX_HISTOGRAMS],
        /// Per histogram: nx, ny, axes (x | y << HIST_AXIS_SHIFT), offset of its first cell.
        pub hist_u: [[u32; 4]; super::MAX_HISTOGRAMS],
        /// Histograms to fill.
        pub hist_count: u32,
        /// Size N of the data set.
        pub data_n: u32,
        /// Minibatch size n.
        pub batch_size: u32,
        /// Workgroups along x of a 2-D dispatch.
        pub groups_x: u32,
        /// 1 / m.
        pub inv_mass: f32,
        /// MLP posteriors: weight layers.
        pub mlp_layers: u32,
        /// MLP posteriors: `ACT_*`.
        pub mlp_activation: u32,
        /// MLP posteriors: parameters P per chain.
        pub mlp_params: u32,
        /// MLP posteriors: units per layer, from the 2 inputs to the classes.
        pub mlp_sizes: [[u32; 4]; 2],
        /// MLP posteriors: prior precision 1/σ².
        pub mlp_prior_precision: f32,
        /// Prediction: points.
        pub mlp_points: u32,
        /// Prediction: chains averaged over.
        pub mlp_predict_chains: u32,
        /// Prediction: the chain whose own map is drawn.
        pub mlp_focus_chain: u32,
        /// Divergence bound on |θ|.
        pub theta_bound: f32,
        /// The sphere engine: heavy-ball momentum μ.
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

/// The binding of `params` in group 0, in both engines.
pub const PARAMS_BINDING: u32 = 0;

/// `GpuParams::flags`: ATMC's thermostat overwrites ξ (as printed) instead of accumulating.
pub const FLAG_XI_OVERWRITE: u32 = 1 << 0;
/// `GpuParams::flags`: SGNHT with one ξ shared by all coordinates.
pub const FLAG_SGNHT_SHARED: u32 = 1 << 1;

/// Invocations per workgroup of the 2-D engine (`CHAIN_WORKGROUP`).
pub const CHAIN_WORKGROUP: u32 = 256;
/// Moments per workgroup of the 2-D engine (`partials` in `shaders/engine.wgsl`): alive,
/// diverged, Σθ (2), Σθθᵀ (3), Σ pK'(p) (2), Σξ (2), unused.
pub const CHAIN_PARTIALS: u32 = 12;
/// Invocations per workgroup of the MLP engine (`MLP_WORKGROUP`).
pub const MLP_WORKGROUP: u32 = 64;
/// Partial sums per workgroup of the MLP engine (`partials` in `shaders/mlp.wgsl`): alive,
/// diverged, then per weight layer Σ pK'(p) and Σ ξ.
pub const MLP_PARTIALS: u32 = 2 + 2 * MAX_LAYERS as u32;
/// Bits of each axis code in `hist_u[i].z` (x in the low bits, y above).
pub const HIST_AXIS_SHIFT: u32 = 8;

const _: () = assert!(
    MAX_LAYERS == MAX_HIDDEN_LAYERS + 1,
    "the MLP engine reports every weight layer"
);

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

/// The prefixes of the generated enum-code families; `shaders/*.wgsl` must declare no
/// constant that starts with one of them.
pub const GENERATED_PREFIXES: &[&str] = &[
    "SAMPLER_", "FLAG_", "TARGET_", "STREAM_", "ACT_", "REGION_", "AXIS_",
];

fn sampler_name(kind: SamplerKind) -> &'static str {
    match kind {
        SamplerKind::Atmc => "ATMC",
        SamplerKind::Sgld => "SGLD",
        SamplerKind::Sghmc => "SGHMC",
        SamplerKind::Sgnht => "SGNHT",
        SamplerKind::Sgd => "SGD",
    }
}

fn target_name(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Gaussian => "GAUSSIAN",
        TargetKind::Banana => "BANANA",
        TargetKind::Donut => "DONUT",
        TargetKind::Gmm25 => "GMM25",
        TargetKind::Funnel => "FUNNEL",
        TargetKind::DoubleWell => "DOUBLE_WELL",
        TargetKind::Logistic => "LOGISTIC",
    }
}

fn stream_name(stream: Stream) -> &'static str {
    match stream {
        Stream::Injected => "INJECTED",
        Stream::GradientNoise => "GRADIENT_NOISE",
        Stream::Minibatch => "MINIBATCH",
        Stream::Init => "INIT",
        Stream::Exact => "EXACT",
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
    push("MAX_WIDTH".into(), MAX_WIDTH as u32);
    push("MAX_CLASSES".into(), MAX_CLASSES as u32);
    push("MAX_LAYERS".into(), MAX_LAYERS as u32);
    push("MAX_ACTIVATIONS".into(), MAX_ACTIVATIONS as u32);
    out
}

/// The generated part of the prelude: structs, constants and the `params` binding.
pub fn generated_wgsl() -> String {
    let mut out = String::from(
        "// Generated by src/engine/shader_interface.rs: edit the Rust, not this text.\n\n",
    );
    for s in SHARED_STRUCTS {
        out.push_str(&s.wgsl());
        out.push('\n');
    }
    for c in constants() {
        let _ = writeln!(out, "const {}: u32 = {}u;", c.name, c.value);
    }
    let _ = writeln!(
        out,
        "\n@group(0) @binding({PARAMS_BINDING}) var<uniform> params: {};",
        GpuParams::SHARED.wgsl_name
    );
    out
}

/// The WGSL every shader of the engines starts with: [`generated_wgsl`], then the
/// hand-written helpers of `shaders/params.wgsl`. WGSL snippets that use the engines' helper
/// files (tests) put it first too.
pub fn prelude() -> &'static str {
    static PRELUDE: LazyLock<String> = LazyLock::new(|| {
        format!(
            "{}\n// ---- shaders/params.wgsl ----\n{}",
            generated_wgsl(),
            include_str!("../../shaders/params.wgsl")
        )
    });
    &PRELUDE
}

/// [`prelude`] followed by the `(name, source)` files in order, each under a comment with
/// its name.
pub fn compose(files: &[(&str, &str)]) -> String {
    let mut out = prelude().to_owned();
    for (name, source) in files {
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

/// Parses WGSL `source` with naga and compares it with this module: for every struct of
/// [`SHARED_STRUCTS`] the members (name, order, offset, size, type) and the struct's size,
/// and for every constant of [`constants`] its type (`u32`) and value. Returns one line per
/// disagreement, naming the member or constant; empty when WGSL and Rust agree. A source
/// that does not parse gives one line with naga's error.
pub fn check_wgsl(source: &str) -> Vec<String> {
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
    for s in SHARED_STRUCTS {
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
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_table_is_rusts_layout() {
        let f = |name| {
            GpuParams::SHARED
                .fields
                .iter()
                .find(|f| f.name == name)
                .copied()
                .unwrap()
        };
        assert_eq!(
            f("target_params").offset,
            core::mem::offset_of!(GpuParams, target_params)
        );
        assert_eq!(
            f("mlp_focus_chain").offset,
            core::mem::offset_of!(GpuParams, mlp_focus_chain)
        );
        assert_eq!((f("hist_u").wgsl_type)(), "array<vec4<u32>, 3>");
        assert_eq!((f("mlp_sizes").wgsl_type)(), "array<vec4<u32>, 2>");
        assert_eq!(<[f32; 2] as WgslType>::wgsl(), "vec2<f32>");
        assert_eq!(GpuParams::SHARED.size, 320);
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

    #[test]
    fn prelude_matches_rust() {
        assert_eq!(check_wgsl(prelude()), Vec::<String>::new());
    }
}
