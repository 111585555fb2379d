//! The runs browser: recorded runs, their reports, and frame-by-frame replays.
//!
//! Reports are the recorder's (`mosaic_recorder::report`), built once per run state and
//! kept; the page draws its charts from them. A replay rebuilds the episode's environment from the run's
//! `run.json` (environment name and settings) and runs the recorder's replay check (seed,
//! recorded actions, recorded rewards and terminations), rendering every step; a replay
//! that shows frames is one that reproduces the run. Frames are PNG encoded once and kept
//! for the last few replays.
//!
//! Only environments that run no outside code are rebuilt for an arbitrary run: those of
//! the replay registry (by default [`mosaic_adapters::in_process_envs`]), plus any environment
//! configured (same name and settings) in the loaded experiment.

use crate::ServeConfig;
use crate::charts::TrainingError;
use crate::episode::EpisodeView;
use mosaic_core::EnvRegistry;
use mosaic_core::record::{EpisodeRecord, StepRecord};
use mosaic_core::{EnvSpec, Environment, OperatorSpec, Paradigm, Settings, render_marked_or_plain};
use mosaic_recorder::paired::{ConfigSamples, compare_configs, samples_by_operator};
use mosaic_recorder::replay::{ReplayError, ReplayObserver, ReplayedStep};
use mosaic_recorder::run_dir::MANIFEST_FILE;
use mosaic_recorder::{RecorderError, RunDir, RunStatus, Unit, list_runs, report};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Replays kept in memory.
const REPLAY_CACHE: usize = 8;
/// Run reports kept in memory.
const REPORT_CACHE: usize = 16;
/// At most this many runs are compared at once.
const MAX_COMPARED: usize = 8;

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
    #[error("the replay does not reproduce the record: {0}")]
    Replay(#[from] ReplayError),
    /// A comparison asked for neither several different runs nor two operators of one run.
    #[error(
        "compare 2 to {MAX_COMPARED} different runs (`?runs=A,B`), or two operators of one run (`?runs=A&operators=X,Y`)"
    )]
    CompareWhat,
    /// Runs of different experiments do not share their seeds by design.
    #[error(
        "runs `{a}` and `{b}` are of different experiments (`{experiment_a}`, `{experiment_b}`): paired comparisons need runs of one experiment, which play the same seeds"
    )]
    DifferentExperiments {
        /// The first run.
        a: String,
        /// Its experiment.
        experiment_a: String,
        /// The run of another experiment.
        b: String,
        /// Its experiment.
        experiment_b: String,
    },
    /// The run has no complete episode of the operator configuration to compare.
    #[error("run `{run}` has no complete episodes of operator `{operator}` (operators: {known})")]
    NoSuchOperator {
        /// The run.
        run: String,
        /// The operator configuration asked for.
        operator: String,
        /// The run's operator configurations, comma separated.
        known: String,
    },
    /// The runs compared have no operator configuration with complete episodes in common.
    #[error("runs `{a}` and `{b}` have no operator with complete episodes in common")]
    NothingInCommon {
        /// The first run.
        a: String,
        /// The other run.
        b: String,
    },
    /// The training curves of a training run could not be read.
    #[error("training run `{run}`: {source}")]
    Training {
        /// The run.
        run: String,
        /// What went wrong.
        source: crate::charts::TrainingError,
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
            RunsError::CompareWhat => 400,
            RunsError::NoSuchOperator { .. } => 404,
            RunsError::Replay(_)
            | RunsError::DifferentExperiments { .. }
            | RunsError::NothingInCommon { .. } => 422,
            RunsError::Recorder(e) if e.is_bad_input() => 422,
            RunsError::Training {
                source: TrainingError::Line { .. },
                ..
            } => 422,
            RunsError::Training { .. } => 500,
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
    #[serde(serialize_with = "crate::serialize_seed")]
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

/// A run's report as the page gets it.
pub(crate) struct BuiltReport {
    /// The run's state when the report was built: a run still being written gets a new
    /// report once it has progressed.
    stamp: (RunStatus, usize),
    json: Value,
    charts: Value,
}

impl BuiltReport {
    /// The page's view: manifest, progress, report (with each operator's returns per
    /// episode, which the page charts), episodes.
    pub(crate) fn json(&self) -> &Value {
        &self.json
    }

    /// What the page charts: `returns` (per operator configuration, per episode), and
    /// `training` (the curves of a training run, else null).
    pub(crate) fn charts(&self) -> &Value {
        &self.charts
    }
}

/// The runs browser's state.
pub(crate) struct Runs {
    dir: Option<PathBuf>,
    replay_envs: EnvRegistry,
    experiment_envs: EnvRegistry,
    configured: Vec<(String, Settings)>,
    replays: Mutex<VecDeque<(ReplayKey, Arc<Replay>)>>,
    reports: Mutex<VecDeque<(PathBuf, Arc<BuiltReport>)>>,
    /// Opening a run's store takes its lock: one reader at a time.
    reading: Mutex<()>,
}

/// Locks `mutex`; the data behind these locks (caches, nothing) is valid even after a
/// panic elsewhere.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Looks `key` up in a small most-recent-last cache.
fn cached<K: PartialEq, V: Clone>(cache: &Mutex<VecDeque<(K, V)>>, key: &K) -> Option<V> {
    lock(cache)
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Puts `value` in a cache of `capacity` entries, replacing an entry for the same key.
fn remember<K: PartialEq, V>(cache: &Mutex<VecDeque<(K, V)>>, capacity: usize, key: K, value: V) {
    let mut cache = lock(cache);
    cache.retain(|(k, _)| *k != key);
    if cache.len() == capacity {
        cache.pop_front();
    }
    cache.push_back((key, value));
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
            replays: Mutex::new(VecDeque::new()),
            reports: Mutex::new(VecDeque::new()),
            reading: Mutex::new(()),
        }
    }

    /// The message of `error` for the page: paths relative to the runs directory (where
    /// the server keeps its files is not the client's business).
    pub(crate) fn public_message(&self, error: &RunsError) -> String {
        let mut message = error.to_string();
        let Some(dir) = &self.dir else {
            return message;
        };
        let absolute = std::path::absolute(dir).ok();
        let canonical = dir.canonicalize().ok();
        for dir in [absolute, canonical].into_iter().flatten() {
            let shown = dir.display().to_string();
            message = message
                .replace(&format!("{shown}/"), "")
                .replace(&shown, ".");
        }
        message
    }

    fn dir(&self) -> Result<&Path, RunsError> {
        self.dir.as_deref().ok_or(RunsError::NoDirectory)
    }

    /// Every run of the directory, oldest first; unreadable ones with their error.
    pub(crate) fn list(&self) -> Result<Value, RunsError> {
        let dir = self.dir()?;
        let _reading = lock(&self.reading);
        let runs: Vec<Value> = list_runs(dir)?
            .into_iter()
            .map(|run| {
                let summary = match run {
                    Ok(summary) => summary,
                    Err(error) => return json!({ "error": self.public_message(&error.into()) }),
                };
                // The summary names no environment: the manifest, read again, does.
                let (envs, operators) = match RunDir::open(&summary.path) {
                    Ok(run) => {
                        let operators = &run.manifest().experiment.operators;
                        let mut envs: Vec<&str> =
                            operators.iter().map(|o| o.env.as_str()).collect();
                        envs.sort_unstable();
                        envs.dedup();
                        (
                            envs.join(", "),
                            operators.iter().map(|o| o.id.clone()).collect(),
                        )
                    }
                    Err(_) => (String::new(), Vec::new()),
                };
                json!({
                    "name": summary.path.file_name().map(|n| n.to_string_lossy()),
                    "run_id": summary.run_id,
                    "experiment": summary.experiment,
                    "env": envs,
                    "operators": operators,
                    "status": summary.status,
                    "done": summary.done,
                    "planned": summary.planned,
                    "started": summary.started,
                })
            })
            .collect();
        // Only the directory's name: where the server keeps its files stays private.
        let shown = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
        Ok(json!({ "dir": shown, "max_compared": MAX_COMPARED, "runs": runs }))
    }

    /// Paired comparisons by seed (the recorder's, as `mosaic compare` gives them): with
    /// `operators`, operator B against operator A of the one run named; otherwise every
    /// operator configuration of each further run against the same one of the first run.
    pub(crate) fn compare(
        &self,
        names: &[&str],
        operators: Option<[&str; 2]>,
    ) -> Result<Value, RunsError> {
        let mut distinct = names.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let (paired, unmatched) = match (names, operators) {
            ([name], Some([op_a, op_b])) => {
                let run = self.resolve(name)?;
                let samples = self.samples(&run)?;
                let find = |operator: &str| {
                    samples
                        .get(operator)
                        .ok_or_else(|| RunsError::NoSuchOperator {
                            run: (*name).to_owned(),
                            operator: operator.to_owned(),
                            known: samples.keys().cloned().collect::<Vec<_>>().join(", "),
                        })
                };
                let comparison = compare_configs((op_a, find(op_a)?), (op_b, find(op_b)?), None);
                (vec![comparison], Vec::new())
            }
            ([first, others @ ..], None)
                if !others.is_empty()
                    && names.len() <= MAX_COMPARED
                    && distinct.len() == names.len() =>
            {
                let base = self.resolve(first)?;
                let experiment = &base.manifest().experiment.name;
                let mut runs = Vec::new();
                for name in others {
                    let run = self.resolve(name)?;
                    let other = &run.manifest().experiment.name;
                    if other != experiment {
                        return Err(RunsError::DifferentExperiments {
                            a: (*first).to_owned(),
                            experiment_a: experiment.clone(),
                            b: (*name).to_owned(),
                            experiment_b: other.clone(),
                        });
                    }
                    runs.push((*name, run));
                }
                let base_samples = self.samples(&base)?;
                let (mut paired, mut unmatched) = (Vec::new(), Vec::new());
                for (name, run) in runs {
                    let samples = self.samples(&run)?;
                    let before = paired.len();
                    for (operator, a) in &base_samples {
                        match samples.get(operator) {
                            Some(b) => paired.push(compare_configs(
                                (&format!("{first}:{operator}"), a),
                                (&format!("{name}:{operator}"), b),
                                None,
                            )),
                            None => unmatched.push(format!("{first}:{operator}")),
                        }
                    }
                    unmatched.extend(
                        samples
                            .keys()
                            .filter(|op| !base_samples.contains_key(*op))
                            .map(|op| format!("{name}:{op}")),
                    );
                    if paired.len() == before {
                        return Err(RunsError::NothingInCommon {
                            a: (*first).to_owned(),
                            b: name.to_owned(),
                        });
                    }
                }
                (paired, unmatched)
            }
            _ => return Err(RunsError::CompareWhat),
        };
        let mut paired = serde_json::to_value(paired).map_err(RecorderError::from)?;
        unpaired_seeds_as_text(&mut paired);
        Ok(json!({ "runs": names, "paired": paired, "unmatched_operators": unmatched }))
    }

    /// The paired-comparison samples of every operator configuration of `run`.
    fn samples(&self, run: &RunDir) -> Result<BTreeMap<String, ConfigSamples>, RunsError> {
        let _reading = lock(&self.reading);
        Ok(samples_by_operator(&run.records()?.episodes()?))
    }

    /// The run called `name` (a directory of the runs directory, or the runs directory
    /// itself when it is a run). Nothing outside the runs directory can be named.
    fn resolve(&self, name: &str) -> Result<RunDir, RunsError> {
        let dir = self.dir()?;
        let plain = !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\']);
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

    /// The report of run `name`: built by the recorder; rebuilt when the run has progressed
    /// since.
    pub(crate) fn report(&self, name: &str) -> Result<Arc<BuiltReport>, RunsError> {
        let run = self.resolve(name)?;
        let _reading = lock(&self.reading);
        let records = run.records()?;
        let summary = run.summary_with(&records)?;
        let stamp = (summary.status, summary.done);
        if let Some(hit) = cached(&self.reports, &run.path().to_owned())
            && hit.stamp == stamp
        {
            return Ok(hit);
        }
        let report = report::build(&run, &records)?;
        let mut episodes =
            serde_json::to_value(records.episodes()?).map_err(RecorderError::from)?;
        drop(records);
        if let Some(episodes) = episodes.as_array_mut() {
            episodes.iter_mut().for_each(crate::seed_as_text);
        }
        let training =
            crate::charts::training(run.path()).map_err(|source| RunsError::Training {
                run: name.to_owned(),
                source,
            })?;
        let charts = json!({
            "returns": crate::charts::returns(&report),
            "training": training,
        });
        let manifest = run.manifest();
        let built = Arc::new(BuiltReport {
            stamp,
            json: json!({
                "name": name,
                "run_id": manifest.run_id,
                "experiment": manifest.experiment,
                "versions": manifest.versions,
                "status": summary.status,
                "done": summary.done,
                "planned": summary.planned,
                "started": summary.started,
                "report": report,
                "episodes": episodes,
            }),
            charts,
        });
        remember(
            &self.reports,
            REPORT_CACHE,
            run.path().to_owned(),
            built.clone(),
        );
        Ok(built)
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
        if let Some(hit) = cached(&self.replays, &key) {
            return Ok(hit);
        }
        let missing = || RunsError::NoSuchEpisode {
            run: name.to_owned(),
            operator: operator.to_owned(),
            episode,
        };
        let experiment = &run.manifest().experiment;
        let spec = experiment
            .operators
            .iter()
            .find(|o| o.id == operator)
            .ok_or_else(missing)?;
        let envs = self.registry_for(spec)?;
        let (record, steps) = {
            let _reading = lock(&self.reading);
            let records = run.records()?;
            let record = records
                .episodes()?
                .into_iter()
                .find(|e| e.operator_id == operator && e.episode_index == episode)
                .ok_or_else(missing)?;
            let steps = records.steps_of(&Unit::new(operator, episode))?;
            (record, steps)
        };
        let replay = Arc::new(rebuild(envs, spec, experiment.max_steps, &record, &steps)?);
        remember(&self.replays, REPLAY_CACHE, key, replay.clone());
        Ok(replay)
    }

    /// The episode viewer's data for episode `episode` of `operator` in run `name`: read
    /// from the step records, so it needs no environment (see [`crate::episode`]).
    pub(crate) fn episode(
        &self,
        name: &str,
        operator: &str,
        episode: u32,
    ) -> Result<EpisodeView, RunsError> {
        let run = self.resolve(name)?;
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
        let _reading = lock(&self.reading);
        let records = run.records()?;
        let unit = Unit::new(operator, episode);
        let record = records.episode(&unit)?.ok_or_else(missing)?;
        let steps = records.steps_of(&unit)?;
        Ok(crate::episode::view(spec, &record, &steps))
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

/// Writes the seeds that did not pair as text, as every seed the page gets (seeds are
/// 64-bit; JavaScript numbers hold 53).
fn unpaired_seeds_as_text(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                match (key.as_str(), child) {
                    ("only_in_a" | "only_in_b", Value::Array(seeds)) => {
                        for seed in seeds.iter_mut() {
                            *seed = Value::String(seed.to_string());
                        }
                    }
                    (_, child) => unpaired_seeds_as_text(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(unpaired_seeds_as_text),
        _ => {}
    }
}

/// Collects a replay's frames (the world before the first step, then after each) and its
/// timeline while the recorder's check runs.
struct Filmstrip<'a> {
    spec: &'a EnvSpec,
    /// The agents a person played, marked as the page marked them live.
    humans: Vec<usize>,
    frames: Vec<Vec<u8>>,
    timeline: Vec<ReplayStep>,
}

// By reference: the replay takes its observer by value, the frames stay here.
impl ReplayObserver for &mut Filmstrip<'_> {
    fn before_step(
        &mut self,
        env: &dyn Environment,
        _: u32,
        _: &[StepRecord],
    ) -> Result<(), String> {
        if self.timeline.is_empty() && self.frames.is_empty() {
            render_into(env, &self.humans, &mut self.frames)?;
        }
        Ok(())
    }

    fn after_step(&mut self, env: &dyn Environment, step: &ReplayedStep<'_>) -> Result<(), String> {
        let agents = self.spec.agents.len();
        let mut row = ReplayStep {
            step: step.step_index,
            actions: vec![None; agents],
            rewards: vec![None; agents],
            events: Vec::new(),
        };
        for r in step.records {
            if let Some(agent) = self.spec.agent_index(&r.agent_id) {
                row.actions[agent] = r.action_label.clone();
                row.rewards[agent] = Some(r.reward);
            }
        }
        row.events = step
            .transition
            .events
            .iter()
            .map(|e| match e.agent.and_then(|a| self.spec.agents.get(a)) {
                Some(who) => format!("{} ({})", e.kind, who.id),
                None => e.kind.clone(),
            })
            .collect();
        self.timeline.push(row);
        render_into(env, &self.humans, &mut self.frames)
    }
}

/// Replays `record` with the recorder's check, rendering the world after the reset and
/// after every step.
fn rebuild(
    envs: &EnvRegistry,
    operator: &OperatorSpec,
    max_steps: Option<u32>,
    record: &EpisodeRecord,
    steps: &[StepRecord],
) -> Result<Replay, RunsError> {
    let mut env = envs
        .make(&operator.env, &operator.env_settings)
        .map_err(|e| RunsError::Env {
            env: operator.env.clone(),
            message: e.to_string(),
        })?;
    let spec = env.spec().clone();
    let mut film = Filmstrip {
        spec: &spec,
        humans: record.human_agents(&spec),
        frames: Vec::new(),
        timeline: Vec::with_capacity(steps.len()),
    };
    let summary =
        mosaic_recorder::replay::replay(env.as_mut(), record, steps, max_steps, &mut film)?;
    let Filmstrip {
        frames, timeline, ..
    } = film;
    if summary.steps != record.steps {
        return Err(RunsError::Replay(ReplayError::Callback(format!(
            "{}: the run holds records of {} steps for an episode of {} steps",
            record.episode_id, summary.steps, record.steps
        ))));
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

/// Appends the rendered frame, with the agents in `marked` marked where the environment can,
/// as PNG (environments that draw nothing leave `frames` empty).
fn render_into(
    env: &dyn Environment,
    marked: &[usize],
    frames: &mut Vec<Vec<u8>>,
) -> Result<(), String> {
    if let Some((frame, _)) = render_marked_or_plain(env, marked) {
        frames.push(
            frame
                .to_png()
                .map_err(|e| format!("frame {}: {e}", frames.len()))?,
        );
    }
    Ok(())
}
