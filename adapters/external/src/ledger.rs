//! The process groups this process started and that may still be running, listed in a file
//! of the run directory (`processes.json`), so that a `mosaic` killed outright (SIGKILL,
//! the kernel's OOM killer, a scheduler's hard stop) leaves behind the list of what it
//! left running: the next `mosaic resume` or `mosaic run` of the run reaps the groups that
//! are still the ones it started ([`reap`]).
//!
//! Every worker and model server runs in a process group of its own, whose id is its
//! leader's pid. A group is listed from its start ([`register`]) until it has ended (its
//! [`Registration`] dropped). The list lives in memory, process-wide, and is written to
//! every file named by a live [`Recording`] ([`record_into`]) at each change.
//!
//! Why not a parent-death signal (`PR_SET_PDEATHSIG`): it fires when the *thread* that
//! spawned the child exits, not the process, and workers are spawned from the threads of
//! the session lanes and restarts, which come and go; it would also need `unsafe`
//! (`pre_exec`). The file needs neither.
//!
//! A pid is recycled once its process is gone, so a listed group is reaped only when it is
//! provably the one started (Linux `/proc`):
//!
//! - the machine has not rebooted since (the boot id);
//! - its leader, when still there, has the recorded start time (field 22 of
//!   `/proc/PID/stat`, clock ticks since boot); a leader with another start time is a
//!   recycled pid and its group is left alone;
//! - a group whose leader is gone is reaped when one of its members carries the group's
//!   tag ([`TAG_ENV`] in its environment, inherited from the leader by what it starts).

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The environment variable holding a group's tag in each process it starts.
pub const TAG_ENV: &str = "MOSAIC_PROCESS_TAG";

/// How long reaped groups get between SIGTERM and SIGKILL.
pub const REAP_GRACE: Duration = Duration::from_secs(2);

/// One listed process group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupEntry {
    /// The process group id: its leader's pid.
    pub pgid: u32,
    /// The leader's start time, clock ticks since boot.
    pub start_ticks: u64,
    /// The boot the leader started in (`/proc/sys/kernel/random/boot_id`).
    pub boot_id: String,
    /// The tag in the environment of the group's processes ([`TAG_ENV`]).
    pub tag: String,
    /// The command line, for the report of a reap.
    pub command: String,
}

/// Reading or writing a process list failed.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file could not be read or written.
    #[error("process list {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file is not a process list.
    #[error("process list {path} is not a list of process groups: {error}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        error: serde_json::Error,
    },
}

/// The groups alive in this process and the files they are written to.
#[derive(Default)]
struct Live {
    groups: BTreeMap<u32, GroupEntry>,
    files: Vec<PathBuf>,
}

impl Live {
    fn write(&self, path: &Path) {
        if let Err(error) = write_list(path, self.groups.values()) {
            tracing::warn!(target: "mosaic::worker", "{error}");
        }
    }

    fn write_all(&self) {
        for path in &self.files {
            self.write(path);
        }
    }
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    groups: BTreeMap::new(),
    files: Vec::new(),
});

fn live() -> MutexGuard<'static, Live> {
    // The list stays consistent even if a holder panicked.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Writes the list atomically (a temporary file renamed over it): a kill mid-write leaves
/// the previous list.
fn write_list<'a>(
    path: &Path,
    groups: impl Iterator<Item = &'a GroupEntry>,
) -> Result<(), LedgerError> {
    let groups: Vec<&GroupEntry> = groups.collect();
    let io = |error| LedgerError::Io {
        path: path.to_owned(),
        error,
    };
    let text = serde_json::to_vec_pretty(&groups).map_err(|error| LedgerError::Malformed {
        path: path.to_owned(),
        error,
    })?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// A file the live groups are written to, until dropped (which removes the file: the groups
/// of a run that ended normally have ended with it).
#[derive(Debug)]
pub struct Recording {
    path: PathBuf,
}

/// Writes the live groups (those already started too) to `path` at every change, until
/// the returned [`Recording`] is dropped.
pub fn record_into(path: &Path) -> Recording {
    let mut live = live();
    live.write(path);
    live.files.push(path.to_owned());
    Recording {
        path: path.to_owned(),
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(index) = live.files.iter().position(|p| *p == self.path) {
            live.files.remove(index);
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(target: "mosaic::worker", "process list {}: {error}", self.path.display())
            }
        }
    }
}

/// A new tag for a group about to be started: this process's id and start time and a
/// counter, so no other group of this boot has it.
pub fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let start = process_stat(pid).map_or(0, |stat| stat.start_ticks);
    format!("{pid}.{start}.{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A listed group; dropping it takes the group off the list (drop it once the group has
/// been ended).
#[derive(Debug)]
pub struct Registration {
    pgid: u32,
}

/// Lists the group led by `pgid`, started with `tag` in its environment. A group whose
/// leader cannot be read in `/proc` (it exited already) is not listed.
pub fn register(pgid: u32, tag: &str, command: &str) -> Registration {
    if let Some(stat) = process_stat(pgid) {
        let entry = GroupEntry {
            pgid,
            start_ticks: stat.start_ticks,
            boot_id: boot_id(),
            tag: tag.to_owned(),
            command: command.to_owned(),
        };
        let mut live = live();
        live.groups.insert(pgid, entry);
        live.write_all();
    }
    Registration { pgid }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut live = live();
        if live.groups.remove(&self.pgid).is_some() {
            live.write_all();
        }
    }
}

/// SIGKILL to process group `pgid` (what is left of a group whose leader exited or hung).
pub fn kill_group(pgid: u32) {
    let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
}

/// The groups of a process list that were still running and were ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reaped {
    /// The groups ended.
    pub groups: Vec<GroupEntry>,
    /// Listed groups left alone: gone already, or their pid now belongs to another process.
    pub gone: usize,
}

impl Reaped {
    /// One line for the log: how many groups were ended, with their ids and commands;
    /// `None` when none was.
    pub fn describe(&self) -> Option<String> {
        if self.groups.is_empty() {
            return None;
        }
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| format!("{} ({})", g.pgid, g.command))
            .collect();
        Some(format!(
            "ended {} process group(s) left running by a mosaic that was killed: {}",
            self.groups.len(),
            groups.join(", ")
        ))
    }
}

/// Ends the groups listed in `path` that are still the ones listed (see the module docs):
/// SIGTERM, up to `grace` to exit, then SIGKILL. Removes the file. A missing file lists
/// nothing.
pub fn reap(path: &Path, grace: Duration) -> Result<Reaped, LedgerError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Reaped::default()),
        Err(error) => {
            return Err(LedgerError::Io {
                path: path.to_owned(),
                error,
            });
        }
    };
    let entries: Vec<GroupEntry> =
        serde_json::from_slice(&text).map_err(|error| LedgerError::Malformed {
            path: path.to_owned(),
            error,
        })?;
    let boot = boot_id();
    let mut reaped = Reaped::default();
    for entry in entries {
        if entry.boot_id == boot && is_ours(&entry) {
            let _ = killpg(Pid::from_raw(entry.pgid as i32), Signal::SIGTERM);
            reaped.groups.push(entry);
        } else {
            reaped.gone += 1;
        }
    }
    let deadline = Instant::now() + grace;
    while reaped
        .groups
        .iter()
        .any(|g| !live_members(g.pgid).is_empty())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    for group in &reaped.groups {
        if !live_members(group.pgid).is_empty() {
            kill_group(group.pgid);
        }
    }
    std::fs::remove_file(path).map_err(|error| LedgerError::Io {
        path: path.to_owned(),
        error,
    })?;
    Ok(reaped)
}

/// Whether the group of `entry` is still the one started (same boot checked by the caller).
fn is_ours(entry: &GroupEntry) -> bool {
    match process_stat(entry.pgid) {
        // The leader lives on (or is an unreaped zombie) in its own group: ours if it
        // started when recorded, else its pid was recycled.
        Some(leader) if leader.pgrp == entry.pgid => leader.start_ticks == entry.start_ticks,
        // A process with the leader's pid in another group: the pid was recycled, and a
        // group id in use cannot be recycled, so no member of ours is left.
        Some(_) => false,
        // The leader is gone: ours if a member carries the tag.
        None => live_members(entry.pgid)
            .into_iter()
            .any(|pid| carries_tag(pid, &entry.tag)),
    }
}

/// Whether process `pid` has `TAG_ENV=tag` in its environment.
fn carries_tag(pid: u32, tag: &str) -> bool {
    let wanted = format!("{TAG_ENV}={tag}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
}

/// What `/proc/PID/stat` tells of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProcessStat {
    pgrp: u32,
    start_ticks: u64,
    zombie: bool,
}

fn process_stat(pid: u32) -> Option<ProcessStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `pid (comm) state ppid pgrp ... starttime ...`: the command may hold spaces and
/// parentheses, so the fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<ProcessStat> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcessStat {
        zombie: *fields.first()? == "Z",
        pgrp: fields.get(2)?.parse().ok()?,
        // Field 22 of the line; the state is field 3.
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// The processes of group `pgid` that are not zombies.
pub fn live_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| process_stat(*pid).is_some_and(|s| s.pgrp == pgid && !s.zombie))
        .collect()
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|id| id.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    use std::process::{Child, Command};

    /// `sh -c script` in a group of its own, with `tag` in its environment.
    fn group(script: &str, tag: &str) -> Child {
        Command::new("sh")
            .args(["-c", script])
            .env(TAG_ENV, tag)
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn entry(pgid: u32, tag: &str) -> GroupEntry {
        GroupEntry {
            pgid,
            start_ticks: process_stat(pgid).unwrap().start_ticks,
            boot_id: boot_id(),
            tag: tag.into(),
            command: "sh".into(),
        }
    }

    #[test]
    fn the_stat_line_is_read_past_a_command_with_parentheses() {
        let stat = "42 (a) b) S 1 40 40 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 1 2";
        assert_eq!(
            parse_stat(stat),
            Some(ProcessStat {
                pgrp: 40,
                start_ticks: 777,
                zombie: false
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn listed_groups_are_reaped_and_a_recycled_pid_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("processes.json");
        // A live leader with its child.
        let mut led = group("sleep 60 & sleep 60; wait", "t-led");
        // A group whose leader exited, leaving a tagged child.
        let mut orphaned = group("sleep 60 & exit 0", "t-orphan");
        let orphan_group = orphaned.id();
        let orphan_entry = entry(orphan_group, "t-orphan");
        orphaned.wait().unwrap();
        // A group listed with another start time: its pid was recycled.
        let mut stranger = group("sleep 60", "t-stranger");
        let mut recycled = entry(stranger.id(), "t-stranger");
        recycled.start_ticks += 1;
        // A tagged group's member, listed under a leader pid that is gone, without the tag.
        let mut untagged = group("sleep 60 & exit 0", "t-other");
        let untagged_group = untagged.id();
        let untagged_entry = entry(untagged_group, "t-listed");
        untagged.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let entries = [
            entry(led.id(), "t-led"),
            orphan_entry.clone(),
            recycled,
            untagged_entry,
        ];
        write_list(&list, entries.iter()).unwrap();

        let reaped = reap(&list, Duration::from_secs(2)).unwrap();
        let ids: Vec<u32> = reaped.groups.iter().map(|g| g.pgid).collect();
        assert_eq!(ids, [led.id(), orphan_group]);
        assert_eq!(reaped.gone, 2);
        assert!(reaped.describe().unwrap().contains("2 process group(s)"));
        assert!(led.wait().unwrap().signal().is_some());
        assert_eq!(live_members(orphan_group), Vec::<u32>::new());
        assert!(
            stranger.try_wait().unwrap().is_none(),
            "the stranger runs on"
        );
        assert_eq!(live_members(untagged_group).len(), 1, "its member runs on");
        assert!(!list.exists(), "the list is removed");
        assert_eq!(reap(&list, REAP_GRACE).unwrap(), Reaped::default());
        kill_group(stranger.id());
        kill_group(untagged_group);
        stranger.wait().unwrap();
    }

    #[test]
    fn a_recording_lists_the_live_groups_and_is_removed_at_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("processes.json");
        let mut child = group("sleep 60", "t-rec");
        let registration = register(child.id(), "t-rec", "sleep 60");
        let recording = record_into(&list);
        let listed: Vec<GroupEntry> =
            serde_json::from_slice(&std::fs::read(&list).unwrap()).unwrap();
        assert!(
            listed
                .iter()
                .any(|g| g.pgid == child.id() && g.tag == "t-rec")
        );
        kill_group(child.id());
        child.wait().unwrap();
        drop(registration);
        let listed: Vec<GroupEntry> =
            serde_json::from_slice(&std::fs::read(&list).unwrap()).unwrap();
        assert!(listed.iter().all(|g| g.pgid != child.id()));
        drop(recording);
        assert!(!list.exists());
    }

    #[test]
    fn a_malformed_list_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("processes.json");
        std::fs::write(&list, "not json").unwrap();
        let error = reap(&list, REAP_GRACE).unwrap_err().to_string();
        assert!(error.contains("processes.json"), "{error}");
    }
}
