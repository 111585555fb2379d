//! Listing runs from `progress.json` answers what opening their stores answers: for finished
//! runs, runs cut short, runs being written, runs whose progress file is stale or missing.

use mosaic_recorder::progress::PROGRESS_FILE;
use mosaic_recorder::synthetic::{self, SyntheticEpisode};
use mosaic_recorder::{Durability, RunDir, RunStatus, RunStore, RunSummary, list_runs};
use std::path::Path;

/// Writes `episodes`; the last `partial` ones lose their roll-up (as if killed
/// mid-episode). Closes the writer only when `close`.
fn write(
    run: &RunDir,
    store: &RunStore,
    episodes: &[SyntheticEpisode],
    partial: usize,
    close: bool,
) {
    let mut writer = run.writer(store, Durability::Flush).unwrap();
    synthetic::record_episodes(&mut writer, episodes, partial).unwrap();
    if close {
        writer.close().unwrap();
    }
}

/// The summary as it was made before `progress.json`: from the store (or the log).
fn from_records(path: &Path) -> RunSummary {
    let run = RunDir::open(path).unwrap();
    let records = run.records().unwrap();
    run.summary_with(&records).unwrap()
}

fn listed(dir: &Path) -> Vec<RunSummary> {
    list_runs(dir)
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn listing_from_progress_files_answers_what_the_stores_answer() {
    let dir = tempfile::tempdir().unwrap();
    // Listed in start order: the order of creation here.
    let mut created = 0;
    let mut manifest = |id: &str| {
        let mut manifest = synthetic::manifest(id, &["a", "b"], 5, 10);
        created += 1;
        manifest.started = manifest.started.saturating_add(created);
        manifest
    };

    // Finished.
    let finished = manifest("finished");
    let (run, store) = RunDir::create(&dir.path().join("finished"), &finished).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&finished, 6, 2),
        0,
        true,
    );
    drop(store);
    assert!(run.path().join(PROGRESS_FILE).is_file());

    // Killed mid-way: its writer never closed, its last episode has no roll-up, and a torn
    // line ends its episodes file.
    let killed = manifest("killed");
    let (run, store) = RunDir::create(&dir.path().join("killed"), &killed).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&killed, 6, 2)[..7],
        1,
        false,
    );
    drop(store);
    let mut episodes = std::fs::read(run.episodes_path()).unwrap();
    episodes.extend_from_slice(b"{\"schema\":\"mosaic.episode/1\",\"run_");
    std::fs::write(run.episodes_path(), episodes).unwrap();

    // Killed right after a commit that saved its progress: its progress file is fresh.
    let early = manifest("early");
    let (run, store) = RunDir::create(&dir.path().join("early"), &early).unwrap();
    let episodes = synthetic::run_episodes(&early, 6, 2);
    let mut writer = run.writer(&store, Durability::Flush).unwrap();
    std::thread::sleep(mosaic_recorder::progress::SAVE_EVERY);
    for step in &episodes[0].steps {
        writer.write_step(step).unwrap();
    }
    writer.write_episode(&episodes[0].record).unwrap();
    writer.commit().unwrap();
    writer.mark_complete(&episodes[0].record).unwrap();
    for step in &episodes[1].steps {
        writer.write_step(step).unwrap();
    }
    drop((writer, store));
    assert!(mosaic_recorder::progress::is_fresh(&run.episodes_path()));

    // Cut short between commits: its progress file counts fewer lines than it has.
    let behind = manifest("behind");
    let (run, store) = RunDir::create(&dir.path().join("behind"), &behind).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&behind, 6, 2)[..4],
        0,
        true,
    );
    let stale = std::fs::read(run.path().join(PROGRESS_FILE)).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&behind, 6, 2)[4..6],
        0,
        true,
    );
    std::fs::write(run.path().join(PROGRESS_FILE), stale).unwrap();
    drop(store);

    // Written by an older mosaic: no progress file.
    let old = manifest("old");
    let (run, store) = RunDir::create(&dir.path().join("old"), &old).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&old, 6, 2)[..3],
        0,
        true,
    );
    drop(store);
    std::fs::remove_file(run.path().join(PROGRESS_FILE)).unwrap();

    for name in ["finished", "killed", "early", "behind", "old"] {
        synthetic::wait_for_unlock(&dir.path().join(name).join("store")).unwrap();
    }
    let quick = listed(dir.path());
    let slow: Vec<RunSummary> = quick.iter().map(|s| from_records(&s.path)).collect();
    assert_eq!(quick, slow);
    let status: Vec<_> = quick
        .iter()
        .map(|s| (s.run_id.as_str(), s.status, s.done, s.planned))
        .collect();
    assert_eq!(
        status,
        [
            ("finished", RunStatus::Complete, 10, 10),
            ("killed", RunStatus::Interrupted, 6, 10),
            ("early", RunStatus::Interrupted, 1, 10),
            ("behind", RunStatus::Interrupted, 6, 10),
            ("old", RunStatus::Interrupted, 3, 10),
        ]
    );

    // Being written (the store open, so locked): running, with the episodes logged so far.
    let live = manifest("live");
    let (run, store) = RunDir::create(&dir.path().join("live"), &live).unwrap();
    write(
        &run,
        &store,
        &synthetic::run_episodes(&live, 6, 2)[..5],
        0,
        false,
    );
    let summary = run.summary().unwrap();
    assert_eq!((summary.status, summary.done), (RunStatus::Running, 5));
    assert_eq!(summary, from_records(run.path()));
    drop(store);
}

#[test]
fn a_merged_run_lists_from_its_progress_file() {
    use mosaic_core::record::{RunManifest, RunPart, Shard, ShardTag};
    use mosaic_recorder::{Unit, merge};
    let dir = tempfile::tempdir().unwrap();
    let whole = synthetic::manifest("merged", &["a", "b"], 3, 10);
    let mut shards = Vec::new();
    for index in 0..2 {
        let manifest = RunManifest {
            shard: Some(ShardTag {
                experiment: merge::experiment_identity(&whole.experiment),
                part: RunPart::Shard(Shard::new(index, 2).unwrap()),
            }),
            ..whole.clone()
        };
        let path = dir.path().join("shards").join(index.to_string());
        let (run, store) = RunDir::create(&path, &manifest).unwrap();
        let share = store.planned_units();
        let episodes: Vec<SyntheticEpisode> = synthetic::run_episodes(&manifest, 4, 2)
            .into_iter()
            .filter(|e| {
                share.contains(&Unit::new(
                    e.record.operator_id.clone(),
                    e.record.episode_index,
                ))
            })
            .collect();
        write(&run, &store, &episodes, 0, true);
        drop(store);
        synthetic::wait_for_unlock(&path.join("store")).unwrap();
        shards.push(path);
    }
    let runs = dir.path().join("runs");
    let merged = merge::merge(&shards, &runs.join("merged")).unwrap();
    assert_eq!(merged.units, 6);
    synthetic::wait_for_unlock(&merged.run.path().join("store")).unwrap();
    assert!(mosaic_recorder::progress::is_fresh(
        &merged.run.episodes_path()
    ));
    let quick = listed(&runs);
    assert_eq!(quick, [from_records(merged.run.path())]);
    assert_eq!(
        (quick[0].status, quick[0].done, quick[0].planned),
        (RunStatus::Complete, 6, 6)
    );
}
