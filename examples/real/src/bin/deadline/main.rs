//! A run deadline and requests' own deadlines in front of a real HTTP server,
//! and what the client reconciles afterwards. A hyper 1 server started in this
//! program (127.0.0.1, an ephemeral port) applies one write per request and
//! keeps a journal of the ids it applied. Most handlers take a few ms, 1 in 8
//! takes 40-80 ms, and 1 in 20 hangs for 30 s: half of those before their write
//! (a lock held elsewhere), half after it (a replica that does not answer). The
//! client sends the requests through
//! `bounded(..).item_deadlines().timer(TokioTimer).deadline(..)`, one hyper 1
//! connection each; some requests come with a deadline of their own already
//! passed or a few ms away, as if their callers had spent it upstream.
//!
//! Once the hung requests hold every worker, the batch stalls; the run's
//! deadline ends it. Then every request id is put in one class, from the
//! stream's outcomes and the source's rest: completed, late by its own
//! deadline, late at the run's deadline (the retry list), cancelled at the
//! run's deadline (uncertain: the server's journal says whether it applied it
//! anyway), never pulled. The journal is read once the server has closed every
//! connection the client opened, when no handler can apply anything more.
//!
//! ```sh
//! cargo run --release -p real --bin deadline            # 1,000 requests
//! cargo run --release -p real --bin deadline -- 300     # or BB_REAL_SIZE=300
//! ```
//!
//! It needs at least 15 requests (the first that hangs is the 15th); from
//! about 170 on, some are never pulled. It exits non-zero if a check fails:
//! every request id in exactly one class; none whose caller had given up
//! before the batch started; no request late or never pulled applied by the
//! server; every completed one applied exactly once, and answered as
//! applied; the stream's stats agree with the classes; the stream ended at the
//! run's deadline, within `END_TOLERANCE`.
//!
//! Here the run and its checks; beside it the plan of what each request
//! meets (`plan.rs`), the server (`server.rs`), the client (`client.rs`) and
//! the reconciliation (`reconcile.rs`).

mod client;
mod plan;
mod reconcile;
mod server;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Deadline, TokioTimer};
use futures::channel::mpsc::unbounded;
use futures::{StreamExt, stream};
use real::Checks;

use client::Client;
use plan::{AMPLE, Caller, PASSED_BY, TIGHT, Work, caller, request_deadline, work};
use reconcile::{Classes, check_classes, check_journal, print_classes};
use server::{Journal, start_server};

/// Requests running at once.
const WORKERS: usize = 8;
/// Requests the adapter lines up ahead of the workers: those still waiting at
/// the run's deadline come back late, to retry.
const WAITING: usize = 16;
/// The run's deadline, after the batch starts: long enough for the batch to
/// reach its stall (every worker on a hung request) well before it, at the
/// default size, so that which request ends in which class is the same in
/// every run.
const RUN_BUDGET: Duration = Duration::from_millis(1_000);
/// How long after the run's deadline the stream may end: the timer's
/// resolution (1 ms for tokio) and the scheduling of the woken task.
const END_TOLERANCE: Duration = Duration::from_millis(50);
/// How long the server may take to close every connection the client opened,
/// once the stream has ended (it takes well under a millisecond: the
/// cancelled requests' connections are closed by the client at the deadline).
const SETTLE_LIMIT: Duration = Duration::from_secs(5);
/// How long a hung handler would hang: far past the run's deadline.
const HUNG: Duration = Duration::from_secs(30);
/// Example ids printed per class.
const EXAMPLES: usize = 6;

#[tokio::main]
async fn main() -> ExitCode {
    let requests = u32::try_from(real::size(1_000)).expect("at most u32::MAX requests");
    // A request that hangs, and whose caller waits: started once pulled.
    let first_hung = (0..)
        .find(|&id| {
            matches!(work(id), Work::HungBeforeWrite | Work::HungAfterWrite)
                && caller(id) == Caller::Ample
        })
        .expect("the plan hangs some requests");
    assert!(
        requests > first_hung,
        "at least {} requests: the first that hangs is {first_hung}, and without one the run ends \
         before its deadline, with nothing to reconcile",
        first_hung + 1
    );
    let journal = Arc::new(Journal::default());
    let (closed_tx, mut closed_rx) = unbounded();
    let addr = start_server(Arc::clone(&journal), closed_tx).await;
    let client = Client {
        addr,
        opened: Arc::default(),
    };

    println!(
        "deadline: {requests} requests to a hyper 1 server on {addr}, one connection each, through \
         bounded({WORKERS}, {WAITING}), unordered"
    );
    println!(
        "  the server: one write a request, after 2-8 ms (1 in 8: 40-80 ms); 1 in 40 hangs {} s \
         before its write, 1 in 40 hangs {} s after it",
        HUNG.as_secs(),
        HUNG.as_secs()
    );
    println!(
        "  requests' own deadlines: 1 in 25 passed {} ms before the batch started, 1 in 25 {} ms \
         after the request is pulled, the rest {} s after it",
        PASSED_BY.as_millis(),
        TIGHT.as_millis(),
        AMPLE.as_secs()
    );
    println!(
        "  the run's deadline: {} ms after the batch starts",
        RUN_BUDGET.as_millis()
    );

    let start = Instant::now();
    let run_deadline = start + RUN_BUDGET;
    // The stream borrows the ids; what it never pulled is left in them.
    let mut ids = 0..requests;
    // Unordered: the reconciliation is by id, so order buys nothing, and
    // `.ordered(..)` would hold every answer behind a hung request until its
    // window filled, stalling the batch at the first hung request instead of
    // the eighth.
    let mut outcomes = stream::iter(&mut ids)
        .map(|id| Deadline::new(request_deadline(id, start, Instant::now()), client.call(id)))
        .bounded(WORKERS, WAITING)
        .item_deadlines()
        .timer(TokioTimer)
        .deadline(run_deadline);
    let mut classes = Classes::default();
    let mut last_answer: Option<Instant> = None;
    while let Some(outcome) = outcomes.next().await {
        if outcome.is_ok() {
            last_answer = Some(Instant::now());
        }
        classes.record(outcome, run_deadline);
    }
    let ended = Instant::now();
    let stats = outcomes.stats();
    drop(outcomes);
    classes.never_pulled = ids.collect();

    // The client has closed every connection it opened (the completed
    // requests' after their answer, the cancelled ones' when the stream
    // dropped them); once the server has seen each closed, no handler of
    // this run is left, and its journal is final.
    let settled = client.wait_server_closed(&mut closed_rx).await;
    let settled_in = ended.elapsed();
    let applied = journal.applied();

    let mut checks = Checks::default();
    print_classes(&classes, &applied);
    println!(
        "the run: the last answer came {}; the deadline at {} ms; the stream ended {}",
        match last_answer {
            Some(last) => format!(
                "{:.1} ms after the start",
                (last - start).as_secs_f64() * 1e3
            ),
            None => "never".to_string(),
        },
        RUN_BUDGET.as_millis(),
        after(ended, run_deadline),
    );
    println!(
        "  the source had ended by the deadline: {}; the server closed every connection {:.1} ms \
         after the stream ended ({} connections)",
        classes
            .source_ended
            .map_or("-".to_string(), |ended| ended.to_string()),
        settled_in.as_secs_f64() * 1e3,
        client.opened.lock().expect("not poisoned").len()
    );
    println!(
        "stats: pulled {}, completed {}, late {}, cancelled {}, deadline_passed {}, peak_active {}, \
         peak_waiting {}",
        stats.pulled,
        stats.completed,
        stats.late,
        stats.cancelled,
        stats.deadline_passed,
        stats.peak_active,
        stats.peak_waiting
    );

    checks.check(
        "the server closed every connection the client opened",
        settled,
        || {
            format!(
                "not within {} s of the stream's end",
                SETTLE_LIMIT.as_secs()
            )
        },
    );
    check_classes(&mut checks, &classes, requests);
    check_journal(&mut checks, &classes, &applied);
    let deadline_passed = classes.deadline_outcomes == 1;
    let late = (classes.late_own.len() + classes.late_run.len()) as u64;
    checks.check(
        "stats agree: completed, late, cancelled, deadline_passed, pulled",
        stats.completed == classes.completed.len() as u64
            && stats.late == late
            && stats.cancelled == classes.cancelled.len() as u64
            && stats.deadline_passed == deadline_passed
            && stats.pulled == u64::from(requests) - classes.never_pulled.len() as u64,
        || format!("{stats:?}"),
    );
    checks.check(
        &format!("budgets held: at most {WORKERS} active, {WAITING} waiting"),
        stats.peak_active <= WORKERS && stats.peak_waiting <= WAITING,
        || format!("{stats:?}"),
    );
    let delay = ended.checked_duration_since(run_deadline);
    checks.check(
        &format!(
            "the stream ended at the run's deadline, at most {} ms after it",
            END_TOLERANCE.as_millis()
        ),
        deadline_passed && delay.is_some_and(|delay| delay <= END_TOLERANCE),
        || format!("it ended {}", after(ended, run_deadline)),
    );
    checks.report()
}

/// `at` as a delay after `deadline`, or before it.
fn after(at: Instant, deadline: Instant) -> String {
    match at.checked_duration_since(deadline) {
        Some(delay) => format!("{:.2} ms after it", delay.as_secs_f64() * 1e3),
        None => format!("{:.2} ms BEFORE it", (deadline - at).as_secs_f64() * 1e3),
    }
}
