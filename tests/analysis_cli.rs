//! The analysis commands of the real `mosaic` binary: paired comparisons of operators
//! and runs on shared seeds, and seeds that do not pair.

use mosaic_recorder::synthetic;
use mosaic_recorder::{Durability, RunDir};
use std::path::Path;
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A run of operators `a` and `b`, 12 episodes of 10 steps, 4 agents, in which `b`'s
/// first agent scores `bonus` more in every episode (its other figures as `a`'s).
fn run_with_bonus(root: &Path, id: &str, base_seed: u64, bonus: f64) -> std::path::PathBuf {
    let manifest = synthetic::manifest(id, &["a", "b"], 12, base_seed);
    let dir = root.join(id);
    let (run, store) = RunDir::create(&dir, &manifest).unwrap();
    let mut writer = run.writer(&store, Durability::Flush).unwrap();
    for mut episode in synthetic::run_episodes(&manifest, 10, 4) {
        if episode.record.operator_id == "b" {
            episode.record.agents[0].total_reward += bonus;
        }
        episode
            .steps
            .iter()
            .try_for_each(|s| writer.write_step(s))
            .unwrap();
        writer.write_episode(&episode.record).unwrap();
        writer.commit().unwrap();
        writer.mark_complete(&episode.record).unwrap();
    }
    writer.close().unwrap();
    dir
}

#[test]
fn operators_of_one_run_compare_seed_by_seed() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_with_bonus(dir.path(), "r", 3, 2.0);
    let out = mosaic(&[
        "compare",
        path(&run),
        "--operators",
        "a",
        "b",
        "--effect",
        "1",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("### `b` − `a`, paired by seed"), "{stdout}");
    // Every seed: b is 2 higher; the exact test has p = 2 / 2^12.
    assert!(
        stdout.contains("| +2.000 [+2.000, +2.000] | 12 / 0 / 0 | <0.001 (exact) |"),
        "{stdout}"
    );
    assert!(stdout.contains("12 seeds paired."), "{stdout}");

    let json = mosaic(&[
        "compare",
        path(&run),
        "--operators",
        "a",
        "b",
        "--format",
        "json",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let returns = &value["paired"][0]["returns"];
    assert_eq!(returns["paired_seeds"], 12);
    assert_eq!(returns["difference"]["difference"]["mean"], 2.0);

    // The report compares every operator with the first the same way.
    let report = text(&mosaic(&["report", path(&run)]).stdout);
    assert!(report.contains("## Paired by seed"), "{report}");
    assert!(report.contains("| +2.000 [+2.000, +2.000] |"), "{report}");

    // The rliable aggregates, with the optimality gap when γ is given.
    let report = text(&mosaic(&["report", path(&run), "--gamma", "1"]).stdout);
    assert!(report.contains("## Aggregates (rliable)"), "{report}");
    assert!(report.contains("optimality gap (γ = 1)"), "{report}");
    assert!(report.contains("P(better than `a`)"), "{report}");

    // The matrix: green (LLM and random agents) against blue (random agents).
    let matrix = mosaic(&["report", path(&run), "--matrix"]);
    let stdout = text(&matrix.stdout);
    assert!(matrix.status.success(), "{}", text(&matrix.stderr));
    assert!(
        stdout.starts_with("## Matrix: team green (rows) against team blue (columns)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| **llm+random** | `a` (12 ep.): W "),
        "{stdout}"
    );
    let json = mosaic(&["report", path(&run), "--matrix", "--format", "json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["cells"][1]["operator_id"], "b");
    assert_eq!(value["rows"][0], "llm+random");

    let unknown = mosaic(&["compare", path(&run), "--operators", "a", "zz"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("operator `zz`"));
}

#[test]
fn runs_compare_by_operator_and_unmatched_seeds_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let one = run_with_bonus(dir.path(), "one", 3, 0.0);
    let two = run_with_bonus(dir.path(), "two", 3, 1.0);
    let out = mosaic(&["compare", path(&one), path(&two)]);
    // The trajectories are the same, the episode records differ: exit code 1, and the
    // operators are compared.
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("first difference: b/ep000000 episode record"),
        "{stdout}"
    );
    assert!(
        stdout.contains("### `two:b` − `one:b`, paired by seed"),
        "{stdout}"
    );
    assert!(stdout.contains("| +1.000 [+1.000, +1.000] |"), "{stdout}");

    // Other seeds: nothing pairs, and the report says so instead of pairing.
    let other = run_with_bonus(dir.path(), "other", 500, 0.0);
    let out = mosaic(&["compare", path(&one), path(&other)]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("no seeds in common"), "{stdout}");
    assert!(
        stdout.contains("not paired (seed in one side only): 12 in A only"),
        "{stdout}"
    );

    let alone = mosaic(&["compare", path(&one)]);
    assert_eq!(alone.status.code(), Some(2));
}

/// A coordination-world experiment at the easy and hard difficulties, two short episodes
/// each, every agent of `kind`.
fn coordination_run(root: &Path, name: &str, kind: &str) -> std::path::PathBuf {
    let file = root.join(format!("{name}.toml"));
    let operator = |id: &str, preset: &str| {
        format!(
            "[[operators]]\nid = \"{id}\"\nenv = \"coord-world\"\nenv_settings = {{ preset = \"{preset}\", agents = 2, width = 16, height = 16, max_steps = 40 }}\nagents = {{ \"*\" = {{ kind = \"{kind}\" }} }}\n\n"
        )
    };
    let experiment = format!(
        "name = \"{name}\"\nepisodes = 2\nseeds = {{ plan = \"procedural\", base = 5 }}\n\n{}{}",
        operator("easy", "easy"),
        operator("hard", "hard")
    );
    std::fs::write(&file, experiment).unwrap();
    let out = root.join("runs");
    let run = mosaic(&["run", path(&file), "--out", path(&out), "--run-id", name]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    out.join(name)
}

#[test]
fn runs_at_several_difficulties_make_one_table_by_alpha() {
    let dir = tempfile::tempdir().unwrap();
    let scripted = coordination_run(dir.path(), "scripted-team", "scripted");
    let random = coordination_run(dir.path(), "random-team", "random");
    let out = mosaic(&["report", path(&scripted), path(&random)]);
    let md = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(md.contains("## Scores by difficulty α"), "{md}");
    assert!(md.contains("| run | α = 0.3 | α = 0.9 |"), "{md}");
    assert!(
        md.contains("| `scripted-team` |") && md.contains("| `random-team` |"),
        "{md}"
    );
    // No two-team game among them: no configuration table.
    assert!(!md.contains("## Configurations"), "{md}");

    let out = mosaic(&["report", path(&scripted), path(&random), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = &json["difficulty"];
    assert_eq!(table["alphas"], serde_json::json!([0.3, 0.9]));
    // The scripted team's easy cell: the mean of its easy episodes' own Base%.
    let episodes = std::fs::read_to_string(scripted.join("episodes.jsonl")).unwrap();
    let easy: Vec<f64> = episodes
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|e| e["operator_id"] == "easy")
        .map(|e| e["metrics"]["base_pct"].as_f64().unwrap())
        .collect();
    assert_eq!(easy.len(), 2);
    let cell = &table["rows"][0]["cells"][0];
    assert_eq!(cell["episodes"], 2);
    let mean = cell["base_pct"]["mean"].as_f64().unwrap();
    assert!((mean - (easy[0] + easy[1]) / 2.0).abs() < 1e-9, "{cell}");

    // --matrix needs two-team games.
    let refused = mosaic(&["report", path(&scripted), path(&random), "--matrix"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
}

#[test]
fn a_single_run_report_gives_every_metric_its_interval() {
    // ALEM's single-agent calibration setting, through the binary: one scripted agent,
    // no role gate, no coordination tasks, on ALEM's scale.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("solo.toml");
    std::fs::write(
        &file,
        "name = \"solo\"\nepisodes = 4\nseeds = { plan = \"procedural\", base = 11 }\n\n[[operators]]\nid = \"alone\"\nenv = \"coord-world\"\nenv_settings = { preset = \"hard\", agents = 1, specialisation = false, scoring = \"alem\", width = 16, height = 16, max_steps = 60 }\nagents = { \"*\" = { kind = \"scripted\" } }\n",
    )
    .unwrap();
    let out = dir.path().join("runs");
    let run = mosaic(&["run", path(&file), "--out", path(&out), "--run-id", "solo"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let run = out.join("solo");

    let report = mosaic(&["report", path(&run)]);
    let md = text(&report.stdout);
    assert!(report.status.success(), "{}", text(&report.stderr));
    assert!(md.contains("| metric | mean [95% CI] |"), "{md}");
    // A constant metric has its point as its interval.
    assert!(
        md.contains("| coord_max | 159.000 [159.000, 159.000] |"),
        "{md}"
    );
    assert!(
        md.contains("| coordination_sites | 0.000 [0.000, 0.000] |"),
        "{md}"
    );

    let report = mosaic(&["report", path(&run), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let operator = &json["operators"][0];
    let episodes = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    let base: Vec<f64> = episodes
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .map(|e| e["metrics"]["base_pct"].as_f64().unwrap())
        .collect();
    assert_eq!(base.len(), 4);
    let interval = &operator["metric_intervals"]["base_pct"];
    let mean = base.iter().sum::<f64>() / 4.0;
    assert!(
        (interval["mean"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{interval}"
    );
    assert_eq!(interval["n"], 4);
    let (low, high) = (
        interval["low"].as_f64().unwrap(),
        interval["high"].as_f64().unwrap(),
    );
    let (min, max) = base
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    assert!(
        min <= low && low <= mean && mean <= high && high <= max,
        "{interval}"
    );
    // The means stay where they were.
    assert_eq!(operator["metrics"]["base_pct"], interval["mean"]);
    // Every numeric metric has its interval.
    let metrics = operator["metrics"].as_object().unwrap();
    let intervals = operator["metric_intervals"].as_object().unwrap();
    assert_eq!(
        metrics.keys().collect::<Vec<_>>(),
        intervals.keys().collect::<Vec<_>>()
    );
}
