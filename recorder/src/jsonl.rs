//! JSON lines: one record per line, the interchange format of a run.
//!
//! [`JsonlWriter`] appends through a large buffer and makes the file durable on request.
//! [`JsonlReader`] streams typed records, checks their schema tag, and tells a torn last
//! line (what a crash in the middle of a write leaves) from corruption: the torn tail is
//! reported through [`JsonlReader::torn_tail`] and skipped, every other bad line is an error
//! naming the file and the line.

use crate::error::{RecorderError, Result};
use crate::schema::{Record, readable};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// How far records must have gone before an episode counts as written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// On the disk (`fsync`): survives a crash of the machine or a power loss.
    #[default]
    Sync,
    /// Handed to the operating system: survives a crash or kill of mosaic, not of the
    /// machine. Much cheaper where `fsync` is slow.
    Flush,
}

/// Bytes buffered before a write to the file. Small enough that the writes of a run go out
/// while it steps: what is left for the commit at the end of an episode (which the session
/// waits for) is little.
const WRITE_BUFFER: usize = 128 * 1024;

/// An incomplete last line: what a crash in the middle of a write leaves behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number of the incomplete line.
    pub line: u64,
    /// Its length in bytes.
    pub bytes: u64,
}

/// Appends records to a JSON-lines file.
///
/// ```
/// use mosaic_recorder::jsonl::{Durability, JsonlWriter};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("x.jsonl");
/// let mut writer = JsonlWriter::open(&path).unwrap();
/// writer.append(&serde_json::json!({"a": 1})).unwrap();
/// writer.commit(Durability::Sync).unwrap();
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
/// ```
#[derive(Debug)]
pub struct JsonlWriter {
    path: PathBuf,
    out: BufWriter<File>,
    repaired: Option<TornTail>,
}

impl JsonlWriter {
    /// Opens `path` for appending, creating it if needed. A torn last line left by a crash
    /// is cut off first (so new lines do not glue onto it); [`JsonlWriter::repaired`] tells.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |e| RecorderError::io(path, e);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let repaired = repair_tail(&mut file).map_err(io)?;
        Ok(Self {
            path: path.to_owned(),
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
            repaired,
        })
    }

    /// The torn tail cut off when the file was opened, if any.
    pub fn repaired(&self) -> Option<&TornTail> {
        self.repaired.as_ref()
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as a line (buffered).
    pub fn append<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        serde_json::to_writer(&mut self.out, record).map_err(|e| match e.io_error_kind() {
            Some(kind) => RecorderError::io(&self.path, std::io::Error::from(kind)),
            None => RecorderError::Serialise(e),
        })?;
        self.out
            .write_all(b"\n")
            .map_err(|e| RecorderError::io(&self.path, e))
    }

    /// Appends a line that is already serialised (without its newline).
    pub fn append_raw(&mut self, line: &[u8]) -> Result<()> {
        self.out
            .write_all(line)
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| RecorderError::io(&self.path, e))
    }

    /// Appends bytes that are already whole lines (each ending in a newline).
    pub fn append_lines(&mut self, lines: &[u8]) -> Result<()> {
        self.out
            .write_all(lines)
            .map_err(|e| RecorderError::io(&self.path, e))
    }

    /// Hands buffered lines to the operating system (they survive a crash of mosaic).
    pub fn flush(&mut self) -> Result<()> {
        self.out
            .flush()
            .map_err(|e| RecorderError::io(&self.path, e))
    }

    /// Hands buffered lines to the operating system and, for [`Durability::Sync`], waits
    /// until they are on the disk.
    pub fn commit(&mut self, durability: Durability) -> Result<()> {
        self.flush()?;
        if durability == Durability::Sync {
            self.sync_handle()?.wait()?;
        }
        Ok(())
    }

    /// A handle that syncs what has been flushed so far, for syncing on another thread.
    pub fn sync_handle(&self) -> Result<PendingSync> {
        let file = self
            .out
            .get_ref()
            .try_clone()
            .map_err(|e| RecorderError::io(&self.path, e))?;
        Ok(PendingSync {
            files: vec![(self.path.clone(), file)],
        })
    }
}

/// Files to sync: lets the slow part of a commit run on another thread.
#[derive(Debug, Default)]
pub struct PendingSync {
    files: Vec<(PathBuf, File)>,
}

impl PendingSync {
    /// Whether there is nothing to sync (then [`PendingSync::wait`] returns at once).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds the files of `other`.
    pub fn and(mut self, other: PendingSync) -> Self {
        self.files.extend(other.files);
        self
    }

    /// Waits until the files are on the disk. Several files are synced concurrently:
    /// the file system can then commit them together.
    pub fn wait(self) -> Result<()> {
        let sync = |(path, file): &(PathBuf, File)| {
            file.sync_data().map_err(|e| RecorderError::io(path, e))
        };
        match self.files.split_first() {
            None => Ok(()),
            Some((first, [])) => sync(first),
            Some((first, rest)) => std::thread::scope(|scope| {
                let others: Vec<_> = rest.iter().map(|f| scope.spawn(move || sync(f))).collect();
                let mut result = sync(first);
                for other in others {
                    let joined = other.join().unwrap_or_else(|_| {
                        Err(RecorderError::io(
                            &first.0,
                            std::io::Error::other("sync thread failed"),
                        ))
                    });
                    result = result.and(joined);
                }
                result
            }),
        }
    }
}

/// Cuts an incomplete last line off `file` (opened for reading and appending).
fn repair_tail(file: &mut File) -> std::io::Result<Option<TornTail>> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(None);
    }
    // Scan backwards for the last newline, a chunk at a time.
    const CHUNK: u64 = 64 * 1024;
    let mut end = len;
    let mut last_newline = None;
    let mut chunk = Vec::new();
    while end > 0 && last_newline.is_none() {
        let start = end.saturating_sub(CHUNK);
        chunk.resize((end - start) as usize, 0);
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        last_newline = chunk
            .iter()
            .rposition(|b| *b == b'\n')
            .map(|i| start + i as u64);
        end = start;
    }
    let keep = last_newline.map_or(0, |i| i + 1);
    if keep == len {
        return Ok(None);
    }
    let mut tail = Vec::with_capacity((len - keep) as usize);
    file.seek(SeekFrom::Start(keep))?;
    file.read_to_end(&mut tail)?;
    if serde_json::from_slice::<serde::de::IgnoredAny>(&tail).is_ok() {
        // A complete record whose newline was not written: keep it, end the line.
        file.write_all(b"\n")?;
        file.sync_data()?;
        return Ok(None);
    }
    let line = if keep == 0 {
        1
    } else {
        // Count lines only in the rare repair case.
        file.seek(SeekFrom::Start(0))?;
        let mut newlines = 0u64;
        let mut buf = vec![0; 64 * 1024];
        let mut remaining = keep;
        while remaining > 0 {
            let n = file.read(&mut buf[..remaining.min(64 * 1024) as usize])?;
            if n == 0 {
                break;
            }
            newlines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
            remaining -= n as u64;
        }
        newlines + 1
    };
    file.set_len(keep)?;
    file.sync_data()?;
    Ok(Some(TornTail {
        line,
        bytes: len - keep,
    }))
}

/// Streams the records of a JSON-lines file.
///
/// Lines are checked against the schema of `T` ([`readable`]); blank lines are skipped;
/// unknown fields are ignored. The iterator yields an error for a malformed line (and
/// stops); an incomplete last line without a newline is not an error but
/// [`JsonlReader::torn_tail`].
///
/// ```
/// use mosaic_core::record::EpisodeRecord;
/// use mosaic_recorder::jsonl::JsonlReader;
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("episodes.jsonl");
/// std::fs::write(&path, "{\"schema\":\"mosaic.episode/1\",\"run_id\":\"r\",\"operator_id\":\"o\",\
///     \"episode_id\":\"r-o-ep000000\",\"episode_index\":0,\"seed\":1,\"env\":\"e\",\"steps\":3,\
///     \"terminated\":true,\"truncated\":false,\"agents\":[],\"future_field\":1}\n{\"schema\":\"mos")
///     .unwrap();
/// let mut reader = JsonlReader::<EpisodeRecord>::open(&path).unwrap();
/// let records: Vec<_> = reader.by_ref().collect::<Result<_, _>>().unwrap();
/// assert_eq!(records[0].steps, 3);
/// assert_eq!(reader.torn_tail().unwrap().line, 2);
/// ```
#[derive(Debug)]
pub struct JsonlReader<T> {
    path: PathBuf,
    input: BufReader<File>,
    line: u64,
    buf: Vec<u8>,
    torn_tail: Option<TornTail>,
    done: bool,
    _record: PhantomData<fn() -> T>,
}

#[derive(serde::Deserialize)]
struct SchemaProbe {
    schema: Option<String>,
}

impl<T: Record> JsonlReader<T> {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| RecorderError::io(path, e))?;
        Ok(Self {
            path: path.to_owned(),
            input: BufReader::with_capacity(256 * 1024, file),
            line: 0,
            buf: Vec::with_capacity(1024),
            torn_tail: None,
            done: false,
            _record: PhantomData,
        })
    }

    /// The incomplete last line found at the end of the file, once the reader got there.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// The 1-based number of the line read last.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the next raw line (without its newline) and whether it was terminated.
    /// Returns `None` at the end of the file.
    fn next_line(&mut self) -> Result<Option<bool>> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| RecorderError::io(&self.path, e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let terminated = self.buf.last() == Some(&b'\n');
            if terminated {
                self.buf.pop();
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(terminated));
        }
    }

    fn parse(&self) -> Result<T> {
        match serde_json::from_slice::<T>(&self.buf) {
            Ok(record) => {
                self.check_schema(record.schema())?;
                Ok(record)
            }
            Err(error) => {
                // A record of another schema fails to deserialise for that reason: say so.
                if let Ok(SchemaProbe {
                    schema: Some(schema),
                }) = serde_json::from_slice::<SchemaProbe>(&self.buf)
                {
                    self.check_schema(&schema)?;
                }
                Err(self.malformed(&error))
            }
        }
    }

    fn check_schema(&self, schema: &str) -> Result<()> {
        readable(schema, T::SCHEMA).map_err(|u| RecorderError::UnsupportedSchema {
            path: self.path.clone(),
            line: self.line,
            found: schema.to_owned(),
            expected: u.expected,
            major: u.major,
        })
    }

    fn malformed(&self, error: &serde_json::Error) -> RecorderError {
        let message = if error.is_eof() {
            format!("truncated line ({error})")
        } else {
            error.to_string()
        };
        RecorderError::Malformed {
            path: self.path.clone(),
            line: self.line,
            message,
        }
    }
}

impl<T: Record> Iterator for JsonlReader<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let terminated = match self.next_line() {
            Ok(Some(terminated)) => terminated,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        };
        let parsed = self.parse();
        if terminated {
            if parsed.is_err() {
                self.done = true;
            }
            return Some(parsed);
        }
        // The last line, without its newline.
        self.done = true;
        match parsed {
            Ok(record) => Some(Ok(record)),
            Err(RecorderError::Malformed { .. })
                if serde_json::from_slice::<serde::de::IgnoredAny>(&self.buf).is_err() =>
            {
                self.torn_tail = Some(TornTail {
                    line: self.line,
                    bytes: self.buf.len() as u64,
                });
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use mosaic_core::record::StepRecord;

    fn write_lines(path: &Path, records: &[StepRecord]) {
        let mut writer = JsonlWriter::open(path).unwrap();
        for r in records {
            writer.append(r).unwrap();
        }
        writer.commit(Durability::Flush).unwrap();
    }

    fn read_all(path: &Path) -> (Result<Vec<StepRecord>>, Option<TornTail>) {
        let mut reader = JsonlReader::<StepRecord>::open(path).unwrap();
        let records = reader.by_ref().collect();
        (records, reader.torn_tail().cloned())
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 5, 2);
        write_lines(&path, &records);
        let (read, torn) = read_all(&path);
        assert_eq!(read.unwrap(), records);
        assert_eq!(torn, None);
    }

    #[test]
    fn torn_last_line_is_reported_and_nothing_complete_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 2);
        write_lines(&path, &records);
        let full = std::fs::read(&path).unwrap();
        // Every cut inside the last line leaves the first five records readable.
        let last_start = full[..full.len() - 1]
            .iter()
            .rposition(|b| *b == b'\n')
            .unwrap()
            + 1;
        for cut in last_start + 1..full.len() - 1 {
            std::fs::write(&path, &full[..cut]).unwrap();
            let (read, torn) = read_all(&path);
            assert_eq!(read.unwrap(), records[..5], "cut at {cut}");
            assert_eq!(
                torn,
                Some(TornTail {
                    line: 6,
                    bytes: (cut - last_start) as u64
                }),
                "cut at {cut}"
            );
        }
        // Only the newline missing: the record is complete and read.
        std::fs::write(&path, &full[..full.len() - 1]).unwrap();
        assert_eq!(read_all(&path).0.unwrap(), records);
    }

    #[test]
    fn reopening_cuts_the_torn_tail_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 1);
        write_lines(&path, &records);
        let full = std::fs::read(&path).unwrap();
        std::fs::write(&path, &full[..full.len() - 10]).unwrap();
        let mut writer = JsonlWriter::open(&path).unwrap();
        assert_eq!(writer.repaired().unwrap().line, 3);
        writer.append(&records[2]).unwrap();
        writer.commit(Durability::Sync).unwrap();
        assert_eq!(read_all(&path).0.unwrap(), records);
        // A complete last record without its newline is kept and terminated.
        std::fs::write(&path, &full[..full.len() - 1]).unwrap();
        let writer = JsonlWriter::open(&path).unwrap();
        assert!(writer.repaired().is_none());
        assert_eq!(std::fs::read(&path).unwrap(), full);
    }

    #[test]
    fn corrupt_middle_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 1);
        write_lines(&path, &records);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let truncated = &lines[1][..20].to_owned();
        lines[1] = truncated;
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let err = read_all(&path).0.unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, RecorderError::Malformed { line: 2, .. }),
            "{message}"
        );
        assert!(message.contains("steps.jsonl:2"), "{message}");
        assert!(message.contains("truncated"), "{message}");
    }

    #[test]
    fn versions_minor_accepted_major_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steps.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 1, 1);
        let mut value = serde_json::to_value(&records[0]).unwrap();
        // An older record: lacks optional fields; a newer minor: has unknown ones.
        value.as_object_mut().unwrap().remove("decision_us");
        let old = value.clone();
        value["schema"] = "mosaic.step/1.4".into();
        value["added_later"] = serde_json::json!({"x": 1});
        let newer_minor = value.clone();
        value["schema"] = "mosaic.step/2".into();
        value["reward"] = "a string in version 2".into();
        let newer_major = value;
        let text = format!("{old}\n{newer_minor}\n{newer_major}\n");
        std::fs::write(&path, text).unwrap();
        let mut reader = JsonlReader::<StepRecord>::open(&path).unwrap();
        assert_eq!(reader.next().unwrap().unwrap().decision_us, 0);
        assert_eq!(reader.next().unwrap().unwrap().schema, "mosaic.step/1.4");
        let err = reader.next().unwrap().unwrap_err();
        assert!(
            matches!(&err, RecorderError::UnsupportedSchema { line: 3, found, .. } if found == "mosaic.step/2"),
            "{err}"
        );
        assert!(reader.next().is_none());
    }

    #[test]
    fn a_record_of_another_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("episodes.jsonl");
        let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 1, 1);
        write_lines(&path, &records);
        let mut reader = JsonlReader::<mosaic_core::record::EpisodeRecord>::open(&path).unwrap();
        let err = reader.next().unwrap().unwrap_err();
        assert!(err.to_string().contains("mosaic.episode"), "{err}");
    }
}
