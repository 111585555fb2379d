//! `mosaic cluster slurm` on a real Slurm: the test starts a one-node cluster of its own
//! (munged, slurmctld and slurmd on a `slurm.conf` in a temporary directory, stopped at the
//! end), submits a 4-shard job array and its merge job, and checks the merged run against
//! the unsharded one. Then preemption: a running shard is cancelled (`scancel`), its task
//! resubmitted (`sbatch --array=K`), and the merged run is still the unsharded one.
//!
//! Needs Debian's `slurm-wlm` and `munge` (`scripts/setup/slurm.sh` installs them); without
//! them the test says so and passes.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{logged_episodes, succeed};
use mosaic_test_kit::records::sorted_records;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn experiment(episodes: u32) -> String {
    format!(
        r#"
name = "slurm"
episodes = {episodes}
max_steps = 150
parallelism = 1
seeds = {{ plan = "procedural", base = 21 }}

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = {{ "*" = {{ kind = "random" }} }}

[[operators]]
id = "board"
env = "tic-tac-toe"
agents = {{ "*" = {{ kind = "scripted" }} }}
"#
    )
}

/// Where a program is: on the PATH, or in `/usr/sbin` (not on every user's PATH).
fn program(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

fn short_hostname() -> String {
    let output = Command::new("hostname")
        .arg("-s")
        .output()
        .expect("hostname");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A one-node Slurm cluster with its own munge, stopped when dropped.
struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<Child>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let munge = dir.join("munge");
        std::fs::create_dir_all(&munge).unwrap();
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let key = munge.join("key");
        std::fs::copy("/etc/munge/munge.key", &key).expect("munge's key (is munge installed?)");
        set_mode(&munge, 0o700);
        set_mode(&key, 0o600);
        let socket = munge.join("socket");
        let mut cluster = Cluster {
            dir: dir.to_owned(),
            conf: dir.join("slurm.conf"),
            daemons: Vec::new(),
        };
        cluster.spawn(
            Command::new(program("munged").expect("munged"))
                .args(["--foreground", "--force"])
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--log-file={}", munge.join("log").display()))
                .arg(format!("--pid-file={}", munge.join("pid").display()))
                .arg(format!("--seed-file={}", munge.join("seed").display())),
        );
        let started = Instant::now();
        while !socket.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "munged never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let host = short_hostname();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let path = |name: &str| dir.join(name).display().to_string();
        let conf = format!(
            "ClusterName=mosaictest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
             SlurmctldPort={}\nSlurmdPort={}\nAuthType=auth/munge\nCredType=cred/munge\n\
             AuthInfo=socket={}\nStateSaveLocation={}\nSlurmdSpoolDir={}\n\
             SlurmctldPidFile={}\nSlurmdPidFile={}\nSlurmctldLogFile={}\nSlurmdLogFile={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
             SchedulerType=sched/backfill\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
             ReturnToService=2\nMpiDefault=none\nKillWait=2\n\
             NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            socket.display(),
            path("state"),
            path("spool"),
            path("slurmctld.pid"),
            path("slurmd.pid"),
            path("slurmctld.log"),
            path("slurmd.log"),
        );
        std::fs::write(&cluster.conf, conf).unwrap();
        let slurmctld = program("slurmctld").expect("slurmctld");
        let slurmd = program("slurmd").expect("slurmd");
        cluster.spawn(Command::new(slurmctld).args(["-D", "-i"]));
        cluster.spawn(Command::new(slurmd).arg("-D"));
        let started = Instant::now();
        loop {
            let state = cluster.tool("sinfo").args(["-h", "-o", "%T"]).output();
            if state.is_ok_and(|s| String::from_utf8_lossy(&s.stdout).trim() == "idle") {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the node never became idle; see {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        cluster
    }

    fn spawn(&mut self, command: &mut Command) {
        let child = command
            .env("SLURM_CONF", &self.conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("a daemon starts");
        self.daemons.push(child);
    }

    /// A Slurm client command (sbatch, squeue, ...) or `mosaic`, talking to this cluster.
    fn tool(&self, name: &str) -> Command {
        let mut command = Command::new(program(name).unwrap_or_else(|| PathBuf::from(name)));
        command.env("SLURM_CONF", &self.conf);
        command
    }

    fn mosaic(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mosaic"));
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Jobs (or array tasks) of `ids` still queued or running.
    fn queued(&self, ids: &[&str]) -> String {
        let output = self
            .tool("squeue")
            .args(["-h", "-o", "%i %T %r", "-j", &ids.join(",")])
            .output()
            .expect("squeue");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn wait_until_gone(&self, ids: &[&str]) {
        let started = Instant::now();
        while !self.queued(ids).trim().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "jobs {ids:?} still queued: {}; logs in {}",
                self.queued(ids),
                self.dir.display()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The daemons in reverse order: slurmd, slurmctld, then munged.
        for daemon in self.daemons.iter_mut().rev() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(daemon.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = daemon.wait();
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The job ids `mosaic cluster slurm --submit` printed: the array's, then the merge's.
fn submitted(said: &str) -> (String, String) {
    let line = said
        .lines()
        .find(|l| l.starts_with("submitted:"))
        .unwrap_or_else(|| panic!("nothing submitted: {said}"));
    let ids: Vec<String> = line
        .split_whitespace()
        .map(|w| w.trim_end_matches(','))
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()) && !w.is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(ids.len(), 2, "{line}");
    (ids[0].clone(), ids[1].clone())
}

/// Writes the experiment, runs it unsharded, and answers (experiment file, unsharded run).
fn unsharded(root: &Path, name: &str, episodes: u32, cluster: &Cluster) -> (PathBuf, PathBuf) {
    let file = root.join(format!("{name}.toml"));
    std::fs::write(&file, experiment(episodes)).unwrap();
    let whole = root.join(format!("{name}-whole"));
    succeed(
        cluster
            .mosaic()
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(&whole)
            .args(["--run-id", name]),
    );
    (file, whole.join(name))
}

fn submit(cluster: &Cluster, file: &Path, out: &Path, run_id: &str) -> (String, String) {
    submitted(&succeed(
        cluster
            .mosaic()
            .args(["cluster", "slurm"])
            .arg(file)
            .arg("--out")
            .arg(out)
            .args(["--run-id", run_id, "--nodes", "4", "--submit"]),
    ))
}

#[test]
fn a_4_shard_array_on_slurm_merges_to_the_unsharded_run_also_after_a_cancelled_task() {
    let (Some(_), Some(_), Some(_)) = (program("slurmctld"), program("slurmd"), program("munged"))
    else {
        eprintln!(
            "SKIPPED: Slurm is not installed (slurmctld, slurmd, munged); scripts/setup/slurm.sh installs it"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cluster = Cluster::start(&root.join("cluster"));

    // A 4-shard array and its merge job.
    let (file, whole) = unsharded(root, "sweep", 28, &cluster);
    let out = root.join("runs");
    let (array, merge) = submit(&cluster, &file, &out, "sweep");
    cluster.wait_until_gone(&[&array, &merge]);
    let merged = out.join("sweep");
    assert!(
        merged.join("run.json").exists(),
        "no merged run; merge log: {}",
        std::fs::read_to_string(out.join("sweep.jobs/merge.log")).unwrap_or_default()
    );
    assert!(
        sorted_records(&merged) == sorted_records(&whole),
        "records differ"
    );

    // Preemption: shard 1 is cancelled mid-run; its merge job then never runs.
    let (file, whole) = unsharded(root, "preempted", 200, &cluster);
    let out = root.join("preempted-runs");
    let (array, merge) = submit(&cluster, &file, &out, "preempted");
    let shard = out.join("preempted.shard-1-of-4");
    let started = Instant::now();
    while logged_episodes(&shard) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "shard 1 never ran: {}",
            cluster.queued(&[&array])
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    succeed(cluster.tool("scancel").arg(format!("{array}_1")));
    cluster.wait_until_gone(&[&format!("{array}_1")]);
    let listed = succeed(cluster.mosaic().arg("runs").arg(&shard));
    assert!(listed.contains("interrupted"), "{listed}");
    // The other shards finish; the merge waits on a dependency that can no longer be met.
    let started = Instant::now();
    while !cluster.queued(&[&array]).trim().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "shards never ended"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(!out.join("preempted").exists());
    succeed(cluster.tool("scancel").arg(&merge));

    // The task resubmitted resumes the shard; the merge job submitted again merges.
    let jobs = out.join("preempted.jobs");
    let again = succeed(
        cluster
            .tool("sbatch")
            .args(["--parsable", "--array=1"])
            .arg(jobs.join("shards.sbatch")),
    );
    let again = again
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    let merge = succeed(
        cluster
            .tool("sbatch")
            .arg("--parsable")
            .arg(format!("--dependency=afterok:{again}"))
            .arg(jobs.join("merge.sbatch")),
    );
    let merge = merge
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_owned();
    cluster.wait_until_gone(&[&again, &merge]);
    let merged = out.join("preempted");
    assert!(
        merged.join("run.json").exists(),
        "no merged run; logs: {} {}",
        std::fs::read_to_string(jobs.join("shard-1.log")).unwrap_or_default(),
        std::fs::read_to_string(jobs.join("merge.log")).unwrap_or_default()
    );
    assert!(
        sorted_records(&merged) == sorted_records(&whole),
        "records differ after the cancelled task"
    );
}
