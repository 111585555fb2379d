//! PPO's update: generalised advantage estimation, the clipped surrogate loss with masked
//! actions, and Adam with a global gradient-norm limit.
//!
//! Recurrent networks train on sequences: each agent's stream of transitions is cut into
//! chunks of `sequence_length` transitions, each unrolled from the state recorded before
//! its first transition (truncated backpropagation through time), the state restarting
//! from zero where an episode starts inside a chunk; minibatches are whole chunks.

use super::config::PpoConfig;
use super::rollout::Stream;
use crate::error::Result;
use crate::net::{ActorCritic, NetShape, Sequences};
use candle_core::backprop::GradStore;
use candle_core::{D, DType, Device, Tensor};
use mosaic_core::rng::Rng;
use rand::seq::SliceRandom as _;
use std::collections::HashMap;
use std::ops::Range;

/// Adam over a network's parameters, with state that checkpoints can save.
#[derive(Debug)]
pub struct Adam {
    /// Steps taken.
    pub t: u64,
    /// First and second moments per parameter name.
    pub(super) moments: HashMap<String, (Tensor, Tensor)>,
}

impl Adam {
    pub(super) const BETA1: f64 = 0.9;
    pub(super) const BETA2: f64 = 0.999;
    pub(super) const EPS: f64 = 1e-5;

    /// Fresh state for `net`.
    pub fn new(net: &ActorCritic) -> Result<Self> {
        let mut moments = HashMap::new();
        for (name, var) in net.params().iter() {
            let zeros = var.zeros_like()?;
            moments.insert(name.clone(), (zeros.clone(), zeros));
        }
        Ok(Self { t: 0, moments })
    }

    /// State saved by [`Adam::tensors`] (with its step count).
    pub fn from_tensors(
        net: &ActorCritic,
        t: u64,
        mut tensors: HashMap<String, Tensor>,
    ) -> Result<Self> {
        let mut adam = Self::new(net)?;
        adam.t = t;
        for (name, (m, v)) in adam.moments.iter_mut() {
            if let (Some(saved_m), Some(saved_v)) = (
                tensors.remove(&format!("m.{name}")),
                tensors.remove(&format!("v.{name}")),
            ) {
                *m = saved_m;
                *v = saved_v;
            }
        }
        Ok(adam)
    }

    /// The moments by name, for a checkpoint.
    pub fn tensors(&self) -> HashMap<String, Tensor> {
        self.moments
            .iter()
            .flat_map(|(name, (m, v))| {
                [
                    (format!("m.{name}"), m.clone()),
                    (format!("v.{name}"), v.clone()),
                ]
            })
            .collect()
    }

    /// One step of size `lr` after scaling the gradients to a global norm of at most
    /// `max_norm`.
    fn step(&mut self, net: &ActorCritic, grads: &GradStore, lr: f64, max_norm: f32) -> Result<()> {
        let mut squares = 0f32;
        for (_, var) in net.params().iter() {
            if let Some(g) = grads.get(var.as_tensor()) {
                squares += g.sqr()?.sum_all()?.to_scalar::<f32>()?;
            }
        }
        let norm = squares.sqrt();
        let scale = if norm > max_norm {
            f64::from(max_norm / (norm + 1e-6))
        } else {
            1.0
        };
        self.t += 1;
        let t = self.t as i32;
        let (bias1, bias2) = (1.0 - Self::BETA1.powi(t), 1.0 - Self::BETA2.powi(t));
        for (name, var) in net.params().iter() {
            let Some(g) = grads.get(var.as_tensor()) else {
                continue;
            };
            let g = (g * scale)?;
            let Some((m, v)) = self.moments.get_mut(name) else {
                continue;
            };
            *m = ((&*m * Self::BETA1)? + (&g * (1.0 - Self::BETA1))?)?;
            *v = ((&*v * Self::BETA2)? + (g.sqr()? * (1.0 - Self::BETA2))?)?;
            let step = ((&*m / bias1)? / ((&*v / bias2)?.sqrt()? + Self::EPS)?)?;
            var.set(&(var.as_tensor() - (step * lr)?)?)?;
        }
        Ok(())
    }
}

/// Training batch of one group: its agents' complete transitions with advantages.
#[derive(Debug, Default)]
pub struct Batch {
    pub(super) obs: Vec<f32>,
    pub(super) critic: Vec<f32>,
    pub(super) masks: Vec<f32>,
    pub(super) actions: Vec<u32>,
    pub(super) logps: Vec<f32>,
    pub(super) advantages: Vec<f32>,
    pub(super) returns: Vec<f32>,
    /// Recurrent networks: the state before each transition (the actor's, then the
    /// critic's).
    pub(super) states: Vec<f32>,
    /// Recurrent networks: whether the state restarts from zero before each transition (its
    /// episode starts there, after another one of the same stream).
    pub(super) restarts: Vec<bool>,
    /// Recurrent networks: the training sequences, at most `sequence_length` consecutive
    /// transitions of one stream each.
    pub(super) chunks: Vec<Range<usize>>,
    /// Transitions per training sequence.
    sequence_length: usize,
}

impl Batch {
    /// An empty batch whose recurrent streams are cut into sequences of `sequence_length`
    /// transitions (at least 1).
    pub fn new(sequence_length: usize) -> Self {
        Self {
            sequence_length: sequence_length.max(1),
            ..Self::default()
        }
    }

    /// Transitions held.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Adds the complete transitions of `stream`, with GAE advantages; the value of an
    /// open last transition bootstraps the one before it.
    pub fn push(&mut self, stream: &Stream, shape: &NetShape, gamma: f32, lambda: f32) {
        let (obs_len, actions) = (shape.obs_len(), shape.actions);
        let complete = stream.complete();
        let start = self.advantages.len();
        self.advantages.resize(start + complete, 0.0);
        let mut gae = 0f32;
        for t in (0..complete).rev() {
            let live = if stream.dones[t] { 0.0 } else { 1.0 };
            let next_value = stream.values.get(t + 1).copied().unwrap_or(0.0);
            let delta = stream.rewards[t] + gamma * next_value * live - stream.values[t];
            gae = delta + gamma * lambda * live * gae;
            self.advantages[start + t] = gae;
        }
        self.returns.extend(
            self.advantages[start..]
                .iter()
                .zip(&stream.values)
                .map(|(a, v)| a + v),
        );
        self.obs
            .extend_from_slice(&stream.obs[..complete * obs_len]);
        self.critic
            .extend_from_slice(&stream.critic[..complete * shape.critic_len()]);
        self.masks
            .extend_from_slice(&stream.masks[..complete * actions]);
        self.actions.extend_from_slice(&stream.actions[..complete]);
        self.logps.extend_from_slice(&stream.logps[..complete]);
        let state_len = shape.training_state_len();
        if state_len > 0 {
            self.states
                .extend_from_slice(&stream.states[..complete * state_len]);
            self.restarts
                .extend((0..complete).map(|t| t > 0 && stream.dones[t - 1]));
            let length = self.sequence_length.max(1);
            self.chunks.extend(
                (start..start + complete)
                    .step_by(length)
                    .map(|first| first..(first + length).min(start + complete)),
            );
        }
    }
}

/// Losses of one update, averaged over its minibatches.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Losses {
    /// Clipped surrogate (policy) loss.
    pub policy: f32,
    /// Value loss.
    pub value: f32,
    /// Mean policy entropy.
    pub entropy: f32,
    /// Mean approximate KL divergence from the collecting policy.
    pub approx_kl: f32,
    /// Transitions trained on.
    pub transitions: usize,
}

/// PPO's update of `net` on `batch`; minibatch order drawn from `rng`. MLPs train through
/// the plain-Rust passes of `train::mlp_update`, CNNs through candle's autograd
/// ([`update_autograd`]); both compute the same update up to float rounding. With
/// `threads` above one, an MLP's actor and critic are differentiated at once on two
/// threads; the result does not depend on `threads`.
pub fn update(
    net: &ActorCritic,
    adam: &mut Adam,
    batch: &Batch,
    config: &PpoConfig,
    lr: f64,
    rng: &mut Rng,
    threads: usize,
) -> Result<Losses> {
    if super::mlp_update::supports(net) {
        super::mlp_update::update(net, adam, batch, config, lr, rng, threads)
    } else {
        update_autograd(net, adam, batch, config, lr, rng)
    }
}

/// A minibatch as tensors.
pub(super) struct Minibatch {
    pub(super) obs: Tensor,
    pub(super) critic: Tensor,
    pub(super) masks: Tensor,
    pub(super) actions: Tensor,
    pub(super) old_logps: Tensor,
    /// Normalised over the minibatch.
    pub(super) advantages: Tensor,
    pub(super) returns: Tensor,
}

/// The loss of a minibatch and its terms, as tensors of the autograd graph.
pub(super) struct MinibatchLoss {
    pub(super) loss: Tensor,
    pub(super) policy: Tensor,
    pub(super) value: Tensor,
    pub(super) entropy: Tensor,
    pub(super) approx_kl: Tensor,
}

/// PPO's loss on `mb`: clipped surrogate, minus the entropy bonus, plus the value loss.
pub(super) fn minibatch_loss(
    net: &ActorCritic,
    mb: &Minibatch,
    config: &PpoConfig,
) -> Result<MinibatchLoss> {
    loss_of(&net.logits(&mb.obs)?, net.values(&mb.critic)?, mb, config)
}

/// PPO's loss on `mb` given the network's `logits` and `values` of its rows.
fn loss_of(
    logits: &Tensor,
    values: Tensor,
    mb: &Minibatch,
    config: &PpoConfig,
) -> Result<MinibatchLoss> {
    let logits = logits.add(&mb.masks)?;
    let log_probs = candle_nn::ops::log_softmax(&logits, D::Minus1)?;
    let logp = log_probs.gather(&mb.actions, 1)?.squeeze(1)?;
    let log_ratio = (&logp - &mb.old_logps)?;
    let ratio = log_ratio.exp()?;
    let clipped = ratio.clamp(1.0 - config.clip, 1.0 + config.clip)?;
    let adv = &mb.advantages;
    let surrogate = (&ratio * adv)?.minimum(&(clipped * adv)?)?;
    let policy = surrogate.mean_all()?.neg()?;
    let entropy = (log_probs.exp()? * &log_probs)?.sum(1)?.mean_all()?.neg()?;
    let value = ((values - &mb.returns)?.sqr()?.mean_all()? * 0.5)?;
    let loss = ((&policy - (&entropy * f64::from(config.entropy_coef))?)?
        + (&value * f64::from(config.value_coef))?)?;
    // k3 estimator of KL(old || new): (r - 1) - log r.
    let approx_kl = ((&ratio - 1.0)? - &log_ratio)?.mean_all()?;
    Ok(MinibatchLoss {
        loss,
        policy,
        value,
        entropy,
        approx_kl,
    })
}

impl Minibatch {
    /// The whole of `batch` as tensors (advantages as they are).
    pub(super) fn whole(batch: &Batch, shape: &NetShape) -> Result<Self> {
        let n = batch.len();
        let dev = Device::Cpu;
        Ok(Self {
            obs: Tensor::from_slice(&batch.obs, (n, shape.obs_len()), &dev)?,
            critic: Tensor::from_slice(&batch.critic, (n, shape.critic_len()), &dev)?,
            masks: Tensor::from_slice(&batch.masks, (n, shape.actions), &dev)?,
            actions: Tensor::from_slice(&batch.actions, (n, 1), &dev)?,
            old_logps: Tensor::from_slice(&batch.logps, n, &dev)?,
            advantages: Tensor::from_slice(&batch.advantages, n, &dev)?,
            returns: Tensor::from_slice(&batch.returns, n, &dev)?,
        })
    }

    /// Rows `idx` of this whole batch, advantages normalised over them.
    pub(super) fn rows(&self, idx: &[u32]) -> Result<Self> {
        let idx = Tensor::from_slice(idx, idx.len(), &Device::Cpu)?;
        let pick = |t: &Tensor| t.index_select(&idx, 0);
        let adv = pick(&self.advantages)?;
        let advantages = if idx.dim(0)? > 1 {
            let mean = adv.mean_all()?;
            let centred = adv.broadcast_sub(&mean)?;
            let std = centred.sqr()?.mean_all()?.sqrt()?;
            centred.broadcast_div(&(std + 1e-8)?)?
        } else {
            adv
        };
        Ok(Self {
            obs: pick(&self.obs)?,
            critic: pick(&self.critic)?,
            masks: pick(&self.masks)?,
            actions: pick(&self.actions)?,
            old_logps: pick(&self.old_logps)?,
            advantages,
            returns: pick(&self.returns)?,
        })
    }
}

/// PPO's update of `net` on `batch` through candle's autograd, for any architecture;
/// minibatch order drawn from `rng`.
pub fn update_autograd(
    net: &ActorCritic,
    adam: &mut Adam,
    batch: &Batch,
    config: &PpoConfig,
    lr: f64,
    rng: &mut Rng,
) -> Result<Losses> {
    let n = batch.len();
    if n == 0 {
        return Ok(Losses::default());
    }
    let whole = Minibatch::whole(batch, net.shape())?;
    // Minibatches draw transitions, or for a recurrent network whole sequences.
    let recurrent = net.shape().gru_units().is_some();
    let units = if recurrent { batch.chunks.len() } else { n };
    let size = units.div_ceil(config.minibatches).max(1);
    let mut order: Vec<u32> = (0..units as u32).collect();
    let mut sums = Losses::default();
    let mut count = 0f32;
    for _ in 0..config.epochs {
        order.shuffle(rng);
        for picked in order.chunks(size) {
            let terms = if recurrent {
                sequence_loss(net, &whole, batch, picked, config)?
            } else {
                minibatch_loss(net, &whole.rows(picked)?, config)?
            };
            let grads = terms.loss.backward()?;
            adam.step(net, &grads, lr, config.max_grad_norm)?;
            sums.policy += terms.policy.to_dtype(DType::F32)?.to_scalar::<f32>()?;
            sums.value += terms.value.to_scalar::<f32>()?;
            sums.entropy += terms.entropy.to_scalar::<f32>()?;
            sums.approx_kl += terms.approx_kl.to_scalar::<f32>()?;
            count += 1.0;
        }
    }
    Ok(Losses {
        policy: sums.policy / count,
        value: sums.value / count,
        entropy: sums.entropy / count,
        approx_kl: sums.approx_kl / count,
        transitions: n,
    })
}

/// PPO's loss on the sequences `picked` of `batch` (whose tensors are `whole`), unrolled
/// together time step by time step.
fn sequence_loss(
    net: &ActorCritic,
    whole: &Minibatch,
    batch: &Batch,
    picked: &[u32],
    config: &PpoConfig,
) -> Result<MinibatchLoss> {
    let shape = net.shape();
    let units = shape.gru_units().unwrap_or(0);
    let (obs_len, critic_len, state_len) = (
        shape.obs_len(),
        shape.critic_len(),
        shape.training_state_len(),
    );
    let chunks: Vec<&Range<usize>> = picked.iter().map(|&c| &batch.chunks[c as usize]).collect();
    let sequences = chunks.len();
    let steps = chunks.iter().map(|c| c.len()).max().unwrap_or(0);
    let rows = steps * sequences;
    // Time-major rows, padded where a sequence is shorter than the longest.
    let mut obs = vec![0f32; rows * obs_len];
    let mut critic = vec![0f32; rows * critic_len];
    let mut keep = vec![1f32; rows];
    let mut actor_state = Vec::with_capacity(sequences * units);
    let mut critic_state = Vec::with_capacity(sequences * units);
    for chunk in &chunks {
        let state = &batch.states[chunk.start * state_len..(chunk.start + 1) * state_len];
        actor_state.extend_from_slice(&state[..units]);
        critic_state.extend_from_slice(&state[units..]);
    }
    // The padded rows' positions that hold transitions, and those transitions.
    let mut filled = Vec::with_capacity(rows);
    let mut transitions = Vec::with_capacity(rows);
    for t in 0..steps {
        for (s, chunk) in chunks.iter().enumerate() {
            let i = chunk.start + t;
            if i >= chunk.end {
                continue;
            }
            let row = t * sequences + s;
            obs[row * obs_len..(row + 1) * obs_len]
                .copy_from_slice(&batch.obs[i * obs_len..(i + 1) * obs_len]);
            critic[row * critic_len..(row + 1) * critic_len]
                .copy_from_slice(&batch.critic[i * critic_len..(i + 1) * critic_len]);
            // A chunk's first state was recorded as it was, restart or not.
            if t > 0 && batch.restarts[i] {
                keep[row] = 0.0;
            }
            filled.push(row as u32);
            transitions.push(i as u32);
        }
    }
    let dev = Device::Cpu;
    let input = Sequences {
        obs: Tensor::from_vec(obs, (rows, obs_len), &dev)?,
        critic: Tensor::from_vec(critic, (rows, critic_len), &dev)?,
        actor_state: Tensor::from_vec(actor_state, (sequences, units), &dev)?,
        critic_state: Tensor::from_vec(critic_state, (sequences, units), &dev)?,
        keep: Tensor::from_vec(keep, (rows, 1), &dev)?,
        steps,
    };
    let (logits, values) = net.unroll(&input)?;
    let filled = Tensor::from_vec(filled, transitions.len(), &dev)?;
    let mb = whole.rows(&transitions)?;
    loss_of(
        &logits.index_select(&filled, 0)?,
        values.index_select(&filled, 0)?,
        &mb,
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gae_bootstraps_from_the_open_transition_and_stops_at_episode_ends() {
        let stream = Stream {
            obs: vec![0.0; 4],
            critic: vec![0.0; 4],
            masks: vec![0.0; 4],
            actions: vec![0, 0, 0, 0],
            logps: vec![0.0; 4],
            values: vec![0.5, 0.5, 1.0, 2.0],
            rewards: vec![0.0, 1.0, 0.0, 0.0],
            dones: vec![false, true, false, false],
            states: Vec::new(),
        };
        let mut batch = Batch::default();
        batch.push(
            &stream,
            &NetShape::new(vec![1], 1, Default::default()),
            0.5,
            1.0,
        );
        // The open last transition is not trained on; it bootstraps the third.
        assert_eq!(batch.len(), 3);
        let third = 0.0 + 0.5 * 2.0 - 1.0;
        let second = 1.0 - 0.5;
        let first = 0.0 + 0.5 * 0.5 - 0.5 + 0.5 * second;
        assert_eq!(batch.advantages, vec![first, second, third]);
        assert_eq!(batch.returns[1], 1.0);
    }
}
