//! Batched decisions per session: the agents of one session that act with the same network
//! decide in one forward pass.
//!
//! Every `rl` or `onnx` slot of a session that names the same policy shares one loaded
//! network (kept in the session's [`SessionShared`]). When the network evaluates each row
//! alike ([`PolicyNet::row_independent`]: mosaic's MLPs), a [`SharedNet`] actor answers
//! those agents together: the session asks all acting agents of a step at once, their
//! [`BatchedDecider`]s pass the observations on, and the shared network, once it has read
//! every request waiting in its mailbox, runs one forward pass over them and hands each
//! agent its row. Each agent keeps its own generator and saved state, and a row's logits do
//! not depend on the batch it is in, so batching changes no decision, only the number of
//! forward passes. Other networks (CNNs through candle, recurrent networks, whose state
//! each agent steps alone, ONNX models) are shared too but answer each agent alone, in its own [`PolicyActor`](mosaic_actors::decider::PolicyActor).

use crate::policy::{PolicyNet, RlPolicy};
use actix::prelude::*;
use futures::channel::oneshot;
use mosaic_actors::decider::{DeciderHandle, SessionShared};
use mosaic_actors::{BeginEpisode, Decide, DeciderError, LoadState, SaveState, StateError};
use mosaic_core::{Action, Decision, DecisionSource, ObsRequest, Paradigm, Policy};
use std::sync::Arc;

/// The logits of one row, or why the forward pass failed.
type Row = Result<Vec<f32>, String>;

/// The network one or more agents of a session act with.
#[derive(Clone, Debug)]
pub struct SessionNet {
    net: Arc<dyn PolicyNet>,
    /// The actor batching its forward passes, when rows are independent.
    batched: Option<Addr<SharedNet>>,
}

impl SessionNet {
    /// The network under `key` in `shared`, loaded by `load` for the first agent asking
    /// and shared with the others (a failed load is not kept). Must run inside an actix
    /// system: a batching network starts its actor on the current arbiter.
    pub fn get_or_load<E>(
        shared: &SessionShared,
        key: &str,
        load: impl FnOnce() -> Result<Arc<dyn PolicyNet>, E>,
    ) -> Result<Self, E> {
        shared.get_or_try_insert(key, || {
            let net = load()?;
            let batched = net
                .row_independent()
                .then(|| SharedNet::new(net.clone()).start());
            Ok(Self { net, batched })
        })
    }

    /// The decider of one agent acting with this network (drawing from its own generator
    /// unless `greedy`), recorded as `kind`.
    pub fn start_decider(&self, kind: &str, greedy: bool) -> DeciderHandle {
        let policy = RlPolicy::new(self.net.clone(), greedy);
        match &self.batched {
            Some(shared) => {
                let addr = BatchedDecider {
                    policy,
                    shared: shared.clone(),
                }
                .start();
                DeciderHandle::new(kind, Paradigm::Rl, ObsRequest::SYMBOLIC, &addr)
                    .with_state(&addr)
            }
            None => DeciderHandle::start_policy(kind, Box::new(policy)),
        }
    }
}

/// A network answering the agents of a session together (see the module docs).
pub struct SharedNet {
    net: Arc<dyn PolicyNet>,
    pending: Vec<Logits>,
    flush_due: bool,
}

impl std::fmt::Debug for SharedNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedNet")
            .field("net", &self.net)
            .field("pending", &self.pending.len())
            .finish()
    }
}

impl SharedNet {
    /// Batches the forward passes of `net`.
    pub fn new(net: Arc<dyn PolicyNet>) -> Self {
        Self {
            net,
            pending: Vec::new(),
            flush_due: false,
        }
    }

    /// One forward pass over the pending rows; each request gets its row (or the error).
    fn flush(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let mut input = Vec::with_capacity(pending.iter().map(|p| p.input.len()).sum());
        for request in &pending {
            input.extend_from_slice(&request.input);
        }
        let actions = self.net.actions();
        match self.net.logits(&input, pending.len()) {
            Ok(logits) if logits.len() == pending.len() * actions => {
                for (request, row) in pending.into_iter().zip(logits.chunks_exact(actions)) {
                    // An agent whose request timed out has stopped listening: nothing to do.
                    let _ = request.answer.send(Ok(row.to_vec()));
                }
            }
            Ok(logits) => {
                let why = format!(
                    "the network answered {} logits for {} observations of {actions} actions",
                    logits.len(),
                    pending.len()
                );
                for request in pending {
                    let _ = request.answer.send(Err(why.clone()));
                }
            }
            Err(error) => {
                let why = error.to_string();
                for request in pending {
                    let _ = request.answer.send(Err(why.clone()));
                }
            }
        }
    }
}

impl Actor for SharedNet {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A step of a wide game queues one request per agent.
        ctx.set_mailbox_capacity(1024);
    }
}

/// One agent's observation, answered with its row of logits.
#[derive(Message)]
#[rtype(result = "()")]
struct Logits {
    input: Vec<f32>,
    answer: oneshot::Sender<Row>,
}

/// Runs the forward pass over what is pending.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

impl Handler<Logits> for SharedNet {
    type Result = ();

    fn handle(&mut self, request: Logits, ctx: &mut Context<Self>) {
        self.pending.push(request);
        if !self.flush_due {
            // actix reads the whole mailbox before it turns to notifications, so the
            // flush sees every request the session sent for this step.
            self.flush_due = true;
            ctx.notify(Flush);
        }
    }
}

impl Handler<Flush> for SharedNet {
    type Result = ();

    fn handle(&mut self, _: Flush, _: &mut Context<Self>) {
        self.flush_due = false;
        self.flush();
    }
}

/// One agent acting with a [`SharedNet`]: its observations go to the shared network, its
/// choice (greedy or drawn from its own generator) and state stay here.
pub struct BatchedDecider {
    policy: RlPolicy,
    shared: Addr<SharedNet>,
}

impl std::fmt::Debug for BatchedDecider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchedDecider").finish_non_exhaustive()
    }
}

impl Actor for BatchedDecider {
    type Context = Context<Self>;
}

fn fallback(why: String) -> Decision {
    Decision::fallback(Action(0), DecisionSource::Error, why)
}

impl Handler<Decide> for BatchedDecider {
    type Result = AtomicResponse<Self, Result<Decision, DeciderError>>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        let input = match self.policy.input(&msg.obs) {
            Ok(input) => input,
            Err(error) => {
                let decision = fallback(error.to_string());
                return AtomicResponse::new(Box::pin(fut::ready(Ok(decision))));
            }
        };
        let (answer, answered) = oneshot::channel();
        self.shared.do_send(Logits { input, answer });
        // Atomic: no other message (a checkpoint, the next episode) is handled between the
        // request and the draw from this agent's generator.
        AtomicResponse::new(Box::pin(answered.into_actor(self).map(
            move |row, this, _| {
                Ok(match row {
                    Ok(Ok(logits)) => this.policy.choose(&logits, &msg.obs.legal),
                    Ok(Err(why)) => fallback(why),
                    Err(oneshot::Canceled) => fallback("the shared network has stopped".into()),
                })
            },
        )))
    }
}

impl Handler<BeginEpisode> for BatchedDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.policy.reset(&msg.ctx);
        Ok(())
    }
}

impl Handler<SaveState> for BatchedDecider {
    type Result = Result<Option<serde_json::Value>, DeciderError>;

    fn handle(&mut self, _: SaveState, _: &mut Context<Self>) -> Self::Result {
        Ok(self.policy.save_state())
    }
}

impl Handler<LoadState> for BatchedDecider {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: LoadState, _: &mut Context<Self>) -> Self::Result {
        self.policy
            .load_state(&msg.0)
            .map_err(|reason| StateError::Policy(reason).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Architecture;
    use crate::net::{ActorCritic, NetShape};
    use crate::policy::Inference;
    use mosaic_core::{AgentContext, Observation, Tensor};
    use std::sync::Mutex;

    /// A real MLP that also notes the rows of each forward pass.
    #[derive(Debug)]
    struct Counting {
        net: Inference,
        passes: Mutex<Vec<usize>>,
    }

    impl PolicyNet for Counting {
        fn obs_len(&self) -> usize {
            self.net.obs_len()
        }
        fn actions(&self) -> usize {
            self.net.actions()
        }
        fn logits(&self, obs: &[f32], rows: usize) -> crate::error::Result<Vec<f32>> {
            self.passes.lock().unwrap().push(rows);
            self.net.logits(obs, rows)
        }
        fn row_independent(&self) -> bool {
            self.net.row_independent()
        }
    }

    fn observation(agent: usize) -> Arc<Observation> {
        let values = (0..6)
            .map(|i| ((agent * 6 + i) as f32 * 0.7).sin())
            .collect();
        Arc::new(Observation {
            symbolic: Some(Tensor {
                shape: vec![6],
                data: values,
            }),
            ..Observation::with_mask(agent, vec![true, true, false, true])
        })
    }

    fn agent(seed: u64, agent: usize) -> AgentContext {
        AgentContext {
            episode_seed: 1,
            agent,
            agent_id: format!("a{agent}"),
            num_actions: 4,
            seed,
        }
    }

    #[actix_rt::test]
    async fn agents_of_a_step_share_one_forward_pass_and_decide_as_alone() {
        let shape = NetShape::new(vec![6], 4, Architecture::default());
        let inference = Inference::new(&ActorCritic::new(shape, 3).unwrap()).unwrap();
        let counting = Arc::new(Counting {
            net: inference.clone(),
            passes: Mutex::new(Vec::new()),
        });
        let shared = SessionShared::default();
        let net = SessionNet::get_or_load(&shared, "rl:test", || {
            Ok::<_, ()>(counting.clone() as Arc<dyn PolicyNet>)
        })
        .unwrap();
        assert!(net.batched.is_some());
        let again = SessionNet::get_or_load(&shared, "rl:test", || Err(())).unwrap();
        assert!(Arc::ptr_eq(&net.net, &again.net));

        let deciders: Vec<_> = (0..4).map(|_| net.start_decider("rl", false)).collect();
        let mut alone: Vec<_> = (0..4)
            .map(|_| RlPolicy::new(Arc::new(inference.clone()), false))
            .collect();
        for (i, (decider, policy)) in deciders.iter().zip(&mut alone).enumerate() {
            let ctx = agent(40 + i as u64, i);
            decider
                .begin
                .send(BeginEpisode {
                    ctx: ctx.clone(),
                    spec: Arc::new(crate::checkpoint::tests::spec()),
                })
                .await
                .unwrap()
                .unwrap();
            policy.reset(&ctx);
        }
        for step in 0..5 {
            let asks = deciders.iter().enumerate().map(|(i, d)| {
                d.decide.send(Decide {
                    obs: observation(i + step),
                    step: step as u32,
                    deadline: None,
                })
            });
            let answers = futures::future::join_all(asks).await;
            for (i, answer) in answers.into_iter().enumerate() {
                let decision = answer.unwrap().unwrap();
                assert_eq!(decision.source, DecisionSource::Policy);
                assert_eq!(
                    decision,
                    alone[i].decide(&observation(i + step)),
                    "agent {i}"
                );
            }
        }
        assert_eq!(*counting.passes.lock().unwrap(), vec![4; 5]);
    }
}
