//! What the adapter is doing, in numbers.

/// A snapshot of a [`BoundedBuffered`](crate::BoundedBuffered) stream's budgets in
/// use, returned by [`BoundedBuffered::stats`](crate::BoundedBuffered::stats).
///
/// The first three fields are the current counts, the `peak_` fields the largest
/// value each count has had since the stream was built, and the last two running
/// totals. Taking a snapshot copies a few integers, so it is cheap enough to do
/// after every item.
///
/// Each budget bounds one count: `active <= workers`, `waiting <= waiting`
/// (`max(waiting, 1)` with keys or weights, which always keep one waiting
/// place: contract point 27), and `active + held <= workers` (unordered) or
/// `<= window` (ordered): contract points 2 to 5 and 15 of the [crate
/// documentation](crate#what-the-adapter-guarantees).
///
/// # Examples
///
/// ```
/// use bounded_buffered::BoundedStreamExt;
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let mut results = stream::iter(0..10).map(|i| async move { i * 2 }).bounded(4, 2);
/// while let Some(_) = results.next().await {}
///
/// let stats = results.stats();
/// assert_eq!((stats.pulled, stats.completed), (10, 10));
/// assert_eq!((stats.active, stats.waiting, stats.held), (0, 0, 0));
/// assert!(stats.peak_active <= 4 && stats.peak_waiting <= 2);
/// # });
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Futures started and not yet complete.
    pub active: usize,
    /// Items pulled from the source and not yet started.
    pub waiting: usize,
    /// Complete outputs not yet handed to the consumer.
    pub held: usize,
    /// The largest `active` so far. A future that completes during its first poll
    /// counts as active during that poll.
    pub peak_active: usize,
    /// The largest `waiting` so far.
    pub peak_waiting: usize,
    /// The largest `held` so far.
    pub peak_held: usize,
    /// Items taken from the source so far.
    pub pulled: u64,
    /// Futures that have completed so far (whether or not their output was taken).
    pub completed: u64,
    /// Waiting items that expired instead of starting, so far (always 0 without
    /// [`max_wait`](crate::BoundedBuffered::max_wait)).
    pub expired: u64,
    /// The `workers` limit: as built, or as a [`Limits`](crate::Limits) handle or
    /// an adaptive controller last set it (a handle's change is in force from the
    /// stream's next poll).
    pub workers_limit: usize,
    /// The `waiting` limit, likewise.
    pub waiting_limit: usize,
    /// The `workers` limit is 0 (`Limits::set_workers(0)`): nothing new
    /// starts, and a consumer waiting for an output that needs a start waits
    /// until the limit is raised again.
    pub paused: bool,
    /// Items handed back by [`shed`](crate::BoundedBuffered::shed) so far.
    pub rejected: u64,
    /// With [`per_key`](crate::BoundedBuffered::per_key): keys with an item
    /// running now.
    pub keys_running: usize,
    /// With `per_key`: waiting items whose key is at its limit now (the
    /// others wait for a worker).
    pub blocked_by_key: usize,
    /// With weight budgets
    /// ([`max_running_weight`](crate::BoundedBuffered::max_running_weight)):
    /// the weight of the items running now, each counted at most the budget.
    pub running_weight: u64,
    /// With weight budgets
    /// ([`max_waiting_weight`](crate::BoundedBuffered::max_waiting_weight)):
    /// the weight of the items waiting now, each counted at most the budget.
    pub waiting_weight: u64,
    /// The largest `running_weight` so far.
    pub peak_running_weight: u64,
    /// The largest `waiting_weight` so far.
    pub peak_waiting_weight: u64,
    /// Items never started because a deadline passed first, the run's
    /// ([`deadline`](crate::BoundedBuffered::deadline)) or their own
    /// ([`item_deadlines`](crate::BoundedBuffered::item_deadlines)), so far.
    pub late: u64,
    /// Items cancelled at the run's deadline: started, and not seen to
    /// complete by then.
    pub cancelled: u64,
    /// The run's deadline passed while the run was on: it stopped there
    /// (nothing more was pulled or started), and its last outcome says so.
    pub deadline_passed: bool,
    /// With a [`rate`](crate::BoundedBuffered::rate): how long, in all, a
    /// start the counts allowed (with an item for it) waited for the rate.
    pub rate_waited: std::time::Duration,
}

/// The stream's `size_hint` (contract point 15), for both modes: what is in
/// flight (running, waiting, held, and an error still to be yielded) plus what
/// the source says it has left. With `fallible` (`try_bounded`) any item may be
/// the error that ends the run, so only one more output is certain.
pub(crate) fn size_hint(
    in_flight: usize,
    (lower, upper): (usize, Option<usize>),
    fallible: bool,
) -> (usize, Option<usize>) {
    let upper = upper.and_then(|upper| upper.checked_add(in_flight));
    if fallible {
        return (usize::from(in_flight > 0 || lower > 0), upper);
    }
    (lower.saturating_add(in_flight), upper)
}
