//! `mosaic merge SHARD_DIRS... --out DIR`: one run from the finished shards of a run.

use super::{CliError, print};
use std::path::PathBuf;
use std::time::Instant;

/// Merges shards.
#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// The shards' run directories (`mosaic run --shard K/N` writes `{run_id}.shard-K-of-N`).
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged run directory (must not hold a run).
    #[arg(long)]
    pub out: PathBuf,
}

/// Checks that the shards are every shard of one finished run, writes the merged run, and
/// prints what was merged and how fast.
pub(crate) fn run(args: &MergeArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let merged = mosaic_recorder::merge::merge(&args.shards, &args.out)?;
    let seconds = started.elapsed().as_secs_f64();
    print(&format!(
        "merged {} parts of run {}: {} units, {} step records into {} in {seconds:.2} s ({:.0} step records/s)\n",
        merged.shards,
        merged.run.manifest().run_id,
        merged.units,
        merged.step_records,
        merged.run.path().display(),
        merged.step_records as f64 / seconds.max(1e-9),
    ))
}
