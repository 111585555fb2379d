//! The actor-critic networks: an MLP over flat observations, or a small CNN over symbolic
//! planes (`[channels, height, width]`), either optionally followed by a GRU layer that
//! carries a recurrent state from step to step.
//!
//! # Recurrent (GRU) networks
//!
//! With `gru = H`, each trunk (actor and critic) ends in its own GRU layer of `H` units
//! between its encoder layers and its head, as Stable-Baselines3's recurrent PPO does by
//! default (separate recurrent layers for actor and critic): the trunks stay independent,
//! the policy acts without the critic, and MAPPO's centralised critic keeps reading the
//! team's observations. The state one agent carries is the actor's `H` values (plus the
//! critic's `H` during training).
//!
//! The layer follows PyTorch's `torch.nn.GRU` (gates in the order reset, update, new):
//!
//! ```text
//! r  = σ(W_ir x + b_ir + W_hr h + b_hr)
//! z  = σ(W_iz x + b_iz + W_hz h + b_hz)
//! n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//! h' = (1 − z) ⊙ n + z ⊙ h
//! ```
//!
//! Its parameters are `{actor,critic}.gru.weight_ih` (`[3H, inputs]`, rows `W_ir`, `W_iz`,
//! `W_in`), `.weight_hh` (`[3H, H]`), `.bias_ih` and `.bias_hh` (`[3H]`): those of a
//! one-layer `torch.nn.GRU` (`weight_ih_l0`, `weight_hh_l0`, `bias_ih_l0`, `bias_hh_l0`),
//! initialised like PyTorch's (uniform in ±1/√H).
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
/// let recurrent: Architecture =
///     serde_json::from_str(r#"{"type": "mlp", "hidden": [64], "gru": 64}"#).unwrap();
/// assert_eq!(recurrent.gru(), Some(64));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Architecture {
    /// Fully connected layers with tanh over the flattened observation.
    Mlp {
        /// Units of each hidden layer.
        hidden: Vec<usize>,
        /// Units of a GRU layer after the hidden layers (none: feed-forward).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gru: Option<usize>,
    },
    /// 3×3 convolutions (padding 1, ReLU) over `[channels, height, width]` observations,
    /// then fully connected ReLU layers.
    Cnn {
        /// Output channels of each convolution.
        channels: Vec<usize>,
        /// Units of each hidden layer after the convolutions.
        hidden: Vec<usize>,
        /// Units of a GRU layer after the hidden layers (none: feed-forward).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gru: Option<usize>,
    },
}

impl Default for Architecture {
    /// Two hidden layers of 64 units.
    fn default() -> Self {
        Architecture::Mlp {
            hidden: vec![64, 64],
            gru: None,
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
                gru: None,
            },
            _ => Architecture::default(),
        }
    }

    /// Units of the GRU layer, if the network is recurrent.
    pub fn gru(&self) -> Option<usize> {
        match self {
            Architecture::Mlp { gru, .. } | Architecture::Cnn { gru, .. } => *gru,
        }
    }

    /// Checks that the architecture can read observations of `shape`.
    pub fn check(&self, shape: &[usize]) -> std::result::Result<(), String> {
        let layers_ok = match self {
            Architecture::Mlp { hidden, .. } => hidden.iter().all(|&h| h > 0),
            Architecture::Cnn {
                channels, hidden, ..
            } => !channels.is_empty() && channels.iter().chain(hidden).all(|&h| h > 0),
        } && self.gru() != Some(0);
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

/// A GRU layer: PyTorch's equations and parameter layout (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Gru {
    /// `W_ih`, `b_ih`: the three gates' weights of the input, rows in gate order.
    input: Linear,
    /// `W_hh`, `b_hh`: the three gates' weights of the previous state.
    recurrent: Linear,
    units: usize,
}

impl Gru {
    fn build(b: &mut Builder, name: &str, inputs: usize, units: usize) -> Result<Self> {
        let bound = 1.0 / (units as f32).sqrt();
        let gates = 3 * units;
        let weight_ih = b.param(&format!("{name}.weight_ih"), &[gates, inputs], bound)?;
        let weight_hh = b.param(&format!("{name}.weight_hh"), &[gates, units], bound)?;
        let bias_ih = b.param(&format!("{name}.bias_ih"), &[gates], bound)?;
        let bias_hh = b.param(&format!("{name}.bias_hh"), &[gates], bound)?;
        Ok(Self {
            input: Linear::new(weight_ih, Some(bias_ih)),
            recurrent: Linear::new(weight_hh, Some(bias_hh)),
            units,
        })
    }

    /// The next states `[rows, units]` after reading `x` `[rows, inputs]` in states `h`.
    pub(crate) fn step(&self, x: &Tensor, h: &Tensor) -> Result<Tensor> {
        let u = self.units;
        let from_input = self.input.forward(x)?;
        let from_state = self.recurrent.forward(h)?;
        // The reset and update gates together, one sigmoid over both.
        let gates = candle_nn::ops::sigmoid(
            &(from_input.narrow(1, 0, 2 * u)? + from_state.narrow(1, 0, 2 * u)?)?,
        )?;
        let (reset, update) = (gates.narrow(1, 0, u)?, gates.narrow(1, u, u)?);
        let candidate = (from_input.narrow(1, 2 * u, u)?
            + (reset * from_state.narrow(1, 2 * u, u)?)?)?
        .tanh()?;
        // (1 − z) ⊙ n + z ⊙ h, written n + z ⊙ (h − n).
        Ok((&candidate + (update * (h - &candidate)?)?)?)
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
    /// The recurrent layer after the others, if any.
    gru: Option<Gru>,
}

impl Trunk {
    fn build(
        b: &mut Builder,
        prefix: &str,
        architecture: &Architecture,
        shape: &[usize],
    ) -> Result<(Self, usize)> {
        let (planes, channels, hidden): (Vec<usize>, &[usize], &[usize]) = match architecture {
            Architecture::Mlp { hidden, .. } => (Vec::new(), &[], hidden),
            Architecture::Cnn {
                channels, hidden, ..
            } => (shape.to_vec(), channels, hidden),
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
        let gru = match architecture.gru() {
            Some(units) => {
                let gru = Gru::build(b, &format!("{prefix}.gru"), width, units)?;
                width = units;
                Some(gru)
            }
            None => None,
        };
        Ok((
            Self {
                planes,
                convs,
                linears,
                tanh,
                gru,
            },
            width,
        ))
    }

    /// The features of `x` and, for a recurrent trunk, the next states: from `state`
    /// (`[rows, units]`), or from zeros when it is `None`.
    fn step(&self, x: &Tensor, state: Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)> {
        let features = self.encode(x)?;
        let Some(gru) = &self.gru else {
            return Ok((features, None));
        };
        let next = match state {
            Some(h) => gru.step(&features, h)?,
            None => {
                let zeros = Tensor::zeros((features.dim(0)?, gru.units), DType::F32, x.device())?;
                gru.step(&features, &zeros)?
            }
        };
        Ok((next.clone(), Some(next)))
    }

    /// The features of `steps` time steps of sequences read time-major (`x`: row
    /// `t × sequences + s` is step `t` of sequence `s`), from initial states `state`
    /// (`[sequences, units]`); `keep` (`[rows, 1]`) is 0 where the state restarts from zero
    /// before the row's step (a new episode), else 1.
    fn unroll(&self, x: &Tensor, state: &Tensor, keep: &Tensor, steps: usize) -> Result<Tensor> {
        let Some(gru) = &self.gru else {
            return self.encode(x);
        };
        let sequences = state.dim(0)?;
        let mut h = state.clone();
        let mut outputs = Vec::with_capacity(steps);
        for t in 0..steps {
            let rows = t * sequences;
            // Each step encodes its own rows: a slice of the input, which needs no gradient,
            // rather than of the encoded whole, whose every slice would send back a
            // gradient as large as the whole.
            let features = self.encode(&x.narrow(0, rows, sequences)?)?;
            h = h.broadcast_mul(&keep.narrow(0, rows, sequences)?)?;
            h = gru.step(&features, &h)?;
            outputs.push(h.clone());
        }
        Ok(Tensor::cat(&outputs, 0)?)
    }

    /// The layers before the recurrent one.
    fn encode(&self, x: &Tensor) -> Result<Tensor> {
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

    /// Units of each trunk's GRU layer, if the network is recurrent.
    pub fn gru_units(&self) -> Option<usize> {
        self.architecture.gru()
    }

    /// Values of recurrent state a learning agent carries between steps: the actor's GRU
    /// state, then the critic's (0 for feed-forward networks).
    pub fn training_state_len(&self) -> usize {
        self.gru_units().map_or(0, |units| 2 * units)
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

    /// Action logits `[batch, actions]` for observations `[batch, obs_len]` (a recurrent
    /// network reads them from its initial, zero state; see [`ActorCritic::logits_step`]).
    pub fn logits(&self, obs: &Tensor) -> Result<Tensor> {
        Ok(self.logits_step(obs, None)?.0)
    }

    /// Action logits `[batch, actions]` for observations `[batch, obs_len]` read in the
    /// actor's recurrent states `state` (`[batch, units]`; `None`: zeros), and for a
    /// recurrent network the states after reading them.
    pub fn logits_step(
        &self,
        obs: &Tensor,
        state: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (features, next) = self.actor.step(obs, state)?;
        Ok((self.policy_head.forward(&features)?, next))
    }

    /// State values `[batch]` for critic inputs `[batch, critic_len]` read in the critic's
    /// recurrent states `state` (`[batch, units]`; `None`: zeros), and for a recurrent
    /// network the states after reading them.
    pub fn values_step(
        &self,
        inputs: &Tensor,
        state: Option<&Tensor>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (features, next) = self.critic.step(inputs, state)?;
        Ok((self.value_head.forward(&features)?.squeeze(1)?, next))
    }

    /// Logits `[rows, actions]` and values `[rows]` of sequences unrolled through time
    /// (truncated backpropagation through time), rows time-major: row `t × sequences + s`
    /// is step `t` of sequence `s`. The sequences start from the actor's and the critic's
    /// states `actor_state` and `critic_state` (`[sequences, units]`); `keep` (`[rows, 1]`)
    /// is 0 where the states restart from zero before the row's step, else 1. A
    /// feed-forward network reads every row alone.
    pub fn unroll(&self, sequences: &Sequences) -> Result<(Tensor, Tensor)> {
        let actor = self.actor.unroll(
            &sequences.obs,
            &sequences.actor_state,
            &sequences.keep,
            sequences.steps,
        )?;
        let critic = self.critic.unroll(
            &sequences.critic,
            &sequences.critic_state,
            &sequences.keep,
            sequences.steps,
        )?;
        Ok((
            self.policy_head.forward(&actor)?,
            self.value_head.forward(&critic)?.squeeze(1)?,
        ))
    }

    /// For feed-forward MLPs, the actor and the critic as plain-Rust stacks with the
    /// current weights (fast inference, see [`crate::dense`]); `None` for CNNs and
    /// recurrent networks.
    pub fn dense(&self) -> Result<Option<(DenseStack, DenseStack)>> {
        if !self.actor.convs.is_empty() || !self.actor.tanh || self.actor.gru.is_some() {
            return Ok(None);
        }
        Ok(Some((
            DenseStack::new(&self.actor.linears, &self.policy_head)?,
            DenseStack::new(&self.critic.linears, &self.value_head)?,
        )))
    }

    /// State values `[batch]` for critic inputs `[batch, critic_len]` (a recurrent
    /// network reads them from its initial, zero state).
    pub fn values(&self, obs: &Tensor) -> Result<Tensor> {
        Ok(self.values_step(obs, None)?.0)
    }
}

/// Sequences of steps for [`ActorCritic::unroll`], rows time-major.
#[derive(Clone, Debug)]
pub struct Sequences {
    /// Observations `[steps × sequences, obs_len]`.
    pub obs: Tensor,
    /// Critic inputs `[steps × sequences, critic_len]`.
    pub critic: Tensor,
    /// The actor's state before each sequence's first step, `[sequences, units]`.
    pub actor_state: Tensor,
    /// The critic's state before each sequence's first step, `[sequences, units]`.
    pub critic_state: Tensor,
    /// `[steps × sequences, 1]`: 0 where the states restart from zero before the row's
    /// step (an episode starts inside the sequence), else 1.
    pub keep: Tensor,
    /// Time steps.
    pub steps: usize,
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
mod tests;
