//! Acting with a trained network: batched inference and the [`RlPolicy`] of one agent.
//!
//! Networks act through [`PolicyNet`] (logits of a batch of observations), so mosaic's own
//! checkpoints ([`Inference`]) and imported ONNX models share the masked, seeded action
//! choice of [`decide_batch`] and [`RlPolicy`].

use crate::dense::DenseStack;
use crate::error::{Result, RlError};
use crate::net::{ActorCritic, batch, choose};
use mosaic_core::rng::{self, Rng, seeded};
use mosaic_core::{
    Action, AgentContext, Decision, DecisionSource, ObsRequest, Observation, Paradigm, Policy,
};
use std::sync::Arc;

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
    /// ([`crate::batch`]): batching must not change a decision.
    fn row_independent(&self) -> bool {
        false
    }
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

    /// State values of `rows` critic inputs (row after row in `inputs`).
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
}

/// Decides for several agents sharing a network in one forward pass: `obs` holds their
/// observations row after row, `legal` their masks, and `rngs` their generators (`None`:
/// greedy). Answers each agent's action and its log-probability.
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
/// with an RNG seeded from (episode seed, agent id).
#[derive(Debug)]
pub struct RlPolicy {
    net: Arc<dyn PolicyNet>,
    greedy: bool,
    rng: Rng,
    obs: Vec<f32>,
}

impl RlPolicy {
    /// A policy acting with `net`.
    pub fn new(net: Arc<dyn PolicyNet>, greedy: bool) -> Self {
        Self {
            net,
            greedy,
            rng: seeded(0),
            obs: Vec::new(),
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
        let logits = self.net.logits(&self.obs, 1)?;
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
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        self.try_decide(obs).unwrap_or_else(|error| {
            Decision::fallback(Action(0), DecisionSource::Error, error.to_string())
        })
    }

    fn save_state(&self) -> Option<serde_json::Value> {
        rng::save_state(&self.rng)
    }

    fn load_state(&mut self, state: &serde_json::Value) -> std::result::Result<(), String> {
        self.rng = rng::load_state(state)?;
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
