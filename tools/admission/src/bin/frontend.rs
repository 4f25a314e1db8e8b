//! A service front end that answers "busy" at once:
//! `cargo run --release -p admission --bin frontend`.
//!
//! Four request handlers (the producers) each take a request every
//! millisecond for half a second and send it, with a reply channel, into one
//! `async_channel`. The service runs the requests with
//! `bounded(8, 16).shed(Shed::Newest).spawn_on(..)`: up to 8 at a time (2 to
//! 6 ms each, seeded), 16 more waiting; a request that finds both full is
//! handed back as a `Rejected` holding its untouched request, and the front end
//! answers it "busy" on the spot. Every request gets exactly one answer.
//!
//! The clock is tokio's paused one, so the run is the same on any machine;
//! the code is the same on a real clock.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use admission::{Checks, Percentiles, Table, draw, generator, ms, now, paused_runtime};
use bounded_buffered::{BoundedStreamExt, Shed};
use futures::StreamExt;
use futures::channel::oneshot;

const HANDLERS: usize = 4;
const REQUESTS_EACH: u32 = 500;
const EVERY: Duration = Duration::from_millis(1);
const WORKERS: usize = 8;
const WAITING: usize = 16;
const WORK_MIN: Duration = Duration::from_millis(2);
const WORK_MAX: Duration = Duration::from_millis(6);

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Served,
    Busy,
}

/// A request: its work, and where its answer goes (with when it was
/// answered).
struct Request {
    work: Duration,
    reply: oneshot::Sender<(Answer, Instant)>,
}

/// Serving one request, as a future whose request stays reachable: a rejected
/// one is handed back unpolled, and the front end answers it through
/// `reply`. (An `async` block would hide the reply channel.)
struct Serve {
    request: Option<Request>,
    work: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Serve {
    fn new(request: Request) -> Self {
        Self {
            request: Some(request),
            work: None,
        }
    }

    /// Answers the request, if it was not answered yet.
    fn answer(&mut self, answer: Answer) {
        if let Some(request) = self.request.take() {
            // A handler that gave up waiting dropped its receiver: nobody to tell.
            let _ = request.reply.send((answer, now()));
        }
    }
}

impl Future for Serve {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let Some(request) = &this.request else {
            return Poll::Ready(());
        };
        // The work starts at the first poll, that is when a worker takes it.
        let work = this
            .work
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(request.work)));
        if work.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.answer(Answer::Served);
        Poll::Ready(())
    }
}

/// A handler: takes a request every `EVERY`, sends it on, and collects the
/// answers: (answer, time from its request to its answer).
async fn handler(number: usize, requests: async_channel::Sender<Serve>) -> Vec<(Answer, Duration)> {
    let mut rng = generator(10 + number as u64);
    let started = tokio::time::Instant::now();
    let mut pending = Vec::with_capacity(REQUESTS_EACH as usize);
    for n in 0..REQUESTS_EACH {
        tokio::time::sleep_until(started + EVERY * n).await;
        let (reply, answer) = oneshot::channel();
        let work = draw(&mut rng, WORK_MIN, WORK_MAX);
        requests
            .send(Serve::new(Request { work, reply }))
            .await
            .expect("the service runs until every handler is done");
        pending.push((now(), answer));
    }
    drop(requests);
    let mut answers = Vec::with_capacity(pending.len());
    for (asked, answer) in pending {
        let (answer, at) = answer.await.expect("every request is answered");
        answers.push((answer, at - asked));
    }
    answers
}

fn main() {
    let runtime = paused_runtime();
    let mut checks = Checks::default();
    let (answers, stats) = runtime.block_on(async {
        let (requests, incoming) = async_channel::unbounded();
        let handlers: Vec<_> = (0..HANDLERS)
            .map(|number| tokio::spawn(handler(number, requests.clone())))
            .collect();
        drop(requests);

        // The service: run what fits, answer the rest "busy" at once.
        let mut service = incoming
            .bounded(WORKERS, WAITING)
            .shed(Shed::Newest)
            .spawn_on(tokio::runtime::Handle::current());
        while let Some(outcome) = service.next().await {
            if let Err(rejected) = outcome {
                rejected.into_inner().answer(Answer::Busy);
            }
        }

        let mut answers = Vec::new();
        for handler in handlers {
            answers.extend(handler.await.expect("a handler"));
        }
        (answers, service.stats())
    });

    let sent = HANDLERS * REQUESTS_EACH as usize;
    let latencies = |which: Answer| {
        let of: Vec<Duration> = answers
            .iter()
            .filter(|(answer, _)| *answer == which)
            .map(|&(_, latency)| latency)
            .collect();
        Percentiles::of(of)
    };
    let (served, busy) = (latencies(Answer::Served), latencies(Answer::Busy));
    println!(
        "front end: {HANDLERS} handlers, a request each every {} for {} ({sent} requests); \
         requests of {} to {}; bounded({WORKERS}, {WAITING}).shed(Shed::Newest), spawned\n",
        ms(EVERY),
        ms(EVERY * REQUESTS_EACH),
        ms(WORK_MIN),
        ms(WORK_MAX),
    );
    checks.check(
        answers.len() == sent && served.count + busy.count == sent,
        format!(
            "every request answered once ({} served + {} busy = {sent})",
            served.count, busy.count
        ),
    );
    checks.check(
        stats.rejected == busy.count as u64 && stats.completed == served.count as u64,
        format!(
            "the stream's counts agree (rejected {}, completed {})",
            stats.rejected, stats.completed
        ),
    );
    checks.check(
        busy.max == Duration::ZERO,
        format!("\"busy\" is answered at once (slowest {})", ms(busy.max)),
    );
    checks.check(
        stats.peak_active <= WORKERS && stats.peak_waiting <= WAITING,
        format!(
            "peak running {} <= {WORKERS}, peak waiting {} <= {WAITING}",
            stats.peak_active, stats.peak_waiting
        ),
    );
    let mut table = Table::new(&["answer", "requests", "p50", "p99", "max"]);
    for (name, of) in [("served", served), ("busy", busy)] {
        table.row(vec![
            name.into(),
            of.count.to_string(),
            ms(of.p50),
            ms(of.p99),
            ms(of.max),
        ]);
    }
    println!();
    table.print();
    println!();
    checks.finish();
}
