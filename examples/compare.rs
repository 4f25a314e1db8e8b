//! The one-command comparison: `cargo run --release --example compare`.
//!
//! Runs quick versions of the benches' overhead, slow-head, slow-source and
//! memory workloads (the same code, from `benches/common`) in one process, on
//! one tokio current-thread runtime. Each implementation is measured several
//! times, interleaved with the others so that a burst of machine noise hits
//! them all alike, and the median is kept. Prints tables of time per item and
//! ratios against `buffer_unordered` and futures-buffered, and writes the same
//! figures as an SVG chart whose path it prints. Figures are relative: compare
//! columns of one run, not runs on different machines.

#[path = "../benches/common/mod.rs"]
mod common;

use std::error::Error;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{
    Adapter, AllocationReport, CountingAllocator, JobKind, MEMORY_SIZES, MemoryCase,
    OVERHEAD_WORKERS, PAGE_LEN, PAGES, SLOW_HEAD_ITEMS,
};
use plotters::prelude::*;
use tokio::runtime::Runtime;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

const OVERHEAD_ITEMS: u64 = 100_000;
const OVERHEAD_REPS: usize = 9;
const SLOW_HEAD_REPS: usize = 3;
const SLOW_SOURCE_REPS: usize = 5;

fn main() -> Result<(), Box<dyn Error>> {
    let runtime = common::tokio_runtime();
    let mut progress = Progress::new(
        JobKind::ALL.len() * OVERHEAD_WORKERS.len() * (OVERHEAD_REPS + 1) * OVERHEAD_COLUMNS.len()
            + SLOW_HEAD_REPS * 5
            + SLOW_SOURCE_REPS * 5
            + MEMORY_SIZES.len() * 4,
    );
    let started = Instant::now();
    let overhead = measure_overhead(&runtime, &mut progress);
    let slow_head = measure_slow_head(&runtime, &mut progress);
    let slow_source = measure_slow_source(&runtime, &mut progress);
    let memory = measure_memory(&runtime, &mut progress);
    progress.finish();

    println!(
        "bounded-buffered comparison: tokio current-thread runtime, {} CPUs, medians of interleaved runs; \
         figures are relative to this machine.\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    print_overhead(&overhead);
    print_slow_head(&slow_head);
    print_slow_source(&slow_source);
    print_memory(&memory);

    let chart = chart_path();
    draw_chart(&chart, &overhead, &slow_head, &slow_source, &memory)?;
    println!(
        "\nchart: {}\n(all measurements took {:.1} s)",
        chart.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A progress line on stderr, redrawn in place on a terminal and printed once
/// per workload otherwise (so that logs stay readable).
struct Progress {
    done: usize,
    total: usize,
    terminal: bool,
    section: &'static str,
}

impl Progress {
    fn new(total: usize) -> Self {
        Self {
            done: 0,
            total,
            terminal: std::io::stderr().is_terminal(),
            section: "",
        }
    }

    fn step(&mut self, section: &'static str, what: &str) {
        self.done += 1;
        let mut stderr = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(
                stderr,
                "\r\x1b[K[{:>3}/{}] {section}: {what}",
                self.done, self.total
            );
            let _ = stderr.flush();
        } else if section != self.section {
            let _ = writeln!(stderr, "[{:>3}/{}] {section} ...", self.done, self.total);
        }
        self.section = section;
    }

    fn finish(&mut self) {
        if self.terminal {
            eprint!("\r\x1b[K");
        }
        eprintln!("[{}/{}] done", self.done, self.total);
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

/// Runs every adapter `reps` times, round-robin, through `run_once` (which
/// returns the time it measured and the adapter's stats, if any); returns each
/// adapter's median time and the largest `peak_held` its stats reported.
fn interleaved(
    adapters: &[Adapter],
    reps: usize,
    mut run_once: impl FnMut(Adapter) -> (Duration, Option<bounded_buffered::Stats>),
    mut on_step: impl FnMut(Adapter),
) -> Vec<Measured> {
    let mut samples = vec![Vec::with_capacity(reps); adapters.len()];
    let mut peak_held = vec![None::<usize>; adapters.len()];
    for _ in 0..reps {
        for (i, &adapter) in adapters.iter().enumerate() {
            let (elapsed, stats) = run_once(adapter);
            samples[i].push(elapsed.as_secs_f64());
            if let Some(stats) = stats {
                peak_held[i] = Some(peak_held[i].unwrap_or(0).max(stats.peak_held));
            }
            on_step(adapter);
        }
    }
    adapters
        .iter()
        .zip(samples)
        .zip(peak_held)
        .map(|((&adapter, samples), peak_held)| Measured {
            adapter,
            seconds: median(samples),
            peak_held,
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
struct Measured {
    adapter: Adapter,
    seconds: f64,
    peak_held: Option<usize>,
}

fn seconds_of(measured: &[Measured], family: &str) -> f64 {
    measured
        .iter()
        .find(|m| m.adapter.family() == family)
        .map_or(f64::NAN, |m| m.seconds)
}

// ---------------------------------------------------------------------------
// Overhead

struct OverheadCell {
    kind: JobKind,
    workers: usize,
    measured: Vec<Measured>,
}

impl OverheadCell {
    fn ns_per_item(&self, family: &str) -> f64 {
        seconds_of(&self.measured, family) * 1e9 / OVERHEAD_ITEMS as f64
    }

    fn ratio(&self, family: &str, against: &str) -> f64 {
        self.ns_per_item(family) / self.ns_per_item(against)
    }
}

fn measure_overhead(runtime: &Runtime, progress: &mut Progress) -> Vec<OverheadCell> {
    let mut cells = Vec::new();
    for kind in JobKind::ALL {
        for w in OVERHEAD_WORKERS {
            let mut adapters = vec![Adapter::Sequential];
            adapters.extend(Adapter::overhead_set(w));
            // One extra round first, discarded: it grows each adapter's storage
            // and warms the caches, as criterion's warm-up does.
            let label = format!("{} w={w}", kind.name());
            let run_once = |adapter: Adapter| {
                let start = Instant::now();
                let outcome =
                    runtime.block_on(common::run(adapter, common::jobs(OVERHEAD_ITEMS, kind)));
                let elapsed = start.elapsed();
                outcome.check(adapter, OVERHEAD_ITEMS);
                (elapsed, outcome.stats)
            };
            let mut run_once = run_once;
            interleaved(&adapters, 1, &mut run_once, |a| {
                progress.step("overhead (warm-up)", &format!("{label} {}", a.family()))
            });
            let measured = interleaved(&adapters, OVERHEAD_REPS, &mut run_once, |a| {
                progress.step("overhead", &format!("{label} {}", a.family()))
            });
            cells.push(OverheadCell {
                kind,
                workers: w,
                measured,
            });
        }
    }
    cells
}

/// (adapter, baseline, description, the target for the worst cell).
const OVERHEAD_TARGETS: [(&str, &str, &str, f64); 5] = [
    (
        "bounded",
        "buffer_unordered",
        "bounded(w, w) / buffer_unordered",
        0.35,
    ),
    (
        "bounded_no_prefetch",
        "buffer_unordered",
        "bounded(w, 0) / buffer_unordered",
        0.35,
    ),
    (
        "bounded",
        "fb_buffered_unordered",
        "bounded(w, w) / fb::buffered_unordered",
        0.8,
    ),
    (
        "bounded_no_prefetch",
        "fb_buffered_unordered",
        "bounded(w, 0) / fb::buffered_unordered",
        0.8,
    ),
    (
        "bounded_ordered",
        "buffered",
        "bounded(w, w).ordered(w) / buffered",
        0.4,
    ),
];

/// The overhead table's columns: adapter family and column heading.
const OVERHEAD_COLUMNS: [(&str, &str); 8] = [
    ("then", "then"),
    ("bounded", "bounded"),
    ("bounded_no_prefetch", "b0"),
    ("bounded_ordered", "ordered"),
    ("buffer_unordered", "buf_unord"),
    ("buffered", "buffered"),
    ("fb_buffered_unordered", "fb_unord"),
    ("fb_buffered_ordered", "fb_ord"),
];

/// The ratio columns: (adapter, baseline, heading).
const OVERHEAD_RATIOS: [(&str, &str, &str); 6] = [
    ("bounded", "buffer_unordered", "b/bu"),
    ("bounded_no_prefetch", "buffer_unordered", "b0/bu"),
    ("bounded", "fb_buffered_unordered", "b/fb"),
    ("bounded_no_prefetch", "fb_buffered_unordered", "b0/fb"),
    ("bounded_ordered", "buffered", "o/buf"),
    ("bounded_ordered", "fb_buffered_ordered", "o/fbo"),
];

fn print_overhead(cells: &[OverheadCell]) {
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

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

// ---------------------------------------------------------------------------
// Slow head and slow source

fn measure_slow_head(runtime: &Runtime, progress: &mut Progress) -> Vec<Measured> {
    interleaved(
        &common::slow_head_set(),
        SLOW_HEAD_REPS,
        |adapter| {
            let start = Instant::now();
            let outcome = runtime.block_on(common::run(
                adapter,
                common::slow_head_source(SLOW_HEAD_ITEMS),
            ));
            let elapsed = start.elapsed();
            outcome.check(adapter, SLOW_HEAD_ITEMS);
            (elapsed, outcome.stats)
        },
        |a| progress.step("slow head", &a.label()),
    )
}

fn print_slow_head(measured: &[Measured]) {
    println!(
        "Slow head (ordered): {SLOW_HEAD_ITEMS} items, 16 workers, handlers of one 1 ms timer sleep, \
         every 16th item 50 sleeps; median of {SLOW_HEAD_REPS}"
    );
    println!(
        "  {:<34} {:>9} {:>18} {:>10}",
        "adapter", "ms", "speedup vs buffered", "peak held"
    );
    let baseline = seconds_of(measured, "buffered");
    for m in measured {
        println!(
            "  {:<34} {:>9.1} {:>17.2}x {:>10}",
            m.adapter.label(),
            m.seconds * 1e3,
            baseline / m.seconds,
            m.peak_held.map_or("-".to_owned(), |p| p.to_string())
        );
    }
    if let Some(widest) = measured.last()
        && let Adapter::Ordered { window, .. } = widest.adapter
    {
        let speedup = baseline / widest.seconds;
        let peak = widest.peak_held.unwrap_or(usize::MAX);
        println!(
            "  target: r = 16w at least 4x buffered(w) with peak held <= r: {speedup:.2}x, peak held {peak} \
             <= {window}: {}",
            verdict(speedup >= 4.0 && peak <= window)
        );
    }
    println!();
}

fn measure_slow_source(runtime: &Runtime, progress: &mut Progress) -> Vec<Measured> {
    interleaved(
        &common::slow_source_set(),
        SLOW_SOURCE_REPS,
        |adapter| {
            let start = Instant::now();
            let outcome = runtime.block_on(common::run(adapter, common::paged_source(PAGES)));
            let elapsed = start.elapsed();
            outcome.check(adapter, PAGES * PAGE_LEN);
            (elapsed, outcome.stats)
        },
        |a| progress.step("slow source", &a.label()),
    )
}

fn print_slow_source(measured: &[Measured]) {
    println!(
        "Slow source: {PAGES} pages of {PAGE_LEN} items, 16 workers, 1 ms handlers, each page fetched \
         in 4 handler times; median of {SLOW_SOURCE_REPS}"
    );
    println!(
        "  {:<34} {:>9} {:>26}",
        "adapter", "ms", "speedup vs buffer_unordered"
    );
    let baseline = seconds_of(measured, "buffer_unordered");
    for m in measured {
        println!(
            "  {:<34} {:>9.1} {:>25.2}x",
            m.adapter.label(),
            m.seconds * 1e3,
            baseline / m.seconds
        );
    }
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

struct MemoryRow {
    case: MemoryCase,
    n: u64,
    report: AllocationReport,
    seconds: f64,
}

fn measure_memory(runtime: &Runtime, progress: &mut Progress) -> Vec<MemoryRow> {
    // One unmeasured run per case first, so every measured run starts from the
    // same warm runtime and no case pays for growing shared internals.
    for case in MemoryCase::all() {
        case.run(runtime, MEMORY_SIZES[0]);
    }
    let mut rows = Vec::new();
    for n in MEMORY_SIZES {
        for case in MemoryCase::all() {
            progress.step("memory", &format!("{} n={n}", case.label()));
            let start = Instant::now();
            let report = common::count_allocations(|| case.run(runtime, n));
            rows.push(MemoryRow {
                case,
                n,
                report,
                seconds: start.elapsed().as_secs_f64(),
            });
        }
    }
    rows
}

fn print_memory(rows: &[MemoryRow]) {
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
    let growth = |family: &str| {
        let of = |n: u64| {
            rows.iter()
                .find(|r| r.case.family() == family && r.n == n)
                .map_or(f64::NAN, |r| r.report.allocations as f64)
        };
        let (small, large) = (MEMORY_SIZES[0], MEMORY_SIZES[MEMORY_SIZES.len() - 1]);
        of(large) / of(small)
    };
    let bounded = growth("bounded");
    let spawned = growth("spawn_all_semaphore");
    let size_ratio = (MEMORY_SIZES[MEMORY_SIZES.len() - 1] / MEMORY_SIZES[0]) as f64;
    println!(
        "  allocations at N = {} over N = {}: bounded {bounded:.3}x (target 1 +- 1%: {}), \
         spawn + Semaphore {spawned:.1}x (N grew {size_ratio:.0}x)",
        MEMORY_SIZES[MEMORY_SIZES.len() - 1],
        MEMORY_SIZES[0],
        verdict((bounded - 1.0).abs() <= 0.01),
    );
}

// ---------------------------------------------------------------------------
// The chart

/// `target/compare.svg`, next to the directory this example was built into.
fn chart_path() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target"));
    target.join("compare.svg")
}

/// The overhead panels' lines: adapter family and legend, one colour each.
const SERIES: [(&str, &str, RGBColor); 8] = [
    ("bounded", "bounded(w, w)", RGBColor(0xd6, 0x27, 0x28)),
    (
        "bounded_no_prefetch",
        "bounded(w, 0)",
        RGBColor(0x8c, 0x1a, 0x1a),
    ),
    (
        "bounded_ordered",
        "bounded(w, w).ordered(w)",
        RGBColor(0xff, 0x7f, 0x0e),
    ),
    (
        "buffer_unordered",
        "buffer_unordered(w)",
        RGBColor(0x1f, 0x77, 0xb4),
    ),
    ("buffered", "buffered(w)", RGBColor(0x17, 0xbe, 0xcf)),
    (
        "fb_buffered_unordered",
        "fb::buffered_unordered(w)",
        RGBColor(0x2c, 0xa0, 0x2c),
    ),
    (
        "fb_buffered_ordered",
        "fb::buffered_ordered(w)",
        RGBColor(0x94, 0x67, 0xbd),
    ),
    ("then", "then (sequential)", RGBColor(0x7f, 0x7f, 0x7f)),
];

fn family_color(family: &str) -> RGBColor {
    SERIES
        .iter()
        .find(|(f, _, _)| *f == family)
        .map_or(BLACK, |&(_, _, color)| color)
}

fn draw_chart(
    path: &std::path::Path,
    overhead: &[OverheadCell],
    slow_head: &[Measured],
    slow_source: &[Measured],
    memory: &[MemoryRow],
) -> Result<(), Box<dyn Error>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (1200, 1250)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        "bounded-buffered against futures and futures-buffered (tokio current-thread; medians; relative figures)",
        ("sans-serif", 20),
    )?;
    let panels = body.split_evenly((3, 2));
    for (panel, kind) in panels.iter().zip(JobKind::ALL) {
        overhead_panel(panel, overhead, kind)?;
    }
    bar_panel(
        &panels[2],
        "Slow head: time (ms), buffered(16) vs bounded(16,16).ordered(r)",
        slow_head,
        |a| match a {
            Adapter::Ordered { window, .. } => format!("r={window}"),
            Adapter::FbOrdered(_) => "fb_ordered".to_owned(),
            other => other.family().to_owned(),
        },
    )?;
    bar_panel(
        &panels[3],
        "Slow source: time (ms), buffer_unordered(16) vs bounded(16, q)",
        slow_source,
        |a| match a {
            Adapter::Bounded { waiting, .. } => format!("q={waiting}"),
            Adapter::FbUnordered(_) => "fb_unordered".to_owned(),
            other => other.family().to_owned(),
        },
    )?;
    memory_panel(&panels[4], "Memory: allocations", memory, |r| {
        r.report.allocations as f64
    })?;
    memory_panel(&panels[5], "Memory: peak live bytes", memory, |r| {
        r.report.peak_bytes as f64
    })?;
    root.present()?;
    Ok(())
}

fn overhead_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    cells: &[OverheadCell],
    kind: JobKind,
) -> Result<(), Box<dyn Error>> {
    let cells: Vec<&OverheadCell> = cells.iter().filter(|c| c.kind == kind).collect();
    let max = cells
        .iter()
        .flat_map(|c| SERIES.iter().map(|(f, _, _)| c.ns_per_item(f)))
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("Overhead, {} futures: ns per item", kind.name()),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((0.7f64..6000f64).log_scale(), 0f64..max * 1.7)?;
    chart
        .configure_mesh()
        .x_desc("workers w")
        .x_label_formatter(&|w| format!("{w:.0}"))
        .draw()?;
    for &(family, label, color) in &SERIES {
        let points: Vec<(f64, f64)> = cells
            .iter()
            .map(|c| (c.workers as f64, c.ns_per_item(family)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

fn bar_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    measured: &[Measured],
    short: impl Fn(&Adapter) -> String,
) -> Result<(), Box<dyn Error>> {
    let max_ms = measured.iter().map(|m| m.seconds * 1e3).fold(0.0, f64::max);
    let labels: Vec<String> = measured.iter().map(|m| short(&m.adapter)).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..measured.len() as f64 - 0.5, 0f64..max_ms * 1.15)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(measured.len())
        .x_label_formatter(&|x| {
            let index = x.round();
            if (x - index).abs() < 1e-6 && index >= 0.0 {
                labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("ms")
        .draw()?;
    for (index, m) in measured.iter().enumerate() {
        let x = index as f64;
        let ms = m.seconds * 1e3;
        let color = family_color(m.adapter.family());
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x - 0.35, 0.0), (x + 0.35, ms)],
            color.filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{ms:.0}"),
            (x - 0.2, ms + max_ms * 0.06),
            ("sans-serif", 12),
        )))?;
    }
    Ok(())
}

fn memory_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    caption: &str,
    rows: &[MemoryRow],
    value: impl Fn(&MemoryRow) -> f64,
) -> Result<(), Box<dyn Error>> {
    let max = rows.iter().map(&value).fold(1.0, f64::max);
    let (low_n, high_n) = (
        MEMORY_SIZES[0] as f64,
        MEMORY_SIZES[MEMORY_SIZES.len() - 1] as f64,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{caption} vs N (log-log)"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (low_n * 0.7..high_n * 1.4).log_scale(),
            (1f64..max * 3.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("items N")
        .x_label_formatter(&|n| format!("{n:.0e}"))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    for case in MemoryCase::all() {
        let color = match case {
            MemoryCase::SpawnAllSemaphore => BLACK,
            MemoryCase::Stream(adapter) => family_color(adapter.family()),
        };
        // Spawn-all and buffer_unordered both allocate once per item: draw the
        // first wider, so it shows under the second.
        let width = if case == MemoryCase::SpawnAllSemaphore {
            6
        } else {
            2
        };
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.case == case)
            .map(|r| (r.n as f64, value(r).max(1.0)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))?
            .label(case.label())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}
