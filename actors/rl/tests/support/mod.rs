//! What the training tests share: run options and scoring a policy on a test environment.

use mosaic_core::experiment::SpecError;
use mosaic_core::{AgentContext, Environment, ObsRequest, Policy, Settings, Transition};
use mosaic_rl::train::TrainOptions;
use std::path::Path;

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
    make: fn(&Settings) -> Result<Box<dyn Environment>, SpecError>,
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
