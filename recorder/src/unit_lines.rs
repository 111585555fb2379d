//! The step lines of one complete unit as read from the store or the log, decoded on
//! demand into whatever view of a step record a reader needs, and a fold of a run's units
//! on several threads.
//!
//! Decoding the JSON of the step records is most of the cost of reading a run. A reader
//! that needs a few fields decodes a view borrowing them from the lines (the others are
//! skipped, not built); a reader of whole units folds them on worker threads while this
//! thread reads (and decompresses) the next ones.

use crate::error::{RecorderError, Result};
use crate::schema::readable;
use mosaic_core::record::{STEP_SCHEMA, StepRecord};
use serde::Deserialize;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Mutex;

/// A decoded step record, or a view of one: its schema tag, checked on records read from
/// the log (a store holds records of this version only).
pub(crate) trait StepSchema {
    /// The record's `schema`.
    fn schema(&self) -> &str;
}

impl StepSchema for StepRecord {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// Where lines were read.
#[derive(Debug)]
enum Origin {
    /// The store at this path.
    Store(PathBuf),
    /// The step log at `path`: consecutive runs of lines ending at byte `end` of the lines,
    /// whose first is line `first_line` of the file.
    Log {
        path: PathBuf,
        spans: Vec<(usize, u64)>,
    },
}

/// The step lines of one complete unit (every one ending in a newline), in step then agent
/// order, with where they come from for errors.
#[derive(Debug)]
pub(crate) struct UnitLines {
    bytes: Vec<u8>,
    origin: Origin,
}

/// The non-empty lines of `bytes`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes)
        .chain(std::iter::once(bytes.len()))
        .map(move |end| {
            let line = &bytes[start..end];
            start = end + 1;
            line
        })
        .filter(|line| !line.is_empty())
}

impl UnitLines {
    /// Lines read from the store at `path`.
    pub(crate) fn from_store(bytes: Vec<u8>, path: PathBuf) -> Self {
        Self {
            bytes,
            origin: Origin::Store(path),
        }
    }

    /// The buffer of the lines, to be used again.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// No lines yet, to be read from the log at `path` with [`UnitLines::push_log_span`].
    pub(crate) fn from_log(path: PathBuf) -> Self {
        Self {
            bytes: Vec::new(),
            origin: Origin::Log {
                path,
                spans: Vec::new(),
            },
        }
    }

    /// The buffer to append a span of the log to; then [`UnitLines::end_log_span`].
    pub(crate) fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Ends the span appended since the last one: its first line is line `first_line` of
    /// the log.
    pub(crate) fn end_log_span(&mut self, first_line: u64) {
        if let Origin::Log { spans, .. } = &mut self.origin {
            spans.push((self.bytes.len(), first_line));
        }
    }

    /// Calls `each` with every record decoded as `T`, in order.
    pub(crate) fn decode_each<'a, T>(&'a self, each: impl FnMut(T) -> Result<()>) -> Result<()>
    where
        T: Deserialize<'a> + StepSchema,
    {
        self.decode_each_quick(|_| None, each)
    }

    /// [`UnitLines::decode_each`], reading each line with `quick` first: `serde_json`
    /// decodes the lines it gives way on (`None`).
    pub(crate) fn decode_each_quick<'a, T>(
        &'a self,
        quick: impl Fn(&'a [u8]) -> Option<T>,
        mut each: impl FnMut(T) -> Result<()>,
    ) -> Result<()>
    where
        T: Deserialize<'a> + StepSchema,
    {
        match &self.origin {
            Origin::Store(path) => {
                for line in lines(&self.bytes) {
                    let record = match quick(line) {
                        Some(record) => record,
                        None => serde_json::from_slice(line).map_err(|e| {
                            RecorderError::CorruptStore {
                                path: path.clone(),
                                message: format!("unreadable step record: {e}"),
                            }
                        })?,
                    };
                    each(record)?;
                }
            }
            Origin::Log { path, spans } => {
                let mut start = 0;
                for &(end, first_line) in spans {
                    for (i, line) in lines(&self.bytes[start..end]).enumerate() {
                        let line_number = first_line + i as u64;
                        let record: T = match quick(line) {
                            Some(record) => record,
                            None => serde_json::from_slice(line).map_err(|e| {
                                RecorderError::Malformed {
                                    path: path.clone(),
                                    line: line_number,
                                    message: e.to_string(),
                                }
                            })?,
                        };
                        readable(record.schema(), STEP_SCHEMA).map_err(|u| {
                            RecorderError::UnsupportedSchema {
                                path: path.clone(),
                                line: line_number,
                                found: record.schema().to_owned(),
                                expected: u.expected,
                                major: u.major,
                            }
                        })?;
                        each(record)?;
                    }
                    start = end;
                }
            }
        }
        Ok(())
    }
}

/// A JSON string, borrowed from the line when it needs no unescaping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> serde::de::Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Worker threads for folding a run's units: the cores available, at most four.
pub(crate) fn fold_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Buffers of units' lines given back once read, for the next units to be read into: the
/// lines of a unit take hundreds of kilobytes, which a fresh allocation would map, fault
/// in and zero again for every unit.
#[derive(Debug, Default)]
pub(crate) struct LineBuffers(Mutex<Vec<Vec<u8>>>);

impl LineBuffers {
    /// Buffers kept: as many as units in flight between a reader and its workers.
    const KEPT: usize = 16;

    /// A buffer given back, or a new one.
    pub(crate) fn take(&self) -> Vec<u8> {
        self.0
            .lock()
            .ok()
            .and_then(|mut kept| kept.pop())
            .unwrap_or_default()
    }

    /// Gives back the buffer of `lines`, read.
    pub(crate) fn give(&self, lines: UnitLines) {
        if let Ok(mut kept) = self.0.lock()
            && kept.len() < Self::KEPT
        {
            kept.push(lines.into_bytes());
        }
    }
}
