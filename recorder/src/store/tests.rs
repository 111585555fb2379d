use super::chunk::LZ4_CHUNK;
use super::*;
use crate::synthetic;

fn store_with(episodes: &[synthetic::SyntheticEpisode]) -> (tempfile::TempDir, RunStore) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("r", &["a"], episodes.len() as u32, 3);
    let store = RunStore::create(&dir.path().join("store"), &manifest).unwrap();
    (dir, store)
}

fn write(store: &RunStore, episode: &synthetic::SyntheticEpisode) {
    let mut writer = store.writer();
    for step in &episode.steps {
        writer.write_step(step).unwrap();
    }
    writer.write_episode(&episode.record, None).unwrap();
    writer.mark_complete(&episode.record).unwrap();
}

fn chunks(store: &RunStore, unit: &Unit) -> Vec<sled::IVec> {
    let prefix = store.key_of(unit).unwrap();
    store
        .steps
        .scan_prefix(prefix)
        .values()
        .map(|v| v.unwrap())
        .collect()
}

#[test]
fn chunks_of_format_1_and_2_are_read_side_by_side() {
    let manifest = synthetic::manifest("r", &["a"], 2, 3);
    let episodes = synthetic::run_episodes(&manifest, 150, 4);
    let (_dir, store) = store_with(&episodes);
    assert_eq!(store.format, STORE_FORMAT);
    write(&store, &episodes[0]);
    // A store of format 1 (a run started by an older mosaic, resumed): plain lines.
    let mut old = store.clone();
    old.format = 1;
    write(&old, &episodes[1]);

    let (new_unit, old_unit) = (Unit::new("a", 0), Unit::new("a", 1));
    let compressed = chunks(&store, &new_unit);
    assert_eq!(compressed.len(), 3, "150 steps in chunks of 64");
    assert!(compressed.iter().all(|c| c[0] == LZ4_CHUNK));
    let plain: usize = episodes[0].steps.concat().len() * 300;
    let stored: usize = compressed.iter().map(|c| c.len()).sum();
    assert!(stored * 5 < plain, "{stored} bytes stored");
    assert!(chunks(&store, &old_unit).iter().all(|c| c[0] == b'{'));

    for (unit, episode) in [(&new_unit, &episodes[0]), (&old_unit, &episodes[1])] {
        assert_eq!(store.steps_of(unit).unwrap(), episode.steps.concat());
        assert_eq!(store.step(unit, 100).unwrap(), episode.steps[100]);
        assert_eq!(store.step_record_count(unit).unwrap(), 600);
        assert_eq!(store.completion(unit).unwrap().unwrap().step_records, 600);
    }
}

#[test]
fn corrupt_chunks_are_errors_naming_the_store() {
    let manifest = synthetic::manifest("r", &["a"], 1, 3);
    let episodes = synthetic::run_episodes(&manifest, 10, 2);
    let (_dir, store) = store_with(&episodes);
    write(&store, &episodes[0]);
    let unit = Unit::new("a", 0);
    let key = chunk_key(store.key_of(&unit).unwrap(), 0);
    let good = chunks(&store, &unit).remove(0).to_vec();
    let mut huge_length = good.clone();
    huge_length[5..9].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut wrong_length = good.clone();
    wrong_length[5..9].copy_from_slice(
        &(u32::from_be_bytes([good[5], good[6], good[7], good[8]]) - 1).to_be_bytes(),
    );
    let mut garbled = good.clone();
    let middle = garbled.len() / 2;
    garbled.truncate(middle);
    for (bad, expected) in [
        (huge_length, "claimed"),
        (wrong_length, "chunk"),
        (garbled, "chunk"),
        (vec![LZ4_CHUNK, 0, 0], "cut short"),
        (b"\x07abc".to_vec(), "unknown chunk tag 0x07"),
    ] {
        store.steps.insert(key, bad).unwrap();
        let err = store.steps_of(&unit).unwrap_err();
        let message = err.to_string();
        assert!(
            matches!(err, RecorderError::CorruptStore { .. }),
            "{message}"
        );
        assert!(message.contains(expected), "{message}");
        assert!(message.contains("store"), "{message}");
    }
}
