//! The image readers on the real Fashion-MNIST files that Debian's `dataset-fashion-mnist`
//! installs (`scripts/test` installs it). Missing files fail the test with the install hint.
#![cfg(feature = "train")]

use atmc_lab::train::augment::Pipeline;
use atmc_lab::train::data::{DEBIAN_FASHION_MNIST, DatasetKind, load};
use std::path::Path;

#[test]
fn real_fashion_mnist_loads_with_its_known_sizes() {
    let data = load(DatasetKind::FashionMnist, Path::new(DEBIAN_FASHION_MNIST))
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!((data.train.len(), data.test.len()), (60_000, 10_000));
    assert_eq!(
        (data.train.channels, data.train.height, data.train.width),
        (1, 28, 28)
    );
    // Balanced: 6,000 training and 1,000 test images per class.
    for (set, per_class) in [(&data.train, 6_000), (&data.test, 1_000)] {
        let mut counts = [0usize; 10];
        for &l in &set.labels {
            counts[l as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c == per_class), "{counts:?}");
    }
    // The published pixel mean and standard deviation of the training set: 0.2860, 0.3530.
    let pipeline = Pipeline::for_training(&data.train, true);
    println!(
        "Fashion-MNIST channel mean {:?}, std {:?}",
        pipeline.mean, pipeline.std
    );
    assert!((pipeline.mean[0] - 0.2860).abs() < 1e-3);
    assert!((pipeline.std[0] - 0.3530).abs() < 1e-3);
}
