//! Textures kept across frames and uploaded again only when what they show changed. An upload
//! sends every pixel to the renderer; a paused view, or one between two engine ticks, has
//! nothing new to send. The uploads are counted for `atmc-lab bench --ui`.

use egui::{ColorImage, TextureHandle, TextureOptions};
use std::sync::atomic::{AtomicU64, Ordering};

/// Texture uploads since the program started.
static UPLOADS: AtomicU64 = AtomicU64::new(0);
/// Bytes of those uploads.
static UPLOAD_BYTES: AtomicU64 = AtomicU64::new(0);

/// (uploads, bytes) since the program started.
pub fn uploads() -> (u64, u64) {
    (
        UPLOADS.load(Ordering::Relaxed),
        UPLOAD_BYTES.load(Ordering::Relaxed),
    )
}

/// Counts an upload made outside [`CachedTexture`] (views that key several textures at once).
pub fn record_upload(image: &ColorImage) {
    UPLOADS.fetch_add(1, Ordering::Relaxed);
    UPLOAD_BYTES.fetch_add(4 * image.pixels.len() as u64, Ordering::Relaxed);
}

/// A texture and the key of what it shows.
#[derive(Default)]
pub struct CachedTexture {
    handle: Option<TextureHandle>,
    key: Option<u64>,
}

impl CachedTexture {
    /// The texture showing `key`: `make` runs, and the image is uploaded, only when `key`
    /// differs from the last one (or there is no texture yet).
    pub fn show(
        &mut self,
        ctx: &egui::Context,
        name: &str,
        key: u64,
        options: TextureOptions,
        make: impl FnOnce() -> ColorImage,
    ) -> &TextureHandle {
        if self.key != Some(key) || self.handle.is_none() {
            let image = make();
            record_upload(&image);
            match &mut self.handle {
                Some(t) => t.set(image, options),
                slot => *slot = Some(ctx.load_texture(name, image, options)),
            }
            self.key = Some(key);
        }
        self.handle.as_ref().expect("set above")
    }

    /// The texture, if one was made.
    pub fn get(&self) -> Option<&TextureHandle> {
        self.handle.as_ref()
    }
}

/// A key for [`CachedTexture::show`] from anything hashable.
pub fn key_of(value: &impl std::hash::Hash) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_key_uploads_nothing() {
        let ctx = egui::Context::default();
        let mut t = CachedTexture::default();
        let image = || ColorImage::filled([4, 4], egui::Color32::RED);
        let before = uploads().0;
        let mut made = 0;
        for key in [1, 1, 1, 2, 2] {
            t.show(&ctx, "t", key, TextureOptions::NEAREST, || {
                made += 1;
                image()
            });
        }
        assert_eq!(made, 2);
        assert!(uploads().0 - before >= 2);
        assert_ne!(key_of(&[1u32, 2]), key_of(&[2u32, 1]));
    }
}
