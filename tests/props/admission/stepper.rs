//! The admission properties' random stepper (contract points 27 to 29, with
//! 1 to 5 and 25): builds the stream a `Config` asks for, opens gates, polls
//! and changes limits at random with the rules checked after every step,
//! then opens everything and checks that the stream finishes.

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Rejected};
use support::{Driven, Gates, Mode, Rng, drive};

use super::model::Model;
use super::{Change, Config, Item, rejected_id, source};

/// The stream `config` asks for, in `mode`, handed to [`check`]: each mix of
/// policies is a type of its own.
macro_rules! with_policies {
    ($mode:expr, $config:expr, $gates:expr) => {{
        let (mode, config, gates) = ($mode, $config, $gates);
        let stream = source(gates, config).bounded(config.workers, config.waiting);
        let stream = match config.window {
            Some(window) => stream.ordered(window),
            None => stream,
        };
        match config.per_key {
            Some(limit) => with_policies!(@weights mode, config, gates, stream.per_key(limit)),
            None => with_policies!(@weights mode, config, gates, stream),
        }
    }};
    (@weights $mode:expr, $config:expr, $gates:expr, $stream:expr) => {{
        let stream = $stream;
        match ($config.running_weight, $config.waiting_weight) {
            (None, None) => with_policies!(@shed $mode, $config, $gates, stream),
            (Some(running), None) => {
                with_policies!(@shed $mode, $config, $gates, stream.max_running_weight(running))
            }
            (None, Some(waiting)) => {
                with_policies!(@shed $mode, $config, $gates, stream.max_waiting_weight(waiting))
            }
            (Some(running), Some(waiting)) => with_policies!(
                @shed $mode, $config, $gates,
                stream.max_running_weight(running).max_waiting_weight(waiting)
            ),
        }
    }};
    (@shed $mode:expr, $config:expr, $gates:expr, $stream:expr) => {{
        let stream = $stream;
        match $config.shed {
            Some(shed) => check(
                drive!($mode, stream.shed(shed)),
                $config,
                $gates,
                |outcome: Result<usize, Rejected<Item>>| outcome.map_err(rejected_id),
            ),
            None => check(drive!($mode, stream), $config, $gates, Ok),
        }
    }};
}

/// Steps the stream at random, then opens everything and drains it.
fn check<T>(
    mut run: Driven<'_, T>,
    config: &Config,
    gates: &Gates,
    read: impl Fn(T) -> Result<usize, usize>,
) {
    let mut rng = Rng::new(config.seed);
    let mut model = Model::new(config, gates);
    let limits = run.limits();
    let mut changes = config.changes.clone().into_iter();
    let steps = 3 * config.items.len() + 10;
    let poll = |run: &mut Driven<'_, T>, model: &mut Model<'_>| {
        let wakes = run.wakes();
        let poll = run.poll();
        let at_rest = poll.is_pending() && run.wakes() == wakes;
        let poll = poll.map(|next| next.map(|outcome| model.record(read(outcome))));
        model.check(&run.stats(), poll.is_ready(), at_rest);
        poll
    };
    for _ in 0..steps {
        match rng.below(10) {
            0..=4 => {
                let closed = gates.closed_started();
                if !closed.is_empty() {
                    gates.open(closed[rng.below(closed.len())]);
                }
                run.settle();
                model.check(&run.stats(), false, false);
            }
            5..=8 => {
                if let Poll::Ready(None) = poll(&mut run, &mut model) {
                    break;
                }
            }
            _ => {
                if let Some(change) = changes.next() {
                    match change {
                        Change::Workers(workers) => limits.set_workers(workers),
                        Change::Waiting(waiting) => limits.set_waiting(waiting),
                    }
                    model.change(change);
                    run.settle();
                    model.check(&run.stats(), false, false);
                }
            }
        }
    }
    // Progress: with a worker and every gate open, the stream finishes.
    if model.workers == 0 {
        limits.set_workers(1);
        model.change(Change::Workers(1));
    }
    let mut stuck = 0;
    loop {
        for id in gates.closed_started() {
            gates.open(id);
        }
        run.settle();
        match poll(&mut run, &mut model) {
            Poll::Ready(None) => break,
            Poll::Ready(Some(())) => stuck = 0,
            Poll::Pending if gates.closed_started().is_empty() => {
                stuck += 1;
                assert!(
                    stuck < 3,
                    "deadlock: every gate open, the stream pending: {config:?}\n{:?}\nyielded {:?}",
                    run.stats(),
                    model.yielded
                );
            }
            Poll::Pending => stuck = 0,
        }
    }
    model.check_end(&run.stats());
    run.drop_stream();
    gates.check_all_dropped_once();
}

/// Runs `config` in `mode`.
pub(super) fn run(mode: Mode, config: &Config) {
    let gates = Gates::new();
    with_policies!(mode, config, &gates);
}
