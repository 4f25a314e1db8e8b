//! For the budget and delivery tests of both modes: gates opened in a random
//! order with every budget checked after each poll ([`random_completions`]).

use std::task::Poll;

use bounded_buffered::{BoundedStreamExt, Stats};

use super::gate::{Counts, Gates};
use super::mode::Mode;
use super::rng::Rng;
use super::schedule::OrderedIf;
use super::stats::assert_all_done;

/// Runs gates `0..count` through `bounded(workers, waiting)`, ordered when
/// `window` is `Some`, in `mode`. Whenever the stream is pending one running
/// gate opens, picked by `seed`; with `batches`, a random part of the running
/// gates also opens between outputs, so several complete between two polls and
/// outputs are held. After every poll it checks the budgets (points 2 to 5 and
/// 16): `active <= min(workers, window)`, `active + held` and the futures
/// started but not handed out within the window (unordered: the workers),
/// `waiting` within its budget; at the end, every output exactly once, in
/// input order when ordered (point 1). Returns the final stats and counts.
pub fn random_completions(
    mode: Mode,
    seed: u64,
    (workers, window, waiting): (usize, Option<usize>, usize),
    count: usize,
    batches: bool,
) -> (Stats, Counts) {
    let case = format!("{mode:?} seed {seed} W={workers} window={window:?} Q={waiting}");
    let span = window.unwrap_or(workers);
    let running_limit = workers.min(span);
    let gates = Gates::new();
    let mut run = crate::drive!(
        mode,
        gates
            .source(count)
            .bounded(workers, waiting)
            .ordered_if(window)
    );
    let mut rng = Rng::new(seed);
    let mut outputs = Vec::new();
    loop {
        let poll = run.poll();
        let stats = run.stats();
        assert!(stats.active <= running_limit, "{case}: {stats:?}");
        assert!(stats.active + stats.held <= span, "{case}: {stats:?}");
        assert!(stats.waiting <= waiting, "{case}: {stats:?}");
        assert!(gates.running() <= running_limit, "{case}");
        // Started but not yet handed out (counting the output this poll
        // returned): never more than the span.
        let handed_out = outputs.len() + usize::from(matches!(poll, Poll::Ready(Some(_))));
        assert!(gates.started() - handed_out <= span, "{case}");
        match poll {
            Poll::Ready(Some(id)) => outputs.push(id),
            Poll::Ready(None) => break,
            Poll::Pending => {}
        }
        // A pending gate that was not opened yet still has its waker.
        let running: Vec<usize> = (0..count).filter(|&id| gates.waker(id).is_some()).collect();
        let pending = poll.is_pending();
        assert!(!pending || !running.is_empty(), "{case}: stalled");
        if batches && (pending || rng.below(2) == 0) {
            for &id in &running {
                if rng.below(2) == 0 {
                    gates.open(id);
                }
            }
        }
        if pending {
            gates.open(running[rng.below(running.len())]);
        }
    }
    if window.is_none() {
        outputs.sort_unstable();
    }
    assert_eq!(outputs, (0..count).collect::<Vec<_>>(), "{case}");
    assert_eq!(gates.pulled(), count, "{case}");
    let stats = run.stats();
    assert_all_done(&stats, count);
    assert!(stats.peak_held <= span, "{case}: {stats:?}");
    (stats, gates.counts())
}
