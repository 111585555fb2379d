//! Speed of ONNX policies run with tract: time per decision of a CleanRL-style MLP (Gemm,
//! two hidden ReLU layers of 64) over soccer-2v2's observation, for one agent at a time (as
//! an `onnx` slot decides) and a batch of the 4 agents, next to mosaic's own 64-64 MLP of
//! the same size in the same run.
//!
//! Run with `cargo bench -p mosaic-rl --features onnx --bench onnx`. The model is built by
//! `tests/onnx/policies.py` with the project's Python venv (`scripts/setup/python-envs.sh`).

use criterion::{Criterion, Throughput};
use mosaic_core::rng::{Rng, seeded};
use mosaic_core::{EnvSpec, Settings};
use mosaic_rl::Architecture;
use mosaic_rl::net::{ActorCritic, NetShape};
use mosaic_rl::onnx::OnnxPolicy;
use mosaic_rl::policy::{Inference, PolicyNet, decide_batch};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const AGENTS: usize = 4;

fn soccer() -> EnvSpec {
    mosaic_adapters::in_process_envs()
        .make("soccer-2v2", &Settings::new())
        .expect("soccer-2v2")
        .spec()
        .clone()
}

/// Builds the ONNX MLP for `spec` in `dir`.
fn onnx_mlp(dir: &Path, spec: &EnvSpec) -> OnnxPolicy {
    let python = mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_ENVS");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/policies.py");
    let shape = spec.symbolic_shape.as_ref().expect("a symbolic shape");
    let output = Command::new(python)
        .arg(script)
        .arg(dir)
        .args(["--model", "gemm", "--hidden", "64,64", "--env", &spec.name])
        .args(["--obs-shape", &shape[0].to_string()])
        .args(["--actions", &spec.action_labels.join(",")])
        .output()
        .expect("the fixture script runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    OnnxPolicy::load_for(&dir.join("gemm.onnx"), spec, false).expect("the model loads")
}

/// µs per decision of `net` deciding for `rows` agents at once.
fn per_decision(net: &dyn PolicyNet, obs: &[f32], rows: usize, rngs: &mut [Rng]) -> f64 {
    let legal = vec![true; net.actions()];
    let masks: Vec<&[bool]> = (0..rows).map(|_| legal.as_slice()).collect();
    let obs = &obs[..rows * net.obs_len()];
    let rounds = 20_000 / rows;
    let started = Instant::now();
    for _ in 0..rounds {
        black_box(decide_batch(net, obs, &masks, Some(&mut rngs[..rows])).expect("decides"));
    }
    started.elapsed().as_secs_f64() * 1e6 / (rounds * rows) as f64
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let spec = soccer();
    let onnx = onnx_mlp(dir.path(), &spec);
    let obs_len = onnx.obs_len();
    let actions = onnx.actions();
    let native = Inference::new(
        &ActorCritic::new(
            NetShape::new(vec![obs_len], actions, Architecture::default()),
            1,
        )
        .expect("a valid network"),
    )
    .expect("inference of a valid network");
    let obs: Vec<f32> = (0..obs_len * AGENTS)
        .map(|i| (i % 7) as f32 * 0.3)
        .collect();
    let legal = vec![true; actions];
    let masks: Vec<&[bool]> = (0..AGENTS).map(|_| legal.as_slice()).collect();
    let mut rngs: Vec<Rng> = (0..AGENTS as u64).map(seeded).collect();

    let mut group = criterion.benchmark_group("onnx");
    group.throughput(Throughput::Elements(AGENTS as u64));
    group.bench_function("mlp_batch4_decisions", |b| {
        b.iter(|| decide_batch(&onnx, black_box(&obs), &masks, Some(&mut rngs)).expect("decides"))
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("mlp_single_decision", |b| {
        b.iter(|| {
            decide_batch(
                &onnx,
                black_box(&obs[..obs_len]),
                &masks[..1],
                Some(&mut rngs[..1]),
            )
            .expect("decides")
        })
    });
    group.finish();

    for rows in [1, AGENTS] {
        let tract = per_decision(&onnx, &obs, rows, &mut rngs);
        let own = per_decision(&native, &obs, rows, &mut rngs);
        println!(
            "onnx: {tract:.2} µs per decision with tract (MLP 64-64, batch of {rows}); mosaic's own MLP of the same size {own:.2} µs ({:.1}x)",
            tract / own
        );
    }
    criterion.final_summary();
}
