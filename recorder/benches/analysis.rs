//! Analysis at scale: `report::build` and the Parquet export of a large synthetic run.
//!
//! Writes a run of `MOSAIC_BENCH_RECORDS` step records (default 10 million: episodes of
//! 200 steps × 4 agents, one LLM agent among them) into a run store, then times the report
//! and, with the `parquet` feature, the Parquet export, and compares the Parquet files'
//! size with the JSON lines of the same records (counted as they would be written, not
//! written: the JSON of 10M records takes gigabytes of disk). Prints the figures, each
//! with the CPU time the process spent on it (all its threads; on a machine shared with
//! other work, the wall time depends on their load, the CPU time much less).
//!
//! `cargo bench -p mosaic-recorder --features parquet --bench analysis`

use mosaic_recorder::report::build;
use mosaic_recorder::synthetic;
use mosaic_recorder::{Records, RunDir, RunStore};
use std::time::Instant;

const STEPS: u32 = 200;
const AGENTS: usize = 4;

fn main() {
    let records: u64 = std::env::var("MOSAIC_BENCH_RECORDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000_000);
    let per_episode = u64::from(STEPS) * AGENTS as u64;
    let episodes = records.div_ceil(per_episode) as u32;
    let dir = tempfile::tempdir().expect("temporary directory");
    let manifest = synthetic::manifest("bench", &["a", "b"], episodes.div_ceil(2), 0);
    let path = dir.path().join("bench");
    let start = Instant::now();
    let jsonl_bytes = {
        let (_, store) = RunDir::create(&path, &manifest).expect("run dir");
        write_store(&store, &manifest)
    };
    synthetic::wait_for_unlock(&path.join("store")).expect("store unlocked");
    let written = 2 * u64::from(manifest.experiment.episodes) * per_episode;
    eprintln!(
        "wrote {written} step records in {:.1} s (JSON lines would be {:.0} MB)",
        start.elapsed().as_secs_f64(),
        jsonl_bytes as f64 / 1e6
    );

    let store_bytes = dir_size(&path.join("store"));
    eprintln!("store: {:.0} MB", store_bytes as f64 / 1e6);

    let run = RunDir::open(&path).expect("run");
    // The records are in the store only (their JSON lines would take gigabytes): read
    // them from it, not as `RunDir::records` reads a finished run (from the logs).
    let records = || Records::Store(Box::new(run.store().expect("store")));
    // Reading alone: every step record decoded from the store, nothing done with it.
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let mut read = 0u64;
    records()
        .for_each_step(|_| {
            read += 1;
            Ok(())
        })
        .expect("read");
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "reading the step records: {read} in {seconds:.2} s, {:.2} s of CPU ({:.2} M records/s)",
        cpu_seconds() - cpu,
        read as f64 / seconds / 1e6
    );

    let (start, cpu) = (Instant::now(), cpu_seconds());
    let report = build(&run, &records()).expect("report");
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "report::build: {written} step records, {} episodes in {seconds:.2} s, {:.2} s of CPU ({:.2} M records/s)",
        report.operators.iter().map(|o| o.episodes).sum::<usize>(),
        cpu_seconds() - cpu,
        written as f64 / seconds / 1e6
    );

    #[cfg(feature = "parquet")]
    {
        let out = dir.path().join("parquet");
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let counts = mosaic_recorder::parquet::export_parquet(&records(), &out).expect("export");
        let seconds = start.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu;
        let size = dir_size(&out);
        let rows = counts.steps + counts.episodes + counts.llm_usage;
        println!(
            "parquet export: {} step + {} episode + {} LLM rows in {seconds:.2} s, {cpu:.2} s of CPU: {:.2} M step records/s ({:.2} M rows/s); {:.1} MB = {:.1}% of the {:.0} MB of JSON lines",
            counts.steps,
            counts.episodes,
            counts.llm_usage,
            counts.steps as f64 / seconds / 1e6,
            rows as f64 / seconds / 1e6,
            size as f64 / 1e6,
            100.0 * size as f64 / jsonl_bytes as f64,
            jsonl_bytes as f64 / 1e6
        );
    }
}

/// CPU time of this process so far (user and system, all threads), from
/// `/proc/self/stat` in clock ticks of 1/100 s; NaN where that cannot be read.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are the
    // 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

/// Bytes of the files in `dir` and below.
fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("directory")
        .map(|entry| {
            let entry = entry.expect("entry");
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                dir_size(&entry.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// Writes every episode into the store (synced once at the end); returns the bytes the
/// same records take as JSON lines.
fn write_store(store: &RunStore, manifest: &mosaic_core::record::RunManifest) -> u64 {
    let mut writer = store.writer();
    let mut jsonl = 0u64;
    for op in &manifest.experiment.operators {
        for (index, seed) in manifest.seeds.iter().enumerate() {
            let unit = synthetic::unit(&manifest.run_id, &op.id, index as u32, *seed);
            let episode = synthetic::episode(&unit, STEPS, AGENTS);
            for step in &episode.steps {
                for record in step {
                    jsonl += serde_json::to_vec(record).expect("json").len() as u64 + 1;
                }
                writer.write_step(step).expect("write step");
            }
            jsonl += serde_json::to_vec(&episode.record).expect("json").len() as u64 + 1;
            writer
                .write_episode(&episode.record, None)
                .expect("episode");
            writer.mark_complete(&episode.record).expect("mark");
        }
    }
    writer.sync().expect("sync");
    jsonl
}
