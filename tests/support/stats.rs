//! Expected `Stats` snapshots.

use bounded_buffered::Stats;

/// What a stream built (or last set) with these limits reports before anything
/// was pulled: its limits, and zero for every count.
pub fn fresh_stats(workers: usize, waiting: usize) -> Stats {
    // `Stats` is `#[non_exhaustive]`: built from its default, field by field.
    let mut stats = Stats::default();
    stats.workers_limit = workers;
    stats.waiting_limit = waiting;
    stats
}

/// Every one of `count` items was pulled and completed, and nothing is left
/// running, waiting or held.
pub fn assert_all_done(stats: &Stats, count: usize) {
    assert_eq!(
        (stats.pulled, stats.completed),
        (count as u64, count as u64)
    );
    assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
}
