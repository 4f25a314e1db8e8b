//! The ordered ring of held outputs (`Held::ordered`) wrapping around at every
//! size up to 2^12, checked against a plain model of the reorder window.
//!
//! The ring doubles when the span of started, unyielded items reaches its
//! length; the case that matters is a doubling while that span wraps around
//! the ring's end. So each run first moves the front to a random offset with a
//! span of one, then lets the span grow slowly up to the window, completing
//! items in a random order, and runs several laps of the full ring after that.

use std::collections::VecDeque;

use super::Rng;
use crate::held::Held;

/// Every power of two up to 2^12 and its neighbours, and every size up to 64.
fn windows() -> Vec<usize> {
    let mut windows: Vec<usize> = (1..=64).collect();
    for power in 6..=12 {
        windows.extend([(1 << power) - 1, 1 << power, (1 << power) + 1]);
    }
    windows.sort_unstable();
    windows.dedup();
    windows
}

/// Drives one ordered store with a span capped at `window`. The model holds,
/// per started and unyielded position in input order, its output once complete.
fn wrap_around(window: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut held = Held::ordered();
    let mut model: VecDeque<(u64, Option<u64>)> = VecDeque::new();
    let mut running: Vec<u64> = Vec::new();
    let offset = rng.below(9) as u64;
    let ring = window.next_power_of_two().max(4) as u64;
    let total = offset + 3 * window as u64 + 4 * ring;
    let (mut started, mut yielded, mut complete) = (0u64, 0u64, 0usize);
    while yielded < total {
        // A span of one until the front is at `offset`, then one more for every
        // three items started, up to the window.
        let limit = if started < offset {
            1
        } else {
            (1 + (started - offset) / 3).min(window as u64)
        };
        let span = model.len() as u64;
        let action = rng.below(10);
        if action < 4 && span < limit && started < total {
            let position = held.begin();
            assert_eq!(
                position, started,
                "window {window}: positions follow input order"
            );
            model.push_back((position, None));
            running.push(position);
            started += 1;
        } else if action < 7 && !running.is_empty() {
            let position = running.swap_remove(rng.below(running.len()));
            // The output is the position, so a misplaced entry shows.
            held.complete(position, position);
            let entry = (position - model[0].0) as usize;
            model[entry].1 = Some(position);
            complete += 1;
        } else {
            let expected = match model.front() {
                Some(&(_, Some(output))) => Some(output),
                _ => None,
            };
            assert_eq!(
                held.pop(),
                expected,
                "window {window}, seed {seed}: {yielded} yielded"
            );
            if expected.is_some() {
                model.pop_front();
                yielded += 1;
                complete -= 1;
            }
        }
        assert_eq!(held.len(), complete, "window {window}: held outputs");
    }
    assert_eq!(held.pop(), None);
    assert_eq!(started, total);
}

#[test]
fn the_ordered_ring_wraps_around_at_every_size_up_to_4096() {
    for window in windows() {
        for seed in 0..2 {
            wrap_around(window, seed * 1_000 + window as u64);
        }
    }
}

#[test]
fn unordered_outputs_leave_in_completion_order() {
    let mut held = Held::unordered();
    let mut started = 0;
    for round in 0..3 {
        for output in [5, 1, 4] {
            let position = held.begin();
            assert_eq!(position, started, "unordered positions count starts");
            started += 1;
            held.complete(position, output + round);
        }
        assert_eq!(held.len(), 3);
        let outputs: Vec<_> = std::iter::from_fn(|| held.pop()).collect();
        assert_eq!(outputs, [5 + round, 1 + round, 4 + round]);
        assert_eq!(held.len(), 0);
    }
}
