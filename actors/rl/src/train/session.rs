//! A training run in progress: rollouts, updates, and the run directory it writes
//! (records, `updates.jsonl`, checkpoints, the latest policies).

use super::ppo::{self, Adam, Batch, Losses};
use super::rollout::{self, Finished};
use super::{
    CHECKPOINTS_DIR, Group, OPERATOR_ID, POLICIES_DIR, STATE_FILE, Setup, TrainOutcome, Trainer,
    UPDATES_FILE,
};
use crate::checkpoint::{self, Checkpoint, Manifest, write_atomically};
use crate::error::{Result, RlError};
use crate::net::ActorCritic;
use crate::policy::Inference;
use mosaic_core::record::{AgentResult, EpisodeRecord};
use mosaic_core::rng::{derive_seed, seeded};
use mosaic_core::{OperatorId, RunId, SpecError};
use mosaic_recorder::{Durability, RunDir, RunStore, Unit};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Progress saved with every checkpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TrainerState {
    pub(super) update: u64,
    pub(super) steps: u64,
    pub(super) episodes: u64,
    pub(super) episodes_started: Vec<u64>,
    pub(super) adam_steps: Vec<u64>,
    /// The seeds of the recorded episodes, in order. Not written with each checkpoint (it
    /// grows with every episode, and every checkpoint would hold them all again): on resume
    /// they come from the run's manifest, which holds them; read from the checkpoints of
    /// runs that wrote them there.
    #[serde(default, skip_serializing)]
    pub(super) seeds: Vec<u64>,
}

/// One line of `updates.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct UpdateLine {
    update: u64,
    step: u64,
    learning_rate: f64,
    /// The learning groups' names, in the order of `mean_return` and `losses` (absent in
    /// the lines of runs trained before it was written).
    #[serde(default)]
    groups: Vec<String>,
    /// Per group: mean return of the episodes that ended in this update (null: none did).
    mean_return: Vec<Option<f64>>,
    losses: Vec<serde_json::Value>,
    steps_per_s: f64,
    /// Milliseconds collecting experience and updating the networks.
    collect_ms: u64,
    update_ms: u64,
}

/// The newest checkpoint directory whose state file was written (the last file of one).
pub(super) fn last_checkpoint(dir: &Path) -> Result<Option<PathBuf>> {
    let root = dir.join(CHECKPOINTS_DIR);
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RlError::io(&root, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| RlError::io(&root, e))?.path();
        if path.join(STATE_FILE).is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found.pop())
}

/// Drops the lines of updates after `update` (written after the checkpoint resumed from).
pub(super) fn truncate_updates(path: &Path, update: u64) -> Result<()> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(RlError::io(path, e)),
    };
    let kept: String = text
        .lines()
        .filter(|line| serde_json::from_str::<UpdateLine>(line).is_ok_and(|l| l.update <= update))
        .flat_map(|line| [line, "\n"])
        .collect();
    write_atomically(path, kept.as_bytes())
}

/// A training run in progress.
pub(super) struct Session<'a> {
    pub(super) trainer: &'a Trainer,
    pub(super) setup: Setup,
    pub(super) nets: Vec<ActorCritic>,
    pub(super) adams: Vec<Adam>,
    pub(super) state: TrainerState,
    pub(super) run_dir: RunDir,
    pub(super) store: RunStore,
    pub(super) progress: bool,
    /// Per group: the snapshots its self-play slots draw from, oldest first.
    pub(super) snapshots: Vec<Vec<Arc<Inference>>>,
}

/// What waits for the next checkpoint to be written.
#[derive(Default)]
struct Pending {
    episodes: Vec<Finished>,
    updates: Vec<UpdateLine>,
}

impl Session<'_> {
    pub(super) fn train(mut self) -> Result<TrainOutcome> {
        self.give_snapshots();
        let spec = &self.trainer.spec;
        let per_update = (spec.envs * spec.rollout) as u64;
        let total_updates = spec.total_steps.div_ceil(per_update);
        let bar = progress_bar(self.progress, total_updates * per_update, self.state.steps);
        let started = Instant::now();
        let first_step = self.state.steps;
        let mut pending = Pending::default();
        let mut last_returns = vec![0.0; self.setup.groups.len()];
        while self.state.update < total_updates {
            let update = self.state.update + 1;
            let tick = Instant::now();
            let lr = if spec.ppo.anneal_lr {
                spec.ppo.learning_rate * (1.0 - (update - 1) as f64 / total_updates as f64)
            } else {
                spec.ppo.learning_rate
            };
            self.collect(update)?;
            let collected = Instant::now();
            let finished: Vec<Finished> = self
                .setup
                .runners
                .iter_mut()
                .flat_map(|r| r.finished.drain(..))
                .collect();
            let losses = self.learn(update, lr)?;
            let learned = Instant::now();
            self.state.update = update;
            self.state.steps += per_update;
            let mean_return: Vec<Option<f64>> = self
                .setup
                .groups
                .iter()
                .map(|g| mean_group_return(&finished, g))
                .collect();
            let line = UpdateLine {
                update,
                step: self.state.steps,
                learning_rate: lr,
                groups: self.setup.groups.iter().map(|g| g.name.clone()).collect(),
                mean_return: mean_return.clone(),
                losses: losses
                    .iter()
                    .map(|l| serde_json::to_value(l).unwrap_or_default())
                    .collect(),
                steps_per_s: per_update as f64 / tick.elapsed().as_secs_f64().max(1e-9),
                collect_ms: (collected - tick).as_millis() as u64,
                update_ms: (learned - collected).as_millis() as u64,
            };
            pending.episodes.extend(finished);
            pending.updates.push(line);
            let period: Vec<Option<f64>> = self
                .setup
                .groups
                .iter()
                .map(|g| mean_group_return(&pending.episodes, g))
                .collect();
            bar.set_position(self.state.steps);
            let rate =
                (self.state.steps - first_step) as f64 / started.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!(
                "{rate:.0} steps/s, mean return {}",
                period
                    .iter()
                    .map(|r| r.map_or_else(|| "–".to_owned(), |r| format!("{r:.3}")))
                    .collect::<Vec<_>>()
                    .join(" / ")
            ));
            if update % spec.checkpoint_every == 0 || update == total_updates {
                for (into, value) in last_returns.iter_mut().zip(&period) {
                    *into = value.unwrap_or(*into);
                }
                self.checkpoint(std::mem::take(&mut pending))?;
            }
        }
        bar.finish_and_clear();
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let policies = self
            .setup
            .groups
            .iter()
            .map(|g| {
                (
                    g.name.clone(),
                    self.run_dir.path().join(POLICIES_DIR).join(&g.name),
                )
            })
            .collect();
        Ok(TrainOutcome {
            dir: self.run_dir.path().to_owned(),
            updates: self.state.update,
            steps: self.state.steps,
            episodes: self.state.episodes,
            policies,
            mean_returns: last_returns,
            steps_per_s: (self.state.steps - first_step) as f64 / elapsed,
        })
    }

    /// Hands every self-play slot its group's current snapshots.
    fn give_snapshots(&mut self) {
        for runner in &mut self.setup.runners {
            for frozen in runner.frozen() {
                frozen.set_snapshots(&self.snapshots[frozen.group]);
            }
        }
    }

    /// One rollout on the worker threads.
    fn collect(&mut self, update: u64) -> Result<()> {
        let spec = &self.trainer.spec;
        let per_thread = spec.envs.div_ceil(spec.threads.max(1));
        let nets = self
            .nets
            .iter()
            .map(Inference::new)
            .collect::<Result<Vec<_>>>()?;
        let nets = &nets;
        std::thread::scope(|scope| {
            let workers: Vec<_> = self
                .setup
                .runners
                .chunks_mut(per_thread)
                .map(|chunk| {
                    scope.spawn(move || {
                        rollout::collect(chunk, nets, spec.rollout, spec.seed, update)
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| {
                w.join().unwrap_or_else(|panic| {
                    Err(RlError::Spec(SpecError::new(
                        "env",
                        format!(
                            "a training worker panicked: {}",
                            mosaic_core::experiment::panic_message(&*panic)
                        ),
                    )))
                })
            })
        })
    }

    /// PPO's update of every group on the rollout's complete transitions.
    fn learn(&mut self, update: u64, lr: f64) -> Result<Vec<Losses>> {
        let spec = &self.trainer.spec;
        let mut all = Vec::with_capacity(self.setup.groups.len());
        for (index, group) in self.setup.groups.iter().enumerate() {
            let shape = self.nets[index].shape();
            let mut batch = Batch::new(spec.ppo.sequence_length);
            for runner in &self.setup.runners {
                for &agent in &group.agents {
                    batch.push(
                        &runner.streams[agent],
                        shape,
                        spec.ppo.gamma,
                        spec.ppo.gae_lambda,
                    );
                }
            }
            let mut rng = seeded(derive_seed(
                spec.seed,
                &format!("update{update}-{}", group.name),
            ));
            all.push(ppo::update(
                &self.nets[index],
                &mut self.adams[index],
                &batch,
                &spec.ppo,
                lr,
                &mut rng,
                spec.threads,
            )?);
        }
        for runner in &mut self.setup.runners {
            for (group, net) in self.setup.groups.iter().zip(&self.nets) {
                for &agent in &group.agents {
                    runner.streams[agent].keep_open(net.shape());
                }
            }
        }
        Ok(all)
    }

    /// Writes the records of the period, the checkpoint and the latest policies; every
    /// environment then starts a new episode.
    fn checkpoint(&mut self, pending: Pending) -> Result<()> {
        let run_id = RunId::from(self.run_dir.manifest().run_id.as_str());
        let operator = OperatorId::from(OPERATOR_ID);
        let first = self.state.episodes;
        self.state
            .seeds
            .extend(pending.episodes.iter().map(|e| e.seed));
        self.state.episodes += pending.episodes.len() as u64;
        let mut manifest = self.run_dir.manifest().clone();
        manifest.experiment = self.trainer.experiment(&self.setup, &self.state.seeds);
        manifest.seeds = self.state.seeds.clone();
        self.run_dir.update_manifest(&mut self.store, manifest)?;
        let mut writer = self.run_dir.writer(&self.store, Durability::Sync)?;
        for (offset, episode) in pending.episodes.iter().enumerate() {
            let index = (first + offset as u64) as u32;
            // A run killed between its records and its checkpoint wrote these already
            // (identically: training is deterministic).
            if self.store.is_complete(&Unit::new(OPERATOR_ID, index))? {
                continue;
            }
            let record = self.record(&run_id, &operator, index, episode);
            writer.write_episode(&record)?;
            writer.commit()?;
            writer.mark_complete(&record)?;
        }
        writer.close()?;
        let updates_path = self.run_dir.path().join(UPDATES_FILE);
        let mut lines = std::fs::read(&updates_path).unwrap_or_default();
        for line in &pending.updates {
            let mut text = serde_json::to_vec(line).map_err(|source| RlError::Json {
                path: updates_path.clone(),
                source,
            })?;
            text.push(b'\n');
            lines.extend(text);
        }
        write_atomically(&updates_path, &lines)?;
        let dir = self
            .run_dir
            .path()
            .join(CHECKPOINTS_DIR)
            .join(format!("update-{:06}", self.state.update));
        std::fs::create_dir_all(&dir).map_err(|e| RlError::io(&dir, e))?;
        for (index, group) in self.setup.groups.iter().enumerate() {
            let checkpoint = Checkpoint {
                manifest: Manifest {
                    schema: checkpoint::MANIFEST_SCHEMA.into(),
                    env: self.setup.env_spec.name.clone(),
                    obs_shape: self.setup.shape.obs_shape.clone(),
                    action_labels: self.setup.env_spec.action_labels.clone(),
                    architecture: self.setup.shape.architecture.clone(),
                    critic_agents: self.nets[index].shape().critic_agents,
                    run_id: run_id.to_string(),
                    step: self.state.steps,
                    update: self.state.update,
                    agents: group
                        .agents
                        .iter()
                        .map(|&a| self.setup.env_spec.agents[a].id.clone())
                        .collect(),
                },
                net: self.nets[index].clone(),
            };
            checkpoint.save(&dir.join(&group.name))?;
            let moments = dir.join(format!("{}.adam.safetensors", group.name));
            candle_core::safetensors::save(&self.adams[index].tensors(), &moments)?;
            checkpoint.save(&self.run_dir.path().join(POLICIES_DIR).join(&group.name))?;
            self.state.adam_steps[index] = self.adams[index].t;
        }
        for (index, net) in self.nets.iter().enumerate() {
            let keep = self.setup.keep[index];
            if keep > 0 {
                let list = &mut self.snapshots[index];
                list.push(Arc::new(Inference::new(&net.snapshot()?)?));
                let skip = list.len().saturating_sub(keep);
                list.drain(..skip);
            }
        }
        self.give_snapshots();
        for runner in &mut self.setup.runners {
            runner.cut();
        }
        self.state.episodes_started = self
            .setup
            .runners
            .iter()
            .map(|r| r.episodes_started)
            .collect();
        let state_path = dir.join(STATE_FILE);
        let text = serde_json::to_vec_pretty(&self.state).map_err(|source| RlError::Json {
            path: state_path.clone(),
            source,
        })?;
        write_atomically(&state_path, &text)
    }

    /// The episode record of a finished training episode.
    fn record(
        &self,
        run: &RunId,
        operator: &OperatorId,
        index: u32,
        episode: &Finished,
    ) -> EpisodeRecord {
        let spec = &self.setup.env_spec;
        let agents = spec
            .agents
            .iter()
            .enumerate()
            .map(|(i, agent)| AgentResult {
                agent_id: agent.id.clone(),
                team: agent.team.clone(),
                paradigm: self.setup.kinds[i].0,
                kind: self.setup.kinds[i].1.clone(),
                total_reward: episode.returns[i],
                outcome: episode.outcome.as_ref().and_then(|o| o.get(i).copied()),
                decisions: episode.decisions[i],
                timeouts: 0,
                errors: 0,
            })
            .collect();
        EpisodeRecord {
            steps: episode.steps,
            terminated: episode.terminated,
            truncated: !episode.terminated,
            agents,
            metrics: episode.metrics.clone(),
            ..EpisodeRecord::new(run, operator, index, episode.seed, spec.name.clone())
        }
    }
}

fn mean_group_return(episodes: &[Finished], group: &Group) -> Option<f64> {
    let returns: Vec<f64> = episodes
        .iter()
        .flat_map(|e| group.agents.iter().map(|&a| e.returns[a]))
        .collect();
    (!returns.is_empty()).then(|| returns.iter().sum::<f64>() / returns.len() as f64)
}

fn progress_bar(show: bool, total: u64, done: u64) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} steps  {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_position(done);
    bar
}
