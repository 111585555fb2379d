//! What a killed `mosaic` leaves running is ended by the next `mosaic resume`: a real run
//! whose policy worker starts a helper process of its own is killed with SIGKILL; the
//! helper survives in the worker's process group, listed in the run's `processes.json`;
//! `mosaic resume` ends that group, says so in one line, and finishes the run. A listed
//! group whose leader's pid now belongs to a process with another start time (a recycled
//! pid) is left alone, though it carries the listed group's tag.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{mosaic, text};
use mosaic_test_kit::python;
use serde_json::Value;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `(state, pgrp, start ticks)` of a process, from `/proc/PID/stat`; `None` once it is gone.
fn stat(pid: u32) -> Option<(String, u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((
        fields[0].to_owned(),
        fields[2].parse().ok()?,
        fields[19].parse().ok()?,
    ))
}

/// Whether `pid` runs (a zombie left to a container's init does not count).
fn runs(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _, _)| state != "Z")
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn helper_pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

#[test]
fn a_killed_runs_leftover_processes_are_ended_by_resume_and_a_recycled_pid_is_not() {
    let py = python::python_env();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("helpers");
    let argv = py.worker(
        "forking_policy.py",
        &[pids.to_str().expect("utf-8 path"), "0.01"],
    );
    let file = dir.path().join("orphans.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "orphans"
episodes = 3
max_steps = 60
parallelism = 1
seeds = {{ plan = "procedural", base = 3 }}

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = {{ green_0 = {{ kind = "worker", command = {argv:?} }}, "*" = {{ kind = "random" }} }}
"#
        ),
    )
    .unwrap();
    let out = dir.path().join("runs");
    let run = out.join("orphans");
    let mut child = mosaic()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(["--run-id", "orphans"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosaic run starts");
    let listed = run.join("processes.json");
    let listed_groups = || -> Vec<Value> {
        std::fs::read(&listed)
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default()
    };
    // A helper running in a listed group, once the run records steps.
    let listed_helper = || {
        let groups: Vec<u32> = listed_groups()
            .iter()
            .filter_map(|g| g["pgid"].as_u64())
            .map(|pgid| pgid as u32)
            .collect();
        helper_pids(&pids)
            .into_iter()
            .find(|pid| stat(*pid).is_some_and(|s| s.0 != "Z" && groups.contains(&s.1)))
    };
    wait_for(
        "a listed worker group with its helper, recording steps",
        || {
            listed_helper().is_some()
                && std::fs::metadata(run.join("steps.jsonl")).is_ok_and(|m| m.len() > 0)
        },
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let helper = listed_helper().expect("the helper");
    let groups = listed_groups();
    let worker_group = stat(helper).unwrap().1;
    std::thread::sleep(Duration::from_millis(300));
    assert!(runs(helper), "the helper outlives the killed mosaic");
    let listed_entry = groups
        .iter()
        .find(|g| g["pgid"] == worker_group)
        .expect("the worker's group is listed")
        .clone();

    // A group whose leader pid was recycled: same pid and tag as listed, another start time.
    let mut stranger = Command::new("sleep")
        .arg("600")
        .env("MOSAIC_PROCESS_TAG", listed_entry["tag"].as_str().unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let start = stat(stranger.id()).unwrap().2;
    let mut groups = groups;
    groups.push(serde_json::json!({
        "pgid": stranger.id(),
        "start_ticks": start + 1,
        "boot_id": listed_entry["boot_id"],
        "tag": listed_entry["tag"],
        "command": "sleep 600",
    }));
    std::fs::write(&listed, serde_json::to_vec(&groups).unwrap()).unwrap();

    let resumed = mosaic().arg("resume").arg(&run).output().unwrap();
    let said = text(&resumed);
    assert!(resumed.status.success(), "resume failed: {said}");
    let reports: Vec<&str> = said
        .lines()
        .filter(|l| l.contains("process group"))
        .collect();
    assert_eq!(reports.len(), 1, "{said}");
    assert!(
        reports[0].contains("ended 1 process group(s)")
            && reports[0].contains(&worker_group.to_string())
            && reports[0].contains("forking_policy.py"),
        "{said}"
    );
    assert!(!runs(helper), "the killed run's helper was ended");
    assert!(
        stranger.try_wait().unwrap().is_none(),
        "the recycled pid's process runs on"
    );
    // The resumed run's own worker and helper ended with it, and its list with them.
    for pid in helper_pids(&pids) {
        assert!(!runs(pid), "helper {pid} outlived the finished run");
    }
    assert!(!listed.exists(), "a finished run lists no processes");
    let listed_runs = text(&mosaic().arg("runs").arg(&out).output().unwrap());
    assert!(listed_runs.contains("complete"), "{listed_runs}");
    let _ = stranger.kill();
    let _ = stranger.wait();
}
