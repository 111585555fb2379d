//! Which records of a run directory's logs are kept when incomplete units are discarded,
//! and the rewrite that keeps them.

use crate::error::{RecorderError, Result};
use crate::jsonl::{Compression, Durability, JsonlWriter};
use crate::paths::sync_parent;
use crate::store::{RunStore, Unit};
use std::collections::HashMap;
use std::fs;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The records a rewrite keeps: every record of complete units, and the step records of
/// resumable units before their checkpoint's step.
#[derive(Debug, Default)]
pub(super) struct Keep {
    by_operator: HashMap<String, Vec<Kept>>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Kept {
    #[default]
    Nothing,
    Complete,
    StepsBefore(u32),
}

impl Keep {
    pub(super) fn complete(store: &RunStore) -> Result<Self> {
        let mut keep = Self::default();
        for unit in store.completed_units()? {
            keep.insert(&unit.operator_id, unit.episode_index);
        }
        Ok(keep)
    }

    pub(super) fn insert(&mut self, operator_id: &str, episode_index: u32) {
        self.set(operator_id, episode_index, Kept::Complete);
    }

    pub(super) fn forget(&mut self, unit: &Unit) {
        self.set(&unit.operator_id, unit.episode_index, Kept::Nothing);
    }

    pub(super) fn prefix(&mut self, unit: &Unit, step_index: u32) {
        self.set(
            &unit.operator_id,
            unit.episode_index,
            Kept::StepsBefore(step_index),
        );
    }

    fn set(&mut self, operator_id: &str, episode_index: u32, kept: Kept) {
        let flags = self.by_operator.entry(operator_id.to_owned()).or_default();
        let index = episode_index as usize;
        if flags.len() <= index {
            flags.resize(index + 1, Kept::Nothing);
        }
        flags[index] = kept;
    }

    fn get(&self, operator_id: &str, episode_index: u32) -> Kept {
        self.by_operator
            .get(operator_id)
            .and_then(|flags| flags.get(episode_index as usize))
            .copied()
            .unwrap_or_default()
    }

    pub(super) fn contains(&self, operator_id: &str, episode_index: u32) -> bool {
        self.get(operator_id, episode_index) == Kept::Complete
    }

    pub(super) fn is_prefix(&self, operator_id: &str, episode_index: u32) -> bool {
        matches!(self.get(operator_id, episode_index), Kept::StepsBefore(_))
    }

    /// Whether to keep the line of `probe`, from the step log when `step`, else a roll-up.
    fn keeps(&self, probe: &StepProbe, step: bool) -> bool {
        match self.get(&probe.operator_id, probe.episode_index) {
            Kept::Complete => true,
            Kept::StepsBefore(limit) => step && probe.step_index < limit,
            Kept::Nothing => false,
        }
    }
}

/// The identifying fields of a record line.
#[derive(serde::Deserialize)]
pub(super) struct StepProbe {
    #[serde(default)]
    pub(super) run_id: String,
    pub(super) operator_id: String,
    pub(super) episode_index: u32,
    #[serde(default)]
    pub(super) step_index: u32,
}

impl StepProbe {
    pub(super) fn parse(path: &Path, number: u64, line: &[u8]) -> Result<Self> {
        serde_json::from_slice(line).map_err(|e| RecorderError::Malformed {
            path: path.to_owned(),
            line: number,
            message: e.to_string(),
        })
    }
}

/// Rewrites the JSON-lines file at `path` keeping only the lines `keep` keeps (byte for
/// byte; `steps` says whether it is the step log), handing each kept line to `kept`.
/// Returns how many lines were dropped; the file is replaced atomically, and left untouched
/// when nothing is dropped.
pub(super) fn rewrite_keeping(
    path: &Path,
    keep: &Keep,
    steps: bool,
    mut kept: impl FnMut(&StepProbe, &[u8]) -> Result<()>,
) -> Result<u64> {
    let io = |p: &Path, e| RecorderError::io(p, e);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".rewrite");
    let tmp = PathBuf::from(tmp);
    let mut output = JsonlWriter::create(&tmp, Compression::of(path))?;
    let mut dropped = 0;
    let torn = for_each_line(path, |number, line| {
        let probe = StepProbe::parse(path, number, line)?;
        if keep.keeps(&probe, steps) {
            output.append_lines(line)?;
            kept(&probe, line)?;
        } else {
            dropped += 1;
        }
        Ok(())
    })?;
    if torn {
        dropped += 1;
    }
    if dropped == 0 {
        drop(output);
        fs::remove_file(&tmp).map_err(|e| io(&tmp, e))?;
        return Ok(0);
    }
    output.commit(Durability::Sync)?;
    drop(output);
    fs::rename(&tmp, path).map_err(|e| io(path, e))?;
    sync_parent(path)?;
    Ok(dropped)
}

/// Calls `each` with the number and bytes (newline included) of every non-blank,
/// newline-terminated line of `path`. Returns whether the file ends in an unterminated
/// (torn) line or a cut frame, which is not passed on: no complete unit has records there,
/// since units are complete only up to their episode line's newline.
pub(super) fn for_each_line(
    path: &Path,
    mut each: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<bool> {
    let mut input = crate::jsonl::open_lines(path)?;
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| RecorderError::io(path, e))?;
        if n == 0 {
            return Ok(input.torn_frame().is_some());
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            return Ok(true);
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            each(number, &line)?;
        }
    }
}
