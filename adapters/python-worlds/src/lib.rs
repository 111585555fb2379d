//! mosaic's native worlds for Python trainers (CleanRL, Stable-Baselines3, RLlib, XuanCe):
//! the Python package `mosaic-worlds` in this directory, built with maturin, wraps every
//! world of [`mosaic_adapters::in_process_envs`] (soccer 1v0/1v1/2v2/3v3, gridworld with
//! DoorKey, the coordination world, skirmish, the board games) as a Gymnasium `Env` (one
//! agent) and a PettingZoo `ParallelEnv` (any number), seeded exactly as `mosaic run`
//! seeds its episodes, so that a policy trained there and exported to ONNX plays the same
//! episodes back in mosaic (`kind = "onnx"`). `pip install ./adapters/python-worlds`
//! builds and installs it; docs/training.md shows the round trip.
//!
//! The Rust side is [`World`]: a world built by name from its settings, reset with an
//! episode seed and stepped with one action entry per agent. The Python module
//! `mosaic_worlds._native` (feature `python`, PyO3) exposes it; without that feature the
//! crate builds, tests and documents like any other crate of the workspace, with no
//! Python headers and no libpython (maturin turns on `extension-module`, see
//! pyproject.toml).
//!
//! Unsafe code: forbidden, as in the whole workspace; PyO3's macros (0.30) expand to code
//! that passes `unsafe_code = "forbid"`, so the crate needs none of the exception the
//! bindings were allowed.
//!
//! ```
//! use mosaic_python::World;
//! use mosaic_core::ObsRequest;
//!
//! let mut world = World::from_json("soccer-1v0", r#"{"observation": "reference"}"#).unwrap();
//! world.reset(100).unwrap();
//! let obs = world.observe(0, ObsRequest::SYMBOLIC).unwrap();
//! assert_eq!(obs.symbolic.unwrap().data.len(), 3 * 3 * 3 + 1);
//! let out = world.step(&[Some(2)]).unwrap();
//! assert_eq!(out.rewards.len(), 1);
//! ```

#![warn(missing_docs)]

#[cfg(feature = "python")]
mod python;
mod world;

pub use world::{World, WorldError, world_names};
