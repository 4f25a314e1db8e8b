//! `Aimd` on scripted samples, one test per branch of its rule (see the type's
//! documentation), by concern: growth (slow start, growth when reached, the
//! ceiling and its probes), rises and queues, back-pressure, and the unloaded
//! run time with the clamps, the history and the panics. Here: the feed of
//! samples they share.

mod back_pressure;
mod gradient;
mod growth;
mod queues;
mod throughput;
mod unloaded;

use std::time::Duration;

use crate::adaptive::{Controller, Sample};
use crate::aimd::{Aimd, Decision, History};

/// Feeds an `Aimd` sample by sample, keeping a clock in microseconds.
struct Feed {
    aimd: Aimd,
    history: History,
    /// When the last sample completed.
    now: u64,
}

/// One sample: when it started and how long it ran, in microseconds.
fn sample(started: u64, run: u64, saturated: bool, overload: bool, in_flight: usize) -> Sample {
    Sample {
        started: Duration::from_micros(started),
        run: Duration::from_micros(run),
        overload,
        saturated,
        // Higher than any in flight: whether the limit was reached is what
        // `saturated` says.
        limit: usize::MAX,
        in_flight,
    }
}

const MS: u64 = 1_000;

impl Feed {
    fn new(aimd: Aimd) -> Self {
        let aimd = aimd.with_history(100_000);
        let history = aimd.history().expect("recorded");
        Self {
            aimd,
            history,
            now: 1_000 * MS,
        }
    }

    fn limit(&self) -> usize {
        self.aimd.initial()
    }

    fn decisions(&self) -> usize {
        self.history.rounds().len()
    }

    fn last(&self) -> Decision {
        *self.history.rounds().last().expect("a decision")
    }

    /// Feeds the sample `make(i)` for i = 0, 1, ... until the controller
    /// decides (a round, or a warm-up and then a round), at most 10,000.
    fn until_decision(&mut self, mut make: impl FnMut(&mut Self, usize) -> Sample) -> Decision {
        let before = self.decisions();
        for i in 0..10_000 {
            let sample = make(self, i);
            self.now = self
                .now
                .max((sample.started + sample.run).as_micros() as u64);
            self.aimd.sample(&sample);
            if self.decisions() > before {
                return self.last();
            }
        }
        panic!("no decision in 10,000 samples");
    }

    /// Samples of `run` microseconds (the odd ones `odd` instead), that all
    /// (or none) reached the limit, with as many in flight as the limit: the
    /// limit's worth of them complete, evenly spread, within one run time.
    fn round_of(&mut self, run: u64, odd: u64, saturated: bool) -> Decision {
        self.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let run = if i % 2 == 1 { odd } else { run };
            let done = feed.now + run.max(odd) / limit;
            sample(done - run, run, saturated, false, limit as usize)
        })
    }

    /// Samples of `run` microseconds with `in_flight` in flight, that all
    /// (or none) reached the limit, completing evenly over `span`, until a
    /// decision.
    fn over(&mut self, span: u64, run: u64, saturated: bool, in_flight: usize) -> Decision {
        self.until_decision(|feed, _| {
            let done = feed.now + span / in_flight as u64;
            sample(done - run, run, saturated, false, in_flight)
        })
    }

    /// A round of slow start right after a doubling: half of its first
    /// completions are of items started before it, which ran 10 ms under the
    /// old limit; the round's own, started after it, run `ms` each.
    fn doubled_round(&mut self, ms: u64) -> Decision {
        self.doubled_round_of(ms * MS)
    }

    /// The same, the round's own samples `run` microseconds each.
    fn doubled_round_of(&mut self, run: u64) -> Decision {
        let doubled = self.now;
        let limit = self.limit();
        for i in 0..limit as u64 / 2 {
            self.aimd
                .sample(&sample(doubled - 5 * MS + i, 10 * MS, true, false, limit));
        }
        self.until_decision(|_, i| sample(doubled + i as u64, run, true, false, limit))
    }

    /// A round of 10 ms samples, one in `every` of which reached the limit.
    fn reached_one_in(&mut self, every: usize) -> Decision {
        self.until_decision(|feed, i| {
            let limit = feed.limit() as u64;
            let done = feed.now + 10 * MS / limit;
            sample(
                done - 10 * MS,
                10 * MS,
                i % every == 0,
                false,
                limit as usize,
            )
        })
    }

    /// From a start at 4, slow start to 16: a round of 10 ms at 4, then one of
    /// 13 ms right after the doubling to 8.
    fn slow_start_to_16() -> Self {
        let mut feed = Feed::new(Aimd::new(1, 256).starting_at(4));
        assert_eq!(feed.round(10).limit, 8);
        assert_eq!(feed.doubled_round(13).limit, 16);
        feed
    }

    /// A service of 24 at 20 ms, its unloaded run time measured at 8, grown
    /// to 25 (a queue of one).
    fn grown_past_24() -> Self {
        let mut feed = Feed::new(Aimd::new(1, 256).starting_at(4));
        feed.settle_at(8, 20, 20);
        for _ in 0..12 {
            feed.serving(24, 20);
        }
        assert_eq!(feed.limit(), 25);
        feed
    }

    /// From 1, slow start to 64 on rounds of `start` ms, then a round of
    /// `rise` ms there, and its decision.
    fn rise_at_64(start: u64, rise: u64) -> (Self, Decision) {
        let mut feed = Feed::new(Aimd::new(1, 256).starting_at(1));
        feed.slow_start_to(64, start);
        let decision = feed.round(rise);
        (feed, decision)
    }

    /// Slow start from where it is to `limit`, rounds of `ms` each.
    fn slow_start_to(&mut self, limit: usize, ms: u64) {
        while self.limit() < limit {
            self.round(ms);
        }
        assert_eq!(self.limit(), limit);
    }

    /// A round of a service that takes `capacity` at a time, `ms` each, and
    /// queues the rest: at a limit `L` above the capacity, every item waits,
    /// and runs `ms × L / capacity`.
    fn serving(&mut self, capacity: usize, ms: u64) -> Decision {
        let run = ms * MS * self.limit().max(capacity) as u64 / capacity as u64;
        self.round_of(run, run, true)
    }

    /// A round of `ms` milliseconds each, the limit reached.
    fn round(&mut self, ms: u64) -> Decision {
        self.round_of(ms * MS, ms * MS, true)
    }

    /// Slow start to `limit` on samples of `even` and `odd` ms in turn, then
    /// rounds that do not bind: the first ends slow start, and the settled
    /// ones after it replace slow start's unloaded run time (32 samples) and
    /// add to it.
    fn settle_at(&mut self, limit: usize, even: u64, odd: u64) {
        while self.limit() < limit {
            self.round_of(even * MS, odd * MS, true);
        }
        assert_eq!(self.limit(), limit);
        for _ in 0..6 {
            assert_eq!(self.round_of(even * MS, odd * MS, false).limit, limit);
        }
        let base = Duration::from_micros((even + odd) * MS / 2);
        assert_eq!(self.last().base, Some(base));
    }
}
