//! The `rl` decider kind: an agent acting with a trained checkpoint.
//!
//! ```toml
//! [operators.agents.green_0]
//! kind = "rl"
//! checkpoint = "policies/soccer-ippo"   # or the .json / .safetensors file
//! greedy = false                         # true: always the most likely legal action
//! transfer = false                       # true: trained in another environment
//! ```
//!
//! A checkpoint acts only in the environment it was trained in, unless `transfer = true`:
//! then any environment whose observation shape and action labels agree with the
//! checkpoint's will do — MOSAIC's solo-to-team transfer, e.g. a policy trained alone in
//! `soccer-1v0` playing one green slot of `soccer-2v2` (both with
//! `observation = "reference"`, whose shape does not depend on the team sizes).

use crate::checkpoint::Checkpoint;
use crate::error::{Result, RlError};
use crate::policy::{Inference, RlPolicy};
use mosaic_actors::decider::{DeciderHandle, DeciderKind, DeciderRegistry};
use mosaic_core::experiment::{SpecError, parse_settings};
use mosaic_core::{EnvSpec, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Settings of an `rl` slot.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RlSettings {
    /// The checkpoint (stem, manifest or weights file).
    pub checkpoint: PathBuf,
    /// Always take the most likely legal action instead of drawing one.
    #[serde(default)]
    pub greedy: bool,
    /// Accept a checkpoint trained in another environment whose observation shape and
    /// action labels agree with this one's.
    #[serde(default)]
    pub transfer: bool,
}

impl RlSettings {
    /// Reads a slot's settings.
    pub fn parse(settings: &Settings) -> std::result::Result<Self, SpecError> {
        parse_settings(settings)
    }
}

/// Loads the checkpoint at `path` and checks it against `spec`: trained in that very
/// environment, or, with `transfer`, in any other with the same observation shape and
/// actions.
pub fn load_for(path: &Path, spec: &EnvSpec, transfer: bool) -> Result<Checkpoint> {
    let checkpoint = Checkpoint::load(path)?;
    if transfer {
        checkpoint.manifest.check_transfer(spec, path)?;
    } else {
        checkpoint.manifest.check(spec, path)?;
    }
    Ok(checkpoint)
}

/// The policy of an `rl` slot with `settings` in an environment described by `spec`;
/// errors are configuration errors at `checkpoint`.
pub fn policy(settings: &Settings, spec: &EnvSpec) -> std::result::Result<RlPolicy, SpecError> {
    let settings = RlSettings::parse(settings)?;
    let checkpoint = load_for(&settings.checkpoint, spec, settings.transfer).map_err(spec_error)?;
    let inference = Inference::new(&checkpoint.net).map_err(spec_error)?;
    Ok(RlPolicy::new(Arc::new(inference), settings.greedy))
}

fn spec_error(error: RlError) -> SpecError {
    match error {
        RlError::Spec(e) => e,
        RlError::Mismatch { field: "env", .. } => SpecError::new(
            "checkpoint",
            format!(
                "{error} (with transfer = true it may act in another environment whose \
                 observation shape and actions agree)"
            ),
        ),
        other => SpecError::new("checkpoint", other.to_string()),
    }
}

/// The `rl` kind.
pub fn kind() -> DeciderKind {
    DeciderKind {
        name: "rl",
        summary: "a trained policy from a checkpoint (safetensors + JSON manifest), seeded per agent",
        settings: &[
            "checkpoint = <required>: the checkpoint (stem, .json manifest or .safetensors weights)",
            "greedy = false: always the most likely legal action instead of a seeded draw",
            "transfer = false: accept a checkpoint trained in another environment with the same observation shape and actions",
        ],
        spawn: Arc::new(|cx| {
            let policy = policy(&cx.slot.settings, cx.spec)?;
            Ok(DeciderHandle::start_policy("rl", Box::new(policy)))
        }),
    }
}

/// Adds the `rl` kind to `registry`.
pub fn register(registry: &mut DeciderRegistry) {
    registry.register(kind());
}
