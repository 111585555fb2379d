//! Reading a finished run needs no write access and changes nothing: on a read-only mount,
//! `runs`, `report`, `export`, `compare` and `replay` of the real `mosaic` binary work, from
//! the JSON-lines logs; on a writable mount, they and the runs browser of `mosaic serve`
//! leave every file of the run as it was (contents and modification times, the store's
//! included: readers of a finished run do not open it).
//!
//! The read-only mount is a bind mount remounted read-only, which needs root (as the test
//! suite runs in CI); elsewhere the test says why it cannot run and fails.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
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

/// Every file under `dir` with its length, modification time and a hash of its contents.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime, u64)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable") {
            let entry = entry.expect("entry");
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                let mut hash = DefaultHasher::new();
                std::fs::read(entry.path())
                    .expect("readable")
                    .hash(&mut hash);
                files.insert(
                    entry.path(),
                    (meta.len(), meta.modified().expect("mtime"), hash.finish()),
                );
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
    ok(
        mosaic(&[
            "run",
            experiment.to_str().unwrap(),
            "--out",
            root.path().to_str().unwrap(),
            "--run-id",
            "twin",
        ]),
        "mosaic run",
    );
    let same = ok(
        mosaic(&[
            "compare",
            run_arg,
            root.path().join("twin").to_str().unwrap(),
            "--format",
            "json",
        ]),
        "compare of two runs",
    );
    assert!(same.contains("\"divergence\": null"), "{same}");
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

/// `mosaic serve --runs DIR` until dropped.
struct Served {
    child: std::process::Child,
    addr: String,
}

impl Served {
    fn start(runs: &Path) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mosaic"))
            .arg("serve")
            .arg("--runs")
            .arg(runs)
            .args(["--bind", "127.0.0.1:0"])
            .env_remove("MOSAIC_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mosaic serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let addr = BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| {
                let rest = line.strip_prefix("mosaic: serving on http://")?;
                Some(rest.split('/').next()?.to_owned())
            })
            .expect("mosaic serve says where it serves");
        Served { child, addr }
    }

    /// GETs `path`: the status and the body.
    fn get(&self, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).expect("connects");
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .expect("request sent");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("response");
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
        (status, body)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_reader_leaves_a_writable_finished_run_as_it_was() {
    let root = tempfile::tempdir().unwrap();
    let experiment =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/experiments/side-by-side.toml");
    let runs = root.path().join("runs");
    for id in ["one", "two"] {
        ok(
            mosaic(&[
                "run",
                experiment.to_str().unwrap(),
                "--out",
                runs.to_str().unwrap(),
                "--run-id",
                id,
            ]),
            "mosaic run",
        );
    }
    let (one, two) = (runs.join("one"), runs.join("two"));
    let (a, b) = (one.to_str().unwrap(), two.to_str().unwrap());
    let before = (snapshot(&one), snapshot(&two));
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let out_file = |name: &str| out.join(name).to_str().unwrap().to_owned();
    // Modification times are kept to the nanosecond: a reader that wrote within the
    // same tick as the run would still change the contents or length it checks.
    std::thread::sleep(std::time::Duration::from_millis(20));

    let readers: Vec<(&str, Vec<String>)> = vec![
        ("runs", vec!["runs".into(), runs.to_str().unwrap().into()]),
        ("report", vec!["report".into(), a.into()]),
        (
            "report as JSON with plots",
            vec![
                "report".into(),
                a.into(),
                "--format".into(),
                "json".into(),
                "--plots".into(),
                out_file("plots"),
            ],
        ),
        (
            "export as CSV",
            vec![
                "export".into(),
                a.into(),
                "--format".into(),
                "csv".into(),
                "-o".into(),
                out_file("steps.csv"),
            ],
        ),
        (
            "export as Parquet",
            vec![
                "export".into(),
                a.into(),
                "--format".into(),
                "parquet".into(),
                "-o".into(),
                out_file("parquet"),
            ],
        ),
        (
            "compare two runs",
            vec!["compare".into(), a.into(), b.into()],
        ),
        (
            "compare two operators",
            vec![
                "compare".into(),
                a.into(),
                "--operators".into(),
                "scripted_green".into(),
                "scripted_blue".into(),
            ],
        ),
        (
            "replay",
            vec![
                "replay".into(),
                a.into(),
                "--episode".into(),
                "one-scripted_green-ep0".into(),
                "--views".into(),
                "none".into(),
            ],
        ),
    ];
    for (what, args) in &readers {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let said = ok(mosaic(&args), what);
        assert_eq!(
            (snapshot(&one), snapshot(&two)),
            before,
            "{what} changed a run"
        );
        if *what == "compare two runs" {
            assert!(said.contains("same trajectories"), "{said}");
        }
    }
    // The store's records and the logs' are the same: the export from the logs is, line
    // for line, what the records of the store say, in the store's order.
    let exported = std::fs::read_to_string(out.join("steps.csv")).unwrap();
    assert!(exported.lines().count() > 1000, "{exported:.200}");

    let served = Served::start(&runs);
    for path in [
        "/api/runs",
        "/api/runs/one",
        "/api/runs/one/charts",
        "/api/runs/one/episodes/scripted_green/0",
        "/api/runs/one/replay/scripted_green/0",
    ] {
        let (status, body) = served.get(path);
        assert_eq!(status, 200, "{path}: {body:.300}");
        assert_eq!(
            (snapshot(&one), snapshot(&two)),
            before,
            "the runs browser's {path} changed a run"
        );
    }
}
