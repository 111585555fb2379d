//! Manual mode (`mosaic serve`): where its episodes are recorded.

use crate::run::{default_run_id, versions};
use mosaic_core::ExperimentSpec;
use mosaic_core::record::now_ms;
use mosaic_web::RecordConfig;
use std::path::Path;

/// Records the manual episodes of `experiment` into a new run `run_id` under `runs` (by
/// default `{experiment name}_manual-{UTC start time}`).
///
/// ```
/// let spec: mosaic::core::ExperimentSpec = serde_json::from_value(serde_json::json!({
///     "name": "duel", "episodes": 1,
///     "operators": [{"id": "a", "env": "tic-tac-toe", "agents": {"*": {"kind": "human"}}}]
/// })).unwrap();
/// let config = mosaic::manual::record_config(&spec, "runs".as_ref(), None);
/// assert!(config.run_id.starts_with("duel_manual-"));
/// assert_eq!(config.dir, std::path::Path::new("runs").join(&config.run_id));
/// ```
pub fn record_config(
    experiment: &ExperimentSpec,
    runs: &Path,
    run_id: Option<String>,
) -> RecordConfig {
    let run_id = run_id
        .unwrap_or_else(|| default_run_id(&format!("{} manual", experiment.name), now_ms() / 1000));
    let mut versions = versions();
    versions.insert(crate::run::MODE_KEY.into(), crate::run::MANUAL_MODE.into());
    RecordConfig {
        dir: runs.join(&run_id),
        run_id,
        versions,
    }
}
