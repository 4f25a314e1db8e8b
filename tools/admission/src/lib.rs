//! What the admission measurements share (`src/bin/`: `tenants`, `fair`,
//! `import`, `firehose`, `frontend`, `rate`).
//!
//! Every run is deterministic: it runs on a tokio current-thread runtime whose
//! clock is paused (time moves only when every task waits on a timer, straight
//! to the next timer), the jobs' durations and the latencies are measured on
//! it, a stream that measures time itself (the firehose's `timed()`) reads it
//! through `.clock(admission::now)`, and every random figure comes from a
//! generator with a fixed seed. So the durations printed are virtual time, the same on
//! any machine and under any load, and a run takes a fraction of a second of
//! real time.

// The one exception is the counting allocator (`alloc.rs`): a global
// allocator can only be written with `unsafe`.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
pub mod alloc;

use std::fmt::Display;
use std::time::{Duration, Instant};

/// The seed of every generator: change it to see another draw of the same
/// workloads.
pub const SEED: u64 = 22;

/// A tokio current-thread runtime with the clock paused.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// The stream's clock: tokio's, which is paused here.
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A seeded generator.
pub fn generator(stream: u64) -> fastrand::Rng {
    fastrand::Rng::with_seed(SEED.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stream)
}

/// A duration drawn uniformly from `min..=max` in whole milliseconds: tokio's
/// timer rounds a sleep up to the next millisecond, so a finer draw would not
/// be the time the job takes.
pub fn draw(rng: &mut fastrand::Rng, min: Duration, max: Duration) -> Duration {
    let millis = |d: Duration| u64::try_from(d.as_millis()).expect("a short duration");
    Duration::from_millis(rng.u64(millis(min)..=millis(max)))
}

/// In place (the consumer's `poll_next` drives the futures) or spawned
/// (`spawn_on(Handle::current())`: worker tasks drive them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    InPlace,
    Spawned,
}

impl Mode {
    pub const BOTH: [Mode; 2] = [Mode::InPlace, Mode::Spawned];

    pub fn name(self) -> &'static str {
        match self {
            Mode::InPlace => "in place",
            Mode::Spawned => "spawned",
        }
    }
}

/// Nearest-rank percentiles of a set of durations.
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    pub count: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Percentiles {
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let rank = |q: f64| {
            let rank = (q * samples.len() as f64).ceil() as usize;
            samples[rank.clamp(1, samples.len()) - 1]
        };
        if samples.is_empty() {
            return Self::default();
        }
        Self {
            count: samples.len(),
            p50: rank(0.50),
            p99: rank(0.99),
            max: samples[samples.len() - 1],
        }
    }
}

/// The most of `starts` (offsets from the run's start, sorted) in any window
/// `[t, t + window)`, wherever it begins: the measure a start rate's bound
/// is stated in ("at most `n + burst - 1` starts in any window of `per`").
/// Half-open, as the bound is: a start exactly `window` after another is in
/// the next window. The busiest window begins at a start (sliding one back
/// to the start before it loses nothing), so only those are counted.
pub fn most_in_any_window(starts: &[Duration], window: Duration) -> usize {
    debug_assert!(starts.is_sorted(), "sorted starts");
    let mut end = 0;
    let mut most = 0;
    for (begin, &from) in starts.iter().enumerate() {
        while end < starts.len() && starts[end] < from + window {
            end += 1;
        }
        most = most.max(end - begin);
    }
    most
}

/// The most of `starts` (offsets from the run's start) in one of the windows
/// `[k · window, (k + 1) · window)`: what a meter that counts per whole
/// second (a dashboard, a provider's quota counter) would show. At most
/// [`most_in_any_window`], and usually less: a burst that straddles two such
/// windows is split between them.
pub fn most_in_aligned_windows(starts: &[Duration], window: Duration) -> usize {
    let mut counts = std::collections::HashMap::<u128, usize>::new();
    for start in starts {
        *counts
            .entry(start.as_nanos() / window.as_nanos())
            .or_default() += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

/// A duration in milliseconds, for the tables: `12.3 ms`, `4.56 s` past 10 s.
pub fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1e3;
    if ms >= 10_000.0 {
        format!("{:.2} s", ms / 1e3)
    } else {
        format!("{ms:.1} ms")
    }
}

/// Bytes in MiB, for the tables.
pub fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// A table printed as Markdown, so the README can take it as it is.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Self {
            header: header.iter().map(|cell| cell.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "one cell per column");
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|column| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|row| row[column].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let cells: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, &width)| format!("{cell:<width$}"))
                .collect();
            println!("| {} |", cells.join(" | "));
        };
        line(&self.header);
        let rule: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
        println!("|-{}-|", rule.join("-|-"));
        for row in &self.rows {
            line(row);
        }
    }
}

/// The checks a binary makes on its own results: each is printed, and any
/// that failed makes [`Checks::finish`] exit non-zero.
#[derive(Default)]
pub struct Checks {
    failed: usize,
    total: usize,
}

impl Checks {
    pub fn check(&mut self, passed: bool, what: impl Display) {
        self.total += 1;
        if !passed {
            self.failed += 1;
        }
        println!("{} {what}", if passed { "ok  " } else { "FAIL" });
    }

    /// Prints the tally and exits with 1 if any check failed.
    pub fn finish(self) {
        println!(
            "checks: {} passed, {} failed",
            self.total - self.failed,
            self.failed
        );
        if self.failed > 0 {
            std::process::exit(1);
        }
    }
}
