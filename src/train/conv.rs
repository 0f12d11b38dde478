//! ResNet++'s convolutions and SELU as a burn backend extension. A convolution is an im2col and
//! one GEMM per image (the `gemm` crate that burn's CPU backend already uses), forward and
//! backward, images in parallel on rayon; SELU is one pass forward and one backward.
//!
//! Why not burn's own `conv2d`: on the CPU backend (flex) its backward computes the weight
//! gradient as a convolution of the inputs with the output gradient as the kernel (the batch
//! as channels: an im2col of B·H·W columns per input channel) and the input gradient as a
//! transposed convolution, each with its own layout conversions. Measured on ResNet++ depth 8
//! width 16 with batch 128 on Fashion-MNIST (docs/performance.md, "ResNet++ training speed"),
//! the convolutions took 65 % of the CPU time (34 % im2col and layout copies, 31 % GEMM) and
//! burn's `selu`, six element-wise operations forward and as many backward, 12 %. Here forward
//! and backward share one layout: the columns of an image (rows (channel, kernel row, kernel
//! column), columns output pixels) are rebuilt from the input in the backward pass instead of
//! kept, so a convolution holds only one image's columns per thread.
//!
//! The weight gradient is summed over fixed chunks of [`CHUNK`] images, then over the chunks in
//! order: the same numbers whatever the number of threads. Results differ from burn's
//! convolution only by float rounding (the order of the sums); SELU's values are burn's bit for
//! bit.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Backend, Dispatch, Flex, backend_extension};
use burn::tensor::{Tensor, TensorData};
use rayon::prelude::*;

/// Images per partial sum of the weight gradient.
pub const CHUNK: usize = 8;

/// The shape of one convolution: square kernel, the same stride and zero padding on both axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Images.
    pub batch: usize,
    /// Input channels.
    pub inputs: usize,
    /// Output channels.
    pub outputs: usize,
    /// Input height.
    pub height: usize,
    /// Input width.
    pub width: usize,
    /// Kernel size.
    pub kernel: usize,
    /// Stride.
    pub stride: usize,
    /// Zero padding.
    pub padding: usize,
}

impl ConvShape {
    fn out_height(&self) -> usize {
        (self.height + 2 * self.padding - self.kernel) / self.stride + 1
    }
    fn out_width(&self) -> usize {
        (self.width + 2 * self.padding - self.kernel) / self.stride + 1
    }
    /// Output pixels per channel.
    fn pixels(&self) -> usize {
        self.out_height() * self.out_width()
    }
    /// Rows of an image's columns: inputs × kernel × kernel.
    fn rows(&self) -> usize {
        self.inputs * self.kernel * self.kernel
    }
    fn image_len(&self) -> usize {
        self.inputs * self.height * self.width
    }
    fn out_len(&self) -> usize {
        self.outputs * self.pixels()
    }
}

/// The output coordinates `o` along an axis of `outs` whose kernel tap `k` falls inside the
/// input (`0 ≤ o·stride + k − padding < size`), as a range.
#[inline]
fn valid(outs: usize, k: usize, s: &ConvShape, size: usize) -> std::ops::Range<usize> {
    let lo = s.padding.saturating_sub(k).div_ceil(s.stride);
    let hi = if size + s.padding > k {
        ((size - 1 + s.padding - k) / s.stride + 1).min(outs)
    } else {
        0
    };
    lo..hi.max(lo)
}

/// The columns of one image (`rows × pixels`, row-major).
fn im2col(s: &ConvShape, image: &[f32], cols: &mut [f32]) {
    let (oh, ow, k, st) = (s.out_height(), s.out_width(), s.kernel, s.stride);
    for c in 0..s.inputs {
        let plane = &image[c * s.height * s.width..(c + 1) * s.height * s.width];
        for ki in 0..k {
            let ys = valid(oh, ki, s, s.height);
            for kj in 0..k {
                let xs = valid(ow, kj, s, s.width);
                let row = (c * k + ki) * k + kj;
                let dst = &mut cols[row * oh * ow..(row + 1) * oh * ow];
                dst[..ys.start * ow].fill(0.0);
                dst[ys.end * ow..].fill(0.0);
                for oy in ys.clone() {
                    let line = &mut dst[oy * ow..(oy + 1) * ow];
                    let iy = oy * st + ki - s.padding;
                    let src = &plane[iy * s.width..(iy + 1) * s.width];
                    line[..xs.start].fill(0.0);
                    line[xs.end..].fill(0.0);
                    // ix = ox·stride + kj − padding.
                    if xs.is_empty() {
                        continue;
                    }
                    let first = xs.start * st + kj - s.padding;
                    if st == 1 {
                        line[xs.clone()].copy_from_slice(&src[first..first + xs.len()]);
                    } else {
                        for (v, ix) in line[xs.clone()].iter_mut().zip((first..).step_by(st)) {
                            *v = src[ix];
                        }
                    }
                }
            }
        }
    }
}

/// Adds the columns' gradient of one image back onto its pixels (the adjoint of [`im2col`]).
fn col2im(s: &ConvShape, cols: &[f32], image: &mut [f32]) {
    let (oh, ow, k, st) = (s.out_height(), s.out_width(), s.kernel, s.stride);
    image.fill(0.0);
    for c in 0..s.inputs {
        let plane = &mut image[c * s.height * s.width..(c + 1) * s.height * s.width];
        for ki in 0..k {
            let ys = valid(oh, ki, s, s.height);
            for kj in 0..k {
                let xs = valid(ow, kj, s, s.width);
                let row = (c * k + ki) * k + kj;
                let src = &cols[row * oh * ow..(row + 1) * oh * ow];
                for oy in ys.clone() {
                    let iy = oy * st + ki - s.padding;
                    let line = &src[oy * ow..(oy + 1) * ow];
                    let dst = &mut plane[iy * s.width..(iy + 1) * s.width];
                    if xs.is_empty() {
                        continue;
                    }
                    let first = xs.start * st + kj - s.padding;
                    if st == 1 {
                        for (d, g) in dst[first..first + xs.len()]
                            .iter_mut()
                            .zip(&line[xs.clone()])
                        {
                            *d += g;
                        }
                    } else {
                        for (g, ix) in line[xs.clone()].iter().zip((first..).step_by(st)) {
                            dst[ix] += g;
                        }
                    }
                }
            }
        }
    }
}

/// dst (m × n, row stride `dst_rs`) = lhs · rhs, or += when `accumulate`; each matrix given by
/// its pointer and its column and row strides.
#[allow(clippy::too_many_arguments)]
fn gemm(
    (m, n, k): (usize, usize, usize),
    dst: &mut [f32],
    accumulate: bool,
    lhs: &[f32],
    (lhs_cs, lhs_rs): (usize, usize),
    rhs: &[f32],
    (rhs_cs, rhs_rs): (usize, usize),
) {
    assert!(dst.len() >= m * n);
    assert!(m == 0 || k == 0 || lhs.len() > (m - 1) * lhs_rs + (k - 1) * lhs_cs);
    assert!(k == 0 || n == 0 || rhs.len() > (k - 1) * rhs_rs + (n - 1) * rhs_cs);
    // SAFETY: the asserts keep every element gemm reads or writes inside the slices.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// The convolution of `x` (`batch × inputs × height × width`) with `w` (`outputs × inputs ×
/// kernel × kernel`): `batch × outputs × out_height × out_width`.
pub fn forward(s: &ConvShape, x: &[f32], w: &[f32]) -> Vec<f32> {
    assert_eq!(x.len(), s.batch * s.image_len());
    assert_eq!(w.len(), s.outputs * s.rows());
    let (rows, pixels) = (s.rows(), s.pixels());
    let mut out = vec![0.0; s.batch * s.out_len()];
    if out.is_empty() {
        return out;
    }
    out.par_chunks_mut(s.out_len())
        .zip(x.par_chunks(s.image_len()))
        .for_each_init(
            || vec![0.0; rows * pixels],
            |cols, (out, image)| {
                im2col(s, image, cols);
                // out (outputs × pixels) = w (outputs × rows) · cols (rows × pixels).
                gemm(
                    (s.outputs, pixels, rows),
                    out,
                    false,
                    w,
                    (1, rows),
                    cols,
                    (1, pixels),
                );
            },
        );
    out
}

/// The gradients of the loss with respect to `x` (when `want_x`) and `w`, given its gradient
/// `dy` with respect to the output.
pub fn backward(
    s: &ConvShape,
    x: &[f32],
    w: &[f32],
    dy: &[f32],
    want_x: bool,
) -> (Option<Vec<f32>>, Vec<f32>) {
    assert_eq!(dy.len(), s.batch * s.out_len());
    let (rows, pixels) = (s.rows(), s.pixels());
    let mut dx = want_x.then(|| vec![0.0; x.len()]);
    let chunks = s.batch.div_ceil(CHUNK);
    let work = |chunk: usize, dx: Option<&mut [f32]>| -> Vec<f32> {
        let mut dw = vec![0.0; s.outputs * rows];
        let mut cols = vec![0.0; rows * pixels];
        let mut dcols = if dx.is_some() {
            vec![0.0; rows * pixels]
        } else {
            Vec::new()
        };
        let images = chunk * CHUNK..((chunk + 1) * CHUNK).min(s.batch);
        let mut dx = dx;
        for (n, b) in images.enumerate() {
            let dy = &dy[b * s.out_len()..(b + 1) * s.out_len()];
            im2col(s, &x[b * s.image_len()..(b + 1) * s.image_len()], &mut cols);
            // dw (outputs × rows) += dy (outputs × pixels) · colsᵀ (pixels × rows).
            gemm(
                (s.outputs, rows, pixels),
                &mut dw,
                n > 0,
                dy,
                (1, pixels),
                &cols,
                (pixels, 1),
            );
            if let Some(dx) = dx.as_deref_mut() {
                // dcols (rows × pixels) = wᵀ (rows × outputs) · dy (outputs × pixels).
                gemm(
                    (rows, pixels, s.outputs),
                    &mut dcols,
                    false,
                    w,
                    (rows, 1),
                    dy,
                    (1, pixels),
                );
                let first = b - chunk * CHUNK;
                col2im(
                    s,
                    &dcols,
                    &mut dx[first * s.image_len()..(first + 1) * s.image_len()],
                );
            }
        }
        dw
    };
    let partial: Vec<Vec<f32>> = match dx.as_deref_mut() {
        Some(dx) => dx
            .par_chunks_mut(CHUNK * s.image_len())
            .enumerate()
            .map(|(chunk, dx)| work(chunk, Some(dx)))
            .collect(),
        None => (0..chunks)
            .into_par_iter()
            .map(|chunk| work(chunk, None))
            .collect(),
    };
    let mut dw = vec![0.0; s.outputs * rows];
    for p in &partial {
        for (d, v) in dw.iter_mut().zip(p) {
            *d += v;
        }
    }
    (dx, dw)
}

/// SELU's constants, as burn's `activation::selu` has them (f64, rounded to f32 where used).
const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_GAMMA: f64 = 1.050_700_987_355_480_5;

/// Elements per rayon task of the element-wise operations.
const ELEMENTS_PER_TASK: usize = 1 << 14;

/// SELU element-wise, with the operations of burn's `activation::selu` in its order (γx, or
/// (eˣ − 1)·αγ): the same values.
pub fn selu_forward(x: &[f32]) -> Vec<f32> {
    let (gamma, alpha_gamma) = (SELU_GAMMA as f32, (SELU_ALPHA * SELU_GAMMA) as f32);
    let mut out = vec![0.0; x.len()];
    out.par_chunks_mut(ELEMENTS_PER_TASK)
        .zip(x.par_chunks(ELEMENTS_PER_TASK))
        .for_each(|(out, x)| {
            for (y, &x) in out.iter_mut().zip(x) {
                *y = if x >= 0.0 {
                    x * gamma
                } else {
                    (x.exp() - 1.0) * alpha_gamma
                };
            }
        });
    out
}

/// The gradient of SELU's input given its output's gradient `dy`: γ·dy, or (dy·αγ)·eˣ (burn's
/// order of the products).
pub fn selu_backward(x: &[f32], dy: &[f32]) -> Vec<f32> {
    let (gamma, alpha_gamma) = (SELU_GAMMA as f32, (SELU_ALPHA * SELU_GAMMA) as f32);
    let mut dx = vec![0.0; x.len()];
    dx.par_chunks_mut(ELEMENTS_PER_TASK)
        .zip(x.par_chunks(ELEMENTS_PER_TASK))
        .zip(dy.par_chunks(ELEMENTS_PER_TASK))
        .for_each(|((dx, x), dy)| {
            for ((d, &x), &g) in dx.iter_mut().zip(x).zip(dy) {
                *d = if x >= 0.0 {
                    g * gamma
                } else {
                    g * alpha_gamma * x.exp()
                };
            }
        });
    dx
}

/// A contiguous copy of `t` only where it is not contiguous already.
fn contiguous(t: &FlexTensor) -> FlexTensor {
    t.to_contiguous()
}

fn flex(values: Vec<f32>, shape: &[usize]) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape.to_vec()))
}

fn shape_of(x: &[usize], w: &[usize], stride: usize, padding: usize) -> ConvShape {
    assert!(x.len() == 4 && w.len() == 4 && x[1] == w[1] && w[2] == w[3]);
    ConvShape {
        batch: x[0],
        inputs: x[1],
        outputs: w[0],
        height: x[2],
        width: x[3],
        kernel: w[2],
        stride,
        padding,
    }
}

/// The convolution as an operation of burn's backends (the CPU backend and autodiff over it).
#[backend_extension(Flex, Autodiff)]
pub trait ConvBackend: Backend {
    /// `x` (`batch × inputs × height × width`) convolved with `w` (`outputs × inputs × k × k`),
    /// without bias, at `stride` with zero `padding` on every side.
    fn im2col_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        stride: usize,
        padding: usize,
    ) -> FloatTensor<Self>;

    /// SELU in one pass over the elements (burn's `activation::selu` makes six, and as many
    /// tensors).
    fn fused_selu(x: FloatTensor<Self>) -> FloatTensor<Self>;
}

impl ConvBackend for Flex {
    fn im2col_conv2d(x: FlexTensor, w: FlexTensor, stride: usize, padding: usize) -> FlexTensor {
        let (x, w) = (contiguous(&x), contiguous(&w));
        let s = shape_of(x.layout().shape(), w.layout().shape(), stride, padding);
        let out = forward(&s, x.storage(), w.storage());
        flex(out, &[s.batch, s.outputs, s.out_height(), s.out_width()])
    }

    fn fused_selu(x: FlexTensor) -> FlexTensor {
        let x = contiguous(&x);
        flex(selu_forward(x.storage()), x.layout().shape())
    }
}

#[derive(Debug)]
struct SeluBackward;

impl Backward<Flex, 1> for SeluBackward {
    type State = NodeId;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x] = ops.parents;
        let dy = grads.consume::<Flex>(&ops.node);
        let x: FlexTensor = checkpointer.retrieve_node_output(ops.state);
        if let Some(node) = node_x {
            let (x, dy) = (contiguous(&x), contiguous(&dy));
            let dx = selu_backward(x.storage(), dy.storage());
            grads.register::<Flex>(node.id, flex(dx, x.layout().shape()));
        }
    }
}

#[derive(Debug)]
struct Im2colConvBackward;

impl Backward<Flex, 2> for Im2colConvBackward {
    type State = (NodeId, NodeId, usize, usize);

    fn backward(
        self,
        ops: Ops<Self::State, 2>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let [node_x, node_w] = ops.parents;
        let dy = grads.consume::<Flex>(&ops.node);
        let (x_state, w_state, stride, padding) = ops.state;
        let x: FlexTensor = checkpointer.retrieve_node_output(x_state);
        let w: FlexTensor = checkpointer.retrieve_node_output(w_state);
        let (x, w, dy) = (contiguous(&x), contiguous(&w), contiguous(&dy));
        let (xs, ws) = (x.layout().shape(), w.layout().shape());
        let s = shape_of(xs, ws, stride, padding);
        let (dx, dw) = backward(&s, x.storage(), w.storage(), dy.storage(), node_x.is_some());
        if let (Some(node), Some(dx)) = (node_x, dx) {
            grads.register::<Flex>(node.id, flex(dx, xs));
        }
        if let Some(node) = node_w {
            grads.register::<Flex>(node.id, flex(dw, ws));
        }
    }
}

impl<C: CheckpointStrategy> ConvBackend for Autodiff<Flex, C> {
    fn im2col_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        stride: usize,
        padding: usize,
    ) -> FloatTensor<Self> {
        match Im2colConvBackward
            .prepare::<C>([x.node(), w.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_state = prep.checkpoint(&x);
                let w_state = prep.checkpoint(&w);
                let out =
                    Flex::im2col_conv2d(x.into_primitive(), w.into_primitive(), stride, padding);
                prep.finish((x_state, w_state, stride, padding), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::im2col_conv2d(
                x.into_primitive(),
                w.into_primitive(),
                stride,
                padding,
            )),
        }
    }

    fn fused_selu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        match SeluBackward
            .prepare::<C>([x.node()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let state = prep.checkpoint(&x);
                prep.finish(state, Flex::fused_selu(x.into_primitive()))
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_selu(x.into_primitive())),
        }
    }
}

/// `x` convolved with `w` (no bias) at `stride` with zero `padding`, on any device of burn's
/// CPU backend, with or without autodiff.
pub fn conv2d(x: Tensor<4>, w: Tensor<4>, stride: usize, padding: usize) -> Tensor<4> {
    Tensor::from_dispatch(<Dispatch as ConvBackend>::im2col_conv2d(
        x.into_dispatch(),
        w.into_dispatch(),
        stride,
        padding,
    ))
}

/// SELU (burn's `activation::selu`, same values) in one pass forward and one backward.
pub fn selu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as ConvBackend>::fused_selu(x.into_dispatch()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::module::conv2d as burn_conv2d;
    use burn::tensor::ops::ConvOptions;
    use burn::tensor::{Device, Distribution};

    fn vals<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().expect("f32")
    }

    fn close(a: &[f32], b: &[f32], what: &str) {
        assert_eq!(a.len(), b.len(), "{what}");
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs())).max(1e-3);
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            assert!((x - y).abs() <= 2e-5 * scale, "{what}[{i}]: {x} vs {y}");
        }
    }

    /// Forward and both gradients equal burn's conv2d up to float rounding, for the shapes of
    /// ResNet++ (3×3 stride 1 and 2, 1×1 stride 2) and odd sizes, with the batch not a
    /// multiple of the chunk.
    #[test]
    fn matches_burns_convolution_and_its_gradients() {
        let device = Device::flex().autodiff();
        for (batch, cin, cout, size, k, stride, pad) in [
            (3, 2, 5, 7, 3, 1, 1),
            (11, 4, 8, 9, 3, 2, 1),
            (10, 4, 8, 8, 1, 2, 0),
            (9, 1, 3, 6, 3, 1, 1),
        ] {
            let x = Tensor::<4>::random(
                [batch, cin, size, size],
                Distribution::Normal(0.0, 1.0),
                &device,
            )
            .require_grad();
            let w = Tensor::<4>::random([cout, cin, k, k], Distribution::Normal(0.0, 1.0), &device)
                .require_grad();
            let ours = conv2d(x.clone(), w.clone(), stride, pad);
            let theirs = burn_conv2d(
                x.clone(),
                w.clone(),
                None,
                ConvOptions::new([stride, stride], [pad, pad], [1, 1], 1),
            );
            assert_eq!(ours.dims(), theirs.dims());
            let target = Tensor::<4>::random(ours.dims(), Distribution::Normal(0.0, 1.0), &device);
            close(&vals(ours.clone()), &vals(theirs.clone()), "forward");
            let g1 = (ours * target.clone()).sum().backward();
            let g2 = (theirs * target).sum().backward();
            close(
                &vals(x.grad(&g1).unwrap()),
                &vals(x.grad(&g2).unwrap()),
                "dx",
            );
            close(
                &vals(w.grad(&g1).unwrap()),
                &vals(w.grad(&g2).unwrap()),
                "dw",
            );
        }
    }

    /// SELU: the same values as burn's, and its gradient up to float rounding.
    #[test]
    fn selu_matches_burns() {
        let device = Device::flex().autodiff();
        let x =
            Tensor::<2>::random([37, 1000], Distribution::Normal(0.0, 2.0), &device).require_grad();
        let ours = selu(x.clone());
        let theirs = burn::tensor::activation::selu(x.clone());
        let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(vals(ours.clone())), bits(vals(theirs.clone())));
        let target = Tensor::<2>::random([37, 1000], Distribution::Normal(0.0, 1.0), &device);
        let g1 = (ours * target.clone()).sum().backward();
        let g2 = (theirs * target).sum().backward();
        close(
            &vals(x.grad(&g1).unwrap()),
            &vals(x.grad(&g2).unwrap()),
            "dx",
        );
    }

    /// Without autodiff (evaluation) the same values.
    #[test]
    fn runs_without_autodiff() {
        let device = Device::flex();
        let x = Tensor::<4>::random([2, 3, 5, 5], Distribution::Normal(0.0, 1.0), &device);
        let w = Tensor::<4>::random([4, 3, 3, 3], Distribution::Normal(0.0, 1.0), &device);
        let ours = conv2d(x.clone(), w.clone(), 1, 1);
        let theirs = burn_conv2d(x, w, None, ConvOptions::new([1, 1], [1, 1], [1, 1], 1));
        close(&vals(ours), &vals(theirs), "forward");
    }
}
