//! JSON lines: one record per line, the interchange format of a run.
//!
//! [`JsonlWriter`] appends through a large buffer and makes the file durable on request.
//! [`JsonlReader`] streams typed records, checks their schema tag, and tells a torn last
//! line (what a crash in the middle of a write leaves) from corruption: the torn tail is
//! reported through [`JsonlReader::torn_tail`] and skipped, every other bad line is an error
//! naming the file and the line.
//!
//! A log may be compressed ([`Compression::Zstd`], a `.zst` file): then its lines are in
//! independent zstd frames, written whole at every flush, and a frame cut by a crash is the
//! torn tail (see the `frames` module). [`open_lines`] opens either kind; the writer and the
//! reader here handle both.

mod frames;

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

/// How a JSON-lines log is stored, told by its file name.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// Plain lines.
    #[default]
    None,
    /// Lines in independent zstd frames, one or more per flush; the file name ends in
    /// `.zst`. About 33 times smaller for soccer step records.
    Zstd,
}

impl Compression {
    /// The extension of compressed logs.
    const ZSTD_EXTENSION: &str = "zst";

    /// How the log at `path` is stored (by its extension).
    pub fn of(path: &Path) -> Self {
        match path.extension() {
            Some(extension) if extension == Self::ZSTD_EXTENSION => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// The file name of a log named `plain` when stored this way (`steps.jsonl` →
    /// `steps.jsonl.zst`).
    pub fn file_name(self, plain: &str) -> String {
        match self {
            Compression::None => plain.to_owned(),
            Compression::Zstd => format!("{plain}.{}", Self::ZSTD_EXTENSION),
        }
    }
}

/// Bytes buffered before a write to the file. Small enough that the writes of a run go out
/// while it steps: what is left for the commit at the end of an episode (which the session
/// waits for) is little.
const WRITE_BUFFER: usize = 128 * 1024;

/// An incomplete last line (or, in a compressed log, frame): what a crash in the middle of a
/// write leaves behind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// 1-based line number of the incomplete line (of a cut frame: of the line after the
    /// last complete one).
    pub line: u64,
    /// Its length in bytes (of a cut frame: its compressed bytes).
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
    out: Output,
    repaired: Option<TornTail>,
}

/// Where a writer's lines go.
#[derive(Debug)]
enum Output {
    Plain(BufWriter<File>),
    Zstd(frames::FrameWriter),
}

impl JsonlWriter {
    /// Opens `path` for appending, creating it if needed; a `.zst` file is a compressed
    /// log ([`Compression::of`]). A torn last line (or frame) left by a crash is cut off
    /// first (so new lines do not glue onto it); [`JsonlWriter::repaired`] tells.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |e| RecorderError::io(path, e);
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let compression = Compression::of(path);
        let repaired = match compression {
            Compression::None => repair_tail(&mut file),
            Compression::Zstd => repair_frames(&mut file),
        }
        .map_err(io)?;
        Self::with_file(path, file, compression, repaired)
    }

    /// Creates (or empties) `path` and writes `compression`, whatever its name says.
    pub fn create(path: &Path, compression: Compression) -> Result<Self> {
        let file = File::create(path).map_err(|e| RecorderError::io(path, e))?;
        Self::with_file(path, file, compression, None)
    }

    fn with_file(
        path: &Path,
        file: File,
        compression: Compression,
        repaired: Option<TornTail>,
    ) -> Result<Self> {
        let out = match compression {
            Compression::None => Output::Plain(BufWriter::with_capacity(WRITE_BUFFER, file)),
            Compression::Zstd => Output::Zstd(
                frames::FrameWriter::new(file).map_err(|e| RecorderError::io(path, e))?,
            ),
        };
        Ok(Self {
            path: path.to_owned(),
            out,
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
        let path = &self.path;
        let failed = |e: serde_json::Error| match e.io_error_kind() {
            Some(kind) => RecorderError::io(path, std::io::Error::from(kind)),
            None => RecorderError::Serialise(e),
        };
        match &mut self.out {
            Output::Plain(out) => {
                serde_json::to_writer(&mut *out, record).map_err(failed)?;
                out.write_all(b"\n").map_err(|e| RecorderError::io(path, e))
            }
            Output::Zstd(out) => {
                let buffer = out.buffer();
                let start = buffer.len();
                if let Err(e) = serde_json::to_writer(&mut *buffer, record) {
                    // No part of a record may reach a frame.
                    buffer.truncate(start);
                    return Err(failed(e));
                }
                buffer.push(b'\n');
                out.lines_added().map_err(|e| RecorderError::io(path, e))
            }
        }
    }

    /// Appends a line that is already serialised (without its newline).
    pub fn append_raw(&mut self, line: &[u8]) -> Result<()> {
        self.write(&[line, b"\n"])
    }

    /// Appends bytes that are already whole lines (each ending in a newline).
    pub fn append_lines(&mut self, lines: &[u8]) -> Result<()> {
        self.write(&[lines])
    }

    /// Appends `parts`, which together are whole lines.
    fn write(&mut self, parts: &[&[u8]]) -> Result<()> {
        let written = match &mut self.out {
            Output::Plain(out) => parts.iter().try_for_each(|part| out.write_all(part)),
            Output::Zstd(out) => {
                for part in parts {
                    out.buffer().extend_from_slice(part);
                }
                out.lines_added()
            }
        };
        written.map_err(|e| RecorderError::io(&self.path, e))
    }

    /// Hands buffered lines to the operating system (they survive a crash of mosaic); a
    /// compressed log gets them as a frame of their own.
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.out {
            Output::Plain(out) => out.flush(),
            Output::Zstd(out) => out.flush(),
        }
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
        let file = match &self.out {
            Output::Plain(out) => out.get_ref(),
            Output::Zstd(out) => out.file(),
        };
        let file = file
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

/// Cuts a frame torn by a crash off the compressed log `file` (opened for reading and
/// appending).
fn repair_frames(file: &mut File) -> std::io::Result<Option<TornTail>> {
    let len = file.seek(SeekFrom::End(0))?;
    let complete = frames::complete_bytes(file)?;
    file.seek(SeekFrom::End(0))?;
    if complete == len {
        return Ok(None);
    }
    file.set_len(complete)?;
    file.sync_data()?;
    Ok(Some(TornTail {
        line: frames::count_lines(file)? + 1,
        bytes: len - complete,
    }))
}

/// The plain lines of a log, compressed or not: how every reader of a log opens it.
#[derive(Debug)]
pub struct LogLines {
    input: Input,
}

#[derive(Debug)]
enum Input {
    Plain(BufReader<File>),
    Zstd(frames::FrameReader),
}

/// Opens the log at `path` for reading its lines, decompressing a `.zst` log
/// ([`Compression::of`]).
pub fn open_lines(path: &Path) -> Result<LogLines> {
    let file = File::open(path).map_err(|e| RecorderError::io(path, e))?;
    let input = match Compression::of(path) {
        Compression::None => Input::Plain(BufReader::with_capacity(256 * 1024, file)),
        Compression::Zstd => {
            Input::Zstd(frames::FrameReader::new(file).map_err(|e| RecorderError::io(path, e))?)
        }
    };
    Ok(LogLines { input })
}

impl LogLines {
    /// For a compressed log whose last frame a crash cut: the frame's bytes, once the
    /// reader got to the end. (Frames end at lines, so no line of it is read.)
    pub fn torn_frame(&self) -> Option<u64> {
        match &self.input {
            Input::Plain(_) => None,
            Input::Zstd(frames) => frames.torn(),
        }
    }
}

impl Read for LogLines {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut self.input {
            Input::Plain(input) => input.read(buf),
            Input::Zstd(input) => input.read(buf),
        }
    }
}

impl BufRead for LogLines {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        match &mut self.input {
            Input::Plain(input) => input.fill_buf(),
            Input::Zstd(input) => input.fill_buf(),
        }
    }

    fn consume(&mut self, amount: usize) {
        match &mut self.input {
            Input::Plain(input) => input.consume(amount),
            Input::Zstd(input) => input.consume(amount),
        }
    }
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
    input: LogLines,
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
    /// Opens `path` for reading (a `.zst` log is decompressed, see [`open_lines`]).
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self {
            path: path.to_owned(),
            input: open_lines(path)?,
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
                if let Some(bytes) = self.input.torn_frame() {
                    self.torn_tail = Some(TornTail {
                        line: self.line + 1,
                        bytes,
                    });
                }
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
mod tests;
