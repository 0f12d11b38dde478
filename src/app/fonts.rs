//! The fonts of the app: egui's own plus a fallback for the mathematical symbols they lack.

/// DejaVu Sans 2.37 (Bitstream Vera and Arev licences, `assets/fonts/LICENSE-DejaVu.txt`).
/// egui's Ubuntu Light has the Greek letters and digit subscripts; DejaVu adds what the UI
/// also shows: combining marks (θ̂, ṗ), ᵢ, ⟨ ⟩, arrows, ∇, ∈ and the status marks (■ ▶ ⚠).
/// Bundled, so the app renders the same on every system.
const DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Adds DejaVu Sans as the last fallback of both font families, after egui's own fonts (so
/// Latin text keeps egui's look).
pub fn install_fonts(ctx: &egui::Context) {
    let mut fonts = egui::FontDefinitions::default();
    fonts.font_data.insert(
        "DejaVuSans".to_owned(),
        std::sync::Arc::new(egui::FontData::from_static(DEJAVU_SANS)),
    );
    for family in [egui::FontFamily::Proportional, egui::FontFamily::Monospace] {
        fonts
            .families
            .entry(family)
            .or_default()
            .push("DejaVuSans".to_owned());
    }
    ctx.set_fonts(fonts);
}

/// The font of a label the painter draws (a tick, a title inside a plot) at `points` at a
/// desk, but never below the style's small text: presentation mode raises that floor, so
/// painted labels grow with the widgets' text instead of staying desk-sized.
pub fn painter_font(style: &egui::Style, points: f32) -> egui::FontId {
    let floor = style
        .text_styles
        .get(&egui::TextStyle::Small)
        .map_or(0.0, |f| f.size);
    egui::FontId::proportional(points.max(floor))
}

/// The height of `text` folded to `width` in `style`: what a wrapping label will take, for
/// layouts that must reserve it before drawing (column headers, map titles).
pub fn wrapped_height(
    ui: &egui::Ui,
    text: impl Into<egui::WidgetText>,
    width: f32,
    style: egui::TextStyle,
) -> f32 {
    text.into()
        .into_galley(ui, Some(egui::TextWrapMode::Wrap), width, style)
        .size()
        .y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_fonts_cover_the_symbols_of_the_ui() {
        // Greek letters and subscripts, then symbols the UI shows that egui's own fonts lack
        // (θ̂ and ṗ are combining marks; ᵢ, ⟨K'⟩, arrows, ∇, ∈ and the status marks).
        let symbols = "θ₁ξ₂σβ≤√… \u{302}\u{307}ᵢ⟨⟩←→↺∇∈■▶▸⚠❚";
        let ctx = egui::Context::default();
        install_fonts(&ctx);
        // Fonts exist only once a pass has run. Its texture updates are for a painter this
        // test has none of (a debug build's epaint refuses to drop them unapplied).
        ctx.run_ui(egui::RawInput::default(), |_| {})
            .textures_delta
            .clear();
        for font in [
            egui::FontId::proportional(14.0),
            egui::FontId::monospace(14.0),
        ] {
            for c in symbols.chars() {
                assert!(
                    ctx.fonts_mut(|f| f.has_glyph(&font, c)),
                    "{font:?} has no {c:?}"
                );
            }
        }
        // Without DejaVu some are missing, so the fallback is what provides them.
        let bare = egui::Context::default();
        bare.run_ui(egui::RawInput::default(), |_| {})
            .textures_delta
            .clear();
        assert!(!bare.fonts_mut(|f| f.has_glyphs(&egui::FontId::proportional(14.0), "ᵢ⟨⟩")));
    }
}
