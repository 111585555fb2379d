//! Named environments, built from experiment settings.
//!
//! The registry type lives here, below every world, so that worlds can describe themselves
//! ([`EnvKind`], [`EnvPrefix`]) without knowing the registry that lists them; the list of
//! built-in worlds is assembled above them (`mosaic_adapters::native_envs`).

use crate::experiment::SpecError;
use crate::{Environment, Policy, Settings};

/// Builds an environment from its settings.
pub type EnvConstructor = fn(&Settings) -> Result<Box<dyn Environment>, SpecError>;

/// Builds the environment's scripted heuristic (the `scripted` decider kind) from the
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

/// Builds an environment whose name starts with a registered prefix, from the rest of the
/// name (e.g. `MiniGrid-DoorKey-5x5-v0` for `gymnasium:MiniGrid-DoorKey-5x5-v0`) and the
/// settings.
pub type PrefixConstructor =
    fn(rest: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError>;

/// A family of environments named `<prefix><rest>`, e.g. `gymnasium:<id>`.
#[derive(Clone, Debug)]
pub struct EnvPrefix {
    /// The prefix, colon included, e.g. `gymnasium:`.
    pub prefix: &'static str,
    /// One line for `mosaic envs`.
    pub summary: &'static str,
    /// Constructor.
    pub make: PrefixConstructor,
}

/// The environments an experiment can name.
#[derive(Clone, Debug, Default)]
pub struct EnvRegistry {
    kinds: Vec<EnvKind>,
    prefixes: Vec<EnvPrefix>,
}

impl EnvRegistry {
    /// Adds (or replaces) a prefix family; exact names take precedence over prefixes.
    pub fn register_prefix(&mut self, prefix: EnvPrefix) {
        self.prefixes.retain(|p| p.prefix != prefix.prefix);
        self.prefixes.push(prefix);
    }

    /// All prefix families, in registration order.
    pub fn prefixes(&self) -> &[EnvPrefix] {
        &self.prefixes
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

    /// Whether `name` names a registered kind or falls in a registered prefix family.
    pub fn resolves(&self, name: &str) -> bool {
        self.get(name).is_some() || self.prefix_of(name).is_some()
    }

    fn prefix_of<'a>(&self, name: &'a str) -> Option<(&EnvPrefix, &'a str)> {
        self.prefixes
            .iter()
            .find_map(|p| name.strip_prefix(p.prefix).map(|rest| (p, rest)))
    }

    /// Builds the environment `name` with `settings`: an exact kind, else a prefix family.
    /// A constructor that panics is a start failure (see [`SpecError::guard`]).
    pub fn make(&self, name: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
        SpecError::guard(
            "env",
            || format!("environment `{name}`"),
            || self.build(name, settings),
        )
    }

    fn build(&self, name: &str, settings: &Settings) -> Result<Box<dyn Environment>, SpecError> {
        let built = if let Some(kind) = self.get(name) {
            (kind.make)(settings)
        } else if let Some((prefix, rest)) = self.prefix_of(name) {
            (prefix.make)(rest, settings)
        } else {
            let known: Vec<_> = self
                .kinds
                .iter()
                .map(|k| k.name.to_owned())
                .chain(self.prefixes.iter().map(|p| format!("{}<name>", p.prefix)))
                .collect();
            return Err(SpecError::new(
                "env",
                format!("unknown environment `{name}` (known: {})", known.join(", ")),
            ));
        };
        built.map_err(|e| e.within("env_settings"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refuse(rest: &str, _: &Settings) -> Result<Box<dyn Environment>, SpecError> {
        Err(SpecError::new("", format!("prefix saw `{rest}`")))
    }

    #[test]
    fn prefixes_resolve_after_exact_names() {
        let mut registry = EnvRegistry::default();
        registry.register_prefix(EnvPrefix {
            prefix: "fam:",
            summary: "test family",
            make: refuse,
        });
        assert!(registry.resolves("fam:thing"));
        assert!(!registry.resolves("other:thing"));
        let Err(err) = registry.make("fam:thing/v1", &Settings::new()) else {
            panic!("the test prefix builds nothing")
        };
        assert_eq!(err.path, "env_settings");
        assert!(err.message.contains("`thing/v1`"), "{err}");
        let Err(err) = registry.make("nope", &Settings::new()) else {
            panic!("unknown names are errors")
        };
        assert!(err.message.contains("fam:<name>"), "{err}");
    }
}
