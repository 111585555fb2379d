use super::*;
use crate::synthetic;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::json;

/// The walk's read of `line` is serde's, when it answers.
fn same(line: &str) -> bool {
    let quick = export_step(line.as_bytes());
    let slow = serde_json::from_str::<ExportStep>(line).ok();
    if let Some(quick) = &quick {
        assert_eq!(Some(quick), slow.as_ref(), "{line}");
    }
    quick.is_some()
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
