//! A byte-budgeted import: `cargo run --release -p admission --bin import`.
//!
//! 400 documents of 16 KiB to 1 MiB (seeded). The source reads each document
//! when the stream pulls it (a `Vec<u8>` of its size, filled), so a waiting
//! item holds its bytes; its future, `Weighted::new(bytes, ..)`, decodes it
//! into a working copy of the same size (a second allocation), works on it for
//! 1 to 5 ms of virtual time, and returns a checksum, dropping both. The
//! stream is `bounded(8, 64)`, with `.max_waiting_weight(4 MiB)` and
//! `.max_running_weight(4 MiB)` or without weight budgets, in place and
//! spawned.
//!
//! Measured: the documents' bytes live at once (exact: each buffer counts
//! itself in and out), and the whole heap's peak (a counting global allocator,
//! all threads), against what the budgets imply. The crate documents the
//! waiting bound as: the source is not pulled while the waiting weight is at
//! or above the budget, so it stays below the budget plus the last item's
//! weight. Here every document is within both budgets, so the documents' bytes
//! stay within
//!
//! ```text
//! waiting: < 4 MiB + 1 MiB (one more document)    raw bytes
//! running: <= 4 MiB of documents, twice over      raw + working copy
//! ```
//!
//! that is `4 + 1 + 2 × 4 = 13 MiB` (less one byte). The heap also holds the
//! runtime's and the stream's own memory; that part is measured by the same
//! import with empty documents (same weights, same schedule), and the heap's
//! peak must stay within the documents' bound plus that peak.

use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use admission::alloc::{self, Counting};
use admission::{Checks, Mode, Table, generator, mib, ms, now, paused_runtime};
use bounded_buffered::{BoundedStreamExt, Stats, Weighted};
use futures::{Stream, StreamExt, stream};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const WORKERS: usize = 8;
const WAITING: usize = 64;
const DOCUMENTS: usize = 400;
const SIZE_MIN: u64 = 16 * KIB;
const SIZE_MAX: u64 = MIB;
const WAITING_BUDGET: u64 = 4 * MIB;
const RUNNING_BUDGET: u64 = 4 * MIB;
/// The documents' bytes the budgets allow at once: waiting, below the budget
/// plus one document; running, the budget's worth of documents and as much
/// again in working copies.
const BUDGETED_BOUND: u64 = WAITING_BUDGET - 1 + SIZE_MAX + 2 * RUNNING_BUDGET;
/// Without weight budgets only the counts bound them: 64 waiting documents
/// and 8 running ones with their copies.
const COUNTED_BOUND: u64 = WAITING as u64 * SIZE_MAX + 2 * WORKERS as u64 * SIZE_MAX;

/// Document bytes live now, and the most at once since the last reset.
static DOCUMENT_BYTES: AtomicU64 = AtomicU64::new(0);
static PEAK_DOCUMENT_BYTES: AtomicU64 = AtomicU64::new(0);

/// A document's bytes, counted in while the buffer lives.
struct Buffer(Vec<u8>);

impl Buffer {
    fn new(bytes: Vec<u8>) -> Self {
        let len = bytes.len() as u64;
        let live = DOCUMENT_BYTES.fetch_add(len, Relaxed) + len;
        PEAK_DOCUMENT_BYTES.fetch_max(live, Relaxed);
        Self(bytes)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        DOCUMENT_BYTES.fetch_sub(self.0.len() as u64, Relaxed);
    }
}

/// The source's read: a document of `len` bytes, all `fill`.
fn read(len: usize, fill: u8) -> Buffer {
    Buffer::new(vec![fill; len])
}

/// The job: decodes `raw` into a working copy, works on it, returns a
/// checksum. Both buffers live until the job ends.
async fn import(raw: Buffer, work: Duration) -> u64 {
    let decoded = Buffer::new(raw.0.iter().map(|byte| byte ^ 0x5A).collect());
    tokio::time::sleep(work).await;
    let checksum = decoded.0.iter().map(|&byte| u64::from(byte)).sum();
    drop((raw, decoded));
    checksum
}

/// One document: its size and how long its job works.
#[derive(Clone, Copy)]
struct Document {
    size: u64,
    work: Duration,
}

fn documents() -> Vec<Document> {
    let mut rng = generator(2);
    (0..DOCUMENTS)
        .map(|_| {
            let size = rng.u64(SIZE_MIN..=SIZE_MAX);
            // 1 ms, plus 1 ms per 256 KiB.
            let work = Duration::from_millis(1 + size / (256 * KIB));
            Document { size, work }
        })
        .collect()
}

/// What one run showed.
struct Run {
    checksum: u64,
    imported: usize,
    peak_document_bytes: u64,
    /// The heap's peak above what was live when the run began.
    peak_heap: u64,
    elapsed: Duration,
    stats: Stats,
}

async fn drain<S: Stream<Item = u64> + Unpin>(
    stream: &mut S,
    stats: impl Fn(&S) -> Stats,
) -> (u64, usize, Stats) {
    let (mut checksum, mut imported) = (0, 0);
    while let Some(sum) = stream.next().await {
        checksum += sum;
        imported += 1;
    }
    (checksum, imported, stats(stream))
}

/// One import: with or without weight budgets, with real or empty documents.
async fn run(documents: &[Document], budgets: bool, empty: bool, mode: Mode) -> Run {
    let documents = documents.to_vec();
    DOCUMENT_BYTES.store(0, Relaxed);
    PEAK_DOCUMENT_BYTES.store(0, Relaxed);
    let heap_before = alloc::reset_peak();
    let started: Instant = now();

    let source = stream::iter(documents.into_iter().enumerate()).map(move |(n, document)| {
        let len = if empty { 0 } else { document.size as usize };
        // Read when pulled: a waiting item holds its document.
        let raw = read(len, n as u8);
        Weighted::new(document.size, import(raw, document.work))
    });
    let jobs = source.bounded(WORKERS, WAITING);
    let executor = tokio::runtime::Handle::current;
    let (checksum, imported, stats) = match (budgets, mode) {
        (false, Mode::InPlace) => {
            let mut jobs = pin!(jobs);
            drain(&mut jobs, |jobs| jobs.stats()).await
        }
        (false, Mode::Spawned) => {
            let mut jobs = jobs.spawn_on(executor());
            drain(&mut jobs, |jobs| jobs.stats()).await
        }
        (true, Mode::InPlace) => {
            let jobs = jobs
                .max_waiting_weight(WAITING_BUDGET)
                .max_running_weight(RUNNING_BUDGET);
            let mut jobs = pin!(jobs);
            drain(&mut jobs, |jobs| jobs.stats()).await
        }
        (true, Mode::Spawned) => {
            let mut jobs = jobs
                .max_waiting_weight(WAITING_BUDGET)
                .max_running_weight(RUNNING_BUDGET)
                .spawn_on(executor());
            drain(&mut jobs, |jobs| jobs.stats()).await
        }
    };
    Run {
        checksum,
        imported,
        peak_document_bytes: PEAK_DOCUMENT_BYTES.load(Relaxed),
        peak_heap: alloc::peak() - heap_before,
        elapsed: now() - started,
        stats,
    }
}

fn weight(budgets: bool, weight: u64) -> String {
    if budgets { mib(weight) } else { "-".into() }
}

fn main() {
    let runtime = paused_runtime();
    let documents = documents();
    let total: u64 = documents.iter().map(|document| document.size).sum();
    let expected: u64 = documents
        .iter()
        .enumerate()
        .map(|(n, document)| document.size * u64::from(n as u8 ^ 0x5A))
        .sum();
    println!(
        "import: {DOCUMENTS} documents of {} KiB to {} ({} in all), read when pulled, decoded \
         into a copy while running; bounded({WORKERS}, {WAITING}); budgets: \
         max_waiting_weight({}), max_running_weight({})\n",
        SIZE_MIN / KIB,
        mib(SIZE_MAX),
        mib(total),
        mib(WAITING_BUDGET),
        mib(RUNNING_BUDGET),
    );

    let mut table = Table::new(&[
        "mode",
        "weight budgets",
        "peak document bytes",
        "bound",
        "peak heap",
        "heap of the empty import",
        "peak waiting weight",
        "peak running weight",
        "peak waiting",
        "time",
    ]);
    let mut checks = Checks::default();
    for mode in Mode::BOTH {
        for budgets in [false, true] {
            // A first empty import grows the runtime's own buffers (task
            // lists, queues, which keep their capacity), so that the two runs
            // measured find them grown alike and differ only in documents.
            runtime.block_on(run(&documents, budgets, true, mode));
            let full = runtime.block_on(run(&documents, budgets, false, mode));
            let empty = runtime.block_on(run(&documents, budgets, true, mode));
            let (setting, bound) = if budgets {
                ("4 MiB waiting, 4 MiB running", BUDGETED_BOUND)
            } else {
                ("none (counts only)", COUNTED_BOUND)
            };
            table.row(vec![
                mode.name().into(),
                setting.into(),
                mib(full.peak_document_bytes),
                mib(bound),
                mib(full.peak_heap),
                format!("{:.1} KiB", empty.peak_heap as f64 / KIB as f64),
                // Without weight budgets the stream counts no weight.
                weight(budgets, full.stats.peak_waiting_weight),
                weight(budgets, full.stats.peak_running_weight),
                full.stats.peak_waiting.to_string(),
                ms(full.elapsed),
            ]);
            let case = format!("{}, weight budgets: {setting}", mode.name());
            checks.check(
                full.imported == DOCUMENTS && full.checksum == expected,
                format!(
                    "{case}: every document imported once, checksums right ({} of {DOCUMENTS})",
                    full.imported
                ),
            );
            checks.check(
                full.peak_document_bytes <= bound,
                format!(
                    "{case}: document bytes {} <= {} ({} bytes to spare)",
                    full.peak_document_bytes,
                    bound,
                    bound.saturating_sub(full.peak_document_bytes)
                ),
            );
            checks.check(
                full.peak_heap <= bound + empty.peak_heap,
                format!(
                    "{case}: heap peak {} <= {} + {} (the empty import's heap peak)",
                    full.peak_heap, bound, empty.peak_heap
                ),
            );
            if budgets {
                checks.check(
                    full.stats.peak_waiting_weight < WAITING_BUDGET + SIZE_MAX,
                    format!(
                        "{case}: peak waiting weight {} < {WAITING_BUDGET} + {SIZE_MAX} \
                         (the budget plus one document)",
                        full.stats.peak_waiting_weight
                    ),
                );
                checks.check(
                    full.stats.peak_running_weight <= RUNNING_BUDGET,
                    format!(
                        "{case}: peak running weight {} <= {RUNNING_BUDGET}",
                        full.stats.peak_running_weight
                    ),
                );
            }
        }
    }
    println!();
    table.print();
    println!();
    checks.finish();
}
