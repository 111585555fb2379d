//! Environments for mosaic: the native worlds (each its own crate, re-exported here under
//! its module name: [`soccer`], [`gridworld`], [`board`], [`coord`], [`skirmish`]),
//! external environments served by worker processes ([`external`]), and the registries
//! that list them ([`native_envs`], [`in_process_envs`]).
//!
//! ```
//! let envs = mosaic_adapters::native_envs();
//! assert!(envs.resolves("soccer-2v2"));
//! assert!(envs.resolves("gymnasium:MiniGrid-DoorKey-5x5-v0"));
//! assert!(!mosaic_adapters::in_process_envs().resolves("worker"));
//! ```

/// External workers (the `mosaic-external` crate): `worker`, `gymnasium:<id>` and
/// `pettingzoo:<module path>` environments.
pub use mosaic_external as external;

pub use mosaic_board as board;
pub use mosaic_coord as coord;
pub use mosaic_gridworld as gridworld;
pub use mosaic_skirmish as skirmish;
pub use mosaic_soccer as soccer;

pub use external::ExternalEnv;

use mosaic_core::EnvRegistry;

/// Every built-in environment: the native ones and the external ones (`worker`,
/// `gymnasium:<id>`, `pettingzoo:<module path>`).
pub fn native_envs() -> EnvRegistry {
    let mut registry = in_process_envs();
    registry.register(external::KIND);
    for prefix in external::PREFIXES {
        registry.register_prefix(prefix);
    }
    registry
}

/// The native environments only: they run inside this process and start no other program,
/// whatever their settings, so they can be built from settings nobody vetted (e.g. to
/// replay a run recorded elsewhere).
pub fn in_process_envs() -> EnvRegistry {
    let mut registry = EnvRegistry::default();
    // One line per world, in the order `mosaic envs` lists them.
    soccer::KINDS
        .into_iter()
        .for_each(|kind| registry.register(kind));
    registry.register(coord::kind());
    registry.register(gridworld::KIND);
    registry.register(skirmish::KIND);
    board::KINDS
        .into_iter()
        .for_each(|kind| registry.register(kind));
    registry
}

#[cfg(test)]
mod tests {
    use mosaic_core::Settings;

    #[test]
    fn in_process_registry_lists_every_native_world() {
        let names: Vec<_> = super::in_process_envs()
            .kinds()
            .iter()
            .map(|kind| kind.name)
            .collect();
        assert_eq!(
            names,
            [
                "soccer-1v0",
                "soccer-1v1",
                "soccer-2v2",
                "soccer-3v3",
                "soccer-0v1",
                "coord-world",
                "gridworld",
                "skirmish",
                "connect-four",
                "tic-tac-toe"
            ]
        );
        assert!(super::in_process_envs().prefixes().is_empty());
    }

    #[test]
    fn native_registry_names_the_external_envs() {
        let registry = super::native_envs();
        assert!(registry.resolves("worker"));
        assert!(registry.resolves("gymnasium:MiniGrid-DoorKey-5x5-v0"));
        assert!(registry.resolves("pettingzoo:classic/chess_v6"));
        let Err(err) = registry.make("worker", &Settings::new()) else {
            panic!("a worker needs a command")
        };
        assert!(err.message.contains("command"), "{err}");
    }
}
