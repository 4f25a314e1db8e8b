//! What `.metrics(name)` costs a service, measured as one would run it: the
//! Prometheus exporter's recorder (`metrics-exporter-prometheus`) installed as
//! the global recorder, against the same stream without `.metrics`, side by
//! side in one process. Each cell drains 10^6 ready futures through
//! `bounded(16, 16)` on a tokio current-thread runtime; the cells are
//! interleaved, each run 5 times, and the median is printed with its ratio
//! to the same stream without `.metrics`. The first block runs before any
//! recorder is installed (the facade then hands out no-op handles).
//!
//! ```text
//! cargo run --release -p compare --features prometheus --bin metrics_cost [items]
//! ```

#![forbid(unsafe_code)]

use std::time::Instant;

use bounded_buffered::BoundedStreamExt;
use futures::stream::{self, StreamExt};

/// One way to run the stream.
#[derive(Clone, Copy)]
enum Cell {
    Plain,
    Metrics,
    Timed,
    TimedMetrics,
    Spawned,
    SpawnedMetrics,
}

impl Cell {
    const ALL: [Cell; 6] = [
        Cell::Plain,
        Cell::Metrics,
        Cell::Timed,
        Cell::TimedMetrics,
        Cell::Spawned,
        Cell::SpawnedMetrics,
    ];

    fn name(self) -> &'static str {
        match self {
            Cell::Plain => "bounded",
            Cell::Metrics => "bounded + metrics",
            Cell::Timed => "timed",
            Cell::TimedMetrics => "timed + metrics",
            Cell::Spawned => "spawned",
            Cell::SpawnedMetrics => "spawned + metrics",
        }
    }

    /// The cell this one is compared with: the same stream without `.metrics`.
    fn base(self) -> Option<Cell> {
        match self {
            Cell::Metrics => Some(Cell::Plain),
            Cell::TimedMetrics => Some(Cell::Timed),
            Cell::SpawnedMetrics => Some(Cell::Spawned),
            _ => None,
        }
    }
}

/// Drains `items` ready futures through the cell's stream; returns the
/// nanoseconds per item.
async fn run(cell: Cell, items: u64) -> f64 {
    let jobs = stream::iter(0..items).map(std::future::ready);
    let started = Instant::now();
    let sum: u64 = match cell {
        Cell::Plain => jobs.bounded(16, 16).fold(0, add).await,
        Cell::Metrics => jobs.bounded(16, 16).metrics("cost").fold(0, add).await,
        Cell::Timed => jobs.bounded(16, 16).timed().fold(0, add).await,
        Cell::TimedMetrics => {
            let stream = jobs.bounded(16, 16).timed().metrics("cost");
            stream.fold(0, add).await
        }
        Cell::Spawned => {
            let handle = tokio::runtime::Handle::current();
            jobs.bounded(16, 16).spawn_on(handle).fold(0, add).await
        }
        Cell::SpawnedMetrics => {
            let handle = tokio::runtime::Handle::current();
            let stream = jobs.bounded(16, 16).metrics("cost").spawn_on(handle);
            stream.fold(0, add).await
        }
    };
    let elapsed = started.elapsed();
    assert_eq!(sum, (0..items).sum::<u64>(), "an output lost");
    elapsed.as_nanos() as f64 / items as f64
}

async fn add(sum: u64, value: u64) -> u64 {
    sum + value
}

/// Every cell, `rounds` times interleaved; the median of each.
fn measure(runtime: &tokio::runtime::Runtime, items: u64, rounds: usize) -> Vec<f64> {
    let mut samples = vec![Vec::new(); Cell::ALL.len()];
    for _ in 0..rounds {
        for (at, cell) in Cell::ALL.into_iter().enumerate() {
            samples[at].push(runtime.block_on(run(cell, items)));
        }
    }
    samples
        .into_iter()
        .map(|mut runs| {
            runs.sort_by(f64::total_cmp);
            runs[runs.len() / 2]
        })
        .collect()
}

fn print(title: &str, medians: &[f64]) {
    println!("{title}");
    for (at, cell) in Cell::ALL.into_iter().enumerate() {
        let ratio = cell.base().map_or(String::new(), |base| {
            format!(
                "  {:.2}x {}",
                medians[at] / medians[base as usize],
                base.name()
            )
        });
        println!("  {:<18} {:>7.1} ns/item{ratio}", cell.name(), medians[at]);
    }
}

fn main() {
    let items = std::env::args()
        .nth(1)
        .and_then(|items| items.parse().ok())
        .unwrap_or(1_000_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    println!(
        "metrics cost: {items} ready futures, bounded(16, 16), tokio current-thread, medians of 5 interleaved runs\n"
    );
    print("no recorder installed", &measure(&runtime, items, 5));
    let _handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("the only recorder");
    print(
        "\nmetrics-exporter-prometheus as the global recorder",
        &measure(&runtime, items, 5),
    );
    println!(
        "  {:<18} {:>7.1} ns/item  (the exporter alone: the three samples a timed item gives, recorded one by one)",
        "exporter floor",
        exporter_floor(items)
    );
}

/// The exporter's own cost for what `.timed().metrics(..)` hands it per item:
/// three histogram samples (wait, run, held). The exporter's `record_many`
/// records a batch one sample at a time, so batching in the stream cannot go
/// below this. Median of 5.
fn exporter_floor(items: u64) -> f64 {
    let histograms =
        ["floor_wait", "floor_run", "floor_held"].map(|name| metrics::histogram!(name));
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let started = Instant::now();
            for item in 0..items {
                for histogram in &histograms {
                    histogram.record(std::hint::black_box(item as f64 * 1e-9));
                }
            }
            started.elapsed().as_nanos() as f64 / items as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}
