//! Raw speed of `soccer-2v2` under uniformly random play, one thread, no actors.
//!
//! `cargo run --release -p mosaic-soccer --example soccer_speed -- [STEPS] [SEED]`
//! prints one JSON line: `{"env":"soccer-2v2","steps":N,"seconds":S,"steps_per_s":X}`.

use mosaic_core::rng::seeded;
use mosaic_core::{Action, Environment, ObsRequest, Transition};
use mosaic_soccer::{Soccer, SoccerSettings};
use rand::Rng as _;
use std::process::ExitCode;
use std::time::Instant;

fn arg(index: usize, name: &str, default: u64) -> Result<u64, String> {
    match std::env::args().nth(index) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|e| format!("{name} must be a whole number, got `{text}`: {e}")),
    }
}

fn run() -> Result<String, String> {
    let steps = arg(1, "STEPS", 1_000_000)?;
    let seed = arg(2, "SEED", 0)?;
    let mut env = Soccer::new(SoccerSettings::default()).map_err(|e| e.message)?;
    let mut rng = seeded(seed);
    let mut episode_seed = seed;
    let mut out = Transition::default();
    let mut actions = vec![None; env.spec().agents.len()];
    let start = Instant::now();
    env.reset(episode_seed).map_err(|e| e.to_string())?;
    let mut legal: Vec<u32> = env
        .observe(0, ObsRequest::MASK_ONLY)
        .legal_actions()
        .map(|a| a.0)
        .collect();
    for _ in 0..steps {
        for action in &mut actions {
            *action = Some(Action(legal[rng.random_range(0..legal.len())]));
        }
        env.step(&actions, &mut out).map_err(|e| e.to_string())?;
        if out.all_done() {
            episode_seed += 1;
            env.reset(episode_seed).map_err(|e| e.to_string())?;
            legal = env
                .observe(0, ObsRequest::MASK_ONLY)
                .legal_actions()
                .map(|a| a.0)
                .collect();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let steps_per_s = steps as f64 / seconds;
    Ok(format!(
        r#"{{"env":"soccer-2v2","steps":{steps},"seconds":{seconds:.6},"steps_per_s":{steps_per_s:.1}}}"#
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("soccer_speed: {message}");
            ExitCode::from(2)
        }
    }
}
