//! `mosaic compare RUN_A RUN_B`: same trajectories? Exit code 0 if so, 1 if not.

use super::{CliError, print};
use mosaic_recorder::RunDir;
use mosaic_recorder::compare::compare;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Compares the complete episodes of two runs, ignoring times, durations and run ids.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The first run directory.
    pub run_a: PathBuf,
    /// The second run directory.
    pub run_b: PathBuf,
}

/// Prints whether the runs hold the same trajectories, or where they first differ.
pub fn run(args: &CompareArgs) -> Result<(), CliError> {
    let (a, b) = (RunDir::open(&args.run_a)?, RunDir::open(&args.run_b)?);
    if a.path().canonicalize().ok() == b.path().canonicalize().ok() {
        return Err(CliError::Usage("both arguments name the same run".into()));
    }
    let (store_a, store_b) = (a.store()?, b.store()?);
    let result = compare(&store_a, &store_b)?;
    let mut out = String::new();
    if !result.same_experiment {
        out.push_str("note: the experiments differ\n");
    }
    match &result.divergence {
        None => {
            let _ = writeln!(
                out,
                "same trajectories: {} episodes, {} step records",
                result.equal_units, result.equal_step_records
            );
            print(&out)
        }
        Some(d) => {
            let _ = writeln!(
                out,
                "runs differ after {} equal episodes, {} equal step records\nfirst difference: {} {}",
                result.equal_units, result.equal_step_records, d.unit, d.location
            );
            for (path, x, y) in &d.fields {
                let _ = writeln!(out, "  {path}: A = {x}, B = {y}");
            }
            print(&out)?;
            Err(CliError::RunsDiffer)
        }
    }
}
