//! The one-command comparison: `cargo run --release -p compare`.
//!
//! Runs quick versions of the benches' overhead, slow-head, slow-source and
//! memory workloads (the same code, from `benches/common`) in one process, on
//! one tokio current-thread runtime. Each implementation is measured several
//! times, interleaved with the others so that a burst of machine noise hits
//! them all alike, and the median is kept. Prints tables of time per item and
//! ratios against `buffer_unordered` and futures-buffered, and writes the same
//! figures as an SVG chart, `compare.svg` in cargo's target directory, whose
//! path it prints. Figures are relative: compare columns of one run, not runs on
//! different machines.
//!
//! Then the spawned section (`spawned.rs`): spawned mode against a task per
//! item and `JoinSet` + `Semaphore` on 2-thread tokio and smol executors, its
//! CPU scaling against OS threads, and a huge worker budget over a few items;
//! drawn as `compare-spawned.svg`. `cargo run --release -p compare -- spawned`
//! runs that section alone.

// The one exception is the counting global allocator the memory workload needs,
// which lives in `benches/common` with the memory bench.
#![deny(unsafe_code)]

mod chart;
#[allow(unsafe_code)]
#[path = "../../../benches/common/mod.rs"]
mod common;
mod measure;
mod progress;
mod report;
mod spawned;
mod target_dir;

use std::error::Error;
use std::time::Instant;

use common::CountingAllocator;
use progress::Progress;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> Result<(), Box<dyn Error>> {
    // Found before measuring, so that a problem with cargo stops the tool at
    // once rather than after every measurement.
    let target = target_dir::target_directory()?;
    let (chart, spawned_chart) = (
        target.join("compare.svg"),
        target.join("compare-spawned.svg"),
    );
    let spawned_only = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("spawned") => true,
        Some(other) => return Err(format!("unknown section {other:?}: try `spawned`").into()),
    };

    let runtime = common::tokio_runtime();
    let steps = if spawned_only { 0 } else { measure::steps() };
    let mut progress = Progress::new(steps + spawned::steps());
    let started = Instant::now();
    let results = (!spawned_only).then(|| measure::all(&runtime, &mut progress));
    let spawned_results = spawned::measure(&mut progress);
    progress.finish();

    if let Some(results) = &results {
        println!(
            "bounded-buffered comparison: tokio current-thread runtime, {} CPUs, medians of interleaved runs; \
             figures are relative to this machine.\n",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        report::print(results);
        println!();
    }
    spawned::print(&spawned_results);

    if let Some(results) = &results {
        chart::draw(&chart, results)?;
        println!("\nchart: {}", chart.display());
    }
    spawned::draw(&spawned_chart, &spawned_results)?;
    println!(
        "chart: {}\n(all measurements took {:.1} s)",
        spawned_chart.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
