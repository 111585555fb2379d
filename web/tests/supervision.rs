//! Manual sessions (`mosaic serve`) follow the experiment's `[supervision]` section, as
//! script runs do.

mod common;

use mosaic_actors::{DeciderKind, DeciderRegistry};
use mosaic_core::{ExperimentSpec, SpecError};
use mosaic_web::ServeConfig;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Starts of the operator that never starts.
static ATTEMPTS: AtomicU32 = AtomicU32::new(0);

fn never_starting() -> DeciderRegistry {
    let mut kinds = DeciderRegistry::baselines();
    kinds.register(DeciderKind {
        name: "never-starts",
        summary: "fails to start, every time",
        settings: &[],
        spawn: Arc::new(|_| {
            ATTEMPTS.fetch_add(1, Ordering::SeqCst);
            Err(SpecError::start_failure("", "injected start failure"))
        }),
    });
    kinds
}

#[test]
fn a_manual_session_tries_a_failing_child_as_often_as_the_experiment_says() {
    let experiment: ExperimentSpec = serde_json::from_value(serde_json::json!({
        "name": "limits",
        "episodes": 1,
        "supervision": {"max_restarts": 1},
        "operators": [{"id": "op", "env": "walk", "agents": {"*": {"kind": "never-starts"}}}]
    }))
    .unwrap();
    let mut config = ServeConfig::new(common::registry(), never_starting());
    config.experiment = Some(experiment);
    config.bind = "127.0.0.1:0".parse().unwrap();
    let Err(error) = common::serve_in_background(config) else {
        panic!("an operator that never starts cannot be served");
    };
    // One start, then `max_restarts` more (the default limit would allow three).
    assert_eq!(ATTEMPTS.load(Ordering::SeqCst), 2, "{error}");
    assert!(
        error.to_string().contains("gave up after 2 attempts"),
        "{error}"
    );
}
