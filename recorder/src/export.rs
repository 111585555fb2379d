//! Export of a run's records as JSON lines or CSV.

use crate::error::{RecorderError, Result};
use crate::report::csv_field;
use crate::run_dir::Records;
use serde::Serialize;
use std::io::Write;

/// Output format of an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// One JSON object per line, the records as recorded.
    Jsonl,
    /// A header and one row per record (per agent of an episode for episode records);
    /// nested values (events, decision, metrics) as JSON text.
    Csv,
}

/// Which records to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportRecords {
    /// Step records.
    Steps,
    /// Episode roll-ups.
    Episodes,
}

const STEP_COLUMNS: &[&str] = &[
    "schema",
    "run_id",
    "operator_id",
    "episode_id",
    "episode_index",
    "seed",
    "step_index",
    "agent_id",
    "paradigm",
    "kind",
    "action",
    "action_label",
    "decision_source",
    "reward",
    "terminated",
    "truncated",
    "observation",
    "events",
    "decision",
    "decision_us",
    "timestamp",
];

const EPISODE_COLUMNS: &[&str] = &[
    "schema",
    "run_id",
    "operator_id",
    "episode_id",
    "episode_index",
    "seed",
    "env",
    "steps",
    "terminated",
    "truncated",
    "error",
    "metrics",
    "duration_ms",
    "steps_per_s",
    "timestamp",
];

const AGENT_COLUMNS: &[&str] = &[
    "agent_id",
    "team",
    "paradigm",
    "kind",
    "total_reward",
    "outcome",
    "decisions",
    "timeouts",
    "errors",
];

fn cell(value: Option<&serde_json::Value>) -> String {
    match value {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => csv_field(s),
        Some(v @ (serde_json::Value::Array(_) | serde_json::Value::Object(_))) => {
            csv_field(&v.to_string())
        }
        Some(v) => v.to_string(),
    }
}

fn row(out: &mut Vec<u8>, value: &serde_json::Value, columns: &[&str]) {
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(cell(value.get(*column)).as_bytes());
    }
}

/// Writes the records of the complete units to `out`; returns how many were written.
pub fn export(
    records: &Records,
    what: ExportRecords,
    format: ExportFormat,
    out: &mut dyn Write,
) -> Result<u64> {
    let io = |e| RecorderError::io("export output", e);
    let mut line = Vec::with_capacity(1024);
    let mut count = 0u64;
    let emit = |line: &[u8], out: &mut dyn Write| out.write_all(line).map_err(io);
    match (what, format) {
        (ExportRecords::Steps, ExportFormat::Csv) => {
            emit(format!("{}\n", STEP_COLUMNS.join(",")).as_bytes(), out)?;
        }
        (ExportRecords::Episodes, ExportFormat::Csv) => {
            let header: Vec<String> = EPISODE_COLUMNS
                .iter()
                .map(|c| (*c).to_owned())
                .chain(AGENT_COLUMNS.iter().map(|c| format!("agent.{c}")))
                .collect();
            emit(format!("{}\n", header.join(",")).as_bytes(), out)?;
        }
        _ => {}
    }
    let mut write_record = |record: &dyn erased::Record, out: &mut dyn Write| -> Result<()> {
        line.clear();
        match format {
            ExportFormat::Jsonl => record.json(&mut line)?,
            ExportFormat::Csv => record.csv(&mut line)?,
        }
        count += 1;
        out.write_all(&line).map_err(io)
    };
    match what {
        ExportRecords::Steps => {
            records.for_each_step(|step| write_record(step, out))?;
        }
        ExportRecords::Episodes => {
            for episode in records.episodes()? {
                write_record(&episode, out)?;
            }
        }
    }
    out.flush().map_err(io)?;
    Ok(count)
}

/// Serialising step and episode records through one interface.
mod erased {
    use super::*;
    use mosaic_core::record::{EpisodeRecord, StepRecord};

    pub(super) trait Record {
        fn json(&self, out: &mut Vec<u8>) -> Result<()>;
        fn csv(&self, out: &mut Vec<u8>) -> Result<()>;
    }

    fn json_line<T: Serialize>(record: &T, out: &mut Vec<u8>) -> Result<()> {
        serde_json::to_writer(&mut *out, record)?;
        out.push(b'\n');
        Ok(())
    }

    impl Record for StepRecord {
        fn json(&self, out: &mut Vec<u8>) -> Result<()> {
            json_line(self, out)
        }

        fn csv(&self, out: &mut Vec<u8>) -> Result<()> {
            row(out, &serde_json::to_value(self)?, STEP_COLUMNS);
            out.push(b'\n');
            Ok(())
        }
    }

    impl Record for EpisodeRecord {
        fn json(&self, out: &mut Vec<u8>) -> Result<()> {
            json_line(self, out)
        }

        fn csv(&self, out: &mut Vec<u8>) -> Result<()> {
            let value = serde_json::to_value(self)?;
            let none = [serde_json::Value::Null];
            let agents = match value.get("agents").and_then(|a| a.as_array()) {
                Some(agents) if !agents.is_empty() => agents.as_slice(),
                // An episode without agents still gets its row.
                _ => &none[..],
            };
            for agent in agents {
                row(out, &value, EPISODE_COLUMNS);
                out.push(b',');
                row(out, agent, AGENT_COLUMNS);
                out.push(b'\n');
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use mosaic_core::record::{EpisodeRecord, StepRecord};

    #[test]
    fn exports_every_complete_record() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = synthetic::manifest("x", &["a", "b"], 3, 1);
        let (_, store) = synthetic::write_run(&dir.path().join("x"), &manifest, 4, 2).unwrap();
        let records = Records::Store(Box::new(store));
        let mut out = Vec::new();
        let n = export(
            &records,
            ExportRecords::Steps,
            ExportFormat::Jsonl,
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2 * 3 * 4 * 2);
        let expected: Vec<StepRecord> = synthetic::run_episodes(&manifest, 4, 2)
            .into_iter()
            .flat_map(|e| e.steps.concat())
            .collect();
        let read: Vec<StepRecord> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(read, expected);

        let mut out = Vec::new();
        export(&records, ExportRecords::Steps, ExportFormat::Csv, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap().split(',').count(), STEP_COLUMNS.len());
        // The decision JSON holds commas: quoted, so the first row has the right shape.
        let first = lines.next().unwrap();
        assert!(
            first.starts_with("mosaic.step/1,x,a,x-a-ep000000,0,1,0,green_0,llm,llm,"),
            "{first}"
        );
        assert!(first.contains("\"{\"\"message\"\""), "{first}");

        let mut out = Vec::new();
        let n = export(
            &records,
            ExportRecords::Episodes,
            ExportFormat::Csv,
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 6);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1 + 6 * 2);
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with("agent.timeouts,agent.errors")
        );
        let mut out = Vec::new();
        export(
            &records,
            ExportRecords::Episodes,
            ExportFormat::Jsonl,
            &mut out,
        )
        .unwrap();
        let first: EpisodeRecord =
            serde_json::from_str(String::from_utf8(out).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!(first.episode_id, "x-a-ep000000");
    }
}
