//! What the training tests share: a registry of one test environment, run options and
//! scoring a policy on the environment.

use mosaic_core::registry::EnvConstructor;
use mosaic_core::{AgentContext, EnvKind, EnvRegistry, ObsRequest, Policy, Settings, Transition};
use mosaic_rl::train::TrainOptions;
use std::path::Path;

/// A registry holding only the test environment `name`, made by `make`.
pub(crate) fn registry(
    name: &'static str,
    summary: &'static str,
    make: EnvConstructor,
) -> EnvRegistry {
    let mut envs = EnvRegistry::default();
    envs.register(EnvKind {
        name,
        summary,
        settings: &[],
        make,
        scripted: None,
    });
    envs
}

/// Options of a quiet training run `run_id` into `dir`.
pub(crate) fn options(dir: &Path, run_id: &str) -> TrainOptions {
    TrainOptions {
        dir: dir.to_owned(),
        run_id: run_id.into(),
        versions: Default::default(),
        progress: false,
    }
}

/// Mean of `score` (read from an episode's last transition) over `episodes` episodes of a
/// single-agent environment made by `make`, seeds 0, 1, …, played by `policy`.
pub(crate) fn mean_score(
    policy: &mut dyn Policy,
    make: EnvConstructor,
    episodes: u64,
    score: impl Fn(&Transition) -> f64,
) -> f64 {
    let mut total = 0.0;
    for seed in 0..episodes {
        let mut env = make(&Settings::new()).unwrap();
        env.reset(seed).unwrap();
        let spec = env.spec();
        policy.reset(&AgentContext::new(
            seed,
            0,
            spec.agents[0].id.clone(),
            spec.action_labels.len(),
        ));
        let mut out = Transition::new(1);
        while !env.acting().is_empty() {
            let action = policy.decide(&env.observe(0, ObsRequest::SYMBOLIC)).action;
            env.step(&[Some(action)], &mut out).unwrap();
        }
        total += score(&out);
    }
    total / episodes as f64
}
