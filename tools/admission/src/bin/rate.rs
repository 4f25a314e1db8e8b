//! A start quota: `cargo run --release -p admission --bin rate`.
//!
//! A provider allows 100 requests a second with bursts of 20. 10,000 items
//! are ready at once (a fast source, `stream::iter`), and each takes 5 ms (a
//! `tokio::time::sleep`). Three runs, side by side on the same paused clock:
//!
//! - `bounded(32, 16).timer(TokioTimer).rate(100, 1 s).burst(20)`, in place
//!   and spawned (`.spawn_on(Handle::current())`);
//! - governor's limiter (`Quota::per_second(100).allow_burst(20)`) in front
//!   of `futures::StreamExt::buffer_unordered(32)`, as its
//!   `StreamRateLimitExt::ratelimit_stream` puts it there.
//!
//! 32 workers: after the burst, starts come 10 ms apart and an item takes
//! 5 ms, so at most one item runs; only the burst's 20 starts at `t = 0` need
//! more than one worker. 16 would do for the long run but would hold 4 of the
//! burst back until the first items finish; with 32 the workers never bind,
//! and every wait is the quota's. 16 waiting places keep an item ready for
//! each token (the source never makes one wait anyway).
//!
//! Reported, all on the virtual clock: every item's start (tokio's
//! `Instant::now()` at its future's first poll), the total time (to the last
//! output), the most starts in any window of 1 s (sliding over the starts:
//! the quota's own measure, at most `n + burst - 1 = 119`) and in a window
//! from one whole second to the next, the long-run rate (starts per second
//! over the run: a little above 100, by the burst's 19 extra starts), and
//! whether a worker stood idle while a token and an item were both there:
//! the total time against the quota's bound (the burst at `t = 0`, then one
//! start every 10 ms, and the last item's 5 ms), and each start's lag behind
//! its token (the quota's rule replayed over the starts observed). The
//! crate's runs also print their own account of the wait for tokens
//! (`Stats::rate_waited`).
//!
//! # governor on the paused clock
//!
//! governor's `DefaultClock` reads real time (`QuantaClock`, the TSC, with
//! its default features; `MonotonicClock`, std's `Instant`, without, as
//! built here), and a paused tokio clock moves neither. So the limiter here
//! is built with `RateLimiter::direct_with_clock` on [`TokioClock`], a
//! `governor::clock::Clock` over `tokio::time::Instant`. That is not enough
//! for `ratelimit_stream` itself: it waits for the next token on a
//! `futures_timer::Delay`, which a thread of its own fires on the real
//! clock. Tried on this paused runtime with 40 items, both clocks: on
//! `DefaultClock` it took 200 ms of real time, and its starts came 5 ms apart
//! in virtual time (the virtual clock moved only by the items' sleeps); on
//! `TokioClock` it never finished (once no item runs, no tokio timer is
//! pending, so the paused clock stands still while the real-time `Delay`
//! fires, again and again, at the same virtual instant).
//! So the third run uses [`Governed`], `ratelimit_stream`'s stream
//! (governor 0.10, `state/direct/streams.rs`) with one change: it sleeps on
//! tokio's timer until the limiter's `earliest_possible()` where governor
//! sleeps on a `Delay` for the same span. The decisions (when a token is
//! free, what a start costs) are governor's own `check()`.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use admission::{
    Checks, Mode, Table, most_in_aligned_windows, most_in_any_window, ms, now, paused_runtime,
};
use bounded_buffered::{BoundedStreamExt, Stats, TokioTimer};
use futures::{Stream, StreamExt, stream};
use governor::clock::{Clock, ReasonablyRealtime};
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

const ITEMS: usize = 10_000;
const WORK: Duration = Duration::from_millis(5);
/// The quota: `RATE` starts per `PER`, `BURST` at once after a quiet spell.
const RATE: u32 = 100;
const PER: Duration = Duration::from_secs(1);
const BURST: u32 = 20;
const WORKERS: usize = 32;
const WAITING: usize = 16;

/// The quota's window bound: at most `n + burst - 1` starts in any window of
/// `per`.
const WINDOW_BOUND: usize = (RATE + BURST - 1) as usize;

/// One start's cost: the time between starts once the burst is spent.
fn spacing() -> Duration {
    PER / RATE
}

/// The time the quota alone allows: the burst at `t = 0`, the other items one
/// per [`spacing`] after it, and the last one's work.
fn quota_bound() -> Duration {
    spacing() * (ITEMS - BURST as usize) as u32 + WORK
}

/// Items running now, and the most at once: a worker count measured by the
/// futures themselves, the same way for every run.
#[derive(Default)]
struct Running {
    now: AtomicUsize,
    peak: AtomicUsize,
}

/// One item running; counted out when its future completes.
struct RunningGuard(Arc<Running>);

impl RunningGuard {
    fn enter(running: &Arc<Running>) -> Self {
        let now = running.now.fetch_add(1, Relaxed) + 1;
        running.peak.fetch_max(now, Relaxed);
        Self(Arc::clone(running))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Relaxed);
    }
}

/// An item's job: when it started (its first poll, on the paused clock),
/// then its work. Returns its number and its start.
async fn job(number: usize, running: Arc<Running>) -> (usize, Instant) {
    let started = now();
    let _running = RunningGuard::enter(&running);
    tokio::time::sleep(WORK).await;
    (number, started)
}

/// governor's clock on tokio's: `Instant::now` follows the paused clock, as
/// `DefaultClock` (the TSC) does not.
#[derive(Clone, Copy, Debug, Default)]
struct TokioClock;

impl Clock for TokioClock {
    type Instant = Instant;

    fn now(&self) -> Instant {
        now()
    }
}

// What `ratelimit_stream` asks of a clock: instants that can be compared with
// the time it waits (here, tokio's).
impl ReasonablyRealtime for TokioClock {}

type Limiter = RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<Instant>>;

/// governor's `RatelimitedStream` (`ratelimit_stream`), waiting on tokio's
/// timer instead of `futures_timer::Delay` (see the module doc): it holds at
/// most one item from its source, asks the limiter for a token, yields the
/// item if it got one, else sleeps until the limiter's earliest possible
/// start and asks again. Its bounds are governor's (a source and items that
/// are `Unpin`), so `ratelimit_stream(&limiter)` compiles in its place.
struct Governed<'a, S: Stream> {
    source: S,
    limiter: &'a Limiter,
    held: Option<S::Item>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<'a, S: Stream> Governed<'a, S> {
    fn new(source: S, limiter: &'a Limiter) -> Self {
        Self {
            source,
            limiter,
            held: None,
            wait: None,
        }
    }
}

impl<S> Stream for Governed<'_, S>
where
    S: Stream + Unpin,
    S::Item: Unpin,
{
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        loop {
            if this.held.is_none() {
                match ready!(this.source.poll_next_unpin(cx)) {
                    Some(item) => this.held = Some(item),
                    None => return Poll::Ready(None),
                }
            }
            if let Some(wait) = &mut this.wait {
                ready!(wait.as_mut().poll(cx));
                this.wait = None;
            }
            match this.limiter.check() {
                Ok(()) => return Poll::Ready(this.held.take()),
                Err(not_until) => {
                    let at = tokio::time::Instant::from_std(not_until.earliest_possible());
                    this.wait = Some(Box::pin(tokio::time::sleep_until(at)));
                }
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Contender {
    Bounded(Mode),
    Governor,
}

impl Contender {
    const ALL: [Contender; 3] = [
        Contender::Bounded(Mode::InPlace),
        Contender::Bounded(Mode::Spawned),
        Contender::Governor,
    ];

    fn name(self) -> &'static str {
        match self {
            Contender::Bounded(Mode::InPlace) => "bounded, in place",
            Contender::Bounded(Mode::Spawned) => "bounded, spawned",
            Contender::Governor => "governor + buffer_unordered",
        }
    }

    /// How its figures were measured.
    fn measured(self) -> String {
        let common = "starts at each future's first poll, time to the last output, both on \
                      the paused clock";
        match self {
            Contender::Bounded(mode) => format!(
                "{}: `bounded({WORKERS}, {WAITING}).timer(TokioTimer).rate({RATE}, {PER:?})\
                 .burst({BURST}){}`; {common}",
                self.name(),
                match mode {
                    Mode::InPlace => "",
                    Mode::Spawned => ".spawn_on(Handle::current())",
                },
            ),
            Contender::Governor => format!(
                "{}: governor's `RateLimiter::direct_with_clock(Quota::per_second({RATE})\
                 .allow_burst({BURST}), TokioClock)` deciding, `ratelimit_stream`'s loop waiting \
                 on tokio's timer (not futures-timer's real-time Delay), then \
                 `buffer_unordered({WORKERS})`; {common}",
                self.name(),
            ),
        }
    }
}

/// What one run showed.
struct Run {
    /// Outputs per item number: 1 each if every item ran once.
    ran: HashMap<usize, usize>,
    /// Every start, from the run's start, sorted.
    starts: Vec<Duration>,
    elapsed: Duration,
    peak_running: usize,
    /// The crate's own account (its runs only).
    stats: Option<Stats>,
}

impl Run {
    fn outputs(&self) -> usize {
        self.ran.values().sum()
    }

    fn each_once(&self) -> bool {
        self.ran.len() == ITEMS && (0..ITEMS).all(|number| self.ran.get(&number) == Some(&1))
    }
}

async fn drain<S: Stream<Item = (usize, Instant)> + Unpin>(
    stream: &mut S,
    started: Instant,
) -> (HashMap<usize, usize>, Vec<Duration>) {
    let (mut ran, mut starts) = (HashMap::with_capacity(ITEMS), Vec::with_capacity(ITEMS));
    while let Some((number, start)) = stream.next().await {
        *ran.entry(number).or_default() += 1;
        starts.push(start - started);
    }
    starts.sort_unstable();
    (ran, starts)
}

async fn run(contender: Contender) -> Run {
    let started = now();
    let running = Arc::new(Running::default());
    let source = {
        let running = Arc::clone(&running);
        stream::iter(0..ITEMS).map(move |number| job(number, Arc::clone(&running)))
    };
    let ((ran, starts), stats) = match contender {
        Contender::Bounded(mode) => {
            let jobs = source
                .bounded(WORKERS, WAITING)
                .timer(TokioTimer)
                .rate(RATE, PER)
                .burst(BURST);
            match mode {
                Mode::InPlace => {
                    let mut jobs = pin!(jobs);
                    let drained = drain(&mut jobs, started).await;
                    (drained, Some(jobs.stats()))
                }
                Mode::Spawned => {
                    let mut jobs = jobs.spawn_on(tokio::runtime::Handle::current());
                    let drained = drain(&mut jobs, started).await;
                    (drained, Some(jobs.stats()))
                }
            }
        }
        Contender::Governor => {
            let burst = NonZeroU32::new(BURST).expect("a burst above zero");
            let quota = Quota::per_second(NonZeroU32::new(RATE).expect("a rate above zero"))
                .allow_burst(burst);
            // Built here, inside the runtime, so that its start is read off
            // the paused clock.
            let limiter: Limiter = RateLimiter::direct_with_clock(quota, TokioClock);
            // `ratelimit_stream` wants `Unpin` items: its users box them.
            let mut jobs = Governed::new(source.map(Box::pin), &limiter).buffer_unordered(WORKERS);
            (drain(&mut jobs, started).await, None)
        }
    };
    Run {
        ran,
        starts,
        elapsed: now() - started,
        peak_running: running.peak.load(Relaxed),
        stats,
    }
}

/// The quota's rule replayed over the observed starts (sorted): when each
/// start's token was free, given the starts before it. Returns the longest
/// lag of a start behind its token, the lags' sum, and how many starts came
/// before their token (which the quota forbids). With an item always ready and
/// a worker always free, a lag is a worker idle while a token and an item
/// were both there.
fn start_lags(starts: &[Duration]) -> (Duration, Duration, usize) {
    let tolerance = spacing() * (BURST - 1);
    // The theoretical arrival time: when the bucket is full again.
    let mut full_at = Duration::ZERO;
    let (mut longest, mut total, mut early) = (Duration::ZERO, Duration::ZERO, 0);
    for &start in starts {
        let token = full_at.saturating_sub(tolerance);
        match start.checked_sub(token) {
            Some(lag) => {
                longest = longest.max(lag);
                total += lag;
            }
            None => early += 1,
        }
        full_at = full_at.max(start) + spacing();
    }
    (longest, total, early)
}

fn main() {
    let runtime = paused_runtime();
    println!(
        "rate: {ITEMS} items of {} from a fast source; a quota of {RATE} starts per {PER:?} with \
         bursts of {BURST} (at most {WINDOW_BOUND} in any window of {PER:?}); {WORKERS} workers, \
         {WAITING} waiting; the quota's bound: {} (the burst at 0, then one start every {}, and \
         the last item's {})\n",
        ms(WORK),
        ms(quota_bound()),
        ms(spacing()),
        ms(WORK),
    );
    // The window is the quota's period: sliding (any start), and aligned
    // (from one whole period to the next, as a per-second meter counts).
    let most_in_any = format!("most in any {PER:?}");
    let most_aligned_header = format!("most in an aligned {PER:?}");
    let mut table = Table::new(&[
        "run",
        "items run",
        "time",
        "time / quota's bound",
        &most_in_any,
        &most_aligned_header,
        "long-run rate",
        "peak running",
        "max start lag",
    ]);
    let mut checks = Checks::default();
    let mut measured = Vec::new();
    for contender in Contender::ALL {
        let run = runtime.block_on(run(contender));
        let most_sliding = most_in_any_window(&run.starts, PER);
        let most_aligned = most_in_aligned_windows(&run.starts, PER);
        let ratio = run.elapsed.as_secs_f64() / quota_bound().as_secs_f64();
        let (longest_lag, total_lag, early) = start_lags(&run.starts);
        table.row(vec![
            contender.name().into(),
            run.outputs().to_string(),
            ms(run.elapsed),
            format!("{ratio:.4}"),
            format!("{most_sliding} (<= {WINDOW_BOUND})"),
            most_aligned.to_string(),
            format!(
                "{:.2}/s",
                run.starts.len() as f64 / run.elapsed.as_secs_f64()
            ),
            format!("{} of {WORKERS}", run.peak_running),
            ms(longest_lag),
        ]);
        let rate_waited = run.stats.map_or(String::new(), |stats| {
            format!("; Stats::rate_waited {}", ms(stats.rate_waited))
        });
        measured.push(format!(
            "- {}; start lags {} in all, {early} starts before their token{rate_waited}",
            contender.measured(),
            ms(total_lag),
        ));

        let case = contender.name();
        let completed = run.stats.map_or(String::new(), |stats| {
            format!("; stats.completed {}", stats.completed)
        });
        checks.check(
            run.each_once()
                && run
                    .stats
                    .is_none_or(|stats| stats.completed == ITEMS as u64),
            format!(
                "{case}: every item ran exactly once ({} outputs, {} items{completed})",
                run.outputs(),
                run.ran.len(),
            ),
        );
        if let Contender::Bounded(_) = contender {
            checks.check(
                most_sliding <= WINDOW_BOUND,
                format!(
                    "{case}: at most {WINDOW_BOUND} starts in any window of {PER:?} ({most_sliding})"
                ),
            );
            checks.check(
                (ratio - 1.0).abs() <= 0.01,
                format!(
                    "{case}: work-conserving under the rate, the time within 1 % of the quota's \
                     bound ({} against {}, {ratio:.4})",
                    ms(run.elapsed),
                    ms(quota_bound()),
                ),
            );
        }
    }
    println!();
    table.print();
    println!();
    for line in measured {
        println!("{line}");
    }
    println!();
    checks.finish();
}
