//! Reinforcement learning for mosaic: neural policies that act as agents (the `rl`
//! decider kind) and PPO training on the native worlds (`mosaic train`).
//!
//! - [`net`]: the actor-critic networks (MLP, small CNN over symbolic planes, either with
//!   an optional GRU layer), seeded initialisation, masked action choice;
//! - [`checkpoint`]: safetensors weights plus a JSON [`Manifest`] checked against the
//!   environment;
//! - [`policy`]: batched inference and [`RlPolicy`], one agent's seeded policy;
//! - [`decider`]: the `rl` decider kind, and with feature `onnx` the `onnx` kind;
//! - `onnx` (feature `onnx`): policies exported to ONNX by other libraries, run with
//!   tract behind the same manifest checks, masks and seeded draws;
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
//! Measured on the same machine (`cargo bench -p mosaic-rl --bench rl` and
//! `--bench learning`, while other builds ran beside them):
//!
//! | what | figure | goal |
//! |---|---|---|
//! | decision, MLP 64-64, batch of 4 soccer agents | 2.3–2.4 µs (9.2–9.6 µs per batch) | ≤ 5 µs |
//! | PPO training on soccer-2v2, end to end (16 envs, 2 threads) | 6,900–14,600 env steps/s | ≥ 50,000 |
//! | DoorKey 5×5 after 300k steps (16 envs × 128 steps) | success 1.00 | ≥ 0.9 |
//! | soccer-2v2 IPPO after 5M steps against random | 99.5% wins | ≥ 95% |
//! | the same team against the scripted team | 4% wins | ≥ 50% |
//! | a team trained 5M steps against the scripted team, against it | 2.5% wins | ≥ 50% |
//!
//! That training figure was bound by the update through candle's autograd (87% of a soccer
//! run's time; collection alone runs at about 115,000 steps/s). MLPs now train through a
//! plain-Rust update (`train::mlp_update`), 1.9–4.5× faster than autograd on the same
//! batch in the same run (3–8× since its products go through ndarray and its actor and
//! critic run on two threads, `docs/training.md`); measured under a load average of 17–21 on the 2 cores, training
//! ran at 4,600–8,700 steps/s with collection the larger part. PPO's defaults (four epochs
//! of four minibatches) cost about 1.4 GFLOP per 2,048 steps for this network, so 50,000
//! steps/s would take some 35 GFLOP/s for the update alone besides collection, beyond two
//! shared cores; fewer epochs trade sample efficiency for speed.

mod activation;
pub mod batch;
pub mod checkpoint;
pub mod decider;
pub mod dense;
pub mod error;
pub mod net;
#[cfg(feature = "onnx")]
pub mod onnx;
pub mod policy;
pub mod train;

pub use checkpoint::{Checkpoint, Manifest};
pub use decider::register;
pub use error::{Result, RlError};
pub use net::{ActorCritic, Architecture};
pub use policy::RlPolicy;
