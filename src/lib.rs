//! Run a stream of futures with hard, separate budgets for the work that runs,
//! the work that waits, and the results that are held.
//!
//! [`BoundedStreamExt::bounded`] turns any [`Stream`](futures_core::Stream)
//! of futures into a stream of their outputs, like `futures`'
//! `buffer_unordered`, but with three budgets that each bound one quantity:
//!
//! - **`workers`**: at most this many futures run at once.
//! - **`waiting`**: while the workers are busy, up to this many more items are
//!   pulled from the source ahead of time, so a slow source (a paged API, a
//!   database cursor) does not leave workers idle. With every future blocked the
//!   source has advanced exactly `workers + waiting` items, never more.
//! - **`window`** (with [`.ordered(window)`](BoundedBuffered::ordered)): outputs
//!   come in input order, and work runs at most `window` items ahead of the
//!   oldest output not yet yielded. A slow item does not stop the other workers,
//!   and results never pile up beyond `window`.
//!
//! A semaphore bounds only the first quantity; `buffer_unordered(n)` bounds the
//! first but never pulls ahead while its slots are full; `buffered(n)` counts held
//! results against the same `n`, so one slow item drops it to one worker. Here
//! each quantity has its own number, and [`BoundedBuffered::stats`] shows them.
//!
//! # Examples
//!
//! ```
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, stream};
//!
//! # futures::executor::block_on(async {
//! let mut squares = stream::iter(1..=100u64)
//!     .map(|n| async move { n * n }) // any future: a request, a query, a job
//!     .bounded(4, 8); // 4 run at once, 8 more pulled ahead
//!
//! let mut sum = 0;
//! while let Some(square) = squares.next().await {
//!     sum += square;
//! }
//! assert_eq!(sum, 338_350);
//!
//! let stats = squares.stats();
//! assert_eq!(stats.completed, 100);
//! assert!(stats.peak_active <= 4 && stats.peak_waiting <= 8);
//! # });
//! ```
//!
//! # What the adapter guarantees
//!
//! This is the contract: the one list of what the adapter promises, numbered so
//! that the tests and the other docs can cite "contract point N". `workers`,
//! `waiting` and `window` are the budgets; `active`, `waiting` and `held` are
//! the counts [`Stats`] reports.
//!
//! **Delivery**
//!
//! 1. Every future's output is yielded exactly once. The stream ends only
//!    after the source ended and every output was yielded; it then returns
//!    `None` forever and reports
//!    [`is_terminated`](futures_core::stream::FusedStream::is_terminated). A
//!    source that ended is never polled again.
//!
//! **Budgets**
//!
//! 2. **Workers**: `active <= workers`.
//! 3. **Waiting**: nothing is pulled before the first poll. While the workers
//!    are busy the adapter keeps pulling until `waiting` items are queued
//!    (`waiting == 0`: no prefetch). With every future blocked the source has
//!    advanced exactly `workers + waiting` items (`min(workers, window) +
//!    waiting` when ordered): not one fewer, not one more.
//! 4. **Unordered**: outputs come in completion order, and an output the
//!    consumer has not taken keeps its worker: `active + held <= workers`.
//! 5. **Ordered** ([`.ordered(window)`](BoundedBuffered::ordered)): outputs
//!    come in input order. An item starts only while its input position is
//!    below the oldest unyielded position plus `window`, so `active + held <=
//!    window` and at most `min(workers, window)` futures run; a blocked item
//!    does not stop the others until the window is full. `window == workers`
//!    behaves like `buffered(workers)`.
//!
//! **Progress**
//!
//! 6. **Busy workers**: when `poll_next` hands out an output, every worker the
//!    budgets allow is already running again (its new future polled once) and
//!    the waiting queue is topped up, so the consumer's own work overlaps with
//!    the next items.
//! 7. **Polls follow wakes**: each worker has its own waker, reused by every
//!    future it runs. A wake queues that worker alone, once however often it
//!    is woken before its next poll, at the cost of one atomic operation
//!    (none when a future wakes itself while it is polled); `poll_next` polls
//!    only the woken futures, so a poll that nothing woke polls no future.
//!    In place, futures woken together are polled oldest first (in the order
//!    they started), and a future that another's completion woke is polled
//!    before anything new starts: when a resource frees and wakes all its
//!    waiters for the first poll to take it, the longest waiting wins, never
//!    a newcomer. Spawned, each worker task is polled when the executor
//!    chooses.
//! 8. **Cooperative**: one `poll_next` polls at most 128 woken futures without
//!    an output to return; then it wakes its task and returns `Pending`, so
//!    futures that keep waking themselves cannot starve the executor.
//!
//! **Drop, errors and panics**
//!
//! 9. **Drop**: dropping the stream drops the source, every running future,
//!    every waiting item and every held output, each exactly once, right
//!    away, and lets go of the consumer's waker;
//!    [`into_inner`](BoundedBuffered::into_inner) does the same but hands the
//!    source back. With `bounded` the adapter never drops an output itself: a
//!    future's `Err` is handed to the consumer like any other output, in its
//!    place (point 21 says what `try_bounded` does instead).
//! 10. **Panics**: a panic in a future, in the source or in a future's
//!     destructor propagates out of `poll_next` (or out of the drop).
//!     Everything else is still dropped exactly once, and polling the stream
//!     again panics with a message saying why, rather than carrying on with a
//!     lost item.
//! 11. **Bad budgets**: a budget of 0 (`workers`, `window`, `per_key`,
//!     `max_running_weight`, `max_waiting_weight`), with which nothing could
//!     ever start or be pulled, and a builder method called after the first
//!     poll (`ordered`, `timed`, `clock`, `max_wait`, `shed`, `per_key`, the
//!     weight budgets, `metrics`, `adaptive`, `spawn_on`), which would change
//!     what the work already under way was promised, panic at the caller's
//!     line with a message naming the problem.
//!
//! **Wakes**
//!
//! 12. Wakes may come from any thread at any time: repeated, during the
//!     future's own poll, late from a future that already finished (its worker
//!     now runs another), or after the stream was dropped. None is lost, none
//!     polls the wrong future, none changes an output.
//!
//! **Resources and executors**
//!
//! 13. **Memory**: the items alive inside the adapter (running futures, waiting
//!     items, held outputs) never exceed `workers + waiting` unordered or
//!     `window + waiting` ordered. Their storage (worker slots with their
//!     wakers, the waiting queue, the held outputs) grows to the budgets the
//!     first time it is needed and is then reused: the number of allocations
//!     does not grow with the number of items.
//! 14. **Executors**: the adapter uses nothing but [`std::task`], so it runs on
//!     tokio, smol, `futures::executor` or any other executor, with `!Send`
//!     futures on a single-threaded one and `!Unpin` futures (plain `async`
//!     blocks) without boxing. It is [`Send`] and [`Sync`] when the source, its
//!     futures and their outputs are, and [`Unpin`] whatever they are (the
//!     source sits in a box of its own), so it is polled, stored and resumed
//!     without `pin!`. In place, futures make progress only while the stream
//!     is polled.
//! 15. **Observability**: [`stats`](BoundedBuffered::stats) reports the current
//!     counts, their peaks and running totals; `size_hint` adds what is in
//!     flight to what the source has left; `Debug` shows the budgets and counts
//!     without needing the futures or outputs to be `Debug`; both show a
//!     stream whose `workers` limit is 0 as paused ([`Stats::paused`]).
//!
//! **Spawned mode** ([`.spawn_on(executor)`](BoundedBuffered::spawn_on))
//!
//! 16. **Same budgets**: points 2 to 5 hold, with the same exact boundary:
//!     with every future blocked the source has advanced exactly `workers +
//!     waiting` items (`min(workers, window) + waiting` ordered). Untaken
//!     outputs stop the workers, and so the pulling: the worker tasks pull
//!     from the source themselves, each start and pull checked against the
//!     budgets under one lock.
//! 17. **Same delivery**: point 1 holds. Nothing is spawned or pulled before
//!     the first poll. Worker tasks grow with demand: the first poll spawns
//!     one, and another is spawned (one [`Spawner::spawn`] call each) only
//!     when an item may start and no task is idle, never more than `workers`
//!     in all, so `bounded(usize::MAX, q)` works as in place. An idle task
//!     parks until there is work for it. Nothing per worker is allocated up
//!     front, and in steady state nothing is allocated per item. The
//!     [`Spawned`] stream is `Send` and `Unpin`, and its `Debug` and `stats`
//!     need nothing from the item type.
//! 18. **Progress**: the futures keep running while the consumer awaits
//!     something else, and run in parallel on a multi-threaded executor. A
//!     task that completes an item starts its next one in the same poll when
//!     the budgets allow (a few per poll, then it yields to the executor).
//! 19. **Cancellation**: dropping the stream cancels every task. The source,
//!     the waiting items and the untaken outputs (and an error not yielded
//!     yet) are dropped at once, by the dropping thread; if destructors among
//!     them panic, the drop re-raises the first of those panics once all of
//!     them ran (point 10), unless the thread is unwinding already. Each task
//!     drops its running future, exactly once, the next time the executor
//!     polls it, which the drop arranges by waking it: that destructor runs
//!     later, maybe on another thread, so its panic cannot propagate out of
//!     the drop; it stays in the task (point 20).
//! 20. **Panics**: a panic in a future, the source or a future's destructor is
//!     caught in its task, never unwinds into the executor, cancels the other
//!     tasks and is re-raised by the stream's next poll, never passed off as
//!     an end; polling again then panics with a message saying so. From the
//!     lock section that records it, no item starts, as point 21 says for an
//!     error (with the same exception across threads). A task the executor
//!     drops unfinished (a runtime shut down) also panics the stream, and the
//!     destructor of the future it held runs caught, in that drop: a panic
//!     there is not reported (the lost task is) and never reaches the
//!     executor.
//!
//! **Failure, shutdown and time** (sections [Failure and
//! shutdown](#failure-and-shutdown) and [Time and capacity
//! planning](#time-and-capacity-planning))
//!
//! 21. **Fail fast** ([`try_bounded`](BoundedStreamExt::try_bounded)): from
//!     the moment the adapter sees the first `Err`, from the source or a
//!     future, nothing more is pulled and nothing more starts (no future is
//!     polled for the first time); every running future and waiting item is
//!     dropped, exactly once, before the error is yielded. Before it come the
//!     held outputs that keep the output order (unordered: every output that
//!     completed before the error; ordered: the complete prefix from the
//!     oldest unyielded position, never waiting for a running item); the
//!     others are dropped. Then the `Err`, then `None` forever. Spawned
//!     (`try_bounded(..).spawn_on(..)`): the lock section that records the
//!     error cancels every task at once, so no task starts an item after it,
//!     however slow the consumer; each running future is dropped, exactly once,
//!     when its task is next polled (the cancellation wakes it). An item that
//!     another task took in an earlier lock section, and was about to poll
//!     while the error was recorded, may still get its first poll after it
//!     (tasks poll outside the lock); on a one-thread executor none does, not
//!     even the item held by the task whose own pull met the error. A
//!     destructor that panics while a task drops its cancelled future, or
//!     while the task that met the error drops the waiting items, has nobody
//!     left to tell (the run's outcome is the error) and is swallowed; one
//!     that the stream's drop runs panics the drop (point 19).
//! 22. **Drain** ([`close`](BoundedBuffered::close)): nothing more is pulled
//!     once `close` returns; every running and waiting item finishes and its
//!     output is yielded; then the stream ends. Every item is either yielded or
//!     still in the source: [`reopen`](BoundedBuffered::reopen) resumes the
//!     same stream from the next item (any source, `Unpin` or not), and
//!     [`into_inner`](BoundedBuffered::into_inner) hands an `Unpin` source back
//!     positioned after the last item pulled. [`Spawned::close`] does the same
//!     in spawned mode, dropping the source instead of handing it back.
//! 23. **Expiry at pickup** ([`max_wait`](BoundedBuffered::max_wait)): when a
//!     worker frees up for a waiting item that waited longer than the limit
//!     since its pull, the item is not started, takes no worker, and is yielded
//!     as an [`Expired`] holding its untouched future, in completion order or at
//!     its input position. An item pulled straight into a free worker never
//!     expires. Expired outputs count against the budgets like any output.
//!     Spawned: the worker task that takes the item makes the check, under
//!     the state's lock.
//! 24. **Clock and timings** ([`timed`](BoundedBuffered::timed),
//!     [`clock`](BoundedBuffered::clock)): a stream without `max_wait`,
//!     `timed` or a time budget (points 31 to 34) never reads a clock; with
//!     them, the clock is read at most once per `poll_next`. Timings record every item's wait, run and held time in
//!     histograms of fixed size: no allocation per item. Spawned
//!     ([`Spawned::timings`]): at most once per lock section, the same three
//!     distributions.
//!
//! **Limits that move**
//!
//! 25. **Limits** ([`limits`](BoundedBuffered::limits)): `workers` and
//!     `waiting` can change while the stream runs, from any thread. A change
//!     wakes the stream, and a raise starts or pulls items without waiting for
//!     a completion. A lowering cancels nothing and drops nothing: new starts
//!     wait until fewer than the new `workers` run, and the source is not
//!     pulled until the queue is below the new `waiting`. `workers == 0`
//!     pauses. Points 2 to 5 hold for the limits in force once the work is
//!     within them, with the same exact boundary. The window never changes.
//!     Spawned ([`Spawned::limits`], or a handle taken before `spawn_on`,
//!     which keeps working): a raise of `workers` sends for a task at once
//!     (tasks grow on demand); a raise of `waiting` is pulled at once by a
//!     task: an idle one, else a busy one, whose future then gets one
//!     spurious poll.
//! 26. **Adaptive** ([`adaptive`](BoundedBuffered::adaptive)): every
//!     completion's output gets the classifier's [`Verdict`] (a `bool` is
//!     back-pressure or success). Unless it is
//!     [`Ignore`](Verdict::Ignore), the controller gets a [`Sample`]: when
//!     the item started, how long it ran, whether its output is
//!     back-pressure, whether the limit was reached, how many items were in
//!     flight. The `workers` limit it returns applies as point 25 says, at
//!     once, and never below 1. An ignored output changes no limit, and
//!     items that never complete (expired while waiting, cancelled by fail
//!     fast, `close` or drop) are never classified: the controller does not
//!     hear of them. Spawned: the task that completes the item feeds the
//!     controller under the state's lock, and a raise sends for tasks at
//!     once.
//!
//! **Tenants, bytes and shedding** (section [Tenants, bytes and
//! shedding](#tenants-bytes-and-shedding); in both modes, with `ordered` and
//! every other setting)
//!
//! 27. **Per key** ([`per_key`](BoundedBuffered::per_key), items [`Keyed`]):
//!     at most `limit` items of one key run at once. A free worker starts
//!     the oldest waiting item whose key is below its limit; an item whose
//!     key is at its limit stays in the waiting queue, counting against
//!     `waiting`, and later items of other keys start past it. Every item is
//!     pulled into a waiting place first (there is at least one, even with
//!     `waiting == 0`), so with every future blocked the source has advanced
//!     exactly `active + max(waiting, 1)` items, `active` below `workers` only
//!     while no waiting item's key allows a start. The per-key state is one
//!     count per key with an item running or waiting.
//! 28. **Weights** ([`max_running_weight`](BoundedBuffered::max_running_weight),
//!     [`max_waiting_weight`](BoundedBuffered::max_waiting_weight), items
//!     [`Weighted`]): an item counts as `min(weight, budget)`. It starts only
//!     if the weights running plus its own stay within the budget, or nothing
//!     runs (one heavier than the budget runs alone); first come, first
//!     served. The source is not pulled while the weight waiting is at or
//!     above its budget, so it stays below the budget plus one item's capped
//!     weight. Both hold beside the counts of points 2 and 3.
//! 29. **Shedding** ([`shed`](BoundedBuffered::shed)): with the waiting queue
//!     full and no waiting item that may start, the stream keeps pulling and
//!     hands back, never polled, as a [`Rejected`], the item just pulled
//!     ([`Shed::Newest`]) or the oldest waiting ones, as many as the new
//!     item needs room for by count and weight ([`Shed::Oldest`], which
//!     keeps point 28's waiting bound); an item pulled with a worker free for
//!     it starts if the rules pick it after the waiting items (it passes no
//!     waiting item of its key, nor a heavier one the worker waits for). At
//!     most `max(waiting, 1)` rejections are held untaken: then nothing is
//!     pulled, so with every future blocked the source has advanced at most
//!     `workers + places + max(waiting, 1)` items, `places` being the waiting
//!     places: `waiting`, or `max(waiting, 1)` with keys or weights (point
//!     27). Unordered, a rejection is yielded as it is
//!     made; ordered, at its input position (with keys, weights or shedding,
//!     an ordered stream takes each item's position when it pulls it, and an
//!     item starts only while its position is within the window; a held
//!     rejection takes no place in it). With
//!     `max_wait` too, an item not run comes back as a [`NotRun`] with its
//!     cause. [`Stats::rejected`] counts them.
//!
//! **Exporting** (section [Exporting metrics and
//! traces](#exporting-metrics-and-traces); features `metrics` and `tracing`)
//!
//! 30. **Metrics and traces**: a stream given `.metrics(name)` publishes
//!     through the `metrics` facade, under fixed names labelled `stream =
//!     name` (or labels of the caller's own). Whenever the stream is at rest
//!     (in place, `poll_next` returned `Pending` or the end; spawned, a lock
//!     section left the consumer waiting, or the run is over), every gauge
//!     and counter has the value [`stats`](BoundedBuffered::stats) reports,
//!     and each histogram every duration
//!     [`timings`](BoundedBuffered::timings) recorded, at the top of its
//!     bucket (at most 1/64 above, never below); while the consumer takes one
//!     output after another, the exporter lags by at most 64 polls (spawned:
//!     lock sections). The limits' gauges and change counters move where a
//!     limit changes, at once. A publish calls the facade only for what
//!     changed. A stream without `.metrics` registers, describes and
//!     publishes nothing. With `tracing`, the worker tasks of a spawned
//!     stream enter the span that was current at `spawn_on` while they poll,
//!     so its futures log inside it (a future's own span, entered inside, is
//!     the innermost); a change of a limit in force is a `debug!` event with
//!     the limit, its old and new values and the reason.
//!
//! **Time budgets** (the guide's [time page](crate::guide::time); in both
//! modes, with `ordered` and every other setting)
//!
//! 31. **Timer** ([`timer`](BoundedBuffered::timer), a [`Timer`]): the
//!     timer's clock is the stream's one clock, for every rule and measure
//!     that reads one. The stream arms the timer only for an instant the
//!     engine names, when nothing else would wake it: the run's deadline, or
//!     the next token while a start waits for one alone; one sleep, re-armed
//!     in place when the instant changes. A stream without a deadline or a
//!     rate never arms it; one without a timer never has one. Spawned, the
//!     timer goes to an alarm task, spawned with the first worker, which
//!     ends with the run. A timer that fires before its instant gets a
//!     yield, never a spin.
//! 32. **Run deadline** ([`deadline`](BoundedBuffered::deadline)): from the
//!     deadline on (now at or after it, by the stream's clock), nothing is
//!     pulled or started. At the first poll (spawned, lock section) that sees
//!     it, every waiting item is yielded as [`Unfinished::Late`] holding its
//!     untouched future, every running one is dropped and yielded as
//!     [`Unfinished::Cancelled`] with its input position, outputs that
//!     completed are still yielded, and [`Unfinished::Deadline`] comes last,
//!     then the end; ordered, each at its input position. Every item pulled
//!     comes back exactly once. `close` drains as usual and the deadline cuts
//!     a drain short. [`Stats::deadline_passed`], [`Stats::late`] and
//!     [`Stats::cancelled`] say so.
//! 33. **Items' own deadlines** ([`item_deadlines`](BoundedBuffered::item_deadlines),
//!     items [`Deadline`]): when a worker picks an item up, from the queue or
//!     the source, an item whose deadline has passed is not started and is
//!     yielded as [`Unfinished::Late`], never polled, first of every check.
//!     It is not cancelled at its deadline once running. An item's effective
//!     deadline is the earlier of its own and the run's. Every item is
//!     pulled into a waiting place first, as with keys (point 27): with every
//!     future blocked the source has advanced at most `workers + max(waiting,
//!     1)` items; a late item held counts against `waiting`.
//! 34. **Start rate** ([`rate`](BoundedBuffered::rate),
//!     [`burst`](BoundedBuffered::burst)): a start needs a free worker and a
//!     token; at most `n + burst - 1` items start in any window of length
//!     `per` (exactly `n` with the default burst of 1), and once the burst is
//!     spent, starts come `per / n` apart, each at the first instant its
//!     token allows. While a start waits for a token, items are pulled ahead
//!     within the waiting budget (points 2 and 3 unchanged), and the timer
//!     wakes the stream when it is due. [`Limits::set_rate`] changes it while
//!     the stream runs, keeping the tokens the bucket holds or owes.
//!     [`Stats::rate_waited`] totals the time starts waited for tokens.
//!
//! # Tenants, bytes and shedding
//!
//! One count is not always the right budget. Items can carry a key
//! ([`Keyed`]: a tenant, a partition, a user) and a weight ([`Weighted`]:
//! bytes, tokens), and a stream can shed instead of waiting:
//!
//! - **[`per_key(limit)`](BoundedBuffered::per_key)**: a single large batch
//!   no longer takes every worker while another tenant's items wait. The
//!   fairness reaches as far as the waiting budget looks ahead in the one
//!   source: a tenant's items behind `waiting` items of another are not seen
//!   until those are pulled. `per_key(1)` runs each key's items one at a time,
//!   in input order, as a Kafka consumer does per partition.
//! - **[`max_waiting_weight(bytes)`](BoundedBuffered::max_waiting_weight)**
//!   bounds what is pulled ahead by its size, not its count (eight waiting
//!   places may hold eight small ids or eight large documents);
//!   **[`max_running_weight`](BoundedBuffered::max_running_weight)** bounds
//!   what runs by weight.
//! - **[`shed(Shed::Newest | Shed::Oldest)`](BoundedBuffered::shed)**: a
//!   source that should never wait (a channel fed by request handlers)
//!   keeps being read; an item that cannot wait comes back at once as a
//!   [`Rejected`] to answer "busy" with, or the stalest waiting one makes way
//!   for it.
//!
//! ```
//! use std::future::pending;
//!
//! use bounded_buffered::{BoundedStreamExt, Keyed, Shed, Weighted};
//! use futures::{StreamExt, stream};
//!
//! # futures::executor::block_on(async {
//! // Two tenants, documents of 1 to 3 units: at most 2 documents of one tenant
//! // at once, at most 4 units running, 6 units waiting.
//! let mut imports = stream::iter(0..20u64)
//!     .map(|n| Keyed::new(n % 2, Weighted::new(n % 3 + 1, async move { n })))
//!     .bounded(4, 8)
//!     .per_key(2)
//!     .max_running_weight(4)
//!     .max_waiting_weight(6);
//! let mut imported = 0;
//! while imports.next().await.is_some() {
//!     imported += 1;
//! }
//! assert_eq!(imported, 20);
//! let stats = imports.stats();
//! assert!(stats.peak_running_weight <= 4 && stats.peak_waiting_weight < 6 + 3);
//!
//! // A front end: one worker held, no queue: later requests come back at once.
//! let mut replies = stream::iter(0..3u32)
//!     .map(|n| async move {
//!         if n == 0 {
//!             pending::<()>().await;
//!         }
//!         n
//!     })
//!     .bounded(1, 0)
//!     .shed(Shed::Newest);
//! assert!(replies.next().await.unwrap().is_err()); // "busy"
//! # });
//! ```
//!
//! # Exporting metrics and traces
//!
//! With the feature `metrics`, `.metrics(name)` (before `spawn_on`, in
//! either order with the other builder methods) publishes what `stats()` and
//! `timings()` report to the application's `metrics` recorder, whatever it
//! exports to: the gauges `bounded_active`, `bounded_waiting`,
//! `bounded_held`, the limits in force and, with keys or weights, theirs;
//! the counters `bounded_pulled_total`, `bounded_completed_total`,
//! `bounded_expired_total`, `bounded_failed_total`,
//! `bounded_rejected_total`, `bounded_limit_changes_total`; and with
//! `timed`, the histograms `bounded_wait_seconds`, `bounded_run_seconds` and
//! `bounded_held_seconds`. The method's documentation lists them with what
//! each is. The crate depends on the facade only; the exporter
//! (`metrics-exporter-prometheus`, an OpenTelemetry bridge) is the
//! application's. A stream without `.metrics` pays one check per `poll_next`.
//!
//! With the feature `tracing`, a spawned stream's tasks enter the span that
//! was current where `spawn_on` was called while they poll, so what its
//! futures and its source log is inside that span, as it would be in place;
//! an item's own `.instrument(span)` is entered inside it and wins. Limit
//! changes, by a [`Limits`] handle or the adaptive controller, are `debug!`
//! events (target `bounded_buffered`) with `limit`, `old`, `new` and
//! `reason`.
//!
//! # Adjusting and adaptive limits
//!
//! The right `workers` is what the downstream resource can take, and that is
//! rarely known and changes. [`limits`](BoundedBuffered::limits) returns a
//! [`Limits`] handle that changes `workers` and `waiting` while the stream
//! runs, from any thread; [`adaptive`](BoundedBuffered::adaptive) lets a
//! [`Controller`] set `workers` from each item's run time and from outputs that
//! signal back-pressure. [`Aimd`] finds a service's knee by itself: slow start
//! from 2, the unloaded run time measured below where slow start saw a rise,
//! growth only while the limit is actually reached, a cut to what the
//! service took when its requests start to wait (Little's law, above the
//! noise of the run time) or on back-pressure, and probes that find a
//! capacity that rose. A stream that uses neither pays nothing: the handle
//! signals through the wake tree the stream reads anyway, and the controller
//! lives behind the clock, which a plain stream does not have.
//!
//! ```
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, stream};
//!
//! # futures::executor::block_on(async {
//! let mut jobs = stream::iter(0..1_000u32).map(|n| async move { n }).bounded(8, 8);
//! let limits = jobs.limits();
//! limits.set_workers(2); // a dependency is struggling: back off
//! assert_eq!(jobs.next().await, Some(0));
//! assert_eq!(jobs.stats().workers_limit, 2);
//! limits.set_workers(0); // pause: running work finishes, nothing starts
//! limits.set_workers(16); // resume, wider
//! # });
//! ```
//!
//! # Naming the stream's type
//!
//! Each form of the stream has a type a struct can hold, with one bound on
//! its source: [`FutureStream`] (any `Stream<Item: Future>`) for
//! [`BoundedBuffered`], [`TryFutureStream`] for [`TryBoundedBuffered`]. The
//! second and third type parameters say whether the stream reads a clock and
//! what comes back for an item that was not started:
//!
//! | made by | type | yields |
//! | --- | --- | --- |
//! | `.bounded(w, q)`, `.ordered(n)` | `BoundedBuffered<S>` | `T` |
//! | `.timed()`, `.clock(..)`, `.adaptive(..)` | `BoundedBuffered<S, Clocked>` | `T` |
//! | `.max_wait(d)` | `BoundedBuffered<S, Clocked, Expired<S::Item>>` | `Result<T, Expired<S::Item>>` |
//! | `.try_bounded(w, q)` | `TryBoundedBuffered<S>` | `Result<T, E>` |
//! | `.try_bounded(w, q).max_wait(d)` | `TryBoundedBuffered<S, Clocked, Expired<S::Ok>>` | `Result<Result<T, Expired<S::Ok>>, E>` |
//! | `.spawn_on(executor)` | [`Spawned<I>`](Spawned) | `I`, the item type of the stream it was made from |
//!
//! (`T` is the futures' output, or their `Ok` type with `try_bounded`; `E` the
//! error type; `.ordered(n)` never changes the type.) With `try_bounded` and
//! `max_wait`, the outer `Result` is the run's (its `Err` ends the run) and the
//! inner one the item's (an expired item does not): `?` and `try_next` stop at
//! the first, and see the second as a value.
//!
//! ```
//! use std::time::Duration;
//!
//! use bounded_buffered::{
//!     BoundedBuffered, BoundedStreamExt, Clocked, Expired, FutureStream, Spawned,
//!     TryBoundedBuffered, TryFutureStream,
//! };
//! use futures::{StreamExt, stream};
//!
//! struct Pipeline<S: FutureStream, R: TryFutureStream> {
//!     pages: BoundedBuffered<S>,
//!     timed: BoundedBuffered<S, Clocked>,
//!     expiring: BoundedBuffered<S, Clocked, Expired<S::Item>>,
//!     rows: TryBoundedBuffered<R>,
//!     expiring_rows: TryBoundedBuffered<R, Clocked, Expired<R::Ok>>,
//!     tasks: Spawned<u32>,
//! }
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! let pages = || stream::iter(0..10u32).map(|n| async move { n });
//! let rows = || stream::iter(0..10u32).map(|n| Ok::<_, String>(async move { Ok(n) }));
//! let mut pipeline = Pipeline {
//!     pages: pages().bounded(2, 2).ordered(4),
//!     timed: pages().bounded(2, 2).timed(),
//!     expiring: pages().bounded(2, 2).max_wait(Duration::from_secs(1)),
//!     rows: rows().try_bounded(2, 2),
//!     expiring_rows: rows().try_bounded(2, 2).max_wait(Duration::from_secs(1)),
//!     tasks: pages().bounded(2, 2).spawn_on(tokio::runtime::Handle::current()),
//! };
//! assert_eq!(pipeline.pages.next().await, Some(0));
//! assert_eq!(pipeline.timed.count().await, 10);
//! assert_eq!(pipeline.expiring.count().await, 10);
//! assert_eq!(pipeline.rows.next().await, Some(Ok(0)));
//! assert_eq!(pipeline.expiring_rows.count().await, 10);
//! assert_eq!(pipeline.tasks.count().await, 10);
//! # }
//! ```
//!
//! A stream of the wrong shape is refused with a message that says what to
//! change: a stream of values passed to `bounded`, a stream of futures passed
//! to `try_bounded` (wrap each in `Ok(..)`), or a source and futures whose
//! error types differ.
//!
//! # Choosing the budgets
//!
//! Start `workers` from what the downstream resource allows (connections in a
//! pool, a rate limit, cores for CPU work): more workers than the resource has
//! only queue inside the resource. Set `waiting` to cover the source's latency:
//! roughly the number of items the workers finish while the source produces
//! one batch (a page of a paged API, say). `0` disables prefetch. For ordered
//! output, `window == workers` behaves like `buffered(workers)`; a window a few
//! times larger keeps the workers busy past a slow item for the price of holding
//! up to `window` outputs.
//!
//! # Spawned mode
//!
//! In place, futures are polled only while the stream is polled (as with every
//! in-place stream adapter): while the consumer awaits something else, they
//! wait too. [`.spawn_on(executor)`](BoundedBuffered::spawn_on) runs the same
//! budgets with the futures in up to `workers` tasks that pull from the source
//! themselves, spawned as items need them, on any
//! [`Spawner`]: a `tokio::runtime::Handle` (feature `tokio`), a smol executor
//! (feature `smol`), or a closure that spawns. The price is `Send + 'static`
//! for the source, its futures and their outputs, and a few locks per item;
//! points 16 to 20 above say what it keeps. Every setting of the in-place
//! stream carries over: [`try_bounded`](BoundedStreamExt::try_bounded),
//! [`ordered`](BoundedBuffered::ordered), [`max_wait`](BoundedBuffered::max_wait),
//! [`timed`](BoundedBuffered::timed), [`clock`](BoundedBuffered::clock),
//! [`adaptive`](BoundedBuffered::adaptive), a [`Limits`] handle taken before
//! the switch, and [`close`](BoundedBuffered::close), all made before
//! `spawn_on`.
//!
//! ```
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, stream};
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() {
//! let mut lengths = stream::iter(["a", "bb", "ccc"])
//!     .map(|word| async move { word.len() })
//!     .bounded(2, 1)
//!     .spawn_on(tokio::runtime::Handle::current());
//! let mut total = 0;
//! while let Some(length) = lengths.next().await {
//!     total += length; // the workers keep going meanwhile
//! }
//! assert_eq!(total, 6);
//! assert_eq!(lengths.stats().completed, 3);
//! # }
//! ```
//!
//! # Time and capacity planning
//!
//! Time spent waiting for a worker is part of the time a caller waits.
//! [`max_wait`](BoundedBuffered::max_wait) bounds it: a waiting item that waited
//! longer than the limit when a worker frees up for it is not started, and is
//! yielded as an [`Expired`] holding its untouched future.
//! [`timed`](BoundedBuffered::timed) records where items spend their time
//! ([`Timings`]: `wait`, pull to start; `run`, start to completion; `held`,
//! completion to hand-out), and [`clock`](BoundedBuffered::clock) lets tests and
//! simulations supply the clock. A plain stream reads no clock: these change the
//! stream's type, so they cost it nothing.
//!
//! The clock is read at most once per `poll_next`, and every event a call handles
//! gets that reading: durations are exact to within the time one `poll_next`
//! takes. [`Histogram`]s are log-linear with 64 buckets per power of two:
//! `count`, `min`, `max` and `mean` are exact, quantiles within 0.8 %.
//!
//! To size the budgets from measurements: `workers / mean run` is the sustained
//! throughput, an item at position `k` of the waiting queue waits about
//! `k / throughput`, so a waiting budget above `throughput × max_wait` only holds
//! work that will expire. `Stats::expired` climbing says the queue is longer than
//! the deadline allows; `wait` near `max_wait` says it is permanently full.
//!
//! ```
//! use std::time::Duration;
//!
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, stream};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! // 2 workers of 10 ms (200 items/s), at most 15 ms of waiting: a queue of 8
//! // holds more than the workers clear in time.
//! let mut outcomes = stream::iter(0..10u32)
//!     .map(|n| async move {
//!         tokio::time::sleep(Duration::from_millis(10)).await;
//!         n
//!     })
//!     .bounded(2, 8)
//!     .max_wait(Duration::from_millis(15))
//!     .timed()
//!     .clock(|| tokio::time::Instant::now().into_std());
//! let mut expired = 0;
//! while let Some(outcome) = outcomes.next().await {
//!     expired += usize::from(outcome.is_err());
//! }
//! assert_eq!(expired, 6);
//! assert_eq!(outcomes.stats().expired, 6);
//! assert_eq!(outcomes.timings().unwrap().wait.max(), Duration::from_millis(10));
//! # }
//! ```
//!
//! # Failure and shutdown
//!
//! What a failure means is the caller's decision; the crate offers three
//! policies, and panics are never one of them.
//!
//! | policy | made by | on an error | use it when |
//! | --- | --- | --- | --- |
//! | error as an output | [`bounded`](BoundedStreamExt::bounded) | an `Err` is an output like any other, yielded in its place; the run goes on | each item's outcome is recorded on its own (per-item results, retries) |
//! | fail fast | [`try_bounded`](BoundedStreamExt::try_bounded) | the first `Err`, from the source or a future, ends the run: nothing more is pulled or started, running and waiting items are dropped at once, then the `Err` is yielded | the run succeeds or fails as a whole (a batch, a migration), and work after a failure is waste or harm |
//! | drain | [`close`](BoundedBuffered::close) | (not about errors) nothing more is pulled; running and waiting items finish and are yielded; then the stream ends | a graceful stop: shutdown, a quota reached, a bad item seen by the consumer |
//!
//! Fail fast yields, before the error, only what keeps the output order: every
//! output that completed before the error was seen when unordered, and the
//! complete prefix from the oldest unyielded position when ordered. An earlier
//! item still running never makes the error wait: it is cancelled. Outputs that
//! complete before the error are the caller's to reconcile (their side effects
//! happened); the rest never ran or were dropped.
//!
//! ```
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, TryStreamExt, stream};
//!
//! # futures::executor::block_on(async {
//! // A batch that succeeds or fails as a whole: item 3 fails, and nothing after
//! // it is started.
//! let saved: Result<Vec<u32>, String> = stream::iter(0..100u32)
//!     .map(|n| Ok::<_, String>(async move {
//!         if n == 3 { Err(format!("item {n} failed")) } else { Ok(n) }
//!     }))
//!     .try_bounded(2, 2)
//!     .ordered(4)
//!     .try_collect()
//!     .await;
//! assert_eq!(saved, Err("item 3 failed".to_string()));
//! # });
//! ```
//!
//! A drain is not the end of the source: after `close` and the stream's end,
//! [`reopen`](BoundedBuffered::reopen) makes the same stream pull again, from
//! the item after the last one it pulled, with its stats still counting. It
//! works with any source, `Unpin` or not (a paged query made with
//! `stream::unfold`): the stream is `Unpin` itself, so nothing has to be
//! boxed or moved out of a pin. [`into_inner`](BoundedBuffered::into_inner)
//! hands an `Unpin` source back instead. A run that failed fast does not
//! resume: what it had pulled after the error is gone.
//!
//! ```
//! use bounded_buffered::BoundedStreamExt;
//! use futures::{StreamExt, stream};
//!
//! # futures::executor::block_on(async {
//! // A paged source that is not `Unpin`.
//! let pages = stream::unfold(0u32, |page| async move {
//!     (page < 10).then(|| (async move { page * 10 }, page + 1))
//! });
//! let mut rows = pages.bounded(2, 2).ordered(4);
//! assert_eq!(rows.next().await, Some(0));
//! rows.close(); // shutdown requested: finish what was pulled
//! let before: Vec<u32> = rows.by_ref().collect().await;
//! rows.reopen(); // and carry on later, from the next page
//! let after: Vec<u32> = rows.by_ref().collect().await;
//! assert_eq!(1 + before.len() + after.len(), 10); // every page once
//! # });
//! ```
//!
//! Dropping the stream is the abrupt stop: it drops the source, every running
//! future, every waiting item and every held output, each exactly once, right
//! away.
//!
//! A panic in a future or in the source propagates out of `poll_next`. Dropping
//! the stream afterwards drops everything exactly once. Polling it again panics
//! with a message saying so, instead of carrying on with a lost item.
//!
//! # Panics
//!
//! `bounded` panics if `workers` is 0, `ordered` if `window` is 0, and every
//! builder method if the stream was already polled; a key limit or weight
//! budget of 0 panics too (contract point 11).
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![doc(test(attr(deny(warnings))))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adaptive;
mod admission;
mod aimd;
mod bounded;
mod budget;
mod clock;
mod engine;
mod expiry;
mod ext;
mod failure;
pub mod guide;
mod held;
mod index_queue;
mod items;
mod limits;
mod observe;
mod shed;
mod slots;
mod spawn;
mod stats;
mod sync;
mod tenants;
#[cfg(all(test, not(loom)))]
mod tests;
mod time;
mod timings;
mod wake;

pub use crate::adaptive::{Classify, Controller, Sample, Verdict};
pub use crate::admission::{
    KeyOf, KeyRule, Keyed, PerKey, Unkeyed, Unweighted, WeightOf, WeightRule, Weighted, Weights,
};
pub use crate::aimd::{Aimd, Decision, History};
pub use crate::bounded::{BoundedBuffered, TryBoundedBuffered};
pub use crate::clock::{Clocked, Clocking, Untimed};
pub use crate::expiry::{Expired, Unstarted};
pub use crate::ext::BoundedStreamExt;
pub use crate::items::{FutureStream, SendFutureStream, SendTryFutureStream, TryFutureStream};
pub use crate::limits::Limits;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::observe::HISTOGRAM_BUCKETS;
pub use crate::shed::{NotRun, Rejected, Shed};
#[cfg(feature = "smol")]
pub use crate::spawn::SmolGlobal;
pub use crate::spawn::{Spawnable, Spawned, Spawner};
pub use crate::stats::Stats;
pub use crate::tenants::{
    ErrorOf, FairShare, Fallible, FixedTenants, TenantOf, TenantShares, TenantStats, Tenanted,
    Tenants,
};
#[cfg(feature = "tokio")]
pub use crate::time::TokioTimer;
pub use crate::time::{Cancelled, Deadline, DeadlineOf, DeadlinePassed, Late, Timer, Unfinished};
#[cfg(feature = "smol")]
pub use crate::time::{SmolSleep, SmolTimer};
pub use crate::timings::{Histogram, Timings};
