//! The `rl` decider kind: an agent acting with a trained checkpoint.
//!
//! ```toml
//! [operators.agents.green_0]
//! kind = "rl"
//! checkpoint = "policies/soccer-ippo"   # or the .json / .safetensors file
//! greedy = false                         # true: always the most likely legal action
//! ```

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
}

impl RlSettings {
    /// Reads a slot's settings.
    pub fn parse(settings: &Settings) -> std::result::Result<Self, SpecError> {
        parse_settings(settings)
    }
}

/// Loads the checkpoint at `path` and checks it against `spec`.
pub fn load_for(path: &Path, spec: &EnvSpec) -> Result<Checkpoint> {
    let checkpoint = Checkpoint::load(path)?;
    checkpoint.manifest.check(spec, path)?;
    Ok(checkpoint)
}

/// The policy of an `rl` slot with `settings` in an environment described by `spec`;
/// errors are configuration errors at `checkpoint`.
pub fn policy(settings: &Settings, spec: &EnvSpec) -> std::result::Result<RlPolicy, SpecError> {
    let settings = RlSettings::parse(settings)?;
    let checkpoint = load_for(&settings.checkpoint, spec).map_err(spec_error)?;
    let inference = Inference::new(&checkpoint.net).map_err(spec_error)?;
    Ok(RlPolicy::new(Arc::new(inference), settings.greedy))
}

fn spec_error(error: RlError) -> SpecError {
    match error {
        RlError::Spec(e) => e,
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
