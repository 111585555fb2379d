//! Steps per second of one skirmish world on one thread, played as the framework runs it
//! (symbolic observation of every acting agent, a uniformly random legal action each),
//! printed as one JSON line for `scripts/bench/skirmish-vs-smax.sh`.
//!
//! Usage: `cargo run --release -p mosaic-skirmish --example skirmish_speed -- [SECONDS]
//! [SETTINGS_JSON]`, e.g. `3 '{"scenario": "protoss_5_vs_5"}'`.

// The bench uses the rest of this module (the presets); here only `Play::of` is needed.
#[allow(dead_code)]
#[path = "../benches/support/mod.rs"]
mod support;

use mosaic_core::{ObsRequest, Settings};
use mosaic_skirmish::Skirmish;
use std::process::ExitCode;
use std::time::Duration;
use support::{Play, seconds_per_call};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let seconds = match args.next().map(|s| s.parse::<f64>()) {
        None => 3.0,
        Some(Ok(s)) if s > 0.0 && s.is_finite() => s,
        Some(_) => {
            eprintln!("skirmish_speed: SECONDS must be a positive number");
            return ExitCode::from(2);
        }
    };
    let settings: Settings = match args.next().map(|s| serde_json::from_str(&s)) {
        None => Settings::new(),
        Some(Ok(settings)) => settings,
        Some(Err(e)) => {
            eprintln!("skirmish_speed: SETTINGS_JSON is not a JSON object: {e}");
            return ExitCode::from(2);
        }
    };
    let env = match Skirmish::from_settings(&settings) {
        Ok(env) => env,
        Err(e) => {
            eprintln!("skirmish_speed: {e}");
            return ExitCode::from(2);
        }
    };
    let mut play = Play::of(env, ObsRequest::SYMBOLIC);
    let (wall, cpu) = seconds_per_call(Duration::from_secs_f64(seconds), || play.step());
    let line = serde_json::json!({
        "env": "skirmish",
        "settings": settings,
        "steps_per_s": 1.0 / wall,
        "cpu_steps_per_s": cpu.map(|c| 1.0 / c),
    });
    println!("{line}");
    ExitCode::SUCCESS
}
