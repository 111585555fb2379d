//! One native world driven step by step from outside a session: what the Python bindings
//! wrap, in plain Rust so that it is tested without an interpreter.

use mosaic_core::{
    Action, EnvError, EnvSpec, Environment, Frame, ObsRequest, Observation, Outcome, Settings,
    SpecError, Transition,
};

/// A world could not be built or driven.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The settings text is not a JSON object.
    #[error("settings of `{world}` are not a JSON object: {reason}")]
    SettingsNotAnObject {
        /// The world's name.
        world: String,
        /// What the JSON reader said.
        reason: String,
    },
    /// The registry refused the name or the settings (the message names the setting).
    #[error("{world}: {source}")]
    Spec {
        /// The world's name.
        world: String,
        /// What the registry or the world's constructor said.
        source: SpecError,
    },
    /// The environment refused a reset or a step.
    #[error("{world}: {source}")]
    Env {
        /// The world's name.
        world: String,
        /// What the environment said.
        source: EnvError,
    },
    /// An agent index past the world's agents.
    #[error("{world} has no agent {agent} (it has {count})")]
    NoSuchAgent {
        /// The world's name.
        world: String,
        /// The index asked for.
        agent: usize,
        /// How many agents the world has.
        count: usize,
    },
    /// A joint action of the wrong length.
    #[error("{world} takes one action entry per agent ({count}), got {given}")]
    ActionCount {
        /// The world's name.
        world: String,
        /// How many agents the world has.
        count: usize,
        /// How many entries were given.
        given: usize,
    },
    /// `step` before the first `reset`.
    #[error("{world}: step called before reset")]
    NotReset {
        /// The world's name.
        world: String,
    },
}

/// The names of the worlds this module can build: those of
/// [`mosaic_adapters::in_process_envs`], in its order.
pub fn world_names() -> Vec<&'static str> {
    mosaic_adapters::in_process_envs()
        .kinds()
        .iter()
        .map(|kind| kind.name)
        .collect()
}

/// A native world and the transition buffer its steps fill.
pub struct World {
    env: Box<dyn Environment>,
    transition: Transition,
    was_reset: bool,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("name", &self.spec().name)
            .field("steps", &self.env.steps())
            .finish()
    }
}

impl World {
    /// Builds the world `name` of [`mosaic_adapters::in_process_envs`] with `settings`, as
    /// an experiment's `env_settings` would.
    pub fn new(name: &str, settings: &Settings) -> Result<Self, WorldError> {
        let env = mosaic_adapters::in_process_envs()
            .make(name, settings)
            .map_err(|source| WorldError::Spec {
                world: name.to_owned(),
                source,
            })?;
        let agents = env.spec().agents.len();
        Ok(Self {
            env,
            transition: Transition::new(agents),
            was_reset: false,
        })
    }

    /// Like [`World::new`], the settings given as a JSON object.
    pub fn from_json(name: &str, settings: &str) -> Result<Self, WorldError> {
        let settings: Settings =
            serde_json::from_str(settings).map_err(|e| WorldError::SettingsNotAnObject {
                world: name.to_owned(),
                reason: e.to_string(),
            })?;
        Self::new(name, &settings)
    }

    /// The static description.
    pub fn spec(&self) -> &EnvSpec {
        self.env.spec()
    }

    /// Starts an episode: `seed` is the episode seed, the one `mosaic run` gives the
    /// environment for that episode.
    pub fn reset(&mut self, seed: u64) -> Result<(), WorldError> {
        self.env.reset(seed).map_err(|e| self.env_error(e))?;
        self.transition.clear(self.spec().agents.len());
        self.was_reset = true;
        Ok(())
    }

    /// The agents that must act now, by index.
    pub fn acting(&self) -> Vec<usize> {
        self.env.acting()
    }

    /// Steps taken since the last reset.
    pub fn steps(&self) -> u32 {
        self.env.steps()
    }

    /// The observation of `agent` with the modalities of `want` (the legal mask always).
    pub fn observe(&self, agent: usize, want: ObsRequest) -> Result<Observation, WorldError> {
        self.check_agent(agent)?;
        Ok(self.env.observe(agent, want))
    }

    /// Advances one step: `actions[i]` is agent `i`'s action, `Some` for the acting agents.
    pub fn step(&mut self, actions: &[Option<u32>]) -> Result<&Transition, WorldError> {
        let count = self.spec().agents.len();
        if actions.len() != count {
            return Err(WorldError::ActionCount {
                world: self.spec().name.clone(),
                count,
                given: actions.len(),
            });
        }
        if !self.was_reset {
            return Err(WorldError::NotReset {
                world: self.spec().name.clone(),
            });
        }
        let joint: Vec<Option<Action>> = actions.iter().map(|a| a.map(Action)).collect();
        if let Err(e) = self.env.step(&joint, &mut self.transition) {
            return Err(self.env_error(e));
        }
        Ok(&self.transition)
    }

    /// The whole world as a picture, when the world draws one.
    pub fn render(&self) -> Option<Frame> {
        self.env.render()
    }

    /// Per-agent results once the episode is over, when the game has a winner.
    pub fn outcome(&self) -> Option<Vec<Outcome>> {
        self.env.outcome()
    }

    /// Episode metrics, as `mosaic report` reads them.
    pub fn metrics(&self) -> serde_json::Map<String, serde_json::Value> {
        self.env.metrics()
    }

    fn check_agent(&self, agent: usize) -> Result<(), WorldError> {
        let count = self.spec().agents.len();
        if agent < count {
            Ok(())
        } else {
            Err(WorldError::NoSuchAgent {
                world: self.spec().name.clone(),
                agent,
                count,
            })
        }
    }

    fn env_error(&self, source: EnvError) -> WorldError {
        WorldError::Env {
            world: self.spec().name.clone(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rollout(world: &mut World, seed: u64, steps: usize) -> Vec<(Vec<f32>, Vec<f32>)> {
        world.reset(seed).unwrap();
        let agents = world.spec().agents.len();
        let mut seen = Vec::new();
        for step in 0..steps {
            let acting = world.acting();
            if acting.is_empty() {
                break;
            }
            let mut actions = vec![None; agents];
            for agent in acting {
                let obs = world.observe(agent, ObsRequest::SYMBOLIC).unwrap();
                let legal: Vec<_> = obs.legal_actions().collect();
                actions[agent] = Some(legal[step % legal.len()].0);
            }
            let rewards = world.step(&actions).unwrap().rewards.clone();
            let obs = world.observe(0, ObsRequest::SYMBOLIC).unwrap();
            seen.push((obs.symbolic.unwrap_or_default().data, rewards));
        }
        seen
    }

    #[test]
    fn every_in_process_world_builds_and_replays_its_seed() {
        assert_eq!(
            world_names().len(),
            mosaic_adapters::in_process_envs().kinds().len()
        );
        for name in world_names() {
            let mut world = World::new(name, &Settings::new()).unwrap();
            let first = rollout(&mut world, 7, 40);
            assert!(!first.is_empty(), "{name}");
            assert_eq!(rollout(&mut world, 7, 40), first, "{name}");
        }
    }

    #[test]
    fn settings_errors_name_the_setting_and_the_world() {
        let err = World::from_json("soccer-2v2", r#"{"view_size": 4}"#).unwrap_err();
        let message = err.to_string();
        assert!(message.starts_with("soccer-2v2: env_settings"), "{message}");
        assert!(message.contains("view_size"), "{message}");
        let err = World::from_json("soccer-2v2", "[1]").unwrap_err();
        assert!(err.to_string().contains("soccer-2v2"), "{err}");
        let err = World::from_json("socer", "{}").unwrap_err();
        assert!(err.to_string().contains("`socer`"), "{err}");
    }

    #[test]
    fn misuse_is_an_error_not_a_panic() {
        let mut world = World::new("soccer-1v1", &Settings::new()).unwrap();
        let err = world.step(&[Some(0), Some(0)]).unwrap_err();
        assert!(matches!(err, WorldError::NotReset { .. }), "{err}");
        world.reset(1).unwrap();
        let err = world.step(&[Some(0)]).unwrap_err();
        assert!(err.to_string().contains("(2), got 1"), "{err}");
        let err = world.step(&[Some(99), Some(0)]).unwrap_err();
        assert!(err.to_string().starts_with("soccer-1v1: "), "{err}");
        let err = world.observe(2, ObsRequest::SYMBOLIC).unwrap_err();
        assert!(err.to_string().contains("no agent 2"), "{err}");
    }
}
