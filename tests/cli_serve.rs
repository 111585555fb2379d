//! `mosaic serve`: what it refuses before serving anything, and the run it records.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .env_remove("MOSAIC_TOKEN")
        .output()
        .expect("the mosaic binary runs")
}

#[test]
fn serving_beyond_the_loopback_needs_a_token() {
    let output = mosaic(&["serve", "--bind", "0.0.0.0:0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs a token"), "{stderr}");
    let output = mosaic(&["serve", "--bind", "0.0.0.0:0", "--token", "short"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad token"), "{stderr}");
}

#[test]
fn a_bad_experiment_is_named_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\nepisodes = 1\n\n[[operators]]\nid = \"a\"\nenv = \"tic-tac-toe\"\nagents = { \"*\" = { kind = \"genius\" } }\n",
    )
    .unwrap();
    let output = mosaic(&["serve", &file.to_string_lossy(), "--bind", "127.0.0.1:0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.toml:7"), "{stderr}");
    assert!(stderr.contains("unknown decider kind `genius`"), "{stderr}");
}

/// A person in a gridworld beside the scripted heuristic on the same seed.
const PLAY: &str = r#"
name = "play"
episodes = 2
max_steps = 50
seeds = { plan = "procedural", base = 11 }

[[operators]]
id = "you"
env = "gridworld"
agents = { "*" = { kind = "human" } }

[[operators]]
id = "mirror"
env = "gridworld"
agents = { "*" = { kind = "scripted" } }
"#;

/// `mosaic serve` running in the background until [`Served::stop`].
struct Served {
    child: Child,
    addr: String,
    stderr: std::thread::JoinHandle<Vec<String>>,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mosaic"))
            .arg("serve")
            .args(args)
            .args(["--bind", "127.0.0.1:0"])
            .env_remove("MOSAIC_TOKEN")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the mosaic binary runs");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut stderr = Vec::new();
        let addr = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("mosaic serve ended early: {stderr:?}"))
                .unwrap();
            stderr.push(line.clone());
            if let Some(rest) = line.strip_prefix("mosaic: serving on http://") {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        let stderr = std::thread::spawn(move || {
            stderr.extend(lines.map_while(Result::ok));
            stderr
        });
        Served {
            child,
            addr,
            stderr,
        }
    }

    fn request(&self, method: &str, path: &str, body: &str) -> (u16, Vec<u8>) {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let status = String::from_utf8_lossy(&raw[9..12]).parse().unwrap();
        (status, raw[split + 4..].to_vec())
    }

    fn state(&self) -> Value {
        serde_json::from_slice(&self.request("GET", "/api/live/state", "").1).unwrap()
    }

    fn state_until(&self, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let state = self.state();
            if ready(&state) {
                return state;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {state:#}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn post(&self, path: &str, body: Value) {
        let (status, answer) = self.request("POST", path, &body.to_string());
        assert_eq!(status, 202, "{path}: {}", String::from_utf8_lossy(&answer));
    }

    /// Ctrl-C; answers whether it exited successfully, and what it printed on stderr.
    fn stop(mut self) -> (bool, Vec<String>) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "mosaic serve did not stop on Ctrl-C"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        (status.success(), self.stderr.join().unwrap())
    }
}

fn steps(state: &Value) -> Option<u64> {
    state["viewports"][0]["status"]["steps"].as_u64()
}

#[test]
fn what_a_person_plays_is_recorded_reported_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("play.toml");
    std::fs::write(&file, PLAY).unwrap();
    let runs = dir.path().join("runs");
    let served = Served::start(&[
        &file.to_string_lossy(),
        "--runs",
        &runs.to_string_lossy(),
        "--run-id",
        "manual-play",
    ]);
    let frame = |served: &Served| served.request("GET", "/api/live/you/frame", "").1;
    served.state_until("the first reset", |s| steps(s) == Some(0));
    let mut shown = vec![frame(&served)];
    let mut chosen = Vec::new();
    for k in 0..3u64 {
        served.post("/api/live/step", json!({}));
        let state = served.state_until("the person's turn", |s| s["waiting"] == 1);
        let legal = state["viewports"][0]["waiting"][0]["legal"]
            .as_array()
            .unwrap();
        let action = legal[(k as usize * 2) % legal.len()].as_u64().unwrap();
        served.post(
            "/api/live/choose",
            json!({"operator": "you", "agent": 0, "action": action}),
        );
        served.state_until("the step", |s| {
            steps(s) == Some(k + 1) && s["stepping"] == false
        });
        chosen.push(action);
        shown.push(frame(&served));
    }
    let (stopped, stderr) = served.stop();
    assert!(stopped, "{stderr:?}");
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("mosaic: recording run manual-play into")),
        "{stderr:?}"
    );

    let run = runs.join("manual-play");
    let listed = mosaic(&["runs", &runs.to_string_lossy()]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{listing}");
    let line = listing
        .lines()
        .find(|l| l.starts_with("manual-play"))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(line.contains("complete") && line.contains("2/2"), "{line}");

    let report = mosaic(&["report", &run.to_string_lossy()]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{text}");
    assert!(text.contains("Run `manual-play`: play"), "{text}");
    assert!(
        text.contains("Status **complete**, 2 of 2 episodes complete"),
        "{text}"
    );

    let resumed = mosaic(&["resume", &run.to_string_lossy()]);
    let text = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{text}");
    assert!(text.contains("played by hand"), "{text}");

    let frames = dir.path().join("frames");
    let replayed = mosaic(&[
        "replay",
        &run.to_string_lossy(),
        "--episode",
        "manual-play-you-ep000000",
        "--frames",
        &frames.to_string_lossy(),
    ]);
    let text = String::from_utf8_lossy(&replayed.stdout);
    assert!(replayed.status.success(), "{text}");
    assert!(
        text.contains("replay matches the records: 3 steps"),
        "{text}"
    );
    for (k, png) in shown.iter().enumerate() {
        let replayed = std::fs::read(frames.join(format!("step-{k:06}.png"))).unwrap();
        assert!(
            replayed == *png,
            "replayed frame {k} differs from the frame shown"
        );
    }
    let recorded: Vec<u64> = std::fs::read_to_string(run.join("steps.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["operator_id"] == "you")
        .map(|r| {
            assert_eq!(r["kind"], "human");
            r["action"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(recorded, chosen, "the person's moves, as made");
}

#[test]
fn no_record_leaves_the_runs_directory_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("play.toml");
    std::fs::write(&file, PLAY).unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let served = Served::start(&[
        &file.to_string_lossy(),
        "--runs",
        &runs.to_string_lossy(),
        "--no-record",
    ]);
    served.state_until("the first reset", |s| steps(s) == Some(0));
    let (_, setup) = served.request("GET", "/api/live", "");
    let setup: Value = serde_json::from_slice(&setup).unwrap();
    assert_eq!(setup["recording"], Value::Null);
    served.post("/api/live/step", json!({}));
    served.state_until("the person's turn", |s| s["waiting"] == 1);
    let (stopped, stderr) = served.stop();
    assert!(stopped, "{stderr:?}");
    assert!(
        !stderr.iter().any(|l| l.contains("recording")),
        "{stderr:?}"
    );
    assert!(std::fs::read_dir(&runs).unwrap().next().is_none());
}
