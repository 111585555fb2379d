//! Environments for mosaic: native Rust games, the registry that builds them from
//! experiment files, and the shared renderer.

pub mod coord;
pub mod registry;
pub mod render;

pub use registry::{EnvKind, EnvRegistry};
