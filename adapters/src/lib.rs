//! Environments for mosaic: native Rust games, external environments served by worker
//! processes ([`external`]), and the registries that list them ([`native_envs`],
//! [`in_process_envs`]).
//!
//! ```
//! let envs = mosaic_adapters::native_envs();
//! assert!(envs.resolves("soccer-2v2"));
//! assert!(envs.resolves("gymnasium:MiniGrid-DoorKey-5x5-v0"));
//! assert!(!mosaic_adapters::in_process_envs().resolves("worker"));
//! ```

pub mod board;
pub mod coord;
/// External workers (the `mosaic-external` crate): `worker`, `gymnasium:<id>` and
/// `pettingzoo:<module path>` environments.
pub use mosaic_external as external;
pub mod gridworld;
pub mod soccer;

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
    for kind in [soccer::KIND, coord::kind(), gridworld::KIND]
        .into_iter()
        .chain(board::KINDS)
    {
        registry.register(kind);
    }
    registry
}

#[cfg(test)]
mod tests {
    use mosaic_core::Settings;

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
