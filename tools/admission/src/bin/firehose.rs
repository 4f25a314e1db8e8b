//! A firehose: `cargo run --release -p admission --bin firehose`.
//!
//! Four producer tasks each send an event every millisecond for 2 s (8,000 in
//! all) into one `async_channel`, the stream's source. Producers of this kind
//! (telemetry, market data, request handlers) cannot slow down, so the channel
//! is unbounded. Each event's job takes 2 to 6 ms (seeded): 8 workers run 2
//! events per millisecond, half of what arrives. The stream is
//! `bounded(8, 32)`, plain (back-pressure), `.shed(Shed::Newest)` or
//! `.shed(Shed::Oldest)`, in place and spawned.
//!
//! Reported: the age of what is run (its production to its start), the crate's
//! own wait (its pull to its start, from `timed()` on the paused clock), what
//! ran and what was rejected, the channel's backlog when the producers stop,
//! and the throughput (jobs run per second, over the run).

use std::pin::pin;
use std::time::{Duration, Instant};

use admission::{Checks, Mode, Percentiles, Table, draw, generator, ms, now, paused_runtime};
use bounded_buffered::{BoundedStreamExt, Rejected, Shed, Stats, Timings};
use futures::{Stream, StreamExt};

const PRODUCERS: usize = 4;
const EVENTS_EACH: u32 = 2_000;
const EVERY: Duration = Duration::from_millis(1);
const WORKERS: usize = 8;
const WAITING: usize = 32;
const WORK_MIN: Duration = Duration::from_millis(2);
const WORK_MAX: Duration = Duration::from_millis(6);

/// An event's job: its age when it starts (its first poll), then its work.
async fn event(produced: Instant, work: Duration) -> Duration {
    let age = now() - produced;
    tokio::time::sleep(work).await;
    age
}

/// What the stream yields for one event: its age if it ran, nothing if it
/// was rejected.
trait Outcome {
    fn age(self) -> Option<Duration>;
}

impl Outcome for Duration {
    fn age(self) -> Option<Duration> {
        Some(self)
    }
}

impl<F> Outcome for Result<Duration, Rejected<F>> {
    fn age(self) -> Option<Duration> {
        // A rejected event's future is dropped unpolled: it is not run.
        self.ok()
    }
}

/// What one run showed.
struct Run {
    produced: usize,
    ages: Percentiles,
    rejected: usize,
    /// Events still in the channel when the producers stopped.
    backlog: usize,
    elapsed: Duration,
    stats: Stats,
    timings: Timings,
}

async fn drain<S: Stream<Item: Outcome> + Unpin>(
    stream: &mut S,
    stats: impl Fn(&S) -> (Stats, Option<Timings>),
) -> (Vec<Duration>, usize, Stats, Timings) {
    let (mut ages, mut rejected) = (Vec::new(), 0);
    while let Some(outcome) = stream.next().await {
        match outcome.age() {
            Some(age) => ages.push(age),
            None => rejected += 1,
        }
    }
    let (stats, timings) = stats(stream);
    (ages, rejected, stats, timings.expect("timed"))
}

async fn run(shed: Option<Shed>, mode: Mode) -> Run {
    let started = tokio::time::Instant::now();
    let (sender, events) = async_channel::unbounded();
    for producer in 0..PRODUCERS {
        let sender = sender.clone();
        let mut rng = generator(3 + producer as u64);
        tokio::spawn(async move {
            for n in 0..EVENTS_EACH {
                tokio::time::sleep_until(started + EVERY * n).await;
                let work = draw(&mut rng, WORK_MIN, WORK_MAX);
                sender
                    .send(event(now(), work))
                    .await
                    .expect("an unbounded channel");
            }
        });
    }
    drop(sender);
    let backlog = tokio::spawn({
        let events = events.clone();
        async move {
            // Just after the producers' last sends.
            tokio::time::sleep_until(started + EVERY * EVENTS_EACH).await;
            events.len()
        }
    });

    let jobs = events.bounded(WORKERS, WAITING).timed().clock(now);
    let executor = tokio::runtime::Handle::current;
    let (ages, rejected, stats, timings) = match (shed, mode) {
        (None, Mode::InPlace) => {
            let mut jobs = pin!(jobs);
            drain(&mut jobs, |jobs| (jobs.stats(), jobs.timings())).await
        }
        (None, Mode::Spawned) => {
            let mut jobs = jobs.spawn_on(executor());
            drain(&mut jobs, |jobs| (jobs.stats(), jobs.timings())).await
        }
        (Some(shed), Mode::InPlace) => {
            let mut jobs = pin!(jobs.shed(shed));
            drain(&mut jobs, |jobs| (jobs.stats(), jobs.timings())).await
        }
        (Some(shed), Mode::Spawned) => {
            let mut jobs = jobs.shed(shed).spawn_on(executor());
            drain(&mut jobs, |jobs| (jobs.stats(), jobs.timings())).await
        }
    };
    Run {
        produced: PRODUCERS * EVENTS_EACH as usize,
        ages: Percentiles::of(ages),
        rejected,
        backlog: backlog.await.expect("the backlog task"),
        elapsed: started.elapsed(),
        stats,
        timings,
    }
}

fn policy_name(shed: Option<Shed>) -> &'static str {
    match shed {
        None => "back-pressure",
        Some(Shed::Newest) => "shed(Newest)",
        Some(Shed::Oldest) => "shed(Oldest)",
    }
}

fn main() {
    let runtime = paused_runtime();
    println!(
        "firehose: {PRODUCERS} producers, one event each every {} for {} ({} events) into an \
         unbounded async_channel; jobs of {} to {}; bounded({WORKERS}, {WAITING}); \
         age = production to start\n",
        ms(EVERY),
        ms(EVERY * EVENTS_EACH),
        PRODUCERS * EVENTS_EACH as usize,
        ms(WORK_MIN),
        ms(WORK_MAX),
    );
    let mut table = Table::new(&[
        "mode",
        "policy",
        "run",
        "rejected",
        "age p50",
        "age p99",
        "crate wait p99",
        "backlog at 2 s",
        "throughput",
        "time",
    ]);
    let mut checks = Checks::default();
    for mode in Mode::BOTH {
        let policies = [None, Some(Shed::Newest), Some(Shed::Oldest)];
        let [plain, newest, oldest] = policies.map(|shed| runtime.block_on(run(shed, mode)));
        for (shed, run) in policies.into_iter().zip([&plain, &newest, &oldest]) {
            let policy = policy_name(shed);
            table.row(vec![
                mode.name().into(),
                policy.into(),
                run.ages.count.to_string(),
                run.rejected.to_string(),
                ms(run.ages.p50),
                ms(run.ages.p99),
                ms(run.timings.wait.quantile(0.99)),
                run.backlog.to_string(),
                format!("{:.0}/s", run.ages.count as f64 / run.elapsed.as_secs_f64()),
                ms(run.elapsed),
            ]);
            let case = format!("{}, {policy}", mode.name());
            checks.check(
                run.ages.count + run.rejected == run.produced
                    && run.stats.rejected == run.rejected as u64,
                format!(
                    "{case}: every event ran or was rejected, once ({} + {} = {}; stats.rejected {})",
                    run.ages.count, run.rejected, run.produced, run.stats.rejected
                ),
            );
            checks.check(
                run.stats.peak_active <= WORKERS && run.stats.peak_waiting <= WAITING,
                format!(
                    "{case}: peak running {} <= {WORKERS}, peak waiting {} <= {WAITING}",
                    run.stats.peak_active, run.stats.peak_waiting
                ),
            );
        }
        checks.check(
            plain.rejected == 0,
            format!(
                "{}, back-pressure rejects nothing ({})",
                mode.name(),
                plain.rejected
            ),
        );
        checks.check(
            oldest.ages.p99 < plain.ages.p99 && oldest.ages.p99 <= newest.ages.p99,
            format!(
                "{}: shed(Oldest) runs the freshest events (age p99 {} < {} back-pressure, <= {} \
                 shed(Newest))",
                mode.name(),
                ms(oldest.ages.p99),
                ms(plain.ages.p99),
                ms(newest.ages.p99),
            ),
        );
    }
    println!();
    table.print();
    println!();
    checks.finish();
}
