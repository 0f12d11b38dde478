//! Training image classifiers with ATMC (MATH.md §8): the data on disk, the input pipeline
//! and, built on them, the ResNet++ runs. Pure Rust here: no GPU, no UI.

pub mod augment;
pub mod background;
pub mod checkpoint;
pub mod conv;
pub mod data;
pub mod optimizer;
pub mod params;
pub mod resnet;
pub mod trainer;
