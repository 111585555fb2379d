//! `mosaic cluster slurm EXP --nodes N`: job files that run a run's shards on a cluster
//! engine and merge them (see `docs/scale-out.md`).
//!
//! The engine schedules; each job runs one `mosaic` on one machine. The files are written
//! into a job directory beside the run directories, with a copy of the experiment, so that
//! editing the experiment file afterwards changes nothing in a submitted run.

use super::{CliError, print};
use mosaic::experiment_file::ExperimentFile;
use mosaic::run::{shard_dir_name, shard_run_id};
use mosaic_core::record::Shard;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes job files for a cluster engine.
#[derive(Debug, clap::Args)]
pub(crate) struct ClusterArgs {
    #[command(subcommand)]
    pub engine: Engine,
}

/// The cluster engines.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Engine {
    /// A Slurm job array running the shards and a merge job that starts once they all
    /// succeeded (`--dependency=afterok`); with `--submit`, submits both with `sbatch`.
    Slurm(SlurmArgs),
    /// Kubernetes manifests: a ConfigMap with the experiment, an Indexed Job whose
    /// completion index is the shard, and a merge Job that waits for every shard and merges,
    /// all on one shared volume (a ReadWriteMany claim). Apply with `kubectl apply -f`.
    K8s(K8sArgs),
}

/// `mosaic cluster k8s`.
#[derive(Debug, clap::Args)]
pub(crate) struct K8sArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Run id (default: the experiment's name and identity, as with `mosaic run --shard`).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Shards: completions of the Indexed Job, run at once.
    #[arg(long)]
    pub shards: u32,
    /// The container image, with `mosaic` on its PATH.
    #[arg(long)]
    pub image: String,
    /// The PersistentVolumeClaim (ReadWriteMany) every pod mounts for the run directories.
    #[arg(long)]
    pub volume_claim: String,
    /// Where the claim is mounted in the containers.
    #[arg(long, default_value = "/runs")]
    pub mount: PathBuf,
    /// Where the ConfigMap with the experiment is mounted in the containers.
    #[arg(long, default_value = "/config")]
    pub config_mount: PathBuf,
    /// CPUs requested per shard; each shard runs that many episodes at once.
    #[arg(long, default_value_t = 1)]
    pub cpus: u32,
    /// Namespace of the objects (default: kubectl's).
    #[arg(long)]
    pub namespace: Option<String>,
    /// An environment variable of every container, `NAME=VALUE` (e.g. the URL of an
    /// in-cluster LLM server the experiment's backends read); repeatable.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The manifest file to write (default: `{run_id}.k8s.json`).
    #[arg(long)]
    pub write: Option<PathBuf>,
}

/// What every engine's job files need.
#[derive(Debug, clap::Args)]
pub(crate) struct JobArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Parent directory of the run directories, on a file system every node sees.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Run id (default: the experiment's name and identity, as with `mosaic run --shard`).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Where the job files go (default: `OUT/{run_id}.jobs`).
    #[arg(long)]
    pub jobs: Option<PathBuf>,
    /// The `mosaic` program the jobs run (default: this one).
    #[arg(long)]
    pub mosaic: Option<PathBuf>,
}

/// `mosaic cluster slurm`.
#[derive(Debug, clap::Args)]
pub(crate) struct SlurmArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Shards: tasks of the job array, one machine (or one slot of one) each.
    #[arg(long)]
    pub nodes: u32,
    /// CPUs per shard (`--cpus-per-task`); each shard runs that many episodes at once.
    #[arg(long, default_value_t = 1)]
    pub cpus_per_task: u32,
    /// Time limit per shard (`--time`, e.g. `04:00:00`).
    #[arg(long)]
    pub time: Option<String>,
    /// Partition (`--partition`).
    #[arg(long)]
    pub partition: Option<String>,
    /// Submit the two jobs with `sbatch` (else only write them).
    #[arg(long)]
    pub submit: bool,
}

/// Job files that could not be written or submitted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClusterError {
    /// The experiment file cannot be read.
    #[error(transparent)]
    Experiment(#[from] mosaic::experiment_file::FileError),
    /// The shard count is not one.
    #[error("--nodes: {0}")]
    Shards(#[from] mosaic_core::record::ShardError),
    /// A file or directory could not be written (or this program found).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// An `--env` that is not `NAME=VALUE`.
    #[error("--env `{0}`: write NAME=VALUE")]
    Env(String),
    /// `sbatch` could not be started.
    #[error("cannot run sbatch: {0}")]
    NoSbatch(#[source] std::io::Error),
    /// `sbatch` refused a job.
    #[error("sbatch {script} failed ({status}): {stderr}", script = script.display())]
    Refused {
        /// The batch script.
        script: PathBuf,
        /// How sbatch exited.
        status: std::process::ExitStatus,
        /// What it said.
        stderr: String,
    },
}

impl ClusterError {
    /// Whether the error is about the input (exit code 2).
    pub(crate) fn is_bad_input(&self) -> bool {
        matches!(
            self,
            ClusterError::Experiment(_) | ClusterError::Shards(_) | ClusterError::Env(_)
        )
    }
}

/// Where the job files of a run are.
struct Jobs {
    dir: PathBuf,
    experiment: PathBuf,
    out: PathBuf,
    run_id: String,
    mosaic: PathBuf,
}

/// Writes the job files, and submits them when asked.
pub(crate) fn run(args: &ClusterArgs) -> Result<(), CliError> {
    match &args.engine {
        Engine::Slurm(slurm) => write_slurm(slurm).map_err(CliError::from),
        Engine::K8s(k8s) => write_k8s(k8s).map_err(CliError::from),
    }
}

/// Absolute `path` (jobs run in other working directories, on other machines).
fn absolute(path: &Path) -> Result<PathBuf, ClusterError> {
    std::path::absolute(path).map_err(io_error(path))
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ClusterError + '_ {
    move |source| ClusterError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Checks the experiment and the shard count, copies the experiment into the job directory.
fn prepare(job: &JobArgs, shards: u32) -> Result<Jobs, ClusterError> {
    Shard::new(0, shards)?;
    let file = ExperimentFile::load(&job.experiment)?;
    let run_id = job
        .run_id
        .clone()
        .unwrap_or_else(|| shard_run_id(&file.spec));
    let out = absolute(&job.out)?;
    let dir = match &job.jobs {
        Some(dir) => absolute(dir)?,
        None => out.join(format!("{run_id}.jobs")),
    };
    std::fs::create_dir_all(&dir).map_err(io_error(&dir))?;
    let name = job.experiment.file_name().map_or_else(
        || "experiment.toml".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let experiment = dir.join(name);
    std::fs::copy(&job.experiment, &experiment).map_err(io_error(&experiment))?;
    let mosaic = match &job.mosaic {
        Some(path) => path.clone(),
        None => std::env::current_exe().map_err(io_error(Path::new("mosaic")))?,
    };
    Ok(Jobs {
        dir,
        experiment,
        out,
        run_id,
        mosaic,
    })
}

/// A word quoted for the shell.
fn quoted(word: impl AsRef<str>) -> String {
    format!("'{}'", word.as_ref().replace('\'', r"'\''"))
}

fn quoted_path(path: &Path) -> String {
    quoted(path.to_string_lossy())
}

/// The shell lines that run or finish shard `$index` of `count` (a variable the engine sets),
/// with `$cpus` episodes at once: a new shard is run, an unfinished one (the task was
/// preempted, killed or requeued) is resumed, a finished one is left alone.
fn shard_body(jobs: &Jobs, index: &str, count: u32, cpus: &str) -> String {
    let mosaic = quoted_path(&jobs.mosaic);
    let out = quoted_path(&jobs.out);
    let example = shard_dir_name(&jobs.run_id, Shard { index: 0, count });
    let (prefix, suffix) = example
        .split_once(".shard-0-")
        .map_or((example.as_str(), ""), |(p, s)| (p, s));
    let mut body = String::new();
    let _ = writeln!(body, "set -eu");
    let _ = writeln!(
        body,
        "shard={out}/{}\"{index}\"{}",
        quoted(format!("{prefix}.shard-")),
        quoted(format!("-{suffix}"))
    );
    let _ = writeln!(body, "if [ -f \"$shard/run.json\" ]; then");
    let _ = writeln!(
        body,
        "    if {mosaic} runs \"$shard\" | grep -q ' complete '; then exit 0; fi"
    );
    let _ = writeln!(
        body,
        "    exec {mosaic} resume \"$shard\" --parallelism \"{cpus}\""
    );
    let _ = writeln!(body, "fi");
    let _ = writeln!(
        body,
        "exec {mosaic} run {} --out {out} --run-id {} --shard \"{index}/{count}\" --parallelism \"{cpus}\"",
        quoted_path(&jobs.experiment),
        quoted(&jobs.run_id),
    );
    body
}

/// The merge of every shard into `OUT/{run_id}`, unless it is there already.
fn merge_line(jobs: &Jobs, count: u32) -> String {
    let shards: Vec<String> = (0..count)
        .map(|index| {
            quoted_path(
                &jobs
                    .out
                    .join(shard_dir_name(&jobs.run_id, Shard { index, count })),
            )
        })
        .collect();
    let merged = quoted_path(&jobs.out.join(&jobs.run_id));
    // Merged already (a job run again): nothing to do.
    format!(
        "if [ -f {merged}/run.json ]; then exit 0; fi\nexec {} merge {} --out {merged}\n",
        quoted_path(&jobs.mosaic),
        shards.join(" "),
    )
}

/// The two Slurm batch scripts: the shards' job array, and the merge.
fn slurm_scripts(args: &SlurmArgs, jobs: &Jobs) -> (String, String) {
    let mut options = String::new();
    if let Some(time) = &args.time {
        let _ = writeln!(options, "#SBATCH --time={time}");
    }
    if let Some(partition) = &args.partition {
        let _ = writeln!(options, "#SBATCH --partition={partition}");
    }
    let logs = jobs.dir.display();
    let shards = format!(
        "#!/bin/sh\n#SBATCH --job-name=mosaic-{id}\n#SBATCH --array=0-{last}\n#SBATCH --cpus-per-task={cpus}\n#SBATCH --output={logs}/shard-%a.log\n{options}{body}",
        id = jobs.run_id,
        last = args.nodes - 1,
        cpus = args.cpus_per_task,
        body = shard_body(
            jobs,
            "$SLURM_ARRAY_TASK_ID",
            args.nodes,
            "${SLURM_CPUS_PER_TASK:-1}"
        ),
    );
    let merge = format!(
        "#!/bin/sh\n#SBATCH --job-name=mosaic-{id}-merge\n#SBATCH --cpus-per-task=1\n#SBATCH --output={logs}/merge.log\n{options}set -eu\n{merge}",
        id = jobs.run_id,
        merge = merge_line(jobs, args.nodes),
    );
    (shards, merge)
}

fn write_slurm(args: &SlurmArgs) -> Result<(), ClusterError> {
    let jobs = prepare(&args.job, args.nodes)?;
    let (shards, merge) = slurm_scripts(args, &jobs);
    let shards_path = jobs.dir.join("shards.sbatch");
    let merge_path = jobs.dir.join("merge.sbatch");
    for (path, text) in [(&shards_path, &shards), (&merge_path, &merge)] {
        std::fs::write(path, text).map_err(io_error(path))?;
    }
    let mut said = format!(
        "run {}: {} shards into {}\n  {}\n  {}\n",
        jobs.run_id,
        args.nodes,
        jobs.out.display(),
        shards_path.display(),
        merge_path.display()
    );
    if args.submit {
        let array = sbatch(&shards_path, None)?;
        let merge_job = sbatch(&merge_path, Some(&format!("--dependency=afterok:{array}")))?;
        let _ = writeln!(
            said,
            "submitted: shards job {array}, merge job {merge_job} (after the shards)"
        );
    } else {
        let _ = writeln!(
            said,
            "submit: array=$(sbatch --parsable {}) && sbatch --dependency=afterok:$array {}",
            quoted_path(&shards_path),
            quoted_path(&merge_path)
        );
    }
    // A closed standard output is not worth failing a submitted run over.
    let _ = print(&said);
    Ok(())
}

/// Runs `sbatch --parsable [OPTION] SCRIPT`; answers the job id.
fn sbatch(script: &Path, option: Option<&str>) -> Result<String, ClusterError> {
    let output = Command::new("sbatch")
        .arg("--parsable")
        .args(option)
        .arg(script)
        .output()
        .map_err(ClusterError::NoSbatch)?;
    if !output.status.success() {
        return Err(ClusterError::Refused {
            script: script.to_owned(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    // `--parsable` prints `id` or `id;cluster`.
    let stdout = String::from_utf8_lossy(&output.stdout);
    Ok(stdout
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned())
}

/// Object names: lower-case letters, digits and `-`, at most 52 characters (a Job's name
/// becomes a label of its pods, with a suffix).
fn object_name(run_id: &str, suffix: &str) -> String {
    let mut name: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name.truncate(52 - suffix.len() - 1);
    format!("{}-{suffix}", name.trim_matches('-'))
}

fn write_k8s(args: &K8sArgs) -> Result<(), ClusterError> {
    use serde_json::json;
    Shard::new(0, args.shards)?;
    let file = ExperimentFile::load(&args.experiment)?;
    let run_id = args
        .run_id
        .clone()
        .unwrap_or_else(|| shard_run_id(&file.spec));
    let experiment_name = args.experiment.file_name().map_or_else(
        || "experiment.toml".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let text = std::fs::read_to_string(&args.experiment).map_err(io_error(&args.experiment))?;
    // The paths the containers see.
    let jobs = Jobs {
        dir: args.mount.clone(),
        experiment: args.config_mount.join(&experiment_name),
        out: args.mount.clone(),
        run_id: run_id.clone(),
        mosaic: PathBuf::from("mosaic"),
    };
    let mut env = Vec::new();
    for pair in &args.env {
        let (name, value) = pair
            .split_once('=')
            .filter(|(name, _)| !name.is_empty())
            .ok_or_else(|| ClusterError::Env(pair.clone()))?;
        env.push(json!({"name": name, "value": value}));
    }
    let config = object_name(&run_id, "experiment");
    let metadata = |name: String| {
        let mut metadata = json!({"name": name, "labels": {"app.kubernetes.io/name": "mosaic", "mosaic/run": object_name(&run_id, "run")}});
        if let Some(namespace) = &args.namespace {
            metadata["namespace"] = json!(namespace);
        }
        metadata
    };
    let pod = |script: String, cpus: u32| {
        json!({
            "restartPolicy": "OnFailure",
            "containers": [{
                "name": "mosaic",
                "image": args.image,
                "command": ["/bin/sh", "-c", script],
                "env": env,
                "resources": {"requests": {"cpu": cpus.to_string()}},
                "volumeMounts": [
                    {"name": "runs", "mountPath": args.mount.to_string_lossy()},
                    {"name": "experiment", "mountPath": args.config_mount.to_string_lossy(), "readOnly": true}
                ]
            }],
            "volumes": [
                {"name": "runs", "persistentVolumeClaim": {"claimName": args.volume_claim}},
                {"name": "experiment", "configMap": {"name": config}}
            ]
        })
    };
    let shards = args.shards;
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(config.clone()),
        "data": {experiment_name: text}
    });
    let shard_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(object_name(&run_id, "shards")),
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            "backoffLimit": shards.saturating_mul(4),
            "template": {"spec": pod(
                shard_body(&jobs, "$JOB_COMPLETION_INDEX", shards, &args.cpus.to_string()),
                args.cpus,
            )}
        }
    });
    let merge_job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(object_name(&run_id, "merge")),
        "spec": {
            "backoffLimit": 4,
            "template": {"spec": pod(merge_when_complete(&jobs, shards), 1)}
        }
    });
    let mut manifest = String::new();
    for object in [config_map, shard_job, merge_job] {
        let text = serde_json::to_string_pretty(&object).map_err(|e| ClusterError::Io {
            path: PathBuf::from("manifest"),
            source: std::io::Error::other(e),
        })?;
        let _ = writeln!(manifest, "---\n{text}");
    }
    let path = args
        .write
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{run_id}.k8s.json")));
    std::fs::write(&path, manifest).map_err(io_error(&path))?;
    let _ = print(&format!(
        "run {run_id}: {shards} shards on claim {}\n  {}\napply: kubectl apply -f {}\n",
        args.volume_claim,
        path.display(),
        quoted_path(&path)
    ));
    Ok(())
}

/// The shell lines of the merge Job: wait until every shard is complete (Kubernetes has no
/// dependencies between Jobs), then merge.
fn merge_when_complete(jobs: &Jobs, count: u32) -> String {
    let mosaic = quoted_path(&jobs.mosaic);
    let mut body = String::from("set -eu\n");
    for index in 0..count {
        let shard = quoted_path(
            &jobs
                .out
                .join(shard_dir_name(&jobs.run_id, Shard { index, count })),
        );
        let _ = writeln!(
            body,
            "until [ -f {shard}/run.json ] && {mosaic} runs {shard} | grep -q ' complete '; do sleep 10; done"
        );
    }
    body.push_str(&merge_line(jobs, count));
    body
}
