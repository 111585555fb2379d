//! Sharded runs with the real binary: `mosaic run --shard K/N` for every K, merged with
//! `mosaic merge`, gives the unsharded run's records (sorted, volatile fields aside), for
//! N = 1, 2, 4 and 7, also when a shard's process is killed (SIGKILL) mid-run and the shard
//! resumed. `mosaic merge` refuses shards of different experiments or runs, overlapping,
//! missing and unfinished shards, naming the directory and the units. `mosaic runs` shows
//! each shard and its progress.

// Shared by the binary's tests; each uses part of it.
#[allow(dead_code)]
#[path = "support/cli.rs"]
mod cli;

use cli::{logged_episodes, mosaic, succeed, text};
use mosaic_recorder::RunDir;
use mosaic_test_kit::records::sorted_records;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// 2 configurations × 28 episodes: 56 units, which no shard count here divides evenly but 4
/// and 7.
const EXPERIMENT: &str = r#"
name = "sharding"
episodes = 28
max_steps = 150
parallelism = 2
seeds = { plan = "procedural", base = 11 }

[[operators]]
id = "pitch"
env = "soccer-2v2"
agents = { "*" = { kind = "random" } }

[[operators]]
id = "board"
env = "tic-tac-toe"
agents = { "*" = { kind = "scripted" } }
"#;

const RUN_ID: &str = "sharded";

/// `mosaic run FILE --out OUT --run-id RUN_ID [--shard K/N]`.
fn run_command(file: &Path, out: &Path, shard: Option<(u32, u32)>) -> Command {
    let mut command = mosaic();
    command
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(["--run-id", RUN_ID]);
    if let Some((index, count)) = shard {
        command.arg("--shard").arg(format!("{index}/{count}"));
    }
    command
}

fn shard_dir(out: &Path, index: u32, count: u32) -> PathBuf {
    out.join(format!("{RUN_ID}.shard-{index}-of-{count}"))
}

/// `mosaic merge SHARDS --out OUT`.
fn merge_command(shards: &[PathBuf], out: &Path) -> Command {
    let mut command = mosaic();
    command.arg("merge").args(shards).arg("--out").arg(out);
    command
}

/// Checks that the merged run at `merged` holds the records of the unsharded run at `whole`,
/// and that its store agrees and reports and replays like any run's.
fn assert_merged_like_whole(merged: &Path, whole: &Path, label: &str) {
    let (steps, episodes) = sorted_records(merged);
    let (whole_steps, whole_episodes) = sorted_records(whole);
    assert_eq!(episodes.len(), 56, "{label}");
    assert!(steps == whole_steps, "{label}: step records differ");
    assert!(
        episodes == whole_episodes,
        "{label}: episode records differ"
    );
    let run = RunDir::open(merged).unwrap();
    assert_eq!(run.manifest().shard, None, "{label}");
    let store = run.store().unwrap();
    assert!(store.remaining_units().unwrap().is_empty(), "{label}");
    assert!(run.check_consistency(&store).unwrap().is_empty(), "{label}");
    drop(store);
    succeed(mosaic().arg("report").arg(merged));
    succeed(
        mosaic()
            .arg("replay")
            .arg(merged)
            .args(["--episode", &format!("{RUN_ID}-pitch-ep000027")]),
    );
    succeed(mosaic().arg("compare").arg(merged).arg(whole));
}

/// Starts shard `index` of `count`, kills it (SIGKILL) once `episodes` episodes are logged.
fn run_and_kill(file: &Path, out: &Path, index: u32, count: u32, episodes: usize) {
    let mut child = run_command(file, out, Some((index, count)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mosaic run starts");
    let started = Instant::now();
    let dir = shard_dir(out, index, count);
    while logged_episodes(&dir) < episodes {
        assert!(started.elapsed() < Duration::from_secs(30), "no episodes");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the shard ended ({status}) before it was killed");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    file: PathBuf,
    whole: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    let file = root.join("sharding.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    succeed(&mut run_command(&file, &root.join("whole"), None));
    Setup {
        whole: root.join("whole").join(RUN_ID),
        _dir: dir,
        root,
        file,
    }
}

#[test]
fn merged_shards_hold_the_unsharded_records_for_1_2_4_and_7_shards() {
    let setup = setup();
    for count in [1, 2, 4, 7] {
        let out = setup.root.join(format!("shards-{count}"));
        for index in 0..count {
            succeed(&mut run_command(&setup.file, &out, Some((index, count))));
        }
        let shards: Vec<PathBuf> = (0..count).map(|k| shard_dir(&out, k, count)).collect();
        // Each shard holds its share: the 56 units split into ranges differing by one at most.
        let listed = succeed(mosaic().arg("runs").arg(&out));
        for index in 0..count {
            let share = 56 * (index + 1) / count - 56 * index / count;
            assert!(
                listed.lines().any(|l| l.contains("complete")
                    && l.contains(&format!(" {share}/{share} "))
                    && l.contains(&format!(" {index}/{count} "))),
                "shard {index}/{count} in\n{listed}"
            );
        }
        let merged = setup.root.join(format!("merged-{count}"));
        let said = succeed(&mut merge_command(&shards, &merged));
        assert!(said.contains("56 units"), "{said}");
        assert_merged_like_whole(&merged, &setup.whole, &format!("{count} shards"));
    }
}

#[test]
fn a_killed_shard_resumes_and_the_merged_run_holds_the_unsharded_records() {
    let setup = setup();
    let out = setup.root.join("shards");
    for index in [0, 2, 3] {
        succeed(&mut run_command(&setup.file, &out, Some((index, 4))));
    }
    run_and_kill(&setup.file, &out, 1, 4, 2);
    let killed = shard_dir(&out, 1, 4);
    let shards: Vec<PathBuf> = (0..4).map(|k| shard_dir(&out, k, 4)).collect();

    // The killed shard lists as interrupted, with its progress over its share.
    let listed = succeed(mosaic().arg("runs").arg(&out));
    let line = listed
        .lines()
        .find(|l| l.contains(" 1/4 "))
        .unwrap_or_else(|| panic!("no shard 1/4 in\n{listed}"));
    assert!(
        line.contains("interrupted") && line.contains("/14"),
        "{line}"
    );

    // Merging it is refused, naming it and the units it lacks.
    let refused = merge_command(&shards, &setup.root.join("early"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    let said = text(&refused);
    assert!(
        said.contains(&killed.display().to_string()) && said.contains("unfinished"),
        "{said}"
    );
    assert!(said.contains("/ep0000"), "{said}");
    assert!(!setup.root.join("early").exists());

    // `mosaic run` on it points at resume; resume finishes it.
    let again = run_command(&setup.file, &out, Some((1, 4)))
        .output()
        .unwrap();
    assert!(text(&again).contains("mosaic resume"), "{}", text(&again));
    succeed(mosaic().arg("resume").arg(&killed));
    let merged = setup.root.join("merged");
    succeed(&mut merge_command(&shards, &merged));
    assert_merged_like_whole(&merged, &setup.whole, "killed and resumed shard");
}

/// Runs `mosaic merge` and checks that it refuses with exit code 2 and a message holding
/// every one of `expected`.
fn assert_refused(shards: &[PathBuf], out: &Path, expected: &[&str]) {
    let output = merge_command(shards, out).output().unwrap();
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    for part in expected {
        assert!(said.contains(part), "`{part}` not in: {said}");
    }
    assert!(!out.exists(), "{said}");
}

#[test]
fn merge_refuses_shards_that_do_not_make_one_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let file = root.join("sharding.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let other_file = root.join("other.toml");
    std::fs::write(&other_file, EXPERIMENT.replace("base = 11", "base = 12")).unwrap();
    let out = root.join("shards");
    for index in 0..3 {
        succeed(&mut run_command(&file, &out, Some((index, 3))));
    }
    let shards: Vec<PathBuf> = (0..3).map(|k| shard_dir(&out, k, 3)).collect();
    let show = |path: &Path| path.display().to_string();
    let merged = root.join("merged");

    // Another experiment (another seed plan).
    let other = root.join("other");
    succeed(&mut run_command(&other_file, &other, Some((2, 3))));
    let foreign = shard_dir(&other, 2, 3);
    assert_refused(
        &[shards[0].clone(), shards[1].clone(), foreign.clone()],
        &merged,
        &[&show(&foreign), "another experiment", &show(&shards[0])],
    );

    // The same shard twice, in two directories: overlapping units.
    let twice = root.join("twice");
    succeed(&mut run_command(&file, &twice, Some((1, 3))));
    let duplicate = shard_dir(&twice, 1, 3);
    let mut overlapping = shards.clone();
    overlapping.push(duplicate.clone());
    assert_refused(
        &overlapping,
        &merged,
        &[
            &show(&duplicate),
            &show(&shards[1]),
            "both hold",
            "pitch/ep000009",
        ],
    );
    assert_refused(
        &[shards[0].clone(), shards[0].clone()],
        &merged,
        &[&show(&shards[0]), "given twice"],
    );

    // A shard missing: its units are named.
    assert_refused(
        &shards[..2],
        &merged,
        &["board/ep000018", "shards 2 of 3 are missing"],
    );

    // Shards of another split, and a run that is not a shard.
    let split = root.join("split");
    succeed(&mut run_command(&file, &split, Some((1, 2))));
    assert_refused(
        &[shards[0].clone(), shard_dir(&split, 1, 2)],
        &merged,
        &[&show(&shard_dir(&split, 1, 2)), "one of 3 shards"],
    );
    let whole = root.join("whole");
    succeed(&mut run_command(&file, &whole, None));
    assert_refused(
        &[whole.join(RUN_ID)],
        &merged,
        &[&show(&whole.join(RUN_ID)), "not a shard"],
    );

    // Every shard: merged.
    succeed(&mut merge_command(&shards, &merged));
    assert_merged_like_whole(&merged, &whole.join(RUN_ID), "3 shards");
    // A merged run is not merged over.
    let output = merge_command(&shards, &merged).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// `mosaic run FILE --out OUT --run-id RUN_ID --pool POOL --worker WORKER --lease 1`.
fn pool_command(file: &Path, out: &Path, pool: &Path, worker: &str) -> Command {
    let mut command = run_command(file, out, None);
    command.arg("--pool").arg(pool).args([
        "--worker",
        worker,
        "--lease",
        "1",
        "--parallelism",
        "1",
    ]);
    command
}

fn pool_parts(out: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("run.json").exists())
        .collect();
    parts.sort();
    parts
}

#[test]
fn pool_workers_killed_mid_run_lose_no_unit_and_double_none() {
    let setup = setup();
    let (out, pool) = (setup.root.join("workers"), setup.root.join("pool"));
    let mut workers: Vec<std::process::Child> = ["w0", "w1", "w2", "w3"]
        .iter()
        .map(|name| {
            pool_command(&setup.file, &out, &pool, name)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("a worker starts")
        })
        .collect();
    // Two workers die (SIGKILL) once they have finished two units each.
    for (index, name) in ["w0", "w1"].iter().enumerate() {
        let dir = out.join(format!("{RUN_ID}.pool-{name}"));
        let started = Instant::now();
        while logged_episodes(&dir) < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{name} ran no unit"
            );
            assert!(
                workers[index].try_wait().unwrap().is_none(),
                "{name} ended before it was killed"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        workers[index].kill().expect("SIGKILL");
        workers[index].wait().unwrap();
    }
    // The survivors take over the units the dead held once their leases expire.
    for survivor in &mut workers[2..] {
        assert!(survivor.wait().unwrap().success());
    }
    assert_eq!(std::fs::read_dir(pool.join("done")).unwrap().count(), 56);
    let listed = succeed(mosaic().arg("runs").arg(&out));
    assert!(
        listed
            .lines()
            .any(|l| l.contains("pool:w2") && l.contains("complete")),
        "{listed}"
    );
    let parts = pool_parts(&out);
    assert_eq!(parts.len(), 4);
    let killed = RunDir::open(&parts[0]).unwrap();
    let killed_store = killed.store().unwrap();
    let kept = killed_store.completed_count();
    assert!((2..56).contains(&kept), "{kept}");
    drop(killed_store);
    let merged = setup.root.join("merged");
    let said = succeed(&mut merge_command(&parts, &merged));
    assert!(said.contains("56 units"), "{said}");
    assert_merged_like_whole(&merged, &setup.whole, "pool with two workers killed");

    // A second copy of every unit (as a worker that lost its claims would leave): merging
    // keeps one, whatever the order the parts are given in.
    std::fs::remove_dir_all(pool.join("done")).unwrap();
    std::fs::remove_dir_all(pool.join("claims")).unwrap();
    succeed(&mut pool_command(&setup.file, &out, &pool, "w9"));
    let mut parts = pool_parts(&out);
    parts.reverse();
    let again = setup.root.join("merged-again");
    succeed(&mut merge_command(&parts, &again));
    assert_merged_like_whole(&again, &setup.whole, "pool with every unit twice");
    assert_eq!(
        std::fs::read(again.join("steps.jsonl")).unwrap(),
        std::fs::read(merged.join("steps.jsonl")).unwrap(),
        "the copies kept depend on the order of the parts"
    );

    // Shards and pool workers' parts do not mix; a pool worker's part is not resumed.
    let shard_out = setup.root.join("shard");
    succeed(&mut run_command(&setup.file, &shard_out, Some((0, 2))));
    let mixed = merge_command(
        &[shard_dir(&shard_out, 0, 2), parts[0].clone()],
        &setup.root.join("mixed"),
    )
    .output()
    .unwrap();
    assert_eq!(mixed.status.code(), Some(2), "{}", text(&mixed));
    assert!(text(&mixed).contains("pool worker"), "{}", text(&mixed));
    let resumed = mosaic().arg("resume").arg(&parts[0]).output().unwrap();
    assert_eq!(resumed.status.code(), Some(2), "{}", text(&resumed));
    assert!(text(&resumed).contains("new worker"), "{}", text(&resumed));
}
