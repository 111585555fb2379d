use super::*;
use crate::synthetic;
use mosaic_core::Event;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::json;

/// The walk's read of `line` is serde's, when it answers.
fn same(line: &str) -> bool {
    crate::json_walk::agrees_with_serde(line, export_step)
}

#[test]
fn the_walk_reads_what_serde_reads_or_leaves_the_line_to_it() {
    let mut record = synthetic::steps(&synthetic::unit("r", "op", 3, 7), 1, 1).remove(0);
    let mut lines = vec![serde_json::to_string(&record).unwrap()];
    record.reward = 0.0;
    record.action_label = Some("north".into());
    record.decision_source = Some(DecisionSource::Policy);
    // Details written as serde_json writes them (their text kept) and otherwise
    // (written again), events, every optional field absent or odd.
    for decision in [
        json!({"usage": {"prompt_tokens": 3, "completion_tokens": 4, "x": [1, {"y": null}]},
               "parse_ok": false, "retries": 2, "cache_hits": 1, "latency_ms": 9,
               "http_attempts": 3, "message": "a \"quoted\" é\n\u{1}", "message_to": "b",
               "received": 2, "scratchpad": "s\\t", "error": "e",
               "format_errors": ["one", "two"], "text": "<action>x</action>\n"}),
        json!({"usage": 5, "parse_ok": 1, "cache_hits": 1.5, "latency_ms": "9",
               "temperature": 0.7, "big": 1e300, "neg": -3, "message": 3}),
        json!("text"),
        json!([1, 2.5]),
        json!(7),
        json!({}),
    ] {
        record.decision = Some(decision);
        lines.push(serde_json::to_string(&record).unwrap());
    }
    record.events = vec![
        Event {
            kind: "goal".into(),
            agent: Some(1),
            detail: Some(json!({"team": "green", "at": [3, 4], "b": 0.5, "a": "\u{7f}"})),
        },
        Event {
            kind: "pass".into(),
            agent: None,
            detail: None,
        },
    ];
    record.observation = Some("line 1\nline \"2\"".into());
    record.action_label = Some("say \"hi\"".into());
    record.reward = -0.05;
    lines.push(serde_json::to_string(&record).unwrap());
    record.action = None;
    record.action_label = None;
    record.decision = None;
    record.decision_source = None;
    record.observation = None;
    record.events.clear();
    record.reward = 12345.679;
    record.seed = u64::MAX;
    record.operator_id = "op \"quoted\"".into();
    lines.push(serde_json::to_string(&record).unwrap());
    let base = lines[1].clone();
    // Valid lines serde_json reads otherwise than it would write the record: the
    // decision's keys out of order, spaces, a float in another spelling, optional
    // fields missing or null, unknown fields.
    let changed = |line: String| {
        assert_ne!(line, base);
        line
    };
    lines.extend([
        changed(base.replace("{\"cache_hits\"", "{\"zz\":1,\"cache_hits\"")),
        changed(base.replace("\"parse_ok\":false", "\"parse_ok\" : false")),
        changed(base.replace("\"reward\":0.0", "\"reward\":0e0")),
        changed(base.replace("\"reward\":0.0", "\"reward\":0")),
        changed(base.replace("\"reward\":0.0", "\"reward\":-0")),
        changed(base.replace("\"reward\":0.0", "\"reward\":1e-50")),
        changed(base.replace("\"decision_us\":", "\"extra\":[{}],\"decision_us\":")),
        changed(base.replace(",\"action_label\":\"north\"", "")),
        changed(base.replace("\"decision_source\":\"policy\"", "\"decision_source\":null")),
        changed(base.replace(",\"timestamp\":", ",\"events\":[],\"timestamp\":")),
        changed(base.replace(
            ",\"timestamp\":",
            ",\"events\":[ ],\"observation\":null,\"timestamp\":",
        )),
        changed(format!(" {base} ")),
    ]);
    for line in &lines {
        assert!(same(line), "the walk gave way on {line}");
    }
    // Left to serde: a field twice, invalid JSON, a missing or mistyped field, a value
    // out of range, events that are no list, trailing bytes.
    for odd in [
        base.replace("\"step_index\":0", "\"step_index\":0,\"step_index\":1"),
        base.replace("\"step_index\":0", "\"step_index\":01"),
        base.replace("\"seed\":", "\"seed\":-"),
        base.replace("\"reward\":0.0", "\"reward\":1e400"),
        base.replace("\"reward\":0.0", "\"reward\":null"),
        base.replace("\"truncated\":false", "\"truncated\":0"),
        base.replace("\"kind\":", "\"kinds\":"),
        base.replace("\"retries\":2", "\"retries\":-2"),
        base.replace("\"retries\":2", "\"retries\":2e400"),
        base.replace(",\"timestamp\":", ",\"events\":null,\"timestamp\":"),
        base.replace(",\"timestamp\":", ",\"events\":[{}],\"timestamp\":"),
        format!("{base}x"),
        base[..base.len() - 1].to_owned(),
    ] {
        assert_ne!(&odd, &base);
        assert!(!same(&odd), "read by the walk: {odd}");
    }
}

#[test]
fn three_tables_with_every_complete_record() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = synthetic::manifest("x", &["a", "b"], 3, 1);
    let (_, store) = synthetic::write_run(&dir.path().join("x"), &manifest, 5, 4).unwrap();
    let records = Records::Store(Box::new(store));
    let out = dir.path().join("parquet");
    let counts = export_parquet(&records, &out).unwrap();
    // 2 operators × 3 episodes × 5 steps × 4 agents; agent 0 is the LLM.
    assert_eq!(
        counts,
        ParquetCounts {
            steps: 120,
            episodes: 6,
            llm_usage: 30
        }
    );
    for (file, rows, columns) in [
        (STEPS_FILE, 120, 20),
        (EPISODES_FILE, 6, 24),
        (LLM_USAGE_FILE, 30, 15),
    ] {
        let reader = SerializedFileReader::new(File::open(out.join(file)).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), rows, "{file}");
        assert_eq!(
            meta.file_metadata().schema_descr().num_columns(),
            columns,
            "{file}"
        );
        // The file names the codec, not its level.
        assert!(
            matches!(
                meta.row_group(0).column(0).compression(),
                Compression::ZSTD(_)
            ),
            "{file}"
        );
    }
}

/// The batches handed to the writer by [`build_step_batches_on`] with `workers` threads.
fn step_batches(records: &Records, workers: usize) -> Vec<(bool, RecordBatch)> {
    let (send, receive) = std::sync::mpsc::sync_channel(1024);
    build_step_batches_on(records, workers, &send).unwrap();
    drop(send);
    receive
        .into_iter()
        .map(|(table, batch)| (matches!(table, StepTable::Steps), batch))
        .collect()
}

#[test]
fn units_decoded_on_threads_make_the_batches_of_one_reading_in_order() {
    let dir = tempfile::tempdir().unwrap();
    // 90 episodes × 200 steps × 4 agents: the step rows fill a batch and start another,
    // the LLM rows (a quarter) do not.
    let manifest = synthetic::manifest("x", &["a"], 90, 1);
    let (_, store) = synthetic::write_run(&dir.path().join("x"), &manifest, 200, 4).unwrap();
    let records = Records::Store(Box::new(store));
    // The reference: every record in the store's order, row by row into batches.
    let mut steps = Batches::<StepColumns>::default();
    let mut llm = Batches::<LlmColumns>::default();
    let mut expected = Vec::new();
    let (mut step_batches_expected, mut llm_batches_expected) = (Vec::new(), Vec::new());
    records
        .for_each_unit_lines(|unit| {
            unit.decode_each_quick(export_step, |step: ExportStep| {
                step_batches_expected.extend(steps.push(&step).unwrap());
                llm_batches_expected.extend(llm.push(&step).unwrap());
                Ok(())
            })
        })
        .unwrap();
    step_batches_expected.extend(steps.finish().unwrap());
    llm_batches_expected.extend(llm.finish().unwrap());
    let rows = |batches: &[RecordBatch]| batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>();
    assert_eq!(
        rows(&step_batches_expected),
        [BATCH_ROWS, 72_000 - BATCH_ROWS]
    );
    assert_eq!(rows(&llm_batches_expected), [18_000]);
    expected.extend(step_batches_expected.into_iter().map(|b| (true, b)));
    expected.extend(llm_batches_expected.into_iter().map(|b| (false, b)));
    for workers in [1, 3] {
        let mut got = step_batches(&records, workers);
        // Each table's batches in order; the two tables' interleaved as they filled.
        got.sort_by_key(|(steps, _)| !steps);
        assert_eq!(got, expected, "{workers} workers");
    }
}

#[test]
fn rows_are_gathered_into_full_batches_whatever_their_pieces() {
    let schema = Schema::new(vec![field("n", DataType::UInt64, false)]);
    let piece = |from: u64, len: u64| {
        let values = arrow_array::UInt64Array::from_iter_values(from..from + len);
        RecordBatch::try_new(Arc::new(schema.clone()), vec![Arc::new(values)]).unwrap()
    };
    let mut rebatch = Rebatch::new(schema.clone());
    let mut batches = Vec::new();
    let mut from = 0;
    // Pieces smaller than a batch, one ending exactly on a batch, one spanning two.
    for len in [10, BATCH_ROWS - 10, 7, 2 * BATCH_ROWS + 3, 0, 5] {
        batches.extend(rebatch.push(piece(from, len as u64)).unwrap());
        from += len as u64;
    }
    batches.extend(rebatch.finish().unwrap());
    assert!(rebatch.finish().unwrap().is_empty());
    let sizes: Vec<usize> = batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(sizes, [BATCH_ROWS, BATCH_ROWS, BATCH_ROWS, 15]);
    let all: Vec<u64> = batches
        .iter()
        .flat_map(|b| {
            let column = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::UInt64Array>();
            column.unwrap().values().to_vec()
        })
        .collect();
    assert_eq!(all, (0..from).collect::<Vec<u64>>());
}

/// A run of `episodes` short episodes of one operator.
fn short_run(dir: &Path, episodes: u32) -> Records {
    let manifest = synthetic::manifest("x", &["a"], episodes, 1);
    let (_, store) = synthetic::write_run(&dir.join("x"), &manifest, 5, 2).unwrap();
    Records::Store(Box::new(store))
}

/// The episode index of the records of `unit`.
fn episode_of(unit: &UnitLines) -> Result<u32, RecorderError> {
    let mut first = None;
    unit.decode_each_quick(export_step, |step: ExportStep| {
        first.get_or_insert(step.episode_index);
        Ok(())
    })?;
    first.ok_or_else(|| RecorderError::io(Path::new("empty unit"), std::io::Error::other("")))
}

#[test]
fn mapped_units_come_in_order_and_the_first_error_stops_them() {
    let dir = tempfile::tempdir().unwrap();
    let records = short_run(dir.path(), 40);
    let mut seen = Vec::new();
    records
        .map_units(3, episode_of, |episode| {
            seen.push(episode);
            Ok(())
        })
        .unwrap();
    assert_eq!(seen, (0..40).collect::<Vec<u32>>());
    // A unit that cannot be mapped: the units before it are handed over, its error given.
    seen.clear();
    let failed = records.map_units(
        3,
        |unit| match episode_of(unit)? {
            7 => Err(RecorderError::io(
                Path::new("unit 7"),
                std::io::Error::other("bad"),
            )),
            episode => Ok(episode),
        },
        |episode| {
            seen.push(episode);
            Ok(())
        },
    );
    assert!(failed.unwrap_err().to_string().contains("unit 7"));
    assert_eq!(seen, (0..7).collect::<Vec<u32>>());
    // A result that cannot be taken: the reading stops with its error, nothing waits.
    let failed = records.map_units(2, episode_of, |episode| match episode {
        3 => Err(RecorderError::io(
            Path::new("taking 3"),
            std::io::Error::other("full"),
        )),
        _ => Ok(()),
    });
    assert!(failed.unwrap_err().to_string().contains("taking 3"));
}
