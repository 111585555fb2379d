//! Named environments, built from experiment settings.

use mosaic_core::experiment::SpecError;
use mosaic_core::{Environment, Policy, Settings};

/// Builds an environment from its settings.
pub type EnvConstructor = fn(&Settings) -> Result<Box<dyn Environment>, SpecError>;

/// Builds the environment's scripted heuristic (the `scripted` operator kind) from the
/// environment settings and the slot's settings.
pub type ScriptedConstructor =
    fn(env_settings: &Settings, slot_settings: &Settings) -> Result<Box<dyn Policy>, SpecError>;

/// A registered environment.
#[derive(Clone, Debug)]
pub struct EnvKind {
    /// Name used in experiment files, e.g. `soccer-2v2`.
    pub name: &'static str,
    /// One line for `mosaic envs`.
    pub summary: &'static str,
    /// Settings with their defaults, one `name = default: meaning` line each.
    pub settings: &'static [&'static str],
    /// Constructor.
    pub make: EnvConstructor,
    /// The environment's scripted heuristic, if it has one.
    pub scripted: Option<ScriptedConstructor>,
}

/// The environments an experiment can name.
#[derive(Clone, Debug, Default)]
pub struct EnvRegistry {
    kinds: Vec<EnvKind>,
}

impl EnvRegistry {
    /// Every native environment of this crate.
    pub fn native() -> Self {
        let mut registry = Self::default();
        for kind in native_kinds() {
            registry.register(kind);
        }
        registry
    }

    /// Adds (or replaces) a kind.
    pub fn register(&mut self, kind: EnvKind) {
        self.kinds.retain(|k| k.name != kind.name);
        self.kinds.push(kind);
    }

    /// Looks a kind up by name.
    pub fn get(&self, name: &str) -> Option<&EnvKind> {
        self.kinds.iter().find(|k| k.name == name)
    }

    /// All kinds, in registration order.
    pub fn kinds(&self) -> &[EnvKind] {
        &self.kinds
    }

    /// Builds the environment `name` with `settings`.
    pub fn make(&self, name: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
        let kind = self.get(name).ok_or_else(|| {
            let known: Vec<_> = self.kinds.iter().map(|k| k.name).collect();
            SpecError::new(
                "env",
                format!("unknown environment `{name}` (known: {})", known.join(", ")),
            )
        })?;
        (kind.make)(settings).map_err(|e| SpecError::new("env_settings", e.message))
    }
}

fn native_kinds() -> Vec<EnvKind> {
    vec![crate::coord::kind()]
}
