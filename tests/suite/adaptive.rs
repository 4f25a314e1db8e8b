//! `.adaptive(controller, is_overload)`, in both modes (contract point 26, with
//! 25; 16 and 17 spawned): the controller's `initial()` replaces `workers`;
//! each completion hands it a `Sample` with the item's exact run time, the
//! classifier's verdict and whether the limit was reached; the limit it
//! returns applies at once (a raise starts items, spawned with no consumer
//! poll; a lowering stops new starts and cancels nothing), never below 1;
//! `limits()`, `stats()` and a handle taken before `.adaptive(...)` show it.
//!
//! The controller is [`Scripted`]: these tests check the stream's side
//! of adaptivity, not `Aimd`'s rule (a few run `Aimd`, for what its rule
//! needs of both drivers: completions with one clock reading reported as
//! one moment, and the items in flight at each refusal, which it judges
//! refusals by and backs off from). Deterministic: the futures are gates the
//! test opens, the clock (`support::now`) moves only when the test advances
//! it, and spawned streams run on an executor the test steps.

use std::sync::{Arc, Mutex};
use std::task::Poll;

use bounded_buffered::{Aimd, BoundedStreamExt, Controller, Keyed, Sample, Shed};
use futures::{StreamExt, TryStreamExt, stream};
use support::{Gates, advance, both_modes, drive, fed_source, ms, now, poll_once};

/// A controller that records what it hears and answers from a script (or
/// keeps the limit when the script runs out).
#[derive(Clone)]
pub(crate) struct Scripted {
    initial: usize,
    answers: Arc<Mutex<Vec<usize>>>,
    heard: Arc<Mutex<Vec<Sample>>>,
}

impl Scripted {
    pub(crate) fn new(initial: usize, answers: &[usize]) -> Self {
        let mut answers = answers.to_vec();
        answers.reverse();
        Self {
            initial,
            answers: Arc::new(Mutex::new(answers)),
            heard: Arc::default(),
        }
    }

    pub(crate) fn heard(&self) -> Vec<Sample> {
        self.heard.lock().unwrap().clone()
    }
}

impl Controller for Scripted {
    fn initial(&self) -> usize {
        self.initial
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        self.heard.lock().unwrap().push(*sample);
        self.answers.lock().unwrap().pop().unwrap_or(sample.limit)
    }
}

both_modes! {
    /// Point 26: `initial()` is the first limit, each answer the next, at once.
    fn the_initial_limit_replaces_workers_and_each_answer_applies_at_once(mode) {
        let gates = Gates::new();
        let controller = Scripted::new(2, &[5, 1]);
        let mut run = drive!(
            mode,
            gates.source(100).bounded(9, 0).adaptive(controller.clone(), |_: &usize| false)
        );
        let limits = run.limits();
        assert_eq!((limits.workers(), run.stats().workers_limit), (2, 2));
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 2);
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 2);
            // Point 18: the first completion answers 5 in the task's own lock
            // section: with no consumer poll, items start and tasks are spawned
            // for them (its held output keeps one worker).
            gates.open(0);
            run.settle();
            assert_eq!((gates.running(), run.spawns()), (4, 4));
            assert_eq!((limits.workers(), run.stats().workers_limit), (5, 5));
            assert_eq!(run.limits().workers(), 5);
        } else {
            gates.open(0);
        }
        // Taking it frees the fifth (in place, point 14: the poll that sees the
        // completion also applies the answer: three more start in it).
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        assert_eq!(gates.running(), 5);
        assert_eq!((limits.workers(), run.stats().workers_limit), (5, 5));
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 5);
        }

        // The next answers 1: running work goes on, nothing starts until fewer
        // than 1 run.
        gates.open(1);
        assert_eq!(run.take_ready(), [1]);
        assert_eq!(gates.running(), 4);
        assert_eq!((limits.workers(), run.stats().workers_limit), (1, 1));
        assert_eq!(gates.counts().futures_dropped, 2, "only the two that finished");
        let limits_heard = |controller: &Scripted| -> Vec<usize> {
            controller.heard().iter().map(|sample| sample.limit).collect()
        };
        assert_eq!(limits_heard(&controller), [2, 5]);
        for id in 2..5 {
            gates.open(id);
            assert_eq!(run.take_ready(), [id]);
        }
        assert_eq!((gates.running(), gates.started()), (1, 6), "none started");
        gates.open(5);
        assert_eq!(run.take_ready(), [5]);
        assert_eq!((gates.running(), gates.started()), (1, 7), "one at a time");
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 5);
        }
        assert_eq!(limits_heard(&controller), [2, 5, 1, 1, 1, 1]);
    }

    /// Point 26: never below 1, from `initial()` or from an answer.
    fn a_limit_of_zero_from_the_controller_is_taken_as_one(mode) {
        let gates = Gates::new();
        let stream = gates
            .source(10)
            .bounded(3, 0)
            .adaptive(Scripted::new(0, &[0]), |_: &usize| false);
        assert_eq!(stream.limits().workers(), 1);
        let mut run = drive!(mode, stream);
        assert_eq!((run.limits().workers(), run.stats().workers_limit), (1, 1));
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 1);
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        assert_eq!(gates.running(), 1, "still one worker: the stream goes on");
        assert_eq!((run.limits().workers(), run.stats().workers_limit), (1, 1));
    }

    /// Point 26: start, run time, verdict and saturation of every completion.
    fn samples_carry_exact_run_times_verdicts_and_saturation(mode) {
        // Item n runs 10 x (n + 1) ms and "overloads" when odd. Two workers,
        // six items, unordered; the consumer takes each output as it completes.
        support::reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(2, &[]);
        let mut run = drive!(
            mode,
            gates
                .source(6)
                .bounded(1, 0)
                .adaptive(controller.clone(), |n: &usize| n % 2 == 1)
                .clock(now)
        );
        let mut outputs = run.take_ready();
        // Item 0 runs 0-10, item 1 0-20, item 2 10-40, item 3 20-60, item 4
        // 40-90, item 5 60-120: the gates open at those ends.
        let mut at = 0;
        for (end, id) in [(10, 0), (20, 1), (40, 2), (60, 3), (90, 4), (120, 5)] {
            advance(ms(end - at));
            at = end;
            gates.open(id);
            outputs.extend(run.take_ready());
        }
        assert_eq!(outputs, [0, 1, 2, 3, 4, 5]);
        assert!(run.take_to_end().is_empty());
        let heard = controller.heard();
        let millis = |d: std::time::Duration| d.as_millis();
        let runs: Vec<_> = heard.iter().map(|s| (millis(s.started), millis(s.run))).collect();
        assert_eq!(runs, [(0, 10), (0, 20), (10, 30), (20, 40), (40, 50), (60, 60)]);
        let verdicts: Vec<_> = heard.iter().map(|s| s.overload).collect();
        assert_eq!(verdicts, [false, true, false, true, false, true]);
        // Both workers were busy at every completion but the last: the source
        // was empty by then, and only one ran.
        let saturated: Vec<_> = heard.iter().map(|s| s.saturated).collect();
        assert_eq!(saturated, [true, true, true, true, true, false]);
        assert!(heard.iter().all(|s| s.limit == 2));
    }

    /// Point 26: a source slower than the workers never reaches the limit.
    fn a_source_that_cannot_keep_up_leaves_the_limit_unreached(mode) {
        let (source, feed) = fed_source::<std::future::Ready<u8>>();
        let controller = Scripted::new(4, &[]);
        let mut run = drive!(
            mode,
            source.bounded(1, 0).adaptive(controller.clone(), |_: &u8| false)
        );
        assert!(run.take_ready().is_empty());
        for n in 0..5 {
            feed.push(std::future::ready(n));
            assert_eq!(run.take_ready(), [n]);
        }
        feed.close();
        assert!(run.take_to_end().is_empty());
        let heard = controller.heard();
        assert_eq!(heard.len(), 5);
        assert!(heard.iter().all(|sample| !sample.saturated), "{heard:?}");
        assert_eq!(run.stats().workers_limit, 4);
    }

    /// Points 26, 27 and 29: whether the limit was reached is decided by the
    /// rule the stream starts items by. Ordered with shedding, a rejection
    /// held takes no place in the window, so two items running in a window
    /// of three, with three workers, leave room: not reached.
    fn saturation_is_the_streams_own_start_rule(mode) {
        support::reset_clock();
        let gates = Gates::new();
        let controller = Scripted::new(3, &[]);
        let keys = ['a', 'b', 'a', 'c'];
        let source = gates
            .source(keys.len())
            .enumerate()
            .map(move |(id, gate)| Keyed::new(keys[id], gate));
        let mut run = drive!(
            mode,
            source
                .bounded(3, 1)
                .ordered(3)
                .per_key(1)
                .shed(Shed::Newest)
                .adaptive(controller.clone(), |_: &usize| false)
                .clock(now)
        );
        // Items 0 (a) and 1 (b) run; 2 (a) waits for its key, filling the one
        // waiting place; 3 (c), pulled past the full queue and beyond the
        // window, is handed back, held at its position behind them.
        assert!(run.take_ready().is_empty());
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held, stats.rejected), (2, 1, 1, 1));
        gates.open(1);
        let _ = run.take_ready();
        let heard = controller.heard();
        assert_eq!(heard.len(), 1);
        assert!(!heard[0].saturated, "a start was free: {:?}", heard[0]);
    }

    /// Points 26 and 34: with a rate, both hold, and a start the rate alone
    /// refuses is not the limit reached: more workers would not start more.
    fn a_start_the_rate_refuses_is_not_saturation(mode) {
        support::reset_clock();
        support::reset_timers();
        let gates = Gates::new();
        let controller = Scripted::new(3, &[]);
        let mut run = drive!(
            mode,
            gates
                .source(10)
                .bounded(3, 2)
                .timer(support::HandTimer)
                .rate(1, std::time::Duration::from_secs(1))
                .adaptive(controller.clone(), |_: &usize| false)
        );
        // One token: item 0 runs, two workers free, items 1 and 2 wait.
        assert!(run.take_ready().is_empty());
        assert_eq!((gates.started(), run.stats().waiting), (1, 2));
        gates.open(0);
        assert_eq!(run.take_ready(), [0]);
        let heard = controller.heard();
        assert_eq!(heard.len(), 1);
        assert!(!heard[0].saturated, "the rate, not the workers: {:?}", heard[0]);
        assert_eq!(gates.started(), 1, "no token yet");
    }

    /// Points 5 and 26: ordered, a full window counts as the limit reached.
    fn ordered_a_full_window_counts_as_reached(mode) {
        let gates = Gates::new();
        let controller = Scripted::new(8, &[]);
        let mut run = drive!(
            mode,
            gates
                .source(100)
                .bounded(1, 0)
                .ordered(3)
                .adaptive(controller.clone(), |_: &usize| false)
        );
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 3, "min(workers, window)");
        // Item 2 finishes behind the head: the window is full, so reached.
        gates.open(2);
        assert!(run.poll().is_pending());
        let heard = controller.heard();
        assert_eq!(heard.len(), 1);
        assert!(heard[0].saturated);
        assert_eq!(heard[0].limit, 8);
        // Item 1 finishes with item 2 held: running and held fill the window.
        gates.open(1);
        assert!(run.poll().is_pending());
        let heard = controller.heard();
        assert_eq!(heard.len(), 2);
        assert!(heard[1].saturated, "a held output counts against the window");
    }

    /// Points 25 and 26: a handle taken before `.adaptive(...)` (and before
    /// `spawn_on`) shows the controller's value and still reaches the stream.
    fn a_handle_taken_before_adaptive_shows_the_controllers_value_and_reaches_the_stream(mode) {
        let gates = Gates::new();
        let early = gates.source(100).bounded(1, 0);
        let limits = early.limits();
        let controller = Scripted::new(2, &[3]);
        let mut run = drive!(
            mode,
            early.ordered(8).adaptive(controller.clone(), |_: &usize| false).timed()
        );
        assert_eq!((limits.workers(), run.stats().workers_limit), (2, 2));
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 2);
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 2);
        }
        let wakes = run.wakes();
        limits.set_waiting(3);
        if !mode.is_spawned() {
            // Point 25: in place the change wakes the stream's task (spawned,
            // it sends for a worker task instead).
            assert_eq!(run.wakes(), wakes + 1, "the early handle wakes the stream");
        }
        assert!(run.poll().is_pending());
        assert_eq!(run.stats().waiting, 3);

        // The controller answers 3 at the first completion: the early handle, a
        // new one and the stats all show it, and a third item runs (spawned,
        // point 18: with the output still held; in place, point 14: in the poll
        // that takes it).
        gates.open(0);
        let mut taken = if mode.is_spawned() { vec![] } else { run.take_ready() };
        run.settle();
        assert_eq!(limits.workers(), 3);
        assert_eq!((run.limits().workers(), run.stats().workers_limit), (3, 3));
        assert_eq!(gates.running(), 3);
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 3);
        }

        // The early handle still reaches the stream (spawned: its tasks, with
        // no consumer poll).
        limits.set_workers(5);
        if mode.is_spawned() {
            run.settle();
        } else {
            assert!(run.poll().is_pending());
        }
        assert_eq!(gates.running(), 5);
        assert_eq!(run.stats().workers_limit, 5);
        if mode.is_spawned() {
            assert_eq!(run.spawns(), 5);
        }
        taken.extend(run.take_ready());
        assert_eq!(taken, [0]);
    }

    /// Points 25 and 26: a handle's `set_workers` is in force until the
    /// controller's next decision, which overrides it.
    fn a_handles_set_workers_lasts_until_the_controllers_next_decision(mode) {
        let gates = Gates::new();
        let controller = Scripted::new(2, &[2]);
        let mut run = drive!(
            mode,
            gates
                .source(100)
                .bounded(1, 0)
                .ordered(16)
                .adaptive(controller.clone(), |_: &usize| false)
        );
        let limits = run.limits();
        assert!(run.poll().is_pending());
        limits.set_workers(6);
        if mode.is_spawned() {
            run.settle(); // The handle sends for the tasks: no poll is needed.
        } else {
            assert!(run.poll().is_pending());
        }
        assert_eq!(gates.running(), 6);
        // The next decision (2) overrides it: nothing more starts, nothing is
        // cancelled.
        gates.open(0);
        let decided = |run: &support::Driven<'_, usize>| {
            assert_eq!(controller.heard()[0].limit, 6, "the handle's limit was in force");
            assert_eq!((limits.workers(), run.stats().workers_limit), (2, 2));
            assert_eq!(gates.running(), 5);
            assert_eq!(gates.counts().futures_dropped, 1);
        };
        if mode.is_spawned() {
            // Point 18: decided by the task that completed item 0, before the
            // consumer takes it.
            run.settle();
            decided(&run);
        }
        assert_eq!(run.poll(), Poll::Ready(Some(0)));
        decided(&run);
    }

    /// Point 26 with `Aimd`: completions with one clock reading reach the
    /// controller as one moment (the same `started + run`), in which slow
    /// start's doubling starts 32 items at most.
    fn aimd_s_doubling_starts_32_at_most_in_one_moment(mode) {
        support::reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates
                .source(400)
                .bounded(1, 0)
                .adaptive(Aimd::new(1, 256).starting_at(64), |_: &usize| false)
                .clock(now)
        );
        assert!(run.take_ready().is_empty());
        assert_eq!(gates.running(), 64);
        // Each batch completes in one moment, 10 ms after the one before.
        let mut next = 0;
        let mut moment = |run: &mut support::Driven<'_, usize>, count: usize| {
            advance(ms(10));
            for id in next..next + count {
                gates.open(id);
            }
            next += count;
            assert_eq!(run.take_ready().len(), count);
            (gates.running(), run.limits().workers())
        };
        // The first round, 64 samples: no rise, it doubles to 128. The
        // doubling takes effect from the next completion on.
        assert_eq!(moment(&mut run, 64), (64, 64));
        // 64 completions in one moment: 32 more at most, not 64.
        assert_eq!(moment(&mut run, 64), (96, 96));
        // The next moment reaches the doubled limit.
        assert_eq!(moment(&mut run, 96), (128, 128));
    }

    /// Point 26 with `Aimd`'s refusals judged against the limit (issue 34):
    /// a service with room for far more than `max` that refuses one call in
    /// 67 whatever the load lets the limit grow to `max` and stay there; with
    /// a capacity of 24 and no queue (a call started beyond it is refused at
    /// once) as well, the limit keeps within [22, 25] once slow start is
    /// over (a probe of 25 every few hundred calls, and the back-off after
    /// its refusal), and at most 1 % of the calls are refused for want of
    /// room (the target for wasted calls). Both drivers feed the
    /// rule what it needs for this.
    fn aimd_holds_the_limit_down_only_for_refusals_that_rise_with_it(mode) {
        let roomy = serve(mode, usize::MAX, 200);
        assert_eq!((roomy.late_limits, roomy.beyond), ((256, 256), 0), "{roomy:?}");
        let capacity = serve(mode, 24, 200);
        let (lowest, highest) = capacity.late_limits;
        assert!(lowest >= 22 && highest <= 25, "{capacity:?}");
        // The last 100 moments run about 2,400 calls.
        assert!(capacity.beyond_late <= 24, "{capacity:?}");
    }

    /// Point 26 with `Aimd`'s back-off (issue 34): refusals that come back in
    /// the moment of other completions back off from the limit in force when
    /// the refused items started, in both modes. Spawned, the completions of
    /// a moment start their next items before its refusals reach the
    /// controller, so the items in flight at a refusal count those starts
    /// (here up to 160: backed off from them, the limit stood at 118 after
    /// the moment and 18 more were refused); in place, the stream starts
    /// them once the moment is settled.
    fn aimd_backs_off_from_the_limit_in_force_when_the_refused_items_started(mode) {
        // A service of 100 with no queue, from 64: slow start's doubling to
        // 128 takes two moments (32 starts at most in one).
        let moments = serve_beside(mode, 100, 7);
        assert_eq!(moments[..3], [(0, 64), (0, 96), (0, 128)], "{moments:?}");
        // 28 of those 128 refused, beside 100 completions that each start
        // another under the next doubling: the back-off is from 128 (0.9
        // times, rounded down), and the refusals of the same burst lower it
        // further.
        let (refused, limit) = moments[3];
        assert!(refused == 28 && limit <= 115, "{moments:?}");
        // A few more refused at most, and the limit holds at the capacity.
        assert!(moments[4].0 <= 4, "{moments:?}");
        assert_eq!(moments[5..], [(0, 100), (0, 100)], "{moments:?}");
    }

    /// Point 26 with `Aimd`'s floor from what the service served (issue
    /// 34): a service of 32 servers with a queue, every call 20 ms, that
    /// pauses one moment in 5 (a collector's pause: the calls due then take
    /// 30 ms). A round with a pause in it runs about a quarter longer than
    /// the unloaded run time: a queue of a fifth of the limit by the run
    /// time alone. But the rounds before it served as many at 20 ms, so the
    /// limit holds where it stands: over the second half of 600 moments,
    /// never below the capacity (without the floor: 22 in place, 18
    /// spawned), and never past half as much again (where the queue would
    /// take the p95 target's 1.5 times; the rule's own probes past the
    /// capacity reach 43 in place, 38 spawned).
    fn aimd_holds_the_limit_where_a_pause_slows_a_round_without_a_queue(mode) {
        let (lowest, highest) = serve_pausing(mode, 32, 5, 600);
        assert!(lowest >= 32 && highest <= 48, "{:?}", (lowest, highest));
    }

    /// Point 26 with point 21: `try_bounded` streams adapt too.
    fn try_bounded_streams_adapt_too(mode) {
        let gates = Gates::new();
        let controller = Scripted::new(1, &[3]);
        let source = gates
            .source(100)
            .map(Ok::<_, ()>)
            .map_ok(|gate| async move { Ok::<_, ()>(gate.await) });
        let mut run = drive!(
            mode,
            source
                .try_bounded(1, 0)
                .adaptive(controller.clone(), |output: &Result<usize, ()>| output.is_err())
        );
        assert!(run.poll().is_pending());
        assert_eq!(gates.running(), 1);
        gates.open(0);
        assert_eq!(run.poll(), Poll::Ready(Some(Ok(0))));
        assert_eq!(gates.running(), 3);
        assert_eq!(run.limits().workers(), 3);
        assert_eq!(controller.heard().len(), 1);
    }
}

/// Point 11: `adaptive` must come before the first poll.
#[test]
#[should_panic(expected = "`adaptive` must be called before the stream is first polled")]
fn adaptive_after_the_first_poll_panics() {
    let mut stream = stream::iter(0..3u8).map(std::future::ready).bounded(1, 0);
    let _ = poll_once(&mut stream);
    let _ = stream.adaptive(Scripted::new(1, &[]), |_: &u8| false);
}

/// Runs `Aimd::new(1, 256)` against a service of `capacity` servers with a
/// queue: a call enters service in the moment it starts if a server is free
/// (else, first come first served, in the first moment one is) and takes
/// two moments (20 ms), except that one moment in `every` completes none:
/// those due then complete in the next (30 ms). Refuses nothing, so what it
/// gives back is the lowest and the highest workers limit over the second
/// half of the moments.
fn serve_pausing(
    mode: support::Mode,
    capacity: usize,
    every: usize,
    moments: usize,
) -> (usize, usize) {
    support::reset_clock();
    let gates = Gates::new();
    let mut run = drive!(
        mode,
        gates
            .source(usize::MAX)
            .bounded(1, 0)
            .adaptive(Aimd::new(1, 256), |_: &usize| false)
            .clock(now)
    );
    let mut late_limits = (usize::MAX, 0);
    // The calls in service, and the moment each entered it.
    let mut serving = std::collections::BTreeMap::new();
    let enter = |serving: &mut std::collections::BTreeMap<usize, usize>, moment: usize| {
        for id in gates.closed_started() {
            if serving.len() == capacity {
                break;
            }
            serving.entry(id).or_insert(moment);
        }
    };
    assert!(run.take_ready().is_empty());
    enter(&mut serving, 0);
    for moment in 1..=moments {
        advance(ms(10));
        if moment % every != 0 {
            serving.retain(|&id, &mut entered| {
                let due = moment - entered >= 2;
                if due {
                    gates.open(id);
                }
                !due
            });
        }
        run.take_ready();
        enter(&mut serving, moment);
        if moment > moments / 2 {
            let limit = run.limits().workers();
            let (lowest, highest) = &mut late_limits;
            (*lowest, *highest) = ((*lowest).min(limit), (*highest).max(limit));
        }
    }
    late_limits
}

/// What [`serve`] saw over the second half of its moments: the lowest and
/// the highest workers limit, and the calls refused for want of room (and
/// those over all the moments).
#[derive(Debug)]
struct Served {
    late_limits: (usize, usize),
    beyond_late: usize,
    beyond: usize,
}

/// Runs `Aimd::new(1, 256)` against a service with no queue: every call
/// takes 10 ms (all that run complete in one moment, 10 ms after the one
/// before), one in 67 is refused whatever the load, and a call started
/// while `capacity` others run is refused at once, in its own moment.
fn serve(mode: support::Mode, capacity: usize, moments: usize) -> Served {
    support::reset_clock();
    let gates = Gates::new();
    let refused = Arc::new(Mutex::new(std::collections::HashSet::new()));
    let is_refused = {
        let refused = Arc::clone(&refused);
        move |id: &usize| id % 67 == 66 || refused.lock().unwrap().contains(id)
    };
    let mut run = drive!(
        mode,
        gates
            .source(usize::MAX)
            .bounded(1, 0)
            .adaptive(Aimd::new(1, 256), is_refused)
            .clock(now)
    );
    let mut served = Served {
        late_limits: (usize::MAX, 0),
        beyond_late: 0,
        beyond: 0,
    };
    assert!(run.take_ready().is_empty());
    for moment in 0..moments {
        let late = moment >= moments / 2;
        // Those started beyond the capacity, the last first, refused at once:
        // each frees a worker, which may start another.
        for refused_now in 0.. {
            assert!(refused_now < 1_000, "refused at once for good: {served:?}");
            let running = gates.closed_started();
            let Some(&last) = running.last().filter(|_| running.len() > capacity) else {
                break;
            };
            refused.lock().unwrap().insert(last);
            gates.open(last);
            served.beyond += 1;
            served.beyond_late += usize::from(late);
            run.take_ready();
        }
        advance(ms(10));
        for id in gates.closed_started() {
            gates.open(id);
        }
        run.take_ready();
        if late {
            let limit = run.limits().workers();
            let (lowest, highest) = &mut served.late_limits;
            (*lowest, *highest) = ((*lowest).min(limit), (*highest).max(limit));
        }
    }
    served
}

/// Runs `Aimd::new(1, 256).starting_at(64)` against a service of `capacity`
/// servers with no queue, for `moments` moments 10 ms apart: every call
/// takes one moment, and all the calls that ran in a moment come back at
/// once at the next, those started beyond the capacity (the last started)
/// refused. What it gives back: after each moment, the calls refused in it
/// and the workers limit.
fn serve_beside(mode: support::Mode, capacity: usize, moments: usize) -> Vec<(usize, usize)> {
    support::reset_clock();
    let gates = Gates::new();
    let refused = Arc::new(Mutex::new(std::collections::HashSet::<usize>::new()));
    let is_refused = {
        let refused = Arc::clone(&refused);
        move |id: &usize| refused.lock().unwrap().contains(id)
    };
    let mut run = drive!(
        mode,
        gates
            .source(usize::MAX)
            .bounded(1, 0)
            .adaptive(Aimd::new(1, 256).starting_at(64), is_refused)
            .clock(now)
    );
    assert!(run.take_ready().is_empty());
    let mut seen = Vec::with_capacity(moments);
    for _ in 0..moments {
        advance(ms(10));
        let running = gates.closed_started();
        let beyond = running.len().saturating_sub(capacity);
        refused
            .lock()
            .unwrap()
            .extend(&running[running.len() - beyond..]);
        for id in running {
            gates.open(id);
        }
        run.take_ready();
        seen.push((beyond, run.limits().workers()));
    }
    seen
}
