use super::*;
use crate::synthetic::{self, SyntheticEpisode};

/// Writes `episodes`; the last `partial` ones lose their roll-up (as if killed
/// mid-episode).
fn write(run: &RunDir, store: &RunStore, episodes: &[SyntheticEpisode], partial: usize) {
    let mut writer = run.writer(store, Durability::Flush).unwrap();
    synthetic::record_episodes(&mut writer, episodes, partial).unwrap();
    writer.close().unwrap();
}

#[test]
fn runs_appear_whole_and_creations_cut_short_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r1", &["a"], 2, 5);
    let path = dir.path().join("r1");

    // A staging directory left by a kill before the rename is neither listed nor in
    // the way of the next creation.
    let leftover = dir.path().join(".r1.creating-1");
    fs::create_dir(&leftover).unwrap();
    fs::write(leftover.join(MANIFEST_FILE), b"{}").unwrap();
    assert!(list_runs(dir.path()).unwrap().is_empty());
    let (run, store) = RunDir::create(&path, &manifest).unwrap();
    drop((run, store));
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("r1"))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(path.join(MANIFEST_FILE).is_file() && path.join(STORE_DIR).is_dir());
    assert!(matches!(
        RunDir::create(&path, &manifest),
        Err(RecorderError::AlreadyExists { .. })
    ));

    // Cut short after the rename, before the store: nothing was recorded, and opening
    // the store creates it.
    let early = dir.path().join("early");
    {
        let (run, store) = RunDir::create(&early, &manifest).unwrap();
        drop((run, store));
        synthetic::wait_for_unlock(&early.join(STORE_DIR)).unwrap();
    }
    fs::remove_dir_all(early.join(STORE_DIR)).unwrap();
    // A torn first line (the kill cut the first write) is no record either.
    fs::write(early.join(STEPS_FILE), b"{\"schema\":\"mosaic.st").unwrap();
    let run = RunDir::open(&early).unwrap();
    let summary = run.summary().unwrap();
    assert_eq!((summary.status, summary.done), (RunStatus::Interrupted, 0));
    assert!(early.join(STORE_DIR).is_dir());

    // A store without run.json (an older mosaic killed mid-creation) is named as such
    // by every command, not "already a run" or "not a run".
    let old = dir.path().join("old");
    fs::create_dir_all(old.join(STORE_DIR)).unwrap();
    for err in [
        RunDir::create(&old, &manifest).map(|_| ()).unwrap_err(),
        RunDir::open(&old).map(|_| ()).unwrap_err(),
    ] {
        assert!(
            matches!(err, RecorderError::UnfinishedCreation { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("cut short"), "{err}");
    }

    // A directory with other files is not taken over.
    let busy = dir.path().join("busy");
    fs::create_dir(&busy).unwrap();
    fs::write(busy.join("notes.txt"), b"mine").unwrap();
    let err = RunDir::create(&busy, &manifest).map(|_| ()).unwrap_err();
    assert!(matches!(err, RecorderError::NotEmpty { .. }), "{err}");
    assert!(busy.join("notes.txt").is_file());
    let staged = fs::read_dir(dir.path()).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with(".busy")
    });
    assert!(
        !staged,
        "the failed creation's staging directory is removed"
    );
}

#[test]
fn complete_run_round_trip_and_look_ups() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r1", &["a", "b"], 3, 10);
    let episodes = synthetic::run_episodes(&manifest, 7, 4);
    let path = dir.path().join("r1");
    {
        let (run, store) = RunDir::create(&path, &manifest).unwrap();
        write(&run, &store, &episodes, 0);
    }
    assert!(matches!(
        RunDir::create(&path, &manifest),
        Err(RecorderError::AlreadyExists { .. })
    ));
    let run = RunDir::open(&path).unwrap();
    assert_eq!(run.manifest(), &manifest);
    let summary = run.summary().unwrap();
    assert_eq!(
        (summary.status, summary.done, summary.planned),
        (RunStatus::Complete, 6, 6)
    );
    let store = run.store().unwrap();
    assert!(store.remaining_units().unwrap().is_empty());
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    let unit = Unit::new("b", 1);
    let expected = &episodes[4];
    assert_eq!(
        store.episode(&unit).unwrap().as_ref(),
        Some(&expected.record)
    );
    assert_eq!(store.step(&unit, 5).unwrap(), expected.steps[5]);
    assert_eq!(store.steps_of(&unit).unwrap(), expected.steps.concat());
    assert_eq!(store.step(&unit, 0).unwrap(), expected.steps[0]);
    assert_eq!(store.step(&unit, 6).unwrap(), expected.steps[6]);
    assert!(store.step(&unit, 7).unwrap().is_empty());
    assert_eq!(
        store
            .completion(&unit)
            .unwrap()
            .map(|d| (d.steps, d.step_records)),
        Some((7, 28))
    );
    // Canonical order: operator, episode, step, agent.
    let mut count = 0;
    Records::Store(Box::new(store.clone()))
        .for_each_step(|r| {
            let e = &episodes[count / 28];
            assert_eq!(r, &e.steps[(count % 28) / 4][count % 4]);
            count += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(count, 6 * 28);
    assert!(store.step(&Unit::new("zz", 0), 0).is_err());
}

#[test]
fn interrupted_run_is_resumable_without_loss_or_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r2", &["a"], 4, 10);
    let episodes = synthetic::run_episodes(&manifest, 6, 2);
    let path = dir.path().join("r2");
    let (run, store) = RunDir::create(&path, &manifest).unwrap();
    write(&run, &store, &episodes[..3], 1);
    // A crash in the middle of a line.
    let mut steps = fs::read(run.steps_path()).unwrap();
    steps.extend_from_slice(b"{\"schema\":\"mosaic.step/1\",\"run_");
    fs::write(run.steps_path(), steps).unwrap();
    drop(store);

    let summary = run.summary().unwrap();
    assert_eq!(
        (summary.status, summary.done, summary.planned),
        (RunStatus::Interrupted, 2, 4)
    );
    let store = run.store().unwrap();
    assert_eq!(
        store.remaining_units().unwrap(),
        vec![Unit::new("a", 2), Unit::new("a", 3)]
    );
    let records = run.records().unwrap();
    assert_eq!(records.episodes().unwrap().len(), 2);
    let mut n = 0;
    records
        .for_each_step(|_| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 2 * 12);

    let discarded = run.discard_incomplete(&store).unwrap();
    assert_eq!(discarded.units, vec![Unit::new("a", 2)]);
    assert_eq!(discarded.store_step_records, 12);
    assert_eq!(discarded.step_lines, 13);
    assert_eq!(discarded.episode_lines, 0);
    assert!(store.incomplete_units_with_records().unwrap().is_empty());
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());

    // Finish the run: nothing duplicated, everything consistent.
    write(&run, &store, &episodes[2..], 0);
    assert!(store.remaining_units().unwrap().is_empty());
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    let lines = fs::read_to_string(run.steps_path())
        .unwrap()
        .lines()
        .count();
    assert_eq!(lines, 4 * 12);
}

#[test]
fn a_store_left_behind_by_a_crash_catches_up_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r6", &["a", "b"], 3, 5);
    let episodes = synthetic::run_episodes(&manifest, 5, 2);
    let written = dir.path().join("written");
    {
        let (run, store) = RunDir::create(&written, &manifest).unwrap();
        write(&run, &store, &episodes, 0);
    }
    // The log of a run whose store missed everything: a fresh store, the same files,
    // except that unit b/2 lost one step line (so it is not complete).
    let crashed = dir.path().join("crashed");
    drop(RunDir::create(&crashed, &manifest).unwrap());
    fs::copy(written.join(EPISODES_FILE), crashed.join(EPISODES_FILE)).unwrap();
    let steps = fs::read_to_string(written.join(STEPS_FILE)).unwrap();
    let kept: String = steps
        .lines()
        .filter(|l| {
            !(l.contains("\"b\"") && l.contains("ep000002") && l.contains("\"step_index\":3,"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(kept.lines().count(), steps.lines().count() - 2);
    fs::write(crashed.join(STEPS_FILE), kept).unwrap();

    let run = RunDir::open(&crashed).unwrap();
    let store = run.store().unwrap();
    assert_eq!(store.completed_count(), 5);
    assert_eq!(store.remaining_units().unwrap(), vec![Unit::new("b", 2)]);
    assert_eq!(
        store.steps_of(&Unit::new("a", 1)).unwrap(),
        episodes[1].steps.concat()
    );
    assert_eq!(run.catch_up(&store).unwrap(), Vec::<Unit>::new());
    run.discard_incomplete(&store).unwrap();
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
}

#[test]
fn a_run_being_written_reads_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r3", &["a"], 3, 1);
    let episodes = synthetic::run_episodes(&manifest, 4, 2);
    let (run, store) = RunDir::create(&dir.path().join("r3"), &manifest).unwrap();
    write(&run, &store, &episodes, 1);
    // The store stays open, as in the writing process: others see the run running.
    let other = RunDir::open(run.path()).unwrap();
    let summary = other.summary().unwrap();
    assert_eq!((summary.status, summary.done), (RunStatus::Running, 2));
    let records = other.records().unwrap();
    assert!(records.is_live());
    let mut n = 0;
    records
        .for_each_step(|_| {
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 2 * 8);
    assert!(matches!(
        other.store(),
        Err(RecorderError::StoreLocked { .. })
    ));
    drop(store);
}

fn checkpoint(
    run_id: &str,
    operator_id: &str,
    episode_index: u32,
    step_index: u32,
) -> EpisodeCheckpoint {
    EpisodeCheckpoint {
        schema: mosaic_core::record::CHECKPOINT_SCHEMA.to_owned(),
        run_id: run_id.to_owned(),
        operator_id: operator_id.to_owned(),
        episode_index,
        step_index,
        env: Some(mosaic_core::Snapshot(vec![1, 2, 3])),
        operators: vec![serde_json::json!({"rng": step_index})],
        channel: serde_json::Value::Null,
        restarts: Vec::new(),
    }
}

#[test]
fn an_episode_continues_from_its_checkpoint_with_the_steps_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r4", &["a"], 4, 1);
    let episodes = synthetic::run_episodes(&manifest, 10, 2);
    let path = dir.path().join("r4");
    let (run, store) = RunDir::create(&path, &manifest).unwrap();
    let mut writer = run.writer(&store, Durability::Sync).unwrap();
    let complete = &episodes[0];
    for step in &complete.steps {
        writer.write_step(step).unwrap();
    }
    writer.write_episode(&complete.record).unwrap();
    writer.commit().unwrap();
    writer.mark_complete(&complete.record).unwrap();
    // Episode 1: checkpoints after 2 and 4 steps, killed after 6.
    for (step_index, step) in episodes[1].steps[..6].iter().enumerate() {
        if step_index == 2 || step_index == 4 {
            writer
                .write_checkpoint(&checkpoint("r4", "a", 1, step_index as u32))
                .unwrap();
        }
        writer.write_step(step).unwrap();
    }
    // Episode 2: no checkpoint. Episode 3: a checkpoint counting steps the log lost.
    for step in &episodes[2].steps[..3] {
        writer.write_step(step).unwrap();
    }
    writer.write_step(&episodes[3].steps[0]).unwrap();
    writer
        .write_checkpoint(&checkpoint("r4", "a", 3, 5))
        .unwrap();
    drop(writer);
    drop(store);
    let mut steps = fs::read(run.steps_path()).unwrap();
    steps.extend_from_slice(b"{\"schema\":\"mosaic.st");
    fs::write(run.steps_path(), steps).unwrap();

    let store = run.store().unwrap();
    assert_eq!(
        store.checkpoint(&Unit::new("a", 1)).unwrap(),
        Some(checkpoint("r4", "a", 1, 4))
    );
    let discarded = run.discard_incomplete(&store).unwrap();
    // Episode 2's steps never reached the store (only the log, which loses them too).
    assert_eq!(discarded.units, vec![Unit::new("a", 3)]);
    assert_eq!(discarded.resumable, vec![checkpoint("r4", "a", 1, 4)]);
    // Steps 4 and 5 of episode 1, three of episode 2, one of episode 3, the torn tail.
    assert_eq!(discarded.step_lines, 2 * 2 + 3 * 2 + 2 + 1);
    let resumed = Unit::new("a", 1);
    assert_eq!(
        store.steps_of(&resumed).unwrap(),
        episodes[1].steps[..4].concat()
    );
    assert_eq!(store.checkpoint(&Unit::new("a", 3)).unwrap(), None);
    assert!(store.steps_of(&Unit::new("a", 3)).unwrap().is_empty());
    assert_eq!(store.remaining_units().unwrap().len(), 3);

    // The episode continues from step 4: its records end up exactly once, everywhere.
    let mut writer = run.writer(&store, Durability::Sync).unwrap();
    for step in &episodes[1].steps[4..] {
        writer.write_step(step).unwrap();
    }
    writer.write_episode(&episodes[1].record).unwrap();
    writer.commit().unwrap();
    writer.mark_complete(&episodes[1].record).unwrap();
    writer.close().unwrap();
    assert_eq!(
        store.steps_of(&resumed).unwrap(),
        episodes[1].steps.concat()
    );
    assert_eq!(
        store.completion(&resumed).unwrap().unwrap().step_records,
        20
    );
    assert_eq!(store.checkpoint(&resumed).unwrap(), None, "done with it");
    assert_eq!(run.check_consistency(&store).unwrap(), Vec::<String>::new());
    let mut lines = Vec::new();
    run.step_lines()
        .unwrap()
        .for_each(|r| lines.push(r.unwrap()));
    let expected: Vec<StepRecord> =
        [episodes[0].steps.concat(), episodes[1].steps.concat()].concat();
    assert_eq!(lines, expected);
}

#[test]
fn checkpoints_of_another_major_version_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r5", &["a"], 1, 1);
    let (_run, store) = RunDir::create(&dir.path().join("r5"), &manifest).unwrap();
    let mut newer = checkpoint("r5", "a", 0, 3);
    newer.schema = "mosaic.checkpoint/9".into();
    store.writer().put_checkpoint(&newer).unwrap();
    let error = store
        .checkpoint(&Unit::new("a", 0))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("mosaic.checkpoint/9") && error.contains("store"),
        "{error}"
    );
}

#[test]
fn bad_directories_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = RunDir::open(dir.path()).unwrap_err();
    assert!(matches!(err, RecorderError::NotARun { .. }), "{err}");
    assert!(err.to_string().contains("not a run directory"));

    let manifest = synthetic::manifest("r5", &["a"], 1, 1);
    let path = dir.path().join("r5");
    drop(RunDir::create(&path, &manifest).unwrap());
    // A store written by a newer mosaic.
    synthetic::set_store_format(&path.join(STORE_DIR), STORE_FORMAT_NEXT).unwrap();
    let err = RunDir::open(&path).unwrap().store().unwrap_err();
    assert!(
        matches!(
            err,
            RecorderError::StoreTooNew {
                found: STORE_FORMAT_NEXT,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("newer mosaic"), "{err}");

    // A missing store beside records is not silently replaced.
    fs::remove_dir_all(path.join(STORE_DIR)).unwrap();
    fs::write(path.join(EPISODES_FILE), b"{}\n").unwrap();
    let err = RunDir::open(&path).unwrap().summary().unwrap_err();
    assert!(matches!(err, RecorderError::StoreMissing { .. }), "{err}");

    fs::write(path.join(MANIFEST_FILE), b"{\"schema\":\"mosaic.run/3\"}").unwrap();
    let err = RunDir::open(&path).unwrap_err();
    assert!(
        matches!(err, RecorderError::UnsupportedSchema { .. }),
        "{err}"
    );
    fs::write(
        path.join(MANIFEST_FILE),
        b"{\"schema\":\"mosaic.run/1\",\n \"run_id\": ",
    )
    .unwrap();
    let err = RunDir::open(&path).unwrap_err();
    assert!(
        matches!(err, RecorderError::Malformed { line: 2, .. }),
        "{err}"
    );
}

#[test]
fn a_plan_that_grows_is_written_to_run_json_and_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r7");
    let manifest = synthetic::manifest("r7", &["a", "b"], 1, 5);
    let episodes = synthetic::run_episodes(&synthetic::manifest("r7", &["a", "b"], 3, 5), 4, 2);
    let (mut run, mut store) = RunDir::create(&path, &manifest).unwrap();
    write(&run, &store, &episodes, 0);
    let mut grown = manifest.clone();
    grown.experiment.episodes = 3;
    grown.experiment.seeds = mosaic_core::SeedPlan::List {
        seeds: vec![5, 6, 7],
    };
    grown.seeds = vec![5, 6, 7];
    run.update_manifest(&mut store, grown.clone()).unwrap();
    assert_eq!(run.manifest(), &grown);
    assert_eq!(store.planned_units().len(), 6);

    let mut renamed = grown.clone();
    renamed.run_id = "r8".into();
    let err = run.update_manifest(&mut store, renamed).unwrap_err();
    assert!(err.to_string().contains("may not change"), "{err}");
    let mut fewer = grown.clone();
    fewer.experiment.operators.pop();
    assert!(run.update_manifest(&mut store, fewer).is_err());
    drop(store);

    let reopened = RunDir::open(&path).unwrap();
    assert_eq!(reopened.manifest(), &grown);
    let summary = reopened.summary().unwrap();
    assert_eq!(
        (summary.status, summary.done, summary.planned),
        (RunStatus::Complete, 6, 6)
    );
    let store = reopened.store().unwrap();
    assert_eq!(store.manifest(), &grown);
    assert!(store.remaining_units().unwrap().is_empty());
    assert_eq!(
        reopened.check_consistency(&store).unwrap(),
        Vec::<String>::new()
    );
}

const STORE_FORMAT_NEXT: u32 = crate::store::STORE_FORMAT + 1;

/// Every file under `dir` with its length and modification time.
fn file_times(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut files = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            files.extend(file_times(&entry.path()));
        } else {
            files.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
        }
    }
    files
}

#[test]
fn a_finished_run_is_read_from_its_logs_in_the_stores_order_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r9", &["a", "b"], 3, 4);
    let episodes = synthetic::run_episodes(&manifest, 5, 2);
    let (run, store) = RunDir::create(&dir.path().join("r9"), &manifest).unwrap();
    // Two lanes: operator b's episodes and a's, their steps interleaved in the logs.
    let (a, b) = episodes.split_at(3);
    let mut writer = run.writer(&store, Durability::Flush).unwrap();
    for (x, y) in b.iter().zip(a) {
        for (xs, ys) in x.steps.iter().zip(&y.steps) {
            writer.write_step(xs).unwrap();
            writer.write_step(ys).unwrap();
        }
        for episode in [x, y] {
            writer.write_episode(&episode.record).unwrap();
            writer.commit().unwrap();
            writer.mark_complete(&episode.record).unwrap();
        }
    }
    writer.close().unwrap();
    drop(writer);
    let steps = |records: &Records| {
        let mut all = Vec::new();
        records
            .for_each_step(|r| {
                all.push(r.clone());
                Ok(())
            })
            .unwrap();
        all
    };
    let unit = Unit::new("b", 1);
    let from_store = Records::Store(Box::new(store));
    let (store_steps, store_episodes, store_unit) = (
        steps(&from_store),
        from_store.episodes().unwrap(),
        from_store.steps_of(&unit).unwrap(),
    );
    assert_eq!(store_steps.len(), 6 * 5 * 2);
    drop(from_store);
    synthetic::wait_for_unlock(&run.store_path()).unwrap();
    let before = file_times(run.path());

    let records = run.records().unwrap();
    assert!(matches!(records, Records::Logs { writing: false, .. }));
    assert_eq!(steps(&records), store_steps, "the store's order");
    assert_eq!(records.episodes().unwrap(), store_episodes);
    assert_eq!(records.steps_of(&unit).unwrap(), store_unit);
    assert_eq!(
        records.units().unwrap(),
        store_episodes
            .iter()
            .map(|e| Unit::new(e.operator_id.clone(), e.episode_index))
            .collect::<Vec<_>>()
    );
    let summary = run.summary().unwrap();
    assert_eq!((summary.status, summary.done), (RunStatus::Complete, 6));
    assert_eq!(file_times(run.path()), before, "reading changed nothing");
}
