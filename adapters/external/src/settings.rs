//! [`WorkerSettings`]: how to run one worker process and talk to it. A `worker` policy slot
//! takes them as they are; an external environment composes its own settings around them
//! ([`crate::env::ExternalEnvSettings`]). Their [`defaults`] and help lines live here too, so
//! the two kinds of worker always agree.

use crate::WorkerError;
use crate::link::LinkOptions;
use crate::process::WorkerCommand;
use mosaic_protocols::WorkerKind;
use mosaic_protocols::message::{FrameEncoding, Token};
use mosaic_protocols::transport::Endpoint;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Defaults of every worker setting.
pub mod defaults {
    /// Deadline of one request and of the first line, in milliseconds.
    pub fn timeout_ms() -> u64 {
        60_000
    }

    /// Heartbeat interval asked of a worker, in milliseconds.
    pub fn heartbeat_ms() -> u64 {
        1_000
    }

    /// How long a heartbeating worker may stay silent while a request is outstanding
    /// before it is declared hung, in milliseconds.
    pub fn heartbeat_timeout_ms() -> u64 {
        5_000
    }

    /// Longest accepted line, in bytes.
    pub fn max_frame() -> usize {
        mosaic_protocols::DEFAULT_MAX_FRAME
    }

    /// SIGTERM-to-SIGKILL grace period on stop, in milliseconds.
    pub fn grace_ms() -> u64 {
        2_000
    }
}

/// Help lines of the process settings, `env` and `cwd` (they follow `command`).
pub const PROCESS_HELP: [&str; 2] = [
    "env = {}: extra environment variables of the worker process",
    "cwd = <inherited>: working directory of the worker process",
];

/// Help lines of the link settings after `timeout_ms` (whose line says what a request is
/// for each kind of worker).
pub const LINK_HELP: [&str; 6] = [
    "start_timeout_ms = 60000: deadline for the worker's first line",
    "heartbeat_ms = 1000: heartbeat interval asked of the worker",
    "heartbeat_timeout_ms = 5000: silence (no reply, no heartbeat) after which a busy heartbeating worker is hung",
    "frames = \"png\": frame encoding asked of the worker, png or rgb",
    "max_frame_bytes = 16777216: longest accepted line",
    "grace_ms = 2000: SIGTERM-to-SIGKILL grace period on stop",
];

/// Help line of `connect`, the alternative to `command`.
pub const CONNECT_HELP: &str =
    "connect = \"\": tcp://host:port or unix:///path of a listening worker (instead of command)";

/// Help lines of the token settings of a listening worker (with `connect`).
pub const TOKEN_HELP: [&str; 2] = [
    "token_env = \"\": environment variable holding the token of a listening worker (with connect)",
    "token_file = \"\": file holding the token of a listening worker (with connect)",
];

/// The token of a listening worker cannot be had. No variant shows the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Both sources were named.
    #[error("set `token_env` or `token_file`, not both")]
    Both,
    /// The variable is not set (or not Unicode).
    #[error("token_env = \"{0}\": the environment variable is not set")]
    Unset(String),
    /// The file cannot be read.
    #[error("token_file = \"{path}\": cannot read it: {error}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        error: String,
    },
    /// The source holds nothing but whitespace.
    #[error("{0}: the token is empty")]
    Empty(String),
    /// A token was named for a worker mosaic starts itself, which needs none.
    #[error(
        "token_env and token_file are for a listening worker reached with `connect`; a worker started by mosaic needs no token"
    )]
    NotListening,
}

/// The lines of `parts` one after the other, for a kind's settings help built from the
/// shared lines above; a wrong `N` fails to compile.
///
/// ```
/// use mosaic_external::settings::{PROCESS_HELP, help_lines};
/// const HELP: [&str; 3] = help_lines(&[&["command = [...]: the argument vector"], &PROCESS_HELP]);
/// assert_eq!(HELP[1], PROCESS_HELP[0]);
/// ```
pub const fn help_lines<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut lines = [""; N];
    let mut filled = 0;
    let mut part = 0;
    while part < parts.len() {
        let mut line = 0;
        while line < parts[part].len() {
            lines[filled] = parts[part][line];
            filled += 1;
            line += 1;
        }
        part += 1;
    }
    assert!(filled == N, "help_lines: N is not the number of lines");
    lines
}

/// How to run one worker process and talk to it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSettings {
    /// The worker's argument vector (an environment may be served otherwise: a socket, or
    /// a front end of the `mosaic_worker` package).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Address of a listening worker (`tcp://host:port` or `unix:///path`), instead of
    /// `command`.
    #[serde(default)]
    pub connect: Option<String>,
    /// Extra environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Deadline of one request, ms.
    #[serde(default = "defaults::timeout_ms")]
    pub timeout_ms: u64,
    /// Deadline for the worker's first line, ms.
    #[serde(default = "defaults::timeout_ms")]
    pub start_timeout_ms: u64,
    /// Heartbeat interval asked of the worker, ms.
    #[serde(default = "defaults::heartbeat_ms")]
    pub heartbeat_ms: u64,
    /// Silence after which a heartbeating worker with a request outstanding is hung, ms.
    #[serde(default = "defaults::heartbeat_timeout_ms")]
    pub heartbeat_timeout_ms: u64,
    /// Frame encoding asked of the worker.
    #[serde(default)]
    pub frames: FrameEncoding,
    /// Longest accepted line.
    #[serde(default = "defaults::max_frame")]
    pub max_frame_bytes: usize,
    /// Grace period on stop, ms.
    #[serde(default = "defaults::grace_ms")]
    pub grace_ms: u64,
    /// The environment variable holding a listening worker's token (the name, never the
    /// token: experiment files are recorded).
    #[serde(default)]
    pub token_env: Option<String>,
    /// The file holding a listening worker's token.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            command: None,
            connect: None,
            env: BTreeMap::new(),
            cwd: None,
            timeout_ms: defaults::timeout_ms(),
            start_timeout_ms: defaults::timeout_ms(),
            heartbeat_ms: defaults::heartbeat_ms(),
            heartbeat_timeout_ms: defaults::heartbeat_timeout_ms(),
            frames: FrameEncoding::default(),
            max_frame_bytes: defaults::max_frame(),
            grace_ms: defaults::grace_ms(),
            token_env: None,
            token_file: None,
        }
    }
}

/// How a link to a worker is opened ([`WorkerSettings::launch`]).
#[derive(Debug)]
pub enum Launch {
    /// Start the worker process.
    Spawn {
        /// The process.
        command: WorkerCommand,
        /// The link's options.
        options: LinkOptions,
    },
    /// Connect to a worker listening on a socket.
    Connect {
        /// Where it listens.
        endpoint: Endpoint,
        /// The link's options, with the token when one is set.
        options: LinkOptions,
    },
}

impl WorkerSettings {
    /// Settings running `command` with every default.
    pub fn new(command: Vec<String>) -> Self {
        Self {
            command: Some(command),
            ..Self::default()
        }
    }

    /// How to reach the worker: start its own `command`, or connect to the listening worker
    /// at `connect` (with the token, read now); a [`WorkerError::Config`] unless exactly one
    /// is set.
    pub fn launch(&self, kind: WorkerKind) -> Result<Launch, WorkerError> {
        match (&self.command, &self.connect) {
            (Some(_), Some(_)) => Err(WorkerError::Config(
                "set `command` or `connect`, not both".into(),
            )),
            (None, None) => Err(WorkerError::Config(
                "`command = [...]` or `connect = \"tcp://host:port\"` is required".into(),
            )),
            (Some(_), None) => Ok(Launch::Spawn {
                command: self.worker_command()?,
                options: self.link_options(kind)?,
            }),
            (None, Some(address)) => Ok(Launch::Connect {
                endpoint: Endpoint::parse(address)
                    .map_err(|e| WorkerError::Config(e.to_string()))?,
                options: self.connect_options(kind)?,
            }),
        }
    }

    /// The worker's own `command`, with these settings' environment and working directory;
    /// a [`WorkerError::Config`] when there is none.
    pub fn worker_command(&self) -> Result<WorkerCommand, WorkerError> {
        let argv = self
            .command
            .as_deref()
            .ok_or_else(|| WorkerError::Config("`command = [...]` is required".into()))?;
        self.worker_command_for(argv)
    }

    /// `argv` run with these settings' environment and working directory.
    pub fn worker_command_for(&self, argv: &[String]) -> Result<WorkerCommand, WorkerError> {
        if self.token_env.is_some() || self.token_file.is_some() {
            return Err(TokenError::NotListening.into());
        }
        let mut command = WorkerCommand::from_argv(argv)?;
        command.env = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        command.cwd = self.cwd.clone();
        Ok(command)
    }

    /// How to open the link to a worker of `kind`; an error when the heartbeat settings
    /// cannot work.
    pub fn link_options(&self, kind: WorkerKind) -> Result<LinkOptions, WorkerError> {
        let mut options = LinkOptions::new(kind);
        options.set_heartbeat(self.heartbeat_ms, self.heartbeat_timeout_ms)?;
        options.policy.frames = self.frames;
        options.max_frame = self.max_frame_bytes;
        options.handshake_timeout = Duration::from_millis(self.start_timeout_ms);
        options.grace = Duration::from_millis(self.grace_ms);
        Ok(options)
    }

    /// How to open the link to a listening worker of `kind`: [`Self::link_options`] with the
    /// token named by `token_env` or `token_file`, read now.
    pub fn connect_options(&self, kind: WorkerKind) -> Result<LinkOptions, WorkerError> {
        let mut options = self.link_options(kind)?;
        options.policy.token = self.token()?;
        Ok(options)
    }

    /// The token named by `token_env` or `token_file` (surrounding whitespace, such as a
    /// file's final newline, removed); `None` when neither is set.
    pub fn token(&self) -> Result<Option<Token>, TokenError> {
        let (secret, source) = match (&self.token_env, &self.token_file) {
            (Some(_), Some(_)) => return Err(TokenError::Both),
            (None, None) => return Ok(None),
            (Some(name), None) => (
                std::env::var(name).map_err(|_| TokenError::Unset(name.clone()))?,
                format!("token_env = \"{name}\""),
            ),
            (None, Some(path)) => (
                std::fs::read_to_string(path).map_err(|e| TokenError::Unreadable {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?,
                format!("token_file = \"{}\"", path.display()),
            ),
        };
        match secret.trim() {
            "" => Err(TokenError::Empty(source)),
            token => Ok(Some(Token::new(token))),
        }
    }

    /// The deadline of one request.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The grace period on stop.
    pub fn grace(&self) -> Duration {
        Duration::from_millis(self.grace_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::Settings;
    use mosaic_core::experiment::parse_settings;

    #[test]
    fn settings_default_and_reject_typos() {
        let s = WorkerSettings::new(vec!["w".into()]);
        let mut only_command = Settings::new();
        only_command.insert("command".into(), serde_json::json!(["w"]));
        let parsed: WorkerSettings = parse_settings(&only_command).unwrap();
        assert_eq!(format!("{s:?}"), format!("{parsed:?}"));
        assert_eq!(s.timeout_ms, 60_000);
        assert_eq!(s.max_frame_bytes, 16 << 20);
        let mut bad = only_command.clone();
        bad.insert("timeout".into(), 5.into());
        assert!(
            parse_settings::<WorkerSettings>(&bad)
                .unwrap_err()
                .message
                .contains("timeout")
        );
    }

    #[test]
    fn a_worker_needs_a_command() {
        let none: WorkerSettings = parse_settings(&Settings::new()).unwrap();
        let err = none.worker_command().unwrap_err();
        assert!(
            matches!(&err, WorkerError::Config(why) if why.contains("command")),
            "{err}"
        );
        assert!(WorkerSettings::new(Vec::new()).worker_command().is_err());
        let mut s = WorkerSettings::new(vec!["w".into(), "a".into()]);
        s.env.insert("K".into(), "v".into());
        s.cwd = Some("/tmp".into());
        let command = s.worker_command().unwrap();
        assert_eq!(
            (command.program.as_str(), command.args.as_slice()),
            ("w", &["a".to_owned()][..])
        );
        assert_eq!(command.env, [("K".to_owned(), "v".to_owned())]);
        assert_eq!(command.cwd, s.cwd);
    }

    #[test]
    fn link_options_follow_the_settings() {
        let s = WorkerSettings {
            heartbeat_ms: 200,
            heartbeat_timeout_ms: 400,
            start_timeout_ms: 7,
            grace_ms: 9,
            max_frame_bytes: 1024,
            frames: FrameEncoding::Rgb,
            ..WorkerSettings::default()
        };
        let options = s.link_options(WorkerKind::Env).unwrap();
        assert_eq!(options.heartbeat_timeout, Duration::from_millis(400));
        assert_eq!(options.policy.heartbeat_ms, 200);
        assert_eq!(options.handshake_timeout, Duration::from_millis(7));
        assert_eq!(options.grace, Duration::from_millis(9));
        assert_eq!(options.max_frame, 1024);
        assert_eq!(options.policy.frames, FrameEncoding::Rgb);
        let hung_too_soon = WorkerSettings {
            heartbeat_timeout_ms: 1500,
            ..WorkerSettings::default()
        };
        assert!(hung_too_soon.link_options(WorkerKind::Policy).is_err());
    }

    #[test]
    fn tokens_come_from_a_variable_or_a_file_and_never_show() {
        let dir = std::env::temp_dir().join(format!("mosaic-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret-file\n").unwrap();
        let from_file = WorkerSettings {
            token_file: Some(file.clone()),
            ..WorkerSettings::default()
        };
        let options = from_file.connect_options(WorkerKind::Env).unwrap();
        let token = options.policy.token.as_ref().unwrap();
        assert_eq!(token.expose(), "s3cret-file");
        assert!(!format!("{options:?}").contains("s3cret"));
        assert!(
            from_file
                .link_options(WorkerKind::Env)
                .unwrap()
                .policy
                .token
                .is_none()
        );
        let spawned = from_file.worker_command_for(&["w".into()]).unwrap_err();
        assert_eq!(spawned, WorkerError::Token(TokenError::NotListening));

        // A variable name no other test sets; read, not written, by the code under test.
        let unset = WorkerSettings {
            token_env: Some("MOSAIC_TEST_TOKEN_THAT_IS_NEVER_SET".into()),
            ..WorkerSettings::default()
        };
        assert_eq!(
            unset.token(),
            Err(TokenError::Unset(
                "MOSAIC_TEST_TOKEN_THAT_IS_NEVER_SET".into()
            ))
        );
        let from_env = WorkerSettings {
            token_env: Some("PATH".into()),
            ..WorkerSettings::default()
        };
        assert!(from_env.token().unwrap().is_some());
        let both = WorkerSettings {
            token_file: Some(file.clone()),
            ..from_env
        };
        assert_eq!(both.token(), Err(TokenError::Both));
        std::fs::write(&file, " \n").unwrap();
        assert!(matches!(from_file.token(), Err(TokenError::Empty(s)) if s.contains("token_file")));
        std::fs::remove_dir_all(&dir).unwrap();
        let missing = from_file.token().unwrap_err().to_string();
        assert!(missing.starts_with("token_file = "), "{missing}");
    }
}
