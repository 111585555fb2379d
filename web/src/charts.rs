//! What the page's charts draw, as series of `[x, y]` points: the return per episode of
//! each operator configuration (from the recorder's report), and for a training run
//! (`mosaic train`) its curves from `updates.jsonl`: mean return, losses, learning rate
//! and throughput per update, against environment steps.

use mosaic_recorder::report::Report;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The file a training run writes one line per update to.
const UPDATES_FILE: &str = "updates.jsonl";

/// One line of a chart.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Series {
    label: String,
    points: Vec<(f64, f64)>,
}

/// One chart of a training run.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Chart {
    id: &'static str,
    title: &'static str,
    y_label: &'static str,
    series: Vec<Series>,
}

/// A training run's updates file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrainingError {
    /// Reading the file failed.
    #[error("{UPDATES_FILE}: {0}")]
    Read(#[from] std::io::Error),
    /// A line is not an update.
    #[error("{UPDATES_FILE} line {line}: {message}")]
    Line {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// The return per episode of each operator configuration (episodes the report averages).
pub(crate) fn returns(report: &Report) -> Vec<Series> {
    report
        .operators
        .iter()
        .map(|op| Series {
            label: op.operator_id.clone(),
            points: op
                .returns
                .iter()
                .map(|&(episode, value)| (f64::from(episode), value))
                .collect(),
        })
        .collect()
}

/// Per-group loss figures of an update line, with their chart ids and titles.
const LOSSES: [(&str, &str, &str); 4] = [
    ("policy", "loss_policy", "Policy loss"),
    ("value", "loss_value", "Value loss"),
    ("entropy", "entropy", "Policy entropy"),
    ("approx_kl", "approx_kl", "Approximate KL divergence"),
];

/// The training curves of the run in `dir`, or `None` when it is not a training run (it has
/// no `updates.jsonl`). A last line cut short (a run being written) is left out; any other
/// line that is not an update is an error naming it.
pub(crate) fn training(dir: &Path) -> Result<Option<Vec<Chart>>, TrainingError> {
    let text = match std::fs::read_to_string(dir.join(UPDATES_FILE)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    curves(&text).map(Some)
}

/// The charts of the lines of an updates file.
fn curves(text: &str) -> Result<Vec<Chart>, TrainingError> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let torn = !text.ends_with('\n');
    let mut updates = Vec::with_capacity(lines.len());
    for (index, line) in lines.iter().enumerate() {
        let bad = |message: String| TrainingError::Line {
            line: index + 1,
            message,
        };
        match serde_json::from_str::<Value>(line) {
            Ok(update) if update.get("step").and_then(Value::as_f64).is_some() => {
                updates.push(update)
            }
            Ok(_) => return Err(bad("no `step`: not an update line".into())),
            Err(_) if torn && index + 1 == lines.len() => {}
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    let groups = group_names(&updates);
    let per_group = |value: &dyn Fn(&Value, usize) -> Option<f64>| -> Vec<Series> {
        groups
            .iter()
            .enumerate()
            .map(|(g, name)| Series {
                label: name.clone(),
                points: updates
                    .iter()
                    .filter_map(|u| Some((u["step"].as_f64()?, value(u, g)?)))
                    .collect(),
            })
            .collect()
    };
    let whole = |label: &str, key: &str| {
        vec![Series {
            label: label.to_owned(),
            points: updates
                .iter()
                .filter_map(|u| Some((u["step"].as_f64()?, u[key].as_f64()?)))
                .collect(),
        }]
    };
    let mut charts = vec![Chart {
        id: "mean_return",
        title: "Mean return of the episodes ended in each update",
        y_label: "return",
        series: per_group(&|u, g| u["mean_return"][g].as_f64()),
    }];
    for (key, id, title) in LOSSES {
        charts.push(Chart {
            id,
            title,
            y_label: title,
            series: per_group(&|u, g| u["losses"][g][key].as_f64()),
        });
    }
    charts.push(Chart {
        id: "learning_rate",
        title: "Learning rate",
        y_label: "learning rate",
        series: whole("learning rate", "learning_rate"),
    });
    charts.push(Chart {
        id: "steps_per_s",
        title: "Environment steps per second",
        y_label: "steps/s",
        series: whole("steps/s", "steps_per_s"),
    });
    Ok(charts)
}

/// The learning groups' names as the lines give them (`group N` for lines written before
/// they named them).
fn group_names(updates: &[Value]) -> Vec<String> {
    let named = updates
        .iter()
        .find_map(|u| u["groups"].as_array().filter(|g| !g.is_empty()));
    match named {
        Some(names) => names
            .iter()
            .map(|n| n.as_str().unwrap_or("?").to_owned())
            .collect(),
        None => {
            let count = updates
                .iter()
                .filter_map(|u| u["mean_return"].as_array().map(Vec::len))
                .max()
                .unwrap_or(0);
            (1..=count).map(|i| format!("group {i}")).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"update":1,"step":64,"learning_rate":0.001,"groups":["green"],"mean_return":[0.5],"losses":[{"policy":0.1,"value":0.2,"entropy":1.3,"approx_kl":0.01,"transitions":64}],"steps_per_s":900.0,"collect_ms":3,"update_ms":4}"#;

    #[test]
    fn updates_become_curves_against_steps() {
        let second = LINE
            .replace(r#""step":64"#, r#""step":128"#)
            .replace("[0.5]", "[null]");
        let charts = curves(&format!("{LINE}\n{second}\n")).unwrap();
        let by_id = |id: &str| charts.iter().find(|c| c.id == id).unwrap();
        let returns = &by_id("mean_return").series;
        assert_eq!(returns[0].label, "green");
        assert_eq!(
            returns[0].points,
            [(64.0, 0.5)],
            "no episode ended: no point"
        );
        assert_eq!(by_id("entropy").series[0].points.len(), 2);
        assert_eq!(by_id("steps_per_s").series[0].points[1], (128.0, 900.0));
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_a_bad_line_named() {
        let charts = curves(&format!("{LINE}\n{{\"update\":2,\"st")).unwrap();
        assert_eq!(charts[0].series[0].points.len(), 1);
        let error = curves(&format!("{LINE}\nnot json\n{LINE}\n")).unwrap_err();
        assert!(
            error.to_string().starts_with("updates.jsonl line 2:"),
            "{error}"
        );
        let old = LINE.replace(r#""groups":["green"],"#, "");
        assert_eq!(curves(&old).unwrap()[0].series[0].label, "group 1");
    }
}
