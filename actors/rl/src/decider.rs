//! The `rl` decider kind: an agent acting with a trained checkpoint; and, with feature
//! `onnx`, the `onnx` kind: an agent acting with a policy exported to ONNX elsewhere
//! (the `onnx` module).
//!
//! ```toml
//! [operators.agents.green_0]
//! kind = "rl"
//! checkpoint = "policies/soccer-ippo"   # or the .json / .safetensors file
//! greedy = false                         # true: always the most likely legal action
//! transfer = false                       # true: trained in another environment
//!
//! [operators.agents.blue_0]
//! kind = "onnx"
//! model = "policies/cleanrl-ppo.onnx"   # or its .json manifest, or their stem
//! ```
//!
//! An `rl` checkpoint that names an `.onnx` file, or whose manifest is an ONNX policy's,
//! is loaded as the `onnx` kind loads it. Both act through [`RlPolicy`]: the same masks,
//! the same seeded draws, the same saved state.
//!
//! A checkpoint acts only in the environment it was trained in, unless `transfer = true`:
//! then any environment whose observation shape and action labels agree with the
//! checkpoint's will do — MOSAIC's solo-to-team transfer, e.g. a policy trained alone in
//! `soccer-1v0` playing one green slot of `soccer-2v2` (both with
//! `observation = "reference"`, whose shape does not depend on the team sizes).

use crate::batch::SessionNet;
use crate::checkpoint::{self, Checkpoint, ONNX_MANIFEST_SCHEMA};
use crate::error::{Result, RlError};
use crate::policy::{Inference, PolicyNet, RlPolicy};
use mosaic_actors::decider::{DeciderKind, DeciderRegistry, SpawnContext};
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

/// Whether the checkpoint named by `path` is an ONNX policy: an `.onnx` file, or a
/// manifest with the ONNX policy schema.
pub fn is_onnx(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "onnx") {
        return true;
    }
    let (json, _) = checkpoint::files(path);
    json.is_file()
        && checkpoint::schema_of(&json).is_ok_and(|s| s.as_deref() == Some(ONNX_MANIFEST_SCHEMA))
}

/// The network of the checkpoint or ONNX policy named by `path`, checked against `spec`
/// (with `transfer`, made for another environment whose observations and actions agree).
pub fn load_net(path: &Path, spec: &EnvSpec, transfer: bool) -> Result<Arc<dyn PolicyNet>> {
    if is_onnx(path) {
        return load_onnx(path, spec, transfer);
    }
    let checkpoint = load_for(path, spec, transfer)?;
    Ok(Arc::new(Inference::new(&checkpoint.net)?))
}

#[cfg(feature = "onnx")]
fn load_onnx(path: &Path, spec: &EnvSpec, transfer: bool) -> Result<Arc<dyn PolicyNet>> {
    Ok(Arc::new(crate::onnx::OnnxPolicy::load_for(
        path, spec, transfer,
    )?))
}

#[cfg(not(feature = "onnx"))]
fn load_onnx(path: &Path, _: &EnvSpec, _: bool) -> Result<Arc<dyn PolicyNet>> {
    Err(RlError::Corrupt {
        path: path.to_owned(),
        problem: "an ONNX policy, and this build has no ONNX support (cargo feature `onnx`)".into(),
    })
}

/// The policy of an `rl` slot with `settings` in an environment described by `spec`;
/// errors are configuration errors at `checkpoint`.
pub fn policy(settings: &Settings, spec: &EnvSpec) -> std::result::Result<RlPolicy, SpecError> {
    let settings = RlSettings::parse(settings)?;
    let net = load_net(&settings.checkpoint, spec, settings.transfer).map_err(spec_error)?;
    Ok(RlPolicy::new(net, settings.greedy))
}

/// The network of a slot naming `path`: loaded by `load` for the session's first slot
/// naming it (with the same `transfer`), shared by the others, which then decide in one
/// forward pass where that changes no decision ([`crate::batch`]).
fn session_net(
    cx: &SpawnContext<'_>,
    path: &Path,
    transfer: bool,
    load: impl FnOnce() -> std::result::Result<Arc<dyn PolicyNet>, SpecError>,
) -> std::result::Result<SessionNet, SpecError> {
    let key = format!("policy-net:{transfer}:{}", path.display());
    SessionNet::get_or_load(&cx.session.shared, &key, load)
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
            "checkpoint = <required>: the checkpoint (stem, .json manifest or .safetensors weights), or an ONNX policy (.onnx)",
            "greedy = false: always the most likely legal action instead of a seeded draw",
            "transfer = false: accept a checkpoint trained in another environment with the same observation shape and actions",
        ],
        spawn: Arc::new(|cx| {
            let settings = RlSettings::parse(&cx.slot.settings)?;
            let net = session_net(cx, &settings.checkpoint, settings.transfer, || {
                load_net(&settings.checkpoint, cx.spec, settings.transfer).map_err(spec_error)
            })?;
            Ok(net.start_decider("rl", settings.greedy))
        }),
    }
}

/// Settings of an `onnx` slot.
#[cfg(feature = "onnx")]
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxSettings {
    /// The policy (`.onnx` model, `.json` manifest or their stem).
    pub model: PathBuf,
    /// Always take the most likely legal action instead of drawing one.
    #[serde(default)]
    pub greedy: bool,
    /// Accept a policy made for another environment whose observation shape and action
    /// labels agree with this one's.
    #[serde(default)]
    pub transfer: bool,
}

/// The policy of an `onnx` slot with `settings` in an environment described by `spec`;
/// errors are configuration errors at `model`.
#[cfg(feature = "onnx")]
pub fn onnx_policy(
    settings: &Settings,
    spec: &EnvSpec,
) -> std::result::Result<RlPolicy, SpecError> {
    let settings: OnnxSettings = parse_settings(settings)?;
    let net = load_onnx(&settings.model, spec, settings.transfer).map_err(onnx_spec_error)?;
    Ok(RlPolicy::new(net, settings.greedy))
}

#[cfg(feature = "onnx")]
fn onnx_spec_error(error: RlError) -> SpecError {
    match error {
        RlError::Spec(e) => e,
        other => SpecError::new("model", other.to_string()),
    }
}

/// The `onnx` kind.
#[cfg(feature = "onnx")]
pub fn onnx_kind() -> DeciderKind {
    DeciderKind {
        name: "onnx",
        summary: "a policy exported to ONNX (CleanRL, Stable-Baselines3, RLlib) with a JSON manifest, run by tract, seeded per agent",
        settings: &[
            "model = <required>: the policy (.onnx model, .json manifest or their stem)",
            "greedy = false: always the most likely legal action instead of a seeded draw",
        ],
        spawn: Arc::new(|cx| {
            let settings: OnnxSettings = parse_settings(&cx.slot.settings)?;
            let net = session_net(cx, &settings.model, settings.transfer, || {
                load_onnx(&settings.model, cx.spec, settings.transfer).map_err(onnx_spec_error)
            })?;
            Ok(net.start_decider("onnx", settings.greedy))
        }),
    }
}

/// Adds the `rl` kind (and with feature `onnx` the `onnx` kind) to `registry`.
pub fn register(registry: &mut DeciderRegistry) {
    registry.register(kind());
    #[cfg(feature = "onnx")]
    registry.register(onnx_kind());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onnx_policies_are_told_by_extension_or_manifest_schema() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("p");
        assert!(is_onnx(&stem.with_extension("onnx")));
        assert!(!is_onnx(&stem));
        std::fs::write(
            stem.with_extension("json"),
            format!(r#"{{"schema": "{ONNX_MANIFEST_SCHEMA}"}}"#),
        )
        .unwrap();
        assert!(is_onnx(&stem) && is_onnx(&stem.with_extension("json")));
        let spec = crate::checkpoint::tests::spec();
        let err = load_net(&stem, &spec, false).unwrap_err();
        // Without the feature the build says why; with it, the manifest is incomplete.
        let expected = if cfg!(feature = "onnx") {
            "p.json"
        } else {
            "no ONNX support"
        };
        assert!(err.to_string().contains(expected), "{err}");
        assert!(err.is_bad_input());
    }
}
