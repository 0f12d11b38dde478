//! Bayesian multilayer perceptrons on 2-D classification data (MATH.md §4, §7): every chain is
//! one network, and the ensemble of chains is the posterior.
//!
//! L(θ) = |θ|²/(2σ²) + Σᵢ CE(f_θ(xᵢ), yᵢ), a Gaussian prior and the softmax likelihood. The
//! stochastic gradient is ∇log prior + (N/n) Σ over a minibatch each chain draws for itself.
//! The sampler updates are the per-coordinate ones of [`SamplerParams`], unchanged: every
//! weight has its own p and ξ. `shaders/mlp.wgsl` mirrors this file function by function.

// Index loops on purpose: they read like the WGSL they are checked against.
#![allow(clippy::needless_range_loop)]

use super::datasets::{DataSpec, Dataset};
use super::real::{Lanes, Real};
use super::rng::{RngCounter, Stream, index_below};
use super::samplers::{SamplerKind, SamplerParams, kinetic_derivatives};
use super::schedule::Schedule;
use serde::{Deserialize, Serialize};

/// Widest hidden layer.
pub const MAX_WIDTH: usize = 32;
/// Most hidden layers.
pub const MAX_HIDDEN_LAYERS: usize = 3;
/// Most classes of a data set.
pub const MAX_CLASSES: usize = 8;
const _: () = assert!(
    MAX_CLASSES <= MAX_WIDTH,
    "deltas of the logits fit the hidden buffer"
);
/// Most activations one forward pass keeps: the input, every hidden layer and the logits
/// (`MAX_ACTIVATIONS` in the WGSL, generated from this).
pub const MAX_ACTIVATIONS: usize = 2 + MAX_HIDDEN_LAYERS * MAX_WIDTH + MAX_CLASSES;

/// SELU's λ and α (Klambauer et al. 2017).
const SELU_LAMBDA: f32 = 1.050_701;
const SELU_ALPHA: f32 = 1.673_263_2;

/// Hidden-layer nonlinearity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// tanh.
    #[default]
    Tanh,
    /// max(0, x).
    Relu,
    /// Scaled exponential linear unit.
    Selu,
}

impl Activation {
    /// Every activation, for menus.
    pub const ALL: [Activation; 3] = [Activation::Tanh, Activation::Relu, Activation::Selu];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Tanh => "tanh",
            Activation::Relu => "ReLU",
            Activation::Selu => "SELU",
        }
    }

    /// The code of the override constant `SPECIALISED_ACTIVATION` and of the generated WGSL
    /// `ACT_*`.
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }

    /// The activation of a pre-activation.
    #[inline(always)]
    pub fn apply(self, a: f32) -> f32 {
        match self {
            // Rational, as on the GPU: no exponential (and no NaN for large arguments).
            Activation::Tanh => super::real::tanh_rational(a),
            Activation::Relu => a.max(0.0),
            Activation::Selu => {
                if a > 0.0 {
                    SELU_LAMBDA * a
                } else {
                    SELU_LAMBDA * SELU_ALPHA * (a.min(0.0).exp() - 1.0)
                }
            }
        }
    }

    /// The derivative, written in terms of the output y = f(a), so the backward pass needs
    /// only the stored activations.
    #[inline(always)]
    pub fn derivative_from_output(self, y: f32) -> f32 {
        match self {
            Activation::Tanh => 1.0 - y * y,
            Activation::Relu => {
                if y > 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            // y = λα(eᵃ − 1) for a ≤ 0, so f'(a) = λαeᵃ = y + λα.
            Activation::Selu => {
                if y > 0.0 {
                    SELU_LAMBDA
                } else {
                    y + SELU_LAMBDA * SELU_ALPHA
                }
            }
        }
    }
}

/// Layer sizes and nonlinearity: 2 inputs, 1–3 hidden layers of up to 32 units, a softmax
/// over the classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Architecture {
    /// Units per layer, from the 2 inputs to the classes.
    pub sizes: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
}

/// Where one weight layer's parameters sit in the flat parameter vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerLayout {
    /// Inputs of the layer.
    pub inputs: usize,
    /// Outputs of the layer.
    pub outputs: usize,
    /// Offset of the weight matrix (row-major, `outputs × inputs`).
    pub weights: usize,
    /// Offset of the biases.
    pub biases: usize,
}

impl Architecture {
    /// An architecture; `hidden` must have 1–3 layers of 1–32 units and `classes` 2–8.
    pub fn new(hidden: &[u32], classes: u32, activation: Activation) -> Result<Self, String> {
        if hidden.is_empty() || hidden.len() > MAX_HIDDEN_LAYERS {
            return Err(format!(
                "hidden = {hidden:?}: an MLP has 1 to {MAX_HIDDEN_LAYERS} hidden layers"
            ));
        }
        if let Some(w) = hidden.iter().find(|&&w| w == 0 || w as usize > MAX_WIDTH) {
            return Err(format!(
                "hidden layer of {w} units: allowed 1 to {MAX_WIDTH}"
            ));
        }
        if !(2..=MAX_CLASSES as u32).contains(&classes) {
            return Err(format!("{classes} classes: allowed 2 to {MAX_CLASSES}"));
        }
        let mut sizes = vec![2];
        sizes.extend(hidden.iter().map(|&w| w as usize));
        sizes.push(classes as usize);
        Ok(Self { sizes, activation })
    }

    /// Number of weight layers.
    pub fn layers(&self) -> usize {
        self.sizes.len() - 1
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        *self.sizes.last().expect("an output layer")
    }

    /// The layout of weight layer `l`.
    pub fn layer(&self, l: usize) -> LayerLayout {
        let mut offset = 0;
        for k in 0..l {
            offset += (self.sizes[k] + 1) * self.sizes[k + 1];
        }
        let (inputs, outputs) = (self.sizes[l], self.sizes[l + 1]);
        LayerLayout {
            inputs,
            outputs,
            weights: offset,
            biases: offset + inputs * outputs,
        }
    }

    /// Parameters (weights and biases) of each weight layer, input side first.
    pub fn layer_params(&self) -> Vec<usize> {
        (0..self.layers())
            .map(|l| (self.sizes[l] + 1) * self.sizes[l + 1])
            .collect()
    }

    /// Total number of parameters P.
    pub fn params(&self) -> usize {
        let last = self.layer(self.layers() - 1);
        last.biases + last.outputs
    }

    /// The weight layer a parameter belongs to.
    pub fn layer_of(&self, param: usize) -> usize {
        (0..self.layers())
            .find(|&l| {
                let layout = self.layer(l);
                param < layout.biases + layout.outputs
            })
            .unwrap_or(self.layers() - 1)
    }

    /// A readable name: `W2[3,1]` (layer 2, unit 3, input 1) or `b1[5]`.
    pub fn param_name(&self, param: usize) -> String {
        let l = self.layer_of(param);
        let layout = self.layer(l);
        if param < layout.biases {
            let k = param - layout.weights;
            format!("W{}[{},{}]", l + 1, k / layout.inputs, k % layout.inputs)
        } else {
            format!("b{}[{}]", l + 1, param - layout.biases)
        }
    }

    /// `2-16-16-2 tanh`.
    pub fn describe(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|s| s.to_string()).collect();
        format!("{} {}", sizes.join("-"), self.activation.name())
    }
}

/// A network posterior as written in a preset: data set, architecture, prior, minibatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpSpec {
    /// The data set.
    #[serde(default)]
    pub data: DataSpec,
    /// Units of each hidden layer (1–3 layers of 1–32).
    #[serde(default = "d_hidden")]
    pub hidden: Vec<u32>,
    /// Hidden nonlinearity.
    #[serde(default)]
    pub activation: Activation,
    /// Standard deviation σ of the Gaussian prior on every weight and bias.
    #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
    pub prior_scale: f64,
    /// Minibatch size n drawn by each chain at each step (0: the full training set).
    #[serde(
        default = "d_batch",
        deserialize_with = "crate::math::ranges::de_batch"
    )]
    pub batch_size: u32,
    /// How many training points the likelihood uses: the first n of the same set (drawn
    /// points included), the gradient scaled by n; absent: all of them. The others stay in
    /// the data set and on the map, marked as unused, so the predictive can be watched
    /// contracting where data arrive.
    #[serde(
        default,
        deserialize_with = "crate::math::ranges::de_data_used",
        skip_serializing_if = "Option::is_none"
    )]
    pub data_used: Option<u32>,
}

fn d_hidden() -> Vec<u32> {
    vec![16, 16]
}
fn d_batch() -> u32 {
    32
}

impl Default for MlpSpec {
    fn default() -> Self {
        Self {
            data: DataSpec::default(),
            hidden: d_hidden(),
            activation: Activation::Tanh,
            prior_scale: 1.0,
            batch_size: d_batch(),
            data_used: None,
        }
    }
}

impl MlpSpec {
    /// Builds the data set (a CSV file's text from `read_csv`, see [`DataSpec::build`]) and
    /// the posterior over the network's weights.
    pub fn build(
        &self,
        read_csv: super::datasets::ReadCsv,
    ) -> Result<(MlpPosterior, Dataset), String> {
        let data = self.data.build(read_csv)?;
        let arch = Architecture::new(&self.hidden, data.classes, self.activation)?;
        let available = data.train_x.len();
        let used = match self.data_used {
            Some(n) if n as usize > available => {
                return Err(format!(
                    "data_used = {n} is out of range: the data set has {available} training \
                     points (allowed 1 to {available})"
                ));
            }
            Some(n) => n as usize,
            None => available,
        };
        let mut likelihood = data.clone();
        likelihood.train_x.truncate(used);
        likelihood.train_y.truncate(used);
        let posterior =
            MlpPosterior::new(arch, &likelihood, self.prior_scale as f32, self.batch_size);
        Ok((posterior, data))
    }
}

/// The posterior over one network's weights: architecture, data, prior and minibatch size.
#[derive(Clone, Debug, PartialEq)]
pub struct MlpPosterior {
    /// The network.
    pub arch: Architecture,
    /// Training inputs.
    pub inputs: Vec<[f32; 2]>,
    /// Training labels.
    pub labels: Vec<u32>,
    /// 1/σ² of the Gaussian prior.
    pub prior_precision: f32,
    /// Minibatch size n (equal to N for full batch).
    pub batch_size: u32,
}

/// Activations of one forward pass, reused across examples, and the scratch of the batched
/// gradient.
#[derive(Clone, Debug)]
pub struct Workspace {
    activations: [f32; MAX_ACTIVATIONS],
    delta: [f32; MAX_WIDTH],
    delta_prev: [f32; MAX_WIDTH],
    batch: BatchWorkspace,
}

impl Default for Workspace {
    fn default() -> Self {
        Self {
            activations: [0.0; MAX_ACTIVATIONS],
            delta: [0.0; MAX_WIDTH],
            delta_prev: [0.0; MAX_WIDTH],
            batch: BatchWorkspace::default(),
        }
    }
}

/// Examples in one vector of the batched gradient (one AVX-512 register, two AVX2 ones).
pub const LANES: usize = 16;

/// One vector of [`LANES`] examples, aligned to a cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(64))]
pub struct V(pub [f32; LANES]);

impl V {
    const ZERO: V = V([0.0; LANES]);
}

/// Feature-major rows of one minibatch: activations of every layer (inputs first), errors
/// of the current layer and of the one below, labels. A few tens of KiB: it stays in the
/// core's L1/L2 cache while the network's steps run.
#[derive(Clone, Debug, Default)]
pub struct BatchWorkspace {
    acts: Vec<V>,
    delta: Vec<V>,
    delta_prev: Vec<V>,
    labels: Vec<V>,
}

impl MlpPosterior {
    /// The posterior of `arch` on the training part of `data` with prior scale σ and
    /// minibatch size `batch_size` (0 or ≥ N: full batch).
    pub fn new(arch: Architecture, data: &Dataset, prior_scale: f32, batch_size: u32) -> Self {
        let n = data.train_x.len() as u32;
        Self {
            arch,
            inputs: data.train_x.clone(),
            labels: data.train_y.clone(),
            prior_precision: 1.0 / (prior_scale * prior_scale),
            batch_size: if batch_size == 0 {
                n
            } else {
                batch_size.min(n)
            },
        }
    }

    /// Number of parameters.
    pub fn params(&self) -> usize {
        self.arch.params()
    }

    /// Runs the network on `x`, leaving every layer's output in `ws` (the logits last), and
    /// returns the offset of the logits.
    #[inline]
    fn forward_into(&self, theta: &[f32], x: [f32; 2], ws: &mut Workspace) -> usize {
        let act = self.arch.activation;
        ws.activations[0] = x[0];
        ws.activations[1] = x[1];
        let mut input = 0;
        let layers = self.arch.layers();
        for l in 0..layers {
            let layout = self.arch.layer(l);
            let output = input + layout.inputs;
            let (before, after) = ws.activations.split_at_mut(output);
            let inputs = &before[input..];
            let sums = &mut after[..layout.outputs];
            layer_sums(theta, layout, inputs, sums);
            if l + 1 < layers {
                for a in sums.iter_mut() {
                    *a = act.apply(*a);
                }
            }
            input = output;
        }
        input
    }

    /// Class probabilities (softmax of the logits) of the network `theta` at `x`.
    pub fn predict(&self, theta: &[f32], x: [f32; 2], ws: &mut Workspace, probs: &mut [f32]) {
        let logits = self.forward_into(theta, x, ws);
        softmax(&ws.activations[logits..logits + self.arch.classes()], probs);
    }

    /// Adds ∇θ CE(f_θ(x), y) to `acc`: one backward pass.
    #[inline]
    fn accumulate_example(
        &self,
        theta: &[f32],
        x: [f32; 2],
        y: u32,
        ws: &mut Workspace,
        acc: &mut [f32],
    ) {
        let logits = self.forward_into(theta, x, ws);
        let k = self.arch.classes();
        // ∂CE/∂logits = softmax − onehot(y).
        let mut probs = [0.0f32; MAX_CLASSES];
        softmax(&ws.activations[logits..logits + k], &mut probs[..k]);
        for c in 0..k {
            ws.delta[c] = probs[c] - if c as u32 == y { 1.0 } else { 0.0 };
        }
        let act = self.arch.activation;
        let mut output = logits;
        for l in (0..self.arch.layers()).rev() {
            let layout = self.arch.layer(l);
            let input = output - layout.inputs;
            for o in 0..layout.outputs {
                let d = ws.delta[o];
                acc[layout.biases + o] += d;
                let row = &mut acc[layout.weights + o * layout.inputs..][..layout.inputs];
                for (g, v) in row.iter_mut().zip(&ws.activations[input..output]) {
                    *g += d * v;
                }
            }
            if l > 0 {
                back_sums(
                    theta,
                    layout,
                    &ws.delta[..layout.outputs],
                    &mut ws.delta_prev,
                );
                for (d, y) in ws.delta_prev[..layout.inputs]
                    .iter_mut()
                    .zip(&ws.activations[input..output])
                {
                    *d *= act.derivative_from_output(*y);
                }
                ws.delta[..layout.inputs].copy_from_slice(&ws.delta_prev[..layout.inputs]);
            }
            output = input;
        }
    }

    /// The training example of minibatch slot `j` for the chain and step of `rng`: drawn with
    /// replacement from the minibatch stream (four indices per Philox call), or `j` itself
    /// for full batches. The logistic target draws its batches the same way.
    #[inline(always)]
    pub fn batch_index(&self, j: u32, rng: &RngCounter) -> usize {
        let n = self.inputs.len() as u32;
        if self.batch_size >= n {
            j as usize
        } else {
            let bits = rng.bits4(Stream::Minibatch, j / 4);
            index_below(bits[(j % 4) as usize], n) as usize
        }
    }

    /// g̃ = θ/σ² + (N/n) Σ_batch ∇CE: the stochastic gradient of the chain and step of `rng`,
    /// computed by [`MlpPosterior::batch_gradient`] over the whole minibatch at once.
    #[inline(always)]
    pub fn stochastic_gradient(
        &self,
        theta: &[f32],
        rng: &RngCounter,
        ws: &mut Workspace,
        grad: &mut [f32],
    ) {
        self.batch_gradient(theta, rng, &mut ws.batch, grad);
        let scale = self.inputs.len() as f32 / self.batch_size as f32;
        for (g, t) in grad.iter_mut().zip(theta) {
            *g = *t * self.prior_precision + *g * scale;
        }
    }

    /// The same stochastic gradient one example at a time ([`MlpPosterior::accumulate_example`],
    /// summed over the minibatch in slot order): the plain reference the batched gradient is
    /// tested against.
    pub fn stochastic_gradient_per_example(
        &self,
        theta: &[f32],
        rng: &RngCounter,
        ws: &mut Workspace,
        grad: &mut [f32],
    ) {
        grad.fill(0.0);
        for j in 0..self.batch_size {
            let i = self.batch_index(j, rng);
            self.accumulate_example(theta, self.inputs[i], self.labels[i], ws, grad);
        }
        let scale = self.inputs.len() as f32 / self.batch_size as f32;
        for (g, t) in grad.iter_mut().zip(theta) {
            *g = *t * self.prior_precision + *g * scale;
        }
    }

    /// `grad = Σ_batch ∇CE` over the minibatch of the chain and step of `rng`, every layer
    /// as small matrix products over the examples (MATH.md §7, "batched gradient"). Rows are
    /// feature-major: each unit holds the minibatch as [`LANES`]-wide vectors, padded with
    /// examples of zero input and zero error. Forward: `A_out = f(W A_in + b)`, each output
    /// summed over its inputs in the order i = 0, 1, … with fused multiply-adds. Backward:
    /// `Δ_in = (Wᵀ Δ_out) ⊙ f'(A_in)` summed over outputs in the order o = 0, 1, …, and
    /// `∇W = Δ_out A_inᵀ`, `∇b = Σ_e Δ_out`: each summed over the examples lane by lane (lane
    /// l holds examples l, l + 16, l + 32, … in that order) and the 16 lanes then added in a
    /// fixed tree ([`hsum`]). The order depends on neither the thread count nor the
    /// instruction set: `mul_add` rounds once on every path.
    #[inline(always)]
    pub fn batch_gradient(
        &self,
        theta: &[f32],
        rng: &RngCounter,
        ws: &mut BatchWorkspace,
        grad: &mut [f32],
    ) {
        // Every entry of `grad` is written once, by the kernel of its layer.
        let arch = &self.arch;
        let layers = arch.layers();
        let k = arch.classes();
        let b = self.batch_size as usize;
        // Pairs of vectors: the kernels below step over two at a time.
        let nv = b.div_ceil(2 * LANES) * 2;
        let rows: usize = arch.sizes.iter().sum();
        ws.acts.resize(rows * nv, V::ZERO);
        ws.delta.resize(MAX_WIDTH * nv, V::ZERO);
        ws.delta_prev.resize(MAX_WIDTH * nv, V::ZERO);
        ws.labels.resize(nv, V::ZERO);
        // Gather the minibatch: inputs in rows 0 and 1, labels as floats (−1 for padding).
        let n = self.inputs.len() as u32;
        let full = self.batch_size >= n;
        let mut bits = [0u32; 4];
        for v in 0..nv {
            for l in 0..LANES {
                let j = v * LANES + l;
                let (x, y) = if j < b {
                    let i = if full {
                        j
                    } else {
                        if j.is_multiple_of(4) {
                            bits = rng.bits4(Stream::Minibatch, (j / 4) as u32);
                        }
                        index_below(bits[j % 4], n) as usize
                    };
                    (self.inputs[i], self.labels[i] as f32)
                } else {
                    ([0.0; 2], -1.0)
                };
                ws.acts[v].0[l] = x[0];
                ws.acts[nv + v].0[l] = x[1];
                ws.labels[v].0[l] = y;
            }
        }
        // Forward.
        let act = arch.activation;
        let mut input = 0;
        for l in 0..layers {
            let layout = arch.layer(l);
            let output = input + layout.inputs;
            let (before, after) = ws.acts.split_at_mut(output * nv);
            let f = (l + 1 < layers).then_some(act);
            layer_forward(
                theta,
                layout,
                &before[input * nv..],
                &mut after[..layout.outputs * nv],
                nv,
                f,
            );
            input = output;
        }
        // ∂CE/∂logits = softmax − onehot(y), zero for padding.
        let logits = input;
        for v in 0..nv {
            let y = ws.labels[v].0;
            let z: [Lanes<LANES>; MAX_CLASSES] =
                std::array::from_fn(|c| Lanes(ws.acts[(logits + c.min(k - 1)) * nv + v].0));
            let mut m = z[0];
            for c in 1..k {
                m = m.max(z[c]);
            }
            let mut e = [Lanes::<LANES>::default(); MAX_CLASSES];
            let mut sum = Lanes::<LANES>::default();
            for c in 0..k {
                e[c] = (z[c] - m).exp();
                sum += e[c];
            }
            let inv = Lanes::<LANES>::splat(1.0) / sum;
            for c in 0..k {
                let p = e[c] * inv;
                let mut d = [0.0f32; LANES];
                for l in 0..LANES {
                    let target = if y[l] == c as f32 { 1.0 } else { 0.0 };
                    d[l] = if y[l] >= 0.0 { p.0[l] - target } else { 0.0 };
                }
                ws.delta[c * nv + v] = V(d);
            }
        }
        // Backward.
        let mut output = logits;
        for l in (0..layers).rev() {
            let layout = arch.layer(l);
            let input = output - layout.inputs;
            let a_in = &ws.acts[input * nv..output * nv];
            let delta = &ws.delta[..layout.outputs * nv];
            layer_weight_gradient(layout, a_in, delta, nv, grad);
            if l > 0 {
                layer_backward(
                    theta,
                    layout,
                    a_in,
                    delta,
                    &mut ws.delta_prev[..layout.inputs * nv],
                    nv,
                    act,
                );
                std::mem::swap(&mut ws.delta, &mut ws.delta_prev);
            }
            output = input;
        }
    }

    /// The gradient's signal and noise for SGD on the per-example loss L(θ)/N (MATH.md §5.6):
    /// |∇L/N|, and the root mean square deviation from it of a minibatch gradient of `batch`
    /// examples drawn with replacement, √(meanᵢ |∇CEᵢ − mean ∇CE|² / batch). The prior's
    /// term is the same in every example and cancels from the noise.
    pub fn gradient_signal_and_noise(&self, theta: &[f32], batch: u32) -> (f64, f64) {
        let mut ws = Workspace::default();
        let mut one = vec![0.0f32; self.params()];
        let mut sum = vec![0.0f64; self.params()];
        let mut sum_sq = 0.0;
        for (x, &y) in self.inputs.iter().zip(&self.labels) {
            one.fill(0.0);
            self.accumulate_example(theta, *x, y, &mut ws, &mut one);
            for (s, &g) in sum.iter_mut().zip(&one) {
                *s += f64::from(g);
            }
            sum_sq += one.iter().map(|&g| f64::from(g).powi(2)).sum::<f64>();
        }
        let n = self.inputs.len() as f64;
        let prior = f64::from(self.prior_precision) / n;
        let signal = sum
            .iter()
            .zip(theta)
            .map(|(s, &t)| (s / n + prior * f64::from(t)).powi(2))
            .sum::<f64>()
            .sqrt();
        let mean_norm_sq = sum.iter().map(|s| (s / n).powi(2)).sum::<f64>();
        let deviation = (sum_sq / n - mean_norm_sq).max(0.0);
        (signal, (deviation / f64::from(batch.max(1))).sqrt())
    }

    /// Which hidden units are positive, over all training examples: where two networks
    /// differ, a ReLU or SELU kink lies between them (finite differences skip those).
    pub fn hidden_signs(&self, theta: &[f32]) -> Vec<bool> {
        let mut ws = Workspace::default();
        let mut signs = Vec::new();
        for x in &self.inputs {
            let logits = self.forward_into(theta, *x, &mut ws);
            signs.extend(ws.activations[2..logits].iter().map(|&a| a > 0.0));
        }
        signs
    }

    /// L(θ) = |θ|²/(2σ²) + Σᵢ CE over the full training set, in f64 (finite differences).
    pub fn neg_log_posterior(&self, theta: &[f32]) -> f64 {
        let mut ws = Workspace::default();
        let k = self.arch.classes();
        let mut total: f64 = theta
            .iter()
            .map(|&t| 0.5 * f64::from(t) * f64::from(t) * f64::from(self.prior_precision))
            .sum();
        for (x, &y) in self.inputs.iter().zip(&self.labels) {
            let logits = self.forward_into(theta, *x, &mut ws);
            let z = &ws.activations[logits..logits + k];
            let max = z
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let lse = max
                + z.iter()
                    .map(|&v| (f64::from(v) - max).exp())
                    .sum::<f64>()
                    .ln();
            total += lse - f64::from(z[y as usize]);
        }
        total
    }
}

/// Outputs summed together in [`layer_sums`] and inputs in [`back_sums`]: independent running
/// sums the core overlaps, where one sum at a time waits on each addition. Every sum keeps
/// its own order of additions, so the results are the same to the bit as one at a time.
const BLOCK: usize = 8;

/// `sums[o] = b[o] + Σ_i W[o][i] inputs[i]` for one layer, in the order i = 0, 1, …
#[inline]
fn layer_sums(theta: &[f32], layout: LayerLayout, inputs: &[f32], sums: &mut [f32]) {
    let n = layout.inputs;
    let inputs = &inputs[..n];
    let weights = &theta[layout.weights..][..layout.outputs * n];
    let biases = &theta[layout.biases..][..layout.outputs];
    let mut o = 0;
    while o + BLOCK <= layout.outputs {
        let rows: [&[f32]; BLOCK] = std::array::from_fn(|k| &weights[(o + k) * n..][..n]);
        let mut a: [f32; BLOCK] = std::array::from_fn(|k| biases[o + k]);
        for (i, v) in inputs.iter().enumerate() {
            for k in 0..BLOCK {
                a[k] += rows[k][i] * v;
            }
        }
        sums[o..o + BLOCK].copy_from_slice(&a);
        o += BLOCK;
    }
    for o in o..layout.outputs {
        let mut a = biases[o];
        for (w, v) in weights[o * n..][..n].iter().zip(inputs) {
            a += w * v;
        }
        sums[o] = a;
    }
}

/// `back[i] = Σ_o W[o][i] delta[o]` for one layer (the error sent back to its inputs), in
/// the order o = 0, 1, …
#[inline]
fn back_sums(theta: &[f32], layout: LayerLayout, delta: &[f32], back: &mut [f32]) {
    let n = layout.inputs;
    let weights = &theta[layout.weights..][..layout.outputs * n];
    let mut i = 0;
    while i + BLOCK <= n {
        let mut b = [0.0f32; BLOCK];
        for (o, d) in delta.iter().enumerate() {
            let w = &weights[o * n + i..][..BLOCK];
            for k in 0..BLOCK {
                b[k] += w[k] * d;
            }
        }
        back[i..i + BLOCK].copy_from_slice(&b);
        i += BLOCK;
    }
    for i in i..n {
        let mut b = 0.0;
        for (o, d) in delta.iter().enumerate() {
            b += weights[o * n + i] * d;
        }
        back[i] = b;
    }
}

/// `x[0] + x[8]`, then pairs 4 apart, 2 apart, 1 apart: the fixed tree in which the 16 lanes
/// of a batched sum are added (`hsum` in the WGSL reduces its partial sums in this order).
#[inline(always)]
fn hsum(x: &V) -> f32 {
    let mut x = x.0;
    let mut s = LANES / 2;
    while s > 0 {
        for l in 0..s {
            x[l] += x[l + s];
        }
        s /= 2;
    }
    x[0]
}

/// `acc += a · x` lane by lane, rounded once.
#[inline(always)]
fn fma_lanes(a: f32, x: &V, acc: &mut V) {
    for l in 0..LANES {
        acc.0[l] = a.mul_add(x.0[l], acc.0[l]);
    }
}

/// `acc + d · x` lane by lane, rounded once.
#[inline(always)]
fn fma_vectors(d: V, x: V, acc: V) -> V {
    V(std::array::from_fn(|l| d.0[l].mul_add(x.0[l], acc.0[l])))
}

/// The activation of every lane of `v` (the match outside the lanes, so they vectorise).
#[inline(always)]
fn activate_lanes(f: Activation, v: &mut V) {
    match f {
        Activation::Tanh => {
            for l in 0..LANES {
                v.0[l] = super::real::tanh_rational(v.0[l]);
            }
        }
        Activation::Relu => {
            for l in 0..LANES {
                v.0[l] = v.0[l].max(0.0);
            }
        }
        Activation::Selu => {
            // The polynomial e^x of the lanes (`Real::exp`), not the C library's.
            let e = Lanes(v.0).min(Lanes::splat(0.0)).exp();
            for l in 0..LANES {
                let a = v.0[l];
                v.0[l] = if a > 0.0 {
                    SELU_LAMBDA * a
                } else {
                    SELU_LAMBDA * SELU_ALPHA * (e.0[l] - 1.0)
                };
            }
        }
    }
}

/// `v *= f'(y)` lane by lane, the derivative from the layer's outputs `y`.
#[inline(always)]
fn times_derivative_lanes(f: Activation, y: &V, v: &mut V) {
    match f {
        Activation::Tanh => {
            for l in 0..LANES {
                v.0[l] *= 1.0 - y.0[l] * y.0[l];
            }
        }
        Activation::Relu => {
            for l in 0..LANES {
                v.0[l] = if y.0[l] > 0.0 { v.0[l] } else { 0.0 };
            }
        }
        Activation::Selu => {
            for l in 0..LANES {
                let d = if y.0[l] > 0.0 {
                    SELU_LAMBDA
                } else {
                    y.0[l] + SELU_LAMBDA * SELU_ALPHA
                };
                v.0[l] *= d;
            }
        }
    }
}

/// Outputs `o .. o + T` of a layer over the minibatch, two vectors at a time: 2T independent
/// running sums (16 of the 32 AVX-512 registers at T = 8), each over the inputs in order.
/// The tile sizes change which sums run together, never the order within one.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn forward_block<const T: usize>(
    weights: &[f32],
    biases: &[f32],
    n: usize,
    a_in: &[V],
    out: &mut [V],
    nv: usize,
    o: usize,
    f: Option<Activation>,
) {
    for v in (0..nv).step_by(2) {
        let mut acc: [[V; 2]; T] = std::array::from_fn(|t| [V([biases[o + t]; LANES]); 2]);
        for i in 0..n {
            let x = [a_in[i * nv + v], a_in[i * nv + v + 1]];
            for t in 0..T {
                let w = weights[(o + t) * n + i];
                fma_lanes(w, &x[0], &mut acc[t][0]);
                fma_lanes(w, &x[1], &mut acc[t][1]);
            }
        }
        for t in 0..T {
            if let Some(f) = f {
                activate_lanes(f, &mut acc[t][0]);
                activate_lanes(f, &mut acc[t][1]);
            }
            out[(o + t) * nv + v] = acc[t][0];
            out[(o + t) * nv + v + 1] = acc[t][1];
        }
    }
}

/// `out = f(W a_in + b)` over the minibatch (`f` = None for the logits).
#[inline(always)]
fn layer_forward(
    theta: &[f32],
    layout: LayerLayout,
    a_in: &[V],
    out: &mut [V],
    nv: usize,
    f: Option<Activation>,
) {
    let n = layout.inputs;
    let weights = &theta[layout.weights..][..layout.outputs * n];
    let biases = &theta[layout.biases..][..layout.outputs];
    let mut o = 0;
    while o < layout.outputs {
        let t = match layout.outputs - o {
            1 => 1,
            2 | 3 => 2,
            4..=7 => 4,
            _ => 8,
        };
        match t {
            1 => forward_block::<1>(weights, biases, n, a_in, out, nv, o, f),
            2 => forward_block::<2>(weights, biases, n, a_in, out, nv, o, f),
            4 => forward_block::<4>(weights, biases, n, a_in, out, nv, o, f),
            _ => forward_block::<8>(weights, biases, n, a_in, out, nv, o, f),
        }
        o += t;
    }
}

/// Inputs `i .. i + T` of the error sent back: `Σ_o W[o][i] Δ[o]` over the outputs in
/// order, times f' of the layer's inputs.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward_block<const T: usize>(
    weights: &[f32],
    layout: LayerLayout,
    a_in: &[V],
    delta: &[V],
    back: &mut [V],
    nv: usize,
    i: usize,
    f: Activation,
) {
    let n = layout.inputs;
    for v in (0..nv).step_by(2) {
        let mut acc = [[V::ZERO; 2]; T];
        for o in 0..layout.outputs {
            let d = [delta[o * nv + v], delta[o * nv + v + 1]];
            for t in 0..T {
                let w = weights[o * n + i + t];
                fma_lanes(w, &d[0], &mut acc[t][0]);
                fma_lanes(w, &d[1], &mut acc[t][1]);
            }
        }
        for t in 0..T {
            times_derivative_lanes(f, &a_in[(i + t) * nv + v], &mut acc[t][0]);
            times_derivative_lanes(f, &a_in[(i + t) * nv + v + 1], &mut acc[t][1]);
            back[(i + t) * nv + v] = acc[t][0];
            back[(i + t) * nv + v + 1] = acc[t][1];
        }
    }
}

/// `back = (Wᵀ delta) ⊙ f'(a_in)` over the minibatch: the error of the layer's inputs.
#[inline(always)]
fn layer_backward(
    theta: &[f32],
    layout: LayerLayout,
    a_in: &[V],
    delta: &[V],
    back: &mut [V],
    nv: usize,
    f: Activation,
) {
    let weights = &theta[layout.weights..][..layout.outputs * layout.inputs];
    let mut i = 0;
    while i < layout.inputs {
        let t = match layout.inputs - i {
            1 => 1,
            2 | 3 => 2,
            4..=7 => 4,
            _ => 8,
        };
        match t {
            1 => backward_block::<1>(weights, layout, a_in, delta, back, nv, i, f),
            2 => backward_block::<2>(weights, layout, a_in, delta, back, nv, i, f),
            4 => backward_block::<4>(weights, layout, a_in, delta, back, nv, i, f),
            _ => backward_block::<8>(weights, layout, a_in, delta, back, nv, i, f),
        }
        i += t;
    }
}

/// `∇W[o][i] = Σ_e Δ[o][e] a_in[i][e]` for outputs `o .. o + TO` and inputs `i .. i + TI`:
/// lane sums over the vectors in order, then [`hsum`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gradient_block<const TO: usize, const TI: usize>(
    layout: LayerLayout,
    a_in: &[V],
    delta: &[V],
    nv: usize,
    o: usize,
    i: usize,
    grad: &mut [f32],
) {
    // Rows bounded once, outside the loop, and whole vectors by value: the compiler then
    // turns each vector's lanes into one SIMD instruction (with bounds checks or lane
    // references in the loop it vectorised across rows instead, lane by lane).
    let rows: [&[V]; TI] = std::array::from_fn(|s| &a_in[(i + s) * nv..][..nv]);
    let deltas: [&[V]; TO] = std::array::from_fn(|t| &delta[(o + t) * nv..][..nv]);
    let mut acc = [[V::ZERO; TI]; TO];
    for v in 0..nv {
        for t in 0..TO {
            let d = deltas[t][v];
            for s in 0..TI {
                acc[t][s] = fma_vectors(d, rows[s][v], acc[t][s]);
            }
        }
    }
    for t in 0..TO {
        for s in 0..TI {
            grad[layout.weights + (o + t) * layout.inputs + i + s] = hsum(&acc[t][s]);
        }
    }
}

/// The weight and bias gradients of one layer, summed over the minibatch.
#[inline(always)]
fn layer_weight_gradient(
    layout: LayerLayout,
    a_in: &[V],
    delta: &[V],
    nv: usize,
    grad: &mut [f32],
) {
    let n = layout.inputs;
    let mut o = 0;
    while o < layout.outputs {
        let to = match layout.outputs - o {
            1 => 1,
            2 | 3 => 2,
            _ => 4,
        };
        let mut i = 0;
        while i < n {
            let ti = match n - i {
                1 => 1,
                2 | 3 => 2,
                _ => 4,
            };
            match (to, ti) {
                (4, 4) => gradient_block::<4, 4>(layout, a_in, delta, nv, o, i, grad),
                (4, 2) => gradient_block::<4, 2>(layout, a_in, delta, nv, o, i, grad),
                (4, _) => gradient_block::<4, 1>(layout, a_in, delta, nv, o, i, grad),
                (2, 4) => gradient_block::<2, 4>(layout, a_in, delta, nv, o, i, grad),
                (2, 2) => gradient_block::<2, 2>(layout, a_in, delta, nv, o, i, grad),
                (2, _) => gradient_block::<2, 1>(layout, a_in, delta, nv, o, i, grad),
                (_, 4) => gradient_block::<1, 4>(layout, a_in, delta, nv, o, i, grad),
                (_, 2) => gradient_block::<1, 2>(layout, a_in, delta, nv, o, i, grad),
                _ => gradient_block::<1, 1>(layout, a_in, delta, nv, o, i, grad),
            }
            i += ti;
        }
        o += to;
    }
    for o in 0..layout.outputs {
        let row = &delta[o * nv..][..nv];
        let mut acc = V::ZERO;
        for d in row {
            acc = V(std::array::from_fn(|l| acc.0[l] + d.0[l]));
        }
        grad[layout.biases + o] = hsum(&acc);
    }
}

/// Numerically stable softmax.
#[inline]
pub fn softmax(logits: &[f32], probs: &mut [f32]) {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mut sum = 0.0;
    for (p, &z) in probs.iter_mut().zip(logits) {
        *p = (z - max).exp();
        sum += *p;
    }
    let inv = 1.0 / sum;
    for p in probs.iter_mut() {
        *p *= inv;
    }
}

/// How chains start: weights ~ N(0, (scale/√fan-in)²), biases 0, p ~ N(0, mT) for samplers
/// with a momentum, ξ as given for samplers with a thermostat.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpInit {
    /// Multiplier on the 1/√fan-in weight scale.
    #[serde(
        default = "one",
        deserialize_with = "crate::math::ranges::de_init_scale"
    )]
    pub scale: f64,
    /// Initial thermostat ξ of every parameter.
    #[serde(default, deserialize_with = "crate::math::ranges::de_init_xi")]
    pub xi: f64,
    /// Start every weight and bias from the prior N(0, σ_p²) instead of the scaled
    /// initialisation (N(0, scale²/fan-in) weights, zero biases): step 0 is then a draw of
    /// the prior, and the map morphs from the prior predictive into the posterior predictive.
    /// Left out of a file when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub from_prior: bool,
}

fn one() -> f64 {
    1.0
}

impl Default for MlpInit {
    fn default() -> Self {
        Self {
            scale: 1.0,
            xi: 0.0,
            from_prior: false,
        }
    }
}

/// A chain's state in three slices of P parameters each.
#[derive(Debug)]
pub struct ChainSlices<'a> {
    /// Weights θ.
    pub theta: &'a mut [f32],
    /// Momenta p.
    pub p: &'a mut [f32],
    /// Thermostats ξ.
    pub xi: &'a mut [f32],
}

/// The samplers the network engines run, with their command-line names: every sampler but
/// HMC, whose Metropolis test needs a network's energy on both engines (not built yet; a
/// network preset with HMC is refused when it is read).
pub const NETWORK_SAMPLERS: [(SamplerKind, &str); 5] = [
    (SamplerKind::Atmc, "atmc"),
    (SamplerKind::Sgld, "sgld"),
    (SamplerKind::Sghmc, "sghmc"),
    (SamplerKind::Sgnht, "sgnht"),
    (SamplerKind::Sgd, "sgd"),
];

/// The runtime model of an MLP posterior run: sampler, schedule and posterior.
#[derive(Clone, Debug, PartialEq)]
pub struct MlpModel {
    /// Sampler parameters.
    pub sampler: SamplerParams,
    /// Step-size schedule.
    pub schedule: Schedule,
    /// The posterior.
    pub posterior: MlpPosterior,
}

impl MlpModel {
    /// Writes the initial state of `chain` (a pure function of seed and chain): the weights
    /// from the init stream at step 0, the momenta from step 1.
    pub fn initial_state(&self, init: &MlpInit, seed: u64, chain: u32, c: ChainSlices<'_>) {
        let sp = &self.sampler;
        let arch = &self.posterior.arch;
        RngCounter::new(seed, chain, 0).fill_normals(Stream::Init, c.theta);
        if init.from_prior {
            let sigma = 1.0 / self.posterior.prior_precision.sqrt();
            for t in c.theta.iter_mut() {
                *t *= sigma;
            }
        }
        for l in (0..arch.layers()).filter(|_| !init.from_prior) {
            let layout = arch.layer(l);
            let scale = init.scale as f32 / (layout.inputs as f32).sqrt();
            for t in &mut c.theta[layout.weights..layout.biases] {
                *t *= scale;
            }
            c.theta[layout.biases..layout.biases + layout.outputs].fill(0.0);
        }
        let p_scale = if sp.kind.has_momentum() {
            (sp.mass * sp.temperature).sqrt()
        } else {
            0.0
        };
        RngCounter::new(seed, chain, 1).fill_normals(Stream::Init, c.p);
        for p in c.p.iter_mut() {
            *p *= p_scale;
        }
        let xi = if sp.kind.has_thermostat() {
            init.xi as f32
        } else {
            0.0
        };
        c.xi.fill(xi);
    }

    /// Advances one chain by one step (global step index `rng.step`); `grad` is scratch of P
    /// values. Returns `true` when the chain diverged (any parameter, MATH.md §2). Inlined
    /// into the CPU engine's loops compiled for each instruction set.
    #[inline(always)]
    pub fn advance(
        &self,
        c: ChainSlices<'_>,
        rng: &RngCounter,
        ws: &mut Workspace,
        grad: &mut [f32],
    ) -> bool {
        let sp = &self.sampler;
        let phase = sp.phase(&self.schedule, rng.step);
        let n = c.theta.len();
        let post = &self.posterior;
        match sp.kind {
            // `MlpPreset::validate` refuses HMC on networks: nothing builds this model.
            SamplerKind::Hmc => unreachable!("HMC on networks is refused when a preset is read"),
            SamplerKind::Atmc => {
                // Sixteen parameters at a time, as lanes (the last group padded with zeros
                // that are never written back).
                for g in 0..n.div_ceil(LANES) {
                    let (mut theta, p, mut xi) = (
                        load_lanes(c.theta, g),
                        load_lanes(c.p, g),
                        load_lanes(c.xi, g),
                    );
                    sp.atmc_first_half(&mut theta, p, &mut xi, phase);
                    store_lanes(c.theta, g, theta);
                    store_lanes(c.xi, g, xi);
                }
                post.stochastic_gradient(c.theta, rng, ws, grad);
                for g in 0..n.div_ceil(LANES) {
                    let (mut theta, mut p, mut xi, gr) = (
                        load_lanes(c.theta, g),
                        load_lanes(c.p, g),
                        load_lanes(c.xi, g),
                        load_lanes(grad, g),
                    );
                    let z = normals16(rng, g);
                    // p is unchanged since the first half: its relativistic factor s there
                    // is the one here (recomputed rather than stored: one scratch fewer).
                    let s = kinetic_derivatives(p, sp.mass, sp.inv_mass, sp.speed).2;
                    sp.atmc_second_half(&mut theta, &mut p, &mut xi, s, gr, z, phase);
                    store_lanes(c.theta, g, theta);
                    store_lanes(c.p, g, p);
                    store_lanes(c.xi, g, xi);
                }
            }
            SamplerKind::Sgld => {
                post.stochastic_gradient(c.theta, rng, ws, grad);
                for_each_normal(rng, n, |i, z| {
                    sp.sgld_update(&mut c.theta[i], grad[i], z, phase)
                });
            }
            SamplerKind::Sghmc => {
                post.stochastic_gradient(c.theta, rng, ws, grad);
                for_each_normal(rng, n, |i, z| {
                    sp.sghmc_update(&mut c.theta[i], &mut c.p[i], grad[i], z, phase)
                });
            }
            SamplerKind::Sgnht => {
                post.stochastic_gradient(c.theta, rng, ws, grad);
                // The heat of each parameter replaces its gradient once used.
                for_each_normal(rng, n, |i, z| {
                    grad[i] =
                        sp.sgnht_update(&mut c.theta[i], &mut c.p[i], c.xi[i], grad[i], z, phase);
                });
                if sp.sgnht_shared_xi {
                    let mean = grad.iter().sum::<f32>() / n as f32;
                    grad.fill(mean);
                }
                for i in 0..n {
                    c.xi[i] = sp.sgnht_thermostat(c.xi[i], grad[i], phase);
                }
            }
            SamplerKind::Sgd => {
                post.stochastic_gradient(c.theta, rng, ws, grad);
                for i in 0..n {
                    if sp.sgd_momentum == 0.0 {
                        sp.sgd_update(&mut c.theta[i], grad[i], phase);
                    } else {
                        sp.sgd_momentum_update(&mut c.theta[i], &mut c.p[i], grad[i], phase);
                    }
                }
            }
        }
        (0..n).any(|i| sp.coordinate_diverged(c.theta[i], c.p[i], c.xi[i]))
    }
}

/// Parameters `16 g .. 16 g + 16` of `v` as lanes, zeros past its end.
#[inline(always)]
fn load_lanes(v: &[f32], g: usize) -> Lanes<LANES> {
    let mut out = [0.0; LANES];
    let part = &v[(g * LANES).min(v.len())..];
    let k = part.len().min(LANES);
    out[..k].copy_from_slice(&part[..k]);
    Lanes(out)
}

/// Writes the lanes of `x` back to parameters `16 g ..` of `v` (those that exist).
#[inline(always)]
fn store_lanes(v: &mut [f32], g: usize, x: Lanes<LANES>) {
    let start = (g * LANES).min(v.len());
    let part = &mut v[start..];
    let k = part.len().min(LANES);
    part[..k].copy_from_slice(&x.0[..k]);
}

/// The injected-noise normals of parameters `16 g .. 16 g + 16`: the words of Philox blocks
/// `4 g .. 4 g + 4` as [`RngCounter::normal4`] pairs them, through the polynomial ln and
/// sin/cos of [`Lanes`] (equal to the C library's to float rounding, like the 2-D lanes).
#[inline(always)]
fn normals16(rng: &RngCounter, g: usize) -> Lanes<LANES> {
    let mut radius = [0.0f32; LANES / 2];
    let mut angle = [0.0f32; LANES / 2];
    for b in 0..LANES / 4 {
        let bits = rng.bits4(Stream::Injected, (g * LANES / 4 + b) as u32);
        for k in 0..2 {
            radius[2 * b + k] = super::rng::uniform_open_closed_from_bits(bits[2 * k]);
            angle[2 * b + k] =
                std::f32::consts::TAU * super::rng::uniform_from_bits(bits[2 * k + 1]);
        }
    }
    let radius = (Lanes(radius).ln() * -2.0).sqrt();
    let (sin, cos) = Lanes(angle).sin_cos();
    let mut z = [0.0f32; LANES];
    for q in 0..LANES / 2 {
        z[2 * q] = radius.0[q] * cos.0[q];
        z[2 * q + 1] = radius.0[q] * sin.0[q];
    }
    Lanes(z)
}

/// Calls `f(i, zᵢ)` for i in 0..n with the injected-noise normals of the step: coordinate i
/// takes lane i mod 4 of Philox block i/4, as the 2-D chains do.
#[inline(always)]
fn for_each_normal(rng: &RngCounter, n: usize, mut f: impl FnMut(usize, f32)) {
    for block in 0..n.div_ceil(4) {
        let z = rng.normal4(Stream::Injected, block as u32);
        for (lane, &zl) in z.iter().enumerate() {
            let i = block * 4 + lane;
            if i < n {
                f(i, zl);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::datasets::{DataSource, DataSpec};

    fn posterior(activation: Activation, hidden: &[u32], batch: u32) -> MlpPosterior {
        let data = DataSpec {
            source: DataSource::TwoMoons,
            points: 60,
            noise: 0.2,
            test_fraction: 0.25,
            seed: 3,
        }
        .build(&|path| panic!("no file is read here, yet {path} was asked for"))
        .expect("two moons");
        let arch = Architecture::new(hidden, data.classes, activation).unwrap();
        MlpPosterior::new(arch, &data, 1.5, batch)
    }

    fn random_theta(post: &MlpPosterior, seed: u64) -> Vec<f32> {
        let mut theta = vec![0.0; post.params()];
        RngCounter::new(seed, 0, 0).fill_normals(Stream::Init, &mut theta);
        theta.iter().map(|t| 0.7 * t).collect()
    }

    #[test]
    fn layout_counts_and_names() {
        let arch = Architecture::new(&[16, 16], 2, Activation::Tanh).unwrap();
        assert_eq!(arch.params(), 2 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2);
        assert_eq!(arch.param_name(0), "W1[0,0]");
        assert_eq!(arch.param_name(3), "W1[1,1]");
        assert_eq!(arch.param_name(32), "b1[0]");
        assert_eq!(arch.param_name(48), "W2[0,0]");
        assert_eq!(arch.param_name(arch.params() - 1), "b3[1]");
        assert_eq!(arch.layer_of(47), 0);
        assert_eq!(arch.layer_of(48), 1);
        assert_eq!(arch.describe(), "2-16-16-2 tanh");
        assert!(Architecture::new(&[], 2, Activation::Tanh).is_err());
        assert!(Architecture::new(&[33], 2, Activation::Tanh).is_err());
        assert!(Architecture::new(&[8, 8, 8, 8], 2, Activation::Tanh).is_err());
    }

    /// The batched gradient (matrix products over the minibatch, lane sums) against the
    /// plain one example at a time, for every activation, depth 1–3, full batches and
    /// minibatches (a batch of 5 pads most of a vector; 37 crosses two pairs of vectors).
    #[test]
    fn batched_gradient_matches_the_per_example_sum() {
        for activation in Activation::ALL {
            for hidden in [&[8u32][..], &[16, 5], &[7, 32, 3]] {
                for batch in [0, 5, 37] {
                    let post = posterior(activation, hidden, batch);
                    let theta = random_theta(&post, 2);
                    let rng = RngCounter::new(3, 1, 9);
                    let mut ws = Workspace::default();
                    let mut a = vec![0.0; post.params()];
                    let mut b = vec![0.0; post.params()];
                    post.stochastic_gradient(&theta, &rng, &mut ws, &mut a);
                    post.stochastic_gradient_per_example(&theta, &rng, &mut ws, &mut b);
                    let scale = b.iter().fold(0.0f32, |m, g| m.max(g.abs()));
                    let worst = a
                        .iter()
                        .zip(&b)
                        .map(|(x, y)| (x - y).abs() / scale)
                        .fold(0.0f32, f32::max);
                    assert!(
                        worst < 2e-5,
                        "{activation:?} {hidden:?} batch {batch}: {worst:e} of {scale}"
                    );
                }
            }
        }
    }

    #[test]
    fn analytic_gradient_matches_finite_differences() {
        for (activation, hidden) in Activation::ALL
            .into_iter()
            .flat_map(|a| [(a, &[8u32][..]), (a, &[8, 6]), (a, &[6, 5, 4])])
        {
            let post = posterior(activation, hidden, 0);
            let theta = random_theta(&post, 11);
            let mut grad = vec![0.0; post.params()];
            let mut ws = Workspace::default();
            post.stochastic_gradient(&theta, &RngCounter::new(1, 0, 0), &mut ws, &mut grad);
            let scale = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
            let mut worst = 0.0f64;
            let mut kinks = 0;
            for i in 0..post.params() {
                // Central differences in f64 of the f32 network: step 1e-2 balances the
                // truncation error against f32 rounding of L; ReLU and SELU have kinks at 0, so a
                // small step meets fewer kinks.
                let eps = if activation == Activation::Relu {
                    1e-3f32
                } else {
                    1e-2
                };
                let mut plus = theta.clone();
                plus[i] += eps;
                let mut minus = theta.clone();
                minus[i] -= eps;
                let (lp, lm) = (
                    post.neg_log_posterior(&plus),
                    post.neg_log_posterior(&minus),
                );
                if activation != Activation::Tanh
                    && post.hidden_signs(&plus) != post.hidden_signs(&minus)
                {
                    // A unit crosses 0 within ±eps: a kink of ReLU (or of SELU's derivative).
                    kinks += 1;
                    continue;
                }
                let fd = (lp - lm) / (2.0 * f64::from(eps));
                let err = (fd - f64::from(grad[i])).abs() / f64::from(scale);
                worst = worst.max(err);
            }
            // Three hidden layers of a few units put more of them within ±eps of 0.
            assert!(kinks * 3 < post.params(), "{kinks} kinks");
            eprintln!(
                "{activation:?} {hidden:?}: worst relative error {worst:.1e}, {kinks} parameters skipped at kinks"
            );
            assert!(
                worst < 5e-4,
                "{activation:?} {hidden:?}: worst error {worst:e} of max |g| {scale}"
            );
        }
    }

    /// Signal and noise of the per-example loss: the signal is the full gradient over N, the
    /// noise the spread of minibatch gradients over N around it (20,000 draws of batch 5).
    #[test]
    fn gradient_signal_and_noise_match_the_minibatch_gradients() {
        let full = posterior(Activation::Tanh, &[8], 0);
        let mini = posterior(Activation::Tanh, &[8], 5);
        let theta = random_theta(&full, 6);
        let n = full.inputs.len() as f64;
        let mut ws = Workspace::default();
        let mut exact = vec![0.0; full.params()];
        full.stochastic_gradient(&theta, &RngCounter::new(0, 0, 0), &mut ws, &mut exact);
        let (signal, noise) = full.gradient_signal_and_noise(&theta, 5);
        let norm = exact
            .iter()
            .map(|&g| f64::from(g).powi(2))
            .sum::<f64>()
            .sqrt()
            / n;
        assert!((signal - norm).abs() < 1e-5 * norm, "{signal} vs {norm}");
        let draws = 20_000;
        let mut g = vec![0.0; full.params()];
        let mut mean_sq = 0.0;
        for step in 0..draws {
            mini.stochastic_gradient(&theta, &RngCounter::new(4, 1, step), &mut ws, &mut g);
            mean_sq += g
                .iter()
                .zip(&exact)
                .map(|(&a, &b)| (f64::from(a - b) / n).powi(2))
                .sum::<f64>();
        }
        let sampled = (mean_sq / f64::from(draws)).sqrt();
        assert!((noise / sampled - 1.0).abs() < 0.03, "{noise} vs {sampled}");
    }

    #[test]
    fn minibatch_gradient_is_unbiased() {
        let full = posterior(Activation::Tanh, &[8], 0);
        let mini = posterior(Activation::Tanh, &[8], 5);
        let theta = random_theta(&full, 5);
        let mut ws = Workspace::default();
        let mut exact = vec![0.0; full.params()];
        full.stochastic_gradient(&theta, &RngCounter::new(0, 0, 0), &mut ws, &mut exact);
        let mut mean = vec![0.0f64; full.params()];
        let draws = 20_000;
        let mut g = vec![0.0; full.params()];
        for step in 0..draws {
            mini.stochastic_gradient(&theta, &RngCounter::new(9, 3, step), &mut ws, &mut g);
            for (m, v) in mean.iter_mut().zip(&g) {
                *m += f64::from(*v) / f64::from(draws);
            }
        }
        let scale = exact.iter().fold(0.0f32, |m, g| m.max(g.abs()));
        for (m, e) in mean.iter().zip(&exact) {
            assert!(
                (m - f64::from(*e)).abs() < 0.03 * f64::from(scale),
                "{m} vs {e}"
            );
        }
    }

    #[test]
    fn activations_and_their_derivatives() {
        for act in Activation::ALL {
            for a in [-3.0f32, -0.4, 0.3, 2.5] {
                let y = act.apply(a);
                let h = 1e-3;
                let fd = (f64::from(act.apply(a + h)) - f64::from(act.apply(a - h))) / 2e-3;
                let d = act.derivative_from_output(y);
                assert!(
                    (fd - f64::from(d)).abs() < 2e-3,
                    "{act:?} at {a}: {fd} vs {d}"
                );
            }
        }
        assert!(Activation::Tanh.apply(1e30).is_finite());
    }
}
