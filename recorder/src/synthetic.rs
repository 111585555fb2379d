//! Synthetic runs: plausible, deterministic records for tests, benchmarks and examples.
//!
//! The shapes follow a two-team game: agents alternate between teams `green` and `blue`,
//! agent 0 is an LLM whose decisions carry usage and parse details, the others are random.
//! Everything is derived from the episode seed, so the same call gives the same records.
//!
//! ```
//! use mosaic_recorder::synthetic;
//! let episode = synthetic::episode(&synthetic::unit("run", "op", 0, 7), 10, 4);
//! assert_eq!(episode.steps.len(), 10);
//! assert_eq!(episode.steps[0].len(), 4);
//! assert_eq!(episode.record.steps, 10);
//! ```

use mosaic_core::experiment::{ExperimentSpec, OperatorSpec, SeedPlan, SlotSpec};
use mosaic_core::record::{
    AgentResult, EPISODE_SCHEMA, EpisodeRecord, RUN_SCHEMA, RunManifest, STEP_SCHEMA, StepRecord,
};
use mosaic_core::{DecisionSource, EpisodeId, OperatorId, Outcome, Paradigm, RunId, rng};
use rand::Rng as _;
use std::collections::BTreeMap;

/// Which episode to synthesise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitSpec {
    /// Run id.
    pub run_id: String,
    /// Operator id.
    pub operator_id: String,
    /// Episode index.
    pub episode_index: u32,
    /// Episode seed.
    pub seed: u64,
}

/// The episode `index` of `operator` in `run`, under `seed`.
pub fn unit(run_id: &str, operator_id: &str, episode_index: u32, seed: u64) -> UnitSpec {
    UnitSpec {
        run_id: run_id.to_owned(),
        operator_id: operator_id.to_owned(),
        episode_index,
        seed,
    }
}

/// A synthetic episode: the records of every step, then the roll-up.
#[derive(Clone, Debug)]
pub struct SyntheticEpisode {
    /// One entry per environment step, one record per agent.
    pub steps: Vec<Vec<StepRecord>>,
    /// The roll-up, consistent with the steps.
    pub record: EpisodeRecord,
}

const ACTIONS: [&str; 4] = ["noop", "left", "right", "forward"];

fn agent_id(agent: usize) -> String {
    format!("{}_{}", team(agent), agent / 2)
}

fn team(agent: usize) -> &'static str {
    if agent % 2 == 0 { "green" } else { "blue" }
}

fn paradigm(agent: usize) -> (Paradigm, &'static str) {
    if agent == 0 {
        (Paradigm::Llm, "llm")
    } else {
        (Paradigm::Random, "random")
    }
}

/// The records of `steps` steps of `agents` agents, step by step.
pub fn episode(unit: &UnitSpec, steps: u32, agents: usize) -> SyntheticEpisode {
    let mut random = rng::seeded(rng::derive_seed(unit.seed, "synthetic"));
    let episode_id = EpisodeId::new(
        &RunId::from(unit.run_id.as_str()),
        &OperatorId::from(unit.operator_id.as_str()),
        unit.episode_index,
    )
    .0;
    let mut totals = vec![0.0f64; agents];
    let mut decisions = vec![0u32; agents];
    let mut records = Vec::with_capacity(steps as usize);
    for step in 0..steps {
        let last = step + 1 == steps;
        let mut at_step = Vec::with_capacity(agents);
        for agent in 0..agents {
            let action = random.random_range(0..ACTIONS.len() as u32);
            let reward = if random.random_range(0..20u32) == 0 {
                1.0
            } else {
                0.0
            };
            totals[agent] += f64::from(reward);
            decisions[agent] += 1;
            let (paradigm, kind) = paradigm(agent);
            let decision = (paradigm == Paradigm::Llm).then(|| {
                let parse_ok = random.random_range(0..10u32) != 0;
                serde_json::json!({
                    "text": format!("<action>{}</action>", ACTIONS[action as usize]),
                    "usage": {"prompt_tokens": 300 + step, "completion_tokens": 12},
                    "parse_ok": parse_ok,
                    "retries": u32::from(!parse_ok),
                    "message": if step % 5 == 0 { "on my way" } else { "" },
                })
            });
            at_step.push(StepRecord {
                schema: STEP_SCHEMA.to_owned(),
                run_id: unit.run_id.clone(),
                operator_id: unit.operator_id.clone(),
                episode_id: episode_id.clone(),
                episode_index: unit.episode_index,
                seed: unit.seed,
                step_index: step,
                agent_id: agent_id(agent),
                paradigm,
                kind: kind.to_owned(),
                action: Some(action),
                action_label: Some(ACTIONS[action as usize].to_owned()),
                decision_source: Some(DecisionSource::Policy),
                reward,
                terminated: last,
                truncated: false,
                observation: None,
                events: Vec::new(),
                decision,
                decision_us: random.random_range(5..500u64),
                timestamp: 1_700_000_000_000 + u64::from(step),
            });
        }
        records.push(at_step);
    }
    let team_total = |name: &str| -> f64 {
        (0..agents)
            .filter(|a| team(*a) == name)
            .map(|a| totals[a])
            .sum()
    };
    let (green, blue) = (team_total("green"), team_total("blue"));
    let agents_results = (0..agents)
        .map(|agent| {
            let (own, other) = if team(agent) == "green" {
                (green, blue)
            } else {
                (blue, green)
            };
            let outcome = (agents > 1).then(|| match own.partial_cmp(&other) {
                Some(std::cmp::Ordering::Greater) => Outcome::Win,
                Some(std::cmp::Ordering::Less) => Outcome::Loss,
                _ => Outcome::Draw,
            });
            let (paradigm, kind) = paradigm(agent);
            AgentResult {
                agent_id: agent_id(agent),
                team: (agents > 1).then(|| team(agent).to_owned()),
                paradigm,
                kind: kind.to_owned(),
                total_reward: totals[agent],
                outcome,
                decisions: decisions[agent],
                timeouts: 0,
                errors: 0,
            }
        })
        .collect();
    let mut metrics = serde_json::Map::new();
    metrics.insert("goals".into(), (green + blue).into());
    metrics.insert("possession".into(), random.random_range(0.0..1.0).into());
    let record = EpisodeRecord {
        schema: EPISODE_SCHEMA.to_owned(),
        run_id: unit.run_id.clone(),
        operator_id: unit.operator_id.clone(),
        episode_id,
        episode_index: unit.episode_index,
        seed: unit.seed,
        env: "synthetic".to_owned(),
        steps,
        terminated: steps > 0,
        truncated: false,
        agents: agents_results,
        metrics,
        error: None,
        restarts: Vec::new(),
        duration_ms: u64::from(steps) / 4 + 1,
        steps_per_s: f64::from(steps) * 4000.0 / f64::from(steps + 4),
        timestamp: 1_700_000_000_000 + u64::from(steps),
    };
    SyntheticEpisode {
        steps: records,
        record,
    }
}

/// The step records of [`episode`], flattened (step by step, agents in order).
pub fn steps(unit: &UnitSpec, steps: u32, agents: usize) -> Vec<StepRecord> {
    episode(unit, steps, agents)
        .steps
        .into_iter()
        .flatten()
        .collect()
}

/// A manifest for a run of `operators` (each on the environment `synthetic`), `episodes`
/// episodes each, procedural seeds from `base_seed`.
pub fn manifest(run_id: &str, operators: &[&str], episodes: u32, base_seed: u64) -> RunManifest {
    let experiment = ExperimentSpec {
        name: format!("synthetic {}", operators.join(" vs ")),
        episodes,
        seeds: SeedPlan::Procedural { base: base_seed },
        max_steps: None,
        parallelism: 1,
        pace_ms: 0,
        decision_timeout_ms: None,
        record_observations: false,
        supervision: Default::default(),
        operators: operators
            .iter()
            .map(|id| OperatorSpec {
                id: (*id).to_owned(),
                env: "synthetic".to_owned(),
                env_settings: Default::default(),
                agents: BTreeMap::from([
                    ("*".to_owned(), SlotSpec::kind("random")),
                    ("green_0".to_owned(), SlotSpec::kind("llm")),
                ]),
            })
            .collect(),
    };
    let seeds = experiment.episode_seeds();
    RunManifest {
        schema: RUN_SCHEMA.to_owned(),
        run_id: run_id.to_owned(),
        experiment,
        seeds,
        versions: serde_json::Map::from_iter([(
            "mosaic".to_owned(),
            serde_json::Value::from(env!("CARGO_PKG_VERSION")),
        )]),
        started: 1_700_000_000_000,
        shard: None,
    }
}

/// Every episode of `manifest`, operator by operator, each `steps` steps of `agents` agents.
pub fn run_episodes(manifest: &RunManifest, steps: u32, agents: usize) -> Vec<SyntheticEpisode> {
    manifest
        .experiment
        .operators
        .iter()
        .flat_map(|op| {
            manifest.seeds.iter().enumerate().map(move |(index, seed)| {
                episode(
                    &unit(&manifest.run_id, &op.id, index as u32, *seed),
                    steps,
                    agents,
                )
            })
        })
        .collect()
}

/// Creates the run directory of `manifest` at `path` and records every episode of it
/// (`steps` steps of `agents` agents each) as a run would, durably, episode by episode.
pub fn write_run(
    path: &std::path::Path,
    manifest: &RunManifest,
    steps: u32,
    agents: usize,
) -> crate::Result<(crate::RunDir, crate::RunStore)> {
    let (run, store) = crate::RunDir::create(path, manifest)?;
    let mut writer = run.writer(&store, crate::Durability::Flush)?;
    record_episodes(&mut writer, &run_episodes(manifest, steps, agents), 0)?;
    writer.close()?;
    Ok((run, store))
}

/// Records `episodes` through `writer` as a run would, episode by episode; the last
/// `partial` of them get their steps only, no roll-up (as if the run was killed
/// mid-episode).
pub fn record_episodes(
    writer: &mut crate::RunWriter,
    episodes: &[SyntheticEpisode],
    partial: usize,
) -> crate::Result<()> {
    for (i, episode) in episodes.iter().enumerate() {
        for step in &episode.steps {
            writer.write_step(step)?;
        }
        if i + partial < episodes.len() {
            writer.write_episode(&episode.record)?;
            writer.commit()?;
            writer.mark_complete(&episode.record)?;
        }
    }
    Ok(())
}

/// Waits (up to 5 s) until no handle holds the store at `store_dir`: a handle dropped a
/// moment ago may still hold its lock, which sled releases from background threads.
pub fn wait_for_unlock(store_dir: &std::path::Path) -> crate::Result<()> {
    let since = std::time::Instant::now();
    while crate::store::is_locked(&store_dir.join("db"))?
        && since.elapsed() < std::time::Duration::from_secs(5)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Ok(())
}

/// Marks the store at `store_dir` as written in store format `format`: a store of a newer
/// mosaic when `format` is above [`crate::store::STORE_FORMAT`].
pub fn set_store_format(store_dir: &std::path::Path, format: u32) -> crate::Result<()> {
    let err = |source| crate::store::store_error(store_dir, source);
    wait_for_unlock(store_dir)?;
    let db = sled::open(store_dir).map_err(err)?;
    db.open_tree("meta")
        .and_then(|meta| meta.insert("format", &format.to_be_bytes()))
        .map_err(err)?;
    db.flush().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_consistent() {
        let u = unit("r", "o", 3, 11);
        let a = episode(&u, 50, 4);
        let b = episode(&u, 50, 4);
        assert_eq!(a.record, b.record);
        assert_eq!(a.steps, b.steps);
        let green_0: f64 = a.steps.iter().map(|s| f64::from(s[0].reward)).sum();
        assert_eq!(a.record.agents[0].total_reward, green_0);
        assert_ne!(episode(&unit("r", "o", 3, 12), 50, 4).steps, a.steps);
    }
}
