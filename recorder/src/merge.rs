//! Merging the shards of a run into one run directory.
//!
//! A run split with `mosaic run --shard K/N` leaves one run directory per shard, each
//! holding the records of its share of the units (see [`Shard`]) under the run's id, and
//! tagged in its manifest with the shard and the experiment's identity
//! ([`experiment_identity`]). [`merge`] checks that the shards fit together (one experiment,
//! one run, one shard count, every shard finished, every unit once) and writes one run
//! directory holding every unit, in operator then episode order: the records of the run
//! made on one machine, volatile fields aside (`mosaic_core::record::VOLATILE_FIELDS`).
//!
//! ```
//! use mosaic_core::record::{RunPart, Shard, ShardTag};
//! use mosaic_recorder::{Durability, RunDir, Unit, merge, synthetic};
//! let dir = tempfile::tempdir().unwrap();
//! let whole = synthetic::manifest("r", &["a", "b"], 3, 10);
//! let mut shards = Vec::new();
//! for index in 0..2 {
//!     let shard = Shard::new(index, 2).unwrap();
//!     let manifest = mosaic_core::record::RunManifest {
//!         shard: Some(ShardTag {
//!             experiment: merge::experiment_identity(&whole.experiment),
//!             part: RunPart::Shard(shard),
//!         }),
//!         ..whole.clone()
//!     };
//!     let path = dir.path().join(format!("r.shard-{index}"));
//!     let (run, store) = RunDir::create(&path, &manifest).unwrap();
//!     let mut writer = run.writer(&store, Durability::Flush).unwrap();
//!     let share = store.planned_units();
//!     for episode in synthetic::run_episodes(&manifest, 4, 2) {
//!         let unit = Unit::new(episode.record.operator_id.clone(), episode.record.episode_index);
//!         if !share.contains(&unit) {
//!             continue;
//!         }
//!         episode.steps.iter().try_for_each(|s| writer.write_step(s)).unwrap();
//!         writer.write_episode(&episode.record).unwrap();
//!         writer.commit().unwrap();
//!         writer.mark_complete(&episode.record).unwrap();
//!     }
//!     writer.close().unwrap();
//!     shards.push(path);
//! }
//! let merged = merge::merge(&shards, &dir.path().join("r")).unwrap();
//! assert_eq!((merged.units, merged.step_records), (6, 6 * 4 * 2));
//! let store = merged.run.store().unwrap();
//! assert!(store.remaining_units().unwrap().is_empty());
//! assert!(merged.run.check_consistency(&store).unwrap().is_empty());
//! ```

use crate::error::RecorderError;
use crate::jsonl::{Compression, Durability, JsonlWriter};
use crate::paths::{parent_dir, sync_parent};
use crate::progress::ProgressWriter;
use crate::run_dir::RunDir;
use crate::store::{RunStore, Unit};
use mosaic_core::ExperimentSpec;
use mosaic_core::record::{RunManifest, RunPart, Shard};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The fields of an experiment that decide its records: all but how it is run
/// (`parallelism`, `pace_ms`), which never changes results.
pub fn deciding_fields(spec: &ExperimentSpec) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(spec) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.remove("parallelism");
            map.remove("pace_ms");
            map
        }
        _ => serde_json::Map::new(),
    }
}

/// The identity of an experiment: the SHA-256 (hex) of its [`deciding_fields`] as JSON
/// with sorted keys. Two shards of one run carry the same identity, whatever parallelism
/// each ran with.
///
/// ```
/// let spec: mosaic_core::ExperimentSpec = serde_json::from_value(serde_json::json!({
///     "name": "e", "episodes": 2, "operators": [{"id": "a", "env": "soccer-1v1", "agents": {}}]
/// }))
/// .unwrap();
/// let mut faster = spec.clone();
/// faster.parallelism = 8;
/// let identity = mosaic_recorder::merge::experiment_identity(&spec);
/// assert_eq!(identity, mosaic_recorder::merge::experiment_identity(&faster));
/// assert_eq!(identity.len(), 64);
/// ```
pub fn experiment_identity(spec: &ExperimentSpec) -> String {
    let canonical = sorted(serde_json::Value::Object(deciding_fields(spec)));
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `value` with the keys of every object in sorted order (whatever map serde_json uses).
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

/// Units named in an error: the first few, and how many in all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitList(pub Vec<Unit>);

/// Units a [`UnitList`] names before it says how many more there are.
const UNITS_NAMED: usize = 5;

impl fmt::Display for UnitList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named: Vec<String> = self
            .0
            .iter()
            .take(UNITS_NAMED)
            .map(Unit::to_string)
            .collect();
        write!(f, "{}", named.join(", "))?;
        if self.0.len() > UNITS_NAMED {
            write!(f, " and {} more", self.0.len() - UNITS_NAMED)?;
        }
        Ok(())
    }
}

/// Shards that cannot be merged, or a merge that failed.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A run directory could not be read, or the merged one written.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
    /// No shard directories were given.
    #[error("no shard directories to merge")]
    NoShards,
    /// A run directory that is not a shard (`mosaic run` without `--shard`).
    #[error("{} is not a shard: its run was not started with --shard", path.display())]
    NotAShard {
        /// The directory.
        path: PathBuf,
    },
    /// A directory given twice.
    #[error("{} is given twice", path.display())]
    Repeated {
        /// The directory.
        path: PathBuf,
    },
    /// A shard of another experiment than the first shard's.
    #[error(
        "{} is a shard of another experiment than {} (experiment identity {found:.12}…, expected {expected:.12}…)",
        path.display(), first.display()
    )]
    OtherExperiment {
        /// The offending directory.
        path: PathBuf,
        /// The first shard given.
        first: PathBuf,
        /// Its identity.
        found: String,
        /// The first shard's.
        expected: String,
    },
    /// A shard whose experiment does not have the identity its manifest claims.
    #[error("{}: the experiment in run.json does not have the identity its shard tag names", path.display())]
    AlteredExperiment {
        /// The directory.
        path: PathBuf,
    },
    /// A shard of another run (another run id) of the same experiment.
    #[error(
        "{} is a shard of run `{run_id}`, {} of run `{expected}`: shards of one run share its id",
        path.display(), first.display()
    )]
    OtherRun {
        /// The offending directory.
        path: PathBuf,
        /// The first shard given.
        first: PathBuf,
        /// Its run id.
        run_id: String,
        /// The first shard's.
        expected: String,
    },
    /// A shard of a split into another number of shards.
    #[error(
        "{} is shard {shard}, but {} is one of {expected} shards",
        path.display(), first.display()
    )]
    OtherCount {
        /// The offending directory.
        path: PathBuf,
        /// The first shard given.
        first: PathBuf,
        /// The offending shard.
        shard: Shard,
        /// The first shard's count.
        expected: u32,
    },
    /// A shard with units of its share not complete.
    #[error(
        "{} (shard {shard}) is unfinished: {done} of {planned} units complete, missing {missing}; finish it with `mosaic resume {}`",
        path.display(), path.display()
    )]
    Unfinished {
        /// The directory.
        path: PathBuf,
        /// Its shard.
        shard: Shard,
        /// Units complete.
        done: usize,
        /// Units of its share.
        planned: usize,
        /// The units not complete.
        missing: UnitList,
    },
    /// Units complete in two of the directories given.
    #[error("{} and {} both hold units {units}", path.display(), other.display())]
    Overlap {
        /// The later directory.
        path: PathBuf,
        /// The earlier one.
        other: PathBuf,
        /// The units both hold.
        units: UnitList,
    },
    /// Units no directory given holds: shards not given, or a pool not finished.
    #[error("units {units} are in no directory given: {}", missing_why(shards))]
    Missing {
        /// The shards whose units are missing, and the shard count (`None`: the parts are
        /// pool workers').
        shards: Option<(Vec<u32>, u32)>,
        /// The units missing.
        units: UnitList,
    },
    /// Shards beside pool workers' parts.
    #[error("{} is {}, {} is {}: merge the shards of a run, or the parts of its pool workers", path.display(), describe(part), first.display(), describe(first_part))]
    Mixed {
        /// The offending directory.
        path: PathBuf,
        /// Its part.
        part: Box<RunPart>,
        /// The first directory given.
        first: PathBuf,
        /// Its part.
        first_part: Box<RunPart>,
    },
    /// The merged run could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

fn missing_why(shards: &Option<(Vec<u32>, u32)>) -> String {
    match shards {
        Some((shards, count)) => format!(
            "shards {} of {count} are missing",
            shards
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "the pool is not finished (start a worker on it)".to_owned(),
    }
}

fn describe(part: &RunPart) -> String {
    match part {
        RunPart::Shard(shard) => format!("shard {shard}"),
        RunPart::Pool { worker, .. } => format!("pool worker `{worker}`'s part"),
    }
}

impl MergeError {
    /// Whether the error is about the input (directories that are not shards of one
    /// finished run) rather than about the machine: the command line exits with 2.
    pub fn is_bad_input(&self) -> bool {
        match self {
            MergeError::Recorder(e) => e.is_bad_input(),
            MergeError::Write { .. } => false,
            _ => true,
        }
    }
}

/// A merged run.
#[derive(Debug)]
pub struct Merged {
    /// The merged run directory.
    pub run: RunDir,
    /// Units merged.
    pub units: u64,
    /// Step records merged.
    pub step_records: u64,
    /// Shards merged.
    pub shards: usize,
}

/// One part to merge, opened.
struct Part {
    run: RunDir,
    store: RunStore,
    part: RunPart,
}

/// Merges the finished shards in `shards` into a new run directory at `out` (which must
/// not hold a run), after checking that they are every shard of one run (see
/// [`MergeError`]). The merged run has the shards' run id and experiment and no shard tag;
/// its records are in operator, episode, step, agent order. It appears at `out` whole or
/// not at all (it is written beside it and renamed into place).
///
/// The parts of pool workers (`mosaic run --pool`) merge the same way, with two
/// differences: a worker's units that are not complete are ignored (it may have been
/// killed; others took them over), and a unit complete in several workers' parts (a worker
/// that lost its claim finished it anyway) is taken from the worker whose name sorts first.
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let parts = open_parts(shards)?;
    let order = merge_order(&parts)?;
    if out.join(crate::run_dir::MANIFEST_FILE).exists() {
        return Err(RecorderError::AlreadyExists {
            path: out.to_owned(),
        }
        .into());
    }
    let first = &parts[0];
    let manifest = RunManifest {
        shard: None,
        started: parts
            .iter()
            .map(|p| p.run.manifest().started)
            .min()
            .unwrap_or(first.run.manifest().started),
        ..first.run.manifest().clone()
    };
    let name = out
        .file_name()
        .map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned());
    let staging = parent_dir(out).join(format!(".{name}.merging-{}", std::process::id()));
    if staging.exists() {
        fs::remove_dir_all(&staging).map_err(|e| RecorderError::io(&staging, e))?;
    }
    let written = write_merged(&parts, &order, &staging, &manifest);
    let (units, step_records) = match written {
        Ok(counts) => counts,
        Err(error) => {
            // Best effort: the staging directory is hidden and replaced by the next try.
            let _ = fs::remove_dir_all(&staging);
            return Err(error);
        }
    };
    fs::rename(&staging, out).map_err(|e| match e.kind() {
        std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => {
            RecorderError::NotEmpty {
                path: out.to_owned(),
            }
        }
        _ => RecorderError::io(out, e),
    })?;
    sync_parent(out)?;
    Ok(Merged {
        run: RunDir::open(out)?,
        units,
        step_records,
        shards: parts.len(),
    })
}

/// Opens the shards and checks that they belong to one run, and each is finished. The
/// manifests are checked first, then the stores opened on a thread each (opening one reads
/// its database files); errors are those of the first directory at fault.
fn open_parts(shards: &[PathBuf]) -> Result<Vec<Part>, MergeError> {
    let checked = check_manifests(shards)?;
    let stores: Vec<Result<RunStore, RecorderError>> = std::thread::scope(|scope| {
        let opening: Vec<_> = checked
            .iter()
            .map(|(run, _)| scope.spawn(|| run.store()))
            .collect();
        opening
            .into_iter()
            .zip(&checked)
            .map(|(thread, (run, _))| {
                thread.join().unwrap_or_else(|_| {
                    Err(RecorderError::io(
                        run.path(),
                        std::io::Error::other("the thread opening the store failed"),
                    ))
                })
            })
            .collect()
    });
    let mut parts = Vec::with_capacity(checked.len());
    for ((run, part), store) in checked.into_iter().zip(stores) {
        let store = store?;
        if let Some(shard) = part.shard() {
            let missing = store.remaining_units()?;
            if !missing.is_empty() {
                return Err(MergeError::Unfinished {
                    path: run.path().to_owned(),
                    shard,
                    done: store.completed_count(),
                    planned: run.planned(),
                    missing: UnitList(missing),
                });
            }
        }
        parts.push(Part { run, store, part });
    }
    if parts.is_empty() {
        return Err(MergeError::NoShards);
    }
    Ok(parts)
}

/// Opens the run directories and checks that their manifests make the shards (or pool
/// workers' parts) of one run.
fn check_manifests(shards: &[PathBuf]) -> Result<Vec<(RunDir, RunPart)>, MergeError> {
    let mut parts: Vec<(RunDir, RunPart)> = Vec::with_capacity(shards.len());
    let mut seen = std::collections::HashSet::new();
    for path in shards {
        let run = RunDir::open(path)?;
        if !seen.insert(fs::canonicalize(path).map_err(|e| RecorderError::io(path, e))?) {
            return Err(MergeError::Repeated { path: path.clone() });
        }
        let manifest = run.manifest();
        let Some(tag) = manifest.shard.clone() else {
            return Err(MergeError::NotAShard { path: path.clone() });
        };
        let shard = tag.part.shard();
        if experiment_identity(&manifest.experiment) != tag.experiment {
            return Err(MergeError::AlteredExperiment { path: path.clone() });
        }
        if let Some((first_run, first_part)) = parts.first() {
            let first_manifest = first_run.manifest();
            let first_path = first_run.path().to_owned();
            let expected = first_manifest
                .shard
                .as_ref()
                .map(|t| t.experiment.clone())
                .unwrap_or_default();
            if tag.experiment != expected {
                return Err(MergeError::OtherExperiment {
                    path: path.clone(),
                    first: first_path,
                    found: tag.experiment,
                    expected,
                });
            }
            if manifest.run_id != first_manifest.run_id {
                return Err(MergeError::OtherRun {
                    path: path.clone(),
                    first: first_path,
                    run_id: manifest.run_id.clone(),
                    expected: first_manifest.run_id.clone(),
                });
            }
            match (shard, first_part.shard()) {
                (Some(shard), Some(expected)) if shard.count != expected.count => {
                    return Err(MergeError::OtherCount {
                        path: path.clone(),
                        first: first_path,
                        shard,
                        expected: expected.count,
                    });
                }
                (Some(_), None) | (None, Some(_)) => {
                    return Err(MergeError::Mixed {
                        path: path.clone(),
                        part: Box::new(tag.part),
                        first: first_path,
                        first_part: Box::new(first_part.clone()),
                    });
                }
                _ => {}
            }
        }
        parts.push((run, tag.part));
    }
    Ok(parts)
}

/// Every unit with the part holding it, in operator then episode order; refuses units held
/// by no part, and units held by two shards (of two pool workers' parts, keeps the first
/// worker's by name).
fn merge_order(parts: &[Part]) -> Result<Vec<(Unit, usize)>, MergeError> {
    let spec = &parts[0].run.manifest().experiment;
    let ordinal: HashMap<&str, usize> = spec
        .operators
        .iter()
        .enumerate()
        .map(|(i, o)| (o.id.as_str(), i))
        .collect();
    // Parts ranked by shard index or worker name: which copy of a unit is kept does not
    // depend on the order the directories were given in.
    let mut ranked: Vec<usize> = (0..parts.len()).collect();
    ranked.sort_by_key(|&i| rank(&parts[i].part));
    let mut order = Vec::new();
    for index in ranked {
        for unit in parts[index].store.completed_units()? {
            let operator = ordinal
                .get(unit.operator_id.as_str())
                .copied()
                .unwrap_or(usize::MAX);
            order.push((operator, unit.episode_index, unit, index));
        }
    }
    // Stable: the copies of a unit stay in rank order.
    order.sort_by_key(|(operator, episode, _, _)| (*operator, *episode));
    if parts[0].part.shard().is_none() {
        order.dedup_by_key(|(operator, episode, _, _)| (*operator, *episode));
    }
    // Units held twice, by pair of parts.
    let mut twice: HashMap<(usize, usize), Vec<Unit>> = HashMap::new();
    for pair in order.windows(2) {
        if (pair[0].0, pair[0].1) == (pair[1].0, pair[1].1) {
            twice
                .entry((pair[0].3, pair[1].3))
                .or_default()
                .push(pair[1].2.clone());
        }
    }
    if let Some(((earlier, later), units)) = twice.into_iter().min_by_key(|(pair, _)| *pair) {
        return Err(MergeError::Overlap {
            path: parts[later].run.path().to_owned(),
            other: parts[earlier].run.path().to_owned(),
            units: UnitList(units),
        });
    }
    let total = crate::plan::unit_total(spec);
    if order.len() as u64 != total {
        let operators = spec.operators.len() as u64;
        let held: std::collections::HashSet<(usize, u32)> =
            order.iter().map(|(o, e, _, _)| (*o, *e)).collect();
        let mut units = Vec::new();
        let mut shards = std::collections::BTreeSet::new();
        for index in 0..total {
            let (episode, operator) = ((index / operators) as u32, (index % operators) as usize);
            if !held.contains(&(operator, episode)) {
                units.push(Unit::new(spec.operators[operator].id.clone(), episode));
                if let Some(first) = parts[0].part.shard() {
                    shards.insert(Shard::owner(index, total, first.count));
                }
            }
        }
        return Err(MergeError::Missing {
            shards: parts[0]
                .part
                .shard()
                .map(|first| (shards.into_iter().collect(), first.count)),
            units: UnitList(units),
        });
    }
    Ok(order
        .into_iter()
        .map(|(_, _, unit, part)| (unit, part))
        .collect())
}

/// The order of parts: shards by index, pool workers by name.
fn rank(part: &RunPart) -> (u32, &str) {
    match part {
        RunPart::Shard(shard) => (shard.index, ""),
        RunPart::Pool { worker, .. } => (0, worker.as_str()),
    }
}

/// Writes the merged run into `staging`: records in `order`, logs synced, store flushed.
/// The step log is compressed when any part's is. Returns the units and step records
/// written.
///
/// The step log, most of the bytes, is written by a thread of its own while this thread
/// copies the units into the store and writes the episode log.
fn write_merged(
    parts: &[Part],
    order: &[(Unit, usize)],
    staging: &Path,
    manifest: &RunManifest,
) -> Result<(u64, u64), MergeError> {
    let compression = parts
        .iter()
        .map(|part| Compression::of(&part.run.steps_path()))
        .max()
        .unwrap_or_default();
    let (run, store) = RunDir::create_with(staging, manifest, compression)?;
    let steps_path = run.steps_path();
    let episodes_path = run.episodes_path();
    let step_records = std::thread::scope(|scope| {
        let log = scope.spawn(|| write_step_log(&steps_path, parts, order));
        let stored = import_units(&store, &episodes_path, parts, order);
        let logged = log.join().unwrap_or_else(|_| {
            Err(MergeError::Write {
                path: steps_path.clone(),
                source: std::io::Error::other("the thread writing the step log failed"),
            })
        });
        stored.and(logged)
    })?;
    // Listing the merged run then needs neither its store nor its logs.
    ProgressWriter::open(&episodes_path)?.save(true)?;
    store.flush()?;
    Ok((order.len() as u64, step_records))
}

/// Copies the units in `order` into `store`, chunks as they are, and writes their episode
/// lines to `episodes_path`, synced.
fn import_units(
    store: &RunStore,
    episodes_path: &Path,
    parts: &[Part],
    order: &[(Unit, usize)],
) -> Result<(), MergeError> {
    let write_error = |source| MergeError::Write {
        path: episodes_path.to_owned(),
        source,
    };
    let mut episodes = BufWriter::with_capacity(
        1 << 20,
        OpenOptions::new()
            .append(true)
            .open(episodes_path)
            .map_err(write_error)?,
    );
    for (unit, part) in order {
        let episode = store.import_unit(&parts[*part].store, unit)?;
        episodes
            .write_all(&episode)
            .and_then(|()| episodes.write_all(b"\n"))
            .map_err(write_error)?;
    }
    episodes
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|file| file.sync_all())
        .map_err(write_error)
}

/// Writes the step lines of the units in `order`, decompressed from their stores, to the
/// new step log at `path` (compressed if its name says so), synced. Returns the step
/// records written.
fn write_step_log(path: &Path, parts: &[Part], order: &[(Unit, usize)]) -> Result<u64, MergeError> {
    let mut steps = JsonlWriter::open(path)?;
    let mut lines = Vec::new();
    let mut records = 0;
    for (unit, part) in order {
        lines.clear();
        records += parts[*part].store.append_unit_lines(unit, &mut lines)?;
        steps.append_lines(&lines)?;
    }
    steps.commit(Durability::Sync)?;
    Ok(records)
}
