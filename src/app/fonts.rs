//! The fonts of the app: egui's own plus a fallback for Greek letters, subscripts and
//! mathematical symbols.

/// Where Debian's fonts-dejavu-core puts its fonts (Greek, subscripts and symbols that
/// egui's built-in font lacks). Loaded at run time, never shipped.
const FALLBACK_FONTS: &[(&str, &str, egui::FontFamily)] = &[
    (
        "DejaVuSans",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        egui::FontFamily::Proportional,
    ),
    (
        "DejaVuSansMono",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        egui::FontFamily::Monospace,
    ),
];

/// Adds the system's DejaVu fonts (when present) as fallbacks after egui's own fonts.
pub fn install_fonts(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    let mut added = false;
    for (name, path, family) in FALLBACK_FONTS {
        if let Ok(bytes) = std::fs::read(path) {
            fonts.font_data.insert(
                (*name).to_owned(),
                std::sync::Arc::new(egui::FontData::from_owned(bytes)),
            );
            fonts
                .families
                .entry(family.clone())
                .or_default()
                .push((*name).to_owned());
            added = true;
        }
    }
    if added {
        ctx.set_fonts(fonts);
    }
}
