//! Environments for mosaic: native Rust games, external environments served by worker
//! processes ([`external`]), the registry that builds them from experiment files, and the
//! shared renderer.

pub mod board;
pub mod coord;
pub mod external;
pub mod gridworld;
pub mod registry;
pub mod render;
pub mod soccer;

pub use external::ExternalEnv;
pub use registry::{EnvKind, EnvPrefix, EnvRegistry};
