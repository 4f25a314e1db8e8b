//! Contract points 35 and 36 (with 1 and 2) under random tenants, weights,
//! caps, budgets, windows and completion orders, in both modes:
//! - every item is yielded once (ordered: each tenant's in its input
//!   order), and every future and source is dropped once;
//! - after every poll, at most `workers` run, each tenant has at most
//!   `max(waiting, 1)` items waiting and at most `cap` running;
//! - the stream is at rest with every tenant's places full: a tenant has
//!   fewer than `max(waiting, 1)` waiting only once its source is empty;
//! - work-conserving: unordered, fewer than `workers` run only while every
//!   tenant is at its cap or has nothing waiting and nothing left.
//!
//! 128 cases per mode by default (a quarter in a debug build).

use bounded_buffered::{TenantShares, Tenants};
use futures::StreamExt;
use futures::stream::BoxStream;
use proptest::prelude::*;
use support::{Gate, Gates, Mode, drive, prop_both_modes};

#[derive(Clone, Debug)]
struct Case {
    /// Per tenant: its weight and how many items it has.
    tenants: Vec<(u32, usize)>,
    workers: usize,
    waiting: usize,
    cap: Option<usize>,
    window: Option<usize>,
    /// Which running item completes next, as an index into those running.
    completions: Vec<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec((1..=4u32, 0..=10usize), 1..=4),
        1..=4usize,
        0..=3usize,
        prop::option::of(1..=3usize),
        prop::option::of(1..=6usize),
        prop::collection::vec(0..8usize, 64),
    )
        .prop_map(
            |(tenants, workers, waiting, cap, window, completions)| Case {
                tenants,
                workers,
                waiting,
                cap,
                window,
                completions,
            },
        )
}

/// Item `i` of tenant `t` is gate `t * 100 + i`.
fn id(tenant: usize, item: usize) -> usize {
    tenant * 100 + item
}

fn check_at_rest(case: &Case, gates: &Gates, shares: &TenantShares<usize>, active: usize) {
    let room = case.waiting.max(1);
    let cap = case.cap.unwrap_or(usize::MAX);
    assert!(
        active <= case.workers,
        "{active} running, {} workers",
        case.workers
    );
    let mut conserving = true;
    for stats in shares.stats() {
        let t = stats.tenant;
        let items = case.tenants[t].1;
        let pulled = (0..items).filter(|&i| gates.was_pulled(id(t, i))).count();
        assert!(
            stats.waiting <= room,
            "tenant {t}: {} waiting > {room}",
            stats.waiting
        );
        assert!(
            stats.running <= cap,
            "tenant {t}: {} running > cap {cap}",
            stats.running
        );
        assert!(
            stats.waiting == room || pulled == items,
            "tenant {t}: {} of {room} places filled with {} of {items} items left",
            stats.waiting,
            items - pulled
        );
        conserving &= stats.running >= cap || (stats.waiting == 0 && pulled == items);
    }
    if case.window.is_none() && active < case.workers {
        assert!(
            conserving,
            "{active} of {} workers busy while a tenant could start",
            case.workers
        );
    }
}

fn run(mode: Mode, case: Case) {
    let gates = Gates::new();
    let mut tenants = Tenants::new();
    for (t, &(weight, items)) in case.tenants.iter().enumerate() {
        let source: BoxStream<'static, Gate> = gates.range_source(id(t, 0)..id(t, items)).boxed();
        tenants = tenants.with(t, weight, source);
    }
    if let Some(cap) = case.cap {
        tenants = tenants.cap(cap);
    }
    let shares = tenants.shares();
    let total: usize = case.tenants.iter().map(|&(_, items)| items).sum();
    let stream = tenants.bounded(case.workers, case.waiting);
    let mut run = match case.window {
        Some(window) => drive!(mode, stream.ordered(window)),
        None => drive!(mode, stream),
    };
    let mut outputs = run.take_ready();
    let mut next = case.completions.iter().cycle();
    while outputs.len() < total {
        check_at_rest(&case, &gates, &shares, run.stats().active);
        let running: Vec<usize> = (0..case.tenants.len())
            .flat_map(|t| (0..case.tenants[t].1).map(move |i| id(t, i)))
            .filter(|&gate| gates.is_started(gate) && !gates.is_finished(gate))
            .collect();
        assert!(
            !running.is_empty(),
            "nothing runs and {} of {total} are out",
            outputs.len()
        );
        let pick = next.next().expect("cycled");
        gates.open(running[pick % running.len()]);
        outputs.extend(run.take_ready());
    }
    outputs.extend(run.take_to_end());
    let mut sorted = outputs.clone();
    sorted.sort_unstable();
    let expected: Vec<usize> = (0..case.tenants.len())
        .flat_map(|t| (0..case.tenants[t].1).map(move |i| id(t, i)))
        .collect();
    assert_eq!(sorted, expected, "every item once");
    if case.window.is_some() {
        for t in 0..case.tenants.len() {
            let own: Vec<usize> = outputs.iter().copied().filter(|&o| o / 100 == t).collect();
            assert!(own.is_sorted(), "tenant {t} out of input order: {own:?}");
        }
    }
    run.drop_stream();
    gates.check_all_dropped_once_of(case.tenants.len());
}

prop_both_modes! {
    fn tenants_keep_their_budgets_conserve_work_and_lose_nothing(mode, case in case())
        cases(128, 128)
    {
        run(mode, case);
    }
}
