//! The data files of MLP presets, read here and not in `math` (which reads no files). A
//! `Csv(path:)` is resolved when its preset is loaded: relative to the preset file that names
//! it (a lecture's steps: inside the lecture's folder, never outside it), and the file is read
//! and parsed then, so a missing, hostile or malformed file is refused before anything runs.
//! Every read is a regular file within the limit of data files
//! ([`crate::fsutil::DATA_FILES`], 64 MB).

use super::AnyPreset;
use crate::fsutil;
use crate::math::datasets::{DataSource, DataSpec, Dataset, parse_csv};
use crate::math::mlp::{MlpPosterior, MlpSpec};
use std::path::{Path, PathBuf};

/// The text of the CSV data file `path`: a regular file within the limit of data files, else
/// refused before reading with a message naming the path, what it is and the limit.
pub fn read_csv(path: &str) -> Result<String, String> {
    fsutil::read_text(Path::new(path), fsutil::DATA_FILES).map_err(|e| match e.kind {
        fsutil::InputErrorKind::Io(_) => format!(
            "cannot read data file {}: {}",
            crate::math::ranges::escaped(path),
            e.reason()
        ),
        _ => e.to_string(),
    })
}

/// Builds a data set, reading a CSV file through [`read_csv`].
pub fn build_dataset(spec: &DataSpec) -> Result<Dataset, String> {
    spec.build(&read_csv)
}

/// Builds a network posterior and its data set, reading a CSV file through [`read_csv`].
pub fn build_network(spec: &MlpSpec) -> Result<(MlpPosterior, Dataset), String> {
    spec.build(&read_csv)
}

/// Where the relative paths written in a preset start.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place<'a> {
    /// A preset file of the user's own, in this folder: its paths start there and may lead
    /// anywhere.
    File(&'a Path),
    /// A preset inside a lecture's folder `folder` (shared with a class): its paths start at
    /// `sub`, the folder of the file that names them relative to `folder`, and must stay in
    /// `folder`.
    Lecture {
        /// The lecture's folder.
        folder: &'a Path,
        /// Where the paths start, relative to `folder` (empty: `folder` itself).
        sub: &'a Path,
    },
}

/// Resolves an MLP preset's `Csv(path:)` at `place` (the path is rewritten to the resolved
/// one, which the working directory reads), then reads and parses the file, so that a bad file
/// is refused on loading, not when the preset runs. Other presets are left as they are.
pub(crate) fn resolve(preset: &mut AnyPreset, place: Place) -> Result<(), String> {
    let AnyPreset::Mlp(mlp) = preset else {
        return Ok(());
    };
    let DataSource::Csv { path } = &mut mlp.network.data.source else {
        return Ok(());
    };
    let resolved: PathBuf = match place {
        Place::File(folder) => folder.join(&*path),
        Place::Lecture { folder, sub } => {
            let written = sub.join(&*path);
            fsutil::inside(folder, &written.to_string_lossy())
                .map_err(|e| format!("data file {e} (a lecture's files stay in its folder)"))?
        }
    };
    *path = resolved.to_string_lossy().into_owned();
    parse_csv(&read_csv(path)?, path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_preset(path: &str) -> AnyPreset {
        let mut p = super::super::MlpPreset::default_preset();
        p.network.data.source = DataSource::Csv { path: path.into() };
        AnyPreset::Mlp(p)
    }

    fn path_of(preset: &AnyPreset) -> &str {
        match preset {
            AnyPreset::Mlp(p) => match &p.network.data.source {
                DataSource::Csv { path } => path,
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn data_paths_are_resolved_where_their_preset_is_and_checked() {
        let dir = std::env::temp_dir().join(format!("atmc-lab-data-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lecture/presets")).unwrap();
        let points: String = (0..8).map(|i| format!("{i},{i},{}\n", i % 2)).collect();
        std::fs::write(dir.join("lecture/points.csv"), &points).unwrap();
        // A user's preset: relative to its folder.
        let mut p = csv_preset("points.csv");
        resolve(&mut p, Place::File(&dir.join("lecture"))).unwrap();
        assert_eq!(
            path_of(&p),
            dir.join("lecture/points.csv").to_string_lossy()
        );
        let (_, data) = build_network(match &p {
            AnyPreset::Mlp(m) => &m.network,
            _ => unreachable!(),
        })
        .unwrap();
        assert_eq!(data.len(), 8);
        // A lecture's step file in presets/: `..` within the folder is fine, out of it not.
        let folder = dir.join("lecture");
        let mut p = csv_preset("../points.csv");
        let sub = Path::new("presets");
        resolve(
            &mut p,
            Place::Lecture {
                folder: &folder,
                sub,
            },
        )
        .unwrap();
        let mut p = csv_preset("../../points.csv");
        let e = resolve(
            &mut p,
            Place::Lecture {
                folder: &folder,
                sub,
            },
        )
        .unwrap_err();
        assert!(e.contains("leads out of"), "{e}");
        let mut p = csv_preset("/dev/zero");
        let e = resolve(&mut p, Place::File(&dir)).unwrap_err();
        assert_eq!(
            e,
            "/dev/zero is not a regular file (it is a character device)"
        );
        // Other presets are untouched.
        let mut toy = AnyPreset::load("default").unwrap();
        let before = toy.clone();
        resolve(&mut toy, Place::File(&dir)).unwrap();
        assert_eq!(toy, before);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
