//! ResNet++ (MATH.md §8): a residual network without BatchNorm. SELU activations, Fixup
//! initialisation (each residual branch's last convolution starts small, the others
//! He-normal scaled by L^(−1/(2m−2)) for L branches of m layers, scalar biases and a scalar
//! multiplier per branch) and weight normalisation of every convolution and of the classifier
//! (w = g·v/‖v‖ per output unit).
//!
//! Fixup starts the branches' last layers and the classifier at zero. Under weight
//! normalisation that would mean g = 0, and g = 0 is a stationary point of v: ∂L/∂v =
//! (g/‖v‖)(I − v̂v̂ᵀ)∂L/∂w vanishes, and with a zero classifier so does the gradient of every
//! layer below it. Only g and the biases moved at first, the branches and the classifier's
//! directions waited for their g to grow, and a run of 48 steps (2,000 Fashion-MNIST images ×
//! 3 epochs) ended near 20 % test accuracy. So those layers start small instead of at zero:
//! [`BRANCH_END_SCALE`] and [`CLASSIFIER_LENGTH`].

use super::conv::{conv2d, selu};
use crate::math::rng::SequentialRng;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

/// Each residual branch's last convolution starts at this multiple of He-normal (Fixup's
/// zero, made small but not zero so that weight normalisation's v gets a gradient).
pub const BRANCH_END_SCALE: f32 = 0.1;

/// The classifier's initial length g per class (w = g·v/‖v‖): unit rows, the logits of the
/// order of the pooled features. Zero (Fixup's classifier) would stop every gradient below it.
pub const CLASSIFIER_LENGTH: f32 = 1.0;

/// Depth, width and the shape of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResNetConfig {
    /// Layers with weights: 6n + 2 (8, 14, 20, …) for n blocks per stage.
    pub depth: usize,
    /// Channels of the first stage (the stages have width, 2·width, 4·width).
    pub width: usize,
    /// Colour channels of the input.
    pub channels: usize,
    /// Classes.
    pub classes: usize,
}

impl ResNetConfig {
    /// Checks depth and width; the error says what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        const MAX_DEPTH: usize = 110;
        if self.depth < 8 || !(self.depth - 2).is_multiple_of(6) {
            return Err(format!(
                "depth {}: ResNet++ has 6n + 2 layers (8, 14, 20, 26, …)",
                self.depth
            ));
        }
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "depth {}: at most {MAX_DEPTH} layers (a deeper network does not fit a CPU run)",
                self.depth
            ));
        }
        if !(4..=128).contains(&self.width) {
            return Err(format!("width {}: allowed 4 to 128", self.width));
        }
        Ok(())
    }

    /// Residual blocks per stage.
    pub fn blocks_per_stage(&self) -> usize {
        (self.depth - 2) / 6
    }

    /// Residual branches L in the whole network.
    pub fn branches(&self) -> usize {
        3 * self.blocks_per_stage()
    }

    /// Fixup's scale of a branch's first layer: L^(−1/(2m−2)) with m = 2 layers per branch.
    pub fn fixup_scale(&self) -> f32 {
        (self.branches() as f32).powf(-0.5)
    }
}

/// A weight-normalised 2-D convolution without bias: w = g·v/‖v‖ per output channel.
#[derive(Module, Debug)]
pub struct WnConv2d {
    /// Direction v, `out × in × k × k`.
    pub v: Param<Tensor<4>>,
    /// Length g per output channel.
    pub g: Param<Tensor<1>>,
    /// Stride.
    pub stride: usize,
    /// Zero padding.
    pub padding: usize,
}

/// He-normal values: N(0, 2/fan_in) from a seeded generator (so a seed fixes the network).
fn he_normal(rng: &mut SequentialRng, n: usize, fan_in: usize) -> Vec<f32> {
    let std = (2.0 / fan_in as f64).sqrt();
    let he = Normal::new(0.0, std).expect("a finite, positive standard deviation");
    he.sample_iter(rng).take(n).map(|w: f64| w as f32).collect()
}

impl WnConv2d {
    /// A convolution whose initial weight is `scale` times He-normal (0: zero weights, as
    /// Fixup starts each branch's last layer).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        device: &Device,
        rng: &mut SequentialRng,
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
        scale: f32,
    ) -> Self {
        let fan_in = inputs * kernel * kernel;
        let v = he_normal(rng, outputs * fan_in, fan_in);
        // g = scale·‖v‖ makes w = scale·v at the start.
        let g: Vec<f32> = v
            .chunks(fan_in)
            .map(|row| scale * row.iter().map(|x| x * x).sum::<f32>().sqrt())
            .collect();
        Self {
            v: Param::from_tensor(Tensor::from_data(
                TensorData::new(v, [outputs, inputs, kernel, kernel]),
                device,
            )),
            g: Param::from_tensor(Tensor::from_data(TensorData::new(g, [outputs]), device)),
            stride,
            padding,
        }
    }

    /// The effective weight g·v/‖v‖.
    pub fn weight(&self) -> Tensor<4> {
        let v = self.v.val();
        let [out, _, _, _] = v.dims();
        let norm = v
            .clone()
            .powf_scalar(2.0)
            .sum_dim(1)
            .sum_dim(2)
            .sum_dim(3)
            .sqrt();
        v / norm * self.g.val().reshape([out, 1, 1, 1])
    }

    /// Applies the convolution ([`super::conv`]: burn's `conv2d` up to float rounding).
    pub fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        conv2d(x, self.weight(), self.stride, self.padding)
    }
}

/// A scalar parameter (Fixup's biases and multipliers).
fn scalar(device: &Device, value: f32) -> Param<Tensor<1>> {
    Param::from_tensor(Tensor::from_data(TensorData::new(vec![value], [1]), device))
}

fn add_scalar(x: Tensor<4>, b: &Param<Tensor<1>>) -> Tensor<4> {
    x + b.val().reshape([1, 1, 1, 1])
}

/// A Fixup residual block with SELU: x + b1a → conv → + b1b → SELU → + b2a → conv → · s
/// → + b2b, added to the shortcut, then SELU.
#[derive(Module, Debug)]
pub struct Block {
    /// First convolution of the branch.
    pub conv1: WnConv2d,
    /// Last convolution of the branch ([`BRANCH_END_SCALE`] × He-normal at the start).
    pub conv2: WnConv2d,
    /// Scalar biases before and after each convolution.
    pub biases: [Param<Tensor<1>>; 4],
    /// Scalar multiplier of the branch.
    pub scale: Param<Tensor<1>>,
    /// 1×1 projection where the stage changes the shape.
    pub shortcut: Option<WnConv2d>,
}

impl Block {
    fn new(
        device: &Device,
        rng: &mut SequentialRng,
        inputs: usize,
        outputs: usize,
        stride: usize,
        fixup: f32,
    ) -> Self {
        let shortcut = (stride != 1 || inputs != outputs)
            .then(|| WnConv2d::new(device, rng, inputs, outputs, 1, stride, 0, 1.0));
        Self {
            conv1: WnConv2d::new(device, rng, inputs, outputs, 3, stride, 1, fixup),
            conv2: WnConv2d::new(device, rng, outputs, outputs, 3, 1, 1, BRANCH_END_SCALE),
            biases: std::array::from_fn(|_| scalar(device, 0.0)),
            scale: scalar(device, 1.0),
            shortcut,
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let [b1a, b1b, b2a, b2b] = &self.biases;
        let entry = add_scalar(x.clone(), b1a);
        let out = selu(add_scalar(self.conv1.forward(entry.clone()), b1b));
        let out = self.conv2.forward(add_scalar(out, b2a)) * self.scale.val().reshape([1, 1, 1, 1]);
        let out = add_scalar(out, b2b);
        let skip = match &self.shortcut {
            Some(conv) => conv.forward(entry),
            None => x,
        };
        selu(out + skip)
    }
}

/// The network.
#[derive(Module, Debug)]
pub struct ResNetPP {
    /// 3×3 convolution from the image to the first stage's width.
    pub stem: WnConv2d,
    /// The residual blocks of the three stages.
    pub blocks: Vec<Block>,
    /// Scalar bias before the classifier.
    pub head_bias: Param<Tensor<1>>,
    /// Classifier direction v (`classes × channels`).
    pub fc_v: Param<Tensor<2>>,
    /// Classifier lengths g ([`CLASSIFIER_LENGTH`] at the start).
    pub fc_g: Param<Tensor<1>>,
    /// Classifier bias.
    pub fc_b: Param<Tensor<1>>,
}

impl ResNetPP {
    /// A network initialised from `seed` (the same seed gives the same weights).
    pub fn new(config: &ResNetConfig, device: &Device, seed: u64) -> Self {
        let mut rng = SequentialRng::new(seed, 0x0002_0000);
        let w = config.width;
        let fixup = config.fixup_scale();
        let stem = WnConv2d::new(device, &mut rng, config.channels, w, 3, 1, 1, 1.0);
        let mut blocks = Vec::new();
        let mut inputs = w;
        for (stage, outputs) in [w, 2 * w, 4 * w].into_iter().enumerate() {
            for k in 0..config.blocks_per_stage() {
                let stride = if stage > 0 && k == 0 { 2 } else { 1 };
                blocks.push(Block::new(device, &mut rng, inputs, outputs, stride, fixup));
                inputs = outputs;
            }
        }
        let v = he_normal(&mut rng, config.classes * inputs, inputs);
        Self {
            stem,
            blocks,
            head_bias: scalar(device, 0.0),
            fc_v: Param::from_tensor(Tensor::from_data(
                TensorData::new(v, [config.classes, inputs]),
                device,
            )),
            fc_g: Param::from_tensor(Tensor::full([config.classes], CLASSIFIER_LENGTH, device)),
            fc_b: Param::from_tensor(Tensor::zeros([config.classes], device)),
        }
    }

    /// Logits `batch × classes` of images `batch × channels × height × width`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let mut x = selu(self.stem.forward(x));
        for block in &self.blocks {
            x = block.forward(x);
        }
        let [n, c, _, _] = x.dims();
        let pooled = x.mean_dim(2).mean_dim(3).reshape([n, c]);
        let pooled = pooled + self.head_bias.val().reshape([1, 1]);
        let v = self.fc_v.val();
        let [classes, _] = v.dims();
        let norm = v.clone().powf_scalar(2.0).sum_dim(1).sqrt();
        let weight = v / norm * self.fc_g.val().reshape([classes, 1]);
        pooled.matmul(weight.transpose()) + self.fc_b.val().reshape([1, classes])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().expect("f32 data")
    }

    #[test]
    fn depth_and_width_are_checked() {
        let c = |depth, width| ResNetConfig {
            depth,
            width,
            channels: 3,
            classes: 10,
        };
        assert!(c(8, 16).validate().is_ok());
        assert!(c(20, 64).validate().is_ok());
        assert!(c(10, 16).validate().unwrap_err().contains("6n + 2"));
        assert!(c(8, 2).validate().unwrap_err().contains("width"));
        assert_eq!(c(20, 16).branches(), 9);
        assert!((c(20, 16).fixup_scale() - 1.0 / 3.0).abs() < 1e-7);
    }

    #[test]
    fn shapes_and_fixup_initialisation() {
        let device = Device::flex();
        let config = ResNetConfig {
            depth: 14,
            width: 8,
            channels: 3,
            classes: 10,
        };
        let net = ResNetPP::new(&config, &device, 5);
        assert_eq!(net.blocks.len(), 6);
        assert!(net.blocks[0].shortcut.is_none() && net.blocks[2].shortcut.is_some());
        // Each branch's last convolution starts at BRANCH_END_SCALE × He; the first is
        // He × L^(−1/2).
        let variance = |w: Vec<f32>| w.iter().map(|x| x * x).sum::<f32>() / w.len() as f32;
        let fan_in = 16 * 9;
        let var = variance(values(net.blocks[3].conv1.weight()));
        let expected = 2.0 / fan_in as f32 / config.branches() as f32;
        assert!((var / expected - 1.0).abs() < 0.1, "{var} vs {expected}");
        let var = variance(values(net.blocks[3].conv2.weight()));
        let expected = 2.0 / fan_in as f32 * BRANCH_END_SCALE * BRANCH_END_SCALE;
        assert!((var / expected - 1.0).abs() < 0.1, "{var} vs {expected}");
        // Weight normalisation: ‖w_o‖ = g_o per output channel.
        let stem = &net.stem;
        let w = values(stem.weight());
        let g = values(stem.g.val());
        for (row, g) in w.chunks(27).zip(&g) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - g).abs() < 1e-4 * g.max(1.0));
        }
        // The classifier's rows have length CLASSIFIER_LENGTH.
        assert!(
            values(net.fc_g.val())
                .iter()
                .all(|&g| g == CLASSIFIER_LENGTH)
        );
        let x = Tensor::<4>::random(
            [2, 3, 16, 16],
            burn::tensor::Distribution::Normal(0.0, 1.0),
            &device,
        );
        let logits = net.forward(x);
        assert_eq!(logits.dims(), [2, 10]);
        assert!(values(logits).iter().all(|v| v.is_finite()));
        // The same seed gives the same network.
        let again = ResNetPP::new(&config, &device, 5);
        assert_eq!(values(again.stem.v.val()), values(net.stem.v.val()));
    }

    /// The first step moves every weight tensor: no layer starts at a point where its gradient
    /// vanishes (weight normalisation with g = 0, or a zero classifier above it).
    #[test]
    fn every_weight_gets_a_gradient_at_the_start() {
        use crate::train::params::{flat_gradients, flatten};
        use burn::optim::GradientsParams;
        let device = Device::flex().autodiff();
        let config = ResNetConfig {
            depth: 8,
            width: 4,
            channels: 1,
            classes: 3,
        };
        let net = ResNetPP::new(&config, &device, 4);
        let x = Tensor::<4>::random(
            [4, 1, 12, 12],
            burn::tensor::Distribution::Normal(0.0, 1.0),
            &device,
        );
        let target = Tensor::<2>::random(
            [4, 3],
            burn::tensor::Distribution::Normal(0.0, 1.0),
            &device,
        );
        let loss = (net.forward(x) - target).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &net);
        let grad = flat_gradients(&net, &grads);
        let (_, layout) = flatten(&net);
        for (path, offset, len) in &layout.tensors {
            let norm: f32 = grad[*offset..offset + len].iter().map(|g| g * g).sum();
            // The scalar biases and multipliers, and the classifier's bias, are not weights.
            if path.ends_with(".v") || path.ends_with(".g") || path.starts_with("fc_") {
                assert!(norm > 0.0, "{path} gets no gradient at the start");
            }
        }
    }

    #[test]
    fn grey_images_of_other_sizes() {
        let device = Device::flex();
        let config = ResNetConfig {
            depth: 8,
            width: 4,
            channels: 1,
            classes: 10,
        };
        let net = ResNetPP::new(&config, &device, 1);
        let x = Tensor::<4>::zeros([3, 1, 28, 28], &device);
        assert_eq!(net.forward(x).dims(), [3, 10]);
    }
}
