// The uniform parameters of a dispatch: src/engine/gpu.rs `GpuParams` has the same layout.

struct Params {
    seed_lo: u32,
    seed_hi: u32,
    step0: u32,
    steps: u32,
    chains: u32,
    sampler_kind: u32,
    target_kind: u32,
    flags: u32,
    h: f32,
    mass: f32,
    friction_floor: f32,
    temperature: f32,
    speed: f32,
    friction_sign: f32,
    noise_mass: f32,
    divergence_bound: f32,
    sghmc_friction: f32,
    sghmc_noise_estimate: f32,
    sgnht_diffusion: f32,
    noise_kappa: f32,
    noise_sigma0: f32,
    noise_sigma1: f32,
    cycle_len: u32,
    explore_fraction: f32,
    target_params: array<vec4<f32>, 2>,
    // Per histogram: (origin x, origin y, scale x, scale y).
    hist_f: array<vec4<f32>, 3>,
    // Per histogram: (nx, ny, axes x | y << 8, offset of its first cell).
    hist_u: array<vec4<u32>, 3>,
    hist_count: u32,
    data_n: u32,
    batch_size: u32,
    groups_x: u32,
    inv_mass: f32,
    // MLP posteriors (mlp.wgsl): weight layers, activation, parameters P per chain.
    mlp_layers: u32,
    mlp_activation: u32,
    mlp_params: u32,
    // Units per layer, from the 2 inputs to the classes.
    mlp_sizes: array<vec4<u32>, 2>,
    mlp_prior_precision: f32,
    // Prediction: points, chains averaged over, the chain whose own map is drawn.
    mlp_points: u32,
    mlp_predict_chains: u32,
    mlp_focus_chain: u32,
}

const SAMPLER_ATMC: u32 = 0u;
const SAMPLER_SGLD: u32 = 1u;
const SAMPLER_SGHMC: u32 = 2u;
const SAMPLER_SGNHT: u32 = 3u;
const SAMPLER_SGD: u32 = 4u;

const FLAG_XI_OVERWRITE: u32 = 1u;
const FLAG_SGNHT_SHARED: u32 = 2u;

const TARGET_GAUSSIAN: u32 = 0u;
const TARGET_BANANA: u32 = 1u;
const TARGET_DONUT: u32 = 2u;
const TARGET_GMM25: u32 = 3u;
const TARGET_FUNNEL: u32 = 4u;
const TARGET_DOUBLE_WELL: u32 = 5u;
const TARGET_LOGISTIC: u32 = 6u;

@group(0) @binding(0) var<uniform> params: Params;

fn target_param(i: u32) -> f32 {
    return params.target_params[i / 4u][i % 4u];
}
