//! The actor-critic networks: an MLP over flat observations, or a small CNN over symbolic
//! planes (`[channels, height, width]`).
//!
//! Parameters live in a [`Params`] store in name order; they are initialised from a seeded
//! RNG (candle's own initialisers draw from an unseeded one) or loaded from a checkpoint,
//! through the same construction code.

use crate::dense::DenseStack;
use crate::error::{Result, RlError};
use candle_core::{DType, Device, Module, Tensor, Var};
use candle_nn::{Conv2d, Conv2dConfig, Linear};
use mosaic_core::rng::{Rng, seeded};
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Penalty added to the logits of illegal actions: their probability becomes exactly 0.
pub const MASKED_LOGIT: f32 = -1e9;

/// The network shape, as written in checkpoint manifests and training files.
///
/// ```
/// use mosaic_rl::Architecture;
/// let mlp: Architecture = serde_json::from_str(r#"{"type": "mlp", "hidden": [64, 64]}"#).unwrap();
/// assert_eq!(mlp, Architecture::default());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Architecture {
    /// Fully connected layers with tanh over the flattened observation.
    Mlp {
        /// Units of each hidden layer.
        hidden: Vec<usize>,
    },
    /// 3×3 convolutions (padding 1, ReLU) over `[channels, height, width]` observations,
    /// then fully connected ReLU layers.
    Cnn {
        /// Output channels of each convolution.
        channels: Vec<usize>,
        /// Units of each hidden layer after the convolutions.
        hidden: Vec<usize>,
    },
}

impl Default for Architecture {
    /// Two hidden layers of 64 units.
    fn default() -> Self {
        Architecture::Mlp {
            hidden: vec![64, 64],
        }
    }
}

impl Architecture {
    /// The default architecture for observations of `shape`: a CNN over planes
    /// (`[channels, height, width]`), else the default MLP.
    pub fn for_shape(shape: &[usize]) -> Self {
        match shape {
            [_, _, _] => Architecture::Cnn {
                channels: vec![16, 16],
                hidden: vec![64],
            },
            _ => Architecture::default(),
        }
    }

    /// Checks that the architecture can read observations of `shape`.
    pub fn check(&self, shape: &[usize]) -> std::result::Result<(), String> {
        let layers_ok = match self {
            Architecture::Mlp { hidden } => hidden.iter().all(|&h| h > 0),
            Architecture::Cnn { channels, hidden } => {
                !channels.is_empty() && channels.iter().chain(hidden).all(|&h| h > 0)
            }
        };
        if !layers_ok {
            return Err("every layer needs at least one unit (and a CNN one convolution)".into());
        }
        match (self, shape) {
            (_, []) => Err("the observation has no shape".into()),
            (Architecture::Cnn { .. }, [_, _, _]) | (Architecture::Mlp { .. }, _) => Ok(()),
            (Architecture::Cnn { .. }, _) => Err(format!(
                "a CNN reads [channels, height, width] observations, not {shape:?}"
            )),
        }
    }
}

/// A network's parameters by name, in name order.
#[derive(Clone, Debug, Default)]
pub struct Params {
    vars: BTreeMap<String, Var>,
}

impl Params {
    /// The parameters in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Var)> {
        self.vars.iter()
    }

    /// Number of scalar parameters.
    pub fn count(&self) -> usize {
        self.vars.values().map(|v| v.elem_count()).sum()
    }

    /// The current values by name (what a checkpoint stores).
    pub fn tensors(&self) -> HashMap<String, Tensor> {
        self.vars
            .iter()
            .map(|(name, var)| (name.clone(), var.as_tensor().clone()))
            .collect()
    }
}

/// Where a network's parameters come from.
enum Source {
    /// Fresh, from a seeded RNG.
    Init(Box<Rng>),
    /// A checkpoint's tensors.
    Loaded(HashMap<String, Tensor>),
}

/// Creates or fetches the parameters of a network under construction.
struct Builder {
    source: Source,
    params: Params,
}

impl Builder {
    /// A parameter of `shape`; fresh ones are uniform in ±`scale` (0: zeros).
    fn param(&mut self, name: &str, shape: &[usize], scale: f32) -> Result<Tensor> {
        let tensor = match &mut self.source {
            Source::Init(rng) => {
                let len = shape.iter().product();
                let data: Vec<f32> = if scale == 0.0 {
                    vec![0.0; len]
                } else {
                    (0..len).map(|_| rng.random_range(-scale..scale)).collect()
                };
                Tensor::from_vec(data, shape, &Device::Cpu)?
            }
            Source::Loaded(tensors) => {
                let tensor = tensors.remove(name).ok_or_else(|| missing(name))?;
                if tensor.dims() != shape {
                    return Err(RlError::Corrupt {
                        path: Default::default(),
                        problem: format!(
                            "parameter `{name}` has shape {:?}, the architecture needs {shape:?}",
                            tensor.dims()
                        ),
                    });
                }
                tensor.to_dtype(DType::F32)?
            }
        };
        let var = Var::from_tensor(&tensor)?;
        let view = var.as_tensor().clone();
        self.params.vars.insert(name.to_owned(), var);
        Ok(view)
    }

    /// A fully connected layer; `gain` scales PyTorch's default initialisation (small for
    /// the policy head, so that the first policy is close to uniform).
    fn linear(&mut self, name: &str, inputs: usize, outputs: usize, gain: f32) -> Result<Linear> {
        let bound = gain / (inputs as f32).sqrt();
        let weight = self.param(&format!("{name}.weight"), &[outputs, inputs], bound)?;
        let bias = self.param(&format!("{name}.bias"), &[outputs], 0.0)?;
        Ok(Linear::new(weight, Some(bias)))
    }

    fn conv(&mut self, name: &str, inputs: usize, outputs: usize) -> Result<Conv2d> {
        let bound = 1.0 / ((inputs * 9) as f32).sqrt();
        let weight = self.param(&format!("{name}.weight"), &[outputs, inputs, 3, 3], bound)?;
        let bias = self.param(&format!("{name}.bias"), &[outputs], 0.0)?;
        let config = Conv2dConfig {
            padding: 1,
            ..Conv2dConfig::default()
        };
        Ok(Conv2d::new(weight, Some(bias), config))
    }
}

fn missing(name: &str) -> RlError {
    RlError::Corrupt {
        path: Default::default(),
        problem: format!("parameter `{name}` is missing from the weights"),
    }
}

/// A stack of layers from an observation to a feature vector.
#[derive(Clone, Debug)]
struct Trunk {
    /// `[channels, height, width]` for a CNN (the flat input is reshaped), else empty.
    planes: Vec<usize>,
    convs: Vec<Conv2d>,
    linears: Vec<Linear>,
    /// tanh for MLPs (the PPO default), ReLU after convolutions.
    tanh: bool,
}

impl Trunk {
    fn build(
        b: &mut Builder,
        prefix: &str,
        architecture: &Architecture,
        shape: &[usize],
    ) -> Result<(Self, usize)> {
        let (planes, channels, hidden): (Vec<usize>, &[usize], &[usize]) = match architecture {
            Architecture::Mlp { hidden } => (Vec::new(), &[], hidden),
            Architecture::Cnn { channels, hidden } => (shape.to_vec(), channels, hidden),
        };
        let mut convs = Vec::new();
        let mut width = shape.iter().product::<usize>();
        if let [c, h, w] = planes[..] {
            let mut inputs = c;
            for (i, &out) in channels.iter().enumerate() {
                convs.push(b.conv(&format!("{prefix}.conv{i}"), inputs, out)?);
                inputs = out;
            }
            width = inputs * h * w;
        }
        let mut linears = Vec::new();
        for (i, &units) in hidden.iter().enumerate() {
            linears.push(b.linear(&format!("{prefix}.fc{i}"), width, units, 2f32.sqrt())?);
            width = units;
        }
        let tanh = planes.is_empty();
        Ok((
            Self {
                planes,
                convs,
                linears,
                tanh,
            },
            width,
        ))
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut x = x.clone();
        if let [c, h, w] = self.planes[..] {
            let batch = x.dim(0)?;
            x = x.reshape((batch, c, h, w))?;
            for conv in &self.convs {
                x = conv.forward(&x)?.relu()?;
            }
            x = x.flatten_from(1)?;
        }
        for layer in &self.linears {
            let y = layer.forward(&x)?;
            x = if self.tanh { y.tanh()? } else { y.relu()? };
        }
        Ok(x)
    }
}

/// What a network is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetShape {
    /// The observation's shape (the symbolic tensor's).
    pub obs_shape: Vec<usize>,
    /// Number of discrete actions.
    pub actions: usize,
    /// The layers.
    pub architecture: Architecture,
    /// Agents whose observations the critic reads (the agent's own first, then its
    /// teammates'): 1 for independent critics, the team's size for a centralised one
    /// (MAPPO).
    pub critic_agents: usize,
}

impl NetShape {
    /// A network with an independent critic.
    pub fn new(obs_shape: Vec<usize>, actions: usize, architecture: Architecture) -> Self {
        Self {
            obs_shape,
            actions,
            architecture,
            critic_agents: 1,
        }
    }

    /// Values in one observation.
    pub fn obs_len(&self) -> usize {
        self.obs_shape.iter().product()
    }

    /// Values in one critic input.
    pub fn critic_len(&self) -> usize {
        self.obs_len() * self.critic_agents
    }

    /// The critic input's shape: the observations stacked along the first dimension (for
    /// planes, as more channels).
    fn critic_shape(&self) -> Vec<usize> {
        let mut shape = self.obs_shape.clone();
        if let Some(first) = shape.first_mut() {
            *first *= self.critic_agents;
        }
        shape
    }
}

/// The policy (actor) and value (critic) networks, each with its own trunk.
#[derive(Clone, Debug)]
pub struct ActorCritic {
    shape: NetShape,
    actor: Trunk,
    policy_head: Linear,
    critic: Trunk,
    value_head: Linear,
    params: Params,
}

impl ActorCritic {
    /// A fresh network with weights drawn from `seed`.
    pub fn new(shape: NetShape, seed: u64) -> Result<Self> {
        Self::build(shape, Source::Init(Box::new(seeded(seed))))
    }

    /// A network with the weights in `tensors` (as answered by [`Params::tensors`]).
    pub fn from_tensors(shape: NetShape, tensors: HashMap<String, Tensor>) -> Result<Self> {
        Self::build(shape, Source::Loaded(tensors))
    }

    fn build(shape: NetShape, source: Source) -> Result<Self> {
        shape
            .architecture
            .check(&shape.obs_shape)
            .and_then(|()| {
                (shape.critic_agents > 0)
                    .then_some(())
                    .ok_or_else(|| "the critic reads no agent".to_owned())
            })
            .map_err(|problem| RlError::Corrupt {
                path: Default::default(),
                problem,
            })?;
        let mut b = Builder {
            source,
            params: Params::default(),
        };
        let (actor, width) = Trunk::build(&mut b, "actor", &shape.architecture, &shape.obs_shape)?;
        let policy_head = b.linear("actor.head", width, shape.actions, 0.01)?;
        let (critic, width) =
            Trunk::build(&mut b, "critic", &shape.architecture, &shape.critic_shape())?;
        let value_head = b.linear("critic.head", width, 1, 1.0)?;
        if let Source::Loaded(rest) = &b.source
            && let Some(name) = rest.keys().min()
        {
            return Err(RlError::Corrupt {
                path: Default::default(),
                problem: format!("parameter `{name}` is not part of the architecture"),
            });
        }
        Ok(Self {
            shape,
            actor,
            policy_head,
            critic,
            value_head,
            params: b.params,
        })
    }

    /// What the network reads and answers.
    pub fn shape(&self) -> &NetShape {
        &self.shape
    }

    /// A copy that keeps its weights while this network trains on.
    pub fn snapshot(&self) -> Result<Self> {
        let tensors = self
            .params
            .iter()
            .map(|(name, var)| Ok((name.clone(), var.as_tensor().copy()?)))
            .collect::<Result<HashMap<_, _>>>()?;
        Self::from_tensors(self.shape.clone(), tensors)
    }

    /// The trainable parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Action logits `[batch, actions]` for observations `[batch, obs_len]`.
    pub fn logits(&self, obs: &Tensor) -> Result<Tensor> {
        Ok(self.policy_head.forward(&self.actor.forward(obs)?)?)
    }

    /// For MLPs, the actor and the critic as plain-Rust stacks with the current weights
    /// (fast inference, see [`crate::dense`]); `None` for CNNs.
    pub fn dense(&self) -> Result<Option<(DenseStack, DenseStack)>> {
        if !self.actor.convs.is_empty() || !self.actor.tanh {
            return Ok(None);
        }
        Ok(Some((
            DenseStack::new(&self.actor.linears, &self.policy_head)?,
            DenseStack::new(&self.critic.linears, &self.value_head)?,
        )))
    }

    /// State values `[batch]` for critic inputs `[batch, critic_len]`.
    pub fn values(&self, obs: &Tensor) -> Result<Tensor> {
        Ok(self
            .value_head
            .forward(&self.critic.forward(obs)?)?
            .squeeze(1)?)
    }
}

/// The observations of `rows` agents as one `[rows, obs_len]` tensor.
pub fn batch(data: &[f32], rows: usize, obs_len: usize) -> Result<Tensor> {
    Ok(Tensor::from_slice(data, (rows, obs_len), &Device::Cpu)?)
}

/// Chooses an action from one row of logits, never an illegal one (`legal` empty: all are
/// legal): the most likely when `rng` is `None`, else a draw from the masked softmax.
/// Answers the action and its log-probability under the masked distribution.
///
/// ```
/// use mosaic_rl::net::choose;
/// let (action, _) = choose(&[5.0, 1.0, 3.0], &[false, true, true], None);
/// assert_eq!(action, 2);
/// let mut rng = mosaic_core::rng::seeded(1);
/// for _ in 0..100 {
///     assert_ne!(choose(&[9.0, 0.0, 0.0], &[false, true, true], Some(&mut rng)).0, 0);
/// }
/// ```
pub fn choose(logits: &[f32], legal: &[bool], rng: Option<&mut Rng>) -> (usize, f32) {
    let allowed = |i: usize| legal.get(i).copied().unwrap_or(legal.is_empty());
    let max = (0..logits.len())
        .filter(|&i| allowed(i))
        .map(|i| logits[i])
        .fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        // Nothing legal: the session replaces whatever we answer with its fallback.
        return (0, 0.0);
    }
    let total: f32 = (0..logits.len())
        .filter(|&i| allowed(i))
        .map(|i| (logits[i] - max).exp())
        .sum();
    let log_total = total.ln();
    let action = match rng {
        None => (0..logits.len())
            .filter(|&i| allowed(i))
            .fold(None, |best: Option<usize>, i| match best {
                Some(b) if logits[b] >= logits[i] => Some(b),
                _ => Some(i),
            })
            .unwrap_or(0),
        Some(rng) => {
            let mut target = rng.random::<f32>() * total;
            let mut last = 0;
            let mut picked = None;
            for i in (0..logits.len()).filter(|&i| allowed(i)) {
                last = i;
                target -= (logits[i] - max).exp();
                if target < 0.0 {
                    picked = Some(i);
                    break;
                }
            }
            // Rounding can leave a sliver of probability past the last legal action.
            picked.unwrap_or(last)
        }
    };
    (action, logits[action] - max - log_total)
}

/// The additive mask of one agent's legal actions: 0 where legal, [`MASKED_LOGIT`] where
/// not (an empty mask allows everything).
pub fn mask_row(legal: &[bool], actions: usize, into: &mut Vec<f32>) {
    into.extend((0..actions).map(|i| {
        if legal.get(i).copied().unwrap_or(legal.is_empty()) {
            0.0
        } else {
            MASKED_LOGIT
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(architecture: Architecture, obs_shape: Vec<usize>) -> NetShape {
        NetShape::new(obs_shape, 5, architecture)
    }

    #[test]
    fn same_seed_same_weights_and_rows_are_independent_of_the_batch() {
        let a = ActorCritic::new(shape(Architecture::default(), vec![12]), 3).unwrap();
        let b = ActorCritic::new(shape(Architecture::default(), vec![12]), 3).unwrap();
        let c = ActorCritic::new(shape(Architecture::default(), vec![12]), 4).unwrap();
        let data: Vec<f32> = (0..48).map(|i| (i as f32 * 0.37).sin()).collect();
        let obs = batch(&data, 4, 12).unwrap();
        let la: Vec<Vec<f32>> = a.logits(&obs).unwrap().to_vec2().unwrap();
        let lb: Vec<Vec<f32>> = b.logits(&obs).unwrap().to_vec2().unwrap();
        let lc: Vec<Vec<f32>> = c.logits(&obs).unwrap().to_vec2().unwrap();
        assert_eq!(la, lb);
        assert_ne!(la, lc);
        // Batched inference answers each row as if it were alone.
        for row in 0..4 {
            let one = batch(&data[row * 12..(row + 1) * 12], 1, 12).unwrap();
            let alone: Vec<Vec<f32>> = a.logits(&one).unwrap().to_vec2().unwrap();
            assert_eq!(alone[0], la[row], "row {row}");
        }
        assert_eq!(a.values(&obs).unwrap().dims(), &[4]);
    }

    #[test]
    fn cnn_reads_planes_and_weights_round_trip() {
        let arch = Architecture::for_shape(&[2, 3, 3]);
        assert!(matches!(arch, Architecture::Cnn { .. }));
        let net = ActorCritic::new(shape(arch.clone(), vec![2, 3, 3]), 1).unwrap();
        let obs = batch(&[0.5; 36], 2, 18).unwrap();
        let logits: Vec<Vec<f32>> = net.logits(&obs).unwrap().to_vec2().unwrap();
        let copy =
            ActorCritic::from_tensors(shape(arch, vec![2, 3, 3]), net.params().tensors()).unwrap();
        assert_eq!(copy.logits(&obs).unwrap().to_vec2::<f32>().unwrap(), logits);
        // Weights of another architecture are refused with the parameter's name.
        let err = ActorCritic::from_tensors(
            shape(Architecture::default(), vec![18]),
            net.params().tensors(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("actor.fc0.weight"), "{err}");
        assert!(
            Architecture::default().check(&[]).is_err()
                && Architecture::for_shape(&[3, 3, 3]).check(&[27]).is_err()
        );
    }

    #[test]
    fn masked_choice_follows_the_distribution() {
        let logits = [0.0, (3f32).ln(), 5.0];
        let legal = [true, true, false];
        let mut rng = seeded(9);
        let mut counts = [0; 3];
        for _ in 0..4000 {
            let (a, logp) = choose(&logits, &legal, Some(&mut rng));
            counts[a] += 1;
            let expected = if a == 0 { 0.25f32 } else { 0.75f32 }.ln();
            assert!((logp - expected).abs() < 1e-5);
        }
        assert_eq!(counts[2], 0);
        assert!((2800..3200).contains(&counts[1]), "{counts:?}");
        assert_eq!(choose(&logits, &[false; 3], None), (0, 0.0));
        assert_eq!(choose(&logits, &[], None).0, 2);
        let mut mask = Vec::new();
        mask_row(&legal, 3, &mut mask);
        assert_eq!(mask, vec![0.0, 0.0, MASKED_LOGIT]);
    }
}
