//! The tables printed on stdout, with each workload's target and whether this
//! run met it.

use crate::common::{Adapter, Family, MEMORY_SIZES, MemoryCase, PAGE_LEN, PAGES, SLOW_HEAD_ITEMS};
use crate::measure::{
    Measured, MemoryRow, OVERHEAD_ITEMS, OVERHEAD_REPS, OverheadCell, Results, SLOW_HEAD_REPS,
    SLOW_SOURCE_REPS, allocations_of, seconds_of,
};

pub fn print(results: &Results) {
    overhead(&results.overhead);
    slow_head(&results.slow_head);
    slow_source(&results.slow_source);
    memory(&results.memory);
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

// ---------------------------------------------------------------------------
// Overhead

/// (adapter, baseline, description, the target for the worst cell).
const OVERHEAD_TARGETS: [(Family, Family, &str, f64); 5] = [
    (
        Family::Bounded,
        Family::BufferUnordered,
        "bounded(w, w) / buffer_unordered",
        0.35,
    ),
    (
        Family::BoundedNoPrefetch,
        Family::BufferUnordered,
        "bounded(w, 0) / buffer_unordered",
        0.35,
    ),
    (
        Family::Bounded,
        Family::FbUnordered,
        "bounded(w, w) / fb::buffered_unordered",
        0.8,
    ),
    (
        Family::BoundedNoPrefetch,
        Family::FbUnordered,
        "bounded(w, 0) / fb::buffered_unordered",
        0.8,
    ),
    (
        Family::BoundedOrdered,
        Family::Buffered,
        "bounded(w, w).ordered(w) / buffered",
        0.4,
    ),
];

/// The overhead table's columns: family and heading.
const OVERHEAD_COLUMNS: [(Family, &str); 8] = [
    (Family::Sequential, "then"),
    (Family::Bounded, "bounded"),
    (Family::BoundedNoPrefetch, "b0"),
    (Family::BoundedOrdered, "ordered"),
    (Family::BufferUnordered, "buf_unord"),
    (Family::Buffered, "buffered"),
    (Family::FbUnordered, "fb_unord"),
    (Family::FbOrdered, "fb_ord"),
];

/// The ratio columns: (adapter, baseline, heading).
const OVERHEAD_RATIOS: [(Family, Family, &str); 6] = [
    (Family::Bounded, Family::BufferUnordered, "b/bu"),
    (Family::BoundedNoPrefetch, Family::BufferUnordered, "b0/bu"),
    (Family::Bounded, Family::FbUnordered, "b/fb"),
    (Family::BoundedNoPrefetch, Family::FbUnordered, "b0/fb"),
    (Family::BoundedOrdered, Family::Buffered, "o/buf"),
    (Family::BoundedOrdered, Family::FbOrdered, "o/fbo"),
];

fn overhead(cells: &[OverheadCell]) {
    println!(
        "Overhead: {OVERHEAD_ITEMS} futures per run, median of {OVERHEAD_REPS}, ns per item (lower is better)"
    );
    println!(
        "  bounded(w, w), bounded(w, 0) (b0) and bounded(w, w).ordered(w) against futures' \
         buffer_unordered(w) / buffered(w) and futures-buffered (fb)"
    );
    print!("  {:<10} {:>5}", "futures", "w");
    for (_, heading) in OVERHEAD_COLUMNS {
        print!(" {heading:>9}");
    }
    print!(" |");
    for (_, _, heading) in OVERHEAD_RATIOS {
        print!(" {heading:>6}");
    }
    println!();
    for cell in cells {
        print!("  {:<10} {:>5}", cell.kind.name(), cell.workers);
        for (family, _) in OVERHEAD_COLUMNS {
            print!(" {:>9.1}", cell.ns_per_item(family));
        }
        print!(" |");
        for (family, against, _) in OVERHEAD_RATIOS {
            print!(" {:>6.2}", cell.ratio(family, against));
        }
        println!();
    }
    for (family, against, what, target) in OVERHEAD_TARGETS {
        let worst = cells
            .iter()
            .map(|cell| (cell.ratio(family, against), cell))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .expect("at least one cell");
        println!(
            "  worst {what}: {:.2} ({} w={}); target <= {target}: {}",
            worst.0,
            worst.1.kind.name(),
            worst.1.workers,
            verdict(worst.0 <= target)
        );
    }
    println!();
}

// ---------------------------------------------------------------------------
// Slow head and slow source

fn slow_head(measured: &[Measured]) {
    println!(
        "Slow head (ordered): {SLOW_HEAD_ITEMS} items, 16 workers, handlers of one 1 ms timer sleep, \
         every 16th item 50 sleeps; median of {SLOW_HEAD_REPS}"
    );
    println!(
        "  {:<34} {:>9} {:>18} {:>10}",
        "adapter", "ms", "speedup vs buffered", "peak held"
    );
    let baseline = seconds_of(measured, Family::Buffered);
    for m in measured {
        println!(
            "  {:<34} {:>9.1} {:>17.2}x {:>10}",
            m.adapter.label(),
            m.seconds * 1e3,
            baseline / m.seconds,
            m.peak_held.map_or("-".to_owned(), |p| p.to_string())
        );
    }
    // The widest window is the last of the set.
    if let Some(widest) = measured.last() {
        if let Adapter::Ordered { window, .. } = widest.adapter {
            let speedup = baseline / widest.seconds;
            let peak = widest.peak_held.unwrap_or(usize::MAX);
            println!(
                "  target: r = 16w at least 4x buffered(w) with peak held <= r: {speedup:.2}x, peak held {peak} \
                 <= {window}: {}",
                verdict(speedup >= 4.0 && peak <= window)
            );
        }
    }
    println!();
}

fn slow_source(measured: &[Measured]) {
    println!(
        "Slow source: {PAGES} pages of {PAGE_LEN} items, 16 workers, 1 ms handlers, each page fetched \
         in 4 handler times; median of {SLOW_SOURCE_REPS}"
    );
    println!(
        "  {:<34} {:>9} {:>26}",
        "adapter", "ms", "speedup vs buffer_unordered"
    );
    let baseline = seconds_of(measured, Family::BufferUnordered);
    for m in measured {
        println!(
            "  {:<34} {:>9.1} {:>25.2}x",
            m.adapter.label(),
            m.seconds * 1e3,
            baseline / m.seconds
        );
    }
    // The deepest waiting queue is the last of the set.
    if let Some(deepest) = measured.last() {
        let speedup = baseline / deepest.seconds;
        println!(
            "  target: {} at least 1.5x buffer_unordered: {speedup:.2}x: {}",
            deepest.adapter.label(),
            verdict(speedup >= 1.5)
        );
    }
    println!();
}

// ---------------------------------------------------------------------------
// Memory

fn memory(rows: &[MemoryRow]) {
    println!(
        "Memory: yield-once items, 16 workers (waiting 16 for bounded), one run each, counted by a global allocator"
    );
    println!(
        "  {:<34} {:>9} {:>12} {:>16} {:>9}",
        "implementation", "N", "allocations", "peak live bytes", "ns/item"
    );
    for row in rows {
        println!(
            "  {:<34} {:>9} {:>12} {:>16} {:>9.1}",
            row.case.label(),
            row.n,
            row.report.allocations,
            row.report.peak_bytes,
            row.seconds * 1e9 / row.n as f64
        );
    }
    let (small, large) = (MEMORY_SIZES[0], MEMORY_SIZES[MEMORY_SIZES.len() - 1]);
    let growth = |case: MemoryCase| {
        allocations_of(rows, case, large) as f64 / allocations_of(rows, case, small) as f64
    };
    let bounded = growth(MemoryCase::BOUNDED);
    let spawned = growth(MemoryCase::SpawnAllSemaphore);
    let size_ratio = (large / small) as f64;
    println!(
        "  allocations at N = {large} over N = {small}: bounded {bounded:.3}x (target 1 +- 1%: {}), \
         spawn + Semaphore {spawned:.1}x (N grew {size_ratio:.0}x)",
        verdict((bounded - 1.0).abs() <= 0.01),
    );
}
