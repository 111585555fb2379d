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
    /// Every environment of this crate: the native ones and the external ones (`worker`,
    /// `gymnasium:<id>`, `pettingzoo:<module path>`).
    pub fn native() -> Self {
        let mut registry = Self::in_process();
        crate::external::register(&mut registry);
        registry
    }

    /// The native environments only: they run inside this process and start no other
    /// program, whatever their settings, so they can be built from settings nobody vetted
    /// (e.g. to replay a run recorded elsewhere).
    pub fn in_process() -> Self {
        let mut registry = Self::default();
        for kind in native_kinds() {
            registry.register(kind);
        }
        registry
    }

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
        built.map_err(|e| {
            let path = if e.path.is_empty() {
                "env_settings".to_owned()
            } else {
                format!("env_settings.{}", e.path)
            };
            e.at(path)
        })
    }
}

fn native_kinds() -> Vec<EnvKind> {
    vec![
        crate::soccer::KIND,
        crate::coord::kind(),
        EnvKind {
            name: "gridworld",
            summary: "MiniGrid DoorKey or GoToObject, single agent, egocentric 7x7 view and mission",
            settings: &[
                "task = \"doorkey\": \"doorkey\" (key, locked door, goal) or \"goto\" (go to the named object, then `done`)",
                "size = 5 (doorkey) / 6 (goto): side of the grid including walls, 5..=16",
                "max_steps = 10*size^2 (doorkey) / 5*size^2 (goto): steps before truncation",
                "objects = 2: objects in the room, goto only, 1..=8",
            ],
            make: crate::gridworld::make_gridworld,
            scripted: Some(crate::gridworld::scripted_gridworld),
        },
        EnvKind {
            name: "connect-four",
            summary: "Connect Four, 7x6, two players taking turns (PettingZoo connect_four_v3)",
            settings: &[],
            make: crate::board::make_connect_four,
            scripted: Some(crate::board::scripted_connect_four),
        },
        EnvKind {
            name: "tic-tac-toe",
            summary: "tic-tac-toe, 3x3, two players taking turns (PettingZoo tictactoe_v3)",
            settings: &[],
            make: crate::board::make_tic_tac_toe,
            scripted: Some(crate::board::scripted_tic_tac_toe),
        },
    ]
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

    #[test]
    fn native_registry_names_the_external_envs() {
        let registry = EnvRegistry::native();
        assert!(registry.resolves("worker"));
        assert!(registry.resolves("gymnasium:MiniGrid-DoorKey-5x5-v0"));
        assert!(registry.resolves("pettingzoo:classic/chess_v6"));
        let Err(err) = registry.make("worker", &Settings::new()) else {
            panic!("a worker needs a command")
        };
        assert!(err.message.contains("command"), "{err}");
    }
}
