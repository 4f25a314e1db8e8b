//! The budgets, and the only place their rules are written down.

/// What the caller allowed: how many futures run at once, how many items are
/// pulled ahead of time, and how far ordered output may run ahead of its oldest
/// unyielded item.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budgets {
    pub(crate) workers: usize,
    pub(crate) waiting: usize,
    /// `Some` once `.ordered(window)` was called.
    pub(crate) window: Option<usize>,
    /// What `active + held` must stay below: `window` if set, else `workers`
    /// (kept apart so the check on every start reads one number).
    span: usize,
}

impl Budgets {
    /// Unordered budgets.
    pub(crate) fn new(workers: usize, waiting: usize) -> Self {
        Self {
            workers,
            waiting,
            window: None,
            span: workers,
        }
    }

    /// The same budgets with a reorder window.
    pub(crate) fn ordered(self, window: usize) -> Self {
        Self {
            window: Some(window),
            span: window,
            ..self
        }
    }

    /// New limits (a handle's, or the controller's). The window stays as it
    /// was built. Whoever changed them counted and logged the change.
    pub(crate) fn set(&mut self, workers: usize, waiting: usize) {
        self.workers = workers;
        self.waiting = waiting;
        self.span = self.window.unwrap_or(workers);
    }

    /// The `workers` limit the stream starts with (an adaptive controller's
    /// initial limit): not a change.
    pub(crate) fn starting_with(self, workers: usize) -> Self {
        Self {
            workers,
            span: self.window.unwrap_or(workers),
            ..self
        }
    }

    /// Whether one more item may start, given the futures running (`active`) and
    /// the outputs the consumer has not taken (`held`), `expired` of which are
    /// items that expired while waiting.
    ///
    /// - Workers: never more than `workers` running.
    /// - Unordered: an untaken output keeps its worker, so `active + held <= workers`.
    ///   An expired item never had a worker: it is held in place of the waiting
    ///   item it was, and counts against `waiting` instead (see [`Budgets::may_queue`]).
    /// - Ordered: every item between the oldest unyielded one and the newest
    ///   started (or expired) one is running or held, so `active + held <= window`
    ///   caps that span. An item at input position `p` starts only while
    ///   `p < oldest + window`.
    #[inline]
    pub(crate) fn may_start(&self, active: usize, held: usize, expired: usize) -> bool {
        let held = if self.window.is_some() {
            held
        } else {
            held - expired
        };
        active < self.workers && active + held < self.span
    }

    /// [`Budgets::may_start`] for a stream with keys, weights or shedding,
    /// `rejected` of whose held outcomes are shed items. Ordered, such a
    /// stream checks the window item by item, on the input position each took
    /// at the pull (`p < oldest + window`), and a shed item held does not
    /// count here: pulled past the full queue, its position may lie past the
    /// window, and it is yielded only after the items before it, so counting
    /// it could keep them from ever starting. Shed items held have their own
    /// cap, the rejection allowance (see [`crate::shed`]); so ordered, at most
    /// `window` items run or are held, plus that allowance.
    #[inline]
    pub(crate) fn may_start_admitted(
        &self,
        active: usize,
        held: usize,
        unstarted: usize,
        rejected: usize,
    ) -> bool {
        let held = if self.window.is_some() {
            held - rejected
        } else {
            held
        };
        self.may_start(active, held, unstarted)
    }

    /// Whether one more item may be pulled into the waiting queue, which holds
    /// `queued` items now, with `expired` expired items held (they count here
    /// when unordered, see [`Budgets::may_start`]). Together with
    /// [`Budgets::may_start`] this makes the source advance exactly
    /// `workers + waiting` items ahead of the consumer when every future is
    /// blocked (`min(workers, window) + waiting` when ordered).
    #[inline]
    pub(crate) fn may_queue(&self, queued: usize, expired: usize) -> bool {
        let queued = if self.window.is_some() {
            queued
        } else {
            queued + expired
        };
        queued < self.waiting
    }

    /// [`Budgets::may_queue`] for a stream with keys, weights or shedding,
    /// whose every item is pulled into a waiting place (see
    /// [`crate::admission`]): it has at least one, even with `waiting == 0`,
    /// or it could never pull. So with every future blocked its source has
    /// advanced exactly `active + max(waiting, 1)` items ahead of the consumer,
    /// `active` below `workers` only while the waiting items may not start (a
    /// key at its limit, a weight that does not fit).
    #[inline]
    pub(crate) fn may_queue_seated(&self, queued: usize, expired: usize) -> bool {
        let queued = if self.window.is_some() {
            queued
        } else {
            queued + expired
        };
        queued < self.waiting.max(1)
    }
}
