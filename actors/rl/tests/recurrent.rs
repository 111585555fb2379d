//! Recurrent (GRU) policies end to end: a memory task that a feed-forward policy cannot
//! solve but a GRU learns, and recurrent training runs that depend on the seed only and
//! resume exactly.

mod support;

use mosaic_core::experiment::SpecError;
use mosaic_core::{
    Action, AgentContext, AgentSpec, EnvError, EnvRegistry, EnvSpec, Environment, ObsRequest,
    Observation, Policy, Settings, Stepping, Tensor, Transition,
};
use mosaic_rl::policy::{Inference, RlPolicy};
use mosaic_rl::train::{PpoConfig, Trainer, TrainerBuilder};
use mosaic_rl::{Architecture, Checkpoint};
use std::path::Path;
use std::sync::Arc;

/// Blank steps between the cue and the question.
const DELAY: u32 = 2;

/// Remember a cue: the first observation shows one of two cues, the next `DELAY` show
/// nothing, the last asks which cue it was (reward 1 for the right answer, then the episode
/// ends). Until the question, actions change nothing. The question's observation is the
/// same whatever the cue, so a policy without memory answers it right half the time.
struct Recall {
    spec: EnvSpec,
    cue: usize,
    steps: u32,
    over: bool,
}

fn make_recall(_: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(Recall {
        spec: EnvSpec {
            name: "recall".into(),
            agents: vec![AgentSpec {
                id: "player".into(),
                team: None,
                role: None,
            }],
            action_labels: vec!["first".into(), "second".into()],
            default_action: Action(0),
            stepping: Stepping::Single,
            max_steps: Some(DELAY + 2),
            symbolic_shape: Some(vec![3]),
            offers: ObsRequest::SYMBOLIC,
            descriptions: Default::default(),
        },
        cue: 0,
        steps: 0,
        over: true,
    }))
}

impl Environment for Recall {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: u64) -> Result<(), EnvError> {
        // Seeds are hashes: their low bit is as good as a coin.
        (self.cue, self.steps, self.over) = ((seed % 2) as usize, 0, false);
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.over { Vec::new() } else { vec![0] }
    }

    fn observe(&self, agent: usize, _want: ObsRequest) -> Observation {
        let mut data = vec![0.0; 3];
        if self.steps == 0 {
            data[self.cue] = 1.0;
        } else if self.steps == DELAY + 1 {
            data[2] = 1.0;
        }
        Observation {
            symbolic: Some(Tensor {
                shape: vec![3],
                data,
            }),
            ..Observation::with_mask(agent, vec![true, true])
        }
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        out.clear(1);
        let answer = match actions[0] {
            Some(Action(a)) if a < 2 => a as usize,
            other => {
                return Err(EnvError::InvalidAction {
                    agent: 0,
                    reason: format!("{other:?}"),
                });
            }
        };
        if self.steps == DELAY + 1 {
            out.rewards[0] = if answer == self.cue { 1.0 } else { 0.0 };
            out.terminated[0] = true;
            self.over = true;
        }
        self.steps += 1;
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }
}

fn recall_envs() -> EnvRegistry {
    support::registry("recall", "test memory task", make_recall)
}

fn gru(units: usize) -> Architecture {
    Architecture::Mlp {
        hidden: vec![16],
        gru: Some(units),
    }
}

fn builder(steps: u64, architecture: Architecture) -> TrainerBuilder {
    Trainer::builder("recall", "recall")
        .envs(recall_envs())
        .learn("*")
        .seed(3)
        .total_steps(steps)
        .parallel(8, 2)
        .rollout(32)
        .checkpoint_every(16)
        .architecture(architecture)
        .ppo(PpoConfig {
            learning_rate: 3e-3,
            gamma: 0.9,
            minibatches: 2,
            sequence_length: 8,
            ..PpoConfig::default()
        })
}

/// Share of `episodes` recall episodes `policy` answers right.
fn success_rate(policy: &mut dyn Policy, episodes: u64) -> f64 {
    support::mean_score(policy, make_recall, episodes, |out| {
        f64::from(out.rewards[0])
    })
}

/// The greedy policy of a finished run.
fn trained(policy: &Path) -> RlPolicy {
    let checkpoint = Checkpoint::load(policy).unwrap();
    RlPolicy::new(Arc::new(Inference::new(&checkpoint.net).unwrap()), true)
}

#[test]
fn a_gru_policy_learns_to_remember_what_a_feed_forward_one_cannot() {
    const STEPS: u64 = 6_000;
    const BOUND: f64 = 0.9;
    let dir = tempfile::tempdir().unwrap();
    let feed_forward = builder(
        STEPS,
        Architecture::Mlp {
            hidden: vec![16, 16],
            gru: None,
        },
    )
    .build()
    .unwrap()
    .run(&support::options(&dir.path().join("mlp"), "recall-test"))
    .unwrap();
    let recurrent = builder(STEPS, gru(16))
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("gru"), "recall-test"))
        .unwrap();
    let without_memory = success_rate(&mut trained(&feed_forward.policies[0].1), 400);
    let with_memory = success_rate(&mut trained(&recurrent.policies[0].1), 400);
    assert!(
        without_memory < 0.65,
        "a feed-forward policy beat chance: {without_memory}"
    );
    assert!(
        with_memory >= BOUND,
        "the GRU policy answered {with_memory} right (feed-forward: {without_memory})"
    );
    let manifest = Checkpoint::load(&recurrent.policies[0].1).unwrap().manifest;
    assert_eq!(manifest.architecture, gru(16));
}

#[test]
fn recurrent_runs_depend_on_the_seed_not_on_threads_and_resume_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let weights = |run: &Path| std::fs::read(run.join("policies/player.safetensors")).unwrap();
    let run = |name: &str, threads: usize, seed: u64| {
        let path = dir.path().join(name);
        builder(1_024, gru(8))
            .parallel(4, threads)
            .checkpoint_every(2)
            .seed(seed)
            .build()
            .unwrap()
            .run(&support::options(&path, "recall-test"))
            .unwrap();
        path
    };
    let straight = run("straight", 2, 3);
    assert_eq!(weights(&straight), weights(&run("single", 1, 3)));
    assert_ne!(weights(&straight), weights(&run("other", 2, 4)));

    // Killed after its fourth update's checkpoint of eight: resumed, it ends where the
    // uninterrupted run did.
    let killed = run("killed", 2, 3);
    for late in ["update-000006", "update-000008"] {
        std::fs::remove_dir_all(killed.join("checkpoints").join(late)).unwrap();
    }
    std::fs::write(killed.join("policies/player.safetensors"), b"stale").unwrap();
    let resumed = Trainer::resume_with(&killed, false, recall_envs()).unwrap();
    assert_eq!(resumed.updates, 8);
    assert_eq!(weights(&straight), weights(&killed));
    let episodes = |run: &Path| {
        std::fs::read_to_string(run.join("episodes.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                mosaic_core::record::strip_volatile(&mut v);
                v
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(episodes(&straight), episodes(&killed));
}

#[test]
fn the_recurrent_example_training_file_is_valid() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/training/doorkey-gru.toml");
    let spec = mosaic_rl::train::TrainSpec::load(&path).unwrap();
    assert_eq!(spec.architecture.and_then(|a| a.gru()), Some(64));
    assert_eq!(spec.ppo.sequence_length, 16);
}

#[test]
fn a_recurrent_mappo_team_trains_in_self_play_and_acts_as_an_rl_agent() {
    let dir = tempfile::tempdir().unwrap();
    let mut self_play = mosaic_core::SlotSpec::kind("self");
    self_play.settings.insert("group".into(), "green".into());
    let outcome = Trainer::builder("soccer-gru", "soccer-2v2")
        .env_setting("max_steps", 16)
        .learn("green")
        .agent("blue", self_play)
        .algorithm(mosaic_rl::train::Algorithm::Mappo)
        .architecture(gru(8))
        .total_steps(256)
        .parallel(2, 2)
        .rollout(32)
        .checkpoint_every(2)
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("run"), "recall-test"))
        .unwrap();
    assert_eq!(outcome.updates, 4);
    let policy = &outcome.policies[0].1;
    let checkpoint = Checkpoint::load(policy).unwrap();
    assert_eq!(checkpoint.manifest.critic_agents, 2);
    assert_eq!(checkpoint.manifest.architecture, gru(8));

    // As an `rl` slot of soccer-2v2: it carries its state through an episode, and a copy
    // restored from its saved state mid-episode decides as it does.
    let mut env = mosaic_adapters::in_process_envs()
        .make("soccer-2v2", &Settings::new())
        .unwrap();
    let spec = env.spec().clone();
    let mut settings = Settings::new();
    settings.insert(
        "checkpoint".into(),
        policy.to_string_lossy().into_owned().into(),
    );
    let mut agent = mosaic_rl::decider::policy(&settings, &spec).unwrap();
    let mut copy = mosaic_rl::decider::policy(&settings, &spec).unwrap();
    let ctx = AgentContext::new(9, 0, spec.agents[0].id.clone(), spec.action_labels.len());
    env.reset(9).unwrap();
    agent.reset(&ctx);
    copy.reset(&ctx);
    let mut out = Transition::new(spec.agents.len());
    let noop = Some(spec.default_action);
    for step in 0..12 {
        if env.acting().is_empty() {
            break;
        }
        let obs = env.observe(0, ObsRequest::SYMBOLIC);
        let action = agent.decide(&obs).action;
        if step == 5 {
            copy.load_state(&agent.save_state().unwrap()).unwrap();
        }
        if step > 5 {
            assert_eq!(copy.decide(&obs).action, action, "step {step}");
        }
        let mut actions = vec![noop; spec.agents.len()];
        actions[0] = Some(action);
        env.step(&actions, &mut out).unwrap();
    }
}
