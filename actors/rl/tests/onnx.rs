//! ONNX policies as other libraries export them, built by `tests/onnx/policies.py` with the
//! `onnx` package from known weights, acting on observations of the native worlds: tract's
//! logits and the decider's greedy actions agree with numpy's reference, sampled actions
//! are legal and replay by seed, and files that do not fit are refused naming the file.

use mosaic_core::{
    Action, AgentContext, EnvSpec, ObsRequest, Observation, Policy, Settings, Transition,
};
use mosaic_rl::RlError;
use mosaic_rl::decider::{is_onnx, load_net, onnx_policy, policy};
use mosaic_rl::onnx::OnnxPolicy;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Observations of a real episode or several: the acting agent's view and its mask.
struct Seen {
    spec: EnvSpec,
    observations: Vec<Observation>,
}

impl Seen {
    fn rows(&self) -> Vec<f32> {
        self.observations
            .iter()
            .flat_map(|o| o.symbolic.as_ref().expect("a symbolic view").data.clone())
            .collect()
    }
}

/// Plays `env` with uniformly random legal actions and keeps `count` observations.
fn play(env: &str, count: usize) -> Seen {
    let mut world = mosaic_adapters::in_process_envs()
        .make(env, &Settings::new())
        .expect("a native world");
    let spec = world.spec().clone();
    let mut rng = mosaic_core::rng::seeded(7);
    let mut episode = 0;
    world.reset(episode).unwrap();
    let mut observations = Vec::new();
    let mut transition = Transition::new(spec.agents.len());
    while observations.len() < count {
        let acting = world.acting();
        if acting.is_empty() {
            episode += 1;
            world.reset(episode).unwrap();
            continue;
        }
        let mut actions = vec![None; spec.agents.len()];
        for agent in acting {
            let obs = world.observe(agent, ObsRequest::SYMBOLIC);
            let legal: Vec<usize> = (0..spec.action_labels.len())
                .filter(|&a| obs.is_legal(Action(a as u32)))
                .collect();
            actions[agent] = Some(Action(legal[rng.random_range(0..legal.len())] as u32));
            observations.push(obs);
        }
        world.step(&actions, &mut transition).unwrap();
    }
    Seen { spec, observations }
}

fn python() -> String {
    mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_ENVS")
}

/// Builds fixture `model` for `spec` in `dir`, with numpy's reference for `seen` if given;
/// answers the `.onnx` path.
fn build(dir: &Path, model: &str, name: &str, spec: &EnvSpec, seen: Option<&Seen>) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/policies.py");
    let shape: Vec<String> = spec
        .symbolic_shape
        .as_ref()
        .expect("a symbolic shape")
        .iter()
        .map(usize::to_string)
        .collect();
    let mut command = Command::new(python());
    command.arg(&script).arg(dir).args([
        "--model",
        model,
        "--name",
        name,
        "--env",
        &spec.name,
        "--obs-shape",
        &shape.join(","),
        "--actions",
        &spec.action_labels.join(","),
    ]);
    if let Some(seen) = seen {
        let file = dir.join(format!("{name}.observations.json"));
        let legal: Vec<&Vec<bool>> = seen.observations.iter().map(|o| &o.legal).collect();
        let obs: Vec<&Vec<f32>> = seen
            .observations
            .iter()
            .map(|o| &o.symbolic.as_ref().unwrap().data)
            .collect();
        std::fs::write(
            &file,
            serde_json::to_vec(&serde_json::json!({"obs": obs, "legal": legal})).unwrap(),
        )
        .unwrap();
        command.arg("--observations").arg(file);
    }
    let output = command.output().expect("the fixture script runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir.join(format!("{name}.onnx"))
}

#[derive(serde::Deserialize)]
struct Reference {
    logits: Vec<Vec<f32>>,
    model_action: Vec<usize>,
    greedy_action: Vec<u32>,
}

fn reference(model: &Path) -> Reference {
    let text = std::fs::read(model.with_extension("reference.json")).unwrap();
    serde_json::from_slice(&text).unwrap()
}

fn settings(entries: serde_json::Value) -> Settings {
    entries.as_object().unwrap().clone()
}

fn argmax(row: &[f32]) -> usize {
    (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best })
}

/// Checks tract against numpy for `model` over `seen`: batched logits, batches of one, and
/// the greedy decisions of an `onnx` slot.
fn agrees_with_numpy(path: &Path, seen: &Seen, logits_compare: bool) {
    let expected = reference(path);
    let rows = seen.observations.len();
    let net = load_net(path, &seen.spec, false).unwrap();
    assert_eq!(net.actions(), seen.spec.action_labels.len());
    let batched = net.logits(&seen.rows(), rows).unwrap();
    let actions = net.actions();
    for (row, want) in expected.logits.iter().enumerate() {
        let got = &batched[row * actions..(row + 1) * actions];
        if logits_compare {
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "{}: row {row}: tract {got:?}, numpy {want:?}",
                    path.display()
                );
            }
        }
        assert_eq!(argmax(got), expected.model_action[row], "row {row}");
        let one = net
            .logits(
                seen.observations[row]
                    .symbolic
                    .as_ref()
                    .unwrap()
                    .data
                    .as_slice(),
                1,
            )
            .unwrap();
        // Another batch size is another plan (other kernels): equal up to rounding.
        for (a, b) in one.iter().zip(got) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "{one:?} vs {got:?}"
            );
        }
    }

    let mut greedy = onnx_policy(
        &settings(serde_json::json!({"model": path, "greedy": true})),
        &seen.spec,
    )
    .unwrap();
    greedy.reset(&AgentContext::new(1, 0, "a".into(), actions));
    for (obs, want) in seen.observations.iter().zip(&expected.greedy_action) {
        let decision = greedy.decide(obs);
        assert_eq!(decision.action, Action(*want), "{:?}", decision.detail);
    }
}

#[test]
fn mlp_exports_act_as_numpy_computes_on_gridworld() {
    let dir = tempfile::tempdir().unwrap();
    let seen = play("gridworld", 40);
    assert_eq!(seen.spec.symbolic_shape, Some(vec![148]));
    // CleanRL's Gemm actor: logits.
    let gemm = build(dir.path(), "gemm", "gemm", &seen.spec, Some(&seen));
    agrees_with_numpy(&gemm, &seen, true);
    // MatMul + Add with a value head first, probabilities by name, normalised input.
    let matmul = build(dir.path(), "matmul", "matmul", &seen.spec, Some(&seen));
    agrees_with_numpy(&matmul, &seen, true);
    // Stable-Baselines3's deterministic export: int64 actions.
    let argmax = build(dir.path(), "argmax", "argmax", &seen.spec, Some(&seen));
    agrees_with_numpy(&argmax, &seen, false);

    // `kind = "rl"` takes the same files; seeded draws are legal and replay by seed.
    assert!(is_onnx(&gemm) && is_onnx(&gemm.with_extension("json")));
    assert!(is_onnx(&gemm.with_extension("")));
    let drawn = |seed: u64| {
        let mut p = policy(
            &settings(serde_json::json!({"checkpoint": gemm.with_extension("json")})),
            &seen.spec,
        )
        .unwrap();
        p.reset(&AgentContext::new(seed, 0, "a".into(), 7));
        seen.observations
            .iter()
            .map(|o| p.decide(o).action)
            .collect::<Vec<_>>()
    };
    let first = drawn(3);
    assert_eq!(first, drawn(3));
    assert_ne!(first, drawn(4), "another seed draws otherwise");
    for (obs, action) in seen.observations.iter().zip(&first) {
        assert!(obs.is_legal(*action));
    }
}

#[test]
fn a_cnn_reads_board_images_as_numpy_computes_on_connect_four() {
    let dir = tempfile::tempdir().unwrap();
    let seen = play("connect-four", 30);
    assert_eq!(seen.spec.symbolic_shape, Some(vec![6, 7, 2]));
    let cnn = build(dir.path(), "cnn", "cnn", &seen.spec, Some(&seen));
    agrees_with_numpy(&cnn, &seen, true);
}

fn rewrite_manifest(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let json = path.with_extension("json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    edit(&mut manifest);
    std::fs::write(&json, serde_json::to_vec(&manifest).unwrap()).unwrap();
}

fn refused(path: &Path, spec: &EnvSpec) -> RlError {
    OnnxPolicy::load_for(path, spec, false).expect_err("a policy that does not fit is refused")
}

#[test]
fn files_that_do_not_fit_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let grid = play("gridworld", 1).spec;
    let board = play("connect-four", 1).spec;

    // The manifest is checked against the environment like a checkpoint's.
    let gemm = build(dir.path(), "gemm", "gemm", &grid, None);
    let err = refused(&gemm, &board);
    assert!(err.to_string().contains("field `env` differs"), "{err}");
    assert!(err.to_string().contains("gemm.json"), "{err}");
    assert!(err.is_bad_input());
    let mut other = grid.clone();
    other.symbolic_shape = Some(vec![147]);
    let err = refused(&gemm, &other);
    assert!(
        err.to_string().contains("field `obs_shape` differs"),
        "{err}"
    );

    // A model for 84 values behind a manifest that promises gridworld's 148.
    let narrow = build(dir.path(), "gemm", "narrow", &board, None);
    rewrite_manifest(&narrow, |m| {
        m["env"] = "gridworld".into();
        m["obs_shape"] = serde_json::json!([148]);
        m["action_labels"] = serde_json::json!(grid.action_labels);
    });
    let err = refused(&narrow, &grid).to_string();
    assert!(err.contains("narrow.onnx"), "{err}");
    assert!(
        err.contains("input has shape [?, 84]") && err.contains("[batch, 148]"),
        "{err}"
    );

    // An output that is not there, or that does not score every action.
    rewrite_manifest(&gemm, |m| m["output"]["name"] = "probs".into());
    let err = refused(&gemm, &grid).to_string();
    assert!(
        err.contains("gemm.onnx") && err.contains("no output named `probs`"),
        "{err}"
    );
    let mut three = grid.clone();
    three.action_labels.truncate(3);
    let few = build(dir.path(), "gemm", "few", &three, None);
    rewrite_manifest(&few, |m| {
        m["action_labels"] = serde_json::json!(grid.action_labels)
    });
    let err = refused(&few, &grid).to_string();
    assert!(
        err.contains("few.onnx") && err.contains("output has shape [1, 3]"),
        "{err}"
    );

    // An image layout over a flat observation, bytes that are no model, a missing model.
    rewrite_manifest(&few, |m| {
        m["observation"]["layout"] =
            serde_json::json!({"type": "image", "env": "hwc", "model": "chw"})
    });
    let err = refused(&few, &grid).to_string();
    assert!(
        err.contains("few.json") && err.contains("three-dimensional"),
        "{err}"
    );
    std::fs::write(&gemm, b"not a protobuf").unwrap();
    rewrite_manifest(&gemm, |m| {
        m["output"] = serde_json::json!({"kind": "logits"})
    });
    let err = refused(&gemm, &grid);
    assert!(
        err.to_string()
            .contains("gemm.onnx: not a readable ONNX model"),
        "{err}"
    );
    assert!(err.is_bad_input());
    std::fs::remove_file(&gemm).unwrap();
    let err = refused(&gemm, &grid).to_string();
    assert!(err.contains("the model file is missing"), "{err}");
}
