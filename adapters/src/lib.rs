//! Environments for mosaic: native Rust games, the registry that builds them from
//! experiment files, and the shared renderer.

pub mod registry;
pub mod render;
pub mod soccer;

pub use registry::{EnvKind, EnvRegistry};
