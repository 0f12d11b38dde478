//! Draws the app icon and writes it to `assets/icon.png` (a tool, not a test:
//! `tests/it/icon.rs` checks that the committed file is this drawing).
//!
//! ```text
//! cargo run --release --example write_icon
//! ```

mod draw;

use draw::{ICON, SIZE, draw};

fn main() {
    image::RgbaImage::from_raw(SIZE, SIZE, draw())
        .expect("SIZE² RGBA pixels")
        .save(ICON)
        .expect("write assets/icon.png");
    println!("wrote {ICON}");
}
