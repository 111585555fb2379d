//! A disk that fills up mid-run: `mosaic run` stops with one clear error naming the file
//! and the cause, without the store library's repeated log lines, and once there is room
//! again `mosaic resume` finishes the run with every episode.
//!
//! The small disk is a tmpfs mounted for the test, which needs root (as the test suite
//! runs in CI); elsewhere the test says why it cannot run and fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .env_remove("MOSAIC_LOG")
        .output()
        .expect("the mosaic binary runs")
}

/// A tmpfs of `size`, unmounted when dropped.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "mounting a tmpfs failed: the test needs root"
        );
        Self(dir.to_owned())
    }

    fn grow(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "remounting the tmpfs failed"
        );
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_run_with_one_clear_error_and_resume_finishes_it() {
    let root = tempfile::tempdir().unwrap();
    let disk = SmallDisk::mount(&root.path().join("disk"), "600k");
    let runs = disk.0.join("runs");
    let experiment = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/experiments/a7-scripted-vs-random.toml");
    let full = mosaic(&[
        "run",
        experiment.to_str().unwrap(),
        "--out",
        runs.to_str().unwrap(),
        "--run-id",
        "full",
    ]);
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("No space left on device") && stderr.contains("runs/full/"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("sled"),
        "the store library's lines: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.lines().count() <= 3, "{stderr}");

    disk.grow("64m");
    let run = runs.join("full");
    let resumed = mosaic(&["resume", run.to_str().unwrap()]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let episodes = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    assert_eq!(episodes.lines().count(), 20, "every episode, once");
}
