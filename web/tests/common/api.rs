//! Requests to a served experiment: the token, JSON bodies, polling the live state.

use super::{Answer, http};
use mosaic_core::ExperimentSpec;
use mosaic_web::ServeConfig;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// The token the test servers are started with.
pub(crate) const TOKEN: &str = "http-test-token-42";

/// A server configuration for `experiment` on a free loopback port (the walk world,
/// baseline deciders).
pub(crate) fn config(experiment: Option<ExperimentSpec>) -> ServeConfig {
    let mut config = ServeConfig::new(
        super::registry(),
        mosaic_actors::DeciderRegistry::baselines(),
    );
    config.experiment = experiment;
    config.bind = "127.0.0.1:0".parse().unwrap();
    config
}

/// Two operators on the walk world: a human against `noop`, and a random agent alone.
pub(crate) fn duel() -> ExperimentSpec {
    serde_json::from_value(json!({
        "name": "duel",
        "episodes": 2,
        "seeds": {"plan": "list", "seeds": [5, 6]},
        "max_steps": 20,
        "operators": [
            {"id": "duel", "env": "walk", "agents": {"red": {"kind": "human"}, "blue": {"kind": "noop"}}},
            {"id": "solo", "env": "walk", "env_settings": {"stepping": "single"}, "agents": {"*": {"kind": "random"}}}
        ]
    }))
    .unwrap()
}

/// The token header, plus `extra`.
pub(crate) fn authed<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![("X-Mosaic-Token", TOKEN)];
    headers.extend_from_slice(extra);
    headers
}

/// `GET path` with the token.
pub(crate) fn get(addr: SocketAddr, path: &str) -> Answer {
    http(addr, "GET", path, &authed(&[]), b"")
}

/// `POST path` with the token and a JSON body.
pub(crate) fn post(addr: SocketAddr, path: &str, body: Value) -> Answer {
    http(
        addr,
        "POST",
        path,
        &authed(&[("Content-Type", "application/json")]),
        body.to_string().as_bytes(),
    )
}

/// The answer's body as JSON.
pub(crate) fn json_of(answer: &Answer) -> Value {
    serde_json::from_slice(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.text()))
}

/// Polls the board until `ready` holds (the board follows the sessions asynchronously).
pub(crate) fn state_until(addr: SocketAddr, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = json_of(&get(addr, "/api/live/state"));
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

/// The step count of viewport `viewport`, once it has an episode.
pub(crate) fn steps(state: &Value, viewport: usize) -> Option<u64> {
    state["viewports"][viewport]["status"]["steps"].as_u64()
}
