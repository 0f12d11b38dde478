//! Image classification data on disk: CIFAR-10 in its binary format (a folder of
//! `cifar-10-batches-bin`, or the official `.tar.gz` itself) and Fashion-MNIST in IDX format
//! (gzipped or not, as Debian's `dataset-fashion-mnist` installs it). Every problem names the
//! file and what was expected of it.

use anyhow::{Context, anyhow, bail};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes of one CIFAR-10 record: a label byte and 3 × 32 × 32 pixel bytes.
pub const CIFAR_RECORD: usize = 1 + 3 * 32 * 32;
/// Records in each CIFAR-10 batch file.
pub const CIFAR_RECORDS_PER_BATCH: usize = 10_000;
/// The training batch files, then the test batch.
pub const CIFAR_FILES: [&str; 6] = [
    "data_batch_1.bin",
    "data_batch_2.bin",
    "data_batch_3.bin",
    "data_batch_4.bin",
    "data_batch_5.bin",
    "test_batch.bin",
];
/// CIFAR-10's class names.
pub const CIFAR_CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];
/// Fashion-MNIST's class names.
pub const FASHION_CLASSES: [&str; 10] = [
    "T-shirt/top",
    "trouser",
    "pullover",
    "dress",
    "coat",
    "sandal",
    "shirt",
    "sneaker",
    "bag",
    "ankle boot",
];
/// Where Debian's `dataset-fashion-mnist` puts the files.
pub const DEBIAN_FASHION_MNIST: &str = "/usr/share/datasets/fashion-mnist";

/// Which data set a folder holds.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum DatasetKind {
    /// CIFAR-10, 32×32 colour images.
    Cifar10,
    /// Fashion-MNIST, 28×28 grey images.
    FashionMnist,
}

impl DatasetKind {
    /// Channels, rows and columns of every image of the data set: what the networks are
    /// built for, so a file of another shape is refused when it is read.
    pub fn image_shape(self) -> (usize, usize, usize) {
        match self {
            DatasetKind::Cifar10 => (3, 32, 32),
            DatasetKind::FashionMnist => (1, 28, 28),
        }
    }

    /// Images of the whole training set.
    pub fn train_size(self) -> usize {
        match self {
            DatasetKind::Cifar10 => 50_000,
            DatasetKind::FashionMnist => 60_000,
        }
    }

    /// The data set's name as its files call it.
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Cifar10 => "CIFAR-10",
            DatasetKind::FashionMnist => "Fashion-MNIST",
        }
    }
}

/// Refuses `n` images of `channels × rows × cols` from `path` unless they are images of
/// `kind` ([`DatasetKind::image_shape`]) and there is at least one. Both loaders' splits pass
/// through it, so a train and a test set of different shapes cannot both pass.
fn check_images(
    kind: DatasetKind,
    path: &Path,
    n: usize,
    (channels, rows, cols): (usize, usize, usize),
) -> anyhow::Result<()> {
    let (c, h, w) = kind.image_shape();
    if (channels, rows, cols) != (c, h, w) {
        bail!(
            "{}: images of {channels}×{rows}×{cols} (channels × rows × columns), {} has              {c}×{h}×{w}",
            path.display(),
            kind.name()
        );
    }
    if n == 0 {
        bail!("{}: no images (at least 1 is needed)", path.display());
    }
    Ok(())
}

/// Images of one split, channel-major per image (`n × channels × height × width` bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSet {
    /// Colour channels (3 or 1).
    pub channels: usize,
    /// Rows per image.
    pub height: usize,
    /// Columns per image.
    pub width: usize,
    /// Pixel bytes.
    pub pixels: Vec<u8>,
    /// One label per image, below the number of classes.
    pub labels: Vec<u8>,
}

impl ImageSet {
    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no images.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Bytes per image.
    pub fn image_size(&self) -> usize {
        self.channels * self.height * self.width
    }

    /// The pixels of image `i`.
    pub fn image(&self, i: usize) -> &[u8] {
        let n = self.image_size();
        &self.pixels[i * n..(i + 1) * n]
    }

    /// The first `n` images (for quick runs and tests).
    pub fn truncated(&self, n: usize) -> ImageSet {
        let n = n.min(self.len());
        ImageSet {
            pixels: self.pixels[..n * self.image_size()].to_vec(),
            labels: self.labels[..n].to_vec(),
            ..*self
        }
    }

    /// Mean and standard deviation of each channel over all images, in [0, 1] units.
    pub fn channel_statistics(&self) -> (Vec<f32>, Vec<f32>) {
        let plane = self.height * self.width;
        let mut sum = vec![0.0f64; self.channels];
        let mut sq = vec![0.0f64; self.channels];
        for image in self.pixels.chunks_exact(self.image_size()) {
            for (c, values) in image.chunks_exact(plane).enumerate() {
                for &v in values {
                    let x = f64::from(v) / 255.0;
                    sum[c] += x;
                    sq[c] += x * x;
                }
            }
        }
        let n = (self.len() * plane).max(1) as f64;
        let mean: Vec<f32> = sum.iter().map(|s| (s / n) as f32).collect();
        let std = sum
            .iter()
            .zip(&sq)
            .map(|(s, q)| ((q / n - (s / n).powi(2)).max(1e-12)).sqrt() as f32)
            .collect();
        (mean, std)
    }
}

/// A data set: training and test images with class names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageData {
    /// Which data set.
    pub kind: DatasetKind,
    /// Training images.
    pub train: ImageSet,
    /// Test images.
    pub test: ImageSet,
    /// Class names.
    pub classes: Vec<String>,
}

/// Loads a data set from `path`: a folder, or for CIFAR-10 also the official `.tar.gz`.
pub fn load(kind: DatasetKind, path: &Path) -> anyhow::Result<ImageData> {
    match kind {
        DatasetKind::Cifar10 => load_cifar10(path),
        DatasetKind::FashionMnist => load_fashion_mnist(path),
    }
}

/// CIFAR-10 from a folder holding the six batch files (directly or in
/// `cifar-10-batches-bin/`), or from `cifar-10-binary.tar.gz`.
pub fn load_cifar10(path: &Path) -> anyhow::Result<ImageData> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    if path.is_file() {
        files = read_cifar_archive(path)?;
    } else if path.is_dir() {
        let dir = if path.join(CIFAR_FILES[0]).exists() {
            path.to_path_buf()
        } else if path.join("cifar-10-batches-bin").is_dir() {
            path.join("cifar-10-batches-bin")
        } else if let Some(archive) = ["cifar-10-binary.tar.gz", "cifar-10-binary.tgz"]
            .iter()
            .map(|n| path.join(n))
            .find(|p| p.is_file())
        {
            return load_cifar10(&archive);
        } else {
            bail!(
                "{}: no CIFAR-10 here: expected {} (directly or in cifar-10-batches-bin/), or \
                 cifar-10-binary.tar.gz. Get the binary version from \
                 https://www.cs.toronto.edu/~kriz/cifar.html",
                path.display(),
                CIFAR_FILES.join(", ")
            );
        };
        for name in CIFAR_FILES {
            let file = dir.join(name);
            let bytes = std::fs::read(&file).map_err(|e| {
                anyhow!(
                    "{}: cannot read ({e}); expected {} bytes ({} records of {} bytes)",
                    file.display(),
                    CIFAR_RECORDS_PER_BATCH * CIFAR_RECORD,
                    CIFAR_RECORDS_PER_BATCH,
                    CIFAR_RECORD
                )
            })?;
            files.push((file.display().to_string(), bytes));
        }
    } else {
        bail!("{}: no such file or folder", path.display());
    }
    let mut train = empty_cifar();
    let mut test = empty_cifar();
    for (i, (name, bytes)) in files.iter().enumerate() {
        let set = if i < 5 { &mut train } else { &mut test };
        parse_cifar_batch(name, bytes, set)?;
    }
    for (set, files) in [(&train, &files[..5]), (&test, &files[5..])] {
        let name = files.last().map_or(String::new(), |f| f.0.clone());
        let shape = (set.channels, set.height, set.width);
        check_images(DatasetKind::Cifar10, Path::new(&name), set.len(), shape)?;
    }
    Ok(ImageData {
        kind: DatasetKind::Cifar10,
        train,
        test,
        classes: CIFAR_CLASSES.iter().map(|s| s.to_string()).collect(),
    })
}

fn empty_cifar() -> ImageSet {
    ImageSet {
        channels: 3,
        height: 32,
        width: 32,
        pixels: Vec::new(),
        labels: Vec::new(),
    }
}

/// Appends one batch file's records to `set`, checking its size and labels.
fn parse_cifar_batch(name: &str, bytes: &[u8], set: &mut ImageSet) -> anyhow::Result<()> {
    let expected = CIFAR_RECORDS_PER_BATCH * CIFAR_RECORD;
    if bytes.len() != expected {
        bail!(
            "{name}: {} bytes, expected {expected} ({} records of {CIFAR_RECORD} bytes){}",
            bytes.len(),
            CIFAR_RECORDS_PER_BATCH,
            if bytes.len() < expected {
                ": the file is truncated"
            } else {
                ""
            }
        );
    }
    set.pixels
        .reserve(CIFAR_RECORDS_PER_BATCH * (CIFAR_RECORD - 1));
    for (i, record) in bytes.chunks_exact(CIFAR_RECORD).enumerate() {
        if record[0] >= 10 {
            bail!(
                "{name}: record {i} has label {}, expected 0–9 (not a CIFAR-10 binary batch?)",
                record[0]
            );
        }
        set.labels.push(record[0]);
        set.pixels.extend_from_slice(&record[1..]);
    }
    Ok(())
}

/// The six batch files from the official archive, in [`CIFAR_FILES`] order.
fn read_cifar_archive(path: &Path) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut found: Vec<Option<Vec<u8>>> = vec![None; CIFAR_FILES.len()];
    let entries = archive
        .entries()
        .with_context(|| format!("{}: not a tar.gz archive", path.display()))?;
    for entry in entries {
        let mut entry =
            entry.with_context(|| format!("{}: corrupt or truncated archive", path.display()))?;
        let name = entry.path()?.to_string_lossy().into_owned();
        let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
        if let Some(k) = CIFAR_FILES.iter().position(|f| *f == base) {
            let mut bytes = Vec::with_capacity(CIFAR_RECORDS_PER_BATCH * CIFAR_RECORD);
            entry.read_to_end(&mut bytes).with_context(|| {
                format!("{}: {name} is truncated in the archive", path.display())
            })?;
            found[k] = Some(bytes);
        }
    }
    CIFAR_FILES
        .iter()
        .zip(found)
        .map(|(name, bytes)| {
            let bytes = bytes.ok_or_else(|| {
                anyhow!(
                    "{}: the archive has no {name} (expected the six files of \
                     cifar-10-batches-bin)",
                    path.display()
                )
            })?;
            Ok((format!("{}:{name}", path.display()), bytes))
        })
        .collect()
}

/// Fashion-MNIST from a folder with the four IDX files, gzipped (`*.gz`) or not.
pub fn load_fashion_mnist(dir: &Path) -> anyhow::Result<ImageData> {
    let read = |stem: &str| -> anyhow::Result<(PathBuf, Vec<u8>)> {
        let gz = dir.join(format!("{stem}.gz"));
        let raw = dir.join(stem);
        if gz.is_file() {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(
                std::fs::File::open(&gz)
                    .with_context(|| format!("cannot open {}", gz.display()))?,
            )
            .read_to_end(&mut bytes)
            .with_context(|| format!("{}: corrupt or truncated gzip", gz.display()))?;
            Ok((gz, bytes))
        } else if raw.is_file() {
            let bytes =
                std::fs::read(&raw).with_context(|| format!("cannot read {}", raw.display()))?;
            Ok((raw, bytes))
        } else {
            bail!(
                "{}: missing (also looked for {}); Debian/Ubuntu: apt-get install \
                 dataset-fashion-mnist puts the files in {DEBIAN_FASHION_MNIST}",
                gz.display(),
                raw.display()
            )
        }
    };
    let split = |images: &str, labels: &str| -> anyhow::Result<ImageSet> {
        let (ipath, ibytes) = read(images)?;
        let (lpath, lbytes) = read(labels)?;
        let (n, rows, cols, pixels) = parse_idx_images(&ipath, &ibytes)?;
        check_images(DatasetKind::FashionMnist, &ipath, n, (1, rows, cols))?;
        let labels = parse_idx_labels(&lpath, &lbytes, 10)?;
        if labels.len() != n {
            bail!(
                "{} has {} labels but {} has {n} images",
                lpath.display(),
                labels.len(),
                ipath.display()
            );
        }
        Ok(ImageSet {
            channels: 1,
            height: rows,
            width: cols,
            pixels,
            labels,
        })
    };
    Ok(ImageData {
        kind: DatasetKind::FashionMnist,
        train: split("train-images-idx3-ubyte", "train-labels-idx1-ubyte")?,
        test: split("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")?,
        classes: FASHION_CLASSES.iter().map(|s| s.to_string()).collect(),
    })
}

fn be_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// An IDX image file: magic 0x00000803, count, rows, columns, then the pixel bytes.
fn parse_idx_images(path: &Path, b: &[u8]) -> anyhow::Result<(usize, usize, usize, Vec<u8>)> {
    if b.len() < 16 || be_u32(b, 0) != 0x0803 {
        bail!(
            "{}: not an IDX image file (expected the magic number 0x00000803 and a 16-byte header)",
            path.display()
        );
    }
    let (n, rows, cols) = (
        be_u32(b, 4) as usize,
        be_u32(b, 8) as usize,
        be_u32(b, 12) as usize,
    );
    let expected = n
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .and_then(|v| v.checked_add(16))
        .ok_or_else(|| {
            anyhow!(
                "{}: impossible IDX header ({n} × {rows} × {cols})",
                path.display()
            )
        })?;
    if b.len() != expected {
        bail!(
            "{}: {} bytes after decompression, expected {expected} ({n} images of {rows}×{cols} \
             and a 16-byte header)",
            path.display(),
            b.len()
        );
    }
    Ok((n, rows, cols, b[16..].to_vec()))
}

/// An IDX label file: magic 0x00000801, count, then one byte per label.
fn parse_idx_labels(path: &Path, b: &[u8], classes: u8) -> anyhow::Result<Vec<u8>> {
    if b.len() < 8 || be_u32(b, 0) != 0x0801 {
        bail!(
            "{}: not an IDX label file (expected the magic number 0x00000801 and an 8-byte header)",
            path.display()
        );
    }
    let n = be_u32(b, 4) as usize;
    if b.len() != 8 + n {
        bail!(
            "{}: {} bytes after decompression, expected {} ({n} labels and an 8-byte header)",
            path.display(),
            b.len(),
            8 + n
        );
    }
    if let Some((i, &l)) = b[8..].iter().enumerate().find(|(_, l)| **l >= classes) {
        bail!(
            "{}: label {i} is {l}, expected 0–{}",
            path.display(),
            classes - 1
        );
    }
    Ok(b[8..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A batch file in the exact CIFAR-10 format: record i has label i mod 10 and pixels
    /// (i + j) mod 251.
    fn cifar_batch(records: usize, offset: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(records * CIFAR_RECORD);
        for i in 0..records {
            out.push(((i + offset) % 10) as u8);
            out.extend((0..CIFAR_RECORD - 1).map(|j| ((i + offset + j) % 251) as u8));
        }
        out
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("atmc-lab-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write_cifar_folder(dir: &Path) {
        for (k, name) in CIFAR_FILES.iter().enumerate() {
            std::fs::write(dir.join(name), cifar_batch(CIFAR_RECORDS_PER_BATCH, k)).unwrap();
        }
    }

    fn check_cifar(data: &ImageData) {
        assert_eq!(data.train.len(), 50_000);
        assert_eq!(data.test.len(), 10_000);
        assert_eq!(
            data.train.labels[10_003], 4,
            "batch 2 record 3: (3 + 1) mod 10"
        );
        assert_eq!(data.test.labels[0], 5);
        assert_eq!(data.train.image(1)[0], 1);
        assert_eq!(data.train.image_size(), 3072);
    }

    #[test]
    fn cifar_folder_and_archive() {
        let dir = temp_dir("cifar");
        let inner = dir.join("cifar-10-batches-bin");
        std::fs::create_dir_all(&inner).unwrap();
        write_cifar_folder(&inner);
        check_cifar(&load_cifar10(&dir).unwrap());
        check_cifar(&load_cifar10(&inner).unwrap());
        // The official archive layout: cifar-10-batches-bin/*.bin in a tar.gz.
        let archive = dir.join("cifar-10-binary.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&archive).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        tar.append_dir_all("cifar-10-batches-bin", &inner).unwrap();
        tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
        check_cifar(&load_cifar10(&archive).unwrap());
        std::fs::remove_dir_all(&inner).unwrap();
        // The folder with only the archive in it.
        check_cifar(&load_cifar10(&dir).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cifar_errors_name_the_file_and_the_expected_size() {
        let dir = temp_dir("cifar-bad");
        write_cifar_folder(&dir);
        std::fs::write(dir.join("data_batch_3.bin"), cifar_batch(9_999, 0)).unwrap();
        let e = format!("{:#}", load_cifar10(&dir).unwrap_err());
        assert!(
            e.contains("data_batch_3.bin")
                && e.contains("30726927 bytes, expected 30730000")
                && e.contains("truncated"),
            "{e}"
        );
        std::fs::remove_file(dir.join("test_batch.bin")).unwrap();
        std::fs::write(dir.join("data_batch_3.bin"), cifar_batch(10_000, 0)).unwrap();
        let e = format!("{:#}", load_cifar10(&dir).unwrap_err());
        assert!(
            e.contains("test_batch.bin") && e.contains("expected 30730000 bytes"),
            "{e}"
        );
        let mut bad = cifar_batch(10_000, 0);
        bad[7 * CIFAR_RECORD] = 12;
        std::fs::write(dir.join("test_batch.bin"), bad).unwrap();
        let e = format!("{:#}", load_cifar10(&dir).unwrap_err());
        assert!(e.contains("record 7 has label 12"), "{e}");
        let e = format!("{:#}", load_cifar10(&dir.join("nothing")).unwrap_err());
        assert!(e.contains("no such file or folder"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let empty = temp_dir("cifar-empty");
        let e = format!("{:#}", load_cifar10(&empty).unwrap_err());
        assert!(
            e.contains("no CIFAR-10 here") && e.contains("cs.toronto.edu"),
            "{e}"
        );
        std::fs::remove_dir_all(&empty).unwrap();
    }

    #[test]
    fn truncated_archive_is_reported() {
        let dir = temp_dir("cifar-tgz");
        let inner = dir.join("cifar-10-batches-bin");
        std::fs::create_dir_all(&inner).unwrap();
        write_cifar_folder(&inner);
        let archive = dir.join("cut.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&archive).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        tar.append_dir_all("cifar-10-batches-bin", &inner).unwrap();
        tar.into_inner().unwrap().finish().unwrap();
        let bytes = std::fs::read(&archive).unwrap();
        std::fs::write(&archive, &bytes[..bytes.len() / 2]).unwrap();
        let e = format!("{:#}", load_cifar10(&archive).unwrap_err());
        assert!(e.contains("cut.tar.gz"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn idx_images(n: usize, rows: usize, cols: usize) -> Vec<u8> {
        let mut b = vec![0, 0, 8, 3];
        for v in [n, rows, cols] {
            b.extend((v as u32).to_be_bytes());
        }
        b.extend((0..n * rows * cols).map(|i| (i % 256) as u8));
        b
    }

    fn idx_labels(n: usize) -> Vec<u8> {
        let mut b = vec![0, 0, 8, 1];
        b.extend((n as u32).to_be_bytes());
        b.extend((0..n).map(|i| (i % 10) as u8));
        b
    }

    #[test]
    fn fashion_mnist_gzipped_and_raw() {
        let dir = temp_dir("fashion");
        let gz = |name: &str, bytes: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(
                std::fs::File::create(dir.join(format!("{name}.gz"))).unwrap(),
                flate2::Compression::fast(),
            );
            e.write_all(bytes).unwrap();
            e.finish().unwrap();
        };
        gz("train-images-idx3-ubyte", &idx_images(30, 28, 28));
        gz("train-labels-idx1-ubyte", &idx_labels(30));
        std::fs::write(dir.join("t10k-images-idx3-ubyte"), idx_images(5, 28, 28)).unwrap();
        std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx_labels(5)).unwrap();
        let data = load_fashion_mnist(&dir).unwrap();
        assert_eq!((data.train.len(), data.test.len()), (30, 5));
        assert_eq!((data.train.channels, data.train.height), (1, 28));
        assert_eq!(data.train.labels[13], 3);
        std::fs::write(dir.join("t10k-labels-idx1-ubyte"), idx_labels(4)).unwrap();
        let e = format!("{:#}", load_fashion_mnist(&dir).unwrap_err());
        assert!(e.contains("4 labels but") && e.contains("5 images"), "{e}");
        let mut short = idx_images(5, 28, 28);
        short.truncate(100);
        std::fs::write(dir.join("t10k-images-idx3-ubyte"), short).unwrap();
        let e = format!("{:#}", load_fashion_mnist(&dir).unwrap_err());
        assert!(
            e.contains("100 bytes") && e.contains("expected 3936"),
            "{e}"
        );
        std::fs::remove_file(dir.join("t10k-images-idx3-ubyte")).unwrap();
        let e = format!("{:#}", load_fashion_mnist(&dir).unwrap_err());
        assert!(e.contains("t10k-images-idx3-ubyte.gz: missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn channel_statistics_of_a_known_set() {
        let set = ImageSet {
            channels: 2,
            height: 1,
            width: 2,
            pixels: vec![0, 255, 255, 255, 0, 255, 255, 255],
            labels: vec![0, 1],
        };
        let (mean, std) = set.channel_statistics();
        assert!((mean[0] - 0.5).abs() < 1e-6 && (mean[1] - 1.0).abs() < 1e-6);
        assert!((std[0] - 0.5).abs() < 1e-6 && std[1] < 1e-5);
    }
}
