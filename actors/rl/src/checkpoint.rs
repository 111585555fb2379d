//! Checkpoints: the weights as safetensors plus a JSON manifest saying what they are for.
//!
//! A checkpoint `NAME` is two files side by side: `NAME.safetensors` (the actor's and the
//! critic's parameters by name) and `NAME.json` (the [`Manifest`]). Either file's path, or
//! the common stem, names the checkpoint.

use crate::error::{Result, RlError};
use crate::net::{ActorCritic, Architecture, NetShape};
use candle_core::Device;
use mosaic_core::EnvSpec;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Schema tag of [`Manifest`].
pub const MANIFEST_SCHEMA: &str = "mosaic.rl-checkpoint/1";

/// Schema tag of an ONNX policy's manifest (`crate::onnx`, feature `onnx`): known to every
/// build, so that one without ONNX support can say why it refuses such a policy.
pub const ONNX_MANIFEST_SCHEMA: &str = "mosaic.onnx-policy/1";

/// What a checkpoint's weights are for, checked against the environment before use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// The environment it was trained on, e.g. `soccer-2v2`.
    pub env: String,
    /// The symbolic observation's shape.
    pub obs_shape: Vec<usize>,
    /// The environment's action labels, in index order.
    pub action_labels: Vec<String>,
    /// The network.
    pub architecture: Architecture,
    /// Agents the critic reads (the team's size for MAPPO's centralised critic).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub critic_agents: usize,
    /// The training run that wrote it.
    pub run_id: String,
    /// Environment steps trained when it was written.
    pub step: u64,
    /// PPO updates done when it was written.
    pub update: u64,
    /// The agent slots (or team) it was trained to play.
    #[serde(default)]
    pub agents: Vec<String>,
}

impl Manifest {
    /// The network shape it describes.
    pub fn net_shape(&self) -> NetShape {
        NetShape {
            critic_agents: self.critic_agents,
            ..NetShape::new(
                self.obs_shape.clone(),
                self.action_labels.len(),
                self.architecture.clone(),
            )
        }
    }

    /// Checks that the checkpoint fits `spec`: the error names the first field that
    /// differs (`env`, `obs_shape`, `action_labels`).
    pub fn check(&self, spec: &EnvSpec, path: &Path) -> Result<()> {
        check_fit(
            spec,
            path,
            &self.env,
            &self.obs_shape,
            &self.action_labels,
            false,
        )
    }

    /// Checks that the checkpoint can act in `spec` although it may have been trained in
    /// another environment (transfer, e.g. a policy trained alone in `soccer-1v0` playing
    /// in `soccer-2v2`): the observation shape and the action labels must agree; the error
    /// names the first that differs.
    pub fn check_transfer(&self, spec: &EnvSpec, path: &Path) -> Result<()> {
        check_fit(
            spec,
            path,
            &self.env,
            &self.obs_shape,
            &self.action_labels,
            true,
        )
    }
}

/// Checks that a policy made for `env`, observations of `obs_shape` and `action_labels`
/// (as its manifest at `path` says) fits `spec`: the error names the first field that
/// differs (`env`, `obs_shape`, `action_labels`). With `transfer` the environment may be
/// another one; observations and actions must still agree.
pub fn check_fit(
    spec: &EnvSpec,
    path: &Path,
    env: &str,
    obs_shape: &[usize],
    action_labels: &[String],
    transfer: bool,
) -> Result<()> {
    let differs = |field, checkpoint: String, environment: String| {
        Err(RlError::Mismatch {
            path: path.to_owned(),
            field,
            checkpoint,
            environment,
        })
    };
    if env != spec.name && !transfer {
        return differs("env", format!("`{env}`"), format!("`{}`", spec.name));
    }
    let shape = spec.symbolic_shape.as_deref().unwrap_or(&[]);
    if obs_shape != shape {
        return differs("obs_shape", format!("{obs_shape:?}"), format!("{shape:?}"));
    }
    if action_labels != spec.action_labels {
        return differs(
            "action_labels",
            action_labels.join(", "),
            spec.action_labels.join(", "),
        );
    }
    Ok(())
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// The two files of the checkpoint named by `path` (either file, or their stem).
pub fn files(path: &Path) -> (PathBuf, PathBuf) {
    sidecar_files(path, "safetensors")
}

/// A policy's manifest and model files, `STEM.json` and `STEM.<model_extension>`, named by
/// `path`: either file, or their stem.
pub fn sidecar_files(path: &Path, model_extension: &str) -> (PathBuf, PathBuf) {
    let stem = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) if ext == "json" || ext == model_extension => path.with_extension(""),
        _ => path.to_owned(),
    };
    let with = |ext: &str| {
        let mut name = stem.clone().into_os_string();
        name.push(".");
        name.push(ext);
        PathBuf::from(name)
    };
    (with("json"), with(model_extension))
}

/// A loaded checkpoint: its manifest and network.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// What it is for.
    pub manifest: Manifest,
    /// The weights.
    pub net: ActorCritic,
}

impl Checkpoint {
    /// Reads the checkpoint named by `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let (json, weights) = files(path);
        let manifest = read_manifest(&json)?;
        if !weights.is_file() {
            return Err(RlError::Corrupt {
                path: weights,
                problem: "the weights file is missing".into(),
            });
        }
        let tensors = candle_core::safetensors::load(&weights, &Device::Cpu).map_err(|e| {
            RlError::Corrupt {
                path: weights.clone(),
                problem: format!("not a safetensors file: {e}"),
            }
        })?;
        let net =
            ActorCritic::from_tensors(manifest.net_shape(), tensors).map_err(|e| match e {
                RlError::Corrupt { problem, .. } => RlError::Corrupt {
                    path: weights.clone(),
                    problem,
                },
                other => other,
            })?;
        Ok(Self { manifest, net })
    }

    /// Writes the checkpoint as `path` (stem, or either file): weights first, manifest last,
    /// each through a temporary file renamed into place, so a manifest always names whole
    /// weights.
    pub fn save(&self, path: &Path) -> Result<()> {
        let (json, weights) = files(path);
        if let Some(dir) = json.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| RlError::io(dir, e))?;
        }
        let staged = staging(&weights);
        candle_core::safetensors::save(&self.net.params().tensors(), &staged)?;
        std::fs::rename(&staged, &weights).map_err(|e| RlError::io(&weights, e))?;
        let text = serde_json::to_vec_pretty(&self.manifest).map_err(|source| RlError::Json {
            path: json.clone(),
            source,
        })?;
        write_atomically(&json, &text)
    }
}

/// Reads and checks a manifest file.
pub fn read_manifest(path: &Path) -> Result<Manifest> {
    read_tagged(path, MANIFEST_SCHEMA, |m: &Manifest| &m.schema)
}

/// The `schema` tag of the JSON manifest at `path`, if it has one.
pub fn schema_of(path: &Path) -> Result<Option<String>> {
    #[derive(Deserialize)]
    struct Tagged {
        schema: Option<String>,
    }
    Ok(read_json::<Tagged>(path)?.schema)
}

/// Reads the JSON manifest at `path` and checks that its schema tag (read by `schema`)
/// is `expected`.
pub(crate) fn read_tagged<T: serde::de::DeserializeOwned>(
    path: &Path,
    expected: &str,
    schema: impl Fn(&T) -> &str,
) -> Result<T> {
    let manifest = read_json(path)?;
    let found = schema(&manifest);
    if found != expected {
        return Err(RlError::Corrupt {
            path: path.to_owned(),
            problem: format!("schema `{found}` is not `{expected}`"),
        });
    }
    Ok(manifest)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|e| RlError::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|source| RlError::Json {
        path: path.to_owned(),
        source,
    })
}

fn staging(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let staged = staging(path);
    std::fs::write(&staged, bytes).map_err(|e| RlError::io(&staged, e))?;
    std::fs::rename(&staged, path).map_err(|e| RlError::io(path, e))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mosaic_core::{Action, AgentSpec, ObsRequest, Stepping};

    /// A one-agent environment with a 3-value observation and two actions.
    pub(crate) fn spec() -> EnvSpec {
        EnvSpec {
            name: "toy".into(),
            agents: vec![AgentSpec {
                id: "a".into(),
                team: None,
                role: None,
            }],
            action_labels: vec!["left".into(), "right".into()],
            default_action: Action(0),
            stepping: Stepping::Single,
            max_steps: None,
            symbolic_shape: Some(vec![3]),
            offers: ObsRequest::SYMBOLIC,
            descriptions: Default::default(),
        }
    }

    fn manifest() -> Manifest {
        Manifest {
            schema: MANIFEST_SCHEMA.into(),
            env: "toy".into(),
            obs_shape: vec![3],
            action_labels: vec!["left".into(), "right".into()],
            architecture: Architecture::default(),
            critic_agents: 1,
            run_id: "r".into(),
            step: 10,
            update: 1,
            agents: vec!["a".into()],
        }
    }

    #[test]
    fn saves_loads_and_names_the_field_that_differs() {
        let dir = tempfile::tempdir().unwrap();
        let net = ActorCritic::new(manifest().net_shape(), 5).unwrap();
        let checkpoint = Checkpoint {
            manifest: manifest(),
            net,
        };
        let stem = dir.path().join("sub/policy");
        checkpoint.save(&stem).unwrap();
        for name in ["sub/policy", "sub/policy.json", "sub/policy.safetensors"] {
            let loaded = Checkpoint::load(&dir.path().join(name)).unwrap();
            assert_eq!(loaded.manifest, checkpoint.manifest);
            assert_eq!(loaded.net.params().count(), checkpoint.net.params().count());
        }
        checkpoint.manifest.check(&spec(), &stem).unwrap();
        let mut other = spec();
        other.symbolic_shape = Some(vec![4]);
        let err = checkpoint.manifest.check(&other, &stem).unwrap_err();
        assert!(
            err.to_string().contains("field `obs_shape` differs"),
            "{err}"
        );
        other = spec();
        other.action_labels.push("up".into());
        let err = checkpoint.manifest.check(&other, &stem).unwrap_err();
        assert!(err.to_string().contains("`action_labels`"), "{err}");
        other.name = "else".into();
        let err = checkpoint.manifest.check(&other, &stem).unwrap_err();
        assert!(err.to_string().contains("`env`"), "{err}");
        assert!(err.is_bad_input());
        // Transfer to another environment: only the shape and the actions must agree.
        let err = checkpoint
            .manifest
            .check_transfer(&other, &stem)
            .unwrap_err();
        assert!(err.to_string().contains("`action_labels`"), "{err}");
        other.action_labels.pop();
        checkpoint.manifest.check_transfer(&other, &stem).unwrap();
        other.symbolic_shape = Some(vec![4]);
        let err = checkpoint
            .manifest
            .check_transfer(&other, &stem)
            .unwrap_err();
        assert!(err.to_string().contains("`obs_shape`"), "{err}");
    }

    #[test]
    fn broken_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("p");
        let net = ActorCritic::new(manifest().net_shape(), 5).unwrap();
        Checkpoint {
            manifest: manifest(),
            net,
        }
        .save(&stem)
        .unwrap();
        std::fs::write(dir.path().join("p.safetensors"), b"garbage").unwrap();
        let err = Checkpoint::load(&stem).unwrap_err();
        assert!(err.to_string().contains("not a safetensors file"), "{err}");
        std::fs::remove_file(dir.path().join("p.safetensors")).unwrap();
        assert!(
            Checkpoint::load(&stem)
                .unwrap_err()
                .to_string()
                .contains("missing")
        );
        let mut wrong = manifest();
        wrong.schema = "other/1".into();
        std::fs::write(
            dir.path().join("p.json"),
            serde_json::to_vec(&wrong).unwrap(),
        )
        .unwrap();
        assert!(
            Checkpoint::load(&stem)
                .unwrap_err()
                .to_string()
                .contains("schema")
        );
        assert!(Checkpoint::load(&dir.path().join("none")).is_err());
    }
}
