//! A pool of units in a shared directory that any number of processes take work from
//! (`mosaic run --pool DIR`), for clusters whose nodes differ in speed or are preempted.
//!
//! ```text
//! DIR/pool.json          the run: experiment identity, run id, units, lease (written once)
//! DIR/claims/I.G         a claim of the unit at episode-major index I, generation G: holds
//!                        the worker's name; its modification time is the last renewal
//! DIR/done/I             the unit's completion marker: the worker whose records count
//! ```
//!
//! Every file is created with `O_EXCL` (`create_new`), so of two processes creating the
//! same file exactly one succeeds: a unit is claimed once per generation, and completed
//! once. A claim holds while its holder renews it ([`Pool::renew`], every third of the
//! lease); once it is older than the lease, any worker may take the unit over by creating
//! the claim of the next generation. A holder that finds a newer generation has lost the
//! unit; if it still finishes it, its records are a second copy, which
//! [`crate::merge::merge`] drops deterministically (units are deterministic, so both copies
//! are the same records, volatile fields aside). Leases compare modification times written
//! by one node with the clock of another: keep the lease well above the nodes' clock skew.
//!
//! ```
//! use mosaic_recorder::pool::{Claim, Pool, PoolManifest};
//! use std::time::Duration;
//! let dir = tempfile::tempdir().unwrap();
//! let manifest = PoolManifest { experiment: "e".into(), run_id: "r".into(), units: 2, lease_ms: 60_000 };
//! let a = Pool::join(dir.path(), &manifest, "a").unwrap();
//! let b = Pool::join(dir.path(), &manifest, "b").unwrap();
//! assert_eq!(a.claim().unwrap(), Claim::Unit(0));
//! assert_eq!(b.claim().unwrap(), Claim::Unit(1));
//! assert_eq!(a.claim().unwrap(), Claim::Wait); // b holds unit 1 and may still finish it
//! assert!(a.complete(0).unwrap() && b.complete(1).unwrap());
//! assert_eq!(a.claim().unwrap(), Claim::Finished);
//! assert_eq!(Pool::done_count(dir.path()).unwrap(), 2);
//! ```

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The pool's description, in `pool.json`.
pub const POOL_FILE: &str = "pool.json";
const CLAIMS_DIR: &str = "claims";
const DONE_DIR: &str = "done";

/// What a pool runs; every worker joining it must bring the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolManifest {
    /// The experiment's identity ([`crate::merge::experiment_identity`]).
    pub experiment: String,
    /// The run id every worker records under.
    pub run_id: String,
    /// Units of the run (operators × episodes), by episode-major index.
    pub units: u64,
    /// How long a claim holds without renewal, milliseconds.
    pub lease_ms: u64,
}

/// A pool could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// A file of the pool could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// `pool.json` is not a pool's description.
    #[error("{}: not a pool description: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The pool runs something else than the worker joining it.
    #[error(
        "{} is the pool of run `{}` ({} units, experiment {:.12}…, lease {} ms); this worker runs `{}` ({} units, experiment {:.12}…, lease {} ms)",
        path.display(), pool.run_id, pool.units, pool.experiment, pool.lease_ms,
        worker.run_id, worker.units, worker.experiment, worker.lease_ms
    )]
    OtherRun {
        /// The pool directory.
        path: PathBuf,
        /// What the pool runs.
        pool: Box<PoolManifest>,
        /// What the worker runs.
        worker: Box<PoolManifest>,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PoolError + '_ {
    move |source| PoolError::Io {
        path: path.to_owned(),
        source,
    }
}

/// What a worker is to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Run the unit at this episode-major index: it is claimed for this worker.
    Unit(u64),
    /// Nothing to claim now, but other workers hold claims that may expire: ask again
    /// after [`Pool::retry_after`].
    Wait,
    /// Every unit is complete, or claimed by this worker.
    Finished,
}

/// One worker's view of a pool.
#[derive(Debug)]
pub struct Pool {
    path: PathBuf,
    manifest: PoolManifest,
    worker: String,
    state: Mutex<WorkerState>,
}

#[derive(Debug, Default)]
struct WorkerState {
    /// The next index the first pass tries.
    cursor: u64,
    /// Claims held: unit index → claim file.
    held: HashMap<u64, PathBuf>,
}

impl Pool {
    /// Joins the pool in `path` (creating it if it does not exist) as `worker`, checking that
    /// it runs `manifest`.
    pub fn join(path: &Path, manifest: &PoolManifest, worker: &str) -> Result<Self, PoolError> {
        for dir in [CLAIMS_DIR, DONE_DIR] {
            let dir = path.join(dir);
            fs::create_dir_all(&dir).map_err(io(&dir))?;
        }
        let file = path.join(POOL_FILE);
        // Written aside and linked into place: the link fails if another worker was first,
        // and nobody ever reads a half-written description.
        let staged = path.join(format!(".{POOL_FILE}.{worker}.{}", std::process::id()));
        let bytes = serde_json::to_vec_pretty(manifest).map_err(|e| PoolError::Malformed {
            path: file.clone(),
            message: e.to_string(),
        })?;
        File::create(&staged)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
            .map_err(io(&staged))?;
        let linked = fs::hard_link(&staged, &file);
        let _ = fs::remove_file(&staged);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let found = Self::read(path)?;
                if found != *manifest {
                    return Err(PoolError::OtherRun {
                        path: path.to_owned(),
                        pool: Box::new(found),
                        worker: Box::new(manifest.clone()),
                    });
                }
            }
            Err(e) => return Err(io(&file)(e)),
        }
        Ok(Self {
            path: path.to_owned(),
            manifest: manifest.clone(),
            worker: worker.to_owned(),
            state: Mutex::default(),
        })
    }

    /// The description of the pool in `path`.
    pub fn read(path: &Path) -> Result<PoolManifest, PoolError> {
        let file = path.join(POOL_FILE);
        let bytes = fs::read(&file).map_err(io(&file))?;
        serde_json::from_slice(&bytes).map_err(|e| PoolError::Malformed {
            path: file,
            message: e.to_string(),
        })
    }

    /// How many units of the pool in `path` are complete.
    pub fn done_count(path: &Path) -> Result<usize, PoolError> {
        let done = path.join(DONE_DIR);
        Ok(fs::read_dir(&done).map_err(io(&done))?.count())
    }

    /// The pool's description.
    pub fn manifest(&self) -> &PoolManifest {
        &self.manifest
    }

    /// This worker's name.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    /// How long to wait after [`Claim::Wait`] before asking again: a quarter of the lease.
    pub fn retry_after(&self) -> Duration {
        Duration::from_millis(self.manifest.lease_ms / 4).max(Duration::from_millis(10))
    }

    /// How often [`Pool::renew`] must run for claims to hold: a third of the lease.
    pub fn renew_every(&self) -> Duration {
        Duration::from_millis(self.manifest.lease_ms / 3).max(Duration::from_millis(10))
    }

    fn claim_file(&self, index: u64, generation: u32) -> PathBuf {
        self.path
            .join(CLAIMS_DIR)
            .join(format!("{index}.{generation}"))
    }

    fn done_file(&self, index: u64) -> PathBuf {
        self.path.join(DONE_DIR).join(index.to_string())
    }

    /// Creates `path` holding this worker's name, unless it exists.
    fn create_once(&self, path: &Path) -> Result<bool, PoolError> {
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(mut file) => {
                file.write_all(self.worker.as_bytes()).map_err(io(path))?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(path)(e)),
        }
    }

    /// The latest generation of the unit's claim and its file, if it was ever claimed.
    fn latest_claim(&self, index: u64) -> Option<(u32, PathBuf)> {
        let mut latest = None;
        for generation in 0.. {
            let file = self.claim_file(index, generation);
            if !file.exists() {
                break;
            }
            latest = Some((generation, file));
        }
        latest
    }

    fn expired(&self, claim: &Path) -> Result<bool, PoolError> {
        let renewed = fs::metadata(claim)
            .and_then(|m| m.modified())
            .map_err(io(claim))?;
        let age = SystemTime::now()
            .duration_since(renewed)
            .unwrap_or_default();
        Ok(age > Duration::from_millis(self.manifest.lease_ms))
    }

    /// Claims the next unit: first the units never claimed, in order; then units whose
    /// claims expired.
    pub fn claim(&self) -> Result<Claim, PoolError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.cursor < self.manifest.units {
            let index = state.cursor;
            state.cursor += 1;
            let file = self.claim_file(index, 0);
            if !self.done_file(index).exists() && self.create_once(&file)? {
                state.held.insert(index, file);
                return Ok(Claim::Unit(index));
            }
        }
        let mut others_hold = false;
        for index in 0..self.manifest.units {
            if state.held.contains_key(&index) || self.done_file(index).exists() {
                continue;
            }
            let next = match self.latest_claim(index) {
                Some((generation, file)) if self.expired(&file)? => generation + 1,
                Some(_) => {
                    others_hold = true;
                    continue;
                }
                None => 0,
            };
            let file = self.claim_file(index, next);
            if self.create_once(&file)? {
                state.held.insert(index, file);
                return Ok(Claim::Unit(index));
            }
            others_hold = true;
        }
        Ok(if others_hold {
            Claim::Wait
        } else {
            Claim::Finished
        })
    }

    /// Marks the unit complete with this worker's records. Answers whether they are the ones
    /// that count (`false`: another worker completed it first).
    pub fn complete(&self, index: u64) -> Result<bool, PoolError> {
        let counted = self.create_once(&self.done_file(index))?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.held.remove(&index);
        Ok(counted)
    }

    /// Renews every claim this worker holds. Claims another worker took over (after this
    /// one let them expire) are given up; answers their units.
    pub fn renew(&self) -> Result<Vec<u64>, PoolError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut lost = Vec::new();
        for (index, file) in &state.held {
            let latest = self.latest_claim(*index).map(|(_, latest)| latest);
            if latest.as_ref() != Some(file) {
                lost.push(*index);
                continue;
            }
            File::options()
                .write(true)
                .open(file)
                .and_then(|f| f.set_modified(SystemTime::now()))
                .map_err(io(file))?;
        }
        for index in &lost {
            state.held.remove(index);
        }
        Ok(lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(lease_ms: u64) -> PoolManifest {
        PoolManifest {
            experiment: "e".into(),
            run_id: "r".into(),
            units: 3,
            lease_ms,
        }
    }

    #[test]
    fn an_expired_claim_is_taken_over_once_and_its_holder_learns_it_lost_it() {
        let dir = tempfile::tempdir().unwrap();
        let slow = Pool::join(dir.path(), &manifest(400), "slow").unwrap();
        let (a, b) = (
            Pool::join(dir.path(), &manifest(400), "a").unwrap(),
            Pool::join(dir.path(), &manifest(400), "b").unwrap(),
        );
        assert_eq!(slow.claim().unwrap(), Claim::Unit(0));
        assert_eq!(a.claim().unwrap(), Claim::Unit(1));
        assert_eq!(b.claim().unwrap(), Claim::Unit(2));
        assert!(a.complete(1).unwrap() && b.complete(2).unwrap());
        // Renewed claims hold.
        std::thread::sleep(Duration::from_millis(200));
        assert!(slow.renew().unwrap().is_empty());
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(a.claim().unwrap(), Claim::Wait);
        // Not renewed, the claim expires: one worker takes it over, under generation 1.
        std::thread::sleep(Duration::from_millis(500));
        let taken = [a.claim().unwrap(), b.claim().unwrap()];
        assert!(taken.contains(&Claim::Unit(0)), "{taken:?}");
        assert!(taken.contains(&Claim::Wait), "{taken:?}");
        assert!(dir.path().join("claims/0.1").exists());
        assert_eq!(slow.renew().unwrap(), [0]);
        // Completed by the new holder first, the slow worker's copy does not count.
        let winner = if taken[0] == Claim::Unit(0) { &a } else { &b };
        assert!(winner.complete(0).unwrap());
        assert!(!slow.complete(0).unwrap());
        assert_eq!(slow.claim().unwrap(), Claim::Finished);
        assert_eq!(Pool::done_count(dir.path()).unwrap(), 3);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("done/0")).unwrap(),
            winner.worker()
        );
    }

    #[test]
    fn a_worker_of_another_run_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        Pool::join(dir.path(), &manifest(100), "a").unwrap();
        let other = PoolManifest {
            units: 4,
            ..manifest(100)
        };
        let refused = Pool::join(dir.path(), &other, "b").unwrap_err();
        assert!(matches!(refused, PoolError::OtherRun { .. }), "{refused}");
        assert_eq!(Pool::read(dir.path()).unwrap(), manifest(100));
    }
}
