//! Training end to end: a short run learns what a random policy cannot, results depend on
//! the seed only, and a resumed run ends exactly where an uninterrupted one does.

mod support;

use mosaic_core::experiment::SpecError;
use mosaic_core::{
    Action, AgentSpec, EnvError, EnvRegistry, EnvSpec, Environment, ObsRequest, Observation,
    Policy, Settings, Stepping, Tensor, Transition,
};
use mosaic_rl::Checkpoint;
use mosaic_rl::policy::{Inference, RlPolicy};
use mosaic_rl::train::{Algorithm, Trainer, TrainerBuilder};
use std::path::Path;
use std::sync::Arc;

const LENGTH: usize = 8;
const LIMIT: u32 = 16;

/// A corridor of `LENGTH` cells: start at the left end, reach the right end within `LIMIT`
/// steps (reward 1). Actions: left, right, stay; the observation is the position, one-hot.
struct Corridor {
    spec: EnvSpec,
    position: usize,
    steps: u32,
    over: bool,
}

fn make_corridor(_: &Settings) -> Result<Box<dyn Environment>, SpecError> {
    Ok(Box::new(Corridor {
        spec: EnvSpec {
            name: "corridor".into(),
            agents: vec![AgentSpec {
                id: "walker".into(),
                team: None,
                role: None,
            }],
            action_labels: vec!["left".into(), "right".into(), "stay".into()],
            default_action: Action(2),
            stepping: Stepping::Single,
            max_steps: Some(LIMIT),
            symbolic_shape: Some(vec![LENGTH]),
            offers: ObsRequest::SYMBOLIC,
            descriptions: Default::default(),
        },
        position: 0,
        steps: 0,
        over: true,
    }))
}

impl Environment for Corridor {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, _seed: u64) -> Result<(), EnvError> {
        (self.position, self.steps, self.over) = (0, 0, false);
        Ok(())
    }

    fn acting(&self) -> Vec<usize> {
        if self.over { Vec::new() } else { vec![0] }
    }

    fn observe(&self, agent: usize, _want: ObsRequest) -> Observation {
        let mut data = vec![0.0; LENGTH];
        data[self.position] = 1.0;
        Observation {
            symbolic: Some(Tensor {
                shape: vec![LENGTH],
                data,
            }),
            // Standing still is never allowed: the mask must be honoured.
            ..Observation::with_mask(agent, vec![true, true, false])
        }
    }

    fn step(&mut self, actions: &[Option<Action>], out: &mut Transition) -> Result<(), EnvError> {
        out.clear(1);
        match actions[0] {
            Some(Action(0)) => self.position = self.position.saturating_sub(1),
            Some(Action(1)) => self.position = (self.position + 1).min(LENGTH - 1),
            other => {
                return Err(EnvError::InvalidAction {
                    agent: 0,
                    reason: format!("{other:?}"),
                });
            }
        }
        self.steps += 1;
        if self.position == LENGTH - 1 {
            out.rewards[0] = 1.0;
            out.terminated[0] = true;
            self.over = true;
        } else if self.steps >= LIMIT {
            out.truncated[0] = true;
            self.over = true;
        }
        Ok(())
    }

    fn steps(&self) -> u32 {
        self.steps
    }
}

fn corridor_envs() -> EnvRegistry {
    support::registry("corridor", "test corridor", make_corridor)
}

fn builder(steps: u64) -> TrainerBuilder {
    Trainer::builder("corridor", "corridor")
        .envs(corridor_envs())
        .learn("*")
        .seed(5)
        .total_steps(steps)
        .parallel(4, 2)
        .rollout(32)
        .checkpoint_every(2)
}

/// Success rate of `policy` over `episodes` corridor episodes.
fn success_rate(policy: &mut dyn Policy, episodes: u64) -> f64 {
    support::mean_score(policy, make_corridor, episodes, |out| {
        f64::from(u8::from(out.terminated[0]))
    })
}

#[test]
fn a_short_run_learns_what_random_play_cannot() {
    const BOUND: f64 = 0.9;
    let mut random = mosaic_core::baseline::Random::default();
    let random_rate = success_rate(&mut random, 200);
    assert!(
        random_rate < BOUND,
        "random play already succeeds: {random_rate}"
    );

    let dir = tempfile::tempdir().unwrap();
    let outcome = builder(6_000)
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("run"), "corridor-test"))
        .unwrap();
    assert_eq!(outcome.steps, 6_016);
    let checkpoint = Checkpoint::load(&outcome.policies[0].1).unwrap();
    assert_eq!(checkpoint.manifest.env, "corridor");
    assert_eq!(checkpoint.manifest.step, 6_016);
    let inference = Inference::new(&checkpoint.net).unwrap();
    let mut trained = RlPolicy::new(Arc::new(inference), false);
    let trained_rate = success_rate(&mut trained, 200);
    assert!(
        trained_rate >= BOUND,
        "trained {trained_rate}, random {random_rate}"
    );

    // The run directory is a run like any other: episodes recorded, report builds.
    let run = mosaic_recorder::RunDir::open(&outcome.dir).unwrap();
    let records = run.records().unwrap();
    let episodes = records.episodes().unwrap();
    assert_eq!(episodes.len() as u64, outcome.episodes);
    assert!(episodes.len() > 300);
    let report = mosaic_recorder::report::build(&run, &records).unwrap();
    assert!(
        !report
            .render(mosaic_recorder::report::Format::Markdown)
            .is_empty()
    );
    let updates = std::fs::read_to_string(outcome.dir.join("updates.jsonl")).unwrap();
    assert_eq!(updates.lines().count() as u64, outcome.updates);

    // A run that starts from the trained policy plays its first rollout (one update, before
    // any learning) as well as the policy does; a fresh run's first rollout plays randomly.
    let first_rollout_rate = |from: Option<&Path>, name: &str| {
        let mut slot = mosaic_core::SlotSpec::kind("learn");
        if let Some(from) = from {
            slot.settings
                .insert("from".into(), from.to_str().unwrap().into());
        }
        let outcome = builder(128)
            .agent("*", slot)
            .build()
            .unwrap()
            .run(&support::options(&dir.path().join(name), "corridor-test"))
            .unwrap();
        let run = mosaic_recorder::RunDir::open(&outcome.dir).unwrap();
        let episodes = run.records().unwrap().episodes().unwrap();
        let wins = episodes
            .iter()
            .filter(|e| e.agents[0].total_reward > 0.0)
            .count();
        wins as f64 / episodes.len() as f64
    };
    let warm = first_rollout_rate(Some(&outcome.policies[0].1), "warm");
    let fresh = first_rollout_rate(None, "fresh");
    assert!(
        warm >= BOUND && fresh < BOUND,
        "first rollout from the trained policy {warm}, from fresh weights {fresh}"
    );
}

#[test]
fn results_depend_on_the_seed_not_on_threads_and_resume_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let weights = |run: &Path| std::fs::read(run.join("policies/walker.safetensors")).unwrap();
    let episodes = |run: &Path| {
        let text = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
        text.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                mosaic_core::record::strip_volatile(&mut v);
                v
            })
            .collect::<Vec<_>>()
    };
    let straight = dir.path().join("straight");
    builder(512)
        .build()
        .unwrap()
        .run(&support::options(&straight, "corridor-test"))
        .unwrap();
    let single = dir.path().join("single");
    builder(512)
        .parallel(4, 1)
        .build()
        .unwrap()
        .run(&support::options(&single, "corridor-test"))
        .unwrap();
    assert_eq!(weights(&straight), weights(&single));
    assert_eq!(episodes(&straight), episodes(&single));
    let other_seed = dir.path().join("other");
    builder(512)
        .seed(6)
        .build()
        .unwrap()
        .run(&support::options(&other_seed, "corridor-test"))
        .unwrap();
    assert_ne!(weights(&straight), weights(&other_seed));

    // A run killed after its second checkpoint (of four updates, one every two) resumes
    // from it and ends where the uninterrupted run did.
    let killed = dir.path().join("killed");
    builder(512)
        .build()
        .unwrap()
        .run(&support::options(&killed, "corridor-test"))
        .unwrap();
    std::fs::remove_dir_all(killed.join("checkpoints/update-000004")).unwrap();
    std::fs::write(killed.join("policies/walker.safetensors"), b"stale").unwrap();
    let resumed = Trainer::resume_with(&killed, false, corridor_envs()).unwrap();
    assert_eq!(resumed.updates, 4);
    assert_eq!(weights(&straight), weights(&killed));
    assert_eq!(episodes(&straight), episodes(&killed));
    // The episode seeds live in the run's manifest only (checkpoints would each hold them
    // all again), and the resumed run's manifest lists the same ones.
    let manifest = |run: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap()
    };
    let seeds = manifest(&straight)["seeds"].clone();
    assert_eq!(seeds.as_array().unwrap().len(), episodes(&straight).len());
    assert_eq!(manifest(&killed)["seeds"], seeds);
    let state =
        std::fs::read_to_string(killed.join("checkpoints/update-000004/state.json")).unwrap();
    assert!(!state.contains("seeds"), "{state}");
    let lines = |run: &Path| {
        std::fs::read_to_string(run.join("updates.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines(&killed), 4);
}

#[test]
fn training_specs_are_checked_against_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let err = Trainer::builder("t", "soccer-2v2")
        .learn("purple")
        .agent("*", mosaic_core::SlotSpec::kind("random"))
        .total_steps(64)
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("a"), "corridor-test"))
        .unwrap_err();
    assert!(
        err.is_bad_input() && err.to_string().contains("no agent"),
        "{err}"
    );
    let err = Trainer::builder("t", "soccer-2v2")
        .learn("green")
        .agent("*", mosaic_core::SlotSpec::kind("llm"))
        .total_steps(64)
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("b"), "corridor-test"))
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot play during training"),
        "{err}"
    );
    let err = Trainer::builder("t", "soccer-2v2")
        .total_steps(64)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("learn"), "{err}");
    // Starting from a checkpoint: it must exist and hold the network the training builds,
    // and `transfer` means nothing without one.
    let trained = builder(128)
        .build()
        .unwrap()
        .run(&support::options(
            &dir.path().join("small"),
            "corridor-test",
        ))
        .unwrap();
    // The error of a corridor run whose learning slot has `settings`.
    let learn_error = |settings: &[(&str, serde_json::Value)], architecture: Option<_>, run| {
        let mut slot = mosaic_core::SlotSpec::kind("learn");
        for (key, value) in settings {
            slot.settings.insert((*key).into(), value.clone());
        }
        let builder = builder(128).agent("*", slot);
        let builder = match architecture {
            Some(architecture) => builder.architecture(architecture),
            None => builder,
        };
        let err = builder
            .build()
            .unwrap()
            .run(&support::options(&dir.path().join(run), "corridor-test"))
            .unwrap_err();
        assert!(err.is_bad_input(), "{err}");
        err.to_string()
    };
    let trained_path = trained.policies[0].1.to_str().unwrap();
    let small = mosaic_rl::Architecture::Mlp {
        hidden: vec![8],
        gru: None,
    };
    let text = learn_error(&[("from", trained_path.into())], Some(small), "d");
    assert!(
        text.contains("agents.walker.from") && text.contains("architecture"),
        "{text}"
    );
    let text = learn_error(&[("from", "no/such/checkpoint".into())], None, "e");
    assert!(
        text.contains("agents.walker.from") && text.contains("no/such/checkpoint"),
        "{text}"
    );
    let text = learn_error(&[("transfer", true.into())], None, "f");
    assert!(
        text.contains("agents.walker.transfer") && text.contains("`from`"),
        "{text}"
    );
    let err = Trainer::builder("t", "nowhere")
        .learn("*")
        .build()
        .unwrap()
        .run(&support::options(&dir.path().join("c"), "corridor-test"))
        .unwrap_err();
    assert!(
        err.to_string().contains("not a native environment"),
        "{err}"
    );
}

#[test]
fn mappo_trains_a_centralised_critic_and_its_policy_acts_alone() {
    let dir = tempfile::tempdir().unwrap();
    let train = |algorithm, name: &str| {
        Trainer::builder("soccer", "soccer-2v2")
            .learn("green")
            .agent("*", mosaic_core::SlotSpec::kind("random"))
            .algorithm(algorithm)
            .total_steps(256)
            .parallel(2, 2)
            .rollout(32)
            .checkpoint_every(2)
            .build()
            .unwrap()
            .run(&support::options(&dir.path().join(name), "corridor-test"))
            .unwrap()
    };
    let mappo = train(Algorithm::Mappo, "mappo");
    let checkpoint = Checkpoint::load(&mappo.policies[0].1).unwrap();
    assert_eq!(checkpoint.manifest.critic_agents, 2);
    assert_eq!(checkpoint.manifest.agents, ["green_0", "green_1"]);
    // The policy reads one agent's observation, so it plays any green slot by itself.
    let spec = mosaic_adapters::in_process_envs()
        .make("soccer-2v2", &Settings::new())
        .unwrap()
        .spec()
        .clone();
    let mut settings = Settings::new();
    settings.insert(
        "checkpoint".into(),
        mappo.policies[0].1.to_string_lossy().into_owned().into(),
    );
    mosaic_rl::decider::policy(&settings, &spec).unwrap();
    let ippo = train(Algorithm::Ippo, "ippo");
    let checkpoint = Checkpoint::load(&ippo.policies[0].1).unwrap();
    assert_eq!(checkpoint.manifest.critic_agents, 1);
    let json = std::fs::read_to_string(ippo.policies[0].1.with_extension("json")).unwrap();
    assert!(!json.contains("critic_agents"), "{json}");
}

#[test]
fn self_play_draws_frozen_snapshots_and_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let self_play = |group: &str| {
        let mut slot = mosaic_core::SlotSpec::kind("self");
        slot.settings.insert("group".into(), group.into());
        slot.settings.insert("pool".into(), 2.into());
        Trainer::builder("self-play", "soccer-2v2")
            .env_setting("max_steps", 16)
            .learn("green")
            .agent("blue", slot)
            .seed(3)
            .total_steps(256)
            .parallel(2, 2)
            .rollout(32)
            .checkpoint_every(1)
            .build()
            .unwrap()
    };
    let straight = self_play("green")
        .run(&support::options(
            &dir.path().join("straight"),
            "corridor-test",
        ))
        .unwrap();
    assert_eq!(straight.updates, 4);
    let killed = dir.path().join("killed");
    self_play("green")
        .run(&support::options(&killed, "corridor-test"))
        .unwrap();
    for update in [3, 4] {
        std::fs::remove_dir_all(killed.join(format!("checkpoints/update-{update:06}"))).unwrap();
    }
    Trainer::resume(&killed, false).unwrap();
    let read = |run: &Path, file: &str| std::fs::read(run.join(file)).unwrap();
    assert_eq!(
        read(&straight.dir, "policies/green.safetensors"),
        read(&killed, "policies/green.safetensors")
    );
    let episodes = |run: &Path| {
        String::from_utf8(read(run, "episodes.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                mosaic_core::record::strip_volatile(&mut v);
                v
            })
            .collect::<Vec<_>>()
    };
    let recorded = episodes(&straight.dir);
    assert_eq!(recorded, episodes(&killed));
    assert!(!recorded.is_empty());
    let blue = &recorded[0]["agents"][2];
    assert_eq!(
        (blue["agent_id"].as_str(), blue["kind"].as_str()),
        (Some("blue_0"), Some("self"))
    );

    let err = self_play("purple")
        .run(&support::options(&dir.path().join("bad"), "corridor-test"))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("not a learning group (groups: green)"),
        "{err}"
    );
}

#[test]
fn the_curriculum_examples_each_start_from_the_stage_before_with_zero_sum_rewards() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/training");
    let stages = [
        ("soccer-ippo-scripted", "policies/soccer-2v2-ippo/green"),
        (
            "soccer-ippo-scripted-2",
            "runs/soccer-ippo-scripted/policies/green",
        ),
        (
            "soccer-ippo-scripted-3",
            "runs/soccer-ippo-scripted-2/policies/green",
        ),
    ];
    for (name, from) in stages {
        let spec =
            mosaic_rl::train::TrainSpec::load(&examples.join(format!("{name}.toml"))).unwrap();
        assert!(spec.zero_sum && spec.name == name, "{name}");
        let env = mosaic_adapters::in_process_envs()
            .make(&spec.env, &spec.env_settings)
            .unwrap();
        let groups = spec.groups(env.spec()).unwrap();
        let start = groups[0].start.as_ref().unwrap();
        assert_eq!(
            (
                groups[0].name.as_str(),
                start.from.as_path(),
                start.transfer
            ),
            ("green", Path::new(from), false),
            "{name}"
        );
    }
}

#[test]
fn every_native_world_trains_and_its_policies_load() {
    let dir = tempfile::tempdir().unwrap();
    let envs = mosaic_adapters::in_process_envs();
    let names: Vec<&str> = envs.kinds().iter().map(|k| k.name).collect();
    assert!(
        names.len() >= 10 && names.contains(&"skirmish"),
        "{names:?}"
    );
    for name in names {
        let outcome = Trainer::builder("every-world", name)
            .learn("*")
            .total_steps(64)
            .parallel(2, 1)
            .rollout(32)
            .checkpoint_every(1)
            .build()
            .unwrap()
            .run(&support::options(&dir.path().join(name), "every-world"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!outcome.policies.is_empty(), "{name}");
        for (group, path) in &outcome.policies {
            let checkpoint = Checkpoint::load(path).unwrap();
            assert_eq!(checkpoint.manifest.env, name, "{name}/{group}");
        }
    }
}
