//! The compressed log: JSON lines in independent zstd frames.
//!
//! Each frame holds whole lines: [`FrameWriter`] ends a frame when its buffer passes
//! [`FRAME_BYTES`] and at every flush, and writes it with one `write_all`. A crash can
//! therefore cut only the last frame, and only lines that were not yet flushed are in it —
//! the same guarantee as a torn last line of a plain file. [`FrameReader`] walks the frame
//! structure (headers and block sizes, without decompressing) before decoding a frame, so
//! a frame the file ends inside is recognised and never decoded: it is reported as a torn
//! tail. Bytes that are not a frame where one should start are an error. Frames carry a
//! checksum of their content, so a corrupt complete frame is an error too.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use zstd::zstd_safe;

/// Plain bytes gathered before a frame is written: large enough to compress well (a frame
/// of short soccer steps is about an eighth of that), small enough that the writes of a run
/// go out while it steps.
pub(super) const FRAME_BYTES: usize = 128 * 1024;

/// zstd's default level: soccer step logs about 33 times smaller for about 2 % more CPU in
/// a recorded run (figures in docs/run-directory.md).
const LEVEL: i32 = 3;

/// The magic number starting a zstd frame.
const MAGIC: u32 = 0xFD2F_B528;
/// Skippable frames (metadata other tools may add) have magics `0x184D2A50..=0x184D2A5F`.
const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE: u32 = 0x184D_2A50;
/// The largest block a frame may hold (zstd's `Block_Maximum_Size`).
const BLOCK_MAX: u32 = 128 * 1024;
/// Frames whose content size is larger than this are decoded as a stream, growing the
/// output as the data comes (the header's size is not trusted with an allocation).
const TRUSTED_CONTENT: u64 = 64 << 20;

/// Writes lines into zstd frames (see the module docs).
pub(super) struct FrameWriter {
    file: File,
    plain: Vec<u8>,
    packed: Vec<u8>,
    compressor: zstd::bulk::Compressor<'static>,
}

impl std::fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("buffered", &self.plain.len())
            .finish_non_exhaustive()
    }
}

impl FrameWriter {
    /// Appends frames to `file`.
    pub(super) fn new(file: File) -> io::Result<Self> {
        let mut compressor = zstd::bulk::Compressor::new(LEVEL)?;
        compressor.set_parameter(zstd_safe::CParameter::ChecksumFlag(true))?;
        Ok(Self {
            file,
            plain: Vec::with_capacity(FRAME_BYTES + 4096),
            packed: Vec::new(),
            compressor,
        })
    }

    /// The buffer of the frame being gathered: append whole lines, then call
    /// [`FrameWriter::lines_added`].
    pub(super) fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.plain
    }

    /// Writes the frame if it is full. Call only when the buffer ends with a whole line.
    pub(super) fn lines_added(&mut self) -> io::Result<()> {
        if self.plain.len() >= FRAME_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes what is buffered as a frame (nothing if nothing is buffered).
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if self.plain.is_empty() {
            return Ok(());
        }
        self.packed.clear();
        self.packed
            .reserve(zstd_safe::compress_bound(self.plain.len()));
        self.compressor
            .compress_to_buffer(&self.plain, &mut self.packed)?;
        self.file.write_all(&self.packed)?;
        self.plain.clear();
        Ok(())
    }

    /// The file written.
    pub(super) fn file(&self) -> &File {
        &self.file
    }
}

/// What [`read_frame`] found.
enum Frame {
    /// The end of the file, at a frame boundary.
    End,
    /// A complete frame, now in the buffer.
    Complete,
    /// A skippable frame of this many bytes, passed over.
    Skipped(u64),
    /// The file ends inside a frame: its bytes so far.
    Torn(u64),
}

/// Reads the next frame of `input` into `frame`, following its structure. Errors with
/// `InvalidData` for bytes that are not a frame.
fn read_frame(input: &mut impl BufRead, frame: &mut Vec<u8>) -> io::Result<Frame> {
    frame.clear();
    if !take(input, frame, 4)? {
        return Ok(if frame.is_empty() {
            Frame::End
        } else {
            Frame::Torn(frame.len() as u64)
        });
    }
    let torn = |frame: &Vec<u8>| Ok(Frame::Torn(frame.len() as u64));
    let magic = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]);
    if magic & SKIPPABLE_MASK == SKIPPABLE {
        if !take(input, frame, 4)? {
            return torn(frame);
        }
        let size = u32::from_le_bytes([frame[4], frame[5], frame[6], frame[7]]);
        let skipped = io::copy(&mut input.take(u64::from(size)), &mut io::sink())?;
        return Ok(if skipped < u64::from(size) {
            Frame::Torn(8 + skipped)
        } else {
            Frame::Skipped(8 + skipped)
        });
    }
    if magic != MAGIC {
        return Err(invalid("not the start of a zstd frame"));
    }
    if !take(input, frame, 1)? {
        return torn(frame);
    }
    let descriptor = frame[4];
    if descriptor & 0b1000 != 0 {
        return Err(invalid("a zstd frame header with its reserved bit set"));
    }
    let single_segment = descriptor & 0b10_0000 != 0;
    let checksum = descriptor & 0b100 != 0;
    let window = usize::from(!single_segment);
    let dictionary = [0, 1, 2, 4][usize::from(descriptor & 0b11)];
    let content_size = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    if !take(input, frame, window + dictionary + content_size)? {
        return torn(frame);
    }
    loop {
        let start = frame.len();
        if !take(input, frame, 3)? {
            return torn(frame);
        }
        let header = u32::from_le_bytes([frame[start], frame[start + 1], frame[start + 2], 0]);
        let last = header & 1 != 0;
        let size = header >> 3;
        let stored = match (header >> 1) & 0b11 {
            // RLE: one byte repeated `size` times.
            1 => 1,
            3 => return Err(invalid("a zstd block of the reserved type")),
            _ if size > BLOCK_MAX => return Err(invalid("a zstd block larger than 128 KiB")),
            _ => size as usize,
        };
        if !take(input, frame, stored)? {
            return torn(frame);
        }
        if last {
            break;
        }
    }
    if checksum && !take(input, frame, 4)? {
        return torn(frame);
    }
    Ok(Frame::Complete)
}

/// Appends `n` bytes of `input` to `buf`; false if the input ended first (what there was
/// is appended).
fn take(input: &mut impl BufRead, buf: &mut Vec<u8>, n: usize) -> io::Result<bool> {
    let got = input.take(n as u64).read_to_end(buf)?;
    Ok(got == n)
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

/// The plain lines of a compressed log (see the module docs).
pub(super) struct FrameReader {
    input: BufReader<File>,
    frame: Vec<u8>,
    out: Vec<u8>,
    out_at: usize,
    /// Compressed bytes of the frames read so far.
    offset: u64,
    torn: Option<u64>,
    decompressor: zstd::bulk::Decompressor<'static>,
}

impl std::fmt::Debug for FrameReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameReader")
            .field("offset", &self.offset)
            .field("torn", &self.torn)
            .finish_non_exhaustive()
    }
}

impl FrameReader {
    /// Reads the frames of `file` from its start.
    pub(super) fn new(file: File) -> io::Result<Self> {
        Ok(Self {
            input: BufReader::with_capacity(256 * 1024, file),
            frame: Vec::new(),
            out: Vec::new(),
            out_at: 0,
            offset: 0,
            torn: None,
            decompressor: zstd::bulk::Decompressor::new()?,
        })
    }

    /// The bytes of the frame the file ends inside, once the reader got there.
    pub(super) fn torn(&self) -> Option<u64> {
        self.torn
    }

    /// Reads and decodes the next frame into `out`; false at the end (or a torn frame).
    fn next_frame(&mut self) -> io::Result<bool> {
        loop {
            let found = read_frame(&mut self.input, &mut self.frame)
                .map_err(|e| io::Error::new(e.kind(), format!("byte {}: {e}", self.offset)))?;
            match found {
                Frame::End => return Ok(false),
                Frame::Torn(bytes) => {
                    self.torn = Some(bytes);
                    return Ok(false);
                }
                Frame::Skipped(bytes) => {
                    self.offset += bytes;
                    continue;
                }
                Frame::Complete => {}
            }
            self.out.clear();
            self.out_at = 0;
            let decoded = match zstd_safe::get_frame_content_size(&self.frame) {
                Ok(Some(size)) if size <= TRUSTED_CONTENT => {
                    self.out.reserve(size as usize);
                    self.decompressor
                        .decompress_to_buffer(&self.frame, &mut self.out)
                        .map(drop)
                }
                _ => zstd::stream::copy_decode(&self.frame[..], &mut self.out),
            };
            decoded.map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("zstd frame at byte {}: {e}", self.offset),
                )
            })?;
            self.offset += self.frame.len() as u64;
            if !self.out.is_empty() {
                return Ok(true);
            }
        }
    }
}

impl Read for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FrameReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.out_at == self.out.len() && !self.next_frame()? {
            return Ok(&[]);
        }
        Ok(&self.out[self.out_at..])
    }

    fn consume(&mut self, amount: usize) {
        self.out_at = (self.out_at + amount).min(self.out.len());
    }
}

/// The bytes of the complete frames at the start of `file` (the whole file unless a crash
/// cut its last frame), read by structure only.
pub(super) fn complete_bytes(file: &File) -> io::Result<u64> {
    let mut input = BufReader::with_capacity(256 * 1024, file);
    input.seek(SeekFrom::Start(0))?;
    let mut frame = Vec::new();
    let mut complete = 0;
    loop {
        match read_frame(&mut input, &mut frame)? {
            Frame::End | Frame::Torn(_) => return Ok(complete),
            Frame::Complete => complete += frame.len() as u64,
            Frame::Skipped(bytes) => complete += bytes,
        }
    }
}

/// The newlines in the frames of `file`.
pub(super) fn count_lines(file: &File) -> io::Result<u64> {
    let mut file = file.try_clone()?;
    file.seek(SeekFrom::Start(0))?;
    let mut reader = FrameReader::new(file)?;
    let mut lines = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(lines);
        }
        lines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        let n = chunk.len();
        reader.consume(n);
    }
}
