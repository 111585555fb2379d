//! Reading step records from `steps.jsonl` in the store's order, without the store.
//!
//! Readers of a finished run never open its store (sled opens its files for writing, and a
//! reader leaves a run as it found it), and a run being written has its store locked. One
//! pass over `steps.jsonl` notes where each complete unit's lines are, as spans of
//! consecutive lines (one span per unit in a run written one episode at a time, one per
//! batch of steps otherwise); records are then read unit by unit in the store's order
//! (operator position, episode index, then file order) with positioned reads, so an
//! export from the logs is the export from the store, and one unit's steps cost the reads
//! of its spans only. A compressed log (`steps.jsonl.zst`) is decoded once into memory
//! when the index is built, and its spans are read from there.

use super::keep::StepProbe;
use crate::error::{RecorderError, Result};
use crate::jsonl::{Compression, TornTail, open_lines};
use crate::unit_lines::UnitLines;
use mosaic_core::record::StepRecord;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

/// The operator id and episode index of a step line, read from its first fields as they
/// are written (`{"schema":…,"run_id":…,"operator_id":"a",…,"episode_index":3,…`) without
/// parsing the whole line; `None` when the line does not have that shape (it is then
/// parsed). Inside a JSON string every quote is escaped, so the first `"operator_id":"`
/// is the top-level key: nested objects come after these fields.
fn quick_probe(line: &[u8]) -> Option<(&str, u32)> {
    let after = |key: &[u8]| -> Option<&[u8]> {
        let at = line.windows(key.len()).position(|w| w == key)?;
        line.get(at + key.len()..)
    };
    let operator = after(b"\"operator_id\":\"")?;
    let operator = &operator[..operator.iter().position(|b| *b == b'"')?];
    if operator.contains(&b'\\') {
        return None;
    }
    let index = after(b"\"episode_index\":")?;
    let digits = index.iter().take_while(|b| b.is_ascii_digit()).count();
    let index = std::str::from_utf8(&index[..digits]).ok()?.parse().ok()?;
    Some((std::str::from_utf8(operator).ok()?, index))
}

/// Consecutive lines of one unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    /// Byte offset of the first line.
    offset: u64,
    /// Bytes of the lines, newlines included.
    len: u64,
    /// 1-based line number of the first line.
    first_line: u64,
}

/// A unit in the store's order: operator position in the experiment, episode index.
pub(super) type UnitOrder = (usize, u32);

/// Where the step lines of each complete unit are in `steps.jsonl`.
#[derive(Debug, Default)]
pub(super) struct LogIndex {
    path: PathBuf,
    /// The decoded lines of a compressed log (spans index into them); `None` for a plain
    /// log, read with positioned reads.
    decoded: Option<Vec<u8>>,
    units: BTreeMap<UnitOrder, Vec<Span>>,
    torn_tail: Option<TornTail>,
}

impl LogIndex {
    /// Indexes the lines of `path` belonging to the units of `complete` (operator id and
    /// episode index → the unit's place in the store's order). Stops at a torn last line.
    pub(super) fn build(path: &Path, complete: &HashMap<(&str, u32), UnitOrder>) -> Result<Self> {
        let io = |e| RecorderError::io(path, e);
        let (plain, decoded, torn_frame) = match Compression::of(path) {
            Compression::None => (Some(File::open(path).map_err(io)?), None, None),
            Compression::Zstd => {
                let mut lines = open_lines(path)?;
                let mut bytes = Vec::new();
                lines.read_to_end(&mut bytes).map_err(io)?;
                (None, Some(bytes), lines.torn_frame())
            }
        };
        let mut input: Box<dyn BufRead + '_> = match (&plain, &decoded) {
            (Some(file), _) => Box::new(BufReader::with_capacity(256 * 1024, file)),
            (None, bytes) => Box::new(bytes.as_deref().unwrap_or_default()),
        };
        let mut index = LogIndex {
            path: path.to_owned(),
            ..LogIndex::default()
        };
        let mut line = Vec::with_capacity(1024);
        let (mut offset, mut number) = (0u64, 0u64);
        loop {
            line.clear();
            let read = input.read_until(b'\n', &mut line).map_err(io)? as u64;
            if read == 0 {
                // A cut last frame of a compressed log holds no line of a complete unit.
                if let Some(bytes) = torn_frame {
                    index.torn_tail = Some(TornTail {
                        line: number + 1,
                        bytes,
                    });
                }
                break;
            }
            number += 1;
            if line.last() != Some(&b'\n') {
                index.torn_tail = Some(TornTail {
                    line: number,
                    bytes: read,
                });
                break;
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                let order = match quick_probe(&line) {
                    Some(unit) => complete.get(&unit).copied(),
                    None => {
                        let probe = StepProbe::parse(path, number, &line)?;
                        complete
                            .get(&(probe.operator_id.as_str(), probe.episode_index))
                            .copied()
                    }
                };
                if let Some(order) = order {
                    let spans = index.units.entry(order).or_default();
                    match spans.last_mut() {
                        Some(last) if last.offset + last.len == offset => last.len += read,
                        _ => spans.push(Span {
                            offset,
                            len: read,
                            first_line: number,
                        }),
                    }
                }
            }
            offset += read;
        }
        drop(input);
        index.decoded = decoded;
        Ok(index)
    }

    /// The incomplete last line the pass stopped at, if any.
    pub(super) fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// Calls `each` with the lines of every indexed unit, in the store's order.
    pub(super) fn for_each_unit(
        &self,
        mut each: impl FnMut(UnitLines) -> Result<()>,
    ) -> Result<()> {
        let file = self.open()?;
        for spans in self.units.values() {
            each(self.read_spans(file.as_ref(), spans)?)?;
        }
        Ok(())
    }

    /// The step records of the unit at `order`, in file order (empty when it is not
    /// indexed).
    pub(super) fn unit(&self, order: UnitOrder) -> Result<Vec<StepRecord>> {
        let mut records = Vec::new();
        if let Some(spans) = self.units.get(&order) {
            self.read_spans(self.open()?.as_ref(), spans)?
                .decode_each(|record: StepRecord| {
                    records.push(record);
                    Ok(())
                })?;
        }
        Ok(records)
    }

    /// The plain log to read spans from (`None`: they are in the decoded lines).
    fn open(&self) -> Result<Option<File>> {
        if self.decoded.is_some() {
            return Ok(None);
        }
        let file = File::open(&self.path).map_err(|e| RecorderError::io(&self.path, e))?;
        Ok(Some(file))
    }

    /// The lines of `spans`.
    fn read_spans(&self, file: Option<&File>, spans: &[Span]) -> Result<UnitLines> {
        let mut lines = UnitLines::from_log(self.path.clone());
        for span in spans {
            let len = usize::try_from(span.len).map_err(|_| RecorderError::Malformed {
                path: self.path.clone(),
                line: span.first_line,
                message: "a span of lines too long for memory".into(),
            })?;
            let buf = lines.bytes_mut();
            match (file, &self.decoded) {
                (Some(file), _) => {
                    let start = buf.len();
                    buf.resize(start + len, 0);
                    file.read_exact_at(&mut buf[start..], span.offset)
                        .map_err(|e| RecorderError::io(&self.path, e))?;
                }
                (None, decoded) => {
                    let start = usize::try_from(span.offset).unwrap_or(usize::MAX);
                    let span_lines = decoded
                        .as_deref()
                        .and_then(|bytes| bytes.get(start..start.saturating_add(len)))
                        .ok_or_else(|| RecorderError::Malformed {
                            path: self.path.clone(),
                            line: span.first_line,
                            message: "a span of lines past the end of the decoded log".into(),
                        })?;
                    buf.extend_from_slice(span_lines);
                }
            }
            lines.end_log_span(span.first_line);
        }
        Ok(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_probe_reads_the_top_level_fields_or_gives_way() {
        let line = br#"{"schema":"mosaic.step/1","run_id":"r","operator_id":"a-1","episode_id":"r-a-1-ep000007","episode_index":7,"seed":3,"decision":{"operator_id":"x","episode_index":9}}"#;
        assert_eq!(quick_probe(line), Some(("a-1", 7)));
        // Escapes and other layouts are left to the JSON parser.
        assert_eq!(
            quick_probe(br#"{"operator_id":"a\"b","episode_index":1}"#),
            None
        );
        assert_eq!(quick_probe(br#"{"episode_index":1}"#), None);
        assert_eq!(
            quick_probe(br#"{"operator_id":"a","episode_index":"1"}"#),
            None
        );
    }
}
