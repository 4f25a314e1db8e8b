//! Time budgets in place, on tokio's paused clock through `.clock(...)`:
//! `max_wait` expires a waiting item at pickup (exactly at its boundary), never
//! polls it, hands its future back, and holds it in its place; `timed()` records
//! exactly the durations of a known schedule; the clock is read at most once per
//! `poll_next`, and never when nothing needs it (contract points 23 and 24).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Expired};
use futures::stream::{self, Stream};
use futures::{StreamExt, TryStreamExt};
use support::{Gates, Poller, counted};
use tokio::time::sleep;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn paused() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// A job that takes `run` of (paused) time and counts its polls and drops.
struct Job {
    id: u32,
    run: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
}

#[derive(Clone, Default)]
struct Counts {
    polls: Arc<AtomicUsize>,
    drops: Arc<AtomicUsize>,
}

impl Counts {
    fn job(&self, id: u32, run: Duration) -> Job {
        Job {
            id,
            run,
            sleep: None,
            polls: Arc::clone(&self.polls),
            drops: Arc::clone(&self.drops),
        }
    }
}

impl Future for Job {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.polls.fetch_add(1, SeqCst);
        let run = self.run;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(sleep(run)));
        sleep.as_mut().poll(cx).map(|()| self.id)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

/// Jobs `0..` that each take `run`.
fn jobs(counts: &Counts, count: u32, run: Duration) -> impl Stream<Item = Job> + Unpin {
    let counts = counts.clone();
    stream::iter(0..count).map(move |id| counts.job(id, run))
}

/// One job per entry of `durations` (in ms), job `id` taking `durations[id]`.
fn jobs_of(counts: &Counts, durations: &'static [u64]) -> impl Stream<Item = Job> + Unpin {
    let counts = counts.clone();
    stream::iter(0..durations.len() as u32)
        .map(move |id| counts.job(id, ms(durations[id as usize])))
}

/// What an outcome stream yielded, with expiries as the time they waited.
fn waited(outcomes: Vec<Result<u32, Expired<Job>>>) -> Vec<Result<u32, Duration>> {
    outcomes
        .into_iter()
        .map(|outcome| outcome.map_err(|expired| expired.waited()))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_item_that_waited_exactly_the_limit_starts_one_that_waited_longer_expires() {
    let counts = Counts::default();
    // One worker: item 0 runs 10 ms, so item 1 waits exactly 10 ms and starts;
    // item 1 runs 1 ms, so item 2 waits 11 ms and expires, as does item 3.
    let source = jobs_of(&counts, &[10, 1, 5, 5]);
    let outcomes: Vec<_> = source
        .bounded(1, 3)
        .max_wait(ms(10))
        .clock(paused)
        .collect()
        .await;
    assert_eq!(waited(outcomes), [Ok(0), Ok(1), Err(ms(11)), Err(ms(11))]);
}

#[tokio::test(start_paused = true)]
async fn an_expired_future_is_never_polled_and_still_runs_from_into_inner() {
    let counts = Counts::default();
    let mut stream = jobs(&counts, 3, ms(10))
        .bounded(1, 2)
        .max_wait(ms(5))
        .clock(paused);
    assert_eq!(stream.next().await.unwrap().ok(), Some(0));
    let polls_before = counts.polls.load(SeqCst);
    let first = stream.next().await.unwrap().unwrap_err();
    let second = stream.next().await.unwrap().unwrap_err();
    assert!(stream.next().await.is_none());
    assert_eq!(
        counts.polls.load(SeqCst),
        polls_before,
        "expired items are never polled"
    );
    assert_eq!(stream.stats().expired, 2);
    assert_eq!(
        counts.drops.load(SeqCst),
        1,
        "only item 0 was dropped so far"
    );
    // The untouched futures still run to their outputs, and are dropped once.
    assert_eq!(first.into_inner().await, 1);
    assert_eq!(second.into_inner().await, 2);
    assert_eq!(counts.drops.load(SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn an_item_pulled_straight_into_a_free_worker_never_expires() {
    let counts = Counts::default();
    // No waiting queue: every item starts as it is pulled, even with a zero limit.
    let outcomes: Vec<_> = jobs(&counts, 6, ms(3))
        .bounded(2, 0)
        .max_wait(Duration::ZERO)
        .clock(paused)
        .collect()
        .await;
    assert!(outcomes.iter().all(Result::is_ok));
    // With a queue and a zero limit, an item that waited any time at all expires;
    // one picked up in the same `poll_next` it was pulled in waited zero.
    let outcomes: Vec<_> = jobs(&counts, 4, ms(3))
        .bounded(1, 3)
        .max_wait(Duration::ZERO)
        .clock(paused)
        .collect()
        .await;
    assert_eq!(
        waited(outcomes),
        [Ok(0), Err(ms(3)), Err(ms(3)), Err(ms(3))]
    );
}

#[tokio::test(start_paused = true)]
async fn ordered_expired_items_come_at_their_input_positions() {
    let counts = Counts::default();
    // Two workers, window 4: items 0 (30 ms) and 1 (10 ms) run; 2, 3 and 4 wait.
    // At 10 ms item 2 starts (waited 10); at 20 ms item 3 is picked up having
    // waited 20 > 15 and expires, but is yielded only after 0, 1 and 2. The
    // window (0 running, 1, 2 and 3 held) is then full: item 4 is picked up
    // only when 0 is handed out, at 30 ms.
    let source = jobs_of(&counts, &[30, 10, 10, 1, 1]);
    let outcomes: Vec<_> = source
        .bounded(2, 3)
        .ordered(4)
        .max_wait(ms(15))
        .clock(paused)
        .collect()
        .await;
    assert_eq!(
        waited(outcomes),
        [Ok(0), Ok(1), Ok(2), Err(ms(20)), Err(ms(30))]
    );
}

#[tokio::test(start_paused = true)]
async fn max_wait_and_ordered_work_in_either_order() {
    let counts = Counts::default();
    let first: Vec<_> = jobs(&counts, 6, ms(4))
        .bounded(1, 5)
        .max_wait(ms(9))
        .ordered(3)
        .clock(paused)
        .collect()
        .await;
    let second: Vec<_> = jobs(&counts, 6, ms(4))
        .bounded(1, 5)
        .ordered(3)
        .clock(paused)
        .max_wait(ms(9))
        .collect()
        .await;
    assert_eq!(waited(first), waited(second));
}

#[test]
fn expired_items_count_against_the_waiting_budget_exactly() {
    // Gates never finish on their own, so the schedule is exact. The clock is a
    // counter the test advances by hand.
    static NOW: AtomicUsize = AtomicUsize::new(0);
    fn now() -> Instant {
        *BASE + Duration::from_millis(NOW.load(SeqCst) as u64)
    }
    static BASE: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

    let gates = Gates::new();
    let (source, pulled) = counted(gates.source(100));
    let mut stream = source.bounded(2, 3).max_wait(ms(5)).clock(now);
    let poller = Poller::new();
    assert!(poller.poll(&mut stream).is_pending());
    assert_eq!(pulled.pulled(), 5, "2 running + 3 waiting");
    // Later, item 0 completes: worker freed; items 2, 3, 4 waited 10 ms.
    NOW.store(10, SeqCst);
    gates.open(0);
    assert_eq!(
        poller.poll(&mut stream).map(|o| o.map(|o| o.ok())),
        Poll::Ready(Some(Some(0)))
    );
    // The freed worker met three expired items (held for the consumer, in place
    // of their waiting places) and started the next item pulled at once.
    let stats = stream.stats();
    assert_eq!(stats.expired, 3);
    assert_eq!((stats.active, stats.waiting, stats.held), (2, 0, 3));
    // Expired items count against `waiting`: nothing more is pulled until they
    // are taken, so the source advanced exactly 2 + 3 beyond what was handed out.
    assert_eq!(pulled.pulled(), 6);
    for _ in 0..3 {
        assert!(matches!(
            poller.poll(&mut stream),
            Poll::Ready(Some(Err(_)))
        ));
    }
    // Taken: the waiting queue fills up again, exactly.
    assert_eq!(pulled.pulled(), 6 + 3);
    assert_eq!(stream.stats().waiting, 3);
}

#[tokio::test(start_paused = true)]
async fn timings_match_a_known_schedule_exactly() {
    let counts = Counts::default();
    // One worker, four 10 ms jobs, pulled at once: waits 0, 10, 20, 30; every
    // run 10 ms; the consumer takes each output as soon as it exists: held 0.
    let mut stream = jobs(&counts, 4, ms(10)).bounded(1, 3).timed().clock(paused);
    while stream.next().await.is_some() {}
    let timings = stream.timings().expect("timed");
    assert_eq!(timings.wait.count(), 4);
    assert_eq!((timings.wait.min(), timings.wait.max()), (ms(0), ms(30)));
    assert_eq!(timings.wait.mean(), ms(15));
    assert_eq!(timings.run.count(), 4);
    assert_eq!((timings.run.min(), timings.run.max()), (ms(10), ms(10)));
    assert_eq!(timings.run.quantile(0.5), ms(10));
    assert_eq!(timings.held.count(), 4);
    assert_eq!(timings.held.max(), ms(0));

    // A slow consumer shows in `held`: 5 ms of its own work per output.
    let mut stream = jobs(&counts, 4, ms(1)).bounded(4, 0).timed().clock(paused);
    let mut outputs = 0;
    while stream.next().await.is_some() {
        outputs += 1;
        sleep(ms(5)).await;
    }
    assert_eq!(outputs, 4);
    let held = stream.timings().expect("timed").held;
    // All four complete at 1 ms; handed out at 1, 6, 11 and 16 ms.
    assert_eq!(
        (held.min(), held.max(), held.mean()),
        (ms(0), ms(15), ms(7) + ms(1) / 2)
    );
    let p75 = held.quantile(0.75).as_secs_f64();
    assert!((p75 - 0.010).abs() <= 0.010 * 0.01, "p75 {p75}");
}

#[tokio::test(start_paused = true)]
async fn ordered_head_of_line_blocking_shows_in_held() {
    let counts = Counts::default();
    let source = jobs_of(&counts, &[20, 5, 5, 5]);
    let mut stream = source.bounded(4, 0).ordered(4).timed().clock(paused);
    while stream.next().await.is_some() {}
    let held = stream.timings().expect("timed").held;
    // Items 1-3 complete at 5 ms and wait for item 0 until 20 ms.
    assert_eq!((held.count(), held.min(), held.max()), (4, ms(0), ms(15)));
}

#[test]
fn timings_are_none_unless_timed() {
    let counts = Counts::default();
    assert!(jobs(&counts, 1, ms(1)).bounded(1, 0).timings().is_none());
    let stream = jobs(&counts, 1, ms(1)).bounded(1, 0).max_wait(ms(1));
    assert!(stream.timings().is_none());
    assert!(stream.timed().timings().is_some());
}

#[test]
fn the_clock_is_read_at_most_once_per_poll_and_never_when_nothing_needs_it() {
    static READS: AtomicUsize = AtomicUsize::new(0);
    fn counting() -> Instant {
        READS.fetch_add(1, SeqCst);
        Instant::now()
    }
    let poller = Poller::new();
    // A clock nothing asks for is never read.
    let mut stream = stream::iter(0..100u32)
        .map(|n| async move { n })
        .bounded(4, 4)
        .clock(counting);
    assert_eq!(poller.drain_ready(&mut stream).len(), 100);
    assert_eq!(READS.load(SeqCst), 0);

    // Timed: at most one reading per `poll_next`.
    let mut stream = stream::iter(0..100u32)
        .map(|n| async move { n })
        .bounded(4, 4)
        .timed()
        .clock(counting);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(None) = poller.poll(&mut stream) {
            break;
        }
    }
    let reads = READS.load(SeqCst);
    assert!(
        reads > 0 && reads <= polls,
        "{reads} readings in {polls} polls"
    );
}

/// Six jobs of 10 ms as a `TryStream` of fallible futures: item 4 fails.
fn fallible_jobs(
    counts: &Counts,
) -> impl Stream<Item = Result<impl Future<Output = Result<u32, String>>, String>> + Unpin {
    jobs(counts, 6, ms(10)).map(|job| {
        Ok(async move {
            let id = job.await;
            if id == 4 {
                Err(format!("item {id} failed"))
            } else {
                Ok(id)
            }
        })
    })
}

#[tokio::test(start_paused = true)]
async fn with_try_bounded_an_expiry_is_an_outcome_and_an_error_still_fails_fast() {
    let counts = Counts::default();
    let source = fallible_jobs(&counts);
    let mut stream = source
        .try_bounded(2, 4)
        .ordered(6)
        .max_wait(ms(10))
        .clock(paused);
    // 0 and 1 run; 2 and 3 start at 10 ms having waited 10; 4 and 5 have waited
    // 20 ms at 20 ms: both expire, so item 4 never gets to fail.
    let mut seen = Vec::new();
    while let Some(outcome) = stream.try_next().await.expect("no item fails") {
        seen.push(outcome.map_err(|expired| expired.waited()));
    }
    assert_eq!(seen, [Ok(0), Ok(1), Ok(2), Ok(3), Err(ms(20)), Err(ms(20))]);

    // With a looser limit item 4 runs, fails, and ends the run.
    let source = fallible_jobs(&counts);
    let result: Result<Vec<_>, _> = source
        .try_bounded(2, 4)
        .max_wait(ms(100))
        .clock(paused)
        .try_collect()
        .await;
    assert_eq!(result.unwrap_err(), "item 4 failed");
}

#[test]
#[should_panic(expected = "`max_wait` must be called before the stream is first polled")]
fn max_wait_after_the_first_poll_panics() {
    let mut stream = stream::iter(0..3u32)
        .map(|n| async move { n })
        .bounded(1, 0);
    let _ = Poller::new().poll(&mut stream);
    let _ = stream.max_wait(ms(1));
}
