//! A new kind of agent, defined in this file and mixed into a team with the built-in ones.
//!
//! Any actor that answers `BeginEpisode` and `Decide` is a decider; this one stands for a
//! deliberating agent (think of a planner or a remote model): it answers asynchronously,
//! prefers moving forward, and draws its other moves from a seed derived from the episode
//! seed and its agent id, so its games replay exactly. Registering it under a kind name
//! makes it usable in experiment files too.
//!
//! Run with `cargo run --release --example custom_decider [OUT_DIR]`.

use actix::prelude::*;
use mosaic::actors::{BeginEpisode, Decide, DeciderError};
use mosaic::core::rng::{Rng as AgentRng, seeded};
use mosaic::prelude::*;
use mosaic::run::RunOptions;
use rand::Rng;
use std::sync::Arc;

/// Moves forward three times out of four, otherwise picks a random legal action.
struct ForwardLooking {
    rng: AgentRng,
    forward: Option<Action>,
}

impl Actor for ForwardLooking {
    type Context = Context<Self>;
}

impl Handler<BeginEpisode> for ForwardLooking {
    type Result = Result<(), DeciderError>;

    fn handle(&mut self, msg: BeginEpisode, _: &mut Context<Self>) -> Self::Result {
        self.rng = seeded(msg.ctx.seed);
        self.forward = msg
            .spec
            .action_labels
            .iter()
            .position(|label| label == "forward")
            .map(|i| Action(i as u32));
        Ok(())
    }
}

impl Handler<Decide> for ForwardLooking {
    type Result = Result<Decision, DeciderError>;

    fn handle(&mut self, msg: Decide, _: &mut Context<Self>) -> Self::Result {
        let legal: Vec<Action> = msg.obs.legal_actions().collect();
        let choice = match self.forward {
            Some(forward) if msg.obs.is_legal(forward) && self.rng.random_bool(0.75) => forward,
            _ if legal.is_empty() => {
                return Err(DeciderError::Failed("no legal action".into()));
            }
            _ => legal[self.rng.random_range(0..legal.len())],
        };
        let mut decision = Decision::act(choice);
        decision.detail = Some(serde_json::json!({ "reason": "forward-looking" }));
        Ok(decision)
    }
}

fn forward_looking_kind() -> DeciderKind {
    DeciderKind {
        name: "forward_looking",
        summary: "moves forward three times out of four (example decider)",
        settings: &[],
        spawn: Arc::new(|_cx| {
            let addr = ForwardLooking {
                rng: seeded(0),
                forward: None,
            }
            .start();
            Ok(DeciderHandle::new(
                "forward_looking",
                Paradigm::Rl,
                ObsRequest::MASK_ONLY,
                &addr,
            ))
        }),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "runs".into());
    let experiment = Experiment::builder("custom-decider")
        .episodes(6)
        .seeds(SeedPlan::Procedural { base: 1 })
        .max_steps(200)
        .decider_kind(forward_looking_kind())
        .operator(
            Operator::new("mixed", "soccer-2v2")
                .agent("green_0", "forward_looking")
                .agent("green_1", "scripted")
                .everyone("random"),
        )
        .build()?;
    let outcome = experiment.run(&RunOptions {
        out: out.into(),
        ..RunOptions::default()
    })?;
    print!("{}", mosaic::summary::table(&outcome)?);
    Ok(())
}
