//! Two operator configurations side by side under shared seeds, composed in Rust.
//!
//! The same pitch, episode for episode: once the scripted team plays green against random,
//! once it plays blue. Run with `cargo run --release --example side_by_side [OUT_DIR]`.

use mosaic::prelude::*;
use mosaic::run::RunOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "runs".into());
    let experiment = Experiment::builder("side-by-side-in-code")
        .episodes(10)
        .seeds(SeedPlan::Procedural { base: 500 })
        .max_steps(200)
        .parallelism(2)
        .operator(
            Operator::new("scripted_green", "soccer-2v2")
                .agent("green_0", "scripted")
                .agent("green_1", "scripted")
                .everyone("random"),
        )
        .operator(
            Operator::new("scripted_blue", "soccer-2v2")
                .agent("blue_0", "scripted")
                .agent("blue_1", "scripted")
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
