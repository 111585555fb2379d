//! PPO's update of MLP networks in plain Rust: the forward and backward passes of the
//! actor and the critic, the loss gradients in closed form (masked log-softmax, clipped
//! surrogate, entropy bonus, value loss) and Adam with the global norm limit, on flat
//! `f32` buffers allocated once per update (matrix products written straight into them,
//! see `train::matmul`).
//!
//! It computes what [`super::ppo::update_autograd`] computes through candle's autograd
//! (the same minibatches in the same order, the same formulas; results agree up to float
//! rounding), without a graph of tensors per minibatch (an allocation and a dispatch per
//! operation and parameter) and with a rational tanh instead of libm's, which had taken
//! most of the update's time. The actor's and the critic's passes share nothing but the
//! minibatch, so with more than one thread they run at once, each on its own core; every
//! value is computed by the same operations in the same order either way, so the update
//! does not depend on the thread count. CNNs keep the autograd update.

use super::config::PpoConfig;
use super::matmul::{Matrix, matmul};
use super::ppo::{Adam, Batch, Losses};
use crate::activation::tanh;
use crate::error::{Result, RlError};
use crate::net::{ActorCritic, Architecture};
use candle_core::{Device, Tensor};
use mosaic_core::rng::Rng;
use rand::seq::SliceRandom as _;
use std::ops::Range;

/// Whether [`update`] can train `net` (a feed-forward MLP).
pub(super) fn supports(net: &ActorCritic) -> bool {
    matches!(
        net.shape().architecture,
        Architecture::Mlp { gru: None, .. }
    )
}

/// The error for a network or batch this update cannot train on (also the matrix
/// products' shape errors).
pub(super) fn unfit(problem: String) -> RlError {
    RlError::Tensor(candle_core::Error::Msg(problem))
}

/// A fully connected layer's place in its stack's parameters.
#[derive(Clone, Debug)]
struct Layer {
    weight: Range<usize>,
    bias: Range<usize>,
    inputs: usize,
    outputs: usize,
}

/// Tanh layers and a linear head (an actor or a critic), with its buffers for one
/// minibatch.
#[derive(Debug)]
struct Stack {
    /// Where its parameters lie in the network's flat parameters; the layers' ranges are
    /// relative to its start.
    span: Range<usize>,
    layers: Vec<Layer>,
    /// The input of each layer, then the head's output: `rows × width` each.
    activations: Vec<Vec<f32>>,
    /// Gradient of the loss with respect to the output of the layer being differentiated.
    grad_out: Vec<f32>,
    /// … and with respect to its input.
    grad_in: Vec<f32>,
}

impl Stack {
    /// The stack `prefix.fc0`, `prefix.fc1`, …, `prefix.head` for up to `rows` rows, whose
    /// parameters must lie together in `layout`.
    fn new(
        layout: &Layout,
        prefix: &str,
        inputs: usize,
        hidden: &[usize],
        outputs: usize,
        rows: usize,
    ) -> Result<Self> {
        let mut layers = Vec::with_capacity(hidden.len() + 1);
        let mut width = inputs;
        let names = (0..hidden.len())
            .map(|i| format!("{prefix}.fc{i}"))
            .chain(std::iter::once(format!("{prefix}.head")));
        for (name, &units) in names.zip(hidden.iter().chain(std::iter::once(&outputs))) {
            layers.push(Layer {
                weight: layout.range(&format!("{name}.weight"), units * width)?,
                bias: layout.range(&format!("{name}.bias"), units)?,
                inputs: width,
                outputs: units,
            });
            width = units;
        }
        let ranges = || layers.iter().flat_map(|l| [&l.weight, &l.bias]);
        let start = ranges().map(|r| r.start).min().unwrap_or(0);
        let end = ranges().map(|r| r.end).max().unwrap_or(0);
        if ranges().map(|r| r.len()).sum::<usize>() != end - start {
            return Err(unfit(format!(
                "the parameters of `{prefix}` are not stored together"
            )));
        }
        for layer in &mut layers {
            layer.weight = layer.weight.start - start..layer.weight.end - start;
            layer.bias = layer.bias.start - start..layer.bias.end - start;
        }
        let widest = layers
            .iter()
            .map(|l| l.inputs.max(l.outputs))
            .max()
            .unwrap_or(0);
        let mut activations: Vec<Vec<f32>> = layers
            .iter()
            .map(|l| Vec::with_capacity(rows * l.inputs))
            .collect();
        activations.push(Vec::with_capacity(rows * outputs));
        Ok(Self {
            span: start..end,
            layers,
            activations,
            grad_out: Vec::with_capacity(rows * widest),
            grad_in: Vec::with_capacity(rows * widest),
        })
    }

    /// Fills the input rows: row `i` is row `order[i]` of `data`.
    fn gather(&mut self, data: &[f32], order: &[u32]) {
        let width = self.layers.first().map_or(0, |l| l.inputs);
        let input = &mut self.activations[0];
        input.clear();
        for &row in order {
            let row = row as usize;
            input.extend_from_slice(&data[row * width..(row + 1) * width]);
        }
    }

    /// The forward pass over the gathered `rows` with the stack's `params`; the head's
    /// output is the last activation.
    fn forward(&mut self, params: &[f32], rows: usize) -> Result<()> {
        let last = self.layers.len() - 1;
        for (index, layer) in self.layers.iter().enumerate() {
            let (before, after) = self.activations.split_at_mut(index + 1);
            let (input, output) = (&before[index], &mut after[0]);
            output.resize(rows * layer.outputs, 0.0);
            let weight = Matrix::new(&params[layer.weight.clone()], layer.outputs, layer.inputs);
            matmul(Matrix::new(input, rows, layer.inputs), weight.t(), output)?;
            let bias = &params[layer.bias.clone()];
            for row in output.chunks_exact_mut(layer.outputs) {
                if index < last {
                    for (value, b) in row.iter_mut().zip(bias) {
                        *value = tanh(*value + b);
                    }
                } else {
                    for (value, b) in row.iter_mut().zip(bias) {
                        *value += b;
                    }
                }
            }
        }
        Ok(())
    }

    /// The backward pass from the gradient of the loss with respect to the head's output
    /// (in `grad_out`); writes the gradient of every parameter of the stack into `grads`.
    fn backward(&mut self, params: &[f32], grads: &mut [f32], rows: usize) -> Result<()> {
        for (index, layer) in self.layers.iter().enumerate().rev() {
            let input = &self.activations[index];
            let grad_out = Matrix::new(&self.grad_out, rows, layer.outputs);
            matmul(
                grad_out.t(),
                Matrix::new(input, rows, layer.inputs),
                &mut grads[layer.weight.clone()],
            )?;
            let bias = &mut grads[layer.bias.clone()];
            bias.fill(0.0);
            for row in self.grad_out.chunks_exact(layer.outputs) {
                for (sum, g) in bias.iter_mut().zip(row) {
                    *sum += g;
                }
            }
            if index == 0 {
                break;
            }
            self.grad_in.resize(rows * layer.inputs, 0.0);
            let weight = Matrix::new(&params[layer.weight.clone()], layer.outputs, layer.inputs);
            matmul(grad_out, weight, &mut self.grad_in)?;
            // The input is the previous layer's tanh: d tanh = 1 - tanh².
            for (g, y) in self.grad_in.iter_mut().zip(input) {
                *g *= 1.0 - y * y;
            }
            std::mem::swap(&mut self.grad_out, &mut self.grad_in);
        }
        Ok(())
    }
}

/// The network's parameters laid end to end, in name order (so an actor's parameters all
/// come before its critic's).
#[derive(Debug)]
struct Layout {
    /// Name, place and shape of each parameter.
    entries: Vec<(String, Range<usize>, Vec<usize>)>,
    len: usize,
}

impl Layout {
    fn new(net: &ActorCritic) -> Self {
        let mut entries = Vec::new();
        let mut len = 0;
        for (name, var) in net.params().iter() {
            let count = var.elem_count();
            entries.push((name.clone(), len..len + count, var.dims().to_vec()));
            len += count;
        }
        Self { entries, len }
    }

    /// Where parameter `name` of `count` values lies.
    fn range(&self, name: &str, count: usize) -> Result<Range<usize>> {
        self.entries
            .iter()
            .find(|(n, range, _)| n == name && range.len() == count)
            .map(|(_, range, _)| range.clone())
            .ok_or_else(|| {
                unfit(format!(
                    "the network has no parameter `{name}` of {count} values"
                ))
            })
    }

    /// The values of `tensors` (by parameter name) end to end; `None` for a missing one.
    fn flatten<'a>(&self, mut tensor: impl FnMut(&str) -> Option<&'a Tensor>) -> Result<Vec<f32>> {
        let mut flat = vec![0f32; self.len];
        for (name, range, _) in &self.entries {
            if let Some(t) = tensor(name) {
                flat[range.clone()].copy_from_slice(&t.flatten_all()?.to_vec1::<f32>()?);
            }
        }
        Ok(flat)
    }

    /// Parameter `index` of `flat` as a tensor of its shape.
    fn tensor(&self, flat: &[f32], index: usize) -> Result<(String, Tensor)> {
        let (name, range, dims) = &self.entries[index];
        Ok((
            name.clone(),
            Tensor::from_slice(&flat[range.clone()], dims.as_slice(), &Device::Cpu)?,
        ))
    }
}

/// The minibatch's loss terms, as [`Losses`] reports them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Terms {
    pub(super) policy: f32,
    pub(super) value: f32,
    pub(super) entropy: f32,
    pub(super) approx_kl: f32,
}

/// Per row of the minibatch: normalised advantage, return, old log-probability, action,
/// additive mask.
#[derive(Debug)]
struct Targets {
    actions: usize,
    advantages: Vec<f32>,
    returns: Vec<f32>,
    old_logps: Vec<f32>,
    chosen: Vec<u32>,
    masks: Vec<f32>,
}

/// The actor and the critic of one network with the buffers of one update.
#[derive(Debug)]
pub(super) struct Model {
    layout: Layout,
    actor: Stack,
    critic: Stack,
    targets: Targets,
}

impl Model {
    /// Buffers for minibatches of up to `rows` rows of `net` (an MLP).
    pub(super) fn new(net: &ActorCritic, rows: usize) -> Result<Self> {
        let shape = net.shape();
        let hidden = match &shape.architecture {
            Architecture::Mlp { hidden, gru: None } => hidden.clone(),
            _ => {
                return Err(unfit(
                    "the plain-Rust update trains feed-forward MLPs only".into(),
                ));
            }
        };
        let layout = Layout::new(net);
        let actor = Stack::new(
            &layout,
            "actor",
            shape.obs_len(),
            &hidden,
            shape.actions,
            rows,
        )?;
        let critic = Stack::new(&layout, "critic", shape.critic_len(), &hidden, 1, rows)?;
        if actor.span.end > critic.span.start {
            return Err(unfit(
                "the actor's parameters do not precede the critic's".into(),
            ));
        }
        Ok(Self {
            layout,
            actor,
            critic,
            targets: Targets {
                actions: shape.actions,
                advantages: Vec::with_capacity(rows),
                returns: Vec::with_capacity(rows),
                old_logps: Vec::with_capacity(rows),
                chosen: Vec::with_capacity(rows),
                masks: Vec::with_capacity(rows * shape.actions),
            },
        })
    }

    /// The parameters of `net`, end to end.
    pub(super) fn params(&self, net: &ActorCritic) -> Result<Vec<f32>> {
        let vars: Vec<_> = net.params().iter().collect();
        self.layout.flatten(|name| {
            vars.iter()
                .find(|(n, _)| n.as_str() == name)
                .map(|(_, var)| var.as_tensor())
        })
    }

    /// Writes `params` back into `net`.
    fn store(&self, params: &[f32], net: &ActorCritic) -> Result<()> {
        for (index, (_, var)) in net.params().iter().enumerate() {
            let (_, tensor) = self.layout.tensor(params, index)?;
            var.set(&tensor)?;
        }
        Ok(())
    }

    /// Loads minibatch `order` of `batch`.
    fn gather(&mut self, batch: &Batch, order: &[u32]) -> Result<()> {
        self.actor.gather(&batch.obs, order);
        self.critic.gather(&batch.critic, order);
        let targets = &mut self.targets;
        let actions = targets.actions;
        targets.masks.clear();
        targets.chosen.clear();
        targets.old_logps.clear();
        targets.advantages.clear();
        targets.returns.clear();
        for &row in order {
            let row = row as usize;
            targets
                .masks
                .extend_from_slice(&batch.masks[row * actions..(row + 1) * actions]);
            let action = batch.actions[row];
            if action as usize >= actions {
                return Err(unfit(format!(
                    "action {action} is out of range of the {actions} actions"
                )));
            }
            targets.chosen.push(action);
            targets.old_logps.push(batch.logps[row]);
            targets.advantages.push(batch.advantages[row]);
            targets.returns.push(batch.returns[row]);
        }
        if order.len() > 1 {
            let count = order.len() as f32;
            let advantages = &mut targets.advantages;
            let mean = advantages.iter().sum::<f32>() / count;
            let variance = advantages
                .iter()
                .map(|a| (a - mean) * (a - mean))
                .sum::<f32>()
                / count;
            let std = variance.sqrt();
            for a in advantages.iter_mut() {
                *a = (*a - mean) / (std + 1e-8);
            }
        }
        Ok(())
    }

    /// The loss of the gathered minibatch and its gradient with respect to `params`
    /// (written into `grads`); the actor's and the critic's passes run at once when
    /// `threads` is above one.
    fn gradients(
        &mut self,
        params: &[f32],
        grads: &mut [f32],
        config: &PpoConfig,
        threads: usize,
    ) -> Result<Terms> {
        let Self {
            actor,
            critic,
            targets,
            ..
        } = self;
        // The actor's parameters precede the critic's (checked in `new`).
        let (low, high) = grads.split_at_mut(critic.span.start);
        let actor_grads = &mut low[actor.span.clone()];
        let critic_grads = &mut high[..critic.span.len()];
        let actor_params = &params[actor.span.clone()];
        let critic_params = &params[critic.span.clone()];
        let targets = &*targets;
        let mut policy = || policy_gradients(actor, targets, actor_params, actor_grads, config);
        let mut value = || value_gradients(critic, targets, critic_params, critic_grads, config);
        let (policy, value) = if threads > 1 {
            rayon::join(policy, value)
        } else {
            (policy(), value())
        };
        Ok(Terms {
            value: value?,
            ..policy?
        })
    }
}

/// The actor's loss terms (all but the value loss) on the gathered minibatch and their
/// gradient with respect to the actor's `params` (written into `grads`).
fn policy_gradients(
    actor: &mut Stack,
    targets: &Targets,
    params: &[f32],
    grads: &mut [f32],
    config: &PpoConfig,
) -> Result<Terms> {
    let actions = targets.actions;
    let rows = targets.chosen.len();
    let scale = 1.0 / rows as f32;
    actor.forward(params, rows)?;
    let mut terms = Terms::default();
    let logits = &actor.activations[actor.layers.len()];
    let grad_logits = &mut actor.grad_out;
    grad_logits.clear();
    grad_logits.resize(rows * actions, 0.0);
    let mut log_probs = vec![0f32; actions];
    for (row, ((raw, mask), grad)) in logits
        .chunks_exact(actions)
        .zip(targets.masks.chunks_exact(actions))
        .zip(grad_logits.chunks_exact_mut(actions))
        .enumerate()
    {
        // Masked log-softmax, computed as candle does: shift by the maximum first.
        let max = raw
            .iter()
            .zip(mask)
            .map(|(z, m)| z + m)
            .fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0f32;
        for ((l, z), m) in log_probs.iter_mut().zip(raw).zip(mask) {
            *l = z + m - max;
            total += l.exp();
        }
        let log_total = total.ln();
        let mut plogp = 0f32;
        for l in log_probs.iter_mut() {
            *l -= log_total;
            plogp += l.exp() * *l;
        }
        let action = targets.chosen[row] as usize;
        let log_ratio = log_probs[action] - targets.old_logps[row];
        let ratio = log_ratio.exp();
        let clipped = ratio.clamp(1.0 - config.clip, 1.0 + config.clip);
        let advantage = targets.advantages[row];
        let (unclipped, clipped) = (ratio * advantage, clipped * advantage);
        terms.policy -= unclipped.min(clipped);
        terms.entropy -= plogp;
        terms.approx_kl += (ratio - 1.0) - log_ratio;
        // The surrogate's slope in the ratio: the advantage where the unclipped term is
        // the minimum (where both are equal, the clipped one moves with the ratio too).
        let slope = if unclipped <= clipped { advantage } else { 0.0 };
        let d_logp = -scale * slope * ratio;
        let d_entropy = config.entropy_coef * scale;
        for (k, (g, l)) in grad.iter_mut().zip(&log_probs).enumerate() {
            let p = l.exp();
            let chosen = if k == action { 1.0 } else { 0.0 };
            *g = d_logp * (chosen - p) + d_entropy * p * (l - plogp);
        }
    }
    actor.backward(params, grads, rows)?;
    terms.policy *= scale;
    terms.entropy *= scale;
    terms.approx_kl *= scale;
    Ok(terms)
}

/// The value loss on the gathered minibatch and its gradient with respect to the critic's
/// `params` (written into `grads`).
fn value_gradients(
    critic: &mut Stack,
    targets: &Targets,
    params: &[f32],
    grads: &mut [f32],
    config: &PpoConfig,
) -> Result<f32> {
    let rows = targets.returns.len();
    let scale = 1.0 / rows as f32;
    critic.forward(params, rows)?;
    let values = &critic.activations[critic.layers.len()];
    let grad_values = &mut critic.grad_out;
    grad_values.clear();
    let mut loss = 0f32;
    for (value, target) in values.iter().zip(&targets.returns) {
        let error = value - target;
        loss += 0.5 * error * error;
        grad_values.push(config.value_coef * scale * error);
    }
    critic.backward(params, grads, rows)?;
    Ok(loss * scale)
}

/// Adam's moments on flat buffers, as the plain-Rust update keeps them.
#[derive(Debug)]
struct Moments {
    first: Vec<f32>,
    second: Vec<f32>,
}

/// One Adam step of size `lr` on `params` after scaling `grads` to a global norm of at
/// most `max_norm` (what [`Adam`]'s autograd step does per parameter tensor).
fn adam_step(
    params: &mut [f32],
    grads: &[f32],
    moments: &mut Moments,
    t: u64,
    lr: f64,
    max_norm: f32,
) {
    let norm = grads.iter().map(|g| g * g).sum::<f32>().sqrt();
    let clip = if norm > max_norm {
        max_norm / (norm + 1e-6)
    } else {
        1.0
    };
    let t = t as i32;
    let beta1 = Adam::BETA1 as f32;
    let beta2 = Adam::BETA2 as f32;
    let (keep1, keep2) = ((1.0 - Adam::BETA1) as f32, (1.0 - Adam::BETA2) as f32);
    let unbias1 = (1.0 / (1.0 - Adam::BETA1.powi(t))) as f32;
    let unbias2 = (1.0 / (1.0 - Adam::BETA2.powi(t))) as f32;
    let (eps, lr) = (Adam::EPS as f32, lr as f32);
    for (((w, g), m), v) in params
        .iter_mut()
        .zip(grads)
        .zip(&mut moments.first)
        .zip(&mut moments.second)
    {
        let g = g * clip;
        *m = *m * beta1 + g * keep1;
        *v = *v * beta2 + g * g * keep2;
        let step = (*m * unbias1) / ((*v * unbias2).sqrt() + eps);
        *w -= step * lr;
    }
}

/// PPO's update of `net` (an MLP) on `batch`; minibatch order drawn from `rng` exactly as
/// the autograd update draws it. With `threads` above one, the actor's and the critic's
/// passes run at once (the result is the same).
pub(super) fn update(
    net: &ActorCritic,
    adam: &mut Adam,
    batch: &Batch,
    config: &PpoConfig,
    lr: f64,
    rng: &mut Rng,
    threads: usize,
) -> Result<Losses> {
    let n = batch.len();
    if n == 0 {
        return Ok(Losses::default());
    }
    let size = n.div_ceil(config.minibatches).max(1);
    let mut model = Model::new(net, size)?;
    let mut params = model.params(net)?;
    let mut grads = vec![0f32; params.len()];
    let mut moments = Moments {
        first: model
            .layout
            .flatten(|name| adam.moments.get(name).map(|(m, _)| m))?,
        second: model
            .layout
            .flatten(|name| adam.moments.get(name).map(|(_, v)| v))?,
    };
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut sums = Terms::default();
    let mut count = 0f32;
    for _ in 0..config.epochs {
        order.shuffle(rng);
        for chunk in order.chunks(size) {
            model.gather(batch, chunk)?;
            let terms = model.gradients(&params, &mut grads, config, threads)?;
            adam.t += 1;
            adam_step(
                &mut params,
                &grads,
                &mut moments,
                adam.t,
                lr,
                config.max_grad_norm,
            );
            sums.policy += terms.policy;
            sums.value += terms.value;
            sums.entropy += terms.entropy;
            sums.approx_kl += terms.approx_kl;
            count += 1.0;
        }
    }
    model.store(&params, net)?;
    for index in 0..model.layout.entries.len() {
        let (name, m) = model.layout.tensor(&moments.first, index)?;
        let (_, v) = model.layout.tensor(&moments.second, index)?;
        adam.moments.insert(name, (m, v));
    }
    Ok(Losses {
        policy: sums.policy / count,
        value: sums.value / count,
        entropy: sums.entropy / count,
        approx_kl: sums.approx_kl / count,
        transitions: n,
    })
}

#[cfg(test)]
mod tests {
    use super::super::ppo::{Minibatch, minibatch_loss, update_autograd};
    use super::*;
    use crate::net::{MASKED_LOGIT, NetShape};
    use mosaic_core::rng::seeded;
    use rand::Rng as _;

    fn shape(hidden: Vec<usize>, critic_agents: usize) -> NetShape {
        NetShape {
            critic_agents,
            ..NetShape::new(vec![7], 5, Architecture::Mlp { hidden, gru: None })
        }
    }

    /// Random transitions: some actions masked, old log-probabilities spread so that
    /// ratios fall on both sides of the clipping range.
    fn random_batch(shape: &NetShape, rows: usize, seed: u64) -> Batch {
        let mut rng = seeded(seed);
        let mut batch = Batch::default();
        for _ in 0..rows {
            for _ in 0..shape.obs_len() {
                batch.obs.push(rng.random_range(-1.0..1.0));
            }
            for _ in 0..shape.critic_len() {
                batch.critic.push(rng.random_range(-1.0..1.0));
            }
            let action = rng.random_range(0..shape.actions);
            for a in 0..shape.actions {
                let masked = a != action && rng.random_bool(0.3);
                batch.masks.push(if masked { MASKED_LOGIT } else { 0.0 });
            }
            batch.actions.push(action as u32);
            batch.logps.push(rng.random_range(-2.5..-0.8));
            batch.advantages.push(rng.random_range(-2.0..2.0));
            batch.returns.push(rng.random_range(-1.0..1.0));
        }
        batch
    }

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    fn close(ours: &[f32], reference: &[f32], what: &str) {
        let norm = reference.iter().map(|x| x * x).sum::<f32>().sqrt();
        let error = ours
            .iter()
            .zip(reference)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f32>()
            .sqrt();
        assert_eq!(ours.len(), reference.len(), "{what}");
        assert!(
            error <= 1e-4 * norm + 1e-7,
            "{what}: error {error} against norm {norm}"
        );
    }

    #[test]
    fn gradients_and_losses_match_candle_autograd() {
        let config = PpoConfig::default();
        for (hidden, critic_agents, seed) in [(vec![64, 64], 1, 1), (vec![16, 8, 4], 2, 2)] {
            let shape = shape(hidden, critic_agents);
            let net = ActorCritic::new(shape.clone(), seed).unwrap();
            let batch = random_batch(&shape, 48, seed);
            let idx: Vec<u32> = (0..40).map(|i| (i * 7 % 48) as u32).collect();
            let mb = Minibatch::whole(&batch, &shape)
                .unwrap()
                .rows(&idx)
                .unwrap();
            let reference = minibatch_loss(&net, &mb, &config).unwrap();
            let autograd = reference.loss.backward().unwrap();

            let mut model = Model::new(&net, idx.len()).unwrap();
            let params = model.params(&net).unwrap();
            let mut grads = vec![f32::NAN; params.len()];
            model.gather(&batch, &idx).unwrap();
            let terms = model.gradients(&params, &mut grads, &config, 2).unwrap();
            // One thread computes the same values, to the bit.
            let mut alone = vec![f32::NAN; params.len()];
            let terms_alone = model.gradients(&params, &mut alone, &config, 1).unwrap();
            assert_eq!(bits(&grads), bits(&alone));
            assert_eq!(
                format!("{terms:?}"),
                format!("{terms_alone:?}"),
                "terms on one thread"
            );
            for (ours, theirs, what) in [
                (terms.policy, &reference.policy, "policy"),
                (terms.value, &reference.value, "value"),
                (terms.entropy, &reference.entropy, "entropy"),
                (terms.approx_kl, &reference.approx_kl, "approx_kl"),
            ] {
                let theirs = theirs.to_scalar::<f32>().unwrap();
                assert!(
                    (ours - theirs).abs() <= 1e-4 * theirs.abs().max(1.0),
                    "{what}"
                );
            }
            for (index, (name, var)) in net.params().iter().enumerate() {
                let reference = autograd
                    .get(var.as_tensor())
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                let range = model.layout.entries[index].1.clone();
                close(&grads[range], &reference, name);
            }
        }
    }

    #[test]
    fn update_matches_the_autograd_update() {
        let config = PpoConfig {
            epochs: 2,
            minibatches: 3,
            ..PpoConfig::default()
        };
        let shape = shape(vec![32, 32], 2);
        let batch = random_batch(&shape, 90, 5);
        let ours = ActorCritic::new(shape.clone(), 3).unwrap();
        let theirs = ActorCritic::new(shape.clone(), 3).unwrap();
        let initial = Model::new(&ours, 1).unwrap().params(&ours).unwrap();
        let mut our_adam = Adam::new(&ours).unwrap();
        let mut their_adam = Adam::new(&theirs).unwrap();
        for round in 0..2 {
            let lr = 1e-3;
            let a = update(
                &ours,
                &mut our_adam,
                &batch,
                &config,
                lr,
                &mut seeded(round),
                2,
            )
            .unwrap();
            let b = update_autograd(
                &theirs,
                &mut their_adam,
                &batch,
                &config,
                lr,
                &mut seeded(round),
            )
            .unwrap();
            assert_eq!(a.transitions, b.transitions);
            for (x, y) in [
                (a.policy, b.policy),
                (a.value, b.value),
                (a.entropy, b.entropy),
            ] {
                assert!((x - y).abs() <= 1e-3 * y.abs().max(1.0), "{a:?} vs {b:?}");
            }
        }
        assert_eq!(our_adam.t, their_adam.t);
        let model = Model::new(&ours, 1).unwrap();
        let (p_ours, p_theirs) = (model.params(&ours).unwrap(), model.params(&theirs).unwrap());
        let moved: f32 = p_theirs
            .iter()
            .zip(&initial)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        let apart: f32 = p_ours
            .iter()
            .zip(&p_theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        assert!(moved > 1e-3, "the update moves the weights ({moved})");
        assert!(apart <= 0.02 * moved, "{apart} apart after moving {moved}");
        // The moments are saved under the same names, so checkpoints keep their format.
        let (ours, theirs) = (our_adam.tensors(), their_adam.tensors());
        assert_eq!(
            ours.keys().collect::<std::collections::BTreeSet<_>>(),
            theirs.keys().collect()
        );
        for (name, tensor) in &theirs {
            assert_eq!(ours[name].dims(), tensor.dims(), "{name}");
        }
    }

    #[test]
    fn updates_do_not_depend_on_the_thread_count() {
        let config = PpoConfig {
            epochs: 2,
            minibatches: 3,
            ..PpoConfig::default()
        };
        let shape = shape(vec![24, 24], 1);
        let batch = random_batch(&shape, 75, 9);
        let trained: Vec<(Vec<u32>, String)> = [1, 2, 3]
            .into_iter()
            .map(|threads| {
                let net = ActorCritic::new(shape.clone(), 4).unwrap();
                let mut adam = Adam::new(&net).unwrap();
                let mut losses = Vec::new();
                for round in 0..2 {
                    let mut rng = seeded(round);
                    let update = update(&net, &mut adam, &batch, &config, 1e-3, &mut rng, threads);
                    losses.push(update.unwrap());
                }
                let params = Model::new(&net, 1).unwrap().params(&net).unwrap();
                (bits(&params), format!("{losses:?}"))
            })
            .collect();
        assert_eq!(trained[0], trained[1], "one thread against two");
        assert_eq!(trained[0], trained[2], "one thread against three");
    }

    #[test]
    fn a_batch_with_an_action_out_of_range_is_an_error() {
        let shape = shape(vec![8], 1);
        let mut batch = random_batch(&shape, 6, 3);
        batch.actions[4] = shape.actions as u32;
        let net = ActorCritic::new(shape, 1).unwrap();
        let mut adam = Adam::new(&net).unwrap();
        let error = update(
            &net,
            &mut adam,
            &batch,
            &PpoConfig::default(),
            1e-3,
            &mut seeded(0),
            2,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("action 5 is out of range"), "{error}");
    }
}
