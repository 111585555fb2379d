//! The bytes of a chunk of step records in the `steps` tree and the key it is stored under.

use crate::error::{RecorderError, Result};

/// First byte of a compressed chunk (a chunk of plain JSON lines starts with `{`).
pub(super) const LZ4_CHUNK: u8 = 0x04;
/// Tag, record count and length of the lines before the LZ4 block.
const CHUNK_HEADER: usize = 9;
/// LZ4 expands at most this much per input byte: bounds the length a header may claim.
const LZ4_MAX_EXPANSION: usize = 255;

/// The header of a compressed chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ChunkHeader {
    /// Step records in the chunk.
    pub(super) records: u32,
    len: u32,
}

impl ChunkHeader {
    /// The header of `chunk`, `None` for a chunk of plain JSON lines.
    pub(super) fn parse(chunk: &[u8]) -> std::result::Result<Option<Self>, String> {
        match chunk.first() {
            Some(&LZ4_CHUNK) => {}
            None | Some(b'{') => return Ok(None),
            Some(other) => return Err(format!("unknown chunk tag {other:#04x}")),
        }
        let field = |at: usize| {
            chunk
                .get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes)
                .ok_or_else(|| format!("header cut short ({} bytes)", chunk.len()))
        };
        Ok(Some(Self {
            records: field(1)?,
            len: field(5)?,
        }))
    }

    /// The JSON lines of the compressed `chunk` this header was read from.
    pub(super) fn decompress(self, chunk: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let mut lines = Vec::new();
        self.decompress_at(chunk, &mut lines, 0)?;
        Ok(lines)
    }

    /// Writes the JSON lines of the compressed `chunk` this header was read from into
    /// `out` from byte `at` on (over what is there: bytes already there need no zeroing,
    /// `out` grows where it is too short). Returns where they end.
    pub(super) fn decompress_at(
        self,
        chunk: &[u8],
        out: &mut Vec<u8>,
        at: usize,
    ) -> std::result::Result<usize, String> {
        let block = &chunk[CHUNK_HEADER..];
        let len = self.len as usize;
        // A corrupt length must not make us allocate more than the block can hold.
        if len > block.len().saturating_mul(LZ4_MAX_EXPANSION) {
            return Err(format!(
                "{len} bytes claimed for a block of {} bytes",
                block.len()
            ));
        }
        let end = at + len;
        if out.len() < end {
            out.resize(end, 0);
        }
        match lz4_flex::block::decompress_into(block, &mut out[at..end]) {
            Ok(n) if n == len => Ok(end),
            Ok(n) => Err(format!("{n} bytes decompressed, {len} expected")),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Compresses the JSON lines of a chunk of `records` step records into `out`.
pub(super) fn compress_chunk(lines: &[u8], records: u32, out: &mut Vec<u8>) -> Result<()> {
    let len = u32::try_from(lines.len()).map_err(|_| {
        RecorderError::Serialise(serde::ser::Error::custom(
            "a chunk of step records longer than 4 GiB",
        ))
    })?;
    out.clear();
    out.resize(
        CHUNK_HEADER + lz4_flex::block::get_maximum_output_size(lines.len()),
        0,
    );
    out[0] = LZ4_CHUNK;
    out[1..5].copy_from_slice(&records.to_be_bytes());
    out[5..9].copy_from_slice(&len.to_be_bytes());
    let written = lz4_flex::block::compress_into(lines, &mut out[CHUNK_HEADER..]).map_err(|e| {
        RecorderError::Serialise(serde::ser::Error::custom(format!("compressing: {e}")))
    })?;
    out.truncate(CHUNK_HEADER + written);
    Ok(())
}

/// The key of the chunk of `unit` whose first step is `first_step`.
pub(super) fn chunk_key(unit: [u8; 6], first_step: u32) -> [u8; 10] {
    let mut key = [0; 10];
    key[..6].copy_from_slice(&unit);
    key[6..].copy_from_slice(&first_step.to_be_bytes());
    key
}
