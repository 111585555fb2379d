//! The episode viewer's data: a recorded episode step by step as its records tell it (each
//! agent's action, reward, events, observation, message, scratchpad and the rest of its
//! operator's decision details, such as an LLM's answer and reasoning), and the messages
//! the agents exchanged, each with who read it at which step.
//!
//! Built from the step records alone: unlike a replay, it needs no environment, so every
//! recorded episode has one. The step records say how many messages an agent read at a
//! step (`received`), not which; the viewer names them by the channel's delivery rules
//! (an agent reads, when it next decides, every message posted at an earlier step that
//! reaches it: addressed to it, or broadcast to its team or to everyone) and keeps the
//! count alone where the names and the count disagree.

use mosaic_core::record::{EpisodeRecord, StepRecord};
use mosaic_core::{DecisionSource, OperatorSpec, Paradigm};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// Decision fields the viewer shows in their own places (the rest is shown as details).
const LIFTED: [&str; 4] = ["message", "message_to", "received", "scratchpad"];

/// A recorded episode as the viewer shows it.
#[derive(Debug, Serialize)]
pub(crate) struct EpisodeView {
    operator_id: String,
    episode_index: u32,
    #[serde(serialize_with = "crate::serialize_seed")]
    seed: u64,
    env: String,
    steps: u32,
    /// How the episode ended: `terminated`, `truncated`, or the error that ended it.
    end: String,
    agents: Vec<ViewAgent>,
    /// One entry per environment step, in order.
    timeline: Vec<ViewStep>,
    /// Every message posted in the episode, in the order agents read them.
    messages: Vec<ViewMessage>,
}

/// An agent of the episode.
#[derive(Debug, Serialize)]
struct ViewAgent {
    id: String,
    team: Option<String>,
    paradigm: Paradigm,
    kind: String,
    total_reward: f64,
}

/// One environment step.
#[derive(Debug, Serialize)]
struct ViewStep {
    step: u32,
    /// One entry per agent alive at the step, in agent order.
    agents: Vec<ViewDecision>,
    /// What happened at the step: `kind`, or `kind (agent)` for an agent's event.
    events: Vec<String>,
}

/// One agent at one step.
#[derive(Debug, Serialize)]
struct ViewDecision {
    agent: String,
    /// The action's label (its index when the environment has no labels); `None` when the
    /// agent did not act.
    action: Option<String>,
    source: Option<DecisionSource>,
    reward: f32,
    observation: Option<String>,
    /// The message it posted at this step (an index into the episode's messages).
    sent: Option<usize>,
    /// How many messages it read at this step, as recorded (`None`: it does not read).
    received: Option<u64>,
    /// The messages it read at this step (indices), when they could be named.
    heard: Option<Vec<usize>>,
    scratchpad: Option<String>,
    /// The rest of the operator's details (for an LLM: `raw`, `think`, `parse_ok`,
    /// `prompt`, `usage`, `error`, ...).
    detail: Map<String, Value>,
}

/// A message between agents.
#[derive(Debug, Serialize)]
struct ViewMessage {
    step: u32,
    from: String,
    /// The agent addressed; `None`: a broadcast to `scope`.
    to: Option<String>,
    /// `team` or `all`: who a broadcast reaches (the sender's `channel` setting).
    scope: &'static str,
    text: String,
    /// Who read it, at which step.
    read_by: Vec<Reading>,
}

/// A reader of a message.
#[derive(Debug, Serialize)]
struct Reading {
    agent: String,
    step: u32,
}

/// The view of `episode` of `operator` from its step records (in step and agent order).
pub(crate) fn view(
    operator: &OperatorSpec,
    episode: &EpisodeRecord,
    steps: &[StepRecord],
) -> EpisodeView {
    let team_of = |agent: &str| {
        episode
            .agents
            .iter()
            .find(|a| a.agent_id == agent)
            .and_then(|a| a.team.clone())
    };
    let mut messages: Vec<ViewMessage> = Vec::new();
    let mut timeline: Vec<ViewStep> = Vec::new();
    for record in steps {
        if timeline.last().is_none_or(|s| s.step != record.step_index) {
            timeline.push(ViewStep {
                step: record.step_index,
                agents: Vec::new(),
                events: Vec::new(),
            });
        }
        let mut detail = match &record.decision {
            Some(Value::Object(map)) => map.clone(),
            Some(other) => Map::from_iter([("decision".to_owned(), other.clone())]),
            None => Map::new(),
        };
        let text = |key: &str| detail.get(key).and_then(Value::as_str).map(str::to_owned);
        let (message, message_to, scratchpad) =
            (text("message"), text("message_to"), text("scratchpad"));
        let received = detail.get("received").and_then(Value::as_u64);
        for key in LIFTED {
            detail.remove(key);
        }
        let sent = message.map(|text| {
            messages.push(ViewMessage {
                step: record.step_index,
                from: record.agent_id.clone(),
                to: message_to,
                scope: scope_of(operator, &record.agent_id),
                text,
                read_by: Vec::new(),
            });
            messages.len() - 1
        });
        let decision = ViewDecision {
            agent: record.agent_id.clone(),
            action: record
                .action_label
                .clone()
                .or_else(|| record.action.map(|a| a.to_string())),
            source: record.decision_source,
            reward: record.reward,
            observation: record.observation.clone(),
            sent,
            received,
            heard: None,
            scratchpad,
            detail,
        };
        if let Some(step) = timeline.last_mut() {
            step.events.extend(record.events.iter().map(|e| {
                match e.agent.and_then(|a| episode.agents.get(a)) {
                    Some(who) => format!("{} ({})", e.kind, who.agent_id),
                    None => e.kind.clone(),
                }
            }));
            step.agents.push(decision);
        }
    }
    name_what_was_heard(&mut timeline, &mut messages, &team_of);
    EpisodeView {
        operator_id: episode.operator_id.clone(),
        episode_index: episode.episode_index,
        seed: episode.seed,
        env: episode.env.clone(),
        steps: episode.steps,
        end: match (&episode.error, episode.terminated) {
            (Some(error), _) => error.clone(),
            (None, true) => "terminated".to_owned(),
            (None, false) if episode.truncated => "truncated".to_owned(),
            (None, false) => String::new(),
        },
        agents: episode
            .agents
            .iter()
            .map(|a| ViewAgent {
                id: a.agent_id.clone(),
                team: a.team.clone(),
                paradigm: a.paradigm,
                kind: a.kind.clone(),
                total_reward: a.total_reward,
            })
            .collect(),
        timeline,
        messages,
    }
}

/// Who a broadcast of `agent` reaches: its slot's `channel` setting (`team` unless set).
fn scope_of(operator: &OperatorSpec, agent: &str) -> &'static str {
    let channel = operator
        .slot_for(agent)
        .and_then(|slot| slot.settings.get("channel"))
        .and_then(Value::as_str);
    match channel {
        Some("all") => "all",
        _ => "team",
    }
}

/// Names the messages each agent read at each step it read (the channel's delivery rules,
/// see the module's documentation), where their number is the one recorded.
fn name_what_was_heard(
    timeline: &mut [ViewStep],
    messages: &mut [ViewMessage],
    team_of: &dyn Fn(&str) -> Option<String>,
) {
    // (message, reader) pairs already delivered.
    let mut delivered: BTreeSet<(usize, String)> = BTreeSet::new();
    for step in timeline.iter_mut() {
        for decision in &mut step.agents {
            let Some(count) = decision.received else {
                continue;
            };
            let reader = decision.agent.as_str();
            let reader_team = team_of(reader);
            let waiting: Vec<usize> = messages
                .iter()
                .enumerate()
                .filter(|(i, m)| {
                    m.step < step.step
                        && m.from != reader
                        && !delivered.contains(&(*i, reader.to_owned()))
                        && match &m.to {
                            Some(to) => to == reader,
                            None => {
                                m.scope == "all"
                                    || (reader_team.is_some() && team_of(&m.from) == reader_team)
                            }
                        }
                })
                .map(|(i, _)| i)
                .collect();
            if waiting.len() as u64 != count {
                continue;
            }
            for &i in &waiting {
                delivered.insert((i, reader.to_owned()));
                messages[i].read_by.push(Reading {
                    agent: reader.to_owned(),
                    step: step.step,
                });
            }
            decision.heard = Some(waiting);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Agents `a` and `b` of team `x`, `c` of team `y`; `channel` for every slot.
    fn operator(channel: &str) -> OperatorSpec {
        serde_json::from_value(json!({
            "id": "op", "env": "e", "agents": {"*": {"kind": "k", "channel": channel}}
        }))
        .unwrap()
    }

    fn episode() -> EpisodeRecord {
        let agent = |id: &str, team: &str| mosaic_core::record::AgentResult {
            agent_id: id.into(),
            team: Some(team.into()),
            paradigm: Paradigm::Llm,
            kind: "k".into(),
            total_reward: 0.0,
            outcome: None,
            decisions: 2,
            timeouts: 0,
            errors: 0,
        };
        EpisodeRecord {
            steps: 2,
            truncated: true,
            agents: vec![agent("a", "x"), agent("b", "x"), agent("c", "y")],
            ..EpisodeRecord::new(&"r".into(), &"op".into(), 0, 1, "e")
        }
    }

    /// `agent`'s record at `step` with these decision details.
    fn step(step: u32, agent: &str, decision: Value) -> StepRecord {
        serde_json::from_value(json!({
            "schema": "mosaic.step/1", "run_id": "r", "operator_id": "op",
            "episode_id": "r-op-ep000000", "episode_index": 0, "seed": 1,
            "step_index": step, "agent_id": agent, "paradigm": "llm", "kind": "k",
            "action": 0, "action_label": "stay", "reward": 0.0, "terminated": false,
            "truncated": false, "decision": decision,
        }))
        .unwrap()
    }

    fn steps(first: [Value; 3], second: [Value; 3]) -> Vec<StepRecord> {
        let mut records = Vec::new();
        for (index, decisions) in [first, second].into_iter().enumerate() {
            for (agent, decision) in ["a", "b", "c"].into_iter().zip(decisions) {
                records.push(step(index as u32, agent, decision));
            }
        }
        records
    }

    fn heard(view: &EpisodeView, step: usize) -> Vec<Option<Vec<usize>>> {
        view.timeline[step]
            .agents
            .iter()
            .map(|d| d.heard.clone())
            .collect()
    }

    #[test]
    fn a_team_broadcast_is_read_by_the_team_an_addressed_message_by_its_addressee() {
        let silent = || json!({"message": null, "received": 0});
        let records = steps(
            [
                json!({"message": "go", "received": 0, "scratchpad": "s", "raw": "r"}),
                silent(),
                silent(),
            ],
            [silent(), json!({"message": null, "received": 1}), silent()],
        );
        let seen = view(&operator("team"), &episode(), &records);
        assert_eq!(seen.messages.len(), 1);
        let message = &seen.messages[0];
        assert_eq!((message.from.as_str(), message.scope), ("a", "team"));
        let readers: Vec<_> = message
            .read_by
            .iter()
            .map(|r| (r.agent.as_str(), r.step))
            .collect();
        assert_eq!(readers, [("b", 1)]);
        assert_eq!(heard(&seen, 1), [Some(vec![]), Some(vec![0]), Some(vec![])]);
        let first = &seen.timeline[0].agents[0];
        assert_eq!(
            (first.sent, first.scratchpad.as_deref()),
            (Some(0), Some("s"))
        );
        assert_eq!(Value::Object(first.detail.clone()), json!({"raw": "r"}));
        assert_eq!(seen.end, "truncated");

        let addressed = steps(
            [
                json!({"message": "hi", "message_to": "c", "received": 0}),
                silent(),
                silent(),
            ],
            [silent(), silent(), json!({"message": null, "received": 1})],
        );
        let seen = view(&operator("all"), &episode(), &addressed);
        assert_eq!(seen.messages[0].to.as_deref(), Some("c"));
        assert_eq!(heard(&seen, 1), [Some(vec![]), Some(vec![]), Some(vec![0])]);
    }

    #[test]
    fn a_count_the_rules_do_not_explain_is_kept_without_names() {
        let silent = || json!({"message": null, "received": 0});
        let records = steps(
            [json!({"message": "go", "received": 0}), silent(), silent()],
            [silent(), json!({"message": null, "received": 2}), silent()],
        );
        let seen = view(&operator("team"), &episode(), &records);
        assert_eq!(seen.timeline[1].agents[1].received, Some(2));
        assert_eq!(heard(&seen, 1)[1], None);
        assert!(seen.messages[0].read_by.is_empty());
    }
}
