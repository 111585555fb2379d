//! Manual episodes recorded through the telemetry sink: abandoned episodes, index reuse,
//! closing a group.

mod common;

use actix::prelude::*;
use mosaic_actors::group::{EndAll, ResetAll, SessionGroup, StepAll};
use mosaic_actors::session::{ABANDONED_BY_RESET, Session, SessionConfig, Subscribers};
use mosaic_actors::sink::Sinks;
use mosaic_core::record::{RUN_SCHEMA, RunManifest};
use mosaic_core::{Environment, ExperimentSpec, RunId};
use mosaic_recorder::replay::{ReplayedStep, replay};
use mosaic_recorder::{Durability, RunDir, RunStatus, Unit};

const RUN: &str = "manual-race";

/// `walker` ends after a dozen steps (red cycles stay/right); `still` never ends (nobody
/// moves).
fn experiment() -> ExperimentSpec {
    serde_json::from_value(serde_json::json!({
        "name": "manual race",
        "episodes": 2,
        "operators": [
            {"id": "walker", "env": "race", "agents": {"red": {"kind": "cycling"}, "blue": {"kind": "noop"}}},
            {"id": "still", "env": "race", "env_settings": {"sequential": true}, "agents": {"*": {"kind": "noop"}}}
        ]
    }))
    .unwrap()
}

fn sessions(spec: &ExperimentSpec, subscribers: &Subscribers) -> Vec<Addr<Session>> {
    spec.operators
        .iter()
        .map(|operator| {
            let config = SessionConfig::new(RunId::from(RUN), operator.id.as_str().into());
            Session::build(
                config,
                operator,
                &common::registry(),
                &mosaic_actors::DeciderRegistry::baselines(),
                subscribers.clone(),
            )
            .unwrap()
            .start()
        })
        .collect()
}

#[test]
fn abandoned_and_closed_episodes_are_recorded_once_each_and_consistently() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(RUN);
    let spec = experiment();
    let manifest = RunManifest {
        schema: RUN_SCHEMA.into(),
        run_id: RUN.into(),
        seeds: vec![3, 5],
        experiment: spec.clone(),
        versions: Default::default(),
        started: 0,
        shard: None,
    };
    let (run, store) = RunDir::create(&path, &manifest).unwrap();
    let (walker_steps, still_steps) = actix::System::new().block_on(async move {
        let sinks = Sinks::start(&run, &store, Durability::Sync).unwrap();
        let subscribers = Subscribers {
            steps: sinks.steps.clone(),
            episodes: sinks.episodes.clone(),
            checkpoints: Vec::new(),
        };
        let group = SessionGroup::new(sessions(&spec, &subscribers)).start();
        let reset = |seed| group.send(ResetAll { seed });

        let begun = reset(3).await.unwrap().unwrap();
        assert!(begun.iter().all(|s| s.episode_index == 0 && s.steps == 0));
        for _ in 0..3 {
            group.send(StepAll).await.unwrap().unwrap();
        }
        // Three steps in: abandoned, and the next episode gets the next index.
        let begun = reset(4).await.unwrap().unwrap();
        assert!(begun.iter().all(|s| s.episode_index == 1 && s.seed == 4));
        // Not a step taken: the untouched episode is replaced under the same index.
        let begun = reset(5).await.unwrap().unwrap();
        assert!(begun.iter().all(|s| s.episode_index == 1 && s.seed == 5));
        let walker_steps = loop {
            let statuses = group.send(StepAll).await.unwrap().unwrap();
            assert!(!statuses[1].done, "nobody moves in `still`");
            if statuses[0].done {
                break statuses[0].steps;
            }
            assert!(statuses[0].steps < 50, "the walker reaches the end");
        };
        for _ in 0..2 {
            group.send(StepAll).await.unwrap().unwrap();
        }
        let ended = group
            .send(EndAll {
                reason: "closed".into(),
            })
            .await
            .unwrap()
            .unwrap();
        let still_steps = walker_steps + 2;
        assert_eq!(
            ended[1].as_ref().map(|s| (s.steps, s.done)),
            Some((still_steps, true))
        );
        // A closed group's next episode takes the next index; closing again before it has
        // taken a step drops it.
        let begun = reset(6).await.unwrap().unwrap();
        assert!(begun.iter().all(|s| s.episode_index == 2));
        let ended = group
            .send(EndAll {
                reason: "closed".into(),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ended, vec![None, None]);
        assert_eq!(sinks.failure(), None);
        sinks.close().await.unwrap();
        (walker_steps, still_steps)
    });

    let run = RunDir::open(&path).unwrap();
    assert_eq!(run.summary().unwrap().status, RunStatus::Complete);
    let store = run.store().unwrap();
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    assert_eq!(
        store.completed_units().unwrap(),
        vec![
            Unit::new("walker", 0),
            Unit::new("walker", 1),
            Unit::new("still", 0),
            Unit::new("still", 1)
        ]
    );
    assert_eq!(
        store.incomplete_units_with_records().unwrap(),
        Vec::<Unit>::new(),
        "nothing recorded of the dropped episodes"
    );
    let episode_lines = std::fs::read_to_string(run.episodes_path()).unwrap();
    assert_eq!(episode_lines.lines().count(), 4, "one roll-up per episode");

    let expected = [
        ("walker", 0, 3, 3, Some(ABANDONED_BY_RESET)),
        ("still", 0, 3, 3, Some(ABANDONED_BY_RESET)),
        ("walker", 1, 5, walker_steps, None),
        ("still", 1, 5, still_steps, Some("closed")),
    ];
    for (operator, index, seed, steps, error) in expected {
        let unit = Unit::new(operator, index);
        let record = store.episode(&unit).unwrap().unwrap();
        assert_eq!(
            (record.seed, record.steps, record.error.as_deref()),
            (seed, steps, error),
            "{unit}"
        );
        assert_eq!(record.terminated, error.is_none(), "{unit}");
        let records = store.steps_of(&unit).unwrap();
        assert_eq!(
            records.len() as u32,
            steps * 2,
            "{unit}: one record per agent per step"
        );
        let mut step_indices: Vec<u32> = records.iter().map(|r| r.step_index).collect();
        step_indices.dedup();
        assert_eq!(step_indices, (0..steps).collect::<Vec<_>>(), "{unit}");
        // What was played replays from the seed and the recorded actions.
        let env_spec = run
            .manifest()
            .experiment
            .operators
            .iter()
            .find(|o| o.id == operator)
            .unwrap();
        let mut env = common::registry()
            .make(&env_spec.env, &env_spec.env_settings)
            .unwrap();
        let summary = replay(
            env.as_mut(),
            &record,
            &records,
            None,
            |_: &dyn Environment, _: &ReplayedStep<'_>| Ok(()),
        )
        .unwrap();
        assert_eq!(summary.steps, steps, "{unit}");
    }
}
