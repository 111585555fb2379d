//! The opening of a connection.
//!
//! The worker speaks first. A `mosaic/1` worker sends `hello`; the orchestrator answers
//! `welcome` or `reject`. Since `mosaic/1.2` an orchestrator connecting to a listening worker
//! that asks for a token speaks first instead, with `auth`; the worker answers with its
//! `hello` (announcing `auth:token`) or, when the token is missing or wrong, refuses with a
//! first-line `reject` and closes. A MOSAIC (Python platform) worker instead announces itself with an
//! unprompted `{"type":"init",...}` line and gets no answer: the orchestrator switches to
//! MOSAIC's command set ([`crate::mosaic`]).
//!
//! ```
//! use mosaic_protocols::handshake::{Greeting, Policy};
//! use mosaic_protocols::message::WorkerKind;
//! let line = br#"{"type":"hello","protocol":"mosaic/2","worker_kind":"policy"}"#;
//! let Greeting::Hello(hello) = Greeting::parse(line).unwrap() else { unreachable!() };
//! let reject = Policy::new(WorkerKind::Policy).check(&hello).unwrap_err();
//! assert!(reject.reason.contains("mosaic/2") && reject.reason.contains("mosaic/1"));
//! ```

use crate::error::{DecodeError, excerpt};
use crate::message::{
    Auth, FrameEncoding, Hello, Message, Reject, Token, Welcome, WorkerKind, capability,
};
use crate::version::{CURRENT, PROTOCOL, Version};

/// The first line a worker sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Greeting {
    /// A `mosaic/1` worker.
    Hello(Hello),
    /// A MOSAIC worker's `init` line (kept as sent, for the logs).
    Mosaic(serde_json::Map<String, serde_json::Value>),
    /// A listening worker refused the orchestrator (its token was missing or wrong).
    Refused(Reject),
}

/// The first line was neither `hello` nor MOSAIC's `init`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GreetingError {
    /// Not a message at all.
    #[error("first line is not a message: {0}")]
    Malformed(#[from] DecodeError),
    /// A message, but not one that opens a connection.
    #[error("worker opened with `{kind}` instead of `hello`: {excerpt}")]
    Unexpected {
        /// The type it sent.
        kind: String,
        /// The start of the line.
        excerpt: String,
    },
}

impl Greeting {
    /// Classifies the worker's first line.
    pub fn parse(line: &[u8]) -> Result<Greeting, GreetingError> {
        if let Some(init) = crate::mosaic::parse_init(line) {
            return Ok(Greeting::Mosaic(init));
        }
        match Message::decode(line)? {
            Message::Hello(hello) => Ok(Greeting::Hello(hello)),
            Message::Reject(reject) => Ok(Greeting::Refused(reject)),
            other => Err(GreetingError::Unexpected {
                kind: other.kind().to_owned(),
                excerpt: excerpt(line),
            }),
        }
    }
}

/// What the orchestrator accepts.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The kind of worker expected.
    pub kind: WorkerKind,
    /// Sent in `welcome.heartbeat_ms`.
    pub heartbeat_ms: u64,
    /// Sent in `welcome.frames` (if the worker can encode it, else the other one).
    pub frames: FrameEncoding,
    /// Sent in `auth` before the worker's `hello`; the worker must then announce
    /// `auth:token`.
    pub token: Option<Token>,
}

impl Policy {
    /// Expects a worker of `kind`; 1 s heartbeats; PNG frames.
    pub fn new(kind: WorkerKind) -> Self {
        Self {
            kind,
            heartbeat_ms: 1_000,
            frames: FrameEncoding::default(),
            token: None,
        }
    }

    /// The `auth` line to send before reading the worker's `hello`, when there is a token.
    pub fn auth(&self) -> Option<Message> {
        self.token.as_ref().map(|token| {
            Message::Auth(Auth {
                protocol: PROTOCOL.to_owned(),
                token: token.clone(),
            })
        })
    }

    /// Checks a `hello`; the error is the `reject` to send.
    pub fn check(&self, hello: &Hello) -> Result<(), Reject> {
        let version = Version::parse(&hello.protocol).map_err(|e| Reject {
            reason: format!("{e}; this orchestrator speaks {PROTOCOL}"),
        })?;
        if !version.compatible_with(CURRENT) {
            return Err(Reject {
                reason: format!(
                    "protocol {} (major version {}) is not supported: this orchestrator speaks \
                     {PROTOCOL} (major version {})",
                    hello.protocol, version.major, CURRENT.major
                ),
            });
        }
        if hello.worker_kind != self.kind {
            return Err(Reject {
                reason: format!(
                    "a {} worker was expected here, this one says it is a {} worker",
                    self.kind.name(),
                    hello.worker_kind.name()
                ),
            });
        }
        // A worker that never checked the token is not protected by it: say so rather than
        // carry on as if it were.
        if self.token.is_some() && !hello.has(capability::AUTH_TOKEN) {
            return Err(Reject {
                reason: format!(
                    "a token was sent but the worker did not check it (its hello does not \
                     announce `{}`): start the worker with the token (MOSAIC_WORKER_TOKEN or \
                     --token-file), or remove token_env/token_file from the settings",
                    capability::AUTH_TOKEN
                ),
            });
        }
        Ok(())
    }

    /// The `welcome` for an accepted worker.
    pub fn welcome(&self, hello: &Hello, session: impl Into<String>) -> Welcome {
        use crate::message::capability::{FRAMES_PNG, FRAMES_RGB};
        let can = |encoding: FrameEncoding| match encoding {
            FrameEncoding::Rgb => hello.has(FRAMES_RGB),
            FrameEncoding::Png => hello.has(FRAMES_PNG),
        };
        let other = match self.frames {
            FrameEncoding::Rgb => FrameEncoding::Png,
            FrameEncoding::Png => FrameEncoding::Rgb,
        };
        let frames = if !can(self.frames) && can(other) {
            other
        } else {
            self.frames
        };
        Welcome {
            protocol: PROTOCOL.to_owned(),
            session: session.into(),
            heartbeat_ms: self.heartbeat_ms,
            frames,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(protocol: &str, kind: WorkerKind, caps: &[&str]) -> Hello {
        Hello {
            protocol: protocol.into(),
            worker_kind: kind,
            capabilities: caps.iter().map(|c| c.to_string()).collect(),
            schema: serde_json::Value::Null,
            name: None,
        }
    }

    #[test]
    fn greetings_are_classified() {
        let line = br#"{"type":"hello","protocol":"mosaic/1","worker_kind":"env"}"#;
        assert!(matches!(Greeting::parse(line), Ok(Greeting::Hello(_))));
        let line = br#"{"type":"init","run_id":"r","worker":"random_worker"}"#;
        let Ok(Greeting::Mosaic(init)) = Greeting::parse(line) else {
            panic!("not detected as MOSAIC")
        };
        assert_eq!(init["worker"], "random_worker");
        let line = br#"{"type":"pong","id":1}"#;
        assert!(matches!(
            Greeting::parse(line),
            Err(GreetingError::Unexpected { kind, .. }) if kind == "pong"
        ));
        assert!(matches!(
            Greeting::parse(b"hello there"),
            Err(GreetingError::Malformed(DecodeError::NotJson { .. }))
        ));
        assert!(matches!(
            Greeting::parse(b"[1]"),
            Err(GreetingError::Malformed(DecodeError::NotAnObject { .. }))
        ));
    }

    #[test]
    fn versions_and_kinds_are_checked() {
        let policy = Policy::new(WorkerKind::Env);
        assert!(
            policy
                .check(&hello("mosaic/1", WorkerKind::Env, &[]))
                .is_ok()
        );
        assert!(
            policy
                .check(&hello("mosaic/1.7", WorkerKind::Env, &[]))
                .is_ok()
        );
        let reason = policy
            .check(&hello("mosaic/2.1", WorkerKind::Env, &[]))
            .unwrap_err()
            .reason;
        assert!(
            reason.contains("mosaic/2.1") && reason.contains("mosaic/1"),
            "{reason}"
        );
        let reason = policy
            .check(&hello("MOSAIC/1.0", WorkerKind::Env, &[]))
            .unwrap_err()
            .reason;
        assert!(
            reason.contains("MOSAIC/1.0") && reason.contains("mosaic/1"),
            "{reason}"
        );
        let reason = policy
            .check(&hello("mosaic/1", WorkerKind::Policy, &[]))
            .unwrap_err()
            .reason;
        assert!(reason.contains("env worker was expected"), "{reason}");
    }

    #[test]
    fn a_token_is_sent_first_and_must_be_checked() {
        let mut policy = Policy::new(WorkerKind::Env);
        assert_eq!(policy.auth(), None);
        policy.token = Some(Token::new("s3cret"));
        let auth = policy.auth().unwrap().encode();
        let auth = String::from_utf8(auth).unwrap();
        assert!(
            auth.starts_with(r#"{"type":"auth","protocol":"mosaic/1.3","token":"s3cret"}"#),
            "{auth}"
        );
        assert!(!format!("{policy:?}").contains("s3cret"));
        let reason = policy
            .check(&hello("mosaic/1.1", WorkerKind::Env, &[]))
            .unwrap_err()
            .reason;
        assert!(reason.contains("did not check it"), "{reason}");
        assert!(!reason.contains("s3cret"));
        assert!(
            policy
                .check(&hello("mosaic/1.2", WorkerKind::Env, &["auth:token"]))
                .is_ok()
        );
        let line = br#"{"type":"reject","reason":"authentication failed"}"#;
        assert!(matches!(
            Greeting::parse(line),
            Ok(Greeting::Refused(Reject { reason })) if reason == "authentication failed"
        ));
    }

    #[test]
    fn welcome_picks_an_encoding_the_worker_has() {
        let mut policy = Policy::new(WorkerKind::Env);
        policy.frames = FrameEncoding::Png;
        let only_rgb = hello("mosaic/1", WorkerKind::Env, &["frames:rgb"]);
        assert_eq!(policy.welcome(&only_rgb, "s").frames, FrameEncoding::Rgb);
        let both = hello("mosaic/1", WorkerKind::Env, &["frames:rgb", "frames:png"]);
        let welcome = policy.welcome(&both, "s1");
        assert_eq!(welcome.frames, FrameEncoding::Png);
        assert_eq!(welcome.session, "s1");
        assert_eq!(welcome.protocol, PROTOCOL);
    }
}
