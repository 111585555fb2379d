//! `mosaic serve`: what it refuses before serving anything.

use std::process::{Command, Output};

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
    assert!(
        stderr.contains("unknown operator kind `genius`"),
        "{stderr}"
    );
}
