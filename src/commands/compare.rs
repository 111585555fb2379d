//! `mosaic compare`: two runs (same trajectories? then how do they differ, seed by seed),
//! or two operators of one run or of two runs, paired by seed.
//!
//! With two runs and no `--operators`: exit code 0 if the runs hold the same trajectories,
//! 1 if not (after the paired statistics of the operators both runs have).

use super::{CliError, print};
use mosaic_recorder::RunDir;
use mosaic_recorder::compare::{Comparison, compare};
use mosaic_recorder::paired::{
    ConfigComparison, ConfigSamples, compare_configs, samples_by_operator,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Output format of a comparison.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum CompareFormat {
    /// Text and Markdown tables.
    Md,
    /// JSON.
    Json,
}

/// Compares two runs (trajectories, then paired statistics per operator), or two
/// operators (of one run, or of two runs) seed by seed.
#[derive(Debug, clap::Args)]
pub(crate) struct CompareArgs {
    /// The first run directory (A).
    pub run_a: PathBuf,
    /// The second run directory (B); without it, `--operators` names two operators of the
    /// first run.
    pub run_b: Option<PathBuf>,
    /// Compare operator A (of the first run) with operator B (of the second run, or of
    /// the first when there is one run), seed by seed.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub operators: Option<Vec<String>>,
    /// Also say how many seeds a return difference of this size needs.
    #[arg(long)]
    pub effect: Option<f64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: CompareFormat,
}

/// Everything a comparison found, for `--format json`.
#[derive(Serialize)]
struct CompareOutput {
    /// Same trajectories? (two runs without `--operators`).
    #[serde(skip_serializing_if = "Option::is_none")]
    trajectories: Option<Comparison>,
    /// Paired statistics.
    paired: Vec<ConfigComparison>,
    /// Operators of one run that the other lacks (not compared).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unmatched_operators: Vec<String>,
}

/// Prints the comparison.
pub(crate) fn run(args: &CompareArgs) -> Result<(), CliError> {
    let a = RunDir::open(&args.run_a)?;
    let b = args.run_b.as_deref().map(RunDir::open).transpose()?;
    let records_a = a.records()?;
    let records_b = b.as_ref().map(RunDir::records).transpose()?;
    let samples_a = samples_by_operator(&records_a.episodes()?);
    let samples_b = match &records_b {
        Some(records) => samples_by_operator(&records.episodes()?),
        None => samples_a.clone(),
    };
    let label = |run: &RunDir, operator: &str| match &b {
        Some(_) => format!("{}:{operator}", run.manifest().run_id),
        None => operator.to_owned(),
    };
    let mut output = CompareOutput {
        trajectories: None,
        paired: Vec::new(),
        unmatched_operators: Vec::new(),
    };
    match (&args.operators, &b) {
        (Some(ops), _) => {
            let (op_a, op_b) = (&ops[0], &ops[1]);
            let find = |samples: &BTreeMap<String, ConfigSamples>, op: &str, run: &RunDir| {
                samples.get(op).cloned().ok_or_else(|| {
                    CliError::Usage(format!(
                        "run {} has no complete episodes of operator `{op}` (operators: {})",
                        run.path().display(),
                        operator_list(run)
                    ))
                })
            };
            let run_b = b.as_ref().unwrap_or(&a);
            let (x, y) = (find(&samples_a, op_a, &a)?, find(&samples_b, op_b, run_b)?);
            output.paired.push(compare_configs(
                (&label(&a, op_a), &x),
                (&label(run_b, op_b), &y),
                args.effect,
            ));
        }
        (None, None) => {
            return Err(CliError::Usage(
                "give a second run, or --operators A B to compare two operators of the run".into(),
            ));
        }
        (None, Some(b)) => {
            if a.path().canonicalize().ok() == b.path().canonicalize().ok() {
                return Err(CliError::Usage("both arguments name the same run".into()));
            }
            let records_b = records_b.as_ref().unwrap_or(&records_a);
            let trajectories = compare((&a, &records_a), (b, records_b))?;
            if trajectories.divergence.is_some() {
                (output.paired, output.unmatched_operators) = pair_operators(
                    &samples_a,
                    &samples_b,
                    |op| (label(&a, op), label(b, op)),
                    args.effect,
                );
            }
            output.trajectories = Some(trajectories);
        }
    }
    match args.format {
        CompareFormat::Json => {
            print(&(serde_json::to_string_pretty(&output).unwrap_or_default() + "\n"))?
        }
        CompareFormat::Md => print(&markdown(&output))?,
    }
    match &output.trajectories {
        Some(t) if t.divergence.is_some() => Err(CliError::RunsDiffer),
        _ => Ok(()),
    }
}

/// The paired comparisons of the operators both runs have (or of their only operators,
/// when each has one and the ids differ), and the operators left out.
fn pair_operators(
    a: &BTreeMap<String, ConfigSamples>,
    b: &BTreeMap<String, ConfigSamples>,
    labels: impl Fn(&str) -> (String, String),
    effect: Option<f64>,
) -> (Vec<ConfigComparison>, Vec<String>) {
    let common: Vec<&String> = a.keys().filter(|op| b.contains_key(*op)).collect();
    if common.is_empty()
        && let ([(op_a, x)], [(op_b, y)]) = (
            a.iter().collect::<Vec<_>>().as_slice(),
            b.iter().collect::<Vec<_>>().as_slice(),
        )
    {
        let (label_a, label_b) = (labels(op_a).0, labels(op_b).1);
        return (
            vec![compare_configs((&label_a, x), (&label_b, y), effect)],
            Vec::new(),
        );
    }
    let unmatched = a
        .keys()
        .filter(|op| !b.contains_key(*op))
        .chain(b.keys().filter(|op| !a.contains_key(*op)))
        .cloned()
        .collect();
    let paired = common
        .into_iter()
        .map(|op| {
            let (label_a, label_b) = labels(op);
            compare_configs((&label_a, &a[op]), (&label_b, &b[op]), effect)
        })
        .collect();
    (paired, unmatched)
}

fn operator_list(run: &RunDir) -> String {
    let ids: Vec<&str> = run
        .manifest()
        .experiment
        .operators
        .iter()
        .map(|op| op.id.as_str())
        .collect();
    ids.join(", ")
}

fn markdown(output: &CompareOutput) -> String {
    let mut out = String::new();
    if let Some(result) = &output.trajectories {
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
            }
        }
        if !output.paired.is_empty() {
            out.push('\n');
        }
    }
    for comparison in &output.paired {
        out.push_str(&comparison.markdown());
    }
    if !output.unmatched_operators.is_empty() {
        let _ = writeln!(
            out,
            "not compared (in one run only): {}",
            output.unmatched_operators.join(", ")
        );
    }
    mosaic_recorder::report::escape_controls(&out)
}
