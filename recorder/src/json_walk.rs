//! A walk over the bytes of one JSON line, for readers that take a few fields from step
//! lines and skip the others without decoding them (the report's `scan`, the Parquet
//! export).
//!
//! The walk answers only where it reads exactly as `serde_json` would, and gives up
//! (`None`) anywhere else: its callers then decode the line with `serde_json`, which reads
//! it or names what is wrong. It checks the syntax of what it skips (a line `serde_json`
//! rejects is never read quickly), and is stricter than `serde_json` where that is
//! simpler: the whole line must be UTF-8, values may nest at most [`MAX_DEPTH`] deep.

use std::borrow::Cow;

/// How deep values may nest here (less than `serde_json`'s limit: deeper ones are left to
/// it).
pub(crate) const MAX_DEPTH: usize = 100;

/// A value as loosely typed readers take it (the fields of a decision's details).
pub(crate) enum Loose<'a> {
    /// A plain non-negative integer within `u64`.
    Unsigned(u64),
    /// `true` or `false`.
    Bool(bool),
    /// A string.
    Text(Cow<'a, str>),
    /// Anything else, skipped.
    Other,
}

/// A position in a line.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    /// The same bytes, checked to be UTF-8 once: strings are borrowed from it.
    text: &'a str,
    pub(crate) pos: usize,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The bytes of `word` (little-endian) that end a plain run of string bytes, a quote, a
/// backslash or a control character (below 0x20), flagged by their high bit. The lowest
/// flag is exact (a flag can be false only above a true one, where a borrow carried), so
/// the first such byte is at `trailing_zeros / 8`; none when zero.
fn special(word: u64) -> u64 {
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    below_space
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// `digits` (ASCII digits) as a `u64`, `None` beyond it.
fn plain_u64(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `line`; `None` when it is not UTF-8.
    pub(crate) fn new(line: &'a [u8]) -> Option<Self> {
        Some(Cursor {
            bytes: line,
            text: std::str::from_utf8(line).ok()?,
            pos: 0,
        })
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.pos == self.bytes.len()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[cfg(feature = "parquet")]
    /// The bytes from `start` to here.
    pub(crate) fn since(&self, start: usize) -> &'a [u8] {
        &self.bytes[start..self.pos]
    }

    #[cfg(feature = "parquet")]
    /// The text from `start` to here (both at the edges of JSON tokens).
    pub(crate) fn text_since(&self, start: usize) -> Option<&'a str> {
        self.text.get(start..self.pos)
    }

    pub(crate) fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    /// Whether a `null` comes next (then consumed).
    pub(crate) fn null(&mut self) -> bool {
        self.ws();
        let null = self.bytes[self.pos..].starts_with(b"null");
        if null {
            self.pos += 4;
        }
        null
    }

    /// An object: `member` is called with each key and must consume its value.
    pub(crate) fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Some(());
        }
        loop {
            self.ws();
            let key = self.key()?;
            self.eat(b':')?;
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An array: `item` is called at each item and must consume it.
    pub(crate) fn array(
        &mut self,
        depth: usize,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The end of the string starting at `self.pos` (its opening quote), just past the
    /// closing quote, and whether it has escapes; `None` for an invalid string.
    fn string_end(&self) -> Option<(usize, bool)> {
        let bytes = self.bytes;
        let mut i = self.pos + 1;
        let mut escaped = false;
        loop {
            // Eight bytes at a time to the next special one: most strings have no escapes.
            while let Some(chunk) = bytes.get(i..i + 8) {
                let flags = special(u64::from_le_bytes(chunk.try_into().ok()?));
                if flags != 0 {
                    i += (flags.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match *bytes.get(i)? {
                b'"' => return Some((i + 1, escaped)),
                b'\\' => {
                    escaped = true;
                    match *bytes.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = bytes.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                0..0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// A string: borrowed when it has no escapes, else unescaped by `serde_json`.
    pub(crate) fn text(&mut self) -> Option<Cow<'a, str>> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        let (end, escaped) = self.string_end()?;
        let start = self.pos;
        self.pos = end;
        if escaped {
            serde_json::from_slice::<String>(&self.bytes[start..end])
                .ok()
                .map(Cow::Owned)
        } else {
            self.text.get(start + 1..end - 1).map(Cow::Borrowed)
        }
    }

    /// An object's key; `None` for escaped keys (rare: left to `serde_json`).
    fn key(&mut self) -> Option<&'a str> {
        match self.text()? {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        }
    }

    /// A number token; `true` when it is a plain non-negative integer (digits only).
    pub(crate) fn number(&mut self) -> Option<(&'a [u8], bool)> {
        let start = self.pos;
        let digits = |at: &mut Self| {
            let from = at.pos;
            while at.peek().is_some_and(|b| b.is_ascii_digit()) {
                at.pos += 1;
            }
            at.pos > from
        };
        let negative = self.peek()? == b'-';
        if negative {
            self.pos += 1;
        }
        let leading_zero = self.peek()? == b'0';
        if !digits(self) || (leading_zero && self.pos - start > usize::from(negative) + 1) {
            return None;
        }
        let mut plain = !negative;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            plain = false;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            plain = false;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        Some((&self.bytes[start..self.pos], plain))
    }

    /// A plain integer fitting in `u64`.
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.ws();
        match self.number()? {
            (digits, true) => plain_u64(digits),
            _ => None,
        }
    }

    /// A plain integer fitting in `u32`.
    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.u64()?.try_into().ok()
    }

    #[cfg(feature = "parquet")]
    /// `true` or `false`.
    pub(crate) fn bool(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| true),
            b'f' => self.literal(b"false").map(|()| false),
            _ => None,
        }
    }

    /// Skips a value, checking it is valid JSON.
    pub(crate) fn skip(&mut self, depth: usize) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => {
                self.pos = self.string_end()?.0;
                Some(())
            }
            b'{' => self.object(depth, |at, _| at.skip(depth + 1)),
            b'[' => self.array(depth, |at| at.skip(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number().map(|_| ()),
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.bytes[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }

    /// A value read loosely (see [`Loose`]).
    pub(crate) fn loose(&mut self) -> Option<Loose<'a>> {
        self.ws();
        match self.peek()? {
            b'"' => self.text().map(Loose::Text),
            b't' => self.literal(b"true").map(|()| Loose::Bool(true)),
            b'f' => self.literal(b"false").map(|()| Loose::Bool(false)),
            b'-' => None, // `-0` is an unsigned zero to serde: left to it.
            b'0'..=b'9' => match self.number()? {
                // Beyond u64, serde reads a float.
                (digits, true) => Some(plain_u64(digits).map_or(Loose::Other, Loose::Unsigned)),
                _ => Some(Loose::Other),
            },
            _ => self.skip(1).map(|()| Loose::Other),
        }
    }

    /// A loose value when it is an unsigned integer.
    pub(crate) fn unsigned(&mut self) -> Option<Option<u64>> {
        Some(match self.loose()? {
            Loose::Unsigned(n) => Some(n),
            _ => None,
        })
    }

    /// A loose value when it is a string.
    pub(crate) fn loose_text(&mut self) -> Option<Option<Cow<'a, str>>> {
        Some(match self.loose()? {
            Loose::Text(text) => Some(text),
            _ => None,
        })
    }
}

#[cfg(feature = "parquet")]
/// Whether `raw` (one valid JSON value, as [`Cursor::skip`] accepts it) is byte for byte
/// what `serde_json` writes for the `serde_json::Value` it parses to: no whitespace, object
/// keys in strictly ascending order (a map's order, with or without `preserve_order`),
/// strings escaped as `serde_json` escapes them, integers within `i64`/`u64` (not `-0`).
/// Conservative: `false` for any float and any escaped key, whose writing may differ.
pub(crate) fn is_canonical(raw: &[u8]) -> bool {
    let mut at = 0;
    canonical_value(raw, &mut at, 0) && at == raw.len()
}

#[cfg(feature = "parquet")]
fn canonical_value(raw: &[u8], at: &mut usize, depth: usize) -> bool {
    if depth >= MAX_DEPTH {
        return false;
    }
    match raw.get(*at) {
        Some(b'"') => canonical_string(raw, at).is_some(),
        Some(b'{') => {
            *at += 1;
            if raw.get(*at) == Some(&b'}') {
                *at += 1;
                return true;
            }
            let mut previous: Option<&[u8]> = None;
            loop {
                let start = *at + 1;
                match canonical_string(raw, at) {
                    Some(false) => {}
                    // An escaped key: its order is that of its unescaped text.
                    _ => return false,
                }
                let key = &raw[start..*at - 1];
                if previous.is_some_and(|p| p >= key) {
                    return false;
                }
                previous = Some(key);
                if raw.get(*at) != Some(&b':') {
                    return false;
                }
                *at += 1;
                if !canonical_value(raw, at, depth + 1) {
                    return false;
                }
                match raw.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b'}') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b'[') => {
            *at += 1;
            if raw.get(*at) == Some(&b']') {
                *at += 1;
                return true;
            }
            loop {
                if !canonical_value(raw, at, depth + 1) {
                    return false;
                }
                match raw.get(*at) {
                    Some(b',') => *at += 1,
                    Some(b']') => {
                        *at += 1;
                        return true;
                    }
                    _ => return false,
                }
            }
        }
        Some(b't') => literal(raw, at, b"true"),
        Some(b'f') => literal(raw, at, b"false"),
        Some(b'n') => literal(raw, at, b"null"),
        Some(b'-' | b'0'..=b'9') => {
            let start = *at;
            let negative = raw[start] == b'-';
            let digits_from = start + usize::from(negative);
            let mut end = digits_from;
            while raw.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            *at = end;
            if end == digits_from || matches!(raw.get(end), Some(b'.' | b'e' | b'E')) {
                return false;
            }
            match plain_u64(&raw[digits_from..end]) {
                None => false,
                Some(n) if negative => n != 0 && n <= 1 << 63,
                Some(_) => true,
            }
        }
        _ => false,
    }
}

#[cfg(feature = "parquet")]
fn literal(raw: &[u8], at: &mut usize, word: &[u8]) -> bool {
    let matches = raw[*at..].starts_with(word);
    *at += word.len();
    matches
}

#[cfg(feature = "parquet")]
/// Passes the string at `*at` when `serde_json` would write its text with the same
/// escapes; whether it has any. `None` otherwise.
fn canonical_string(raw: &[u8], at: &mut usize) -> Option<bool> {
    if raw.get(*at) != Some(&b'"') {
        return None;
    }
    let mut i = *at + 1;
    let mut escaped = false;
    loop {
        match *raw.get(i)? {
            b'"' => {
                *at = i + 1;
                return Some(escaped);
            }
            b'\\' => {
                escaped = true;
                match *raw.get(i + 1)? {
                    b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        // serde_json writes `\u00xx` (lower-case hex) for the control
                        // characters without a short escape, and nothing else.
                        let hex = raw.get(i + 2..i + 6)?;
                        let control = match hex {
                            [b'0', b'0', high @ b'0'..=b'1', low] => {
                                let low = match low {
                                    b'0'..=b'9' => low - b'0',
                                    b'a'..=b'f' => low - b'a' + 10,
                                    _ => return None,
                                };
                                (high - b'0') << 4 | low
                            }
                            _ => return None,
                        };
                        if matches!(control, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            0..0x20 => return None,
            _ => i += 1,
        }
    }
}

/// For the tests of a quick reader: whether `quick` read `line` (`false` when it gave way
/// to serde), asserting that what it read is what `serde_json` reads.
#[cfg(test)]
pub(crate) fn agrees_with_serde<'a, T>(line: &'a str, quick: impl Fn(&'a [u8]) -> Option<T>) -> bool
where
    T: serde::Deserialize<'a> + PartialEq + std::fmt::Debug,
{
    let read = quick(line.as_bytes());
    if let Some(read) = &read {
        assert_eq!(
            Some(read),
            serde_json::from_str::<T>(line).ok().as_ref(),
            "{line}"
        );
    }
    read.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_special_byte_is_found_in_every_position() {
        let is_special = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
        let mut random = mosaic_core::rng::seeded(3);
        for position in 0..8 {
            for byte in 0..=255u8 {
                // Plain bytes before it, anything after it.
                let mut word = *b"abcdefgh";
                word[position] = byte;
                for after in word.iter_mut().skip(position + 1) {
                    *after = rand::Rng::random(&mut random);
                }
                let first = word.iter().position(|b| is_special(*b));
                let flags = special(u64::from_le_bytes(word));
                let found = (flags != 0).then(|| (flags.trailing_zeros() / 8) as usize);
                assert_eq!(found, first, "{word:?}");
            }
        }
    }

    #[test]
    fn strings_end_where_serde_says() {
        for text in [
            "\"\"",
            "\"short\"",
            "\"exactly8\"",
            "\"a longer string past one word, two, three\"",
            "\"esc \\\" aped \\\\ \\n \\u00e9 and more after the escape\"",
            "\"unicode é ü 😀 past a word\"",
        ] {
            let mut at = Cursor::new(text.as_bytes()).unwrap();
            let read = at.text().unwrap();
            assert!(at.at_end(), "{text}");
            assert_eq!(read, serde_json::from_str::<String>(text).unwrap());
        }
        for bad in ["\"open", "\"tab\there\"", "\"bad \\x escape\"", "\"\\u12\""] {
            let mut at = Cursor::new(bad.as_bytes()).unwrap();
            assert!(at.text().is_none(), "{bad}");
        }
    }

    #[cfg(feature = "parquet")]
    /// `is_canonical` says yes only for text serde_json writes the same.
    fn agrees(raw: &str) -> bool {
        let canonical = is_canonical(raw.as_bytes());
        if canonical {
            let value: serde_json::Value = serde_json::from_str(raw).unwrap();
            assert_eq!(value.to_string(), raw);
        }
        canonical
    }

    #[cfg(feature = "parquet")]
    #[test]
    fn canonical_text_is_what_serde_writes() {
        use serde_json::json;
        let values = [
            json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4}, "parse_ok": true,
                   "message": "line 1\nline \"2\"\t\u{1}\u{1f}\u{7f} é 😀 / \\",
                   "list": [1, -2, null, false, "x", [], {}], "big": u64::MAX,
                   "small": i64::MIN}),
            json!([]),
            json!("text"),
            json!(0),
            json!(-1),
            json!(null),
        ];
        for value in &values {
            let raw = value.to_string();
            assert!(agrees(&raw), "{raw}");
        }
        // Text serde_json would write otherwise: refused.
        for raw in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a": 1}"#,
            r#"[1, 2]"#,
            r#"{"a\u0062":1}"#,
            r#""\/""#,
            r#""\u0041""#,
            r#""\u000a""#,
            r#""\u001F""#,
            "0.5",
            "1e3",
            "-0",
            "18446744073709551616",
            "-9223372036854775809",
            "1.0",
        ] {
            assert!(!agrees(raw), "{raw}");
        }
        assert!(agrees(r#""\u001f\u0000\b\f""#));
        assert!(agrees("-9223372036854775808"));
    }
}
