//! Checkpoint files: a JSON header and named f32 arrays, with a CRC-32 of everything, written
//! atomically (a temporary file in the same folder, synced, then renamed over the old one).
//! A file that does not check out is reported as corrupt, never read as something else.

use anyhow::{Context, bail};
use std::path::Path;

const MAGIC: &[u8; 8] = b"ATMCCKP1";

/// The contents of a checkpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Everything that is not a big array, as JSON.
    pub header: serde_json::Value,
    /// Named arrays.
    pub arrays: Vec<(String, Vec<f32>)>,
}

impl Checkpoint {
    /// The array called `name`.
    pub fn array(&self, name: &str) -> anyhow::Result<&[f32]> {
        self.arrays
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
            .with_context(|| format!("the checkpoint has no array '{name}'"))
    }

    fn encode(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&serde_json::json!({
            "header": self.header,
            "arrays": self.arrays.iter().map(|(n, v)| (n.clone(), v.len())).collect::<Vec<_>>(),
        }))
        .expect("JSON");
        let mut out = Vec::with_capacity(
            16 + header.len() + 4 * self.arrays.iter().map(|(_, v)| v.len()).sum::<usize>(),
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        for (_, values) in &self.arrays {
            for v in values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        let mut crc = flate2::Crc::new();
        crc.update(&out);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out
    }

    fn decode(path: &Path, bytes: &[u8]) -> anyhow::Result<Self> {
        let corrupt = |why: &str| {
            anyhow::anyhow!(
                "{}: corrupt checkpoint ({why}); it was left as it is: move it away to start over",
                path.display()
            )
        };
        if bytes.len() < 20 || &bytes[..8] != MAGIC {
            return Err(corrupt("not an atmc-lab checkpoint"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        let mut crc = flate2::Crc::new();
        crc.update(body);
        if crc.sum().to_le_bytes() != tail {
            return Err(corrupt("checksum mismatch: truncated or damaged"));
        }
        let n = u64::from_le_bytes(body[8..16].try_into().expect("8 bytes")) as usize;
        let json: serde_json::Value = body
            .get(16..16 + n)
            .and_then(|b| serde_json::from_slice(b).ok())
            .ok_or_else(|| corrupt("unreadable header"))?;
        let names: Vec<(String, usize)> = serde_json::from_value(json["arrays"].clone())
            .map_err(|_| corrupt("unreadable array list"))?;
        let mut at = 16 + n;
        let mut arrays = Vec::with_capacity(names.len());
        for (name, len) in names {
            let raw = body
                .get(at..at + 4 * len)
                .ok_or_else(|| corrupt("arrays shorter than the header says"))?;
            arrays.push((
                name,
                raw.chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            ));
            at += 4 * len;
        }
        if at != body.len() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(Self {
            header: json["header"].clone(),
            arrays,
        })
    }

    /// Writes the checkpoint to `path` atomically ([`crate::fsutil::write_atomic`]).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        crate::fsutil::write_atomic(path, self.encode())
    }

    /// Reads and checks a checkpoint.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        Self::decode(path, &bytes)
    }
}

/// Refuses to start a fresh run over an existing checkpoint (it would be overwritten).
pub fn ensure_fresh(path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        bail!(
            "{} exists: resume that run (--resume, or \"Resume from it\" in the app) or choose \
             another checkpoint folder",
            path.display()
        );
    }
    Ok(())
}

/// The checkpoint folder cannot be used (not a folder, not writable, or another run holds it):
/// a problem of the input, which the command line reports with exit status 2.
#[derive(Debug)]
pub struct FolderRefused(pub String);

impl std::fmt::Display for FolderRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FolderRefused {}

fn refused(message: String) -> anyhow::Error {
    anyhow::Error::new(FolderRefused(message))
}

/// Holds the checkpoint folder for the run's lifetime: a second run into the same folder is
/// refused instead of silently replacing the first one's checkpoints.
pub type FolderLock = crate::fsutil::Lock;

/// Creates the checkpoint folder if needed, checks that it is a folder and writable, and locks
/// it ([`crate::fsutil::lock`], naming the holder in a refusal), all before any data is loaded.
pub fn lock_checkpoint_folder(dir: &Path) -> anyhow::Result<FolderLock> {
    if dir.exists() && !dir.is_dir() {
        return Err(refused(format!(
            "--checkpoint {}: not a folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        refused(format!(
            "--checkpoint {}: cannot create it: {e}",
            dir.display()
        ))
    })?;
    crate::fsutil::lock(
        &dir.join(".lock"),
        &format!("--checkpoint {}", dir.display()),
    )
    .map_err(|e| match e.downcast::<crate::fsutil::Refused>() {
        Ok(r) => refused(r.0),
        Err(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("atmc-lab-ckpt-{}", std::process::id()));
        let path = dir.join("train.ckpt");
        let c = Checkpoint {
            header: serde_json::json!({"epoch": 3, "name": "x"}),
            arrays: vec![
                ("theta".into(), vec![1.0, -2.5, f32::MIN_POSITIVE]),
                ("p".into(), vec![]),
            ],
        };
        c.write(&path).unwrap();
        assert_eq!(Checkpoint::read(&path).unwrap(), c);
        assert_eq!(c.array("theta").unwrap()[1], -2.5);
        assert!(c.array("xi").is_err());
        assert!(
            ensure_fresh(&path)
                .unwrap_err()
                .to_string()
                .contains("--resume")
        );
        // A flipped byte and a truncated file are both caught.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[30] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = Checkpoint::read(&path).unwrap_err().to_string();
        assert!(
            e.contains("corrupt checkpoint") && e.contains("checksum"),
            "{e}"
        );
        std::fs::write(&path, &bytes[..10]).unwrap();
        let e = Checkpoint::read(&path).unwrap_err().to_string();
        assert!(e.contains("corrupt checkpoint"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
