//! Which units a run plans: every operator × episode of its experiment, or a shard's share.

use mosaic_core::ExperimentSpec;
use mosaic_core::record::RunManifest;
use std::ops::Range;

/// The episode-major indices of the units a run plans: all of the experiment's, or a
/// shard's share.
pub(crate) fn planned_range(manifest: &RunManifest) -> Range<u64> {
    let total = unit_total(&manifest.experiment);
    match manifest.shard.as_ref().and_then(|tag| tag.part.shard()) {
        Some(shard) => shard.units(total),
        // A pool worker's units are not known in advance: any of the run's.
        None => 0..total,
    }
}

/// Operators × episodes.
pub(crate) fn unit_total(spec: &ExperimentSpec) -> u64 {
    spec.operators.len() as u64 * u64::from(spec.episodes)
}
