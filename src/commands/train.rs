//! `mosaic train TRAIN.toml`: PPO on a native environment into a run directory;
//! `mosaic train --resume RUN_DIR` continues a killed one from its last checkpoint.

use super::{CliError, print};
use mosaic::run::{default_run_id, versions};
use mosaic_rl::train::{TrainOptions, TrainOutcome, TrainSpec, Trainer};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Trains RL policies.
#[derive(Debug, clap::Args)]
pub(crate) struct TrainArgs {
    /// The training file (TOML, or JSON by extension).
    #[arg(required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Parent directory of the run directory.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Run id (default: the training name and the UTC start time).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Continue the training run in this directory from its last checkpoint.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["file", "run_id"])]
    pub resume: Option<PathBuf>,
    /// Worker threads stepping the environments (overrides the file; results do not
    /// depend on it).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Show a progress bar (default: when standard error is a terminal).
    #[arg(long)]
    pub progress: Option<bool>,
}

/// Trains, then prints where the policies are.
pub(crate) fn run(args: &TrainArgs) -> Result<(), CliError> {
    use std::io::IsTerminal as _;
    let progress = args
        .progress
        .unwrap_or_else(|| std::io::stderr().is_terminal());
    let outcome = match (&args.resume, &args.file) {
        (Some(dir), _) => Trainer::resume(dir, progress)?,
        (None, Some(file)) => {
            let mut spec = TrainSpec::load(file)?;
            if let Some(threads) = args.threads {
                spec.threads = threads.max(1);
            }
            let run_id = args.run_id.clone().unwrap_or_else(|| {
                default_run_id(&spec.name, mosaic_core::record::now_ms() / 1000)
            });
            let options = TrainOptions {
                dir: args.out.join(&run_id),
                run_id,
                versions: versions(),
                progress,
            };
            Trainer::from_spec(spec)?.run(&options)?
        }
        (None, None) => {
            return Err(CliError::Usage(
                "a training file or --resume is needed".into(),
            ));
        }
    };
    print(&summary(&outcome))
}

/// What a finished training run printed.
fn summary(outcome: &TrainOutcome) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "trained {} updates, {} environment steps, {} episodes ({:.0} steps/s) into {}",
        outcome.updates,
        outcome.steps,
        outcome.episodes,
        outcome.steps_per_s,
        outcome.dir.display()
    );
    for ((group, policy), mean) in outcome.policies.iter().zip(&outcome.mean_returns) {
        let _ = writeln!(
            text,
            "  {group}: {} (mean return {mean:.3} in the last checkpoint period)",
            policy.display()
        );
    }
    text
}
