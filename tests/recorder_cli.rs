//! The recorder commands of the real `mosaic` binary on run directories written by the
//! recorder: listing, reports, exports, comparisons, and bad input (exit code 2, a clear
//! message naming the input, never a panic).

use mosaic_recorder::synthetic;
use mosaic_recorder::{RunDir, RunStore, Unit};
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

/// A complete run of `operators` × 4 episodes of 12 steps, 4 agents.
fn complete_run(root: &Path, id: &str, operators: &[&str], base_seed: u64) -> (RunDir, RunStore) {
    let manifest = synthetic::manifest(id, operators, 4, base_seed);
    synthetic::write_run(&root.join(id), &manifest, 12, 4).expect("run written")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Exit code 2, the message names `needle`, and nothing panicked.
fn assert_bad_input(output: &Output, needle: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(needle), "expected `{needle}` in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn runs_lists_status_and_progress() {
    let dir = tempfile::tempdir().unwrap();
    drop(complete_run(dir.path(), "done", &["a"], 1));
    // An interrupted run: one of its four units was never completed.
    let (_, store) = complete_run(dir.path(), "cut", &["a"], 1);
    store.discard(&Unit::new("a", 3)).unwrap();
    store.flush().unwrap();
    drop(store);
    std::fs::write(
        dir.path().join("cut/episodes.jsonl"),
        std::fs::read_to_string(dir.path().join("cut/episodes.jsonl"))
            .unwrap()
            .lines()
            .take(3)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    // A run being written: its store is held open by this process.
    let (_, live) = complete_run(dir.path(), "live", &["a", "b"], 1);
    std::fs::create_dir(dir.path().join("not-a-run")).unwrap();
    let long_id = "a-run-id-far-longer-than-any-column-default-20261124T193000";
    drop(complete_run(dir.path(), long_id, &["a"], 1));

    let output = mosaic(&["runs", path(dir.path())]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let line = |id: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{id} missing in {stdout}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(line("done")[3..5], ["complete", "4/4"]);
    assert_eq!(line("cut")[3..5], ["interrupted", "3/4"]);
    assert_eq!(line("live")[5..7], ["running", "8/8"]);
    assert!(stdout.contains("2023-11-14 22:13"), "{stdout}");
    assert_eq!(line(long_id)[3..5], ["complete", "4/4"]);
    // Columns line up whatever the length of the ids.
    let status_column: Vec<usize> = stdout
        .lines()
        .map(|l| {
            ["status", "complete", "interrupted", "running"]
                .iter()
                .find_map(|word| l.find(&format!("  {word}")))
                .unwrap_or_else(|| panic!("no status in {l:?}"))
        })
        .collect();
    assert!(
        status_column.windows(2).all(|w| w[0] == w[1]),
        "{status_column:?}\n{stdout}"
    );
    drop(live);
}

#[test]
fn report_in_every_format_with_plots() {
    let dir = tempfile::tempdir().unwrap();
    drop(complete_run(
        dir.path(),
        "r",
        &["llm_vs_random", "random_vs_random"],
        7,
    ));
    let run = path(&dir.path().join("r")).to_owned();
    let md = mosaic(&["report", &run]);
    assert!(md.status.success(), "{}", text(&md.stderr));
    let md = text(&md.stdout);
    assert!(md.contains("## Side by side"), "{md}");
    assert!(md.contains("| mean return [95% CI] |"), "{md}");
    assert!(md.contains("prompt tok"), "{md}");
    let json = mosaic(&["report", &run, "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["operators"].as_array().unwrap().len(), 2);
    assert_eq!(json["run"]["status"], "complete");
    let plots = dir.path().join("plots");
    let csv = mosaic(&["report", &run, "--format", "csv", "--plots", path(&plots)]);
    assert!(csv.status.success(), "{}", text(&csv.stderr));
    assert!(text(&csv.stdout).starts_with("operator,group,name,statistic,value\n"));
    for plot in ["returns.svg", "return_distribution.svg"] {
        let svg = std::fs::read_to_string(plots.join(plot)).unwrap();
        assert!(svg.contains("llm_vs_random"), "{plot}");
    }
}

#[test]
fn export_streams_every_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    drop(complete_run(dir.path(), "r", &["a", "b"], 7));
    let run = path(&dir.path().join("r")).to_owned();
    let jsonl = mosaic(&["export", &run, "--format", "jsonl"]);
    assert!(jsonl.status.success(), "{}", text(&jsonl.stderr));
    assert_eq!(text(&jsonl.stdout).lines().count(), 2 * 4 * 12 * 4);
    let out = dir.path().join("episodes.csv");
    let csv = mosaic(&[
        "export",
        &run,
        "--format",
        "csv",
        "--records",
        "episodes",
        "-o",
        path(&out),
    ]);
    assert!(csv.status.success(), "{}", text(&csv.stderr));
    assert_eq!(
        std::fs::read_to_string(out).unwrap().lines().count(),
        1 + 2 * 4 * 4
    );
}

#[test]
fn compare_tells_same_from_different() {
    let dir = tempfile::tempdir().unwrap();
    drop(complete_run(dir.path(), "one", &["a"], 3));
    drop(complete_run(dir.path(), "two", &["a"], 3));
    drop(complete_run(dir.path(), "other", &["a"], 4));
    let p = |id: &str| path(&dir.path().join(id)).to_owned();
    let same = mosaic(&["compare", &p("one"), &p("two")]);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stderr));
    assert!(text(&same.stdout).contains("same trajectories: 4 episodes, 192 step records"));
    let differ = mosaic(&["compare", &p("one"), &p("other")]);
    assert_eq!(differ.status.code(), Some(1));
    let stdout = text(&differ.stdout);
    assert!(
        stdout.contains("first difference: a/ep000000 step 0 agent green_0"),
        "{stdout}"
    );
    assert!(stdout.contains("  seed: A = 3, B = 4"), "{stdout}");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    assert_bad_input(&mosaic(&["report", path(&missing)]), "nowhere");
    assert_bad_input(&mosaic(&["runs", path(&missing)]), "nowhere");
    assert_bad_input(
        &mosaic(&["report", path(dir.path())]),
        "is not a run directory",
    );

    // A finished run whose store a newer mosaic wrote is still read, from its logs
    // (readers never open a finished run's store; the store's format error is the
    // recorder's `bad_directories_give_clear_errors`).
    drop(complete_run(dir.path(), "newer", &["a"], 1));
    synthetic::set_store_format(&dir.path().join("newer/store"), 99).unwrap();
    let newer = mosaic(&["report", path(&dir.path().join("newer"))]);
    assert_eq!(newer.status.code(), Some(0), "{}", text(&newer.stderr));

    // A missing store.
    drop(complete_run(dir.path(), "nostore", &["a"], 1));
    std::fs::remove_dir_all(dir.path().join("nostore/store")).unwrap();
    assert_bad_input(
        &mosaic(&[
            "export",
            path(&dir.path().join("nostore")),
            "--format",
            "jsonl",
        ]),
        "store is missing",
    );
    assert_bad_input(
        &mosaic(&["runs", path(&dir.path().join("nostore"))]),
        "store is missing",
    );

    // A truncated line in the middle of episodes.jsonl.
    drop(complete_run(dir.path(), "cutline", &["a"], 1));
    let episodes = dir.path().join("cutline/episodes.jsonl");
    let mut lines: Vec<String> = std::fs::read_to_string(&episodes)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines[1].truncate(40);
    std::fs::write(&episodes, lines.join("\n") + "\n").unwrap();
    assert_bad_input(
        &mosaic(&["report", path(&dir.path().join("cutline"))]),
        "episodes.jsonl:2: malformed record: truncated",
    );

    // A record of an unknown major schema version.
    drop(complete_run(dir.path(), "major", &["a"], 1));
    let episodes = dir.path().join("major/episodes.jsonl");
    let text_before = std::fs::read_to_string(&episodes).unwrap();
    std::fs::write(
        &episodes,
        text_before.replacen("mosaic.episode/1", "mosaic.episode/7", 1),
    )
    .unwrap();
    assert_bad_input(
        &mosaic(&["runs", path(&dir.path().join("major"))]),
        "episodes.jsonl:1: record schema `mosaic.episode/7`",
    );

    // Corrupt bytes in steps.jsonl of a run whose store must catch up from it.
    let (_, store) = complete_run(dir.path(), "garbled", &["a"], 1);
    store.discard(&Unit::new("a", 2)).unwrap();
    store.flush().unwrap();
    drop(store);
    let steps = dir.path().join("garbled/steps.jsonl");
    let mut bytes = std::fs::read(&steps).unwrap();
    let third_line = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .unwrap()
        .0
        + 5;
    bytes[third_line] = 0xff;
    std::fs::write(&steps, bytes).unwrap();
    assert_bad_input(
        &mosaic(&["report", path(&dir.path().join("garbled"))]),
        "steps.jsonl:3",
    );

    // A torn last line (a crash mid-write) is not an error, and nothing complete is lost.
    drop(complete_run(dir.path(), "torn", &["a"], 1));
    let episodes = dir.path().join("torn/episodes.jsonl");
    let mut bytes = std::fs::read(&episodes).unwrap();
    bytes.extend_from_slice(b"{\"schema\":\"mosaic.episode/1\",\"run_id\":\"to");
    std::fs::write(&episodes, bytes).unwrap();
    let output = mosaic(&["runs", path(&dir.path().join("torn"))]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("complete"),
        "{}",
        text(&output.stdout)
    );
}
