//! Experience collection: environments stepped in lock-step on worker threads, the learning
//! agents of each group answered by one batched forward pass per step.
//!
//! Each agent's experience is a stream of transitions; a transition stays open (its reward
//! still growing) until the agent decides again or its episode ends. An open transition is
//! carried into the next rollout, so that sequential games, where rewards arrive on other
//! agents' turns, are credited right.

use crate::error::Result;
use crate::net::{NetShape, choose, mask_row};
use crate::policy::{Inference, PolicyNet, push_observation};
use crate::train::selfplay::Frozen;
use mosaic_core::rng::{Rng, derive_seed, seeded};
use mosaic_core::{
    Action, AgentContext, Environment, ObsRequest, Observation, Outcome, Policy, Transition,
};

/// One agent's transitions, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// Observations, row after row.
    pub obs: Vec<f32>,
    /// The critic's inputs, row after row (the observation, or the team's under MAPPO).
    pub critic: Vec<f32>,
    /// Additive action masks, row after row.
    pub masks: Vec<f32>,
    /// Actions taken.
    pub actions: Vec<u32>,
    /// Their log-probabilities when taken.
    pub logps: Vec<f32>,
    /// The critic's values of the observations.
    pub values: Vec<f32>,
    /// Rewards received after each decision, up to the next one.
    pub rewards: Vec<f32>,
    /// Whether the episode ended after the transition.
    pub dones: Vec<bool>,
    /// Recurrent networks: the state before each decision (the actor's, then the
    /// critic's), row after row; the update unrolls its sequences from these.
    pub states: Vec<f32>,
}

impl Stream {
    /// Transitions held.
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Transitions whose reward is final: all but a last one still open.
    pub fn complete(&self) -> usize {
        match self.dones.last() {
            Some(false) => self.len() - 1,
            _ => self.len(),
        }
    }

    /// Keeps only the open transition (if any), dropping the `complete` ones before it.
    pub fn keep_open(&mut self, shape: &NetShape) {
        let done = self.complete();
        self.obs.drain(..done * shape.obs_len());
        self.critic.drain(..done * shape.critic_len());
        self.masks.drain(..done * shape.actions);
        self.states.drain(..done * shape.training_state_len());
        for v in [&mut self.logps, &mut self.values, &mut self.rewards] {
            v.drain(..done);
        }
        self.actions.drain(..done);
        self.dones.drain(..done);
    }

    /// Forgets everything (a cut episode's open transition is never trained on).
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// An episode that ended during a rollout.
#[derive(Clone, Debug)]
pub struct Finished {
    /// Its seed.
    pub seed: u64,
    /// Steps taken.
    pub steps: u32,
    /// Ended in a terminal state (else truncated).
    pub terminated: bool,
    /// Return of each agent.
    pub returns: Vec<f64>,
    /// Decisions of each agent.
    pub decisions: Vec<u32>,
    /// Each agent's result, when the game has a winner.
    pub outcome: Option<Vec<Outcome>>,
    /// The environment's metrics.
    pub metrics: serde_json::Map<String, serde_json::Value>,
}

/// Who plays an agent slot during training.
pub enum Player {
    /// A learning agent of group `.0`.
    Learner(usize),
    /// A fixed policy.
    Fixed(Box<dyn Policy>),
    /// Frozen snapshots of a learning group's policy (self-play).
    Frozen(Frozen),
}

impl std::fmt::Debug for Player {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Player").finish_non_exhaustive()
    }
}

impl Player {
    /// The policy of a player that does not learn.
    fn policy(&mut self) -> Option<&mut dyn Policy> {
        match self {
            Player::Learner(_) => None,
            Player::Fixed(policy) => Some(policy.as_mut()),
            Player::Frozen(frozen) => Some(frozen),
        }
    }
}

/// One environment and everything that plays in it.
pub struct EnvRunner {
    index: usize,
    base_seed: u64,
    env: Box<dyn Environment>,
    players: Vec<Player>,
    /// Each group's agents, in agent order.
    teams: Vec<Vec<usize>>,
    /// With zero-sum rewards: per agent, its opponents, whose mean reward it learns minus.
    opponents: Option<Vec<Vec<usize>>>,
    /// Per acting agent (as in `observations`): a learner's critic input.
    critic_inputs: Vec<Vec<f32>>,
    /// Per agent: a recurrent learner's state (the actor's, then the critic's), zero at
    /// the start of each episode.
    hidden: Vec<Vec<f32>>,
    /// Per agent.
    pub streams: Vec<Stream>,
    /// Episodes started so far (seeds the next).
    pub episodes_started: u64,
    running: bool,
    episode_seed: u64,
    returns: Vec<f64>,
    decisions: Vec<u32>,
    transition: Transition,
    actions: Vec<Option<Action>>,
    acting: Vec<usize>,
    observations: Vec<Observation>,
    /// Episodes that ended in the current rollout.
    pub finished: Vec<Finished>,
    /// Environment steps taken in the current rollout.
    pub steps: u64,
}

impl std::fmt::Debug for EnvRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvRunner").finish_non_exhaustive()
    }
}

impl EnvRunner {
    /// Environment `index` of a run seeded `base_seed`, with one player per agent, the
    /// agents of each learning group and, to learn from zero-sum rewards, each agent's
    /// opponents.
    pub fn new(
        index: usize,
        base_seed: u64,
        env: Box<dyn Environment>,
        players: Vec<Player>,
        teams: Vec<Vec<usize>>,
        opponents: Option<Vec<Vec<usize>>>,
    ) -> Self {
        let agents = env.spec().agents.len();
        Self {
            index,
            base_seed,
            env,
            players,
            teams,
            opponents,
            critic_inputs: Vec::new(),
            hidden: vec![Vec::new(); agents],
            streams: vec![Stream::default(); agents],
            episodes_started: 0,
            running: false,
            episode_seed: 0,
            returns: vec![0.0; agents],
            decisions: vec![0; agents],
            transition: Transition::new(agents),
            actions: vec![None; agents],
            acting: Vec::new(),
            observations: Vec::new(),
            finished: Vec::new(),
            steps: 0,
        }
    }

    /// The self-play slots, to give them new snapshots.
    pub fn frozen(&mut self) -> impl Iterator<Item = &mut Frozen> {
        self.players.iter_mut().filter_map(|p| match p {
            Player::Frozen(frozen) => Some(frozen),
            _ => None,
        })
    }

    /// Abandons the running episode: the next step starts a new one, and open
    /// transitions are dropped.
    pub fn cut(&mut self) {
        self.running = false;
        self.streams.iter_mut().for_each(Stream::clear);
    }

    fn start_episode(&mut self) -> Result<()> {
        let seed = derive_seed(
            self.base_seed,
            &format!("env{}-episode{}", self.index, self.episodes_started),
        );
        self.episodes_started += 1;
        self.episode_seed = seed;
        self.env.reset(seed)?;
        let spec = self.env.spec();
        let actions = spec.action_labels.len();
        for (agent, player) in self.players.iter_mut().enumerate() {
            if let Some(policy) = player.policy() {
                let id = spec.agents[agent].id.clone();
                policy.reset(&AgentContext::new(seed, agent, id, actions));
            }
        }
        self.returns.iter_mut().for_each(|r| *r = 0.0);
        self.hidden.iter_mut().flatten().for_each(|h| *h = 0.0);
        self.decisions.iter_mut().for_each(|d| *d = 0);
        self.running = true;
        Ok(())
    }

    /// Observes the acting agents; appends each learning agent's observation, critic input
    /// and mask to its group's request.
    fn observe(&mut self, requests: &mut [Request], shapes: &[&NetShape]) -> Result<()> {
        if !self.running {
            self.start_episode()?;
        }
        self.acting = self.env.acting();
        self.observations.clear();
        self.critic_inputs.clear();
        let actions = self.env.spec().action_labels.len();
        for &agent in &self.acting {
            let want = self.players[agent]
                .policy()
                .map_or(ObsRequest::SYMBOLIC, |policy| policy.wants());
            let obs = self.env.observe(agent, want);
            let mut critic = Vec::new();
            if let Player::Learner(group) = self.players[agent] {
                let shape = shapes[group];
                let obs_len = shape.obs_len();
                push_observation(&obs, obs_len, &mut critic)?;
                if shape.critic_agents > 1 {
                    for &mate in self.teams[group].iter().filter(|&&m| m != agent) {
                        let seen = self.env.observe(mate, ObsRequest::SYMBOLIC);
                        push_observation(&seen, obs_len, &mut critic)?;
                    }
                }
                let hidden = &mut self.hidden[agent];
                hidden.resize(shape.training_state_len(), 0.0);
                let request = &mut requests[group];
                request.state.extend_from_slice(hidden);
                request.obs.extend_from_slice(&critic[..obs_len]);
                request.critic.extend_from_slice(&critic);
                let all = obs.legal.is_empty();
                request
                    .legal
                    .extend((0..actions).map(|i| obs.legal.get(i).copied().unwrap_or(all)));
                request.rows.push((self.index, agent));
            }
            self.observations.push(obs);
            self.critic_inputs.push(critic);
        }
        Ok(())
    }

    /// Takes one step with the learners' `choices` (per group, in request order) and the
    /// fixed players' decisions.
    fn step(&mut self, answers: &mut [Answers], shapes: &[&NetShape]) -> Result<()> {
        let spec = self.env.spec();
        let actions = spec.action_labels.len();
        self.actions.iter_mut().for_each(|a| *a = None);
        for (slot, &agent) in self.acting.iter().enumerate() {
            let obs = &self.observations[slot];
            let action = match &mut self.players[agent] {
                Player::Fixed(policy) => policy.decide(obs).action,
                Player::Frozen(frozen) => frozen.decide(obs).action,
                Player::Learner(group) => {
                    let answer = answers[*group].next();
                    let stream = &mut self.streams[agent];
                    let critic = &self.critic_inputs[slot];
                    stream
                        .obs
                        .extend_from_slice(&critic[..shapes[*group].obs_len()]);
                    stream.critic.extend_from_slice(critic);
                    mask_row(&obs.legal, actions, &mut stream.masks);
                    stream.states.extend_from_slice(&self.hidden[agent]);
                    self.hidden[agent] = answer.state;
                    stream.actions.push(answer.action as u32);
                    stream.logps.push(answer.logp);
                    stream.values.push(answer.value);
                    stream.rewards.push(0.0);
                    stream.dones.push(false);
                    Action(answer.action as u32)
                }
            };
            self.decisions[agent] += 1;
            self.actions[agent] = Some(action);
        }
        self.env.step(&self.actions, &mut self.transition)?;
        self.steps += 1;
        let rewards = &self.transition.rewards;
        for (agent, reward) in rewards.iter().enumerate() {
            self.returns[agent] += f64::from(*reward);
            let stream = &mut self.streams[agent];
            if let (Some(last), Some(false)) = (stream.rewards.last_mut(), stream.dones.last()) {
                *last += match self.opponents.as_ref().map(|o| &o[agent]) {
                    Some(opponents) if !opponents.is_empty() => {
                        let theirs: f32 = opponents.iter().map(|o| rewards[*o]).sum();
                        reward - theirs / opponents.len() as f32
                    }
                    _ => *reward,
                };
            }
        }
        if self.env.acting().is_empty() || self.transition.all_done() {
            for stream in &mut self.streams {
                if let Some(done) = stream.dones.last_mut() {
                    *done = true;
                }
            }
            self.finished.push(Finished {
                seed: self.episode_seed,
                steps: self.env.steps(),
                terminated: self.transition.terminated.iter().any(|t| *t),
                returns: self.returns.clone(),
                decisions: self.decisions.clone(),
                outcome: self.env.outcome(),
                metrics: self.env.metrics(),
            });
            self.running = false;
        }
        Ok(())
    }
}

/// The learning agents of one group asking for decisions at one step.
#[derive(Default)]
struct Request {
    obs: Vec<f32>,
    critic: Vec<f32>,
    legal: Vec<bool>,
    /// Recurrent networks: each row's state (the actor's, then the critic's).
    state: Vec<f32>,
    /// (environment index, agent) of each row.
    rows: Vec<(usize, usize)>,
}

/// One learner's decision.
#[derive(Default)]
struct Answer {
    action: usize,
    logp: f32,
    value: f32,
    /// A recurrent network's state after the decision (empty otherwise).
    state: Vec<f32>,
}

/// A group's decisions, handed out in request order.
struct Answers {
    list: Vec<Answer>,
    next: usize,
}

impl Answers {
    fn next(&mut self) -> Answer {
        let answer = std::mem::take(&mut self.list[self.next]);
        self.next += 1;
        answer
    }
}

/// Steps every environment of `runners` `steps` times, with the groups' `nets`; action draws
/// come from one RNG per environment, seeded from (`seed`, environment, `update`), so the
/// result does not depend on how environments are spread over threads.
pub fn collect(
    runners: &mut [EnvRunner],
    nets: &[Inference],
    steps: usize,
    seed: u64,
    update: u64,
) -> Result<()> {
    let mut rngs: Vec<Rng> = runners
        .iter()
        .map(|r| seeded(derive_seed(seed, &format!("env{}-update{update}", r.index))))
        .collect();
    for runner in runners.iter_mut() {
        runner.finished.clear();
        runner.steps = 0;
    }
    let shapes: Vec<&NetShape> = nets.iter().map(|n| n.net().shape()).collect();
    for _ in 0..steps {
        let mut requests: Vec<Request> = nets.iter().map(|_| Request::default()).collect();
        for runner in runners.iter_mut() {
            runner.observe(&mut requests, &shapes)?;
        }
        let mut answers = Vec::with_capacity(nets.len());
        for (net, request) in nets.iter().zip(&requests) {
            let rows = request.rows.len();
            let list = if rows == 0 {
                Vec::new()
            } else {
                let Forward {
                    logits,
                    values,
                    states,
                } = forward(net, request)?;
                let actions = net.net().shape().actions;
                let first_env = runners.first().map_or(0, |r| r.index);
                (0..rows)
                    .map(|row| {
                        let rng = &mut rngs[request.rows[row].0 - first_env];
                        let legal = &request.legal[row * actions..(row + 1) * actions];
                        let (action, logp) = choose(
                            &logits[row * actions..(row + 1) * actions],
                            legal,
                            Some(rng),
                        );
                        Answer {
                            action,
                            logp,
                            value: values[row],
                            state: states.get(row).cloned().unwrap_or_default(),
                        }
                    })
                    .collect()
            };
            answers.push(Answers { list, next: 0 });
        }
        for runner in runners.iter_mut() {
            runner.step(&mut answers, &shapes)?;
        }
    }
    Ok(())
}

/// What a group's network answers to one step's request.
struct Forward {
    logits: Vec<f32>,
    values: Vec<f32>,
    /// A recurrent network's state of each row after the step (empty otherwise).
    states: Vec<Vec<f32>>,
}

/// The forward pass of a group's request.
fn forward(net: &Inference, request: &Request) -> Result<Forward> {
    let rows = request.rows.len();
    let Some(units) = net.net().shape().gru_units() else {
        return Ok(Forward {
            logits: net.logits(&request.obs, rows)?,
            values: net.values(&request.critic, rows)?,
            states: Vec::new(),
        });
    };
    // Each row's state is the actor's `units` values, then the critic's.
    let mut actor = Vec::with_capacity(rows * units);
    let mut critic = Vec::with_capacity(rows * units);
    for row in request.state.chunks_exact(2 * units) {
        actor.extend_from_slice(&row[..units]);
        critic.extend_from_slice(&row[units..]);
    }
    let logits = net.step(&request.obs, &mut actor, rows)?;
    let values = net.values_step(&request.critic, &mut critic, rows)?;
    let states = actor
        .chunks_exact(units)
        .zip(critic.chunks_exact(units))
        .map(|(a, c)| [a, c].concat())
        .collect();
    Ok(Forward {
        logits,
        values,
        states,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{ActorCritic, Architecture};
    use mosaic_core::{AgentSpec, EnvError, EnvSpec, Stepping, Tensor};

    /// Two agents of two teams; every step agent 0 gets 1 and agent 1 gets 3; two steps.
    struct Duel {
        spec: EnvSpec,
        steps: u32,
    }

    impl Duel {
        fn new() -> Self {
            let agent = |id: &str, team: &str| AgentSpec {
                id: id.into(),
                team: Some(team.into()),
                role: None,
            };
            Self {
                spec: EnvSpec {
                    name: "duel".into(),
                    agents: vec![agent("a_0", "a"), agent("b_0", "b")],
                    action_labels: vec!["stay".into(), "wait".into()],
                    default_action: Action(0),
                    stepping: Stepping::Simultaneous,
                    max_steps: Some(2),
                    symbolic_shape: Some(vec![1]),
                    offers: ObsRequest::SYMBOLIC,
                    descriptions: Default::default(),
                },
                steps: 2,
            }
        }
    }

    impl Environment for Duel {
        fn spec(&self) -> &EnvSpec {
            &self.spec
        }

        fn reset(&mut self, _seed: u64) -> std::result::Result<(), EnvError> {
            self.steps = 0;
            Ok(())
        }

        fn acting(&self) -> Vec<usize> {
            if self.steps < 2 {
                vec![0, 1]
            } else {
                Vec::new()
            }
        }

        fn observe(&self, agent: usize, _want: ObsRequest) -> Observation {
            Observation {
                symbolic: Some(Tensor {
                    shape: vec![1],
                    data: vec![0.0],
                }),
                ..Observation::with_mask(agent, vec![true, true])
            }
        }

        fn step(
            &mut self,
            _actions: &[Option<Action>],
            out: &mut Transition,
        ) -> std::result::Result<(), EnvError> {
            out.clear(2);
            out.rewards.copy_from_slice(&[1.0, 3.0]);
            self.steps += 1;
            if self.steps == 2 {
                out.terminated.iter_mut().for_each(|t| *t = true);
            }
            Ok(())
        }

        fn steps(&self) -> u32 {
            self.steps
        }
    }

    /// Agent 0 learns, agent 1 does nothing; the learner's stream rewards after one
    /// two-step episode, and the episode's recorded returns.
    fn one_episode(opponents: Option<Vec<Vec<usize>>>) -> (Vec<f32>, Vec<f64>) {
        let shape = NetShape::new(
            vec![1],
            2,
            Architecture::Mlp {
                hidden: vec![4],
                gru: None,
            },
        );
        let net = Inference::new(&ActorCritic::new(shape, 3).unwrap()).unwrap();
        let players = vec![
            Player::Learner(0),
            Player::Fixed(Box::new(mosaic_core::baseline::Noop { action: None })),
        ];
        let mut runner = EnvRunner::new(
            0,
            7,
            Box::new(Duel::new()),
            players,
            vec![vec![0]],
            opponents,
        );
        collect(std::slice::from_mut(&mut runner), &[net], 2, 7, 0).unwrap();
        (
            runner.streams[0].rewards.clone(),
            runner.finished[0].returns.clone(),
        )
    }

    #[test]
    fn zero_sum_rewards_are_learned_minus_the_opponents_and_recorded_as_given() {
        assert_eq!(one_episode(None), (vec![1.0, 1.0], vec![2.0, 6.0]));
        let opponents = crate::train::opponents(&Duel::new().spec);
        assert_eq!(opponents, [vec![1], vec![0]]);
        assert_eq!(
            one_episode(Some(opponents)),
            (vec![-2.0, -2.0], vec![2.0, 6.0])
        );
    }
}
