//! The soccer workload the session benchmarks share: 4 random agents, episodes of at most
//! 200 steps, seeds from 1000, run through sessions and actors with no subscriber.

use mosaic::prelude::*;
use std::time::{Duration, Instant};

/// Step limit of every benchmark episode.
pub(crate) const MAX_STEPS: u32 = 200;

/// The workload: `episodes` episodes under `supervision`.
pub(crate) fn experiment(
    episodes: u32,
    supervision: mosaic_core::experiment::SupervisionSpec,
) -> Experiment {
    Experiment::builder("overhead")
        .episodes(episodes)
        .seeds(SeedPlan::Procedural { base: 1000 })
        .max_steps(MAX_STEPS)
        .supervision(supervision)
        .operator(Operator::new("pitch", "soccer-2v2").everyone("random"))
        .build()
        .expect("valid experiment")
}

/// Plays `episodes` episodes through the runner under `supervision`; answers the wall time
/// and the number of decisions made.
pub(crate) fn unrecorded(
    episodes: u32,
    supervision: mosaic_core::experiment::SupervisionSpec,
) -> (Duration, u64) {
    let experiment = experiment(episodes, supervision);
    let runner = mosaic::actors::runner::Runner::new(
        experiment.spec().clone(),
        "bench".into(),
        std::sync::Arc::new(experiment.envs().clone()),
        std::sync::Arc::new(experiment.kinds().clone()),
    );
    actix::System::new().block_on(async move {
        let started = Instant::now();
        let tally = runner
            .run(Default::default(), Default::default(), |_| {})
            .await
            .expect("run");
        (started.elapsed(), tally.decisions)
    })
}
