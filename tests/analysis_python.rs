//! mosaic's analysis checked against the Python tools researchers use: the aggregates of
//! `mosaic_recorder::aggregate` against the `rliable` package on the same scores (and the
//! same bootstrap resamples); the turnover similarity of the lexical statistics against
//! Python's `difflib`.
//!
//! The Python is the cached venv `analysis` made by `scripts/setup/python-envs.sh`
//! (rliable, pyarrow, polars); setting `MOSAIC_PY_ANALYSIS` to an interpreter skips the
//! script. Without Python the tests fail: they never pass unchecked.

use mosaic_recorder::aggregate::{
    Estimate, Metric, ScoreMatrix, improvement_interval_with, interval_with, score_distribution,
    thresholds,
};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The analysis venv's interpreter (see `scripts/setup/python-envs.sh`).
fn python() -> String {
    mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_ANALYSIS")
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

/// What pyarrow and polars read from the Parquet export in `argv[1]`.
#[cfg(feature = "parquet")]
const READ_PARQUET: &str = r#"
import json, sys
import pyarrow.compute as pc
import pyarrow.parquet as pq
import polars as pl
d = sys.argv[1]
steps = pq.read_table(f"{d}/steps.parquet")
meta = pq.ParquetFile(f"{d}/steps.parquet").metadata
episodes = pl.read_parquet(f"{d}/episodes.parquet")
llm = pl.read_parquet(f"{d}/llm_usage.parquet")
json.dump({
    "steps": steps.num_rows,
    "step_types": {f.name: str(f.type) for f in steps.schema},
    "reward_sum": pc.sum(steps["reward"]).as_py(),
    "compression": meta.row_group(0).column(0).compression,
    "episodes": episodes.height,
    "episode_types": {name: str(t) for name, t in episodes.schema.items()},
    "first_rewards": episodes["total_reward"][0].to_list(),
    "first_outcomes": episodes["outcome"][0].to_list(),
    "llm": llm.height,
    "prompt_tokens": int(llm["prompt_tokens"].sum()),
    "parse_failures": int((~llm["parse_ok"]).sum()),
}, sys.stdout)
"#;

#[cfg(feature = "parquet")]
#[test]
fn parquet_export_reads_back_in_pyarrow_and_polars() {
    use mosaic_recorder::synthetic;
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("pq", &["a", "b"], 5, 9);
    drop(synthetic::write_run(&dir.path().join("pq"), &manifest, 20, 4).unwrap());
    let out = dir.path().join("tables");
    let export = Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args([
            "export",
            dir.path().join("pq").to_str().unwrap(),
            "--format",
            "parquet",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let read = run_python(READ_PARQUET, &[&out]);

    let episodes = synthetic::run_episodes(&manifest, 20, 4);
    let steps: Vec<_> = episodes.iter().flat_map(|e| e.steps.concat()).collect();
    assert_eq!(read["steps"], steps.len());
    let reward: f64 = steps.iter().map(|s| f64::from(s.reward)).sum();
    assert!((read["reward_sum"].as_f64().unwrap() - reward).abs() < 1e-6);
    assert_eq!(read["compression"], "ZSTD");
    let types = &read["step_types"];
    for (column, expected) in [
        ("seed", "uint64"),
        ("step_index", "uint32"),
        ("reward", "float"),
        ("terminated", "bool"),
        ("agent_id", "string"),
        ("events", "list<item: string>"),
    ] {
        assert_eq!(types[column], expected, "{column}: {types}");
    }

    assert_eq!(read["episodes"], episodes.len());
    let first = &episodes[0].record;
    let rewards: Vec<f64> = first.agents.iter().map(|a| a.total_reward).collect();
    assert_eq!(read["first_rewards"], serde_json::json!(rewards));
    assert_eq!(read["first_outcomes"].as_array().unwrap().len(), 4);
    assert_eq!(read["episode_types"]["total_reward"], "List(Float64)");
    assert_eq!(read["episode_types"]["seed"], "UInt64");

    // LLM usage: agent 0's decisions.
    let llm: Vec<&serde_json::Value> = steps.iter().filter_map(|s| s.decision.as_ref()).collect();
    assert_eq!(read["llm"], llm.len());
    let prompt: u64 = llm
        .iter()
        .map(|d| d["usage"]["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(read["prompt_tokens"], prompt);
    let failures = llm.iter().filter(|d| d["parse_ok"] == false).count();
    assert_eq!(read["parse_failures"], failures);
}

#[test]
fn sequence_ratio_is_difflibs_on_short_and_long_texts() {
    // Pairs like consecutive messages: shared words, edits, repeats; some of 200 characters
    // and more, where difflib's autojunk rule sets in.
    let mut random = mosaic_core::rng::seeded(17);
    let vocabulary = [
        "go", "north", "wood", "Agent 1,", "(3, 4)", "now!", "T9:", "\n", "é", " ",
    ];
    let mut pairs: Vec<(String, String)> = Vec::new();
    for length in [0usize, 1, 5, 20, 60, 120, 250, 400] {
        for _ in 0..4 {
            let text = |random: &mut mosaic_core::rng::Rng| -> String {
                (0..length)
                    .map(|_| vocabulary[rand::Rng::random_range(random, 0..vocabulary.len())])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let a = text(&mut random);
            let b = match rand::Rng::random_range(&mut random, 0..3) {
                0 => text(&mut random),
                1 => a.replacen("wood", "stone", 2),
                _ => format!("{a} then wait"),
            };
            pairs.push((a, b));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pairs.json");
    std::fs::write(&file, serde_json::to_string(&pairs).unwrap()).unwrap();
    let theirs = run_python(
        "import difflib, json, sys\n\
         pairs = json.load(open(sys.argv[1]))\n\
         print(json.dumps([difflib.SequenceMatcher(None, a, b).ratio() for a, b in pairs]))",
        &[&file],
    );
    let theirs = numbers(&theirs);
    assert_eq!(theirs.len(), pairs.len());
    for ((a, b), expected) in pairs.iter().zip(theirs) {
        let ours = mosaic_recorder::lexical::sequence_ratio(a, b);
        assert!(
            (ours - expected).abs() < 1e-12,
            "{a:?} / {b:?}: {ours} vs {expected}"
        );
    }
}
