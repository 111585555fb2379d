//! Reinforcement learning for mosaic: neural policies that act as agents (the `rl`
//! operator kind) and PPO training on the native worlds (`mosaic train`).
//!
//! - [`net`]: the actor-critic networks (MLP, small CNN over symbolic planes), seeded
//!   initialisation, masked action choice;
//! - [`checkpoint`]: safetensors weights plus a JSON [`Manifest`] checked against the
//!   environment;
//! - [`policy`]: batched inference and [`RlPolicy`], one agent's seeded policy;
//! - [`operator`]: the `rl` operator kind;
//! - [`train`]: PPO (IPPO or MAPPO, parameter sharing per team) over vectorised native
//!   environments on worker threads, writing a run directory with checkpoints.
//!
//! # Tensor library
//!
//! candle (`candle-core`/`candle-nn` 0.11, default features off, CPU only) was chosen
//! over burn (0.22, ndarray backend) by measurement on a 2-core machine shared with other
//! builds: release builds of a scratch program in a clean target directory, and the forward
//! pass of a 64-64 tanh MLP with 8 actions on a batch of 4 × 64-dimensional observations,
//! read back to the host.
//!
//! | | clean build (wall / CPU) | forward, batch of 4 | per decision |
//! |---|---|---|---|
//! | candle | 554 s / 219 s | 16.4 µs (one gemm thread; 114 µs with the default two) | 4.1 µs |
//! | burn | 2,220 s / 543 s | 18.6 µs (21.0 µs multi-threaded) | 4.6 µs |
//!
//! Inference of similar speed, for two and a half times less build: candle. Both pay a
//! dispatch cost per tensor operation that dominates networks this small, so MLPs act
//! through a plain-Rust copy of their layers ([`dense`]); candle defines the networks,
//! computes gradients, and stores the weights (safetensors).
//!
//! Measured on the same machine, under the load of other builds (`cargo bench -p
//! mosaic-rl --bench rl` and `--bench learning`):
//!
//! | what | figure | goal |
//! |---|---|---|
//! | decision, MLP 64-64, batch of 4 soccer agents | 2.3 µs (9.6 µs per batch) | ≤ 5 µs |
//! | PPO training on soccer-2v2, end to end (16 envs, 2 threads) | 6,900 env steps/s | ≥ 50,000 |
//! | DoorKey 5×5 after 300k steps (16 envs × 128 steps) | success 1.00 | ≥ 0.9 |
//!
//! Training throughput is bound by the update: four epochs of forward and backward passes
//! through candle over every transition cost several times the collection.
pub mod checkpoint;
pub mod dense;
pub mod error;
pub mod net;
pub mod operator;
pub mod policy;
pub mod train;

pub use checkpoint::{Checkpoint, Manifest};
pub use error::{Result, RlError};
pub use net::{ActorCritic, Architecture};
pub use operator::register;
pub use policy::RlPolicy;
