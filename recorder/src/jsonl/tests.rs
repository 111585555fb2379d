use super::*;
use crate::synthetic;
use mosaic_core::record::StepRecord;

fn write_lines(path: &Path, records: &[StepRecord]) {
    let mut writer = JsonlWriter::open(path).unwrap();
    for r in records {
        writer.append(r).unwrap();
    }
    writer.commit(Durability::Flush).unwrap();
}

fn read_all(path: &Path) -> (Result<Vec<StepRecord>>, Option<TornTail>) {
    let mut reader = JsonlReader::<StepRecord>::open(path).unwrap();
    let records = reader.by_ref().collect();
    (records, reader.torn_tail().cloned())
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 5, 2);
    write_lines(&path, &records);
    let (read, torn) = read_all(&path);
    assert_eq!(read.unwrap(), records);
    assert_eq!(torn, None);
}

#[test]
fn torn_last_line_is_reported_and_nothing_complete_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 2);
    write_lines(&path, &records);
    let full = std::fs::read(&path).unwrap();
    // Every cut inside the last line leaves the first five records readable.
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    for cut in last_start + 1..full.len() - 1 {
        std::fs::write(&path, &full[..cut]).unwrap();
        let (read, torn) = read_all(&path);
        assert_eq!(read.unwrap(), records[..5], "cut at {cut}");
        assert_eq!(
            torn,
            Some(TornTail {
                line: 6,
                bytes: (cut - last_start) as u64
            }),
            "cut at {cut}"
        );
    }
    // Only the newline missing: the record is complete and read.
    std::fs::write(&path, &full[..full.len() - 1]).unwrap();
    assert_eq!(read_all(&path).0.unwrap(), records);
}

#[test]
fn reopening_cuts_the_torn_tail_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 1);
    write_lines(&path, &records);
    let full = std::fs::read(&path).unwrap();
    std::fs::write(&path, &full[..full.len() - 10]).unwrap();
    let mut writer = JsonlWriter::open(&path).unwrap();
    assert_eq!(writer.repaired().unwrap().line, 3);
    writer.append(&records[2]).unwrap();
    writer.commit(Durability::Sync).unwrap();
    assert_eq!(read_all(&path).0.unwrap(), records);
    // A complete last record without its newline is kept and terminated.
    std::fs::write(&path, &full[..full.len() - 1]).unwrap();
    let writer = JsonlWriter::open(&path).unwrap();
    assert!(writer.repaired().is_none());
    assert_eq!(std::fs::read(&path).unwrap(), full);
}

#[test]
fn corrupt_middle_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 3, 1);
    write_lines(&path, &records);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let truncated = &lines[1][..20].to_owned();
    lines[1] = truncated;
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = read_all(&path).0.unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, RecorderError::Malformed { line: 2, .. }),
        "{message}"
    );
    assert!(message.contains("steps.jsonl:2"), "{message}");
    assert!(message.contains("truncated"), "{message}");
}

#[test]
fn versions_minor_accepted_major_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 1, 1);
    let mut value = serde_json::to_value(&records[0]).unwrap();
    // An older record: lacks optional fields; a newer minor: has unknown ones.
    value.as_object_mut().unwrap().remove("decision_us");
    let old = value.clone();
    value["schema"] = "mosaic.step/1.4".into();
    value["added_later"] = serde_json::json!({"x": 1});
    let newer_minor = value.clone();
    value["schema"] = "mosaic.step/2".into();
    value["reward"] = "a string in version 2".into();
    let newer_major = value;
    let text = format!("{old}\n{newer_minor}\n{newer_major}\n");
    std::fs::write(&path, text).unwrap();
    let mut reader = JsonlReader::<StepRecord>::open(&path).unwrap();
    assert_eq!(reader.next().unwrap().unwrap().decision_us, 0);
    assert_eq!(reader.next().unwrap().unwrap().schema, "mosaic.step/1.4");
    let err = reader.next().unwrap().unwrap_err();
    assert!(
        matches!(&err, RecorderError::UnsupportedSchema { line: 3, found, .. } if found == "mosaic.step/2"),
        "{err}"
    );
    assert!(reader.next().is_none());
}

#[test]
fn a_record_of_another_kind_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("episodes.jsonl");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 1, 1);
    write_lines(&path, &records);
    let mut reader = JsonlReader::<mosaic_core::record::EpisodeRecord>::open(&path).unwrap();
    let err = reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("mosaic.episode"), "{err}");
}

fn write_compressed(path: &Path, batches: &[&[StepRecord]]) {
    let mut writer = JsonlWriter::open(path).unwrap();
    for batch in batches {
        for r in *batch {
            writer.append(r).unwrap();
        }
        writer.commit(Durability::Flush).unwrap();
    }
}

/// Offsets where the frames of a compressed file written by `write_compressed` end.
fn frame_ends(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    let mut ends = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        at += zstd::zstd_safe::find_frame_compressed_size(&bytes[at..]).unwrap();
        ends.push(at as u64);
    }
    ends
}

#[test]
fn compressed_round_trip_and_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl.zst");
    assert_eq!(Compression::of(&path), Compression::Zstd);
    assert_eq!(
        Compression::of(&dir.path().join("steps.jsonl")),
        Compression::None
    );
    assert_eq!(
        Compression::Zstd.file_name("steps.jsonl"),
        "steps.jsonl.zst"
    );
    // Enough records for several full frames, and a partial one at each commit.
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 400, 4);
    write_compressed(
        &path,
        &[&records[..1000], &records[1000..1003], &records[1003..]],
    );
    assert!(frame_ends(&path).len() >= 4);
    let (read, torn) = read_all(&path);
    assert_eq!(read.unwrap(), records);
    assert_eq!(torn, None);
    // The plain bytes are those of the plain log.
    let plain = dir.path().join("steps.jsonl");
    write_lines(&plain, &records);
    let mut lines = Vec::new();
    open_lines(&path).unwrap().read_to_end(&mut lines).unwrap();
    assert_eq!(lines, std::fs::read(&plain).unwrap());
    assert!(std::fs::metadata(&path).unwrap().len() * 5 < lines.len() as u64);
}

#[test]
fn a_cut_last_frame_is_a_torn_tail_and_reopening_cuts_it_off() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl.zst");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 5, 2);
    write_compressed(&path, &[&records[..6], &records[6..]]);
    let full = std::fs::read(&path).unwrap();
    let ends = frame_ends(&path);
    assert_eq!(ends.len(), 2);
    let first = ends[0] as usize;
    for cut in first + 1..full.len() {
        std::fs::write(&path, &full[..cut]).unwrap();
        let (read, torn) = read_all(&path);
        assert_eq!(read.unwrap(), records[..6], "cut at {cut}");
        assert_eq!(
            torn,
            Some(TornTail {
                line: 7,
                bytes: (cut - first) as u64
            }),
            "cut at {cut}"
        );
    }
    // Reopening for appending cuts the torn frame off; new frames follow whole ones.
    std::fs::write(&path, &full[..full.len() - 3]).unwrap();
    let mut writer = JsonlWriter::open(&path).unwrap();
    assert_eq!(
        writer.repaired(),
        Some(&TornTail {
            line: 7,
            bytes: (full.len() - 3 - first) as u64
        })
    );
    for r in &records[6..] {
        writer.append(r).unwrap();
    }
    writer.commit(Durability::Sync).unwrap();
    let (read, torn) = read_all(&path);
    assert_eq!((read.unwrap(), torn), (records.clone(), None));
    // A whole file is left as it is.
    drop(writer);
    let before = std::fs::read(&path).unwrap();
    assert!(JsonlWriter::open(&path).unwrap().repaired().is_none());
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_corrupt_compressed_log_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl.zst");
    let records = synthetic::steps(&synthetic::unit("r", "op", 0, 9), 5, 2);
    write_compressed(&path, &[&records[..6], &records[6..]]);
    let full = std::fs::read(&path).unwrap();
    let first = frame_ends(&path)[0] as usize;
    // A flipped byte inside the first frame's compressed data fails its checksum (or
    // its decoding); garbage where the second frame starts is not a frame.
    let mut flipped = full.clone();
    flipped[first - 6] ^= 0x55;
    let mut garbage = full.clone();
    garbage[first] = b'{';
    for (bytes, expected) in [(flipped, "byte 0"), (garbage, "not the start")] {
        std::fs::write(&path, &bytes).unwrap();
        let err = read_all(&path).0.unwrap_err();
        let message = err.to_string();
        assert!(message.contains("steps.jsonl.zst"), "{message}");
        assert!(message.contains(expected), "{message}");
        // The writer refuses to append after it too.
        if expected == "not the start" {
            assert!(JsonlWriter::open(&path).is_err());
        }
    }
}

#[test]
fn a_record_that_fails_to_serialise_leaves_no_bytes_in_a_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.jsonl.zst");
    let mut writer = JsonlWriter::open(&path).unwrap();
    let mut bad = std::collections::BTreeMap::new();
    bad.insert(vec![1u8], 1);
    assert!(writer.append(&bad).is_err());
    writer.append(&serde_json::json!({"a": 1})).unwrap();
    writer.commit(Durability::Flush).unwrap();
    let mut text = String::new();
    open_lines(&path)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "{\"a\":1}\n");
}
