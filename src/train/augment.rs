//! Minibatches of images as the network sees them: shuffled per epoch, randomly cropped
//! (zero padding of 4, then a crop of the original size) and flipped left–right, and
//! normalised per channel. Every random choice is a function of (seed, epoch, image), so a
//! resumed run draws exactly the batches the interrupted one would have.

use super::data::ImageSet;
use crate::math::rng::{RngCounter, SequentialRng, Stream};
use rand::seq::SliceRandom;

/// Padding of the random crop.
pub const CROP_PADDING: usize = 4;

/// The order of the training images in `epoch`: a seeded shuffle, a function of (seed, epoch)
/// alone, so a resumed run reshuffles exactly as the interrupted one would have.
pub fn epoch_order(n: usize, seed: u64, epoch: u32) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    // Streams above 2^16 stay clear of the other host-side generators.
    order.shuffle(&mut SequentialRng::new(seed, 0x0001_0000 + epoch));
    order
}

/// How images become network inputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    /// Per-channel mean subtracted (in [0, 1] units).
    pub mean: Vec<f32>,
    /// Per-channel standard deviation divided by.
    pub std: Vec<f32>,
    /// Random crops and flips (training) or none (evaluation).
    pub augment: bool,
}

impl Pipeline {
    /// The pipeline for `train` normalised by its own channel statistics.
    pub fn for_training(train: &ImageSet, augment: bool) -> Self {
        let (mean, std) = train.channel_statistics();
        Self { mean, std, augment }
    }

    /// The same normalisation without augmentation (test sets).
    pub fn evaluation(&self) -> Self {
        Self {
            augment: false,
            ..self.clone()
        }
    }

    /// Writes images `indices` of `set` into `out` (`len × channels × height × width`,
    /// normalised), augmenting with the random choices of (`seed`, `epoch`, image index).
    pub fn batch(
        &self,
        set: &ImageSet,
        indices: &[u32],
        seed: u64,
        epoch: u32,
        out: &mut Vec<f32>,
    ) {
        let (c, h, w) = (set.channels, set.height, set.width);
        out.clear();
        out.resize(indices.len() * c * h * w, 0.0);
        for (slot, &index) in indices.iter().enumerate() {
            let image = set.image(index as usize);
            let dst = &mut out[slot * c * h * w..(slot + 1) * c * h * w];
            let (dx, dy, flip) = if self.augment {
                let bits = RngCounter::new(seed, index, epoch).bits4(Stream::Init, 0x00A0_6000);
                let span = 2 * CROP_PADDING as u32 + 1;
                (
                    (bits[0] % span) as isize - CROP_PADDING as isize,
                    (bits[1] % span) as isize - CROP_PADDING as isize,
                    bits[2] & 1 == 1,
                )
            } else {
                (0, 0, false)
            };
            for ch in 0..c {
                let (mean, inv_std) = (self.mean[ch], 1.0 / self.std[ch]);
                // Padded pixels are black (0) before normalisation, as in the usual recipe.
                let black = -mean * inv_std;
                for y in 0..h {
                    let sy = y as isize + dy;
                    for x in 0..w {
                        let xx = if flip { w - 1 - x } else { x };
                        let sx = xx as isize + dx;
                        dst[(ch * h + y) * w + x] =
                            if sy < 0 || sx < 0 || sy >= h as isize || sx >= w as isize {
                                black
                            } else {
                                let v = f32::from(image[(ch * h + sy as usize) * w + sx as usize]);
                                (v / 255.0 - mean) * inv_std
                            };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize) -> ImageSet {
        ImageSet {
            channels: 1,
            height: 8,
            width: 8,
            pixels: (0..n * 64).map(|i| (i % 64) as u8 * 4).collect(),
            labels: vec![0; n],
        }
    }

    #[test]
    fn epoch_orders_are_permutations_that_differ_by_epoch() {
        let a = epoch_order(1000, 7, 0);
        let b = epoch_order(1000, 7, 1);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_ne!(a, b);
        assert_eq!(a, epoch_order(1000, 7, 0));
    }

    #[test]
    fn evaluation_batches_are_normalised_pixels() {
        let set = ramp(2);
        let p = Pipeline {
            mean: vec![0.5],
            std: vec![0.25],
            augment: false,
        };
        let mut out = Vec::new();
        p.batch(&set, &[1], 0, 0, &mut out);
        assert_eq!(out.len(), 64);
        assert!((out[0] - (0.0 - 0.5) / 0.25).abs() < 1e-6);
        assert!((out[9] - (36.0 / 255.0 - 0.5) / 0.25).abs() < 1e-6);
    }

    #[test]
    fn augmentation_crops_and_flips_deterministically() {
        let set = ramp(64);
        let p = Pipeline {
            mean: vec![0.0],
            std: vec![1.0],
            augment: true,
        };
        let indices: Vec<u32> = (0..64).collect();
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        p.batch(&set, &indices, 3, 5, &mut a);
        p.batch(&set, &indices, 3, 5, &mut b);
        p.batch(&set, &indices, 3, 6, &mut c);
        assert_eq!(a, b, "same seed and epoch, same batch");
        assert_ne!(a, c, "another epoch, other crops");
        // Every augmented image is a shifted (and maybe mirrored) copy with black borders:
        // its values are pixels of the original or 0.
        for image in a.chunks(64) {
            assert!(image.iter().all(|v| (v * 255.0 / 4.0).round() < 64.0));
        }
        // Some images are flipped and some are shifted.
        let plain = {
            let mut v = Vec::new();
            p.evaluation().batch(&set, &indices, 3, 5, &mut v);
            v
        };
        let changed = a
            .chunks(64)
            .zip(plain.chunks(64))
            .filter(|(x, y)| x != y)
            .count();
        assert!(changed > 48, "{changed} of 64 images augmented");
    }
}
