//! Durable step records per second into the run store and into JSON lines.
//!
//! Each measurement writes episodes of 200 steps × 4 agents (800 step records, like 2v2
//! soccer) into a fresh run directory, making every episode durable before the next, as
//! the telemetry sinks do. Baseline: serialising the same records into memory. The summary
//! at the end prints records/s and the ratios between the destinations.

use criterion::{Criterion, Throughput};
use mosaic_recorder::synthetic::{self, SyntheticEpisode};
use mosaic_recorder::{Durability, JsonlWriter, RunDir};
use std::time::{Duration, Instant};

const EPISODES: u32 = 40;
const STEPS: u32 = 200;
const AGENTS: usize = 4;
const RECORDS: u64 = EPISODES as u64 * STEPS as u64 * AGENTS as u64;

#[derive(Clone, Copy, Debug)]
enum Destination {
    /// Serialisation into memory only.
    Serialise,
    /// `steps.jsonl` + `episodes.jsonl` alone.
    Jsonl(Durability),
    /// The store alone, synced per episode.
    Store,
    /// The store alone, synced once at the end: its cost without per-episode syncs.
    StoreSyncAtEnd,
    /// What the telemetry sink does: both, each record serialised once, the JSON lines
    /// committed per episode (the store catches up from them after a crash).
    Run(Durability),
}

impl Destination {
    fn label(self) -> String {
        match self {
            Destination::Serialise => "serialise (baseline)".into(),
            Destination::Jsonl(d) => format!("jsonl {d:?}"),
            Destination::Store => "store, sync per episode".into(),
            Destination::StoreSyncAtEnd => "store, one sync at end".into(),
            Destination::Run(d) => format!("run: jsonl {d:?} + store"),
        }
    }
}

fn manifest() -> mosaic_core::record::RunManifest {
    synthetic::manifest("bench", &["soccer"], EPISODES, 0)
}

fn episodes() -> Vec<SyntheticEpisode> {
    synthetic::run_episodes(&manifest(), STEPS, AGENTS)
}

/// Writes every episode durably; returns the time taken (directory creation excluded).
fn write(destination: Destination, episodes: &[SyntheticEpisode]) -> Duration {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (run, store) = RunDir::create(&dir.path().join("bench"), &manifest()).expect("run dir");
    let start = Instant::now();
    match destination {
        Destination::Serialise => {
            let mut out = Vec::with_capacity(1 << 20);
            for episode in episodes {
                for record in episode.steps.iter().flatten() {
                    serde_json::to_writer(&mut out, record).expect("serialise");
                    out.push(b'\n');
                }
                out.clear();
            }
        }
        Destination::Jsonl(durability) => {
            let mut steps = JsonlWriter::open(&run.steps_path()).expect("steps");
            let mut lines = JsonlWriter::open(&run.episodes_path()).expect("episodes");
            for episode in episodes {
                for record in episode.steps.iter().flatten() {
                    steps.append(record).expect("append");
                }
                steps.commit(durability).expect("commit");
                lines.append(&episode.record).expect("append");
                lines.commit(durability).expect("commit");
            }
        }
        Destination::Store | Destination::StoreSyncAtEnd => {
            let mut writer = store.writer();
            for episode in episodes {
                for step in &episode.steps {
                    writer.write_step(step).expect("write step");
                }
                writer
                    .write_episode(&episode.record, None)
                    .expect("episode");
                writer.mark_complete(&episode.record).expect("mark");
                if matches!(destination, Destination::Store) {
                    writer.sync().expect("sync");
                }
            }
            writer.sync().expect("sync");
        }
        Destination::Run(durability) => {
            let mut writer = run.writer(&store, durability).expect("writer");
            for episode in episodes {
                for step in &episode.steps {
                    writer.write_step(step).expect("write step");
                }
                writer.write_episode(&episode.record).expect("episode");
                writer.commit().expect("commit");
                writer.mark_complete(&episode.record).expect("mark");
            }
            writer.close().expect("close");
        }
    }
    start.elapsed()
}

const DESTINATIONS: [Destination; 7] = [
    Destination::Serialise,
    Destination::Jsonl(Durability::Flush),
    Destination::Jsonl(Durability::Sync),
    Destination::Store,
    Destination::StoreSyncAtEnd,
    Destination::Run(Durability::Flush),
    Destination::Run(Durability::Sync),
];

fn bench(c: &mut Criterion) {
    let episodes = episodes();
    let mut group = c.benchmark_group("durable_step_records");
    group.throughput(Throughput::Elements(RECORDS));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for destination in DESTINATIONS {
        group.bench_function(destination.label(), |b| {
            b.iter_custom(|iterations| {
                (0..iterations).map(|_| write(destination, &episodes)).sum()
            });
        });
    }
    group.finish();
}

/// Measures each destination again (median of 3) and prints records/s with ratios.
fn summary() {
    let episodes = episodes();
    let rate = |destination| {
        let mut times: Vec<Duration> = (0..3).map(|_| write(destination, &episodes)).collect();
        times.sort();
        RECORDS as f64 / times[1].as_secs_f64()
    };
    let rates: Vec<(Destination, f64)> = DESTINATIONS.iter().map(|d| (*d, rate(*d))).collect();
    let baseline = rates[0].1;
    let jsonl_sync = rates[2].1;
    println!(
        "\ndurable step records/s ({EPISODES} episodes × {STEPS} steps × {AGENTS} agents, durable per episode)"
    );
    println!(
        "{:<24} {:>14} {:>12} {:>14}",
        "destination", "records/s", "÷ baseline", "÷ jsonl Sync"
    );
    for (destination, r) in rates {
        println!(
            "{:<24} {:>14.0} {:>12.3} {:>14.3}",
            destination.label(),
            r,
            r / baseline,
            r / jsonl_sync
        );
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    summary();
    criterion.final_summary();
}
