//! Step All through the web server, as the page does it — post the step, wait until the
//! board shows every viewport one step further with a new frame, fetch the frames — for
//! two soccer-2v2 viewports (scripted against random), against the same two sessions
//! stepped directly in a session group with each frame rendered and PNG encoded, measured
//! in the same run. The ratio is what the browser interface costs per step. A third server
//! records every episode into a run directory, as `mosaic serve` does by default: its ratio
//! to the unrecorded server is what recording costs. For scale: MOSAIC's Python platform
//! does 10.8 steps/s with frames on.

// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

// The servers and HTTP client of the web tests (the module allows what the bench leaves
// unused).
#[path = "../tests/common/mod.rs"]
mod common;

use actix::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};
use mosaic_actors::Render;
use mosaic_actors::group::{ResetAll, SessionGroup, StepAll};
use mosaic_actors::session::{Session, SessionConfig, Subscribers};
use mosaic_actors::{DeciderRegistry, EnvActor};
use mosaic_core::{ExperimentSpec, RunId};
use serde_json::{Value, json};
use std::cell::Cell;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

fn experiment() -> ExperimentSpec {
    let operators: Vec<Value> = ["a", "b"]
        .iter()
        .map(|id| {
            json!({
                "id": id,
                "env": "soccer-2v2",
                "agents": {"green_0": {"kind": "scripted"}, "green_1": {"kind": "scripted"}, "*": {"kind": "random"}}
            })
        })
        .collect();
    serde_json::from_value(json!({
        "name": "bench",
        "episodes": 1000,
        "seeds": {"plan": "procedural", "base": 1},
        "max_steps": 200,
        "operators": operators,
    }))
    .expect("bench experiment")
}

/// Per-iteration time of each side, for the ratio printed at the end.
#[derive(Default)]
struct Rate {
    iters: Cell<u64>,
    time: Cell<Duration>,
}

impl Rate {
    fn add(&self, iters: u64, time: Duration) -> Duration {
        self.iters.set(self.iters.get() + iters);
        self.time.set(self.time.get() + time);
        time
    }

    fn per_second(&self) -> f64 {
        self.iters.get() as f64 / self.time.get().as_secs_f64().max(1e-9)
    }
}

fn state(addr: SocketAddr) -> Value {
    serde_json::from_slice(&common::http(addr, "GET", "/api/live/state", &[], b"").body)
        .expect("board JSON")
}

/// (steps, frame version, done) of every viewport.
fn board(addr: SocketAddr) -> Vec<(u64, u64, bool)> {
    state(addr)["viewports"]
        .as_array()
        .expect("viewports")
        .iter()
        .map(|v| {
            (
                v["status"]["steps"].as_u64().unwrap_or(0),
                v["frame"].as_u64().unwrap_or(0),
                v["status"]["done"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn post(addr: SocketAddr, path: &str, body: &str) {
    let answer = common::http(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(answer.status, 202, "{path}: {}", answer.text());
}

/// One Step All as the page sees it; resets (untimed) when an episode is over.
fn web_step(addr: SocketAddr, seed: &Cell<u64>) -> Duration {
    let before = board(addr);
    if before.iter().any(|(_, _, done)| *done) {
        seed.set(seed.get() + 1);
        post(
            addr,
            "/api/live/reset",
            &format!("{{\"seed\":{}}}", seed.get()),
        );
        while board(addr).iter().any(|(steps, _, _)| *steps != 0) {}
        return web_step(addr, seed);
    }
    let start = Instant::now();
    post(addr, "/api/live/step", "{}");
    loop {
        let now = board(addr);
        let stepped = now
            .iter()
            .zip(&before)
            .all(|(n, b)| n.0 == b.0 + 1 && n.1 > b.1);
        if stepped {
            break;
        }
    }
    for id in ["a", "b"] {
        let frame = common::http(addr, "GET", &format!("/api/live/{id}/frame"), &[], b"");
        assert_eq!(&frame.body[1..4], b"PNG");
    }
    start.elapsed()
}

struct Direct {
    group: Addr<SessionGroup>,
    envs: Vec<Addr<EnvActor>>,
}

fn direct() -> Direct {
    let spec = experiment();
    let envs = mosaic_adapters::native_envs();
    let kinds = DeciderRegistry::baselines();
    let mut sessions = Vec::new();
    let mut env_actors = Vec::new();
    for operator in &spec.operators {
        let mut config = SessionConfig::new(RunId::from("bench"), operator.id.as_str().into());
        config.max_steps = spec.max_steps;
        let session = Session::build(config, operator, &envs, &kinds, Subscribers::default())
            .expect("session");
        env_actors.push(session.env());
        sessions.push(session.start());
    }
    Direct {
        group: SessionGroup::new(sessions).start(),
        envs: env_actors,
    }
}

/// One Step All of the group with every frame rendered and encoded; resets (untimed) when
/// an episode is over.
async fn direct_step(direct: &Direct, seed: &Cell<u64>) -> Duration {
    let start = Instant::now();
    let statuses = direct
        .group
        .send(StepAll)
        .await
        .expect("group")
        .expect("step");
    for env in &direct.envs {
        let (frame, _) = env
            .send(Render::default())
            .await
            .expect("env")
            .expect("soccer draws");
        frame.to_png().expect("PNG");
    }
    let elapsed = start.elapsed();
    if statuses.iter().any(|s| s.done) {
        seed.set(seed.get() + 1);
        direct
            .group
            .send(ResetAll { seed: seed.get() })
            .await
            .expect("group")
            .expect("reset");
    }
    elapsed
}

fn step_all(c: &mut Criterion) {
    let mut group = c.benchmark_group("step_all_soccer_two_viewports");
    group.measurement_time(Duration::from_secs(6));

    let system = actix::System::new();
    let direct = system.block_on(async { direct() });
    system
        .block_on(direct.group.send(ResetAll { seed: 1 }))
        .expect("group")
        .expect("reset");
    let direct_rate = Rate::default();
    let seed = Cell::new(1);
    group.bench_function("direct", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += system.block_on(direct_step(&direct, &seed));
            }
            direct_rate.add(iters, total)
        })
    });

    let mut config =
        mosaic_web::ServeConfig::new(mosaic_adapters::native_envs(), DeciderRegistry::baselines());
    config.experiment = Some(experiment());
    config.bind = "127.0.0.1:0".parse().expect("address");
    let server = common::serve_in_background(config).expect("server");
    let web_rate = Rate::default();
    let seed = Cell::new(1);
    group.bench_function("web", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += web_step(server.addr, &seed);
            }
            web_rate.add(iters, total)
        })
    });
    drop(server);

    let runs = tempfile::tempdir().expect("runs directory");
    let mut config =
        mosaic_web::ServeConfig::new(mosaic_adapters::native_envs(), DeciderRegistry::baselines());
    config.experiment = Some(experiment());
    config.bind = "127.0.0.1:0".parse().expect("address");
    config.record = Some(mosaic_web::RecordConfig {
        dir: runs.path().join("bench"),
        run_id: "bench".into(),
        versions: Default::default(),
    });
    let server = common::serve_in_background(config).expect("server");
    let recorded_rate = Rate::default();
    let seed = Cell::new(1);
    group.bench_function("web_recorded", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += web_step(server.addr, &seed);
            }
            recorded_rate.add(iters, total)
        })
    });
    group.finish();
    drop(server);
    let (web, direct) = (web_rate.per_second(), direct_rate.per_second());
    let recorded = recorded_rate.per_second();
    println!(
        "Step All, two soccer viewports with frames: web {web:.0} steps/s, direct {direct:.0} steps/s, web/direct = {:.2} (MOSAIC: 10.8 steps/s)",
        web / direct
    );
    println!(
        "Recording every episode: web {recorded:.0} steps/s, recorded/unrecorded = {:.2}",
        recorded / web
    );
}

criterion_group!(benches, step_all);
criterion_main!(benches);
