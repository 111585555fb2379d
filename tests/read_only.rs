//! Reading a finished run needs no write access: on a read-only mount, `runs`, `report`,
//! `export`, `compare --operators` and `replay` of the real `mosaic` binary work, from the
//! JSON-lines logs, and leave every file of the run as it was.
//!
//! The read-only mount is a bind mount remounted read-only, which needs root (as the test
//! suite runs in CI); elsewhere the test says why it cannot run and fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .expect("the mosaic binary runs")
}

fn ok(output: Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{what} failed: {stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A read-only bind mount of a directory over itself, undone when dropped.
struct ReadOnly(PathBuf);

impl ReadOnly {
    fn mount(dir: &Path) -> Self {
        let run = |args: &[&str]| {
            let status = Command::new("mount").args(args).status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "`mount {}` failed: a read-only mount needs root",
                args.join(" ")
            );
        };
        let path = dir.to_str().expect("utf-8 path");
        run(&["--bind", path, path]);
        let mounted = Self(dir.to_owned());
        run(&["-o", "remount,bind,ro", path]);
        mounted
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Every file under `dir` with its length and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable") {
            let entry = entry.expect("entry");
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                files.insert(entry.path(), (meta.len(), meta.modified().expect("mtime")));
            }
        }
    }
    files
}

#[test]
fn a_finished_run_on_a_read_only_mount_is_listed_reported_exported_compared_and_replayed() {
    let root = tempfile::tempdir().unwrap();
    let experiment =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/experiments/side-by-side.toml");
    let runs = root.path().join("runs");
    ok(
        mosaic(&[
            "run",
            experiment.to_str().unwrap(),
            "--out",
            runs.to_str().unwrap(),
            "--run-id",
            "ro",
        ]),
        "mosaic run",
    );
    let run = runs.join("ro");
    let run_arg = run.to_str().unwrap();
    let writable_report = ok(mosaic(&["report", run_arg, "--format", "json"]), "report");
    let before = snapshot(&run);
    let _mount = ReadOnly::mount(&run);
    assert!(
        std::fs::write(run.join("probe"), b"x").is_err(),
        "the mount is read-only"
    );

    let listed = ok(mosaic(&["runs", runs.to_str().unwrap()]), "runs");
    assert!(
        listed.contains("ro") && listed.contains("complete"),
        "{listed}"
    );
    let report = ok(mosaic(&["report", run_arg, "--format", "json"]), "report");
    let figures = |text: &str| {
        let mut v: serde_json::Value = serde_json::from_str(text).expect("report JSON");
        // Where the records were read from may differ; the figures may not.
        v.as_object_mut().map(|o| o.remove("live"));
        v["operators"].clone()
    };
    assert_eq!(figures(&report), figures(&writable_report));
    let out = root.path().join("export.csv");
    ok(
        mosaic(&[
            "export",
            run_arg,
            "--format",
            "csv",
            "-o",
            out.to_str().unwrap(),
        ]),
        "export",
    );
    assert!(std::fs::read_to_string(&out).unwrap().lines().count() > 1);
    let compared = ok(
        mosaic(&[
            "compare",
            run_arg,
            "--operators",
            "scripted_green",
            "scripted_blue",
        ]),
        "compare",
    );
    assert!(compared.contains("scripted_blue"), "{compared}");
    let replayed = ok(
        mosaic(&[
            "replay",
            run_arg,
            "--episode",
            "ro-scripted_green-ep0",
            "--views",
            "none",
        ]),
        "replay",
    );
    assert!(
        replayed.contains("replay matches the records"),
        "{replayed}"
    );
    assert_eq!(snapshot(&run), before, "reading changed nothing");
}
