//! The LLM deciders on the coordination world against the real local model
//! (SmolLM2-135M on llama.cpp's server, set up by `scripts/setup/llm-server.sh`): a short
//! episode run by a session, two language-model teammates talking through the session's
//! message channel and keeping scratchpads, checked in the step records.

mod support;

use actix::prelude::*;
use mosaic_actors::decider::DeciderRegistry;
use mosaic_actors::session::{RunEpisode, Session, SessionConfig, Subscribers};
use mosaic_actors::{EpisodeEvent, StepEvent};
use mosaic_core::record::StepRecord;
use mosaic_core::{OperatorSpec, RunId};
use mosaic_llm::{LlmResources, register};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const STEPS: u32 = 3;
/// Completion limit of each answer.
const MAX_TOKENS: u64 = 80;
/// Tokens per request on the local server (8192 over 4 slots).
const SLOT_TOKENS: u64 = 2048;

/// Gathers the step records of a session; once it has handled the episode's roll-up it has
/// every step record (sessions send the roll-up after the steps).
struct Collector(Arc<Mutex<Vec<StepRecord>>>);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<StepEvent> for Collector {
    type Result = ();
    fn handle(&mut self, msg: StepEvent, _: &mut Context<Self>) {
        self.0.lock().unwrap().extend(msg.records.iter().cloned());
    }
}

impl Handler<EpisodeEvent> for Collector {
    type Result = ();
    fn handle(&mut self, _: EpisodeEvent, _: &mut Context<Self>) {}
}

/// The text of the last (current-turn) user message of a recorded prompt.
fn current_turn(decision: &Value) -> &str {
    decision["prompt"]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|m| m["content"].as_str())
        .expect("a recorded prompt ending with the current turn")
}

#[test]
fn messages_and_scratchpads_work_on_the_coordination_world() {
    let _guard = support::exclusive();
    actix::System::new().block_on(async {
        let resources = Arc::new(LlmResources::new().with_local_server(support::server_config()));
        let mut kinds = DeciderRegistry::baselines();
        register(&mut kinds, resources.clone());
        // Two teammates at the map centre (they start side by side, so each sees the
        // other). The local model serves 2048 tokens per request and one coordination-world
        // turn takes about 1,200, so no past turns: the scratchpad is the agents' memory.
        // Short messages and notes keep the answers small.
        let operator: OperatorSpec = serde_json::from_value(json!({
            "id": "pair",
            "env": "coord-world",
            "env_settings": { "agents": 2, "preset": "easy", "max_steps": STEPS },
            "agents": { "*": {
                "kind": "llm", "format": "json", "channel": "team", "history": 0,
                "message_cap": 40, "scratchpad_cap": 40, "max_tokens": MAX_TOKENS,
                "record_prompt": true, "observation_mode": "visible_teammates",
            } },
        }))
        .unwrap();
        let records = Arc::new(Mutex::new(Vec::new()));
        let collector = Collector(records.clone()).start();
        let mut config = SessionConfig::new(RunId::from("live"), "pair".into());
        config.record_observations = true;
        let session = Session::build(
            config,
            &operator,
            &mosaic_adapters::native_envs(),
            &kinds,
            Subscribers {
                steps: vec![collector.clone().recipient()],
                episodes: vec![collector.recipient()],
                ..Subscribers::default()
            },
        )
        .expect("the session builds")
        .start();
        let episode = session
            .send(RunEpisode { index: 0, seed: 7 })
            .await
            .unwrap()
            .expect("the episode runs")
            .durable()
            .await
            .expect("the episode is confirmed");
        resources.shutdown().await;
        assert_eq!(episode.steps, STEPS, "{:?}", episode.error);

        let records = records.lock().unwrap().clone();
        let at = |step: u32, agent: &str| -> &StepRecord {
            records
                .iter()
                .find(|r| r.step_index == step && r.agent_id == agent)
                .unwrap_or_else(|| panic!("no record of {agent} at step {step}"))
        };
        let agents = ["agent_0", "agent_1"];
        let (mut messages, mut notes, mut kept) = (0, 0, 0);
        for step in 0..STEPS {
            for (me, mate) in [(agents[0], agents[1]), (agents[1], agents[0])] {
                let record = at(step, me);
                let decision = record.decision.as_ref().expect("LLM decisions are recorded");
                let usage = &decision["usage"];
                assert!(
                    decision["parse_ok"] == true,
                    "{me} at {step}: unusable answer {decision}"
                );
                let prompt = current_turn(decision);
                // The world's own text, verbatim, and the teammate in view.
                let observation = record.observation.as_deref().expect("observations recorded");
                assert!(observation.contains("\nCoordination:\n"), "{observation}");
                assert!(prompt.contains(observation), "{me} at {step}: observation missing");
                assert!(
                    prompt.contains(&format!("Visible teammates:\n{mate} (")),
                    "{me} at {step}: teammate not in view:\n{prompt}"
                );
                let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap_or_default();
                assert!(
                    prompt_tokens > 0 && prompt_tokens + MAX_TOKENS < SLOT_TOKENS,
                    "{me} at {step}: a prompt of {prompt_tokens} tokens"
                );
                if step == 0 {
                    assert!(!prompt.contains("Your notes:"), "notes before any were written");
                    continue;
                }
                let before = at(step - 1, me).decision.as_ref().unwrap();
                let mate_before = at(step - 1, mate).decision.as_ref().unwrap();
                // The teammate's message of the last step is in this prompt, as received.
                if let Some(text) = mate_before["message"].as_str() {
                    let line = format!("- step {}, {mate}: {text}", step - 1);
                    assert!(prompt.contains(&line), "{me} at {step} lacks {line:?}:\n{prompt}");
                    assert!(decision["received"].as_u64() >= Some(1));
                    messages += 1;
                }
                // Its own message is not sent back to it.
                if let Some(own) = before["message"].as_str()
                    && mate_before["message"].as_str() != Some(own)
                {
                    let line = format!("- step {}, {me}: {own}", step - 1);
                    assert!(!prompt.contains(&line), "{me} got its own message back");
                }
                // The note it held after the last step is in this prompt, and a step
                // without a new note keeps it.
                if let Some(note) = before["scratchpad"].as_str() {
                    assert!(
                        prompt.contains(&format!("Your notes:\n{note}")),
                        "{me} at {step} lacks its note {note:?}:\n{prompt}"
                    );
                    notes += 1;
                    let raw: Value = serde_json::from_str(decision["raw"].as_str().unwrap())
                        .expect("a JSON answer");
                    if raw["scratchpad"].as_str().is_none_or(str::is_empty) {
                        assert_eq!(decision["scratchpad"], before["scratchpad"]);
                        kept += 1;
                    }
                }
            }
        }
        assert!(messages > 0, "no message was ever sent: nothing checked");
        assert!(notes > 0, "no note was ever written: nothing checked");
        eprintln!(
            "{messages} messages and {notes} notes checked, {kept} notes kept by an answer without one"
        );
    });
}
