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
    let chart = target_dir::target_directory()?.join("compare.svg");

    let runtime = common::tokio_runtime();
    let mut progress = Progress::new(measure::steps());
    let started = Instant::now();
    let results = measure::all(&runtime, &mut progress);
    progress.finish();

    println!(
        "bounded-buffered comparison: tokio current-thread runtime, {} CPUs, medians of interleaved runs; \
         figures are relative to this machine.\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    report::print(&results);

    chart::draw(&chart, &results)?;
    println!(
        "\nchart: {}\n(all measurements took {:.1} s)",
        chart.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
