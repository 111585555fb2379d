//! Replay check: runs an episode again from its seed and recorded actions and checks
//! that the environment gives the recorded rewards and terminations.
//!
//! The recorder knows no environments: the caller builds the environment (the command
//! line takes it from the environment registry) and passes it in, with a callback that
//! sees each replayed step (to print a text view or write frames).

use mosaic_core::record::{EpisodeRecord, StepRecord};
use mosaic_core::{Action, Environment, Transition};

/// Why a replay failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// The episode has no step records.
    #[error("{episode}: no step records to replay")]
    NoSteps {
        /// The episode id.
        episode: String,
    },
    /// A record names an agent the environment does not have.
    #[error("{episode} step {step}: agent `{agent}` is not an agent of {env}")]
    UnknownAgent {
        /// The episode id.
        episode: String,
        /// Step index.
        step: u32,
        /// The agent id recorded.
        agent: String,
        /// Environment name.
        env: String,
    },
    /// The environment failed.
    #[error("{episode} step {step}: environment failed: {message}")]
    Env {
        /// The episode id.
        episode: String,
        /// Step index.
        step: u32,
        /// What it said.
        message: String,
    },
    /// The replay differs from the records.
    #[error(
        "{episode} step {step} agent {agent}: recorded {field} {recorded}, replayed {replayed}"
    )]
    Mismatch {
        /// The episode id.
        episode: String,
        /// Step index.
        step: u32,
        /// Agent id.
        agent: String,
        /// `reward`, `terminated`, `truncated`, `acting`.
        field: &'static str,
        /// The recorded value.
        recorded: String,
        /// The replayed value.
        replayed: String,
    },
    /// The callback stopped the replay.
    #[error("{0}")]
    Callback(String),
}

/// One replayed step, as shown to the callback.
#[derive(Debug)]
pub struct ReplayedStep<'a> {
    /// Step index.
    pub step_index: u32,
    /// The step's records.
    pub records: &'a [StepRecord],
    /// What the environment returned.
    pub transition: &'a Transition,
}

/// Sees a replay as it goes: the environment before each step (as the acting agents saw
/// it) and after it. A closure `FnMut(&dyn Environment, &ReplayedStep) -> Result<(), String>`
/// is an observer that only looks after each step.
pub trait ReplayObserver {
    /// Before step `step_index` (with its `records`) is replayed.
    fn before_step(
        &mut self,
        env: &dyn Environment,
        step_index: u32,
        records: &[StepRecord],
    ) -> Result<(), String> {
        let _ = (env, step_index, records);
        Ok(())
    }

    /// After a step was replayed and checked against its records.
    fn after_step(&mut self, env: &dyn Environment, step: &ReplayedStep<'_>) -> Result<(), String>;
}

impl<F> ReplayObserver for F
where
    F: FnMut(&dyn Environment, &ReplayedStep<'_>) -> Result<(), String>,
{
    fn after_step(&mut self, env: &dyn Environment, step: &ReplayedStep<'_>) -> Result<(), String> {
        self(env, step)
    }
}

/// What a successful replay covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplaySummary {
    /// Steps replayed.
    pub steps: u32,
    /// Step records checked.
    pub records: u64,
}

/// Replays `steps` (the episode's step records in step then agent order) of `episode` in
/// `env`, showing every step to `observer` before and after it. `max_steps` is the experiment's own step limit:
/// a truncation recorded at that step is the session's, not the environment's.
pub fn replay(
    env: &mut dyn Environment,
    episode: &EpisodeRecord,
    steps: &[StepRecord],
    max_steps: Option<u32>,
    mut observer: impl ReplayObserver,
) -> Result<ReplaySummary, ReplayError> {
    let id = || episode.episode_id.clone();
    if steps.is_empty() {
        return Err(ReplayError::NoSteps { episode: id() });
    }
    env.reset(episode.seed).map_err(|e| ReplayError::Env {
        episode: id(),
        step: 0,
        message: e.to_string(),
    })?;
    let agents = env.spec().agents.len();
    let mut transition = Transition::new(agents);
    let mut summary = ReplaySummary {
        steps: 0,
        records: 0,
    };
    for records in steps.chunk_by(|a, b| a.step_index == b.step_index) {
        let step = records[0].step_index;
        let mut actions: Vec<Option<Action>> = vec![None; agents];
        let mut indices = Vec::with_capacity(records.len());
        for record in records {
            let index = env.spec().agent_index(&record.agent_id).ok_or_else(|| {
                ReplayError::UnknownAgent {
                    episode: id(),
                    step,
                    agent: record.agent_id.clone(),
                    env: env.spec().name.clone(),
                }
            })?;
            actions[index] = record.action.map(Action);
            indices.push(index);
        }
        let acting = env.acting();
        let recorded_acting: Vec<usize> = (0..agents).filter(|i| actions[*i].is_some()).collect();
        if acting != recorded_acting {
            return Err(ReplayError::Mismatch {
                episode: id(),
                step,
                agent: "*".into(),
                field: "acting",
                recorded: format!("{recorded_acting:?}"),
                replayed: format!("{acting:?}"),
            });
        }
        observer
            .before_step(env, step, records)
            .map_err(ReplayError::Callback)?;
        env.step(&actions, &mut transition)
            .map_err(|e| ReplayError::Env {
                episode: id(),
                step,
                message: e.to_string(),
            })?;
        let cut_by_session = max_steps == Some(step + 1);
        for (record, index) in records.iter().zip(indices) {
            let mismatch = |field, recorded: String, replayed: String| ReplayError::Mismatch {
                episode: id(),
                step,
                agent: record.agent_id.clone(),
                field,
                recorded,
                replayed,
            };
            let reward = transition.rewards.get(index).copied().unwrap_or(0.0);
            if reward.to_bits() != record.reward.to_bits() {
                return Err(mismatch(
                    "reward",
                    record.reward.to_string(),
                    reward.to_string(),
                ));
            }
            let terminated = transition.terminated.get(index).copied().unwrap_or(false);
            if terminated != record.terminated {
                return Err(mismatch(
                    "terminated",
                    record.terminated.to_string(),
                    terminated.to_string(),
                ));
            }
            let truncated = transition.truncated.get(index).copied().unwrap_or(false);
            if truncated != record.truncated && !(cut_by_session && record.truncated) {
                return Err(mismatch(
                    "truncated",
                    record.truncated.to_string(),
                    truncated.to_string(),
                ));
            }
            summary.records += 1;
        }
        summary.steps += 1;
        observer
            .after_step(
                env,
                &ReplayedStep {
                    step_index: step,
                    records,
                    transition: &transition,
                },
            )
            .map_err(ReplayError::Callback)?;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_core::record::STEP_SCHEMA;
    use mosaic_core::{
        AgentSpec, EnvError, EnvSpec, ObsRequest, Observation, Paradigm, Stepping, rng,
    };
    use rand::Rng as _;

    /// Two agents act together; the reward is random from the seed, plus the action; the
    /// episode ends after `length` steps.
    struct Dice {
        spec: EnvSpec,
        random: rng::Rng,
        steps: u32,
        length: u32,
    }

    impl Dice {
        fn new(length: u32) -> Self {
            Self {
                spec: EnvSpec {
                    name: "dice".into(),
                    agents: vec![
                        AgentSpec {
                            id: "p0".into(),
                            team: None,
                            role: None,
                        },
                        AgentSpec {
                            id: "p1".into(),
                            team: None,
                            role: None,
                        },
                    ],
                    action_labels: vec!["low".into(), "high".into()],
                    default_action: Action(0),
                    stepping: Stepping::Simultaneous,
                    max_steps: None,
                    symbolic_shape: None,
                    offers: ObsRequest::MASK_ONLY,
                    descriptions: Default::default(),
                },
                random: rng::seeded(0),
                steps: 0,
                length,
            }
        }
    }

    impl Environment for Dice {
        fn spec(&self) -> &EnvSpec {
            &self.spec
        }
        fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
            self.random = rng::seeded(seed);
            self.steps = 0;
            Ok(())
        }
        fn acting(&self) -> Vec<usize> {
            if self.steps < self.length {
                vec![0, 1]
            } else {
                vec![]
            }
        }
        fn observe(&self, agent: usize, _: ObsRequest) -> Observation {
            Observation::with_mask(agent, vec![true, true])
        }
        fn step(
            &mut self,
            actions: &[Option<Action>],
            out: &mut Transition,
        ) -> Result<(), EnvError> {
            out.clear(2);
            self.steps += 1;
            for (i, action) in actions.iter().enumerate() {
                let roll = self.random.random_range(0..6u32) as f32;
                out.rewards[i] = roll * 0.25 + action.map_or(0.0, |a| a.0 as f32);
                out.terminated[i] = self.steps == self.length;
            }
            Ok(())
        }
        fn steps(&self) -> u32 {
            self.steps
        }
    }

    /// Plays an episode and records it as a session would.
    fn record(seed: u64, length: u32) -> (EpisodeRecord, Vec<StepRecord>) {
        let mut env = Dice::new(length);
        env.reset(seed).unwrap();
        let mut out = Transition::new(2);
        let mut records = Vec::new();
        let mut step = 0;
        while !env.acting().is_empty() {
            let actions = vec![Some(Action(step % 2)), Some(Action(1))];
            env.step(&actions, &mut out).unwrap();
            for (agent, action) in actions.iter().enumerate() {
                records.push(StepRecord {
                    schema: STEP_SCHEMA.into(),
                    run_id: "r".into(),
                    operator_id: "o".into(),
                    episode_id: "r-o-ep000000".into(),
                    episode_index: 0,
                    seed,
                    step_index: step,
                    agent_id: format!("p{agent}"),
                    paradigm: Paradigm::Scripted,
                    kind: "cycling".into(),
                    action: action.map(|a| a.0),
                    action_label: None,
                    decision_source: None,
                    reward: out.rewards[agent],
                    terminated: out.terminated[agent],
                    truncated: out.truncated[agent],
                    observation: None,
                    events: vec![],
                    decision: None,
                    decision_us: 0,
                    timestamp: 0,
                });
            }
            step += 1;
        }
        let mut episode =
            crate::synthetic::episode(&crate::synthetic::unit("r", "o", 0, seed), 0, 0).record;
        episode.steps = step;
        (episode, records)
    }

    /// Notes the environment's step count before and after every replayed step.
    #[derive(Default)]
    struct StepCounts(Vec<(&'static str, u32, u32)>);

    impl ReplayObserver for &mut StepCounts {
        fn before_step(
            &mut self,
            env: &dyn Environment,
            step_index: u32,
            _: &[StepRecord],
        ) -> Result<(), String> {
            self.0.push(("before", step_index, env.steps()));
            Ok(())
        }
        fn after_step(
            &mut self,
            env: &dyn Environment,
            step: &ReplayedStep<'_>,
        ) -> Result<(), String> {
            self.0.push(("after", step.step_index, env.steps()));
            Ok(())
        }
    }

    fn ignore(_: &dyn Environment, _: &ReplayedStep<'_>) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn a_faithful_record_replays() {
        let (episode, steps) = record(42, 5);
        let mut seen = StepCounts::default();
        let summary = replay(&mut Dice::new(5), &episode, &steps, None, &mut seen).unwrap();
        assert_eq!(
            summary,
            ReplaySummary {
                steps: 5,
                records: 10
            }
        );
        let expected: Vec<_> = (0..5)
            .flat_map(|i| [("before", i, i), ("after", i, i + 1)])
            .collect();
        assert_eq!(seen.0, expected);
        // A closure sees each step after it.
        let mut after = Vec::new();
        replay(
            &mut Dice::new(5),
            &episode,
            &steps,
            None,
            |env: &dyn Environment, step: &ReplayedStep<'_>| {
                after.push((step.step_index, env.steps()));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(after, (0..5).map(|i| (i, i + 1)).collect::<Vec<_>>());
    }

    #[test]
    fn an_observer_error_stops_the_replay() {
        let (episode, steps) = record(42, 5);
        let err = replay(
            &mut Dice::new(5),
            &episode,
            &steps,
            None,
            |_: &dyn Environment, step: &ReplayedStep<'_>| {
                if step.step_index == 2 {
                    Err("disk full".to_owned())
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert_eq!(err, ReplayError::Callback("disk full".into()));
    }

    #[test]
    fn differences_fail_loudly_naming_step_agent_and_field() {
        let (episode, steps) = record(42, 5);
        let mut tampered = steps.clone();
        tampered[7].reward += 1.0;
        let err = replay(&mut Dice::new(5), &episode, &tampered, None, ignore).unwrap_err();
        assert!(
            matches!(&err, ReplayError::Mismatch { step: 3, field: "reward", agent, .. } if agent == "p1"),
            "{err}"
        );
        // Another action changes the replayed reward.
        let mut tampered = steps.clone();
        tampered[2].action = Some(1 - tampered[2].action.unwrap());
        let err = replay(&mut Dice::new(5), &episode, &tampered, None, ignore).unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::Mismatch {
                    step: 1,
                    field: "reward",
                    ..
                }
            ),
            "{err}"
        );
        // Another seed, other rolls.
        let mut other = episode.clone();
        other.seed = 43;
        assert!(replay(&mut Dice::new(5), &other, &steps, None, ignore).is_err());
        // A shorter environment ends before the records do.
        let err = replay(&mut Dice::new(4), &episode, &steps, None, ignore).unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::Mismatch {
                    field: "terminated",
                    ..
                }
            ),
            "{err}"
        );
        let mut unknown = steps.clone();
        unknown[0].agent_id = "p9".into();
        assert!(matches!(
            replay(&mut Dice::new(5), &episode, &unknown, None, ignore),
            Err(ReplayError::UnknownAgent { .. })
        ));
    }
}
