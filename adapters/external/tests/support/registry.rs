//! The external environments alone, as `mosaic-adapters` registers them among the others.

use mosaic_core::EnvRegistry;

/// `worker`, `gymnasium:<id>` and `pettingzoo:<module path>`.
pub(crate) fn external_envs() -> EnvRegistry {
    let mut registry = EnvRegistry::default();
    registry.register(mosaic_external::KIND);
    for prefix in mosaic_external::PREFIXES {
        registry.register_prefix(prefix);
    }
    registry
}
