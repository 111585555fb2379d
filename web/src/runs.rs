//! The runs browser: recorded runs, their tables, and frame-by-frame replays.
//!
//! A replay rebuilds the episode's environment from the run's `run.json` (environment
//! name and settings), resets it with the episode's seed and applies the recorded actions
//! step by step, rendering each step. Every step is checked against the record (who acts,
//! the rewards), so a replay that shows frames is one that reproduces the run. Frames are
//! PNG encoded once and kept for the last few replays.
//!
//! Only environments that run no outside code are rebuilt for an arbitrary run: those of
//! the replay registry, plus any environment configured (same name and settings) in the
//! loaded experiment.

use crate::ServeConfig;
use mosaic_adapters::EnvRegistry;
use mosaic_core::record::{EpisodeRecord, StepRecord};
use mosaic_core::{Action, EnvError, Environment, OperatorSpec, Paradigm, Settings, Transition};
use mosaic_recorder::run_dir::MANIFEST_FILE;
use mosaic_recorder::{RecorderError, Records, RunDir, Unit, list_runs};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Replays kept in memory.
const REPLAY_CACHE: usize = 8;

/// A runs-browser request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunsError {
    /// The server was started without a runs directory.
    #[error("no runs directory: start the server with --runs DIR")]
    NoDirectory,
    /// The name is not a run of the runs directory.
    #[error("no run `{0}` in the runs directory")]
    NoSuchRun(String),
    /// The run has no such operator configuration or complete episode.
    #[error("run `{run}` has no complete episode {episode} of `{operator}`")]
    NoSuchEpisode {
        /// The run.
        run: String,
        /// The operator configuration asked for.
        operator: String,
        /// The episode index asked for.
        episode: u32,
    },
    /// The environment may not be rebuilt by this server.
    #[error(
        "environment `{env}` of `{operator}` is not replayable here: only built-in environments and those configured in the loaded experiment are rebuilt"
    )]
    NotReplayable {
        /// The operator configuration.
        operator: String,
        /// Its environment.
        env: String,
    },
    /// The environment could not be built.
    #[error("environment `{env}`: {message}")]
    Env {
        /// The environment.
        env: String,
        /// What went wrong.
        message: String,
    },
    /// Replaying the recorded actions did not reproduce the record.
    #[error("the replay does not reproduce the record at step {step}: {message}")]
    Diverged {
        /// The step.
        step: u32,
        /// What differs.
        message: String,
    },
    /// The run could not be read.
    #[error(transparent)]
    Recorder(#[from] RecorderError),
}

impl RunsError {
    /// The HTTP status that fits.
    pub(crate) fn status(&self) -> u16 {
        match self {
            RunsError::NoDirectory | RunsError::NoSuchRun(_) | RunsError::NoSuchEpisode { .. } => {
                404
            }
            RunsError::NotReplayable { .. } => 403,
            RunsError::Diverged { .. } => 422,
            RunsError::Recorder(e) if e.is_bad_input() => 422,
            RunsError::Env { .. } | RunsError::Recorder(_) => 500,
        }
    }
}

/// One step of a replay, for the page's timeline.
#[derive(Clone, Debug, Serialize)]
struct ReplayStep {
    step: u32,
    /// Per agent: the label of its action (`None`: did not act or was gone).
    actions: Vec<Option<String>>,
    /// Per agent: its reward (`None`: no record, the agent was gone).
    rewards: Vec<Option<f32>>,
    events: Vec<String>,
}

/// A replayed episode.
#[derive(Debug, Serialize)]
pub(crate) struct Replay {
    operator_id: String,
    episode_index: u32,
    seed: u64,
    env: String,
    steps: u32,
    agents: Vec<ReplayAgent>,
    timeline: Vec<ReplayStep>,
    /// Frame `k` shows the world after `k` steps (0: after the reset).
    #[serde(rename = "frames", serialize_with = "count")]
    frames: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, Serialize)]
struct ReplayAgent {
    id: String,
    team: Option<String>,
    paradigm: Option<Paradigm>,
    kind: Option<String>,
}

fn count<S: serde::Serializer>(frames: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(frames.len() as u64)
}

impl Replay {
    /// Frame `step` as PNG.
    pub(crate) fn frame(&self, step: usize) -> Option<&[u8]> {
        self.frames.get(step).map(Vec::as_slice)
    }
}

type ReplayKey = (PathBuf, String, u32);

/// The runs browser's state.
pub(crate) struct Runs {
    dir: Option<PathBuf>,
    replay_envs: EnvRegistry,
    experiment_envs: EnvRegistry,
    configured: Vec<(String, Settings)>,
    cache: Mutex<VecDeque<(ReplayKey, Arc<Replay>)>>,
    /// Opening a run's store takes its lock: one reader at a time.
    reading: Mutex<()>,
}

impl Runs {
    pub(crate) fn new(config: &ServeConfig) -> Self {
        Self {
            dir: config.runs_dir.clone(),
            replay_envs: config.replay_envs.clone(),
            experiment_envs: config.envs.clone(),
            configured: config
                .experiment
                .iter()
                .flat_map(|e| &e.operators)
                .map(|o| (o.env.clone(), o.env_settings.clone()))
                .collect(),
            cache: Mutex::new(VecDeque::new()),
            reading: Mutex::new(()),
        }
    }

    fn dir(&self) -> Result<&Path, RunsError> {
        self.dir.as_deref().ok_or(RunsError::NoDirectory)
    }

    fn read_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.reading
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every run of the directory, oldest first; unreadable ones with their error.
    pub(crate) fn list(&self) -> Result<Value, RunsError> {
        let dir = self.dir()?;
        let _reading = self.read_lock();
        let runs: Vec<Value> = list_runs(dir)?
            .into_iter()
            .map(|run| match run {
                Ok(summary) => json!({
                    "name": summary.path.file_name().map(|n| n.to_string_lossy()),
                    "run_id": summary.run_id,
                    "experiment": summary.experiment,
                    "status": summary.status,
                    "done": summary.done,
                    "planned": summary.planned,
                    "started": summary.started,
                }),
                Err(error) => json!({ "error": error.to_string() }),
            })
            .collect();
        Ok(json!({ "runs": runs }))
    }

    /// The run called `name` (a directory of the runs directory, or the runs directory
    /// itself when it is a run). Nothing outside the runs directory can be named.
    fn resolve(&self, name: &str) -> Result<RunDir, RunsError> {
        let dir = self.dir()?;
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && !name.contains(['/', '\\'])
            && name != "..";
        if !plain {
            return Err(RunsError::NoSuchRun(name.to_owned()));
        }
        let path = if dir.join(name).join(MANIFEST_FILE).is_file() {
            dir.join(name)
        } else if dir.join(MANIFEST_FILE).is_file() && dir.file_name().is_some_and(|n| n == name) {
            dir.to_owned()
        } else {
            return Err(RunsError::NoSuchRun(name.to_owned()));
        };
        Ok(RunDir::open(&path)?)
    }

    /// A run's manifest, progress, episodes and per-agent table.
    pub(crate) fn detail(&self, name: &str) -> Result<Value, RunsError> {
        let run = self.resolve(name)?;
        let (summary, episodes) = {
            let _reading = self.read_lock();
            let summary = run.summary()?;
            let episodes = run.records()?.episodes()?;
            (summary, episodes)
        };
        let manifest = run.manifest();
        let order: Vec<&str> = manifest
            .experiment
            .operators
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        Ok(json!({
            "name": name,
            "run_id": manifest.run_id,
            "experiment": manifest.experiment,
            "versions": manifest.versions,
            "status": summary.status,
            "done": summary.done,
            "planned": summary.planned,
            "started": summary.started,
            "table": agent_table(&order, &episodes),
            "episodes": episodes,
        }))
    }

    /// The replay of episode `episode` of `operator` in run `name` (built once, then
    /// cached).
    pub(crate) fn replay(
        &self,
        name: &str,
        operator: &str,
        episode: u32,
    ) -> Result<Arc<Replay>, RunsError> {
        let run = self.resolve(name)?;
        let key = (run.path().to_owned(), operator.to_owned(), episode);
        if let Some(hit) = self.cached(&key) {
            return Ok(hit);
        }
        let missing = || RunsError::NoSuchEpisode {
            run: name.to_owned(),
            operator: operator.to_owned(),
            episode,
        };
        let spec = run
            .manifest()
            .experiment
            .operators
            .iter()
            .find(|o| o.id == operator)
            .ok_or_else(missing)?;
        let envs = self.registry_for(spec)?;
        let (record, steps) = {
            let _reading = self.read_lock();
            let records = run.records()?;
            let record = records
                .episodes()?
                .into_iter()
                .find(|e| e.operator_id == operator && e.episode_index == episode)
                .ok_or_else(missing)?;
            let steps = unit_steps(&records, operator, episode)?;
            (record, steps)
        };
        let replay = Arc::new(rebuild(envs, spec, &record, steps)?);
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if cache.len() == REPLAY_CACHE {
            cache.pop_front();
        }
        cache.push_back((key, replay.clone()));
        Ok(replay)
    }

    fn cached(&self, key: &ReplayKey) -> Option<Arc<Replay>> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, replay)| replay.clone())
    }

    fn registry_for(&self, spec: &OperatorSpec) -> Result<&EnvRegistry, RunsError> {
        if self.replay_envs.get(&spec.env).is_some() {
            return Ok(&self.replay_envs);
        }
        let configured = self
            .configured
            .iter()
            .any(|(env, settings)| *env == spec.env && *settings == spec.env_settings);
        if configured {
            Ok(&self.experiment_envs)
        } else {
            Err(RunsError::NotReplayable {
                operator: spec.id.clone(),
                env: spec.env.clone(),
            })
        }
    }
}

/// The step records of one complete unit, in step and agent order.
fn unit_steps(
    records: &Records,
    operator: &str,
    episode: u32,
) -> Result<Vec<StepRecord>, RunsError> {
    match records {
        Records::Store(store) => Ok(store
            .steps_of(&Unit::new(operator, episode))?
            .collect::<Result<_, _>>()?),
        Records::Live { .. } => {
            let mut steps = Vec::new();
            records.for_each_step(|r| {
                if r.operator_id == operator && r.episode_index == episode {
                    steps.push(r.clone());
                }
                Ok(())
            })?;
            Ok(steps)
        }
    }
}

/// Replays `record` from its seed with the recorded actions, rendering every step.
fn rebuild(
    envs: &EnvRegistry,
    operator: &OperatorSpec,
    record: &EpisodeRecord,
    steps: Vec<StepRecord>,
) -> Result<Replay, RunsError> {
    let env_error = |e: &dyn std::fmt::Display| RunsError::Env {
        env: operator.env.clone(),
        message: e.to_string(),
    };
    let mut env = envs
        .make(&operator.env, &operator.env_settings)
        .map_err(|e| env_error(&e))?;
    let spec = env.spec().clone();
    env.reset(record.seed).map_err(|e| env_error(&e))?;
    let mut frames = Vec::new();
    render_into(env.as_ref(), &mut frames, 0)?;
    let mut by_step: BTreeMap<u32, Vec<StepRecord>> = BTreeMap::new();
    for step in steps {
        by_step.entry(step.step_index).or_default().push(step);
    }
    if by_step.len() as u32 != record.steps || by_step.keys().copied().ne(0..record.steps) {
        return Err(RunsError::Diverged {
            step: 0,
            message: format!(
                "the run holds records of {} steps for an episode of {} steps",
                by_step.len(),
                record.steps
            ),
        });
    }
    let agents = spec.agents.len();
    let mut transition = Transition::new(agents);
    let mut timeline = Vec::with_capacity(by_step.len());
    for (step, records) in by_step {
        let diverged = |message: String| RunsError::Diverged { step, message };
        let mut actions: Vec<Option<Action>> = vec![None; agents];
        let mut indices = Vec::with_capacity(records.len());
        for r in &records {
            let agent = spec.agent_index(&r.agent_id).ok_or_else(|| {
                diverged(format!("`{}` is not an agent of {}", r.agent_id, spec.name))
            })?;
            actions[agent] = r.action.map(Action);
            indices.push(agent);
        }
        let movers: Vec<usize> = (0..agents).filter(|a| actions[*a].is_some()).collect();
        let acting = env.acting();
        if acting != movers {
            let names = |list: &[usize]| {
                list.iter()
                    .map(|a| spec.agents[*a].id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(diverged(format!(
                "the environment expects [{}] to act, the record has [{}]",
                names(&acting),
                names(&movers)
            )));
        }
        env.step(&actions, &mut transition)
            .map_err(|e: EnvError| diverged(e.to_string()))?;
        let mut row = ReplayStep {
            step,
            actions: vec![None; agents],
            rewards: vec![None; agents],
            events: Vec::new(),
        };
        for (r, &agent) in records.iter().zip(&indices) {
            let replayed = transition.rewards.get(agent).copied().unwrap_or(0.0);
            if replayed != r.reward {
                return Err(diverged(format!(
                    "reward of {}: recorded {}, replayed {replayed}",
                    r.agent_id, r.reward
                )));
            }
            row.actions[agent] = r.action_label.clone();
            row.rewards[agent] = Some(r.reward);
            row.events.extend(r.events.iter().map(
                |e| match e.agent.and_then(|a| spec.agents.get(a)) {
                    Some(who) => format!("{} ({})", e.kind, who.id),
                    None => e.kind.clone(),
                },
            ));
        }
        render_into(env.as_ref(), &mut frames, step + 1)?;
        timeline.push(row);
    }
    let by_agent: BTreeMap<&str, _> = record
        .agents
        .iter()
        .map(|a| (a.agent_id.as_str(), a))
        .collect();
    Ok(Replay {
        operator_id: operator.id.clone(),
        episode_index: record.episode_index,
        seed: record.seed,
        env: operator.env.clone(),
        steps: record.steps,
        agents: spec
            .agents
            .iter()
            .map(|a| ReplayAgent {
                id: a.id.clone(),
                team: a.team.clone(),
                paradigm: by_agent.get(a.id.as_str()).map(|r| r.paradigm),
                kind: by_agent.get(a.id.as_str()).map(|r| r.kind.clone()),
            })
            .collect(),
        timeline,
        frames,
    })
}

/// Appends the rendered frame (environments that draw nothing leave `frames` empty).
fn render_into(
    env: &dyn Environment,
    frames: &mut Vec<Vec<u8>>,
    step: u32,
) -> Result<(), RunsError> {
    if let Some(frame) = env.render() {
        let png = frame.to_png().map_err(|e| RunsError::Env {
            env: env.spec().name.clone(),
            message: format!("frame of step {step}: {e}"),
        })?;
        frames.push(png);
    }
    Ok(())
}

/// Per operator configuration and agent: episodes, returns, outcomes, decisions.
fn agent_table(operators: &[&str], episodes: &[EpisodeRecord]) -> Vec<Value> {
    #[derive(Default)]
    struct Tally {
        team: Option<String>,
        paradigm: Option<Paradigm>,
        kind: String,
        returns: Vec<f64>,
        wins: u32,
        draws: u32,
        losses: u32,
        decisions: u64,
        timeouts: u64,
        errors: u64,
        steps: u64,
    }
    // Keyed by (operator rank, operator, agent position, agent): the map's order is the
    // table's order.
    let mut tallies: BTreeMap<(usize, &str, usize, &str), Tally> = BTreeMap::new();
    for episode in episodes {
        let rank = operators
            .iter()
            .position(|o| *o == episode.operator_id)
            .unwrap_or(operators.len());
        for (position, agent) in episode.agents.iter().enumerate() {
            let tally = tallies
                .entry((rank, &episode.operator_id, position, &agent.agent_id))
                .or_default();
            tally.team.clone_from(&agent.team);
            tally.paradigm = Some(agent.paradigm);
            tally.kind.clone_from(&agent.kind);
            tally.returns.push(agent.total_reward);
            match agent.outcome {
                Some(mosaic_core::Outcome::Win) => tally.wins += 1,
                Some(mosaic_core::Outcome::Draw) => tally.draws += 1,
                Some(mosaic_core::Outcome::Loss) => tally.losses += 1,
                None => {}
            }
            tally.decisions += u64::from(agent.decisions);
            tally.timeouts += u64::from(agent.timeouts);
            tally.errors += u64::from(agent.errors);
            tally.steps += u64::from(episode.steps);
        }
    }
    tallies
        .into_iter()
        .map(|((_, operator, _, agent), t)| {
            let n = t.returns.len().max(1) as f64;
            let mean = t.returns.iter().sum::<f64>() / n;
            let var = t.returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n;
            json!({
                "operator_id": operator,
                "agent_id": agent,
                "team": t.team,
                "paradigm": t.paradigm,
                "kind": t.kind,
                "episodes": t.returns.len(),
                "mean_return": mean,
                "sd_return": var.sqrt(),
                "wins": t.wins,
                "draws": t.draws,
                "losses": t.losses,
                "mean_steps": t.steps as f64 / n,
                "decisions": t.decisions,
                "timeouts": t.timeouts,
                "errors": t.errors,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mosaic_recorder::synthetic;

    #[test]
    fn table_rows_follow_operator_then_agent_order() {
        let manifest = synthetic::manifest("r", &["b", "a"], 3, 5);
        let episodes: Vec<EpisodeRecord> = synthetic::run_episodes(&manifest, 4, 2)
            .into_iter()
            .map(|e| e.record)
            .collect();
        let rows = agent_table(&["b", "a"], &episodes);
        let keys: Vec<(String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r["operator_id"].as_str().unwrap().to_owned(),
                    r["agent_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let agents: Vec<String> = episodes[0]
            .agents
            .iter()
            .map(|a| a.agent_id.clone())
            .collect();
        let expected: Vec<(String, String)> = ["b", "a"]
            .iter()
            .flat_map(|o| agents.iter().map(move |a| (o.to_string(), a.clone())))
            .collect();
        assert_eq!(keys, expected);
        for row in &rows {
            assert_eq!(row["episodes"], 3);
            let mine: Vec<f64> = episodes
                .iter()
                .filter(|e| e.operator_id == row["operator_id"].as_str().unwrap())
                .flat_map(|e| &e.agents)
                .filter(|a| a.agent_id == row["agent_id"].as_str().unwrap())
                .map(|a| a.total_reward)
                .collect();
            let mean = mine.iter().sum::<f64>() / 3.0;
            assert!((row["mean_return"].as_f64().unwrap() - mean).abs() < 1e-9);
        }
    }
}
