//! Runs whose step log is compressed (`steps.jsonl.zst`): written, cut by a crash, read
//! while being written, resumed and merged (with plain runs too) with the same records as
//! runs with a plain log.

use mosaic_core::record::{RunManifest, RunPart, Shard, ShardTag, StepRecord};
use mosaic_recorder::jsonl::open_lines;
use mosaic_recorder::synthetic::{self, SyntheticEpisode};
use mosaic_recorder::{
    Compression, Durability, RecorderError, RunDir, RunStatus, RunStore, Unit, merge,
};
use std::io::Read;
use std::path::Path;

/// Writes `episodes`; the last `partial` ones lose their roll-up (as if killed
/// mid-episode).
fn write(run: &RunDir, store: &RunStore, episodes: &[SyntheticEpisode], partial: usize) {
    let mut writer = run.writer(store, Durability::Flush).unwrap();
    synthetic::record_episodes(&mut writer, episodes, partial).unwrap();
    writer.close().unwrap();
}

/// The plain bytes of a run's step log.
fn plain_log(run: &RunDir) -> Vec<u8> {
    let mut bytes = Vec::new();
    open_lines(&run.steps_path())
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

/// Every step record of the complete units, as the run's records give them.
fn steps(run: &RunDir) -> Vec<StepRecord> {
    let mut steps = Vec::new();
    run.records()
        .unwrap()
        .for_each_step(|r| {
            steps.push(r.clone());
            Ok(())
        })
        .unwrap();
    steps
}

/// Half of a zstd frame: what a write cut by a crash leaves at the end of the log.
fn half_a_frame(dir: &Path) -> Vec<u8> {
    let path = dir.join("frame.jsonl.zst");
    let mut writer = mosaic_recorder::JsonlWriter::open(&path).unwrap();
    writer.append_raw(br#"{"cut":"short"}"#).unwrap();
    writer.flush().unwrap();
    let frame = std::fs::read(&path).unwrap();
    frame[..frame.len() / 2].to_vec()
}

#[test]
fn a_compressed_run_is_cut_resumed_and_read_like_a_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("z", &["a", "b"], 4, 10);
    let episodes = synthetic::run_episodes(&manifest, 30, 4);

    let plain_path = dir.path().join("plain");
    let (plain, plain_store) = RunDir::create(&plain_path, &manifest).unwrap();
    write(&plain, &plain_store, &episodes, 0);
    drop(plain_store);
    assert_eq!(plain.steps_path(), plain_path.join("steps.jsonl"));

    let path = dir.path().join("z");
    let (run, store) = RunDir::create_with(&path, &manifest, Compression::Zstd).unwrap();
    assert_eq!(run.steps_path(), path.join("steps.jsonl.zst"));
    assert!(!path.join("steps.jsonl").exists());
    // Killed in the middle of the fifth episode, while writing a frame.
    write(&run, &store, &episodes[..5], 1);
    let mut log = std::fs::read(run.steps_path()).unwrap();
    log.extend_from_slice(&half_a_frame(dir.path()));
    std::fs::write(run.steps_path(), &log).unwrap();

    // Another process reads it while the store is open (locked) here: from the log.
    let other = RunDir::open(&path).unwrap();
    let summary = other.summary().unwrap();
    assert_eq!((summary.status, summary.done), (RunStatus::Running, 4));
    let live = other.records().unwrap();
    assert!(live.is_live());
    let mut live_steps = 0;
    let torn = live
        .for_each_step(|_| {
            live_steps += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(live_steps, 4 * 30 * 4);
    assert!(torn.is_some(), "the cut frame is reported");
    drop((live, store));

    let store = run.store().unwrap();
    assert_eq!(store.completed_count(), 4);
    let discarded = run.discard_incomplete(&store).unwrap();
    assert_eq!(discarded.units, vec![Unit::new("b", 0)]);
    // The fifth episode's lines, and the cut frame.
    assert_eq!(discarded.step_lines, 30 * 4 + 1);
    assert_eq!(Compression::of(&run.steps_path()), Compression::Zstd);

    // Resumed: still compressed, and the same records as the plain run.
    write(&run, &store, &episodes[4..], 0);
    assert!(store.remaining_units().unwrap().is_empty());
    assert!(run.check_consistency(&store).unwrap().is_empty());
    drop(store);
    assert_eq!(plain_log(&run), std::fs::read(plain.steps_path()).unwrap());
    // A store that lost everything (as if never synced) catches up from the log.
    synthetic::wait_for_unlock(&run.store_path()).unwrap();
    std::fs::remove_dir_all(run.store_path()).unwrap();
    drop(RunStore::create(&run.store_path(), &manifest).unwrap());
    synthetic::wait_for_unlock(&run.store_path()).unwrap();
    let store = run.store().unwrap();
    assert_eq!(store.completed_count(), 8);
    assert!(run.check_consistency(&store).unwrap().is_empty());
    drop(store);
    synthetic::wait_for_unlock(&run.store_path()).unwrap();
    assert_eq!(steps(&run), steps(&plain));
    let compressed = std::fs::metadata(run.steps_path()).unwrap().len();
    let uncompressed = std::fs::metadata(plain.steps_path()).unwrap().len();
    assert!(
        compressed * 4 < uncompressed,
        "{compressed} of {uncompressed}"
    );
}

#[test]
fn corruption_inside_a_compressed_log_is_an_error_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("c", &["a"], 3, 10);
    let episodes = synthetic::run_episodes(&manifest, 10, 2);
    let (run, store) =
        RunDir::create_with(&dir.path().join("c"), &manifest, Compression::Zstd).unwrap();
    write(&run, &store, &episodes, 0);
    drop(store);
    let mut log = std::fs::read(run.steps_path()).unwrap();
    log[0] = b'x';
    std::fs::write(run.steps_path(), &log).unwrap();
    let err = run.step_lines().unwrap().next().unwrap().unwrap_err();
    assert!(matches!(err, RecorderError::Io { .. }), "{err}");
    assert!(err.to_string().contains("steps.jsonl.zst"), "{err}");
}

/// The shards of a 2 × 6-unit run, the first with a step log stored as `first`, the second
/// as `second`.
fn shards(dir: &Path, first: Compression, second: Compression) -> Vec<std::path::PathBuf> {
    let whole = synthetic::manifest("m", &["a", "b"], 6, 10);
    let mut paths = Vec::new();
    for (index, compression) in [first, second].into_iter().enumerate() {
        let manifest = RunManifest {
            shard: Some(ShardTag {
                experiment: merge::experiment_identity(&whole.experiment),
                part: RunPart::Shard(Shard::new(index as u32, 2).unwrap()),
            }),
            ..whole.clone()
        };
        let path = dir.join(format!("m.shard-{index}-{compression:?}"));
        let (run, store) = RunDir::create_with(&path, &manifest, compression).unwrap();
        let share = store.planned_units();
        let mine: Vec<_> = synthetic::run_episodes(&manifest, 12, 2)
            .into_iter()
            .filter(|e| {
                share.contains(&Unit::new(
                    e.record.operator_id.clone(),
                    e.record.episode_index,
                ))
            })
            .collect();
        write(&run, &store, &mine, 0);
        paths.push(path);
    }
    paths
}

#[test]
fn compressed_and_mixed_shards_merge_to_the_plain_merge() {
    let dir = tempfile::tempdir().unwrap();
    let (none, zstd) = (Compression::None, Compression::Zstd);
    let plain = merge::merge(&shards(dir.path(), none, none), &dir.path().join("plain")).unwrap();
    assert_eq!(Compression::of(&plain.run.steps_path()), none);
    let expected = std::fs::read(plain.run.steps_path()).unwrap();
    for (name, first, second) in [("zz", zstd, zstd), ("nz", none, zstd), ("zn", zstd, none)] {
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).unwrap();
        let merged = merge::merge(&shards(&sub, first, second), &sub.join("merged")).unwrap();
        assert_eq!((merged.units, merged.step_records), (12, 12 * 12 * 2));
        // Compressed when any part was.
        assert_eq!(Compression::of(&merged.run.steps_path()), zstd, "{name}");
        assert_eq!(plain_log(&merged.run), expected, "{name}");
        let store = merged.run.store().unwrap();
        assert!(merged.run.check_consistency(&store).unwrap().is_empty());
    }
}
