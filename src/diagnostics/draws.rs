//! Draws for a notebook: the states of a stated subset of chains at every recorded block,
//! written as a Zarr (v2) store that xarray opens as an ArviZ DataTree (groups `posterior`
//! and `sample_stats`, the preset in the root's attributes).
//!
//! Why Zarr: a Zarr store is a folder of JSON metadata and raw little-endian chunks, written
//! here in a few dozen lines of Rust with no C library; NetCDF4 would need libnetcdf/HDF5
//! bound into the binary. `xarray.open_datatree(path, engine="zarr")` reads it (the Python
//! package `zarr` is the only extra), and ArviZ 1.x works on that DataTree directly.

use super::{mcmc, nested};
use crate::engine::ChainStates;
use crate::fsutil::{Committed, FolderWriter, OutputKind};
use crate::math::Model;
use anyhow::bail;
use serde_json::{Value, json};
use std::path::Path;

/// The kind of folder an export is ([`crate::fsutil::MANIFEST`]): written whole, and
/// replacing only an earlier export of draws.
pub const DRAWS: OutputKind = OutputKind {
    name: "draws",
    example: "draws.zarr",
};

/// The most bytes an export may write; beyond, the run is refused before it starts.
pub const MAX_DRAW_BYTES: u64 = 1 << 30;
/// Chains exported unless asked otherwise.
pub const DEFAULT_DRAW_CHAINS: u32 = 64;
/// Bytes per chain and draw: θ, p and ξ (6 × f32), diverged (1), step (8), step size (4),
/// kinetic heat (4).
const BYTES_PER_DRAW: u64 = 6 * 4 + 1 + 8 + 4 + 4;

/// Which draws to keep: the first `chains` chains at every `every`-th recorded block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawSpec {
    /// Chains kept (the first ones: with superchains, chain i is in superchain i mod K, so
    /// the first chains sample every superchain alike).
    pub chains: u32,
    /// Keep every `every`-th recorded block (thinning).
    pub every: u32,
}

impl DrawSpec {
    /// Draws per chain for a run of `blocks` recorded blocks.
    pub fn draws(&self, blocks: usize) -> usize {
        blocks / self.every.max(1) as usize
    }

    /// The bytes the export of a run of `blocks` blocks of `total_chains` chains writes, or
    /// why it cannot be made: said before the run starts.
    pub fn check(&self, blocks: usize, total_chains: u32) -> anyhow::Result<u64> {
        if self.every == 0 {
            bail!("--draw-every must be at least 1");
        }
        if self.chains == 0 {
            bail!("--draw-chains must be at least 1");
        }
        if self.chains > total_chains {
            bail!(
                "--draw-chains {} is more than the preset's {total_chains} chains",
                self.chains
            );
        }
        let draws = self.draws(blocks);
        if draws < 4 {
            bail!(
                "only {draws} draws per chain would be kept ({blocks} recorded blocks, every \
                 {}): R-hat and ESS need at least 4; record more often (record_every) or thin \
                 less",
                self.every
            );
        }
        let bytes = u64::from(self.chains) * draws as u64 * BYTES_PER_DRAW;
        if bytes > MAX_DRAW_BYTES {
            bail!(
                "{} chains × {draws} draws would write {:.1} GB, more than the {:.0} GB cap: \
                 export fewer chains (--draw-chains) or thin (--draw-every)",
                self.chains,
                bytes as f64 / 1e9,
                MAX_DRAW_BYTES as f64 / 1e9
            );
        }
        Ok(bytes)
    }
}

/// The kept draws, in memory until the run ends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DrawRecorder {
    spec: Option<DrawSpec>,
    blocks_seen: u64,
    /// Step of each kept draw.
    steps: Vec<u32>,
    /// Step size of each kept draw's last step.
    step_sizes: Vec<f32>,
    /// Per kept draw, the kept chains' states (draw-major).
    states: Vec<ChainStates>,
}

impl DrawRecorder {
    /// A recorder keeping what `spec` says.
    pub fn new(spec: DrawSpec) -> Self {
        Self {
            spec: Some(spec),
            ..Self::default()
        }
    }

    /// Chains whose state [`Self::record`] needs (0 when none is wanted).
    pub fn chains_wanted(&self) -> u32 {
        self.spec.map_or(0, |s| s.chains)
    }

    /// Offers the states after the block that ended at `step`; keeps every `every`-th.
    pub fn record(&mut self, step: u32, step_size: f64, head: &ChainStates) {
        let Some(spec) = self.spec else { return };
        self.blocks_seen += 1;
        if !self
            .blocks_seen
            .is_multiple_of(u64::from(spec.every.max(1)))
        {
            return;
        }
        let n = (spec.chains as usize).min(head.chains.len());
        self.steps.push(step);
        self.step_sizes.push(step_size as f32);
        self.states.push(ChainStates {
            chains: head.chains[..n].to_vec(),
            diverged_at: head.diverged_at[..n].to_vec(),
        });
    }

    /// Draws kept per chain.
    pub fn draws(&self) -> usize {
        self.states.len()
    }

    /// Chains kept.
    pub fn chains(&self) -> usize {
        self.states.first().map_or(0, |s| s.chains.len())
    }

    /// Draws already taken, oldest first: (step, step size, the chains' states) each (the
    /// app's live window).
    pub fn from_window<'a>(window: impl Iterator<Item = (u32, f64, &'a ChainStates)>) -> Self {
        let mut out = Self::default();
        for (step, step_size, states) in window {
            out.steps.push(step);
            out.step_sizes.push(step_size as f32);
            out.states.push(states.clone());
        }
        out
    }

    /// Writes the store at `path` ([`begin_export`] then [`Self::write_zarr_into`]).
    pub fn write_zarr(
        &self,
        path: &Path,
        model: &Model,
        superchains: Option<u32>,
        preset_ron: &str,
        summary: &Value,
    ) -> anyhow::Result<Committed> {
        if self.states.is_empty() {
            bail!("no draws were kept: nothing to export");
        }
        self.write_zarr_into(begin_export(path)?, model, superchains, preset_ron, summary)
    }

    /// Writes the store into `folder` ([`begin_export`]) and moves it into place whole.
    /// `preset_ron` and the run's `summary` go into the root's attributes, beside atmc-lab's
    /// own R-hat, ESS and nested R-hat of exactly these draws.
    pub fn write_zarr_into(
        &self,
        mut folder: FolderWriter,
        model: &Model,
        superchains: Option<u32>,
        preset_ron: &str,
        summary: &Value,
    ) -> anyhow::Result<Committed> {
        let draws = self.states.len();
        let chains = self.states.first().map_or(0, |s| s.chains.len());
        if draws == 0 || chains == 0 {
            bail!("no draws were kept: nothing to export");
        }
        let mut store = ZarrStore::new(&mut folder);
        // Chain-major arrays, as ArviZ lays them out: (chain, draw[, coordinate]).
        let per_chain = |f: &dyn Fn(&ChainStates, usize) -> [f32; 2]| -> Vec<f32> {
            let mut out = Vec::with_capacity(chains * draws * 2);
            for c in 0..chains {
                for s in &self.states {
                    out.extend(f(s, c));
                }
            }
            out
        };
        let theta = per_chain(&|s, c| s.chains[c].theta);
        let momentum = per_chain(&|s, c| s.chains[c].p);
        let thermostat = per_chain(&|s, c| s.chains[c].xi);
        let mut diverged = Vec::with_capacity(chains * draws);
        let mut heat = Vec::with_capacity(chains * draws);
        let mut step = Vec::with_capacity(chains * draws);
        let mut step_size = Vec::with_capacity(chains * draws);
        for c in 0..chains {
            for (k, s) in self.states.iter().enumerate() {
                diverged.push(u8::from(s.diverged_at[c] != 0));
                let p = s.chains[c].p;
                heat.push(model.kinetic_heat(p[0]) + model.kinetic_heat(p[1]));
                step.push(i64::from(self.steps[k]));
                step_size.push(self.step_sizes[k]);
            }
        }
        let superchain: Vec<i64> = (0..chains as i64)
            .map(|c| superchains.map_or(c, |k| c % i64::from(k)))
            .collect();
        let root_attrs = json!({
            "created_by": format!("atmc-lab {}", env!("CARGO_PKG_VERSION")),
            "preset": preset_ron,
            "run": summary,
            "superchains": superchains,
            "atmc_lab_diagnostics": own_diagnostics(&theta, chains, draws, superchains),
            "note": "theta: chains' positions at each kept block; sample_stats.momentum and \
                     .thermostat: p and xi; kinetic_heat: p K'(p) summed over both \
                     coordinates (mean 2T); superchain: the chain's superchain (its own index \
                     without superchains)",
        });
        store.group("", root_attrs)?;
        for group in ["posterior", "sample_stats"] {
            store.group(group, json!({}))?;
            store.coordinate(group, "chain", &(0..chains as i64).collect::<Vec<_>>())?;
            store.coordinate(group, "draw", &(0..draws as i64).collect::<Vec<_>>())?;
            store.coordinate(group, "theta_dim_0", &[0i64, 1])?;
        }
        let cdd = ["chain", "draw", "theta_dim_0"];
        let cd = ["chain", "draw"];
        store.array_f32("posterior", "theta", &[chains, draws, 2], &cdd, &theta)?;
        // Not in `posterior`: ArviZ computes R-hat of every variable there, and this one has
        // no draws.
        store.group("constant_data", json!({}))?;
        store.coordinate(
            "constant_data",
            "chain",
            &(0..chains as i64).collect::<Vec<_>>(),
        )?;
        store.array_i64(
            "constant_data",
            "superchain",
            &[chains],
            &["chain"],
            &superchain,
        )?;
        store.array_f32(
            "sample_stats",
            "momentum",
            &[chains, draws, 2],
            &cdd,
            &momentum,
        )?;
        store.array_f32(
            "sample_stats",
            "thermostat",
            &[chains, draws, 2],
            &cdd,
            &thermostat,
        )?;
        store.array_bool(
            "sample_stats",
            "diverging",
            &[chains, draws],
            &cd,
            &diverged,
        )?;
        store.array_f32("sample_stats", "kinetic_heat", &[chains, draws], &cd, &heat)?;
        store.array_f32(
            "sample_stats",
            "step_size",
            &[chains, draws],
            &cd,
            &step_size,
        )?;
        store.array_i64("sample_stats", "step", &[chains, draws], &cd, &step)?;
        store.consolidate()?;
        folder.commit()
    }
}

/// atmc-lab's R-hat (split, rank-normalised: the larger of bulk and tail), bulk and tail ESS
/// and nested R-hat (all draws of each chain) of exactly the exported θ, per coordinate: what
/// the test suite's ArviZ check compares with.
fn own_diagnostics(theta: &[f32], chains: usize, draws: usize, superchains: Option<u32>) -> Value {
    let coordinate = |c: usize| -> Vec<Vec<f64>> {
        (0..chains)
            .map(|ch| {
                (0..draws)
                    .map(|d| f64::from(theta[(ch * draws + d) * 2 + c]))
                    .collect()
            })
            .collect()
    };
    let number = |v: f64| if v.is_finite() { json!(v) } else { Value::Null };
    let per = |f: &dyn Fn(&[Vec<f64>]) -> f64| -> Value {
        Value::Array((0..2).map(|c| number(f(&coordinate(c)))).collect())
    };
    let nested_per = |c: usize| -> Value {
        let Some(k) = superchains else {
            return Value::Null;
        };
        let draws_c = coordinate(c);
        let grouped: Vec<Vec<Vec<f64>>> = (0..k as usize)
            .map(|s| {
                draws_c
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % k as usize == s)
                    .map(|(_, d)| d.clone())
                    .collect()
            })
            .collect();
        nested::nested_rhat(&grouped).map_or(Value::Null, number)
    };
    json!({
        "rhat": per(&mcmc::split_rhat),
        "ess_bulk": per(&mcmc::ess_bulk),
        "ess_tail": per(&mcmc::ess_tail),
        "rhat_nested": [nested_per(0), nested_per(1)],
    })
}

/// Checks before a run that `path` can take the store, so that no run is lost to a bad path
/// at its end: a new folder in a writable folder, an empty folder, or an earlier export of
/// draws holding only what it wrote (which is replaced whole); never a file, a link, the
/// working folder or a folder holding anything atmc-lab did not write
/// ([`crate::fsutil::FolderWriter`]'s rules). Creates and changes nothing.
pub fn check_destination(path: &Path) -> anyhow::Result<()> {
    crate::fsutil::check_folder(path, DRAWS)
}

/// Takes `path` for an export: checked ([`check_destination`]), locked against a second
/// writer, and a temporary folder beside it to write into. Taken before a run, a bad or busy
/// destination is refused before any work.
pub fn begin_export(path: &Path) -> anyhow::Result<FolderWriter> {
    FolderWriter::begin(path, DRAWS)
}

/// A Zarr v2 store being written into a folder written whole: its folders, each array in one
/// uncompressed chunk, and the consolidated metadata (`.zmetadata`) xarray reads in one go.
struct ZarrStore<'a> {
    folder: &'a mut FolderWriter,
    metadata: serde_json::Map<String, Value>,
}

impl<'a> ZarrStore<'a> {
    fn new(folder: &'a mut FolderWriter) -> Self {
        Self {
            folder,
            metadata: serde_json::Map::new(),
        }
    }

    fn write_json(&mut self, key: String, value: Value) -> anyhow::Result<()> {
        self.folder
            .write(&key, serde_json::to_vec_pretty(&value)?)?;
        self.metadata.insert(key, value);
        Ok(())
    }

    fn key(group: &str, name: &str) -> String {
        if group.is_empty() {
            name.to_owned()
        } else {
            format!("{group}/{name}")
        }
    }

    fn group(&mut self, group: &str, attrs: Value) -> anyhow::Result<()> {
        self.write_json(Self::key(group, ".zgroup"), json!({"zarr_format": 2}))?;
        self.write_json(Self::key(group, ".zattrs"), attrs)
    }

    /// One array: its metadata, its dimension names (xarray's `_ARRAY_DIMENSIONS`) and its
    /// single chunk of little-endian bytes; `(dtype, fill)` as Zarr names them.
    fn array(
        &mut self,
        group: &str,
        name: &str,
        (shape, dims): (&[usize], &[&str]),
        (dtype, fill): (&str, Value),
        bytes: &[u8],
    ) -> anyhow::Result<()> {
        let base = Self::key(group, name);
        self.write_json(
            format!("{base}/.zarray"),
            json!({
                "zarr_format": 2,
                "shape": shape,
                "chunks": shape,
                "dtype": dtype,
                "compressor": null,
                "fill_value": fill,
                "order": "C",
                "filters": null,
                "dimension_separator": ".",
            }),
        )?;
        self.write_json(
            format!("{base}/.zattrs"),
            json!({ "_ARRAY_DIMENSIONS": dims }),
        )?;
        let chunk = vec!["0"; shape.len()].join(".");
        self.folder.write(&format!("{base}/{chunk}"), bytes)
    }

    fn array_f32(
        &mut self,
        group: &str,
        name: &str,
        shape: &[usize],
        dims: &[&str],
        values: &[f32],
    ) -> anyhow::Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.array(group, name, (shape, dims), ("<f4", json!("NaN")), &bytes)
    }

    fn array_i64(
        &mut self,
        group: &str,
        name: &str,
        shape: &[usize],
        dims: &[&str],
        values: &[i64],
    ) -> anyhow::Result<()> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        // No fill value: xarray would read every 0 as missing.
        self.array(group, name, (shape, dims), ("<i8", Value::Null), &bytes)
    }

    fn array_bool(
        &mut self,
        group: &str,
        name: &str,
        shape: &[usize],
        dims: &[&str],
        values: &[u8],
    ) -> anyhow::Result<()> {
        self.array(group, name, (shape, dims), ("|b1", Value::Null), values)
    }

    /// A dimension's coordinate values (an index array named like the dimension).
    fn coordinate(&mut self, group: &str, dim: &str, values: &[i64]) -> anyhow::Result<()> {
        self.array_i64(group, dim, &[values.len()], &[dim], values)
    }

    /// The consolidated metadata of every group and array written.
    fn consolidate(mut self) -> anyhow::Result<()> {
        let metadata = std::mem::take(&mut self.metadata);
        self.folder.write(
            ".zmetadata",
            serde_json::to_vec_pretty(&json!({
                "zarr_consolidated_format": 1,
                "metadata": metadata,
            }))?,
        )
    }
}
