//! mosaic's analysis checked against the Python tools researchers use: the aggregates of
//! `mosaic_recorder::aggregate` against the `rliable` package on the same scores (and the
//! same bootstrap resamples).
//!
//! The Python is the cached venv `analysis` made by `scripts/setup/python-envs.sh`
//! (rliable, pyarrow, polars); setting `MOSAIC_PY_ANALYSIS` to an interpreter skips the
//! script. Without Python the tests fail: they never pass unchecked.

use mosaic_recorder::aggregate::{
    Estimate, Metric, ScoreMatrix, improvement_interval_with, interval_with, score_distribution,
    thresholds,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The analysis venv's interpreter (set up once per test process).
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| match std::env::var("MOSAIC_PY_ANALYSIS") {
        Ok(python) if !python.is_empty() => python,
        _ => {
            let script = repo_root().join("scripts/setup/python-envs.sh");
            let output = Command::new("bash")
                .arg(&script)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
            assert!(
                output.status.success(),
                "{} failed:\n{}",
                script.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .find_map(|line| line.strip_prefix("MOSAIC_PY_ANALYSIS="))
                .map(|python| python.trim().to_owned())
                .expect("the setup script prints MOSAIC_PY_ANALYSIS=<python>")
        }
    })
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `code` with `args` in the analysis venv; its standard output as JSON.
fn run_python(code: &str, args: &[&Path]) -> Value {
    let output = Command::new(python())
        .arg("-c")
        .arg(code)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python()));
    assert!(
        output.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("python printed JSON")
}

/// rliable's point estimates and intervals on the scores in `argv[1]`, and the resampling
/// indices its stratified bootstraps drew (they draw from numpy's global RNG, so
/// re-seeding it and drawing the same way gives the same indices).
const RLIABLE: &str = r#"
import json, sys
import numpy as np
from rliable import library, metrics
data = json.load(open(sys.argv[1]))
x, y = np.array(data["x"]), np.array(data["y"])
taus, gamma, reps = np.array(data["taus"]), data["gamma"], data["reps"]

def aggregates(s):
    return np.array([metrics.aggregate_iqm(s), metrics.aggregate_mean(s),
                     metrics.aggregate_median(s), metrics.aggregate_optimality_gap(s, gamma)])

def indices(*shapes):
    return [[np.random.choice(shape[0], shape, replace=True).ravel().tolist() for shape in shapes]
            for _ in range(reps)]

out = {}
np.random.seed(7)
point, ci = library.get_interval_estimates({"x": x}, aggregates, reps=reps)
out["aggregates"] = {"point": point["x"].tolist(), "low": ci["x"][0].tolist(), "high": ci["x"][1].tolist()}
np.random.seed(7)
out["aggregate_indices"] = indices(x.shape)

np.random.seed(8)
profile, profile_ci = library.create_performance_profile({"x": x}, taus, reps=reps)
out["profile"] = {"point": profile["x"].tolist(), "low": profile_ci["x"][0].tolist(), "high": profile_ci["x"][1].tolist()}
np.random.seed(8)
out["profile_indices"] = indices(x.shape)

np.random.seed(9)
point, ci = library.get_interval_estimates(
    {"xy": [x, y]}, lambda a, b: np.array([metrics.probability_of_improvement(a, b)]), reps=reps)
out["improvement"] = {"point": point["xy"].tolist(), "low": ci["xy"][0].tolist(), "high": ci["xy"][1].tolist()}
np.random.seed(9)
out["improvement_indices"] = indices(x.shape, y.shape)
json.dump(out, sys.stdout)
"#;

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_f64().expect("a number"))
        .collect()
}

fn index_sets(value: &Value) -> Vec<Vec<Vec<usize>>> {
    serde_json::from_value(value.clone()).expect("index lists")
}

/// `ours` equals rliable's `{point, low, high}` to 1e-9.
fn assert_matches(what: &str, ours: &[Estimate], theirs: &Value) {
    let (point, low, high) = (
        numbers(&theirs["point"]),
        numbers(&theirs["low"]),
        numbers(&theirs["high"]),
    );
    assert_eq!(ours.len(), point.len(), "{what}");
    for (i, e) in ours.iter().enumerate() {
        for (name, a, b) in [
            ("point", e.point, point[i]),
            ("low", e.low, low[i]),
            ("high", e.high, high[i]),
        ] {
            assert!(
                (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                "{what}[{i}] {name}: mosaic {a}, rliable {b}"
            );
        }
    }
}

#[test]
fn aggregates_match_rliable_on_the_same_scores_and_resamples() {
    // Scores with ties, a skewed task and an outlier; X has 9 runs, Y 6, on 4 tasks.
    let cell = |run: usize, task: usize, salt: usize| -> f64 {
        let base = ((run * 7 + task * 3 + salt) % 11) as f64 / 10.0;
        match task {
            1 => base * base,
            3 if run == 0 => 5.0,
            _ => base + task as f64 * 0.2,
        }
    };
    let rows = |runs: usize, salt: usize| -> Vec<Vec<f64>> {
        (0..runs)
            .map(|n| (0..4).map(|m| cell(n, m, salt)).collect())
            .collect()
    };
    let (x_rows, y_rows) = (rows(9, 0), rows(6, 5));
    let (x, y) = (
        ScoreMatrix::from_rows(&x_rows).unwrap(),
        ScoreMatrix::from_rows(&y_rows).unwrap(),
    );
    let taus = thresholds(0.0, 1.2, 7);
    let gamma = 1.0;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("scores.json");
    let data =
        serde_json::json!({"x": x_rows, "y": y_rows, "taus": taus, "gamma": gamma, "reps": 300});
    std::fs::write(&input, data.to_string()).unwrap();
    let rliable = run_python(RLIABLE, &[&input]);

    let single = |sets: Vec<Vec<Vec<usize>>>| sets.into_iter().map(|mut s| s.remove(0));
    let metrics = [
        Metric::Iqm,
        Metric::Mean,
        Metric::Median,
        Metric::OptimalityGap { gamma },
    ];
    let ours = interval_with(
        &x,
        |s| metrics.iter().map(|m| m.of(s)).collect(),
        single(index_sets(&rliable["aggregate_indices"])),
    );
    assert_matches("aggregates", &ours, &rliable["aggregates"]);

    let ours = interval_with(
        &x,
        |s| taus.iter().map(|tau| score_distribution(s, *tau)).collect(),
        single(index_sets(&rliable["profile_indices"])),
    );
    assert_matches("profile", &ours, &rliable["profile"]);

    let pairs = index_sets(&rliable["improvement_indices"])
        .into_iter()
        .map(|mut s| (s.remove(0), s.remove(0)));
    let ours = improvement_interval_with(&x, &y, pairs).unwrap();
    assert_matches(
        "probability of improvement",
        &[ours],
        &rliable["improvement"],
    );
}
