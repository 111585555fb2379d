//! Wire formats of mosaic: the worker protocol `mosaic/1`.
//!
//! Workers are processes (any language) that provide an environment or a policy. They speak
//! JSON lines on stdin/stdout (stderr is their log), or the same lines over a TCP or Unix
//! socket. The full specification is `docs/protocol.md`; this crate is its reference
//! implementation: pure encoding, decoding and validation, plus blocking framing over any
//! [`std::io::Read`]/[`std::io::Write`].
//!
//! - [`message`]: every message type, tagged by `type`, with request ids.
//! - [`codec`]: line framing with a maximum frame length (default 16 MiB).
//! - [`handshake`]: `hello` / `welcome` / `reject` and version checks.
//! - [`wire`]: observations and frames (base64 PNG or raw RGB, never nested lists).
//! - [`mosaic`]: driving MOSAIC's own Python workers unmodified.
//! - [`transport`]: TCP and Unix socket endpoints.
//!
//! ```
//! use mosaic_protocols::{Message, message::Ack};
//! let line = Message::Ping(Ack { id: 1 }).encode();
//! assert_eq!(line, b"{\"type\":\"ping\",\"id\":1}\n");
//! ```

pub mod codec;
pub mod error;
pub mod handshake;
pub mod message;
pub mod mosaic;
pub mod transport;
pub mod version;
pub mod wire;

pub use codec::{DEFAULT_MAX_FRAME, FrameReader, FrameWriter, LineDecoder};
pub use error::{DecodeError, FramingError, ImageError};
pub use message::{Message, WorkerKind};
pub use version::PROTOCOL;
