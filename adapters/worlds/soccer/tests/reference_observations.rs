//! The `reference` observation mode against the real `mosaic-multigrid` 7.0.0 package.
//!
//! `reference_episode.py` plays a seeded episode of each reference variant (1v0, 1v1,
//! 2v2, 3v3) with actions drawn from a seeded stream, and prints every state it passes
//! through with each agent's observation dict. The two engines draw their random numbers
//! differently (numpy's generator against ours), so the same actions do not lead to the
//! same states; instead each printed state — players' cells, directions and cooldowns,
//! the ball, the score, the step — is rebuilt in the native environment through a
//! snapshot, and every agent's native `reference` observation must equal the package's
//! `image` flattened, then `direction`, as the package's `gen_obs()` computes them for that
//! state. (On a step that scores, the package's `step()` returns observations computed
//! before its walk-in scoring — the scorer still carrying, the ball not yet respawned —
//! while mosaic observes the state after the goal; the script marks those steps `stale`
//! and the test checks that some were met, so the difference stays known.)

use mosaic_core::{Environment, ObsRequest, Snapshot};
use mosaic_soccer::{Lineup, ObservationMode, Soccer, SoccerSettings, reference};
use serde::Deserialize;
use std::path::Path;
use std::process::Command;

#[derive(Deserialize)]
struct Episode {
    records: Vec<Record>,
}

#[derive(Deserialize)]
struct Record {
    state: State,
    obs: Vec<AgentObs>,
    #[serde(default)]
    stale: bool,
}

#[derive(Deserialize)]
struct State {
    players: Vec<PlayerState>,
    ball: serde_json::Value,
    goals: [u32; 2],
    steps: u32,
    terminated: bool,
}

#[derive(Deserialize)]
struct PlayerState {
    x: i32,
    y: i32,
    dir: u8,
    cooldown: u32,
}

#[derive(Deserialize)]
struct AgentObs {
    image: Vec<Vec<Vec<i64>>>,
    direction: i64,
}

/// The reference's episode of `lineup` with a view of `view_size`, seeded with `seed`.
fn reference_episode(lineup: Lineup, view_size: u32, seed: u64) -> Episode {
    let python = mosaic_test_kit::setup::variable("python-envs.sh", "MOSAIC_PY_MULTIGRID");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference_episode.py");
    let output = Command::new(&python)
        .arg(&script)
        .args([
            lineup.reference_id(),
            &view_size.to_string(),
            &seed.to_string(),
            "300",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the script prints one JSON document")
}

/// `env` put in `state` by restoring an edited snapshot of itself.
fn rebuild(env: &mut Soccer, state: &State) {
    let mut saved: serde_json::Value =
        serde_json::from_slice(&env.snapshot().expect("soccer snapshots").0).unwrap();
    let game = &mut saved["game"];
    game["players"] = state
        .players
        .iter()
        .map(|p| {
            let pos = serde_json::json!({ "x": p.x, "y": p.y });
            serde_json::json!({ "pos": pos, "prev_pos": pos, "dir": p.dir, "cooldown": p.cooldown })
        })
        .collect();
    game["ball"] = match (state.ball.get("loose"), state.ball.get("carried")) {
        (Some(at), _) => serde_json::json!({ "loose": { "x": at[0], "y": at[1] } }),
        (None, Some(agent)) => serde_json::json!({ "carried": agent }),
        _ => panic!("unknown ball {}", state.ball),
    };
    for (team, goals) in state.goals.iter().enumerate() {
        game["teams"][team]["goals"] = (*goals).into();
    }
    game["steps"] = state.steps.into();
    game["terminated"] = state.terminated.into();
    env.restore(&Snapshot(serde_json::to_vec(&saved).unwrap()))
        .unwrap_or_else(|e| panic!("state {}: {e}", state.steps));
}

/// What the compared states went through.
#[derive(Default)]
struct Coverage {
    states: usize,
    carried: usize,
    loose: usize,
    players_in_sight: usize,
    stale: usize,
}

impl Coverage {
    /// Enough to trust the comparison: the ball both carried and loose, and (with others
    /// on the pitch) another player in some view.
    fn is_enough(&self, lineup: Lineup) -> bool {
        self.carried > 0 && self.loose > 0 && (lineup.agents() == 1 || self.players_in_sight > 0)
    }
}

/// Compares every state of the reference's episode `seed` of `lineup`.
fn compare_episode(lineup: Lineup, view_size: u32, seed: u64, coverage: &mut Coverage) {
    let episode = reference_episode(lineup, view_size, seed);
    let settings = SoccerSettings {
        view_size,
        observation: ObservationMode::Reference,
        ..SoccerSettings::default()
    };
    let mut env = Soccer::with_lineup(lineup, settings).unwrap();
    env.reset(0).unwrap();
    let view = view_size as usize;
    let own = reference::image_index(view, view / 2, view - 1, 0);
    for record in &episode.records {
        rebuild(&mut env, &record.state);
        coverage.states += 1;
        coverage.stale += usize::from(record.stale);
        if record.state.ball.get("carried").is_some() {
            coverage.carried += 1;
        } else {
            coverage.loose += 1;
        }
        assert_eq!(record.obs.len(), lineup.agents());
        for (agent, expected) in record.obs.iter().enumerate() {
            let mut want: Vec<f32> = expected
                .image
                .iter()
                .flatten()
                .flatten()
                .map(|v| *v as f32)
                .collect();
            want.push(expected.direction as f32);
            assert_eq!(want.len(), reference::len(view));
            // Another player in sight: type 10 anywhere but the agent's own cell.
            coverage.players_in_sight +=
                usize::from((0..view * view).any(|k| k * 3 != own && want[k * 3] == 10.0));
            let got = env
                .observe(agent, ObsRequest::SYMBOLIC)
                .symbolic
                .expect("symbolic observation")
                .data;
            assert_eq!(
                got,
                want,
                "{} view {view_size} seed {seed}, step {}, agent {agent}",
                lineup.name(),
                record.state.steps
            );
        }
    }
}

#[test]
fn reference_observations_equal_the_packages_for_every_lineup() {
    // Random actions seldom pick the ball up: episodes are played, seed after seed, until
    // the compared states cover the cases that matter.
    const MAX_SEEDS: u64 = 12;
    let mut stale = 0;
    for lineup in Lineup::ALL {
        for view_size in [3u32, 7] {
            let mut coverage = Coverage::default();
            let mut seed = 0;
            while !coverage.is_enough(lineup) {
                seed += 1;
                assert!(
                    seed <= MAX_SEEDS,
                    "{} view {view_size}: {MAX_SEEDS} episodes, {} states, {} with the ball carried, {} loose, {} views with another player",
                    lineup.name(),
                    coverage.states,
                    coverage.carried,
                    coverage.loose,
                    coverage.players_in_sight
                );
                compare_episode(lineup, view_size, seed, &mut coverage);
            }
            stale += coverage.stale;
        }
    }
    // Goals were scored: the package's step observations lagged behind on those steps.
    assert!(stale > 0, "no episode scored a goal");
}
