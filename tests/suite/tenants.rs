//! Per-tenant sources with fair shares, in both modes (contract points 35
//! and 36): one `workers` budget for all tenants and a `waiting` budget for
//! each, so with every future blocked the source has given exactly
//! `workers + waiting × tenants` items, `running + waiting` of each; the
//! next start goes to the tenant whose start-time tag is lowest, so busy
//! tenants share starts by weight within one start each; no worker idles
//! while a tenant has an item its cap allows; an idle tenant banks no
//! credit; at most `max_tenants` are held, the tenants' stream waiting
//! beyond.

use std::ops::Range;

use bounded_buffered::Tenants;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use support::{Gate, Gates, both_modes, drive};

/// A tenant's source: the gates `ids`, pulled one at a time.
fn tenant(gates: &Gates, ids: Range<usize>) -> BoxStream<'static, Gate> {
    gates.range_source(ids).boxed()
}

/// Which of `ids` were pulled (their gate made) so far.
fn pulled(gates: &Gates, ids: Range<usize>) -> usize {
    ids.filter(|&id| gates.was_pulled(id)).count()
}

/// The ids started so far, in `0..count`.
fn started(gates: &Gates, count: usize) -> Vec<usize> {
    (0..count).filter(|&id| gates.is_started(id)).collect()
}

/// Opens every gate of `ids` (pulled or not) and takes the outputs to the
/// end.
fn finish<const N: usize>(
    run: &mut support::Driven<'_, usize>,
    gates: &Gates,
    ids: [Range<usize>; N],
) -> Vec<usize> {
    for id in ids.into_iter().flatten() {
        gates.open(id);
    }
    run.take_to_end()
}

/// One worker: opens the running gate, again and again, and says whose
/// each start was (`tenant_of` an id), in start order.
fn start_order(
    run: &mut support::Driven<'_, usize>,
    gates: &Gates,
    count: usize,
    starts: usize,
    tenant_of: impl Fn(usize) -> char,
) -> String {
    let mut order = String::new();
    for _ in 0..starts {
        let running: Vec<usize> = started(gates, count)
            .into_iter()
            .filter(|&id| !gates.is_finished(id))
            .collect();
        assert_eq!(running.len(), 1, "one worker: one item runs");
        order.push(tenant_of(running[0]));
        gates.open(running[0]);
        assert_eq!(run.take_ready(), [running[0]]);
    }
    order
}

both_modes! {
    /// Point 35: every future blocked, each tenant has exactly `waiting`
    /// items waiting beside the ones it runs, and the source has given
    /// `workers + waiting × tenants` in all; a start frees its tenant's
    /// place, which is filled from that tenant alone.
    fn each_tenant_waits_in_its_own_places_and_the_bound_is_exact(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..10))
            .with('b', 1, tenant(&gates, 10..20))
            .with('c', 2, tenant(&gates, 20..30));
        let mut run = drive!(mode, tenants.bounded(2, 2));
        assert!(run.take_ready().is_empty());
        // a0 and b10 run (the first two pulled; c's first item came after).
        assert_eq!(started(&gates, 30), [0, 10]);
        assert_eq!(
            (pulled(&gates, 0..10), pulled(&gates, 10..20), pulled(&gates, 20..30)),
            (3, 3, 2)
        );
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.pulled), (2, 6, 8));

        // a0 completes: c, which has not started yet, is earliest; its place
        // is filled from c, and nobody else is pulled from.
        gates.open(0);
        let mut outputs = run.take_ready();
        assert_eq!(outputs, [0]);
        assert_eq!(started(&gates, 30), [0, 10, 20]);
        assert_eq!(
            (pulled(&gates, 0..10), pulled(&gates, 10..20), pulled(&gates, 20..30)),
            (3, 3, 3)
        );
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting, stats.pulled), (2, 6, 9));

        outputs.extend(finish(&mut run, &gates, [0..10, 10..20, 20..30]));
        outputs.sort_unstable();
        assert_eq!(outputs, (0..30).collect::<Vec<_>>());
        assert_eq!(gates.counts().peak_running, 2);
        run.drop_stream();
        gates.check_all_dropped_once_of(3);
    }
}

both_modes! {
    /// Point 36: with one worker and every tenant busy, the starts follow the
    /// start-time tags: weight 2 gets two starts for each one of weight 1,
    /// and every prefix is within `1/wa + 1/wb` of the weighted share.
    fn busy_tenants_share_the_starts_by_weight(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..20))
            .with('b', 2, tenant(&gates, 100..120));
        let mut run = drive!(mode, tenants.bounded(1, 2));
        assert!(run.take_ready().is_empty());
        let whose = |id: usize| if id < 100 { 'a' } else { 'b' };
        let order = start_order(&mut run, &gates, 120, 18, whose);
        // a and b both start at tag 0 (a pulled first, so a goes first);
        // then b's tag (1/2) is below a's (1), and so on, ties to the older
        // item: a b b a b b ...
        assert_eq!(order, "abbabbabbabbabbabb");
        for prefix in 1..=order.len() {
            let a = order[..prefix].matches('a').count() as f64;
            let b = order[..prefix].matches('b').count() as f64;
            assert!((a / 1.0 - b / 2.0).abs() <= 1.0 + 0.5, "prefix {prefix}: {a} a, {b} b");
        }
        finish(&mut run, &gates, [0..20, 100..120]);
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }

    /// Point 36: a tenant that had nothing to run banks no credit: after a
    /// long run of another tenant's starts, it gets its share from its
    /// return on, alternating, not a burst of what it missed.
    fn an_idle_tenant_comes_back_at_its_share_not_with_a_burst(mode) {
        let gates = Gates::new();
        let (late, feed) = support::fed_source::<Gate>();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..40))
            .with('b', 1, late.boxed());
        let mut run = drive!(mode, tenants.bounded(1, 4));
        assert!(run.take_ready().is_empty());
        let whose = |id: usize| if id < 100 { 'a' } else { 'b' };
        assert_eq!(start_order(&mut run, &gates, 200, 10, whose), "aaaaaaaaaa");
        for id in 100..110 {
            feed.push(gates.gate(id));
        }
        feed.close();
        // The running item (a's) was started already; b's items wait.
        let order = start_order(&mut run, &gates, 200, 12, whose);
        assert_eq!(&order[..1], "a", "a's item that was running when b came");
        assert_eq!(&order[1..], "bababababab");
        finish(&mut run, &gates, [0..40, 100..110]);
        run.drop_stream();
        gates.check_all_dropped_once_of(1);
    }

    /// Points 35 and 36: a cap is a cap, and the rule is work-conserving:
    /// a worker the capped tenant cannot use goes to the next tenant with
    /// an item, the moment it has one.
    fn a_capped_tenant_leaves_its_workers_to_the_others_at_once(mode) {
        let gates = Gates::new();
        let (late, feed) = support::fed_source::<Gate>();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..10))
            .with('b', 1, late.boxed())
            .cap(2);
        let mut run = drive!(mode, tenants.bounded(4, 1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 200), [0, 1], "a at its cap; b has nothing");
        assert_eq!(run.stats().active, 2);
        feed.push(gates.gate(100));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 200), [0, 1, 100], "b's item starts at once");
        feed.push(gates.gate(101));
        feed.push(gates.gate(102));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 200), [0, 1, 100, 101], "b at its cap too");
        let stats = run.stats();
        assert_eq!((stats.active, stats.waiting), (4, 2));
        feed.close();
        let mut outputs = finish(&mut run, &gates, [0..10, 100..103]);
        outputs.sort_unstable();
        assert_eq!(outputs.len(), 13);
        run.drop_stream();
        gates.check_all_dropped_once_of(1);
    }

    /// Point 35: at most `max_tenants` held; the tenants' stream is not
    /// polled at the bound, and a tenant leaves once its source ended and
    /// nothing of it waits or runs, letting the next one in.
    fn the_tenant_bound_holds_and_a_tenant_that_left_makes_room(mode) {
        let gates = Gates::new();
        let (arrivals, joins) = support::fed_source::<(u32, u32, BoxStream<'static, Gate>)>();
        joins.push((0, 1, tenant(&gates, 0..2)));
        joins.push((1, 1, tenant(&gates, 10..20)));
        joins.push((2, 1, tenant(&gates, 20..30)));
        let tenants = Tenants::joining(2, arrivals);
        let shares = tenants.shares();
        let mut run = drive!(mode, tenants.bounded(2, 1));
        assert!(run.take_ready().is_empty());
        assert_eq!(joins.unread(), 1, "tenant 2 waits: two are held");
        let held: Vec<(u32, usize, usize)> =
            shares.stats().iter().map(|tenant| (tenant.tenant, tenant.running, tenant.waiting)).collect();
        assert_eq!(held, [(0, 1, 1), (1, 1, 1)]);
        assert_eq!(pulled(&gates, 20..30), 0);
        // Tenant 0's two items run out; it leaves, and tenant 2 comes in.
        gates.open(0);
        gates.open(1);
        let mut outputs = run.take_ready();
        outputs.sort_unstable();
        assert_eq!(outputs, [0, 1]);
        assert_eq!(joins.unread(), 0, "tenant 2 taken in");
        let held: Vec<u32> = shares.stats().iter().map(|tenant| tenant.tenant).collect();
        assert_eq!(held, [1, 2], "tenant 0 left");
        assert!(pulled(&gates, 20..30) > 0);
        joins.close();
        let outputs = finish(&mut run, &gates, [10..20, 20..30]);
        assert_eq!(outputs.len(), 20);
        assert_eq!(run.stats().completed, 22);
        run.drop_stream();
        gates.check_all_dropped_once_of(3);
    }

    /// Point 35: ordered, outputs come in the order items were pulled:
    /// each tenant's in its input order, whatever order they complete in.
    fn ordered_yields_each_tenants_items_in_input_order(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..6))
            .with('b', 3, tenant(&gates, 10..16));
        let mut run = drive!(mode, tenants.bounded(3, 2).ordered(4));
        assert!(run.take_ready().is_empty());
        let mut outputs = Vec::new();
        for _ in 0..20 {
            // Complete the newest started first.
            let newest = started(&gates, 20).into_iter().filter(|&id| !gates.is_finished(id)).max();
            if let Some(id) = newest {
                gates.open(id);
            }
            outputs.extend(run.take_ready());
        }
        outputs.extend(finish(&mut run, &gates, [0..6, 10..16]));
        let a: Vec<usize> = outputs.iter().copied().filter(|&id| id < 10).collect();
        let b: Vec<usize> = outputs.iter().copied().filter(|&id| id >= 10).collect();
        assert_eq!(a, (0..6).collect::<Vec<_>>());
        assert_eq!(b, (10..16).collect::<Vec<_>>());
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}

/// A tenant's source of fallible gates: gate `id` fails (`Err(id)`) when
/// `id` is in `failing`.
fn fallible(
    gates: &Gates,
    ids: Range<usize>,
    failing: &'static [usize],
) -> BoxStream<'static, futures::future::BoxFuture<'static, Result<usize, usize>>> {
    gates
        .range_source(ids)
        .map(move |gate| {
            gate.map(move |id| {
                if failing.contains(&id) {
                    Err(id)
                } else {
                    Ok(id)
                }
            })
            .boxed()
        })
        .boxed()
}

both_modes! {
    /// Point 35 with fail fast (point 12): one tenant's failing future ends
    /// the whole run; what completed before is yielded, the error last, and
    /// every future of every tenant is dropped exactly once.
    fn a_failing_item_of_one_tenant_fails_the_run_fast(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, fallible(&gates, 0..5, &[]))
            .with('b', 1, fallible(&gates, 10..15, &[11]));
        let mut run = drive!(mode, tenants.try_bounded(2, 1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 20), [0, 10]);
        gates.open(0);
        assert_eq!(run.take_ready(), [Ok(0)]);
        gates.open(10);
        gates.open(11);
        let rest = run.take_to_end();
        assert_eq!(rest.last(), Some(&Err(11)), "the error comes last: {rest:?}");
        assert!(rest[..rest.len() - 1].iter().all(Result::is_ok));
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}

/// Point 11: bad tenants' input panics at the caller's line.
#[test]
fn bad_tenant_input_panics_at_the_callers_line() {
    use crate::api::panic_location;
    let gates = Gates::new();
    let here = |line: u32| (file!().to_owned(), line);
    let one = || Tenants::new().with('a', 1, tenant(&gates, 0..1));
    let none = || futures::stream::empty::<(char, u32, BoxStream<'static, Gate>)>();
    let line = line!() + 1;
    let at = panic_location(|| drop(one().with('b', 0, tenant(&gates, 1..2))));
    assert_eq!(at, here(line), "weight 0");
    let line = line!() + 1;
    let at = panic_location(|| drop(one().cap(0)));
    assert_eq!(at, here(line), "cap 0");
    let line = line!() + 1;
    let at = panic_location(|| drop(Tenants::joining(0, none())));
    assert_eq!(at, here(line), "max_tenants 0");
    let line = line!() + 1;
    let at = panic_location(|| drop(one().bounded(0, 1)));
    assert_eq!(at, here(line), "workers 0");
    let line = line!() + 1;
    let at = panic_location(|| drop(Tenants::joining(2, none()).bounded(1, usize::MAX)));
    assert_eq!(at, here(line), "waiting × max_tenants overflows");
    let full = || Tenants::joining(1, none()).with('a', 1, tenant(&gates, 0..1));
    let line = line!() + 1;
    let at = panic_location(|| drop(full().with('b', 1, tenant(&gates, 1..2))));
    assert_eq!(at, here(line), "more tenants than max_tenants");
}

both_modes! {
    /// Points 32 and 35: the run's deadline stops every tenant at once; each
    /// waiting item comes back late, never polled, saying whose it was; the
    /// running ones are cancelled; the tenants' sources are pulled no more.
    fn the_runs_deadline_hands_back_each_tenants_waiting_items(mode) {
        use bounded_buffered::Unfinished;
        use support::{HandTimer, advance_timers, ms, now, reset_clock, reset_timers};
        reset_clock();
        reset_timers();
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..5))
            .with('b', 1, tenant(&gates, 10..15));
        let mut run = drive!(mode, tenants.bounded(2, 1).timer(HandTimer).deadline(now() + ms(10)));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 20), [0, 10]);
        advance_timers(ms(10));
        let mut late = Vec::new();
        let mut cancelled = 0;
        let mut ended = false;
        for outcome in run.take_to_end() {
            match outcome {
                Err(Unfinished::Late(item)) => {
                    let item = item.into_inner();
                    late.push((*item.tenant(), item.into_inner().id()));
                }
                Err(Unfinished::Cancelled(_)) => cancelled += 1,
                Err(Unfinished::Deadline(_)) => ended = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        late.sort_unstable();
        assert_eq!(late, [('a', 1), ('b', 11)]);
        assert_eq!((cancelled, ended), (2, true));
        assert_eq!((gates.polls(1), gates.polls(11)), (0, 0), "never polled");
        assert_eq!(gates.pulled(), 4, "nothing pulled from the deadline on");
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }

    /// Points 28 and 35: a tenant's items keep their weights: the running
    /// weight bounds every tenant's items together.
    fn weighted_items_of_tenants_keep_the_weight_budget(mode) {
        let gates = Gates::new();
        let heavy = |ids: Range<usize>| -> BoxStream<'static, bounded_buffered::Weighted<Gate>> {
            gates.range_source(ids).map(|gate| bounded_buffered::Weighted::new(3, gate)).boxed()
        };
        let tenants = Tenants::new().with('a', 1, heavy(0..4)).with('b', 1, heavy(10..14));
        let mut run = drive!(mode, tenants.bounded(4, 1).max_running_weight(6));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 20), [0, 10], "weight 3 + 3 = 6: two run");
        assert_eq!(run.stats().running_weight, 6);
        let outputs = finish(&mut run, &gates, [0..4, 10..14]);
        assert_eq!(outputs.len(), 8);
        assert_eq!(run.stats().peak_running_weight, 6);
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}

both_modes! {
    /// Points 10, 20 and 35: one tenant's source panics; the panic reaches
    /// the consumer, the stream refuses further polls, and dropping it
    /// drops every pulled future of every tenant, and every source, once.
    fn a_panicking_tenant_source_propagates_and_drops_cleanly(mode) {
        // b's source panics instead of yielding gate 12.
        let gates = Gates::with_fault(support::Fault::SourceAt(12));
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..1))
            .with('b', 1, tenant(&gates, 10..14));
        let mut run = drive!(mode, tenants.bounded(2, 1));
        assert!(run.take_ready().is_empty());
        assert_eq!(started(&gates, 20), [0, 10]);
        // b10 completes: b11 starts (a has nothing more), b's place frees,
        // and b's source is pulled: it panics.
        gates.open(10);
        let message = support::caught(|| {
            while let std::task::Poll::Ready(Some(_)) = run.poll() {}
        })
        .expect_err("the source's panic");
        assert_eq!(message, format!("{} in the source at item 12", support::INJECTED));
        run.check_refuses_polls();
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}

/// A tenants stream is `Send` (and so can be spawned) when its keys and
/// sources are, and `Unpin` whatever they are: it boxes what it pins.
#[test]
fn a_tenants_stream_is_send_and_unpin() {
    fn send_and_unpin<T: Send + Unpin>(_: &T) {}
    let gates = Gates::new();
    let tenants = Tenants::new().with('a', 1, tenant(&gates, 0..1));
    send_and_unpin(&tenants);
    send_and_unpin(&tenants.bounded(1, 1));
}

both_modes! {
    /// Points 25, 21 and 35: a tenants stream's limits move like any
    /// stream's (a lowered `workers` holds for every tenant together), and
    /// `close` pulls from no tenant again while what was pulled finishes.
    fn limits_and_close_apply_to_every_tenant_together(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..6))
            .with('b', 1, tenant(&gates, 10..16));
        let mut run = drive!(mode, tenants.bounded(3, 1));
        assert!(run.take_ready().is_empty());
        assert_eq!(run.stats().active, 3);
        run.limits().set_workers(1);
        // The three running finish; then one at a time, whichever tenant.
        let mut outputs = Vec::new();
        for id in started(&gates, 20) {
            gates.open(id);
        }
        outputs.extend(run.take_ready());
        assert_eq!(outputs.len(), 3);
        assert_eq!(run.stats().active, 1);
        let pulled = gates.pulled();
        run.close();
        let running: Vec<usize> =
            started(&gates, 20).into_iter().filter(|&id| !gates.is_finished(id)).collect();
        assert_eq!(running.len(), 1);
        for id in (0..6).chain(10..16) {
            gates.open(id);
        }
        outputs.extend(run.take_to_end());
        assert_eq!(gates.pulled(), pulled, "nothing pulled after close");
        assert_eq!(outputs.len(), pulled, "what was pulled finished");
        assert_eq!(gates.counts().peak_running, 3);
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}

both_modes! {
    /// Points 26 and 35: an adaptive controller sets the shared `workers`
    /// of a tenants stream as of any stream: it starts where the controller
    /// starts, below the stream's own 4.
    fn an_adaptive_limit_governs_every_tenant_together(mode) {
        let gates = Gates::new();
        let tenants = Tenants::new()
            .with('a', 1, tenant(&gates, 0..4))
            .with('b', 1, tenant(&gates, 10..14));
        let aimd = bounded_buffered::Aimd::new(1, 4).starting_at(2);
        let mut run = drive!(mode, tenants.bounded(4, 1).adaptive(aimd, |_: &usize| false));
        assert!(run.take_ready().is_empty());
        assert_eq!(run.stats().workers_limit, 2, "the controller's start");
        assert_eq!(run.stats().active, 2);
        let outputs = finish(&mut run, &gates, [0..4, 10..14]);
        assert_eq!(outputs.len(), 8);
        run.drop_stream();
        gates.check_all_dropped_once_of(2);
    }
}
