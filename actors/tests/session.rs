//! Sessions, groups and the runner on a small deterministic game.

mod common;

use common::collect::{collector, stripped};

use actix::prelude::*;
use mosaic_actors::decider::{DeciderHandle, DeciderKind, DeciderRegistry};
use mosaic_actors::group::{ResetAll, SessionGroup, StepAll};
use mosaic_actors::runner::{Runner, UnitPlan};
use mosaic_actors::session::{RunEpisode, Session, SessionConfig, Subscribers};
use mosaic_actors::{BeginEpisode, Decide, DeciderError};
use mosaic_core::{Action, Decision, DecisionSource, ExperimentSpec, ObsRequest, Paradigm, RunId};
use mosaic_recorder::Unit;
use std::sync::Arc;
use std::time::Duration;

/// Answers `right` after sleeping, or an illegal action, to exercise the session's
/// fallbacks.
struct Misbehaving {
    sleep: Duration,
    illegal: bool,
}

impl Actor for Misbehaving {
    type Context = Context<Self>;
}

impl Handler<BeginEpisode> for Misbehaving {
    type Result = Result<(), DeciderError>;
    fn handle(&mut self, _: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        Ok(())
    }
}

impl Handler<Decide> for Misbehaving {
    type Result = ResponseFuture<Result<Decision, DeciderError>>;
    fn handle(&mut self, _: Decide, _: &mut Context<Self>) -> Self::Result {
        let (sleep, illegal) = (self.sleep, self.illegal);
        Box::pin(async move {
            tokio::time::sleep(sleep).await;
            Ok(Decision::act(Action(if illegal { 2 } else { 1 })))
        })
    }
}

fn kinds() -> DeciderRegistry {
    let mut kinds = DeciderRegistry::baselines();
    for (name, sleep, illegal) in [("slow", 200, false), ("illegal", 0, true)] {
        kinds.register(DeciderKind {
            name,
            summary: "test",
            settings: &[],
            spawn: Arc::new(move |_| {
                let addr = Misbehaving {
                    sleep: Duration::from_millis(sleep),
                    illegal,
                }
                .start();
                Ok(DeciderHandle::new(
                    name,
                    Paradigm::External,
                    ObsRequest::MASK_ONLY,
                    &addr,
                ))
            }),
        });
    }
    kinds
}

/// A runner of `spec` with the test environments and decider kinds.
fn runner_of(spec: ExperimentSpec) -> Runner {
    Runner::new(
        spec,
        RunId::from("r"),
        Arc::new(common::registry()),
        Arc::new(kinds()),
    )
}

fn experiment(agents: serde_json::Value, extra: serde_json::Value) -> ExperimentSpec {
    let mut spec = serde_json::json!({
        "name": "race",
        "episodes": 6,
        "seeds": {"plan": "procedural", "base": 10},
        "operators": [
            {"id": "a", "env": "race", "agents": agents.clone()},
            {"id": "b", "env": "race", "env_settings": {"sequential": true}, "agents": agents}
        ]
    });
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    serde_json::from_value(spec).unwrap()
}

fn session(spec: &ExperimentSpec, op: usize, subscribers: Subscribers) -> Addr<Session> {
    let mut config = SessionConfig::new(RunId::from("r"), spec.operators[op].id.as_str().into());
    config.decision_timeout = spec.decision_timeout_ms.map(Duration::from_millis);
    Session::build(
        config,
        &spec.operators[op],
        &common::registry(),
        &kinds(),
        subscribers,
    )
    .unwrap()
    .start()
}

#[actix::test]
async fn an_episode_records_every_agent_every_step() {
    let spec = experiment(
        serde_json::json!({"*": {"kind": "random"}}),
        serde_json::json!({}),
    );
    let (collected, subscribers) = collector();
    let s = session(&spec, 0, subscribers);
    let record = s
        .send(RunEpisode { index: 3, seed: 99 })
        .await
        .unwrap()
        .unwrap()
        .durable()
        .await
        .unwrap();
    let steps = collected.steps.lock().unwrap().clone();
    assert_eq!(record.episode_id, "r-a-ep000003");
    assert!(record.terminated && !record.truncated && record.error.is_none());
    assert_eq!(
        steps.len() as u32,
        record.steps * 2,
        "one record per agent per step"
    );
    for agent in &record.agents {
        let total: f64 = steps
            .iter()
            .filter(|s| s.agent_id == agent.agent_id)
            .map(|s| f64::from(s.reward))
            .sum();
        assert_eq!(total, agent.total_reward);
        assert_eq!(agent.decisions, record.steps);
    }
    assert!(
        steps.iter().all(|s| s.action.is_some_and(|a| a < 2)),
        "only legal actions"
    );
    let finish: Vec<_> = steps.iter().filter(|s| !s.events.is_empty()).collect();
    assert_eq!(finish.len(), 1);
    assert_eq!(finish[0].reward, 1.0);
    assert_eq!(collected.episodes.lock().unwrap().len(), 1);
}

/// An environment that executes its own action instead of the operator's: the record holds
/// the executed action (decided by the environment), the request is an event.
#[actix::test]
async fn an_environment_that_decides_for_itself_is_recorded_as_the_decider() {
    let mut spec = experiment(
        serde_json::json!({"*": {"kind": "random"}}),
        serde_json::json!({}),
    );
    spec.operators[0].env_settings = serde_json::json!({"headstrong": true, "length": 12})
        .as_object()
        .cloned()
        .unwrap();
    let (collected, subscribers) = collector();
    let s = session(&spec, 0, subscribers);
    let record = s
        .send(RunEpisode { index: 0, seed: 5 })
        .await
        .unwrap()
        .unwrap()
        .durable()
        .await
        .unwrap();
    let steps = collected.steps.lock().unwrap().clone();
    let red: Vec<_> = steps.iter().filter(|s| s.agent_id == "red").collect();
    assert!(red.iter().all(|s| s.action == Some(1)), "what was executed");
    let overridden: Vec<_> = red
        .iter()
        .filter(|s| s.decision_source == Some(DecisionSource::Environment))
        .collect();
    assert!(
        !overridden.is_empty() && overridden.len() < red.len(),
        "random asked for both"
    );
    for step in &overridden {
        let request = step
            .events
            .iter()
            .find(|e| e.kind == mosaic_core::REQUESTED_ACTION)
            .expect("the request is an event");
        let detail = request.detail.as_ref().unwrap();
        assert_eq!(detail["action"], 0);
        assert_eq!(detail["action_label"], "stay");
        assert_eq!(detail["source"], "policy");
    }
    let obeyed = red
        .iter()
        .filter(|s| s.decision_source == Some(DecisionSource::Policy));
    assert!(obeyed.clone().all(|s| {
        s.events
            .iter()
            .all(|e| e.kind != mosaic_core::REQUESTED_ACTION)
    }));
    assert_eq!(record.agents[0].decisions, record.steps);
}

#[actix::test]
async fn sequential_games_record_who_moved() {
    let spec = experiment(
        serde_json::json!({"*": {"kind": "cycling"}}),
        serde_json::json!({}),
    );
    let (collected, subscribers) = collector();
    let s = session(&spec, 1, subscribers);
    let record = s
        .send(RunEpisode { index: 0, seed: 1 })
        .await
        .unwrap()
        .unwrap()
        .durable()
        .await
        .unwrap();
    let steps = collected.steps.lock().unwrap().clone();
    for step in 0..record.steps {
        let movers: Vec<_> = steps
            .iter()
            .filter(|s| s.step_index == step && s.action.is_some())
            .map(|s| s.agent_id.clone())
            .collect();
        assert_eq!(movers, vec![if step % 2 == 0 { "red" } else { "blue" }]);
    }
}

#[actix::test]
async fn late_and_illegal_decisions_become_the_default_action() {
    let spec = experiment(
        serde_json::json!({"red": {"kind": "slow"}, "blue": {"kind": "illegal"}}),
        serde_json::json!({"decision_timeout_ms": 20, "max_steps": 3}),
    );
    let (collected, subscribers) = collector();
    let mut config = SessionConfig::new(RunId::from("r"), "a".into());
    config.decision_timeout = Some(Duration::from_millis(20));
    config.max_steps = Some(3);
    let s = Session::build(
        config,
        &spec.operators[0],
        &common::registry(),
        &kinds(),
        subscribers,
    )
    .unwrap()
    .start();
    let record = s
        .send(RunEpisode { index: 0, seed: 5 })
        .await
        .unwrap()
        .unwrap()
        .durable()
        .await
        .unwrap();
    assert!(record.truncated);
    assert_eq!(record.steps, 3);
    let steps = collected.steps.lock().unwrap().clone();
    for s in &steps {
        assert_eq!(s.action, Some(0), "default action `stay`");
        let expected = if s.agent_id == "red" {
            DecisionSource::Timeout
        } else {
            DecisionSource::Error
        };
        assert_eq!(s.decision_source, Some(expected));
    }
    let illegal = steps.iter().find(|s| s.agent_id == "blue").unwrap();
    let why = illegal.decision.as_ref().unwrap()["error"]
        .as_str()
        .unwrap();
    assert!(why.contains("illegal action 2 (left)"), "{why}");
    assert!(
        steps
            .iter()
            .filter(|s| s.step_index == 2)
            .all(|s| s.truncated)
    );
    assert_eq!(record.agents[0].timeouts, 3);
    assert_eq!(record.agents[1].errors, 3);
}

#[actix::test]
async fn same_seed_same_records_in_a_group() {
    let spec = experiment(
        serde_json::json!({"*": {"kind": "random"}}),
        serde_json::json!({}),
    );
    let (first, subs_a) = collector();
    let (second, subs_b) = collector();
    let a = session(&spec, 0, subs_a);
    let b = session(&spec, 0, subs_b);
    let group = SessionGroup::new(vec![a, b]).start();
    let statuses = group.send(ResetAll { seed: 77 }).await.unwrap().unwrap();
    assert_eq!(statuses[0].steps, 0);
    let mut steps = 0;
    loop {
        let statuses = group.send(StepAll).await.unwrap().unwrap();
        steps += 1;
        assert!(statuses.iter().all(|s| s.steps == steps || s.done));
        assert_eq!(statuses[0], statuses[1]);
        if statuses.iter().all(|s| s.done) {
            break;
        }
    }
    assert_eq!(
        stripped(&first.steps.lock().unwrap()),
        stripped(&second.steps.lock().unwrap())
    );
    assert_eq!(first.episodes.lock().unwrap().len(), 1);
}

#[actix::test]
async fn parallelism_never_changes_the_records() {
    let run = |parallelism: usize| async move {
        let spec = experiment(
            serde_json::json!({"*": {"kind": "random"}, "blue": {"kind": "cycling"}}),
            serde_json::json!({"parallelism": parallelism}),
        );
        let (collected, subscribers) = collector();
        let runner = runner_of(spec);
        runner.validate().unwrap();
        let mut records = Vec::new();
        let tally = runner
            .run(UnitPlan::All, subscribers, |r| records.push(r.clone()))
            .await
            .unwrap();
        assert_eq!(tally.episodes, 12);
        assert_eq!(records.len(), 12);
        let steps = collected.steps.lock().unwrap().clone();
        (stripped(&steps), stripped(&records))
    };
    let one = run(1).await;
    let four = run(4).await;
    assert!(!one.0.is_empty());
    assert_eq!(one, four);
}

/// Confirms each episode only after a while (like a sink syncing), on its own thread; notes
/// when each episode's steps were taken.
struct SlowConfirmations {
    confirmed: Arc<std::sync::Mutex<Vec<(String, std::time::Instant, u64)>>>,
    first_steps: Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>>,
}

impl Actor for SlowConfirmations {
    type Context = Context<Self>;
}

impl Handler<mosaic_actors::StepEvent> for SlowConfirmations {
    type Result = ();
    fn handle(&mut self, event: mosaic_actors::StepEvent, _: &mut Context<Self>) {
        let mut first_steps = self.first_steps.lock().unwrap();
        for record in event.records.iter() {
            let first = first_steps
                .entry(record.episode_id.clone())
                .or_insert(record.timestamp);
            *first = (*first).min(record.timestamp);
        }
    }
}

impl Handler<mosaic_actors::EpisodeEvent> for SlowConfirmations {
    type Result = ();
    fn handle(&mut self, event: mosaic_actors::EpisodeEvent, _: &mut Context<Self>) {
        std::thread::sleep(Duration::from_millis(20));
        self.confirmed.lock().unwrap().push((
            event.record.episode_id.clone(),
            std::time::Instant::now(),
            mosaic_core::record::now_ms(),
        ));
    }
}

#[actix::test]
async fn units_outside_the_experiment_or_listed_twice_are_refused() {
    let spec = experiment(
        serde_json::json!({"*": {"kind": "random"}}),
        serde_json::json!({}),
    );
    let runner = runner_of(spec);
    for unit in [Unit::new("a", 99), Unit::new("nobody", 0)] {
        let refused = runner
            .run(UnitPlan::Only(vec![unit]), Subscribers::default(), |_| {})
            .await
            .expect_err("not a unit of the experiment");
        assert!(
            refused
                .to_string()
                .contains("is not part of the experiment"),
            "{refused}"
        );
    }
    let unit = Unit::new("a", 1);
    let refused = runner
        .run(
            UnitPlan::Only(vec![unit.clone(), unit]),
            Subscribers::default(),
            |_| {},
        )
        .await
        .expect_err("a unit runs once");
    assert!(refused.to_string().contains("listed twice"), "{refused}");
}

#[actix::test]
async fn episodes_are_reported_only_once_confirmed_while_the_next_ones_run() {
    let spec = experiment(
        serde_json::json!({"*": {"kind": "random"}}),
        serde_json::json!({}),
    );
    let confirmed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let first_steps = Arc::new(std::sync::Mutex::new(Default::default()));
    let arbiter = Arbiter::new();
    let confirmer = {
        let (confirmed, first_steps) = (confirmed.clone(), first_steps.clone());
        SlowConfirmations::start_in_arbiter(&arbiter.handle(), move |_| SlowConfirmations {
            confirmed,
            first_steps,
        })
    };
    let subscribers = Subscribers {
        steps: vec![confirmer.clone().recipient()],
        episodes: vec![confirmer.recipient()],
        checkpoints: Vec::new(),
    };
    let runner = runner_of(spec);
    let mut reported = Vec::new();
    let tally = runner
        .run(UnitPlan::All, subscribers, |record| {
            reported.push((record.episode_id.clone(), std::time::Instant::now()));
        })
        .await
        .unwrap();
    let confirmed = confirmed.lock().unwrap().clone();
    // Every episode is confirmed before the run returns, and reported after its confirmation.
    assert_eq!(tally.episodes, 12);
    assert_eq!(confirmed.len(), 12);
    assert_eq!(reported.len(), 12);
    for (episode, at) in &reported {
        let (_, confirmed_at, _) = confirmed.iter().find(|(id, ..)| id == episode).unwrap();
        assert!(
            confirmed_at <= at,
            "{episode} reported before it was confirmed"
        );
    }
    // The next episodes ran while earlier ones were being confirmed (the lane does not wait
    // for each confirmation before going on).
    let first_steps = first_steps.lock().unwrap().clone();
    let overlapped = confirmed
        .windows(2)
        .filter(|pair| first_steps[&pair[1].0] < pair[0].2)
        .count();
    assert!(
        overlapped >= 6,
        "only {overlapped} episodes overlapped a confirmation"
    );
    arbiter.stop();
}

#[actix::test]
async fn bad_slots_and_kinds_are_named() {
    let spec = experiment(
        serde_json::json!({"green_9": {"kind": "random"}}),
        serde_json::json!({}),
    );
    let runner = runner_of(spec);
    let err = runner.validate().unwrap_err();
    assert_eq!(err.path, "operators[0].agents.green_9");
    let spec = experiment(
        serde_json::json!({"*": {"kind": "genius"}}),
        serde_json::json!({}),
    );
    let runner = runner_of(spec);
    let err = runner.validate().unwrap_err();
    assert_eq!(err.path, "operators[0].agents.*.kind");
    assert!(err.message.contains("unknown decider kind `genius`"));
}
