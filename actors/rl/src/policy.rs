//! Acting with a trained network: batched inference and the [`RlPolicy`] of one agent.
//!
//! Networks act through [`PolicyNet`] (logits of a batch of observations), so mosaic's own
//! checkpoints ([`Inference`]) and imported ONNX models share the masked, seeded action
//! choice of [`decide_batch`] and [`RlPolicy`].

use crate::dense::DenseStack;
use crate::error::{Result, RlError};
use crate::net::{ActorCritic, batch, choose};
use candle_core::{Device, Tensor};
use mosaic_core::rng::{self, Rng, seeded};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, ObsRequest, Observation, Paradigm, Policy,
};
use std::sync::Arc;

/// Keys of a recurrent policy's saved state.
const RNG_KEY: &str = "rng";
const HIDDEN_KEY: &str = "hidden";

/// Appends `obs`'s symbolic tensor to `into`, checking its length.
pub fn push_observation(obs: &Observation, obs_len: usize, into: &mut Vec<f32>) -> Result<()> {
    let problem = match &obs.symbolic {
        None => "it has no symbolic tensor".to_owned(),
        Some(t) if t.data.len() != obs_len => format!(
            "its symbolic tensor has {} values, the policy reads {obs_len}",
            t.data.len()
        ),
        Some(t) => {
            into.extend_from_slice(&t.data);
            return Ok(());
        }
    };
    Err(RlError::Observation {
        agent: obs.agent,
        problem,
    })
}

/// A network that scores every action of a batch of observations.
pub trait PolicyNet: Send + Sync + std::fmt::Debug {
    /// Values of one observation (its symbolic tensor's length).
    fn obs_len(&self) -> usize;

    /// Actions scored per observation.
    fn actions(&self) -> usize;

    /// Action logits (unnormalised log-probabilities) of `rows` observations laid out row
    /// after row in `obs`, row after row.
    fn logits(&self, obs: &[f32], rows: usize) -> Result<Vec<f32>>;

    /// Whether each row's logits are exactly the same whatever the other rows of the batch.
    /// Only then do a session's agents sharing the network decide in one forward pass
    /// ([`crate::batch`]): batching must not change a decision. Recurrent networks answer
    /// `false`: each agent steps its own state alone.
    fn row_independent(&self) -> bool {
        false
    }

    /// Values of recurrent state each agent carries from step to step; 0 (the default):
    /// the logits depend on the observation alone.
    fn state_len(&self) -> usize {
        0
    }

    /// The logits of `rows` observations, each read in its agent's recurrent state: `state`
    /// holds `rows × state_len()` values, row after row, and is replaced by the states after
    /// the step (untouched on an error). Networks without state answer
    /// [`PolicyNet::logits`].
    fn step(&self, obs: &[f32], _state: &mut [f32], rows: usize) -> Result<Vec<f32>> {
        self.logits(obs, rows)
    }
}

/// Runs `forward` on `state` (`rows × units` values, or none for a feed-forward network)
/// as a tensor and writes the states it answers back into `state`.
fn stepped(
    state: &mut [f32],
    rows: usize,
    units: Option<usize>,
    forward: impl FnOnce(Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)>,
) -> Result<Tensor> {
    let Some(units) = units else {
        return Ok(forward(None)?.0);
    };
    let before = Tensor::from_slice(state, (rows, units), &Device::Cpu)?;
    let (out, after) = forward(Some(&before))?;
    if let Some(after) = after {
        state.copy_from_slice(&after.flatten_all()?.to_vec1::<f32>()?);
    }
    Ok(out)
}

/// A network ready to act: MLPs through their plain-Rust copy ([`crate::dense`]), other
/// architectures through candle. Build it again after the weights change.
#[derive(Clone, Debug)]
pub struct Inference {
    net: ActorCritic,
    dense: Option<(DenseStack, DenseStack)>,
}

impl Inference {
    /// Inference with `net`'s current weights.
    pub fn new(net: &ActorCritic) -> Result<Self> {
        Ok(Self {
            net: net.clone(),
            dense: net.dense()?,
        })
    }

    /// The network.
    pub fn net(&self) -> &ActorCritic {
        &self.net
    }

    /// State values of `rows` critic inputs (row after row in `inputs`), each read in its
    /// agent's critic state: for a recurrent network `state` holds `rows × units` values
    /// (the GRU's units) and is replaced by the states after the step.
    pub fn values_step(&self, inputs: &[f32], state: &mut [f32], rows: usize) -> Result<Vec<f32>> {
        if self.dense.is_some() {
            return self.values(inputs, rows);
        }
        let inputs = batch(inputs, rows, self.net.shape().critic_len())?;
        let units = self.net.shape().gru_units();
        Ok(stepped(state, rows, units, |h| self.net.values_step(&inputs, h))?.to_vec1::<f32>()?)
    }

    /// State values of `rows` critic inputs (row after row in `inputs`; a recurrent
    /// network reads them from its initial, zero state).
    pub fn values(&self, inputs: &[f32], rows: usize) -> Result<Vec<f32>> {
        match &self.dense {
            Some((_, critic)) => Ok(critic.forward(inputs, rows)),
            None => Ok(self
                .net
                .values(&batch(inputs, rows, self.net.shape().critic_len())?)?
                .to_vec1::<f32>()?),
        }
    }
}

impl PolicyNet for Inference {
    fn obs_len(&self) -> usize {
        self.net.shape().obs_len()
    }

    fn actions(&self) -> usize {
        self.net.shape().actions
    }

    fn logits(&self, obs: &[f32], rows: usize) -> Result<Vec<f32>> {
        match &self.dense {
            Some((actor, _)) => Ok(actor.forward(obs, rows)),
            None => Ok(self
                .net
                .logits(&batch(obs, rows, self.net.shape().obs_len())?)?
                .flatten_all()?
                .to_vec1::<f32>()?),
        }
    }

    /// The plain-Rust MLP path evaluates each row alike (see [`DenseStack::forward`]);
    /// candle's kernels make no such promise.
    fn row_independent(&self) -> bool {
        self.dense.is_some()
    }

    /// The actor's GRU state.
    fn state_len(&self) -> usize {
        self.net.shape().gru_units().unwrap_or(0)
    }

    fn step(&self, obs: &[f32], state: &mut [f32], rows: usize) -> Result<Vec<f32>> {
        if self.dense.is_some() {
            return self.logits(obs, rows);
        }
        let obs = batch(obs, rows, self.net.shape().obs_len())?;
        let units = self.net.shape().gru_units();
        let logits = stepped(state, rows, units, |h| self.net.logits_step(&obs, h))?;
        Ok(logits.flatten_all()?.to_vec1::<f32>()?)
    }
}

/// Decides for several agents sharing a network in one forward pass: `obs` holds their
/// observations row after row, `legal` their masks, and `rngs` their generators (`None`:
/// greedy). Answers each agent's action and its log-probability. A recurrent network
/// decides from its initial state here; [`RlPolicy`] carries the state.
///
/// ```
/// use mosaic_rl::net::{ActorCritic, NetShape};
/// use mosaic_rl::Architecture;
/// use mosaic_rl::policy::{Inference, decide_batch};
/// let net = ActorCritic::new(NetShape::new(vec![4], 3, Architecture::default()), 1).unwrap();
/// let legal = [vec![true, false, false], vec![false, true, true]];
/// let choices = decide_batch(&Inference::new(&net).unwrap(), &[0.1; 8], &[&legal[0], &legal[1]], None).unwrap();
/// assert_eq!(choices[0].0, 0);
/// assert_ne!(choices[1].0, 0);
/// ```
pub fn decide_batch<Net: PolicyNet + ?Sized>(
    net: &Net,
    obs: &[f32],
    legal: &[&[bool]],
    mut rngs: Option<&mut [Rng]>,
) -> Result<Vec<(usize, f32)>> {
    let rows = legal.len();
    let logits = net.logits(obs, rows)?;
    let actions = net.actions();
    Ok((0..rows)
        .map(|row| {
            let rng = rngs.as_deref_mut().map(|r| &mut r[row]);
            choose(&logits[row * actions..(row + 1) * actions], legal[row], rng)
        })
        .collect())
}

/// One agent acting with a trained network: greedy, or drawing from the masked policy
/// with an RNG seeded from (episode seed, agent id). A recurrent network's state starts
/// from zeros with each episode and is carried from decision to decision; the saved state
/// holds it besides the generator's.
#[derive(Debug)]
pub struct RlPolicy {
    net: Arc<dyn PolicyNet>,
    greedy: bool,
    rng: Rng,
    obs: Vec<f32>,
    /// The network's recurrent state (empty for feed-forward networks).
    hidden: Vec<f32>,
}

impl RlPolicy {
    /// A policy acting with `net`.
    pub fn new(net: Arc<dyn PolicyNet>, greedy: bool) -> Self {
        let hidden = vec![0.0; net.state_len()];
        Self {
            net,
            greedy,
            rng: seeded(0),
            obs: Vec::new(),
            hidden,
        }
    }

    /// The network it acts with.
    pub fn net(&self) -> &Arc<dyn PolicyNet> {
        &self.net
    }

    /// The network's input for `obs`: its symbolic tensor, checked against the network.
    pub fn input(&self, obs: &Observation) -> Result<Vec<f32>> {
        let mut input = Vec::with_capacity(self.net.obs_len());
        push_observation(obs, self.net.obs_len(), &mut input)?;
        Ok(input)
    }

    /// The decision given the `logits` the network gave for an observation with the mask
    /// `legal`: the most likely legal action when greedy, else a draw from this agent's
    /// generator.
    pub fn choose(&mut self, logits: &[f32], legal: &[bool]) -> Decision {
        let rng = (!self.greedy).then_some(&mut self.rng);
        Decision::act(Action(choose(logits, legal, rng).0 as u32))
    }

    fn try_decide(&mut self, obs: &Observation) -> Result<Decision> {
        self.obs.clear();
        push_observation(obs, self.net.obs_len(), &mut self.obs)?;
        let logits = self.net.step(&self.obs, &mut self.hidden, 1)?;
        Ok(self.choose(&logits, &obs.legal))
    }
}

impl Policy for RlPolicy {
    fn paradigm(&self) -> Paradigm {
        Paradigm::Rl
    }

    fn wants(&self) -> ObsRequest {
        ObsRequest::SYMBOLIC
    }

    fn reset(&mut self, ctx: &AgentContext) {
        self.rng = seeded(ctx.seed);
        self.hidden.iter_mut().for_each(|h| *h = 0.0);
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        self.try_decide(obs).unwrap_or_else(|error| {
            Decision::fallback(Action(0), DecisionSource::Error, error.to_string())
        })
    }

    /// The generator's state; for a recurrent network `{"rng": …, "hidden": […]}`.
    fn save_state(&self) -> Option<serde_json::Value> {
        let rng = rng::save_state(&self.rng)?;
        if self.hidden.is_empty() {
            return Some(rng);
        }
        let mut state = serde_json::Map::new();
        state.insert(RNG_KEY.into(), rng);
        state.insert(HIDDEN_KEY.into(), serde_json::json!(self.hidden));
        Some(state.into())
    }

    fn load_state(&mut self, state: &serde_json::Value) -> std::result::Result<(), String> {
        if self.hidden.is_empty() {
            self.rng = rng::load_state(state)?;
            return Ok(());
        }
        let (Some(saved_rng), Some(saved_hidden)) = (state.get(RNG_KEY), state.get(HIDDEN_KEY))
        else {
            return Err(format!(
                "a recurrent policy's state needs `{RNG_KEY}` and `{HIDDEN_KEY}`"
            ));
        };
        let hidden: Vec<f32> = serde::Deserialize::deserialize(saved_hidden)
            .map_err(|e| format!("`{HIDDEN_KEY}` is not a list of numbers: {e}"))?;
        if hidden.len() != self.hidden.len() {
            return Err(format!(
                "`{HIDDEN_KEY}` has {} values, the network's state {}",
                hidden.len(),
                self.hidden.len()
            ));
        }
        self.rng = rng::load_state(saved_rng)?;
        self.hidden = hidden;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Architecture;
    use crate::net::NetShape;
    use mosaic_core::Tensor;

    fn obs(values: Vec<f32>, legal: Vec<bool>) -> Observation {
        Observation {
            symbolic: Some(Tensor {
                shape: vec![values.len()],
                data: values,
            }),
            ..Observation::with_mask(0, legal)
        }
    }

    fn net() -> Arc<Inference> {
        let shape = NetShape::new(vec![3], 4, Architecture::default());
        Arc::new(Inference::new(&ActorCritic::new(shape, 2).unwrap()).unwrap())
    }

    #[test]
    fn plain_rust_inference_agrees_with_candle() {
        let shape = NetShape::new(
            vec![10],
            6,
            Architecture::Mlp {
                hidden: vec![64, 64],
                gru: None,
            },
        );
        let net = ActorCritic::new(shape, 8).unwrap();
        let inference = Inference::new(&net).unwrap();
        assert!(inference.dense.is_some());
        let obs: Vec<f32> = (0..30).map(|i| (i as f32 * 0.71).cos() * 3.0).collect();
        let tensor = batch(&obs, 3, 10).unwrap();
        let close = |a: Vec<f32>, b: Vec<f32>| {
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
            }
        };
        close(
            inference.logits(&obs, 3).unwrap(),
            net.logits(&tensor)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap(),
        );
        close(
            inference.values(&obs, 3).unwrap(),
            net.values(&tensor).unwrap().to_vec1().unwrap(),
        );
    }

    #[test]
    fn seeded_choices_replay_and_restore() {
        let ctx = AgentContext::new(11, 0, "a".into(), 4);
        let o = obs(vec![0.2, -0.4, 1.0], vec![true, true, false, true]);
        let mut a = RlPolicy::new(net(), false);
        a.reset(&ctx);
        let first: Vec<Action> = (0..40).map(|_| a.decide(&o).action).collect();
        assert!(first.iter().all(|x| o.is_legal(*x)));
        let state = a.save_state().unwrap();
        let mut b = RlPolicy::new(net(), false);
        b.reset(&ctx);
        let replay: Vec<Action> = (0..40).map(|_| b.decide(&o).action).collect();
        assert_eq!(first, replay);
        b.load_state(&state).unwrap();
        for _ in 0..20 {
            assert_eq!(a.decide(&o).action, b.decide(&o).action);
        }
        assert!(b.load_state(&serde_json::json!(1)).is_err());
    }

    fn recurrent_net() -> Arc<Inference> {
        let arch = Architecture::Mlp {
            hidden: vec![8],
            gru: Some(6),
        };
        let shape = NetShape::new(vec![3], 4, arch);
        Arc::new(Inference::new(&ActorCritic::new(shape, 5).unwrap()).unwrap())
    }

    /// The observation of step `step` of a recurrent test episode.
    fn step_obs(step: usize) -> Observation {
        let x = step as f32;
        obs(
            vec![(x * 0.9).sin(), (x * 0.4).cos(), 0.3],
            vec![true, true, true, false],
        )
    }

    #[test]
    fn a_recurrent_policy_carries_its_state_and_resumes_mid_episode_identically() {
        let net = recurrent_net();
        assert_eq!(net.state_len(), 6);
        assert!(!net.row_independent());
        // The state changes the logits: the same observation after others reads differently.
        let mut state = vec![0.0; 6];
        let first = net
            .step(&step_obs(0).symbolic.unwrap().data, &mut state, 1)
            .unwrap();
        assert!(state.iter().any(|h| *h != 0.0));
        let again = net
            .step(&step_obs(0).symbolic.unwrap().data, &mut state, 1)
            .unwrap();
        assert_ne!(first, again);

        let ctx = AgentContext::new(21, 0, "a".into(), 4);
        let mut a = RlPolicy::new(net.clone(), false);
        a.reset(&ctx);
        let head: Vec<Action> = (0..7).map(|t| a.decide(&step_obs(t)).action).collect();
        let saved = a.save_state().unwrap();
        assert_eq!(saved["hidden"].as_array().unwrap().len(), 6);
        let tail: Vec<Action> = (7..40).map(|t| a.decide(&step_obs(t)).action).collect();

        // Restored into a fresh policy (as supervision does after a failure): the same
        // decisions from there on.
        let mut b = RlPolicy::new(net.clone(), false);
        b.reset(&ctx);
        b.load_state(&saved).unwrap();
        let resumed: Vec<Action> = (7..40).map(|t| b.decide(&step_obs(t)).action).collect();
        assert_eq!(tail, resumed);
        // Greedy choices depend on the state too: a policy restored with its generator but
        // not its state decides otherwise somewhere.
        let greedy = |hidden: bool| {
            let mut p = RlPolicy::new(net.clone(), true);
            p.reset(&ctx);
            let mut state = saved.clone();
            if !hidden {
                state["hidden"] = serde_json::json!(vec![0.0; 6]);
            }
            p.load_state(&state).unwrap();
            (7..40)
                .map(|t| p.decide(&step_obs(t)).action)
                .collect::<Vec<_>>()
        };
        assert_ne!(greedy(true), greedy(false));
        // A new episode starts from the zero state: the same decisions as at first.
        a.reset(&ctx);
        let replay: Vec<Action> = (0..7).map(|t| a.decide(&step_obs(t)).action).collect();
        assert_eq!(head, replay);

        let rng_only = mosaic_core::rng::save_state(&seeded(1)).unwrap();
        assert!(b.load_state(&rng_only).unwrap_err().contains("hidden"));
        let mut short = saved.clone();
        short["hidden"] = serde_json::json!([0.0, 1.0]);
        assert!(b.load_state(&short).unwrap_err().contains("2 values"));
    }

    #[test]
    fn greedy_is_stable_and_bad_observations_fall_back() {
        let mut p = RlPolicy::new(net(), true);
        p.reset(&AgentContext::new(1, 0, "a".into(), 4));
        let o = obs(vec![0.2, -0.4, 1.0], vec![true; 4]);
        let first = p.decide(&o).action;
        assert!((0..10).all(|_| p.decide(&o).action == first));
        let wrong = p.decide(&obs(vec![1.0; 5], vec![true; 4]));
        assert_eq!(wrong.source, DecisionSource::Error);
        let none = p.decide(&Observation::with_mask(0, vec![true; 4]));
        assert!(
            none.detail
                .unwrap()
                .to_string()
                .contains("no symbolic tensor")
        );
    }
}
