//! Running the workloads: every implementation several times, interleaved,
//! keeping the median.

use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::common::{
    self, Adapter, AllocationReport, Family, JobKind, MEMORY_SIZES, MemoryCase, OVERHEAD_WORKERS,
    PAGE_LEN, PAGES, SLOW_HEAD_ITEMS,
};
use crate::progress::Progress;

pub const OVERHEAD_ITEMS: u64 = 100_000;
pub const OVERHEAD_REPS: usize = 9;
pub const SLOW_HEAD_REPS: usize = 3;
pub const SLOW_SOURCE_REPS: usize = 5;

/// Everything the comparison measured.
pub struct Results {
    pub overhead: Vec<OverheadCell>,
    pub slow_head: Vec<Measured>,
    pub slow_source: Vec<Measured>,
    pub memory: Vec<MemoryRow>,
}

/// The runs [`all`] makes, for the progress line.
pub fn steps() -> usize {
    let overhead_adapters = 1 + Adapter::overhead_set(1).len();
    // Each overhead cell has one discarded warm-up round.
    JobKind::ALL.len() * OVERHEAD_WORKERS.len() * (OVERHEAD_REPS + 1) * overhead_adapters
        + SLOW_HEAD_REPS * common::slow_head_set().len()
        + SLOW_SOURCE_REPS * common::slow_source_set().len()
        + MEMORY_SIZES.len() * MemoryCase::all().len()
}

pub fn all(runtime: &Runtime, progress: &mut Progress) -> Results {
    Results {
        overhead: overhead(runtime, progress),
        slow_head: slow_head(runtime, progress),
        slow_source: slow_source(runtime, progress),
        memory: memory(runtime, progress),
    }
}

/// One implementation's median time, and the largest `peak_held` its stats
/// reported (`bounded` only).
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub adapter: Adapter,
    pub seconds: f64,
    pub peak_held: Option<usize>,
}

/// The median time of the one adapter of `family` in `measured`.
///
/// # Panics
///
/// If `family` was not measured: a table asking for it is wrong, and a NaN
/// would hide that.
#[track_caller]
pub fn seconds_of(measured: &[Measured], family: Family) -> f64 {
    measured
        .iter()
        .find(|m| m.adapter.family() == family)
        .unwrap_or_else(|| panic!("{} was not measured here", family.name()))
        .seconds
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

// ---------------------------------------------------------------------------
// Overhead

/// One kind of future at one worker count: every family once.
pub struct OverheadCell {
    pub kind: JobKind,
    pub workers: usize,
    pub measured: Vec<Measured>,
}

impl OverheadCell {
    #[track_caller]
    pub fn ns_per_item(&self, family: Family) -> f64 {
        seconds_of(&self.measured, family) * 1e9 / OVERHEAD_ITEMS as f64
    }

    #[track_caller]
    pub fn ratio(&self, family: Family, against: Family) -> f64 {
        self.ns_per_item(family) / self.ns_per_item(against)
    }
}

fn overhead(runtime: &Runtime, progress: &mut Progress) -> Vec<OverheadCell> {
    let mut cells = Vec::new();
    for kind in JobKind::ALL {
        for w in OVERHEAD_WORKERS {
            let mut adapters = vec![Adapter::Sequential];
            adapters.extend(Adapter::overhead_set(w));
            // One extra round first, discarded: it grows each adapter's storage
            // and warms the caches, as criterion's warm-up does.
            let label = format!("{} w={w}", kind.name());
            let mut run_once = |adapter: Adapter| {
                let start = Instant::now();
                let outcome =
                    runtime.block_on(common::run(adapter, common::jobs(OVERHEAD_ITEMS, kind)));
                let elapsed = start.elapsed();
                outcome.check(adapter, OVERHEAD_ITEMS);
                (elapsed, outcome.stats)
            };
            interleaved(&adapters, 1, &mut run_once, |a| {
                progress.step(
                    "overhead (warm-up)",
                    &format!("{label} {}", a.family().name()),
                )
            });
            let measured = interleaved(&adapters, OVERHEAD_REPS, &mut run_once, |a| {
                progress.step("overhead", &format!("{label} {}", a.family().name()))
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

// ---------------------------------------------------------------------------
// Slow head and slow source

fn slow_head(runtime: &Runtime, progress: &mut Progress) -> Vec<Measured> {
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

fn slow_source(runtime: &Runtime, progress: &mut Progress) -> Vec<Measured> {
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

// ---------------------------------------------------------------------------
// Memory

/// One memory case at one item count, run once.
pub struct MemoryRow {
    pub case: MemoryCase,
    pub n: u64,
    pub report: AllocationReport,
    pub seconds: f64,
}

/// The allocations `case` made for `n` items.
///
/// # Panics
///
/// If that case was not measured at `n`.
#[track_caller]
pub fn allocations_of(rows: &[MemoryRow], case: MemoryCase, n: u64) -> u64 {
    rows.iter()
        .find(|row| row.case == case && row.n == n)
        .unwrap_or_else(|| panic!("{} was not measured at n = {n}", case.label()))
        .report
        .allocations
}

fn memory(runtime: &Runtime, progress: &mut Progress) -> Vec<MemoryRow> {
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
