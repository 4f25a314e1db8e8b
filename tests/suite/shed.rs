//! Shedding, in both modes (contract point 29): with the queue full and no
//! item that may start, the stream keeps pulling and hands an item back,
//! never polled, as a `Rejected`: the one just pulled (`Newest`), or the oldest
//! waiting one, whose place it takes (`Oldest`); an item pulled while a worker
//! is free starts instead. Untaken rejections count against an allowance of
//! `max(waiting, 1)`, so a consumer that stops stops the pulling: with every
//! future blocked the source has advanced at most `workers + waiting +
//! max(waiting, 1)` items. Ordered, a rejection comes at its input position.
//! With `max_wait` too, an item not run is a `NotRun`, with its cause.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Keyed, NotRun, Rejected, Shed, Weighted};
use futures::StreamExt;
use support::{Gate, Gates, advance, both_modes, counted, drive, ms, now, reset_clock};

/// The ids of weighted outcomes, outputs and rejections apart, each sorted.
fn weighted_ids(
    outcomes: Vec<Result<usize, Rejected<Weighted<Gate>>>>,
) -> (Vec<usize>, Vec<usize>) {
    let (mut done, mut rejected) = (Vec::new(), Vec::new());
    for outcome in outcomes {
        match outcome {
            Ok(id) => done.push(id),
            Err(item) => rejected.push(item.into_inner().into_inner().id()),
        }
    }
    done.sort();
    rejected.sort();
    (done, rejected)
}

/// An outcome as the tests compare it: the output, or the rejected item's id.
fn seen(outcome: Result<usize, Rejected<Gate>>) -> Result<usize, usize> {
    outcome.map_err(|rejected| rejected.into_inner().id())
}

fn seen_all(outcomes: Vec<Result<usize, Rejected<Gate>>>) -> Vec<Result<usize, usize>> {
    outcomes.into_iter().map(seen).collect()
}

/// Polls until the stream yields (spawned, the tasks run between polls).
fn first<T>(run: &mut support::Driven<'_, T>) -> T {
    for _ in 0..3 {
        if let Poll::Ready(Some(output)) = run.poll() {
            return output;
        }
    }
    panic!("no output")
}

/// Takes the first rejection of a stream of `workers == 2, waiting == 0`
/// whose items all block, and checks the bound of point 29 exactly: two
/// running, `places` waiting, one rejection held beyond the consumer, and
/// not one item more pulled however long the tasks run.
fn one_place_and_the_allowance<T, R>(
    mut run: support::Driven<'_, Result<T, R>>,
    pulled: impl Fn() -> usize,
    places: usize,
) {
    assert!(first(&mut run).is_err(), "the first outcome is a rejection");
    let beyond = pulled() - 1;
    assert_eq!(beyond, 2 + places + 1);
    let stats = run.stats();
    assert_eq!((stats.active, stats.waiting, stats.held), (2, places, 1));
    assert_eq!(stats.waiting_limit, 0);
    run.settle();
    assert_eq!(pulled() - 1, beyond, "not one more");
}

both_modes! {
    /// Point 29: `Newest` hands back the item just pulled; the allowance
    /// (`max(waiting, 1)` untaken rejections) bounds the pulling exactly.
    fn newest_hands_back_the_item_just_pulled_within_the_allowance(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(100));
        let mut run = drive!(mode, source.bounded(2, 2).shed(Shed::Newest));
        if mode.is_spawned() {
            // Point 18: the tasks shed while the consumer is away, up to the
            // allowance: 2 running, 2 waiting, 2 rejections untaken.
            let _ = run.poll();
            let stats = run.stats();
            assert_eq!((stats.active, stats.waiting, stats.rejected), (2, 2, 2));
            assert_eq!(pulled.pulled(), 2 + 2 + 2, "workers + waiting + the allowance");
        }
        // The first rejected is the first pulled past the full queue; taking
        // it freed one allowance, and one more was pulled and handed back.
        assert_eq!(seen(first(&mut run)), Err(4));
        assert_eq!(pulled.pulled(), 7);
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held, stats.rejected), (2, 2, 2, 3));
        assert!((0..4).all(|id| gates.is_started(id) == (id < 2)), "the waiting items wait");
        assert!((4..7).all(|id| !gates.is_started(id)), "a rejected item is never polled");
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Points 27 to 29: keys or weights keep one waiting place even with
    /// `waiting == 0`, beside the rejection allowance of `max(waiting, 1)`:
    /// with every future blocked the source has advanced exactly `workers + 2
    /// × max(waiting, 1)` items beyond the consumer (`workers + waiting +
    /// max(waiting, 1)` without keys or weights), and `stats().waiting` is 1
    /// with a limit of 0.
    fn with_keys_or_weights_one_place_waits_besides_the_allowance(mode) {
        // Item 2 waits in the one place, item 3 is handed back and taken, item
        // 4 is handed back and held: 2 + 1 + 1 beyond the consumer.
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(10));
        let keyed = source.map(|gate| Keyed::new(gate.id(), gate));
        let run = drive!(mode, keyed.bounded(2, 0).per_key(1).shed(Shed::Newest));
        one_place_and_the_allowance(run, || pulled.pulled(), 1);

        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(10));
        let weighted = source.map(|gate| Weighted::new(1, gate));
        let run = drive!(mode, weighted.bounded(2, 0).max_waiting_weight(4).shed(Shed::Newest));
        one_place_and_the_allowance(run, || pulled.pulled(), 1);

        // Without keys or weights there is no waiting place: 2 + 0 + 1.
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(10));
        let run = drive!(mode, source.bounded(2, 0).shed(Shed::Newest));
        one_place_and_the_allowance(run, || pulled.pulled(), 0);
    }

    /// Point 29: `Oldest` hands back the oldest waiting item, and the new one
    /// takes its place: what waits is what came last.
    fn oldest_hands_back_the_oldest_waiting_item(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(8));
        let mut run = drive!(mode, source.bounded(2, 2).shed(Shed::Oldest));
        // Items 2 and 3 (the oldest waiting) go first, items 4 and 5 take
        // their places; taking item 2's rejection lets item 6 in and item 4
        // out, item 3's item 7 in and item 5 out.
        assert_eq!(seen(first(&mut run)), Err(2));
        assert_eq!(pulled.pulled(), 7);
        assert_eq!(seen(first(&mut run)), Err(3));
        assert_eq!(pulled.pulled(), 8);
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.held, stats.rejected), (2, 2, 2, 4));
        // Once a worker is free, the freshest items are the ones that wait,
        // and the oldest of them runs.
        gates.open(0);
        let mut taken = seen_all(run.take_ready());
        taken.sort();
        assert_eq!(taken, [Ok(0), Err(4), Err(5)]);
        assert_eq!(gates.closed_started(), [1, 6], "a fresh item ran, not a stale one");
        gates.open_all();
        let mut rest = seen_all(run.take_to_end());
        rest.sort();
        assert_eq!(rest, [Ok(1), Ok(6), Ok(7)]);
        run.drop_stream();
        gates.check_all_dropped_once();
    }

    /// Point 29: with a worker free, a pulled item starts rather than being
    /// shed; with no waiting place, every item past the workers is handed
    /// back at once.
    fn a_free_worker_runs_what_is_pulled_and_no_waiting_place_sheds_the_rest(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(gates.source(100));
        let mut run = drive!(mode, source.bounded(1, 0).shed(Shed::Newest));
        assert_eq!(seen(first(&mut run)), Err(1));
        assert!(gates.is_started(0), "pulled with the worker free: it runs");
        assert_eq!(pulled.pulled(), 3, "one untaken rejection at a time (the allowance is one)");
        gates.open(0);
        let next = seen(first(&mut run));
        assert!(next == Ok(0) || next == Err(2), "{next:?}");
    }

    /// Points 5 and 29: ordered, a rejection comes at its input position.
    fn ordered_a_rejection_comes_at_its_input_position(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(3).bounded(1, 1).ordered(4).shed(Shed::Newest));
        assert!(run.take_ready().is_empty(), "item 2's rejection waits for items 0 and 1");
        assert_eq!(run.stats().rejected, 1);
        gates.open(0);
        assert_eq!(seen_all(run.take_ready()), [Ok(0)]);
        gates.open(1);
        assert_eq!(seen_all(run.take_to_end()), [Ok(1), Err(2)]);
    }

    /// Points 23 and 29: with `max_wait` too, one error type with its cause.
    fn with_max_wait_an_item_not_run_is_a_not_run_with_its_cause(mode) {
        reset_clock();
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.source(4).bounded(1, 1).max_wait(ms(5)).shed(Shed::Newest).clock(now)
        );
        // Item 0 runs, item 1 waits, items 2 and 3 are shed (one at a time);
        // item 1 has waited 10 ms when the worker frees up: expired.
        let mut outcomes = vec![first(&mut run)];
        advance(ms(10));
        gates.open(0);
        outcomes.extend(run.take_to_end_opening(&gates));
        let mut causes: Vec<String> = outcomes
            .into_iter()
            .map(|outcome| match outcome {
                Ok(id) => format!("ok {id}"),
                Err(NotRun::Expired(expired)) => {
                    format!("expired {} after {:?}", expired.into_inner().id(), ms(10))
                }
                Err(NotRun::Rejected(rejected)) => format!("rejected {}", rejected.into_inner().id()),
            })
            .collect();
        causes.sort();
        assert_eq!(causes, ["expired 1 after 10ms", "ok 0", "rejected 2", "rejected 3"]);
    }

    /// Points 28 and 29: an item pulled past the full queue starts only if
    /// the rules pick it after the waiting items: weights go first come,
    /// first served, so a light item does not pass a heavy waiting one that
    /// the free worker waits for; it is shed.
    fn an_item_pulled_past_the_full_queue_does_not_pass_a_waiting_one(mode) {
        let gates = Gates::new();
        let mut run = drive!(
            mode,
            gates.weighted_source(&[1, 2, 0]).bounded(2, 0).max_running_weight(2).shed(Shed::Newest)
        );
        let (done, rejected) = weighted_ids(run.take_woken());
        assert_eq!((done, rejected), (vec![], vec![2]), "item 2 (weight 0) would fit, but item 1 is first");
        assert_eq!(gates.closed_started(), [0]);
        gates.open(0);
        assert_eq!(weighted_ids(run.take_woken()).0, [0]);
        assert_eq!(gates.closed_started(), [1], "item 1 starts once its weight fits");
        gates.open_all();
        assert_eq!(weighted_ids(run.take_to_end()).0, [1]);
    }

    /// Points 5 and 29: ordered, a held rejection takes no place in the
    /// window: past it by its position, it must not keep the items before
    /// it (which it is yielded after) from starting.
    fn ordered_a_held_rejection_takes_no_place_in_the_window(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(3).bounded(1, 1).ordered(1).shed(Shed::Newest));
        assert!(run.take_woken().is_empty());
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.rejected), (1, 1, 1));
        gates.open_all();
        assert_eq!(seen_all(run.take_to_end()), [Ok(0), Ok(1), Err(2)]);
        assert_eq!(run.stats().peak_held, 2, "the window (1) and one rejection");
    }

    /// Points 28 and 29: `Oldest` makes room by weight: it hands back as many
    /// of the oldest waiting items as the new one needs, so the weight
    /// waiting stays below its budget plus one item, as without shedding.
    fn oldest_makes_room_by_weight(mode) {
        let gates = Gates::new();
        let weights = &[0, 1, 1, 1, 1, 4, 4, 4, 4];
        let mut run = drive!(
            mode,
            gates.weighted_source(weights).bounded(1, 8).max_waiting_weight(4).shed(Shed::Oldest)
        );
        // Items 1 to 4 wait (weight 4). Item 5 takes item 1's place (1 + 1 +
        // 1 + 4 = 7); item 6 needs items 2, 3, 4 and 5 gone (4 < 4 only at
        // 0); items 7 and 8 each take the place of the one before.
        let (done, rejected) = weighted_ids(run.take_woken());
        assert!(done.is_empty());
        assert_eq!(rejected, [1, 2, 3, 4, 5, 6, 7]);
        let stats = run.stats();
        assert_eq!((stats.waiting, stats.waiting_weight, stats.peak_waiting_weight), (1, 4, 7));
        assert!(stats.peak_waiting_weight < 4 + 4, "below the budget plus one item");
        gates.open_all();
        assert_eq!(weighted_ids(run.take_to_end()).0, [0, 8]);
    }

    /// Points 28 and 29: the room an `Oldest` swap frees (a heavy item handed
    /// back for a light one) is filled again at once.
    fn oldest_refills_what_a_swap_freed(mode) {
        let gates = Gates::new();
        let (source, pulled) = counted(gates.weighted_source(&[0, 1, 0, 0, 0]));
        let mut run = drive!(mode, source.bounded(1, 2).max_waiting_weight(1).shed(Shed::Oldest));
        // Item 1 fills the weight; item 2 takes its place (weight 0), which
        // leaves room: item 3 waits beside it; item 4 takes item 2's place.
        // All of it before the consumer takes anything (in place, the first
        // poll yields item 1's rejection; spawned it is pending, point 17,
        // and the tasks did the same).
        let first = run.poll();
        assert_eq!(pulled.pulled(), 5, "the room the swap freed was filled");
        let stats = run.stats();
        assert_eq!((stats.waiting, stats.waiting_weight, stats.rejected), (2, 0, 2));
        let mut outcomes: Vec<_> = match first {
            Poll::Ready(Some(outcome)) => vec![outcome],
            _ => Vec::new(),
        };
        outcomes.extend(run.take_woken());
        assert_eq!(weighted_ids(outcomes), (vec![], vec![1, 2]));
        gates.open_all();
        assert_eq!(weighted_ids(run.take_to_end()).0, [0, 3, 4]);

        // Every item of one key, at its limit: each swap frees the weight of
        // a heavy item for a light one, and the free place is filled before
        // the poll that handed out the first rejection returns (in place, as
        // spawned).
        let gates = Gates::new();
        let weights = [0u64, 3, 3, 3, 0, 0];
        let (source, pulled) = counted(
            gates
                .source(weights.len())
                .enumerate()
                .map(move |(id, gate)| Keyed::new(0u8, Weighted::new(weights[id], gate))),
        );
        let mut run = drive!(
            mode,
            source.bounded(4, 2).per_key(1).max_waiting_weight(3).shed(Shed::Oldest)
        );
        match run.poll_woken() {
            Poll::Ready(Some(Err(rejected))) => {
                assert_eq!(rejected.into_inner().into_inner().into_inner().id(), 1);
            }
            other => panic!("expected item 1's rejection: {:?}", other.map(|o| o.map(|o| o.map(|_| ())))),
        }
        assert_eq!(pulled.pulled(), 6, "items 4 and 5 wait: the freed weight was filled");
        let stats = run.stats();
        assert_eq!((stats.waiting, stats.waiting_weight, stats.rejected), (2, 0, 3));
    }

    /// Points 25 and 29: with `waiting` lowered below what waits, `Oldest`
    /// still swaps one for one (the queue does not grow), so what waits stays
    /// the newest.
    fn oldest_swaps_one_for_one_below_a_lowered_waiting_budget(mode) {
        let gates = Gates::new();
        let mut run = drive!(mode, gates.source(8).bounded(1, 2).shed(Shed::Oldest));
        let mut outcomes = vec![first(&mut run)];
        run.limits().set_waiting(0);
        outcomes.extend(run.take_woken());
        gates.open_all();
        outcomes.extend(run.take_to_end());
        let mut outcomes = seen_all(outcomes);
        outcomes.sort();
        let rejected = (1..6).map(Err);
        assert_eq!(outcomes, [Ok(0), Ok(6), Ok(7)].into_iter().chain(rejected).collect::<Vec<_>>());
    }
}

/// What a `Driven` lacks for a test that opens gates as it goes.
trait TakeOpening<T> {
    fn take_to_end_opening(&mut self, gates: &Gates) -> Vec<T>;
}

impl<T> TakeOpening<T> for support::Driven<'_, T> {
    /// Polls to the end, opening every pulled gate whenever the stream is
    /// pending.
    fn take_to_end_opening(&mut self, gates: &Gates) -> Vec<T> {
        let mut taken = Vec::new();
        loop {
            match self.poll() {
                Poll::Ready(Some(output)) => taken.push(output),
                Poll::Ready(None) => return taken,
                Poll::Pending => {
                    assert!(!gates.closed_pulled().is_empty(), "stalled");
                    gates.open_all();
                }
            }
        }
    }
}
