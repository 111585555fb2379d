//! PPO training on the native worlds, without actors: `mosaic train TRAIN.toml`, or
//! [`Trainer::builder`] in Rust.
//!
//! PPO with independent critics (IPPO) or a centralised critic per team (MAPPO): every
//! team with `learn` slots trains one policy shared by its agents (parameter sharing),
//! against fixed players in the other slots (random, noop, cycling, scripted, any `rl`
//! checkpoint, or frozen snapshots of a learning group for self-play, [`selfplay`]). Environments are stepped in lock-step on
//! worker threads, and an MLP's actor and critic are updated at once on two threads; the
//! result depends on the seed only (not on the thread count).
//!
//! A run directory holds, besides the usual `run.json` and records (one episode record
//! per training episode, so `mosaic report` plots the learning curve):
//!
//! - `train.json`: the training spec;
//! - `updates.jsonl`: one line per update (losses, entropy, mean return, steps/s);
//! - `checkpoints/update-NNNNNN/`: each group's policy (`GROUP.json` +
//!   `GROUP.safetensors`), optimiser state and `state.json`, every `checkpoint_every`
//!   updates; `policies/GROUP.*`: the latest policy, what experiments name with
//!   `kind = "rl"`.
//!
//! Records are written with each checkpoint, and every environment starts a new episode
//! after one, so a run resumed after a kill ([`Trainer::resume`]) continues exactly as if it
//! had never stopped.

pub mod config;
mod matmul;
mod mlp_update;
pub mod ppo;
pub mod rollout;
pub mod selfplay;
mod session;

pub use config::{Algorithm, Group, LEARN, PpoConfig, StartFrom, TrainSpec};

use crate::checkpoint::{Checkpoint, write_atomically};
use crate::error::{Result, RlError};
use crate::net::{ActorCritic, NetShape};
use crate::policy::Inference;
use candle_core::Device;
use mosaic_core::experiment::parse_settings;
use mosaic_core::experiment::{ExperimentSpec, OperatorSpec, SeedPlan, SlotSpec};
use mosaic_core::record::{RunManifest, now_ms};
use mosaic_core::rng::derive_seed;
use mosaic_core::{EnvKind, EnvRegistry, EnvSpec, Paradigm, Policy, SpecError};
use mosaic_recorder::{RunDir, RunStore};
use ppo::Adam;
use rollout::{EnvRunner, Player};
use selfplay::{Frozen, SELF_PLAY, SelfPlaySettings};
use session::{Session, TrainerState, last_checkpoint, truncate_updates};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operator id of a training run's records.
pub const OPERATOR_ID: &str = "train";
/// The value of `versions.mode` in a training run's `run.json`.
pub const TRAINING_MODE: &str = "training";

const SPEC_FILE: &str = "train.json";
const UPDATES_FILE: &str = "updates.jsonl";
const CHECKPOINTS_DIR: &str = "checkpoints";
const POLICIES_DIR: &str = "policies";
const STATE_FILE: &str = "state.json";

/// Where a training run goes.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// The run directory (created; must not hold a run yet).
    pub dir: PathBuf,
    /// The run id.
    pub run_id: String,
    /// Software versions recorded in `run.json`.
    pub versions: serde_json::Map<String, serde_json::Value>,
    /// Show a progress bar on standard error.
    pub progress: bool,
}

/// What a finished training run reports.
#[derive(Clone, Debug)]
pub struct TrainOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// PPO updates done.
    pub updates: u64,
    /// Environment steps taken.
    pub steps: u64,
    /// Training episodes finished.
    pub episodes: u64,
    /// Each group's name and latest policy (stem of its checkpoint).
    pub policies: Vec<(String, PathBuf)>,
    /// Mean return of each group's agents over the episodes of the last checkpoint period.
    pub mean_returns: Vec<f64>,
    /// Environment steps per second of this process's share of the run.
    pub steps_per_s: f64,
}

/// A training run, ready to start or resume.
#[derive(Clone, Debug)]
pub struct Trainer {
    spec: TrainSpec,
    envs: EnvRegistry,
}

/// Builds a [`Trainer`] in code; see [`Trainer::builder`].
#[derive(Clone, Debug)]
pub struct TrainerBuilder {
    spec: TrainSpec,
    envs: EnvRegistry,
}

impl TrainerBuilder {
    /// Sets an environment setting.
    pub fn env_setting(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.spec.env_settings.insert(key.into(), value.into());
        self
    }

    /// Trains the agents of `slot` (an agent id, a team or `*`).
    pub fn learn(self, slot: &str) -> Self {
        self.agent(slot, SlotSpec::kind(LEARN))
    }

    /// Puts a fixed player on `slot`.
    pub fn agent(mut self, slot: &str, spec: SlotSpec) -> Self {
        self.spec.agents.insert(slot.into(), spec);
        self
    }

    /// The seed of everything.
    pub fn seed(mut self, seed: u64) -> Self {
        self.spec.seed = seed;
        self
    }

    /// Environment steps to train for.
    pub fn total_steps(mut self, steps: u64) -> Self {
        self.spec.total_steps = steps;
        self
    }

    /// Environments stepped in parallel, and the worker threads stepping them.
    pub fn parallel(mut self, envs: usize, threads: usize) -> Self {
        self.spec.envs = envs;
        self.spec.threads = threads;
        self
    }

    /// Steps of each environment per update.
    pub fn rollout(mut self, steps: usize) -> Self {
        self.spec.rollout = steps;
        self
    }

    /// Updates between checkpoints.
    pub fn checkpoint_every(mut self, updates: u64) -> Self {
        self.spec.checkpoint_every = updates;
        self
    }

    /// IPPO (the default) or MAPPO.
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.spec.algorithm = algorithm;
        self
    }

    /// The network.
    pub fn architecture(mut self, architecture: crate::Architecture) -> Self {
        self.spec.architecture = Some(architecture);
        self
    }

    /// PPO's hyperparameters.
    pub fn ppo(mut self, ppo: PpoConfig) -> Self {
        self.spec.ppo = ppo;
        self
    }

    /// Learn from rewards relative to the opponents' (see [`TrainSpec::zero_sum`]).
    pub fn zero_sum(mut self, zero_sum: bool) -> Self {
        self.spec.zero_sum = zero_sum;
        self
    }

    /// Trains in environments from `envs` instead of the native ones.
    pub fn envs(mut self, envs: EnvRegistry) -> Self {
        self.envs = envs;
        self
    }

    /// Checks the spec and returns the trainer.
    pub fn build(self) -> Result<Trainer> {
        self.spec.validate()?;
        Ok(Trainer {
            spec: self.spec,
            envs: self.envs,
        })
    }
}

/// Everything built from the spec: the environments with their players, the groups and
/// their networks.
struct Setup {
    env_spec: EnvSpec,
    groups: Vec<Group>,
    shape: NetShape,
    runners: Vec<EnvRunner>,
    kinds: Vec<(Paradigm, String)>,
    /// Per group: how many snapshots its self-play slots draw from (0: none play).
    keep: Vec<usize>,
}

impl Trainer {
    /// Starts building a training run `name` on environment `env`.
    ///
    /// ```no_run
    /// use mosaic_rl::train::{TrainOptions, Trainer};
    /// let trainer = Trainer::builder("doorkey", "gridworld")
    ///     .learn("*")
    ///     .total_steps(300_000)
    ///     .build()
    ///     .unwrap();
    /// let outcome = trainer.run(&TrainOptions {
    ///     dir: "runs/doorkey".into(),
    ///     run_id: "doorkey".into(),
    ///     versions: Default::default(),
    ///     progress: true,
    /// }).unwrap();
    /// println!("policy in {}", outcome.policies[0].1.display());
    /// ```
    pub fn builder(name: &str, env: &str) -> TrainerBuilder {
        TrainerBuilder {
            spec: TrainSpec {
                name: name.into(),
                env: env.into(),
                env_settings: Default::default(),
                agents: Default::default(),
                seed: 0,
                total_steps: 100_000,
                envs: 8,
                threads: 2,
                rollout: 128,
                checkpoint_every: 10,
                algorithm: Algorithm::Ippo,
                architecture: None,
                ppo: PpoConfig::default(),
                zero_sum: false,
            },
            envs: mosaic_adapters::in_process_envs(),
        }
    }

    /// A trainer for `spec` on the native environments.
    pub fn from_spec(spec: TrainSpec) -> Result<Self> {
        spec.validate()?;
        Ok(Self {
            spec,
            envs: mosaic_adapters::in_process_envs(),
        })
    }

    /// The spec.
    pub fn spec(&self) -> &TrainSpec {
        &self.spec
    }

    fn env_kind(&self) -> Result<&EnvKind> {
        self.envs.get(&self.spec.env).ok_or_else(|| {
            let known: Vec<&str> = self.envs.kinds().iter().map(|k| k.name).collect();
            RlError::Spec(SpecError::new(
                "env",
                format!(
                    "`{}` is not a native environment (training runs: {})",
                    self.spec.env,
                    known.join(", ")
                ),
            ))
        })
    }

    /// Builds environments, players and groups; checks everything against the
    /// environment.
    fn setup(&self) -> Result<Setup> {
        let kind = self.env_kind()?;
        let make = || {
            self.envs
                .make(&self.spec.env, &self.spec.env_settings)
                .map_err(RlError::Spec)
        };
        let probe = make()?;
        let env_spec = probe.spec().clone();
        let groups = self.spec.groups(&env_spec)?;
        let obs_shape = env_spec.symbolic_shape.clone().ok_or_else(|| {
            RlError::Spec(SpecError::new(
                "env",
                format!(
                    "`{}` has no symbolic observation to learn from",
                    env_spec.name
                ),
            ))
        })?;
        let architecture = self
            .spec
            .architecture
            .clone()
            .unwrap_or_else(|| crate::Architecture::for_shape(&obs_shape));
        architecture
            .check(&obs_shape)
            .map_err(|m| RlError::Spec(SpecError::new("architecture", m)))?;
        let shape = NetShape::new(obs_shape, env_spec.action_labels.len(), architecture);
        let players = || {
            (0..env_spec.agents.len())
                .map(
                    |agent| match groups.iter().position(|g| g.agents.contains(&agent)) {
                        Some(group) => Ok(Player::Learner(group)),
                        None => self.fixed_player(kind, &env_spec, &groups, agent),
                    },
                )
                .collect::<Result<Vec<_>>>()
        };
        let kinds = players()?
            .iter()
            .enumerate()
            .map(|(agent, player)| match player {
                Player::Learner(_) => (Paradigm::Rl, "rl".to_owned()),
                Player::Frozen(_) => (Paradigm::Rl, SELF_PLAY.to_owned()),
                Player::Fixed(policy) => (
                    policy.paradigm(),
                    self.spec
                        .slot_for(&env_spec, agent)
                        .map_or_else(String::new, |s| s.kind.clone()),
                ),
            })
            .collect();
        let mut keep = vec![0; groups.len()];
        for player in players()? {
            if let Player::Frozen(frozen) = player {
                keep[frozen.group] = keep[frozen.group].max(frozen.pool);
            }
        }
        let teams: Vec<Vec<usize>> = groups.iter().map(|g| g.agents.clone()).collect();
        let opponents = self.spec.zero_sum.then(|| opponents(&env_spec));
        let mut envs = vec![probe];
        for _ in 1..self.spec.envs {
            envs.push(make()?);
        }
        let runners = envs
            .into_iter()
            .enumerate()
            .map(|(index, env)| {
                Ok(EnvRunner::new(
                    index,
                    self.spec.seed,
                    env,
                    players()?,
                    teams.clone(),
                    opponents.clone(),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Setup {
            env_spec,
            groups,
            shape,
            runners,
            kinds,
            keep,
        })
    }

    /// The network shape of `group`: its critic reads the whole team under MAPPO.
    fn group_shape(&self, shape: &NetShape, group: &Group) -> NetShape {
        NetShape {
            critic_agents: match self.spec.algorithm {
                Algorithm::Ippo => 1,
                Algorithm::Mappo => group.agents.len(),
            },
            ..shape.clone()
        }
    }

    /// Every group's network at the start of the run: its `from` checkpoint's, else fresh
    /// weights seeded from the run's seed and the group's name.
    fn fresh_nets(&self, setup: &Setup) -> Result<Vec<ActorCritic>> {
        setup
            .groups
            .iter()
            .map(|g| {
                let shape = self.group_shape(&setup.shape, g);
                let Some(start) = &g.start else {
                    let seed = derive_seed(self.spec.seed, &format!("net-{}", g.name));
                    return ActorCritic::new(shape, seed);
                };
                // A checkpoint that cannot be read or does not fit is bad input, like a
                // wrong `rl` slot.
                let field = format!("agents.{}.from", g.name);
                let loaded = crate::decider::load_for(&start.from, &setup.env_spec, start.transfer)
                    .map_err(|e| RlError::Spec(SpecError::new(field.as_str(), e.to_string())))?;
                let found = loaded.net.shape();
                if *found != shape {
                    return Err(RlError::Spec(SpecError::new(
                        field,
                        format!(
                            "{}: its network ({:?}, a critic of {} agent(s)) is not the one this \
                             training builds ({:?}, a critic of {} agent(s)); set `architecture` \
                             (and `algorithm`) to the checkpoint's",
                            start.from.display(),
                            found.architecture,
                            found.critic_agents,
                            shape.architecture,
                            shape.critic_agents,
                        ),
                    )));
                }
                Ok(loaded.net)
            })
            .collect()
    }

    /// The fixed policy of agent `agent`'s slot.
    fn fixed_player(
        &self,
        kind: &EnvKind,
        spec: &EnvSpec,
        groups: &[Group],
        agent: usize,
    ) -> Result<Player> {
        let slot = self
            .spec
            .slot_for(spec, agent)
            .ok_or_else(|| SpecError::new("agents", "no slot"))?;
        let at =
            |e: SpecError| RlError::Spec(e.within(&format!("agents.{}", spec.agents[agent].id)));
        let no_settings = || -> std::result::Result<(), SpecError> {
            match slot.settings.keys().next() {
                Some(key) => Err(SpecError::new(
                    key.as_str(),
                    format!("`{}` takes no settings", slot.kind),
                )),
                None => Ok(()),
            }
        };
        let policy: Box<dyn Policy> = match slot.kind.as_str() {
            "random" => {
                no_settings().map_err(at)?;
                Box::new(mosaic_core::baseline::Random::default())
            }
            "cycling" => {
                no_settings().map_err(at)?;
                Box::new(mosaic_core::baseline::Cycling::default())
            }
            "noop" => {
                no_settings().map_err(at)?;
                Box::new(mosaic_core::baseline::Noop {
                    action: Some(spec.default_action),
                })
            }
            "scripted" => {
                let make = kind.scripted.ok_or_else(|| {
                    at(SpecError::new(
                        "kind",
                        format!("`{}` has no scripted heuristic", spec.name),
                    ))
                })?;
                make(&self.spec.env_settings, &slot.settings).map_err(at)?
            }
            "rl" => Box::new(crate::decider::policy(&slot.settings, spec).map_err(at)?),
            SELF_PLAY => {
                let settings: SelfPlaySettings = parse_settings(&slot.settings).map_err(at)?;
                let group = groups
                    .iter()
                    .position(|g| g.name == settings.group)
                    .ok_or_else(|| {
                        let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                        at(SpecError::new(
                            "group",
                            format!(
                                "`{}` is not a learning group (groups: {})",
                                settings.group,
                                names.join(", ")
                            ),
                        ))
                    })?;
                if settings.pool == 0 {
                    return Err(at(SpecError::new("pool", "must be at least 1")));
                }
                return Ok(Player::Frozen(Frozen::new(group, settings.pool)));
            }
            other => {
                return Err(at(SpecError::new(
                    "kind",
                    format!(
                        "`{other}` cannot play during training (fixed players: random, noop, cycling, scripted, rl, self)"
                    ),
                )));
            }
        };
        Ok(Player::Fixed(policy))
    }

    /// Each group's snapshots for self-play: its `initial` network (copied), then its
    /// policy at each checkpoint of the run in `dir` (none for a new run), the last `keep`
    /// of them. `initial` may be empty when no slot plays self-play.
    fn snapshots(
        setup: &Setup,
        dir: Option<&Path>,
        initial: &[ActorCritic],
    ) -> Result<Vec<Vec<Arc<Inference>>>> {
        let mut checkpoints = Vec::new();
        if let Some(dir) = dir {
            let root = dir.join(CHECKPOINTS_DIR);
            if root.is_dir() {
                for entry in std::fs::read_dir(&root).map_err(|e| RlError::io(&root, e))? {
                    let path = entry.map_err(|e| RlError::io(&root, e))?.path();
                    if path.join(STATE_FILE).is_file() {
                        checkpoints.push(path);
                    }
                }
            }
            checkpoints.sort();
        }
        let mut all = Vec::with_capacity(setup.groups.len());
        for (index, group) in setup.groups.iter().enumerate() {
            let keep = setup.keep[index];
            let mut list = Vec::new();
            if let Some(net) = initial.get(index).filter(|_| keep > 0) {
                list.push(Arc::new(Inference::new(&net.snapshot()?)?));
                for checkpoint in &checkpoints {
                    let loaded = Checkpoint::load(&checkpoint.join(&group.name))?;
                    list.push(Arc::new(Inference::new(&loaded.net)?));
                }
            }
            let skip = list.len().saturating_sub(keep);
            all.push(list.split_off(skip));
        }
        Ok(all)
    }

    /// Trains from scratch into `options.dir`.
    pub fn run(&self, options: &TrainOptions) -> Result<TrainOutcome> {
        let setup = self.setup()?;
        let mut versions = options.versions.clone();
        versions.insert("mode".into(), TRAINING_MODE.into());
        versions.insert("mosaic-rl".into(), env!("CARGO_PKG_VERSION").into());
        let manifest = RunManifest {
            schema: mosaic_core::record::RUN_SCHEMA.into(),
            run_id: options.run_id.clone(),
            experiment: self.experiment(&setup, &[]),
            seeds: Vec::new(),
            versions,
            started: now_ms(),
            shard: None,
        };
        let (run_dir, store) = RunDir::create(&options.dir, &manifest)?;
        let spec_path = options.dir.join(SPEC_FILE);
        let text = serde_json::to_vec_pretty(&self.spec).map_err(|source| RlError::Json {
            path: spec_path.clone(),
            source,
        })?;
        write_atomically(&spec_path, &text)?;
        self.train_from_start(setup, run_dir, store, options.progress)
    }

    /// Trains the run in `run_dir` from its first update: every group's network as the run
    /// starts (`from` or fresh), fresh optimisers.
    fn train_from_start(
        &self,
        setup: Setup,
        run_dir: RunDir,
        store: RunStore,
        progress: bool,
    ) -> Result<TrainOutcome> {
        let nets = self.fresh_nets(&setup)?;
        let adams = nets.iter().map(Adam::new).collect::<Result<Vec<_>>>()?;
        let state = TrainerState {
            episodes_started: vec![0; self.spec.envs],
            adam_steps: vec![0; nets.len()],
            ..TrainerState::default()
        };
        let snapshots = Self::snapshots(&setup, None, &nets)?;
        Session {
            trainer: self,
            setup,
            nets,
            adams,
            state,
            run_dir,
            store,
            progress,
            snapshots,
        }
        .train()
    }

    /// Continues the training run in `dir` from its last checkpoint.
    pub fn resume(dir: &Path, progress: bool) -> Result<TrainOutcome> {
        Self::resume_with(dir, progress, mosaic_adapters::in_process_envs())
    }

    /// Continues the training run in `dir`, made with environments from `envs`, from its
    /// last checkpoint.
    pub fn resume_with(dir: &Path, progress: bool, envs: EnvRegistry) -> Result<TrainOutcome> {
        let spec_path = dir.join(SPEC_FILE);
        let bytes = std::fs::read(&spec_path).map_err(|e| RlError::io(&spec_path, e))?;
        let spec: TrainSpec = serde_json::from_slice(&bytes).map_err(|source| RlError::Json {
            path: spec_path.clone(),
            source,
        })?;
        spec.validate()?;
        let trainer = Self { spec, envs };
        let mut setup = trainer.setup()?;
        let run_dir = RunDir::open(dir)?;
        let store = run_dir.store()?;
        let Some(last) = last_checkpoint(dir)? else {
            // Killed before its first checkpoint: nothing to keep but the directory.
            return trainer.train_from_start(setup, run_dir, store, progress);
        };
        let state_path = last.join(STATE_FILE);
        let bytes = std::fs::read(&state_path).map_err(|e| RlError::io(&state_path, e))?;
        let mut state: TrainerState =
            serde_json::from_slice(&bytes).map_err(|source| RlError::Json {
                path: state_path.clone(),
                source,
            })?;
        // The manifest is updated before a checkpoint's records and state, so it holds at
        // least the seeds of the episodes the state counts (more if killed in between).
        let recorded = &run_dir.manifest().seeds;
        let episodes = usize::try_from(state.episodes).unwrap_or(usize::MAX);
        state.seeds = recorded
            .get(..episodes)
            .ok_or_else(|| RlError::Corrupt {
                path: dir.join(mosaic_recorder::run_dir::MANIFEST_FILE),
                problem: format!(
                    "it lists {} episode seeds, the checkpoint {} counts {episodes}",
                    recorded.len(),
                    last.display()
                ),
            })?
            .to_vec();
        let mut nets = Vec::new();
        let mut adams = Vec::new();
        for (group, adam_steps) in setup.groups.iter().zip(&state.adam_steps) {
            let checkpoint = Checkpoint::load(&last.join(&group.name))?;
            checkpoint
                .manifest
                .check(&setup.env_spec, &last.join(&group.name))?;
            let moments_path = last.join(format!("{}.adam.safetensors", group.name));
            let moments = candle_core::safetensors::load(&moments_path, &Device::Cpu)?;
            adams.push(Adam::from_tensors(&checkpoint.net, *adam_steps, moments)?);
            nets.push(checkpoint.net);
        }
        for (runner, started) in setup.runners.iter_mut().zip(&state.episodes_started) {
            runner.episodes_started = *started;
        }
        truncate_updates(&dir.join(UPDATES_FILE), state.update)?;
        // Only self-play needs the initial networks (a resumed run without it must not
        // depend on a `from` checkpoint still being there).
        let initial = if setup.keep.iter().any(|keep| *keep > 0) {
            trainer.fresh_nets(&setup)?
        } else {
            Vec::new()
        };
        let snapshots = Self::snapshots(&setup, Some(dir), &initial)?;
        Session {
            trainer: &trainer,
            setup,
            nets,
            adams,
            state,
            run_dir,
            store,
            progress,
            snapshots,
        }
        .train()
    }

    /// The experiment a training run records: one operator `train` whose learning slots
    /// are `rl` agents playing the run's latest policies.
    fn experiment(&self, setup: &Setup, seeds: &[u64]) -> ExperimentSpec {
        let mut agents = self.spec.agents.clone();
        for group in &setup.groups {
            for &agent in &group.agents {
                let mut slot = SlotSpec::kind("rl");
                slot.settings.insert(
                    "checkpoint".into(),
                    format!("{POLICIES_DIR}/{}", group.name).into(),
                );
                agents.insert(setup.env_spec.agents[agent].id.clone(), slot);
            }
        }
        agents.retain(|_, slot| slot.kind != LEARN);
        ExperimentSpec {
            name: self.spec.name.clone(),
            episodes: seeds.len() as u32,
            seeds: SeedPlan::List {
                seeds: seeds.to_vec(),
            },
            max_steps: None,
            parallelism: 1,
            pace_ms: 0,
            decision_timeout_ms: None,
            record_observations: false,
            supervision: Default::default(),
            operators: vec![OperatorSpec {
                id: OPERATOR_ID.into(),
                env: self.spec.env.clone(),
                env_settings: self.spec.env_settings.clone(),
                agents,
            }],
        }
    }
}

/// Per agent, its opponents: the agents of the other teams (an agent without a team is a
/// team of its own).
fn opponents(spec: &EnvSpec) -> Vec<Vec<usize>> {
    let team = |agent: usize| {
        let a = &spec.agents[agent];
        a.team.as_deref().unwrap_or(a.id.as_str())
    };
    (0..spec.agents.len())
        .map(|agent| {
            (0..spec.agents.len())
                .filter(|other| team(*other) != team(agent))
                .collect()
        })
        .collect()
}
