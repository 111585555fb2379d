//! JSON-lines framing with a maximum frame length.
//!
//! [`LineDecoder`] is a pure state machine fed with whatever bytes arrive; it never holds
//! more than the limit in memory: once a line exceeds it, the decoder reports
//! [`FramingError::TooLong`] at once and skips the rest of that line as it streams past.
//! [`FrameReader`] drives it over any blocking [`Read`]; async readers drive it the same
//! way over their own buffers.
//!
//! ```
//! use mosaic_protocols::codec::FrameReader;
//! use mosaic_protocols::FramingError;
//! let input: &[u8] = b"{\"a\":1}\nthis line is far too long\n{\"b\":2}\n";
//! let mut reader = FrameReader::new(input, 16);
//! assert_eq!(reader.next_line().unwrap().unwrap(), b"{\"a\":1}");
//! assert_eq!(reader.next_line().unwrap_err().framing(), Some(&FramingError::TooLong { limit: 16 }));
//! assert_eq!(reader.next_line().unwrap().unwrap(), b"{\"b\":2}");
//! assert!(reader.next_line().unwrap().is_none());
//! ```

use crate::error::FramingError;
use std::io::{self, BufRead, BufReader, Read, Write};

/// The default maximum frame length: 16 MiB.
pub const DEFAULT_MAX_FRAME: usize = 16 << 20;

/// Splits a byte stream into lines of at most `max` bytes (newline excluded; a trailing
/// `\r` is dropped).
#[derive(Debug)]
pub struct LineDecoder {
    max: usize,
    line: Vec<u8>,
    skipping: bool,
}

/// What [`LineDecoder::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// Needs more input.
    Pending,
    /// A complete line.
    Line(Vec<u8>),
    /// A line broke the limit (reported once; its rest is skipped).
    TooLong,
}

impl LineDecoder {
    /// A decoder for lines of at most `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            line: Vec::new(),
            skipping: false,
        }
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Consumes a prefix of `input`; returns how many bytes were used and what they
    /// completed. Call again with the rest until it returns [`Decoded::Pending`] having
    /// used everything.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Decoded) {
        let newline = memchr(input);
        let take = newline.map_or(input.len(), |i| i + 1);
        if self.skipping {
            if newline.is_some() {
                self.skipping = false;
            }
            return (take, Decoded::Pending);
        }
        let body = newline.map_or(input, |i| &input[..i]);
        if self.line.len() + body.len() > self.max {
            self.line = Vec::new();
            self.skipping = newline.is_none();
            return (take, Decoded::TooLong);
        }
        self.line.extend_from_slice(body);
        if newline.is_none() {
            return (take, Decoded::Pending);
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        (take, Decoded::Line(line))
    }

    /// The bytes of the unfinished line, taking them out of the decoder.
    pub fn take_partial(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.line)
    }

    /// The stream ended: an unfinished line is an error.
    pub fn finish(&mut self) -> Result<(), FramingError> {
        self.skipping = false;
        let partial = std::mem::take(&mut self.line).len();
        if partial == 0 {
            Ok(())
        } else {
            Err(FramingError::Truncated { partial })
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// Reading a frame failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The transport failed.
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    /// The bytes could not be framed.
    #[error(transparent)]
    Framing(#[from] FramingError),
}

impl ReadError {
    /// The framing error, if that is what this is.
    pub fn framing(&self) -> Option<&FramingError> {
        match self {
            ReadError::Framing(e) => Some(e),
            ReadError::Io(_) => None,
        }
    }
}

/// Blocking line reader over any [`Read`].
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: BufReader<R>,
    decoder: LineDecoder,
}

impl<R: Read> FrameReader<R> {
    /// Reads lines of at most `max` bytes from `inner`.
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(64 * 1024, inner),
            decoder: LineDecoder::new(max),
        }
    }

    /// The next line; `None` at a clean end of stream.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if chunk.is_empty() {
                self.decoder.finish()?;
                return Ok(None);
            }
            let (used, decoded) = self.decoder.feed(chunk);
            self.inner.consume(used);
            match decoded {
                Decoded::Pending => {}
                Decoded::Line(line) => return Ok(Some(line)),
                Decoded::TooLong => {
                    return Err(FramingError::TooLong {
                        limit: self.decoder.max(),
                    }
                    .into());
                }
            }
        }
    }
}

impl<R> FrameReader<R> {
    /// The underlying reader and the bytes read from it but not yet returned as a line
    /// (to hand the stream over to another reader without losing data).
    pub fn into_parts(mut self) -> (R, Vec<u8>) {
        let mut pending = self.decoder.take_partial();
        pending.extend_from_slice(self.inner.buffer());
        (self.inner.into_inner(), pending)
    }
}

/// Writes messages, one line each, flushing after every message.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> FrameWriter<W> {
    /// Writes to `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            buf: Vec::with_capacity(256),
        }
    }

    /// Sends one message.
    pub fn send(&mut self, message: &crate::Message) -> io::Result<()> {
        self.buf.clear();
        message.encode_into(&mut self.buf);
        self.inner.write_all(&self.buf)?;
        self.inner.flush()
    }

    /// Sends a line that is already encoded (newline included).
    pub fn send_raw(&mut self, line: &[u8]) -> io::Result<()> {
        self.inner.write_all(line)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_lines(input: &[u8], max: usize, chunk: usize) -> Vec<Result<Vec<u8>, FramingError>> {
        let mut decoder = LineDecoder::new(max);
        let mut out = Vec::new();
        for piece in input.chunks(chunk) {
            let mut rest = piece;
            while !rest.is_empty() {
                let (used, decoded) = decoder.feed(rest);
                rest = &rest[used..];
                match decoded {
                    Decoded::Pending => {}
                    Decoded::Line(line) => out.push(Ok(line)),
                    Decoded::TooLong => out.push(Err(FramingError::TooLong { limit: max })),
                }
            }
        }
        if let Err(e) = decoder.finish() {
            out.push(Err(e));
        }
        out
    }

    #[test]
    fn splits_lines_whatever_the_chunking() {
        let input = b"one\r\ntwo\n\nthree-is-long\nfour\npartial";
        for chunk in 1..input.len() + 1 {
            assert_eq!(
                all_lines(input, 8, chunk),
                vec![
                    Ok(b"one".to_vec()),
                    Ok(b"two".to_vec()),
                    Ok(Vec::new()),
                    Err(FramingError::TooLong { limit: 8 }),
                    Ok(b"four".to_vec()),
                    Err(FramingError::Truncated { partial: 7 }),
                ],
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes() {
        assert_eq!(
            all_lines(b"12345678\n", 8, 3),
            vec![Ok(b"12345678".to_vec())]
        );
        assert_eq!(
            all_lines(b"123456789\n", 8, 100),
            vec![Err(FramingError::TooLong { limit: 8 })]
        );
    }

    /// A reader producing `len` bytes of `x` then a newline, without holding them.
    struct Endless {
        left: usize,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Ok(0);
            }
            let n = buf.len().min(self.left);
            buf[..n].fill(b'x');
            self.left -= n;
            if self.left == 0 {
                buf[n - 1] = b'\n';
            }
            Ok(n)
        }
    }

    #[test]
    fn a_huge_line_is_skipped_not_buffered() {
        let mut reader = FrameReader::new(Endless { left: 100 << 20 }, 1 << 10);
        let err = reader.next_line().unwrap_err();
        assert!(matches!(
            err.framing(),
            Some(FramingError::TooLong { limit: 1024 })
        ));
        assert!(reader.decoder.line.capacity() <= 1 << 10);
        assert!(reader.next_line().unwrap().is_none());
    }

    #[test]
    fn into_parts_keeps_unread_bytes() {
        let mut reader = FrameReader::new(&b"first\nsecond\nthi"[..], 64);
        assert_eq!(reader.next_line().unwrap().unwrap(), b"first");
        let (rest, pending) = reader.into_parts();
        assert_eq!(pending, b"second\nthi");
        assert!(rest.is_empty());
    }

    #[test]
    fn writer_writes_one_line_per_message() {
        let mut out = Vec::new();
        let mut writer = FrameWriter::new(&mut out);
        writer
            .send(&crate::Message::Ping(crate::message::Ack { id: 1 }))
            .unwrap();
        writer.send_raw(b"{}\n").unwrap();
        assert_eq!(out, b"{\"type\":\"ping\",\"id\":1}\n{}\n");
        let err = ReadError::from(io::Error::other("x"));
        assert!(err.framing().is_none());
    }
}
