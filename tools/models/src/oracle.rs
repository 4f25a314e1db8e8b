//! The oracle: a reference for the rule, a controller told what none that
//! learns from completions can know (the capacity, and the moment of a
//! change) and that learns nothing else. A target it misses is out of reach
//! of any controller that starts where it does, grows no faster and hears
//! of a change no sooner; one it meets is the rule's to meet.
//!
//! It starts where `Aimd` does (4, or the capacity if lower) and grows by
//! one with each success, as TCP's slow start does: twice as many each run
//! time where run times are fixed, a little faster where they vary (the
//! short items come back first). It stops at the capacity exactly (with a
//! slow source, at the targets' bound: 2 × what the source needs, by the
//! service time before any change; no slow-source model has one). It hears
//! of a change when the first item started at or after it completes (a
//! round trip; 1 ms where the service refuses that item at the door): then
//! it cuts to a lower capacity at once, or grows to a higher one as from
//! the start. It never probes, never exceeds the capacity it knows and
//! never takes noise for a queue; until it hears of a drop, it holds the
//! capacity before it.
//!
//! Its times are the stream's, from its first clock reading, when the
//! first item starts: the job's start with an endless source, a gap later
//! with a slow one (whose models have no change to hear of).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bounded_buffered::{Controller, Sample};

use crate::models::Model;
use crate::score::SLOW_SOURCE_FACTOR;

/// `Aimd`'s default start.
const START: usize = 4;

/// What the oracle and the job share: the moment of the change, which the
/// job writes and the oracle hears of a round trip later; the limit over
/// time, which the oracle writes for the score.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Told>>);

#[derive(Default)]
struct Told {
    changed: Option<Duration>,
    limits: Vec<(Duration, usize)>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Told> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The change happened at `at`, from the job's start.
    pub fn changed(&self, at: Duration) {
        self.lock().changed = Some(at);
    }

    /// The oracle's limit over time: (when, limit), the first at zero.
    pub fn limits(&self) -> Vec<(Duration, usize)> {
        self.lock().limits.clone()
    }
}

pub struct Oracle {
    limit: usize,
    /// Where it grows to: the capacity as it knows it.
    most: usize,
    /// The capacity after the change, until it hears of it.
    after: Option<usize>,
    shared: Shared,
}

impl Oracle {
    pub fn new(model: &Model, shared: Shared) -> Self {
        let most = bounded(model, model.capacity);
        let limit = START.min(most);
        shared.lock().limits.push((Duration::ZERO, limit));
        Self {
            limit,
            most,
            after: Some(bounded(model, model.capacity_after())),
            shared,
        }
    }

    fn set(&mut self, at: Duration, limit: usize) {
        self.limit = limit;
        self.shared.lock().limits.push((at, limit));
    }
}

/// `capacity`, and with a slow source no more than the targets' bound.
fn bounded(model: &Model, capacity: usize) -> usize {
    // A bound is a few dozen at most: the float is exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let bound = |needs: f64| (SLOW_SOURCE_FACTOR * needs).floor() as usize;
    model
        .source_needs()
        .map_or(capacity, |needs| capacity.min(bound(needs)))
        .max(1)
}

impl Controller for Oracle {
    fn initial(&self) -> usize {
        self.limit
    }

    fn sample(&mut self, sample: &Sample) -> usize {
        let at = sample.started + sample.run;
        let changed = self.shared.lock().changed;
        let heard = changed.is_some_and(|changed| sample.started >= changed);
        if let Some(after) = self.after.take_if(|_| heard) {
            self.most = after;
            if self.limit > self.most {
                self.set(at, self.most);
            }
        }
        if !sample.overload && self.limit < self.most {
            self.set(at, self.limit + 1);
        }
        self.limit
    }
}

#[cfg(test)]
mod tests {
    //! The oracle's rule, checked end to end on the family's models: the
    //! deterministic ones (10 ms, no noise: every moment is exact), a slow
    //! source and the smallest capacity of `unseen`.

    use std::time::Duration;

    use crate::job::{Limiter, Mode, Run, run};
    use crate::models::{Discipline, Model};

    fn oracle_run(name: &str, mode: Mode) -> (Model, Run) {
        let model = Model::all()
            .into_iter()
            .chain(crate::unseen::models())
            .find(|model| model.name == name)
            .expect("a model of the family or of `unseen`");
        let run = run(&model, Discipline::Fifo, 601, mode, Limiter::Oracle);
        (model, run)
    }

    /// The limits the oracle set after the change.
    fn after_the_change(run: &Run) -> Vec<(Duration, usize)> {
        let after = run.limits.iter().filter(|&&(at, _)| at > run.changed_at);
        after.copied().collect()
    }

    const MS: Duration = Duration::from_millis(1);

    /// From 4, one more with each success: 8 at 10 ms, 16 at 20 ms, the
    /// capacity of 32 at 30 ms, and never more.
    #[test]
    fn the_oracle_doubles_once_per_run_time_and_stops_at_the_capacity() {
        for mode in [Mode::InPlace, Mode::Spawned] {
            let (_, run) = oracle_run("deterministic 10 ms", mode);
            assert_eq!(run.limits.first(), Some(&(Duration::ZERO, 4)));
            let reached = |limit| {
                run.limits
                    .iter()
                    .find(|&&(_, l)| l == limit)
                    .map(|&(at, _)| at)
            };
            assert_eq!(reached(8), Some(10 * MS), "{mode:?}");
            assert_eq!(reached(16), Some(20 * MS), "{mode:?}");
            assert_eq!(reached(32), Some(30 * MS), "{mode:?}");
            assert_eq!(
                run.limits.iter().map(|&(_, l)| l).max(),
                Some(32),
                "{mode:?}"
            );
            assert_eq!(run.overloaded, 0, "{mode:?}");
        }
    }

    /// A drop is heard of when the first item started after it completes,
    /// one run time later, and cut to at once.
    #[test]
    fn the_oracle_hears_of_a_drop_one_round_trip_after_it() {
        for mode in [Mode::InPlace, Mode::Spawned] {
            let (_, run) = oracle_run("capacity drop 32 → 16", mode);
            let after = after_the_change(&run);
            assert_eq!(after, [(run.changed_at + 10 * MS, 16)], "{mode:?}");
        }
    }

    /// A rise is heard of as late, and grown to as from the start: twice as
    /// many each run time, up to the new capacity.
    #[test]
    fn the_oracle_grows_to_a_rise_once_it_hears_of_it() {
        for mode in [Mode::InPlace, Mode::Spawned] {
            let (_, run) = oracle_run("capacity rise 16 → 64", mode);
            let after = after_the_change(&run);
            let first = after.first().expect("grown");
            assert_eq!(*first, (run.changed_at + 10 * MS, 17), "{mode:?}");
            let last = after.last().expect("grown");
            assert_eq!(last.1, 64, "{mode:?}");
            assert!(last.0 <= run.changed_at + 30 * MS, "{mode:?}: {last:?}");
        }
    }

    /// With a slow source, no more than the targets' bound: 800 items a
    /// second of 10 ms need 8 workers, and the bound is 16 (the capacity 32).
    #[test]
    fn the_oracle_stops_at_a_slow_sources_bound() {
        let (model, run) = oracle_run("slow source (800/s)", Mode::InPlace);
        assert_eq!(model.capacity, 32);
        assert_eq!(run.limits.iter().map(|&(_, l)| l).max(), Some(16));
    }

    /// Below 4, the capacity from the start: the legacy backend's 2.
    #[test]
    fn the_oracle_starts_at_a_capacity_below_4() {
        for mode in [Mode::InPlace, Mode::Spawned] {
            let (model, run) = oracle_run("legacy normal 15 ms, 2, queue", mode);
            assert_eq!(model.capacity, 2);
            assert_eq!(run.limits, [(Duration::ZERO, 2)], "{mode:?}");
        }
    }
}
