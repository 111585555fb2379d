//! `mosaic replay RUN --episode ID [--frames DIR]`: plays a recorded episode again from its
//! seed and recorded actions, shows it step by step, and checks it against the records.

use super::{CliError, print};
use mosaic_core::record::{EpisodeRecord, StepRecord};
use mosaic_core::{Environment, ObsRequest, render_marked_or_plain};
use mosaic_recorder::replay::{ReplayObserver, ReplayedStep, replay};
use mosaic_recorder::{Records, RunDir, Unit};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Replays one episode of a run.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The run directory.
    pub run: PathBuf,
    /// The episode id, `{run}-{operator}-ep{index:06}` (as in the records).
    #[arg(long)]
    pub episode: String,
    /// Also write a PNG frame per step into this directory: `step-000000.png` is what the
    /// agents saw at step 0, the last one the final state.
    #[arg(long)]
    pub frames: Option<PathBuf>,
    /// Whose text views to print before each step: `all`, `none`, or agent ids separated
    /// by commas (e.g. `green_0,blue_0`). Actions and rewards are always printed.
    #[arg(long, default_value = "all", value_parser = parse_views)]
    pub views: Views,
}

/// Whose text views `mosaic replay` prints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Views {
    /// Every acting agent's.
    All,
    /// These agents' (none when empty).
    Agents(Vec<String>),
}

impl Views {
    fn shows(&self, agent_id: &str) -> bool {
        match self {
            Views::All => true,
            Views::Agents(ids) => ids.iter().any(|id| id == agent_id),
        }
    }
}

fn parse_views(value: &str) -> Result<Views, String> {
    match value.trim() {
        "all" => Ok(Views::All),
        "none" | "" => Ok(Views::Agents(Vec::new())),
        list => {
            let ids: Vec<String> = list.split(',').map(|id| id.trim().to_owned()).collect();
            if ids.iter().any(String::is_empty) {
                return Err(format!("`{value}`: an empty agent id in the list"));
            }
            Ok(Views::Agents(ids))
        }
    }
}

/// Replays the episode, printing the text view of every step with the recorded actions and
/// rewards; fails if the replay's rewards or terminations differ from the records.
pub(crate) fn run(args: &ReplayArgs) -> Result<(), CliError> {
    let run = RunDir::open(&args.run)?;
    let records = run.records()?;
    let (unit, episode) = complete_unit(&run, &records, &args.episode)?;
    let steps = records.steps_of(&unit)?;
    let experiment = &run.manifest().experiment;
    let operator = experiment
        .operators
        .iter()
        .find(|o| o.id == unit.operator_id)
        .ok_or_else(|| CliError::Usage(format!("no operator `{}` in the run", unit.operator_id)))?;
    let mut env = mosaic::experiment::default_envs()
        .make(&operator.env, &operator.env_settings)
        .map_err(|e| {
            CliError::Usage(format!(
                "cannot rebuild the environment of operator `{}`: {}: {}",
                operator.id, e.path, e.message
            ))
        })?;
    if let Views::Agents(ids) = &args.views {
        let spec = env.spec();
        if let Some(unknown) = ids.iter().find(|id| spec.agent_index(id).is_none()) {
            let known: Vec<&str> = spec.agents.iter().map(|a| a.id.as_str()).collect();
            return Err(CliError::Usage(format!(
                "--views: no agent `{unknown}` in environment `{}` (its agents: {})",
                operator.env,
                known.join(", ")
            )));
        }
    }
    if let Some(dir) = &args.frames {
        std::fs::create_dir_all(dir).map_err(CliError::Output)?;
        env.reset(episode.seed)
            .map_err(|e| CliError::Usage(format!("{}: {e}", operator.env)))?;
        if env.render().is_none() {
            return Err(CliError::Usage(format!(
                "environment `{}` draws no frames",
                operator.env
            )));
        }
    }
    print(&format!(
        "replaying {} (operator {}, env {}, seed {}, {} steps)\n",
        episode.episode_id, operator.id, operator.env, episode.seed, episode.steps
    ))?;
    let shown = Shown {
        frames: args.frames.as_deref(),
        marked: episode.human_agents(env.spec()),
        views: &args.views,
    };
    match replay(env.as_mut(), &episode, &steps, experiment.max_steps, shown) {
        Ok(summary) => print(&format!(
            "replay matches the records: {} steps, {} step records\n",
            summary.steps, summary.records
        )),
        Err(e) => Err(CliError::Replay(e)),
    }
}

/// The unit of `episode_id` in `run` and its roll-up, if it is complete.
fn complete_unit(
    run: &RunDir,
    records: &Records,
    episode_id: &str,
) -> Result<(Unit, EpisodeRecord), CliError> {
    let unknown = |why: &str| {
        let example = records
            .episodes()
            .ok()
            .and_then(|episodes| episodes.into_iter().next())
            .map_or_else(String::new, |e| format!(" (e.g. `{}`)", e.episode_id));
        CliError::Usage(format!(
            "episode `{episode_id}` {why} in run {}{example}",
            run.path().display()
        ))
    };
    let unit = episode_id
        .strip_prefix(&run.manifest().run_id)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.rsplit_once("-ep"))
        .and_then(|(operator, index)| Some(Unit::new(operator, index.parse().ok()?)))
        .filter(|unit| {
            run.manifest()
                .experiment
                .operators
                .iter()
                .any(|o| o.id == unit.operator_id)
                && unit.episode_index < run.manifest().experiment.episodes
        })
        .ok_or_else(|| unknown("is not an episode id"))?;
    match records.episode(&unit)? {
        Some(episode) => Ok((unit, episode)),
        None => Err(unknown("is not complete")),
    }
}

/// Prints each step's text views (of the agents asked for) and records, and writes its
/// frame when asked.
struct Shown<'a> {
    frames: Option<&'a Path>,
    /// The agents a person played, marked on the frames as the page marked them.
    marked: Vec<usize>,
    views: &'a Views,
}

impl Shown<'_> {
    fn write_frame(&self, env: &dyn Environment, index: u32) -> Result<(), String> {
        let Some(dir) = self.frames else {
            return Ok(());
        };
        let path = dir.join(format!("step-{index:06}.png"));
        let (frame, _) = render_marked_or_plain(env, &self.marked)
            .ok_or_else(|| format!("{}: no frame at step {index}", env.spec().name))?;
        let png = frame.to_png().map_err(|e| format!("step {index}: {e}"))?;
        std::fs::write(&path, png).map_err(|e| format!("{}: {e}", path.display()))
    }
}

impl ReplayObserver for Shown<'_> {
    fn before_step(
        &mut self,
        env: &dyn Environment,
        step_index: u32,
        records: &[StepRecord],
    ) -> Result<(), String> {
        if step_index == 0 {
            self.write_frame(env, 0)?;
        }
        let mut out = format!("\n== step {step_index}\n");
        let shown = records
            .iter()
            .filter(|r| r.action.is_some() && self.views.shows(&r.agent_id));
        for record in shown {
            let Some(agent) = env.spec().agent_index(&record.agent_id) else {
                continue;
            };
            let want = ObsRequest {
                text: true,
                ..ObsRequest::MASK_ONLY
            };
            let text = env.observe(agent, want).text;
            let _ = writeln!(out, "-- {} sees:", record.agent_id);
            for line in text.as_deref().unwrap_or("(no text view)").lines() {
                let _ = writeln!(out, "   {line}");
            }
        }
        print(&out).map_err(|e| e.to_string())
    }

    fn after_step(&mut self, env: &dyn Environment, step: &ReplayedStep<'_>) -> Result<(), String> {
        let mut out = String::new();
        for record in step.records {
            let action = match (record.action, &record.action_label) {
                (Some(a), Some(label)) => format!("{a} {label}"),
                (Some(a), None) => env
                    .spec()
                    .action_labels
                    .get(a as usize)
                    .map_or_else(|| a.to_string(), |label| format!("{a} {label}")),
                (None, _) => "-".to_owned(),
            };
            let _ = write!(
                out,
                "   {:<10} action {action:<14} reward {}",
                record.agent_id, record.reward
            );
            for (flag, set) in [
                ("terminated", record.terminated),
                ("truncated", record.truncated),
            ] {
                if set {
                    let _ = write!(out, " {flag}");
                }
            }
            out.push('\n');
        }
        print(&out).map_err(|e| e.to_string())?;
        self.write_frame(env, step.step_index + 1)
    }
}
