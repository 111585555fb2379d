//! Reading a finished run from its JSON-lines logs (as `RunDir::records` does, without
//! opening the store) against reading it from its store, in one process, same records.
//!
//! Writes a synthetic run of `MOSAIC_BENCH_RECORDS` step records (default 100,000:
//! episodes of 200 steps × 4 agents, one LLM agent among them, two operators, written
//! interleaved by two lanes as a run with parallelism 2 writes them), then times, best of
//! three, `report::build`, a JSON-lines export and the steps of one unit from each, and
//! prints the logs/store ratios.
//!
//! `cargo bench -p mosaic-recorder --bench reading`

use mosaic_recorder::export::{ExportFormat, ExportRecords, export};
use mosaic_recorder::report::build;
use mosaic_recorder::synthetic;
use mosaic_recorder::{Durability, Records, RunDir, Unit};
use std::time::{Duration, Instant};

const STEPS: u32 = 200;

/// Something done with a run's records.
type Task<'a> = dyn Fn(&Records) + 'a;
const AGENTS: usize = 4;

fn main() {
    let records: u64 = std::env::var("MOSAIC_BENCH_RECORDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let per_episode = u64::from(STEPS) * AGENTS as u64;
    let episodes = records.div_ceil(per_episode).div_ceil(2).max(1) as u32;
    let dir = tempfile::tempdir().expect("temporary directory");
    let manifest = synthetic::manifest("bench", &["a", "b"], episodes, 0);
    let path = dir.path().join("bench");
    {
        let (run, store) = RunDir::create(&path, &manifest).expect("run dir");
        let mut writer = run.writer(&store, Durability::Flush).expect("writer");
        let all = synthetic::run_episodes(&manifest, STEPS, AGENTS);
        let (a, b) = all.split_at(all.len() / 2);
        // Two lanes: an episode of each operator at a time, their steps interleaved in
        // batches of 16 steps.
        for (x, y) in a.iter().zip(b) {
            for (xs, ys) in x.steps.chunks(16).zip(y.steps.chunks(16)) {
                xs.iter()
                    .chain(ys)
                    .for_each(|s| writer.write_step(s).expect("step"));
            }
            for episode in [x, y] {
                writer.write_episode(&episode.record).expect("episode");
                writer.commit().expect("commit");
                writer.mark_complete(&episode.record).expect("mark");
            }
        }
        writer.close().expect("close");
    }
    synthetic::wait_for_unlock(&path.join("store")).expect("store unlocked");
    let run = RunDir::open(&path).expect("run");
    let written = 2 * u64::from(episodes) * per_episode;
    let logs = || run.records().expect("records");
    assert!(
        matches!(logs(), Records::Logs { .. }),
        "a finished run reads from its logs"
    );
    let store = || Records::Store(Box::new(run.store().expect("store")));
    let unit = Unit::new("b", episodes / 2);

    let best = |what: &dyn Fn() -> Records, task: &dyn Fn(&Records)| -> Duration {
        (0..3)
            .map(|_| {
                let records = what();
                let start = Instant::now();
                task(&records);
                start.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let tasks: [(&str, &Task); 3] = [
        ("report::build", &|records| {
            build(&run, records).expect("report");
        }),
        ("export steps as JSON lines", &|records| {
            export(
                records,
                ExportRecords::Steps,
                ExportFormat::Jsonl,
                &mut std::io::sink(),
            )
            .expect("export");
        }),
        ("steps of one unit", &|records| {
            assert_eq!(
                records.steps_of(&unit).expect("steps").len() as u64,
                per_episode
            );
        }),
    ];
    println!("{written} step records, {} units", 2 * episodes);
    for (name, task) in tasks {
        let (from_logs, from_store) = (best(&logs, task), best(&store, task));
        println!(
            "{name}: logs {:.1} ms, store {:.1} ms, logs/store {:.2}",
            from_logs.as_secs_f64() * 1e3,
            from_store.as_secs_f64() * 1e3,
            from_logs.as_secs_f64() / from_store.as_secs_f64()
        );
    }
}
