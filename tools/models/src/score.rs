//! What a run scores against the targets, and the worst over runs.

use std::time::Duration;

use crate::job::Run;
use crate::models::{CHANGE_AT, Change, Model, RAMP};

/// The targets (issues 20 and 34).
pub const GOODPUT: f64 = 0.9;
/// Of all calls, refused by the load: refusals whatever the load (the
/// model's [`Refused`](crate::models::Refused)) are on top.
pub const WASTED: f64 = 0.01;
pub const P95: f64 = 1.5;
/// Settled within this, or within this many round trips (the mean service
/// time after the change), whichever is longer: a controller that learns
/// only from completions hears of a change a round trip after it at the
/// earliest, and each step it takes shows a round trip later.
pub const SETTLE: Duration = Duration::from_millis(300);
pub const SETTLE_ROUND_TRIPS: f64 = 5.0;
pub const BAND: (f64, f64) = (0.8, 1.25);
pub const SLOW_SOURCE_FACTOR: f64 = 2.0;

/// The limit over an interval: lowest, highest, time-weighted mean.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub low: usize,
    pub high: usize,
    pub mean: f64,
}

impl Span {
    fn merge(self, other: Span) -> Span {
        Span {
            low: self.low.min(other.low),
            high: self.high.max(other.high),
            mean: self.mean.min(other.mean),
        }
    }
}

/// One run's figures.
#[derive(Clone, Debug)]
pub struct Score {
    /// Goodput against the model's ideal (the capacity bound, or the source's
    /// rate when the source is slower).
    pub goodput: f64,
    /// Calls refused by the load, and whatever the load.
    pub wasted: usize,
    pub base: usize,
    pub calls: usize,
    /// p50, p95, p99 of successes after the first 200 ms against the same
    /// quantiles of their own service times (the unloaded distribution),
    /// the worse of the two phases (before and after the change).
    pub quantiles: [f64; 3],
    /// The limit from the end of the ramp to the change.
    pub before: Span,
    /// After the change: how long until the limit stayed within
    /// [0.8, 1.25] x the capacity for good (`None`: it never did), and the
    /// limit from then on (from the change if it never settled).
    pub settle: Option<Option<Duration>>,
    pub after: Span,
    /// The highest limit of the whole run.
    pub highest: usize,
    /// The slow source's bound (2 x what it needs), if the model has one.
    pub bound: Option<f64>,
    /// Targets missed.
    pub misses: Vec<&'static str>,
}

impl Score {
    pub fn of(model: &Model, run: &Run) -> Score {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        // The capacity bound of this run's own draws: its successes' service
        // times over the servers, phase by phase. The model's mean would
        // count draws that ran long against the controller, which no
        // controller can help: the heavy tail's 50 slow items in 5,000 vary
        // by about 7, each 6 ms of the capacity's time, 2 % of the job.
        let (first, rest) = run.successes.split_at(CHANGE_AT.min(run.successes.len()));
        let work = |part: &[(Duration, Duration, Duration)]| {
            part.iter().map(|&(.., service)| ms(service)).sum::<f64>()
        };
        // Refusals after a full service time held a server as long: no
        // controller can spare the service that work.
        let refused_work = |before: bool| {
            run.base_refused
                .iter()
                .filter(|&&(started, _)| (started < run.changed_at) == before)
                .map(|&(_, service)| ms(service))
                .sum::<f64>()
        };
        // Where requests slow each other down, the capacity full runs each
        // that much longer: no limit does better than the capacity there
        // (the shared models' contention is small enough that the
        // throughput still rises up to it).
        let full = |capacity: usize| capacity as f64 / model.stretch(capacity);
        let capacity_time = (work(first) + refused_work(true)) / full(model.capacity)
            + (work(rest) + refused_work(false)) / full(model.capacity_after());
        let ideal = run
            .last_arrival
            .map_or(capacity_time, |last| capacity_time.max(ms(last)));
        let goodput = ideal / ms(run.elapsed);

        let phases = [(RAMP, run.changed_at), (run.changed_at, Duration::MAX)];
        let mut quantiles = [0.0f64; 3];
        for (from, to) in phases {
            let (mut latency, mut service): (Vec<_>, Vec<_>) = run
                .successes
                .iter()
                .filter(|(started, ..)| *started >= from && *started < to)
                .map(|&(_, latency, service)| (latency, service))
                .unzip();
            if latency.is_empty() {
                continue;
            }
            latency.sort_unstable();
            service.sort_unstable();
            for (q, worst) in [0.5, 0.95, 0.99].into_iter().zip(&mut quantiles) {
                let ratio = ms(quantile(&latency, q)) / ms(quantile(&service, q));
                *worst = worst.max(ratio);
            }
        }

        let limit_at = |at: Duration| {
            run.limits
                .iter()
                .take_while(|(when, _)| *when <= at)
                .last()
                .map_or(run.limits[0].1, |&(_, limit)| limit)
        };
        let span = |from: Duration, to: Duration| {
            if to <= from {
                // A span of no time (the oracle's change within the ramp on
                // a fast service; a run that settled at its very end): the
                // limit at that moment.
                let limit = limit_at(from);
                return Span {
                    low: limit,
                    high: limit,
                    mean: limit as f64,
                };
            }
            let mut points = vec![(from, limit_at(from))];
            points.extend(
                run.limits
                    .iter()
                    .filter(|(when, _)| *when > from && *when < to)
                    .copied(),
            );
            let (mut low, mut high, mut weighted) = (usize::MAX, 0, 0.0);
            for (i, &(when, limit)) in points.iter().enumerate() {
                let until = points.get(i + 1).map_or(to, |&(next, _)| next);
                low = low.min(limit);
                high = high.max(limit);
                weighted += limit as f64 * (until - when).as_secs_f64();
            }
            Span {
                low,
                high,
                mean: weighted / (to - from).as_secs_f64(),
            }
        };
        let before = span(RAMP.min(run.changed_at), run.changed_at);
        let changes = !matches!(model.change, Change::None);
        let settle_within = SETTLE.max(Duration::from_secs_f64(
            SETTLE_ROUND_TRIPS * model.service_after().mean() / 1e3,
        ));
        let settle = changes.then(|| {
            let capacity = model.capacity_after() as f64;
            let within =
                |limit: usize| (BAND.0 * capacity..=BAND.1 * capacity).contains(&(limit as f64));
            // The last decision out of the band after the change, if any: the
            // limit settled at the next one.
            let after: Vec<_> = run
                .limits
                .iter()
                .filter(|(when, _)| *when > run.changed_at)
                .collect();
            match after.iter().rposition(|&&(_, limit)| !within(limit)) {
                Some(last) => after.get(last + 1).map(|&&(when, _)| when - run.changed_at),
                None if within(limit_at(run.changed_at)) => Some(Duration::ZERO),
                None => after.first().map(|&&(when, _)| when - run.changed_at),
            }
        });
        let settled_at = match settle {
            Some(Some(after)) => run.changed_at + after,
            _ => run.changed_at,
        };
        let after = span(settled_at, run.elapsed);
        let highest = run
            .limits
            .iter()
            .map(|&(_, limit)| limit)
            .max()
            .unwrap_or(0);
        let bound = model.source_needs().map(|needs| SLOW_SOURCE_FACTOR * needs);

        let mut misses = Vec::new();
        if goodput < GOODPUT {
            misses.push("goodput");
        }
        let base = run.base_refused.len();
        if (run.overloaded - base) as f64 > WASTED * run.calls as f64 {
            misses.push("wasted");
        }
        if quantiles[1] > P95 {
            misses.push("p95");
        }
        if settle.is_some_and(|settle| settle.is_none_or(|settle| settle > settle_within)) {
            misses.push("settle");
        }
        if bound.is_some_and(|bound| highest as f64 > bound) {
            misses.push("bounded");
        }
        Score {
            goodput,
            wasted: run.overloaded - base,
            base,
            calls: run.calls,
            quantiles,
            before,
            settle,
            after,
            highest,
            bound,
            misses,
        }
    }

    /// The worst of two scores, figure by figure (the mean limits: the lower).
    /// The wasted calls as the tables print them: refused by the load, their
    /// share of all calls, and those refused whatever the load.
    pub fn wasted_text(&self) -> String {
        let base = if self.base > 0 {
            format!(" + {} whatever the load", self.base)
        } else {
            String::new()
        };
        format!(
            "{} ({:.2} %){base}",
            self.wasted,
            100.0 * self.wasted as f64 / self.calls as f64
        )
    }

    /// The settling after the change as the tables print it: none (no
    /// change), never, or how long.
    pub fn settle_text(&self) -> String {
        match self.settle {
            None => "—".to_string(),
            Some(None) => "never".to_string(),
            Some(Some(after)) => format!("{} ms", after.as_millis()),
        }
    }

    pub fn worst(self, other: Score) -> Score {
        let wasted_share = |s: &Score| s.wasted as f64 / s.calls as f64;
        let (wasted, base, calls) = if wasted_share(&other) > wasted_share(&self) {
            (other.wasted, other.base, other.calls)
        } else {
            (self.wasted, self.base, self.calls)
        };
        let mut misses = self.misses;
        for miss in other.misses {
            if !misses.contains(&miss) {
                misses.push(miss);
            }
        }
        Score {
            goodput: self.goodput.min(other.goodput),
            wasted,
            base,
            calls,
            quantiles: [0, 1, 2].map(|i| self.quantiles[i].max(other.quantiles[i])),
            before: self.before.merge(other.before),
            settle: match (self.settle, other.settle) {
                (Some(a), Some(b)) => Some(match (a, b) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                }),
                (a, b) => a.or(b),
            },
            after: self.after.merge(other.after),
            highest: self.highest.max(other.highest),
            bound: self.bound,
            misses,
        }
    }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
