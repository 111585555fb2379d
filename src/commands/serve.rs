//! `mosaic serve [EXPERIMENT]`: the browser UI — an experiment's operator configurations
//! side by side (Step All, Reset All, human players) and the recorded runs.

use super::CliError;
use mosaic::experiment_file::ExperimentFile;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Serves the browser UI.
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The experiment file whose operator configurations are shown side by side.
    pub experiment: Option<PathBuf>,
    /// Address to listen on; anything but a loopback address needs a token.
    #[arg(long, default_value = mosaic_web::DEFAULT_BIND)]
    pub bind: SocketAddr,
    /// The token every request must carry (default: the MOSAIC_TOKEN variable).
    #[arg(long)]
    pub token: Option<String>,
    /// Directory of recorded runs: the runs browser lists them, and the experiment's
    /// episodes are recorded into a new run here (default: `runs`).
    #[arg(long)]
    pub runs: Option<PathBuf>,
    /// Do not record the experiment's episodes.
    #[arg(long)]
    pub no_record: bool,
    /// Run id of the recording (default: the experiment name, `manual` and the UTC start
    /// time).
    #[arg(long, conflicts_with = "no_record")]
    pub run_id: Option<String>,
}

/// Serves until stopped; a local model server started for LLM agents stops with it.
pub(crate) fn run(args: ServeArgs) -> Result<(), CliError> {
    let families = mosaic::families::Families::default();
    let mut config = mosaic_web::ServeConfig::new(
        mosaic::experiment::default_envs(),
        mosaic::experiment::default_deciders(&families),
    );
    let file = args
        .experiment
        .as_deref()
        .map(ExperimentFile::load)
        .transpose()?;
    config.experiment = file.as_ref().map(|f| f.spec.clone());
    config.bind = args.bind;
    config.token = mosaic_web::resolve_token(args.token);
    config.record = match &file {
        Some(file) if !args.no_record => {
            let runs = args.runs.clone().unwrap_or_else(|| PathBuf::from("runs"));
            std::fs::create_dir_all(&runs).map_err(|source| CliError::RunsDir {
                path: runs.clone(),
                source,
            })?;
            Some(mosaic::manual::record_config(
                &file.spec,
                &runs,
                args.run_id,
            ))
        }
        _ => None,
    };
    config.runs_dir = args
        .runs
        .or_else(|| Some(PathBuf::from("runs")).filter(|d| d.is_dir()));
    let served = actix_rt::System::new().block_on(async move {
        let served = match mosaic_web::start(config).await {
            Ok(server) => {
                eprintln!("mosaic: serving on {} (Ctrl-C stops)", server.login_url());
                if let Some((run_id, dir)) = server.recording() {
                    eprintln!("mosaic: recording run {run_id} into {}", dir.display());
                }
                server.run().await
            }
            Err(error) => Err(error),
        };
        families.shutdown().await;
        served
    });
    match (served, &file) {
        (Ok(()), _) => Ok(()),
        // Located in the file, like every other error of the experiment file.
        (Err(mosaic_web::WebError::Experiment(error)), Some(file)) => {
            Err(file.error_at(&error).into())
        }
        (Err(error), _) => Err(CliError::Serve(error)),
    }
}
