//! Policies trained elsewhere: ONNX models exported from PyTorch (CleanRL,
//! Stable-Baselines3, RLlib), run with tract in pure Rust.
//!
//! A policy `NAME` is two files side by side: `NAME.onnx` (the model) and `NAME.json` (the
//! [`OnnxManifest`]: what it was trained on, how the environment's observation becomes the
//! model's input, and what its output means). The manifest is checked against the
//! environment like a checkpoint's ([`crate::checkpoint::check_fit`]), and the model
//! against the manifest when it is loaded: a model that does not take the adapted
//! observation, or does not answer one score or action per row, is refused there.
//!
//! The model must have one input, the batch of observations (`[batch, ...]`, the batch
//! dimension symbolic or fixed), of any numeric type (the observation is cast to it). Its
//! output, the first one or the one named in the manifest, is read as
//!
//! - `logits`: `[batch, actions]` scores (CleanRL's actor, RLlib's action-distribution
//!   inputs, a Stable-Baselines3 policy's `action_net`);
//! - `probabilities`: `[batch, actions]` probabilities (a softmax at the end), acted on
//!   through their logarithm;
//! - `action`: `[batch]` or `[batch, 1]` action indices (Stable-Baselines3's deterministic
//!   `policy(obs)` export). The model has chosen already, so masks cannot steer it and
//!   `greedy = false` draws nothing: an illegal choice is replaced by the first legal
//!   action (greedy) or a seeded draw among the legal ones.

pub use crate::checkpoint::ONNX_MANIFEST_SCHEMA;
use crate::checkpoint::{check_fit, read_tagged, sidecar_files};
use crate::error::{Result, RlError};
use crate::net::MASKED_LOGIT;
use crate::policy::PolicyNet;
use mosaic_core::EnvSpec;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tract_onnx::prelude::{
    DatumType, Framework, InferenceFact, InferenceModel, InferenceModelExt, IntoRunnable,
    IntoTValue, Tensor, TypedRunnableModel, tvec,
};
use tract_onnx::tract_hir::infer::Factoid;

/// What an ONNX policy is for and how to feed it, checked against the environment before
/// use.
///
/// ```
/// use mosaic_rl::onnx::{OnnxManifest, OutputKind};
/// let manifest: OnnxManifest = serde_json::from_str(r#"{
///     "schema": "mosaic.onnx-policy/1",
///     "env": "connect-four",
///     "obs_shape": [6, 7, 2],
///     "action_labels": ["column 1", "column 2", "column 3", "column 4",
///                       "column 5", "column 6", "column 7"],
///     "observation": {"layout": {"type": "image", "env": "hwc", "model": "chw"}},
///     "output": {"kind": "logits"}
/// }"#).unwrap();
/// assert_eq!(manifest.output.kind, OutputKind::Logits);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxManifest {
    /// Always [`ONNX_MANIFEST_SCHEMA`].
    pub schema: String,
    /// The environment it was trained on, e.g. `gridworld`.
    pub env: String,
    /// The environment's symbolic observation shape.
    pub obs_shape: Vec<usize>,
    /// The environment's action labels, in index order.
    pub action_labels: Vec<String>,
    /// How an observation becomes the model's input.
    #[serde(default)]
    pub observation: ObservationAdapter,
    /// What the model answers.
    #[serde(default)]
    pub output: Output,
    /// Where the model comes from (free text: library, algorithm, run).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// How the environment's symbolic observation becomes one row of the model's input: its
/// layout, then `x * scale + offset`, then `(x - mean) / std` and a clip to `[-clip, clip]`
/// when given (a saved observation normaliser, VecNormalize's statistics).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObservationAdapter {
    /// How the values are arranged for the model.
    #[serde(default)]
    pub layout: Layout,
    /// Factor applied first (e.g. `1/255` for byte images the model expects in `[0, 1]`).
    #[serde(default = "one")]
    pub scale: f32,
    /// Added after `scale`.
    #[serde(default)]
    pub offset: f32,
    /// Per-value means subtracted, in the model's input order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<Vec<f32>>,
    /// Per-value standard deviations divided by, in the model's input order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<Vec<f32>>,
    /// Bound of the normalised values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip: Option<f32>,
}

impl Default for ObservationAdapter {
    fn default() -> Self {
        Self {
            layout: Layout::default(),
            scale: 1.0,
            offset: 0.0,
            mean: None,
            std: None,
            clip: None,
        }
    }
}

fn one() -> f32 {
    1.0
}

/// The arrangement of the model's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Layout {
    /// A flat vector per observation (`[batch, values]`), the observation flattened in
    /// `order`.
    Vector {
        /// How a multi-dimensional observation is flattened.
        #[serde(default)]
        order: FlattenOrder,
    },
    /// An image per observation (`[batch, ...]` with three dimensions), transposed from
    /// the environment's layout to the model's.
    Image {
        /// What the environment's three dimensions are.
        env: ImageLayout,
        /// What the model's three dimensions are (PyTorch: `chw`).
        model: ImageLayout,
    },
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Vector {
            order: FlattenOrder::default(),
        }
    }
}

/// The order in which a multi-dimensional observation is flattened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlattenOrder {
    /// Last dimension fastest (numpy's and PyTorch's `flatten`, C order): the environment's
    /// own order.
    #[default]
    RowMajor,
    /// First dimension fastest (Fortran order, numpy's `flatten("F")`).
    ColumnMajor,
}

/// The meaning of an image's three dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageLayout {
    /// Channels, height, width (PyTorch's convolutions).
    Chw,
    /// Height, width, channels (Gymnasium's images, TensorFlow's convolutions).
    Hwc,
}

/// Which output the policy acts on and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// What it holds.
    #[serde(default)]
    pub kind: OutputKind,
    /// The output's name in the model; the first output when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// What a model's output holds per observation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// One score per action.
    #[default]
    Logits,
    /// One probability per action.
    Probabilities,
    /// The chosen action's index.
    Action,
}

/// The manifest and model files of the ONNX policy named by `path` (either file, or their
/// stem).
pub fn files(path: &Path) -> (PathBuf, PathBuf) {
    sidecar_files(path, "onnx")
}

/// Reads and checks an ONNX policy's manifest.
pub fn read_manifest(path: &Path) -> Result<OnnxManifest> {
    read_tagged(path, ONNX_MANIFEST_SCHEMA, |m: &OnnxManifest| &m.schema)
}

/// The adapter made concrete for one observation shape: where each model input value comes
/// from and how it is scaled.
#[derive(Clone, Debug)]
struct Adapter {
    /// Model input position → observation index; `None`: the same order.
    gather: Option<Vec<usize>>,
    /// Dimensions of one row of the model's input.
    row_shape: Vec<usize>,
    scale: f32,
    offset: f32,
    normalise: Option<(Vec<f32>, Vec<f32>)>,
    clip: Option<f32>,
}

impl Adapter {
    fn new(manifest: &OnnxManifest) -> std::result::Result<Self, String> {
        let shape = &manifest.obs_shape;
        let len: usize = shape.iter().product();
        if shape.is_empty() || len == 0 {
            return Err(format!("obs_shape {shape:?} holds no values"));
        }
        let (gather, row_shape) = match &manifest.observation.layout {
            Layout::Vector {
                order: FlattenOrder::RowMajor,
            } => (None, vec![len]),
            Layout::Vector {
                order: FlattenOrder::ColumnMajor,
            } => {
                let axes: Vec<usize> = (0..shape.len()).rev().collect();
                (Some(transposition(shape, &axes)), vec![len])
            }
            Layout::Image { env, model } => {
                let [a, b, c] = shape[..] else {
                    return Err(format!(
                        "an image layout needs a three-dimensional obs_shape, not {shape:?}"
                    ));
                };
                // The model's axes, as axes of the environment's tensor.
                let axes = match (env, model) {
                    (ImageLayout::Chw, ImageLayout::Chw) | (ImageLayout::Hwc, ImageLayout::Hwc) => {
                        vec![0, 1, 2]
                    }
                    (ImageLayout::Hwc, ImageLayout::Chw) => vec![2, 0, 1],
                    (ImageLayout::Chw, ImageLayout::Hwc) => vec![1, 2, 0],
                };
                let dims = [a, b, c];
                let row_shape = axes.iter().map(|&axis| dims[axis]).collect();
                let gather = (axes != [0, 1, 2]).then(|| transposition(shape, &axes));
                (gather, row_shape)
            }
        };
        let observation = &manifest.observation;
        let normalise = match (&observation.mean, &observation.std) {
            (None, None) => None,
            (Some(mean), Some(std)) => {
                for (name, values) in [("mean", mean), ("std", std)] {
                    if values.len() != len {
                        return Err(format!(
                            "observation.{name} has {} values, the observation {len}",
                            values.len()
                        ));
                    }
                }
                if std.iter().any(|s| *s <= 0.0 || !s.is_finite()) {
                    return Err("observation.std must be positive".into());
                }
                Some((mean.clone(), std.clone()))
            }
            _ => return Err("observation.mean and observation.std go together".into()),
        };
        if observation.clip.is_some_and(|c| c.is_nan() || c <= 0.0) {
            return Err("observation.clip must be positive".into());
        }
        Ok(Self {
            gather,
            row_shape,
            scale: observation.scale,
            offset: observation.offset,
            normalise,
            clip: observation.clip,
        })
    }

    fn len(&self) -> usize {
        self.row_shape.iter().product()
    }

    /// Appends the model input of one observation (`obs`, in the environment's order).
    fn push(&self, obs: &[f32], into: &mut Vec<f32>) {
        let start = into.len();
        match &self.gather {
            None => into.extend_from_slice(obs),
            Some(gather) => into.extend(gather.iter().map(|&i| obs[i])),
        }
        let row = &mut into[start..];
        for (position, value) in row.iter_mut().enumerate() {
            let mut x = *value * self.scale + self.offset;
            if let Some((mean, std)) = &self.normalise {
                x = (x - mean[position]) / std[position];
            }
            if let Some(clip) = self.clip {
                x = x.clamp(-clip, clip);
            }
            *value = x;
        }
    }
}

/// For a tensor of `shape` (row-major), the source index of each element of its
/// transposition whose dimension `k` is the source's dimension `axes[k]`, in the
/// transposition's row-major order.
fn transposition(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    let mut stride = 1;
    for (s, &dim) in strides.iter_mut().zip(shape).rev() {
        *s = stride;
        stride *= dim;
    }
    let dims: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let total: usize = shape.iter().product();
    let mut index = vec![0usize; dims.len()];
    let mut out = Vec::with_capacity(total);
    for _ in 0..total {
        out.push(
            index
                .iter()
                .zip(axes)
                .map(|(&i, &axis)| i * strides[axis])
                .sum(),
        );
        // The next index of the transposition, last dimension fastest.
        for (i, &dim) in index.iter_mut().zip(&dims).rev() {
            *i += 1;
            if *i < dim {
                break;
            }
            *i = 0;
        }
    }
    out
}

/// An ONNX policy ready to act: the model with its output selected, planned by tract once
/// per batch size.
pub struct OnnxPolicy {
    path: PathBuf,
    model: InferenceModel,
    input_type: DatumType,
    adapter: Adapter,
    output: OutputKind,
    obs_len: usize,
    actions: usize,
    plans: Mutex<HashMap<usize, Arc<TypedRunnableModel>>>,
}

impl std::fmt::Debug for OnnxPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxPolicy")
            .field("path", &self.path)
            .field("input_type", &self.input_type)
            .field("row_shape", &self.adapter.row_shape)
            .field("output", &self.output)
            .field("actions", &self.actions)
            .finish_non_exhaustive()
    }
}

impl OnnxPolicy {
    /// Loads the policy named by `path` (the `.onnx` model, its `.json` manifest or their
    /// stem) and checks it against `spec`: the manifest's fields first (the error names
    /// the one that differs), then the model's input and output (the error names the file).
    /// With `transfer` the policy may have been made for another environment whose
    /// observations and actions agree.
    pub fn load_for(path: &Path, spec: &EnvSpec, transfer: bool) -> Result<Self> {
        let (json, model_path) = files(path);
        let manifest = read_manifest(&json)?;
        check_fit(
            spec,
            &json,
            &manifest.env,
            &manifest.obs_shape,
            &manifest.action_labels,
            transfer,
        )?;
        Self::load(&manifest, &json, &model_path)
    }

    /// Loads the model at `model_path` as `manifest` (read from `json`) describes it.
    pub fn load(manifest: &OnnxManifest, json: &Path, model_path: &Path) -> Result<Self> {
        let adapter = Adapter::new(manifest).map_err(|problem| RlError::Corrupt {
            path: json.to_owned(),
            problem,
        })?;
        let refuse = |problem: String| RlError::Onnx {
            path: model_path.to_owned(),
            problem,
        };
        if !model_path.is_file() {
            return Err(refuse("the model file is missing".into()));
        }
        let mut model = tract_onnx::onnx()
            .model_for_path(model_path)
            .map_err(|e| refuse(format!("not a readable ONNX model: {e:#}")))?;
        let inputs = model
            .input_outlets()
            .map_err(|e| refuse(e.to_string()))?
            .len();
        if inputs != 1 {
            return Err(refuse(format!(
                "the model has {inputs} inputs; a policy takes one, the observation batch"
            )));
        }
        if let Some(name) = &manifest.output.name {
            model
                .select_outputs_by_name([name])
                .map_err(|_| refuse(format!("the model has no output named `{name}`")))?;
        } else {
            let first = *model
                .output_outlets()
                .map_err(|e| refuse(e.to_string()))?
                .first()
                .ok_or_else(|| refuse("the model has no output".into()))?;
            model
                .select_output_outlets(&[first])
                .map_err(|e| refuse(e.to_string()))?;
        }
        let declared = model
            .input_fact(0)
            .map_err(|e| refuse(e.to_string()))?
            .clone();
        let input_type = declared.datum_type.concretize().unwrap_or(DatumType::F32);
        check_declared_shape(&declared, &adapter.row_shape).map_err(refuse)?;
        let policy = Self {
            path: model_path.to_owned(),
            model,
            input_type,
            obs_len: manifest.obs_shape.iter().product(),
            actions: manifest.action_labels.len(),
            adapter,
            output: manifest.output.kind,
            plans: Mutex::new(HashMap::new()),
        };
        // Plan and run one neutral observation now, so a model that does not fit fails
        // at validation, not at the first decision.
        policy.logits(&vec![0.0; policy.obs_len], 1)?;
        Ok(policy)
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, problem: String) -> RlError {
        RlError::Onnx {
            path: self.path.clone(),
            problem,
        }
    }

    /// tract's plan for batches of `rows` observations, made on first use.
    fn plan(&self, rows: usize) -> Result<Arc<TypedRunnableModel>> {
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(plan) = plans.get(&rows) {
            return Ok(plan.clone());
        }
        let mut shape = vec![rows];
        shape.extend(&self.adapter.row_shape);
        let plan = self
            .model
            .clone()
            .with_input_fact(0, InferenceFact::dt_shape(self.input_type, shape.clone()))
            .and_then(|model| model.into_optimized())
            .and_then(|model| model.into_runnable())
            .map_err(|e| {
                self.error(format!(
                    "the model does not accept an input of shape {shape:?}: {e:#}"
                ))
            })?;
        plans.insert(rows, plan.clone());
        Ok(plan)
    }

    /// The model's output for `rows` adapted observations, as `f32`, with its shape.
    fn run(&self, input: Vec<f32>, rows: usize) -> Result<(Vec<usize>, Vec<f32>)> {
        let plan = self.plan(rows)?;
        let mut shape = vec![rows];
        shape.extend(&self.adapter.row_shape);
        let fail = |e: tract_onnx::prelude::TractError| self.error(format!("{e:#}"));
        let mut tensor = Tensor::from_shape(&shape, &input).map_err(fail)?;
        if self.input_type != DatumType::F32 {
            tensor = tensor
                .cast_to_dt(self.input_type)
                .map_err(fail)?
                .into_owned();
        }
        let outputs = plan.run(tvec!(tensor.into_tvalue())).map_err(fail)?;
        let output = outputs
            .first()
            .ok_or_else(|| self.error("the model answered nothing".into()))?;
        let values = output.cast_to::<f32>().map_err(fail)?;
        let view = values.to_plain_array_view::<f32>().map_err(fail)?;
        Ok((output.shape().to_vec(), view.iter().copied().collect()))
    }
}

/// Checks the model's declared input shape (where it declares one) against the adapted
/// observation's.
fn check_declared_shape(
    declared: &InferenceFact,
    row_shape: &[usize],
) -> std::result::Result<(), String> {
    let Some(dims) = declared.shape.concretize() else {
        return Ok(());
    };
    let fixed: Vec<Option<usize>> = dims
        .iter()
        .map(|d| d.to_i64().ok().and_then(|d| usize::try_from(d).ok()))
        .collect();
    let fits = fixed.len() == row_shape.len() + 1
        && fixed[1..]
            .iter()
            .zip(row_shape)
            .all(|(d, want)| d.is_none_or(|d| d == *want));
    if fits {
        return Ok(());
    }
    let shown: Vec<String> = fixed
        .iter()
        .map(|d| d.map_or("?".to_owned(), |d| d.to_string()))
        .collect();
    Err(format!(
        "the model's input has shape [{}], the observation adapted by the manifest is [batch, {}]",
        shown.join(", "),
        row_shape
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

impl PolicyNet for OnnxPolicy {
    fn obs_len(&self) -> usize {
        self.obs_len
    }

    fn actions(&self) -> usize {
        self.actions
    }

    fn logits(&self, obs: &[f32], rows: usize) -> Result<Vec<f32>> {
        if obs.len() != rows * self.obs_len {
            return Err(self.error(format!(
                "{} observation values for {rows} rows of {}",
                obs.len(),
                self.obs_len
            )));
        }
        let mut input = Vec::with_capacity(rows * self.adapter.len());
        for row in obs.chunks_exact(self.obs_len) {
            self.adapter.push(row, &mut input);
        }
        let (shape, values) = self.run(input, rows)?;
        let per_row = match self.output {
            OutputKind::Logits | OutputKind::Probabilities => self.actions,
            OutputKind::Action => 1,
        };
        let leading = shape.first().copied().unwrap_or(1);
        if values.len() != rows * per_row || (rows > 1 && leading != rows) {
            let what = match self.output {
                OutputKind::Action => "one action".to_owned(),
                _ => format!("{} scores (one per action)", self.actions),
            };
            return Err(self.error(format!(
                "the output has shape {shape:?} for {rows} observations; expected {what} per observation"
            )));
        }
        Ok(match self.output {
            OutputKind::Logits => values,
            OutputKind::Probabilities => values
                .into_iter()
                .map(|p| p.ln().max(MASKED_LOGIT))
                .collect(),
            OutputKind::Action => {
                let mut logits = vec![MASKED_LOGIT; rows * self.actions];
                for (row, action) in values.into_iter().enumerate() {
                    let index = action as usize;
                    if action < 0.0 || action.fract() != 0.0 || index >= self.actions {
                        return Err(self.error(format!(
                            "the model answered action {action}, not one of the {} actions",
                            self.actions
                        )));
                    }
                    logits[row * self.actions + index] = 0.0;
                }
                logits
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(shape: Vec<usize>, layout: Layout) -> OnnxManifest {
        OnnxManifest {
            schema: ONNX_MANIFEST_SCHEMA.into(),
            env: "toy".into(),
            obs_shape: shape,
            action_labels: vec!["a".into(), "b".into()],
            observation: ObservationAdapter {
                layout,
                ..ObservationAdapter::default()
            },
            output: Output::default(),
            source: String::new(),
        }
    }

    fn adapted(shape: Vec<usize>, layout: Layout) -> (Vec<usize>, Vec<f32>) {
        let adapter = Adapter::new(&manifest(shape.clone(), layout)).unwrap();
        let obs: Vec<f32> = (0..shape.iter().product::<usize>())
            .map(|i| i as f32)
            .collect();
        let mut out = Vec::new();
        adapter.push(&obs, &mut out);
        (adapter.row_shape, out)
    }

    #[test]
    fn layouts_reorder_as_numpy_does() {
        // np.arange(6).reshape(2, 3): row-major is itself, column-major 0 3 1 4 2 5.
        let (shape, row) = adapted(vec![2, 3], Layout::default());
        assert_eq!((shape, row), (vec![6], vec![0., 1., 2., 3., 4., 5.]));
        let (shape, row) = adapted(
            vec![2, 3],
            Layout::Vector {
                order: FlattenOrder::ColumnMajor,
            },
        );
        assert_eq!((shape, row), (vec![6], vec![0., 3., 1., 4., 2., 5.]));
        // np.arange(12).reshape(2, 3, 2) (h, w, c) transposed to (c, h, w).
        let (shape, row) = adapted(
            vec![2, 3, 2],
            Layout::Image {
                env: ImageLayout::Hwc,
                model: ImageLayout::Chw,
            },
        );
        assert_eq!(shape, vec![2, 2, 3]);
        assert_eq!(row, vec![0., 2., 4., 6., 8., 10., 1., 3., 5., 7., 9., 11.]);
        // ... and back.
        let (shape, row) = adapted(
            vec![2, 2, 3],
            Layout::Image {
                env: ImageLayout::Chw,
                model: ImageLayout::Hwc,
            },
        );
        assert_eq!(shape, vec![2, 3, 2]);
        assert_eq!(row, vec![0., 6., 1., 7., 2., 8., 3., 9., 4., 10., 5., 11.]);
    }

    #[test]
    fn scaling_normalises_and_clips() {
        let mut m = manifest(vec![3], Layout::default());
        m.observation.scale = 2.0;
        m.observation.offset = 1.0;
        m.observation.mean = Some(vec![0.0, 1.0, 2.0]);
        m.observation.std = Some(vec![1.0, 2.0, 0.5]);
        m.observation.clip = Some(5.0);
        let adapter = Adapter::new(&m).unwrap();
        let mut out = Vec::new();
        adapter.push(&[1.0, 1.0, 10.0], &mut out);
        assert_eq!(out, vec![3.0, 1.0, 5.0]);
    }

    #[test]
    fn adapters_that_cannot_apply_are_refused() {
        let image = Layout::Image {
            env: ImageLayout::Hwc,
            model: ImageLayout::Chw,
        };
        let err = Adapter::new(&manifest(vec![4], image)).unwrap_err();
        assert!(err.contains("three-dimensional"), "{err}");
        let mut m = manifest(vec![2], Layout::default());
        m.observation.mean = Some(vec![0.0, 0.0]);
        assert!(Adapter::new(&m).unwrap_err().contains("go together"));
        m.observation.std = Some(vec![1.0]);
        assert!(Adapter::new(&m).unwrap_err().contains("has 1 values"));
        m.observation.std = Some(vec![1.0, 0.0]);
        assert!(Adapter::new(&m).unwrap_err().contains("positive"));
        assert!(Adapter::new(&manifest(vec![0], Layout::default())).is_err());
    }

    #[test]
    fn manifests_read_with_defaults_and_refuse_unknown_fields() {
        let text = r#"{"schema": "mosaic.onnx-policy/1", "env": "toy", "obs_shape": [3],
                       "action_labels": ["a", "b"]}"#;
        let m: OnnxManifest = serde_json::from_str(text).unwrap();
        assert_eq!(m.observation, ObservationAdapter::default());
        assert_eq!(m.output.kind, OutputKind::Logits);
        let typo = text.replace("\"env\"", "\"environment\"");
        assert!(serde_json::from_str::<OnnxManifest>(&typo).is_err());
        let (json, model) = files(Path::new("p/policy.onnx"));
        assert_eq!(json, Path::new("p/policy.json"));
        assert_eq!(model, Path::new("p/policy.onnx"));
        assert_eq!(files(Path::new("p/policy")).1, Path::new("p/policy.onnx"));
    }
}
