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

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt::Display;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Deadline, TokioTimer, Unfinished};
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::{StreamExt, stream};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HOST;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use real::Checks;
use tokio::net::{TcpListener, TcpStream};

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

// ---------------------------------------------------------------- the plan

/// Spreads consecutive ids over the plan (Knuth's multiplicative hash), the
/// same in every run.
fn scattered(id: u32, multiplier: u32) -> u32 {
    id.wrapping_mul(multiplier) >> 16
}

/// What the server's handler does for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Work {
    /// The write after 2-8 ms.
    Quick,
    /// The write after 40-80 ms.
    Slow,
    /// Waits `HUNG` for a lock, then writes.
    HungBeforeWrite,
    /// Writes at once, then waits `HUNG` for a replica before answering.
    HungAfterWrite,
}

fn work(id: u32) -> Work {
    match scattered(id, 2_654_435_761) % 40 {
        0 => Work::HungBeforeWrite,
        1 => Work::HungAfterWrite,
        2..=6 => Work::Slow,
        _ => Work::Quick,
    }
}

/// How long the handler takes before its write, and after it.
fn handling_time(id: u32) -> (Duration, Duration) {
    let spread = u64::from(scattered(id, 2_654_435_761) / 40);
    match work(id) {
        Work::Quick => (Duration::from_millis(2 + spread % 7), Duration::ZERO),
        Work::Slow => (Duration::from_millis(40 + spread % 41), Duration::ZERO),
        Work::HungBeforeWrite => (HUNG, Duration::ZERO),
        Work::HungAfterWrite => (Duration::from_millis(1), HUNG),
    }
}

/// A passed deadline: its caller gave up this long before the batch started.
const PASSED_BY: Duration = Duration::from_millis(20);
/// A tight deadline: what is left of it when the request is pulled.
const TIGHT: Duration = Duration::from_millis(3);
/// An ample deadline: past the run's.
const AMPLE: Duration = Duration::from_secs(5);

/// The deadline request `id` brings, pulled at `pulled` in a batch that
/// started at `start`: an end-to-end deadline of which its caller spent all
/// (1 in 25), most (1 in 25), or little.
fn request_deadline(id: u32, start: Instant, pulled: Instant) -> Instant {
    match caller(id) {
        Caller::GaveUp => start - PASSED_BY,
        Caller::Hurried => pulled + TIGHT,
        Caller::Ample => pulled + AMPLE,
    }
}

/// How much of its deadline request `id`'s caller has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Caller {
    /// None: it gave up before the batch started.
    GaveUp,
    /// `TIGHT`, from the pull on.
    Hurried,
    /// `AMPLE`, from the pull on.
    Ample,
}

fn caller(id: u32) -> Caller {
    match scattered(id, 2_246_822_519) % 25 {
        0 => Caller::GaveUp,
        1 => Caller::Hurried,
        _ => Caller::Ample,
    }
}

// ---------------------------------------------------------------- the server

/// The server's own record of the writes it applied: a request id per write,
/// in the order applied.
#[derive(Default)]
struct Journal(Mutex<Vec<u32>>);

impl Journal {
    fn apply(&self, id: u32) {
        self.0.lock().expect("not poisoned").push(id);
    }

    /// How many times the server applied each id.
    fn applied(&self) -> HashMap<u32, u32> {
        let mut applied = HashMap::new();
        for &id in self.0.lock().expect("not poisoned").iter() {
            *applied.entry(id).or_default() += 1;
        }
        applied
    }
}

/// Starts the server on an ephemeral port of 127.0.0.1; it runs until the
/// program ends. `POST /write/{id}` applies the write for `id` and answers
/// `applied {id}`. Each connection, once closed (and every handler on it done
/// or dropped), is reported on `closed` by its peer's address.
async fn start_server(journal: Arc<Journal>, closed: UnboundedSender<SocketAddr>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port on 127.0.0.1");
    let addr = listener.local_addr().expect("the listener's address");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, peer)) = listener.accept().await else {
                continue;
            };
            tcp.set_nodelay(true).expect("TCP_NODELAY");
            let journal = Arc::clone(&journal);
            let closed = closed.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request| handle(Arc::clone(&journal), request));
                // A client that goes away mid-request (cancelled at the
                // deadline) ends the connection with an error, and hyper
                // drops the handler: not ours to report.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
                // The receiver may be gone once the program is done with it.
                let _ = closed.unbounded_send(peer);
            });
        }
    });
    addr
}

async fn handle(
    journal: Arc<Journal>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let Some(id) = route(request.method(), request.uri().path()) else {
        let mut missing = Response::new(Full::new(Bytes::from_static(b"no such route")));
        *missing.status_mut() = StatusCode::NOT_FOUND;
        return Ok(missing);
    };
    let (before_write, after_write) = handling_time(id);
    tokio::time::sleep(before_write).await; // the handler's own work, or a lock it waits for
    journal.apply(id);
    tokio::time::sleep(after_write).await; // a replica's acknowledgement
    Ok(Response::new(Full::new(Bytes::from(format!(
        "applied {id}"
    )))))
}

fn route(method: &Method, path: &str) -> Option<u32> {
    let id = path.strip_prefix("/write/")?;
    (method == Method::POST).then(|| id.parse().ok())?
}

// ---------------------------------------------------------------- the client

/// The client: where to send, and the local address of every connection it
/// opened, so that it can tell when the server has seen each one closed.
struct Client {
    addr: SocketAddr,
    opened: Arc<Mutex<Vec<SocketAddr>>>,
}

#[derive(Debug)]
struct Answer {
    id: u32,
    status: StatusCode,
}

#[derive(Debug)]
enum Failure {
    /// The connection, the request or its body failed on the way.
    Transport { id: u32, error: String },
    /// Not the body the server sends for this id.
    WrongBody { id: u32, body: String },
}

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Transport { id, error } => write!(f, "request {id}: {error}"),
            Failure::WrongBody { id, body } => {
                write!(f, "request {id}: the body {body:?} is not its own")
            }
        }
    }
}

/// A request as the stream holds it: the call, and the request's id beside
/// it, so that a request handed back unstarted (late) says which it was.
struct Call {
    id: u32,
    exchange: Pin<Box<dyn Future<Output = Result<Answer, Failure>> + Send>>,
}

impl Future for Call {
    type Output = Result<Answer, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.exchange.as_mut().poll(cx)
    }
}

impl Client {
    fn call(&self, id: u32) -> Call {
        Call {
            id,
            exchange: Box::pin(post_write(self.addr, Arc::clone(&self.opened), id)),
        }
    }

    /// Waits until the server has reported closed every connection the
    /// client opened (by address and count: a port may be reused); `false`
    /// if that takes longer than `SETTLE_LIMIT`.
    async fn wait_server_closed(&self, closed: &mut UnboundedReceiver<SocketAddr>) -> bool {
        let mut open: HashMap<SocketAddr, i64> = HashMap::new();
        for &addr in self.opened.lock().expect("not poisoned").iter() {
            *open.entry(addr).or_default() += 1;
        }
        let all_closed = async {
            // Connections the client gave up on before they were
            // established are reported too, and count below zero.
            while open.values().any(|&count| count > 0) {
                let Some(addr) = closed.next().await else {
                    return false;
                };
                *open.entry(addr).or_default() -= 1;
            }
            true
        };
        tokio::time::timeout(SETTLE_LIMIT, all_closed)
            .await
            .unwrap_or(false)
    }
}

/// One POST on a connection of its own, its answer read to the end. The
/// connection is driven inside this future rather than on a task of its own:
/// dropping the future (a cancellation at the run's deadline) closes the
/// socket at once, and the server, seeing it closed mid-request, drops the
/// handler wherever it is.
async fn post_write(
    addr: SocketAddr,
    opened: Arc<Mutex<Vec<SocketAddr>>>,
    id: u32,
) -> Result<Answer, Failure> {
    let transport = |error: &dyn Display| Failure::Transport {
        id,
        error: error.to_string(),
    };
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|error| transport(&error))?;
    tcp.set_nodelay(true).map_err(|error| transport(&error))?;
    // Recorded before a byte of the request is written: every connection
    // that may carry a request is one the reconciliation waits for.
    let local = tcp.local_addr().map_err(|error| transport(&error))?;
    opened.lock().expect("not poisoned").push(local);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|error| transport(&error))?;
    let request = Request::post(format!("/write/{id}"))
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .expect("a valid request");
    let exchange = async move {
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        // `sender` is dropped here: the connection closes once idle.
        Ok::<_, hyper::Error>((status, body))
    };
    let ((status, body), ()) =
        tokio::try_join!(exchange, connection).map_err(|error| transport(&error))?;
    if body != format!("applied {id}").as_bytes() {
        let body = String::from_utf8_lossy(&body).into_owned();
        return Err(Failure::WrongBody { id, body });
    }
    Ok(Answer { id, status })
}

// ---------------------------------------------------------- reconciliation

/// Every request of the run, by what became of it.
#[derive(Default)]
struct Classes {
    /// Outputs the stream yielded: answers, or failures on the way.
    completed: Vec<Result<Answer, Failure>>,
    /// Never started: their own deadline had passed when a worker picked
    /// them up. Never sent.
    late_own: Vec<u32>,
    /// Never started: still waiting at the run's deadline. Never sent.
    late_run: Vec<LateAtRun>,
    /// Started, and dropped at the run's deadline: sent, or on the way, or
    /// not yet; the server's journal says whether it applied them.
    cancelled: Vec<u32>,
    /// What the source still held: never pulled.
    never_pulled: Vec<u32>,
    /// `Unfinished::Deadline` outcomes (one expected, last).
    deadline_outcomes: usize,
    /// Outcomes after the deadline's, counted once per deadline outcome
    /// before them (none expected: it is the last).
    after_deadline: usize,
    /// Whether the source had ended by the deadline, as its outcome says.
    source_ended: Option<bool>,
    /// Outcomes of another kind (none expected: no `max_wait`, no `shed`).
    other: Vec<String>,
    /// Late requests whose input position is not their id.
    positions_off: usize,
}

struct LateAtRun {
    id: u32,
    /// Its own deadline had passed by the run's too: not worth retrying.
    caller_gave_up: bool,
}

type Outcome = Result<Result<Answer, Failure>, Unfinished<Deadline<Call>>>;

impl Classes {
    /// Puts the request of one outcome of a run with the deadline
    /// `run_deadline` in its class.
    fn record(&mut self, outcome: Outcome, run_deadline: Instant) {
        self.after_deadline += self.deadline_outcomes;
        match outcome {
            Ok(answer) => self.completed.push(answer),
            Err(Unfinished::Late(late)) => {
                let position = late.position();
                let own = late.is_own();
                let request = late.into_inner();
                let own_deadline = request.deadline();
                let id = request.into_inner().id;
                self.positions_off += usize::from(u64::from(id) != position);
                if own {
                    self.late_own.push(id);
                } else {
                    // The run's deadline is reported for a request still
                    // waiting then, even if its own had passed earlier (that
                    // one is checked only at pickup): then its caller is
                    // gone, and a retry would answer no one.
                    self.late_run.push(LateAtRun {
                        id,
                        caller_gave_up: own_deadline <= run_deadline,
                    });
                }
            }
            Err(Unfinished::Cancelled(cancelled)) => {
                // A cancelled request comes back as its input position only;
                // the ids are pulled in order from 0, so the position is the
                // id (the late ones, which carry their id, check it).
                let id = u32::try_from(cancelled.position()).expect("a position below the count");
                self.cancelled.push(id);
            }
            Err(Unfinished::Deadline(end)) => {
                self.deadline_outcomes += 1;
                self.source_ended = Some(end.source_ended());
            }
            Err(other) => self.other.push(other.to_string()),
        }
    }

    fn completed_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.completed.iter().map(|outcome| match outcome {
            Ok(answer) => answer.id,
            Err(Failure::Transport { id, .. } | Failure::WrongBody { id, .. }) => *id,
        })
    }

    fn late_run_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.late_run.iter().map(|late| late.id)
    }

    fn retry(&self) -> Vec<u32> {
        let retry = self.late_run.iter().filter(|late| !late.caller_gave_up);
        retry.map(|late| late.id).collect()
    }
}

/// The first `EXAMPLES` ids, in order, and an ellipsis if there are more.
fn examples(ids: impl IntoIterator<Item = u32>) -> String {
    let mut ids: Vec<u32> = ids.into_iter().collect();
    ids.sort_unstable();
    let mut shown: Vec<String> = ids.iter().take(EXAMPLES).map(u32::to_string).collect();
    if ids.len() > EXAMPLES {
        shown.push("...".to_string());
    }
    if shown.is_empty() {
        "-".to_string()
    } else {
        shown.join(", ")
    }
}

fn print_classes(classes: &Classes, applied: &HashMap<u32, u32>) {
    let line = |name: &str, count: usize, ids: String| {
        println!("  {name:<32} {count:>6}   ids {ids}");
    };
    println!("reconciled, by request id:");
    line(
        "completed",
        classes.completed.len(),
        examples(classes.completed_ids()),
    );
    line(
        "late by its own deadline",
        classes.late_own.len(),
        examples(classes.late_own.iter().copied()),
    );
    let gave_up = classes
        .late_own
        .iter()
        .filter(|&&id| caller(id) == Caller::GaveUp)
        .count();
    println!(
        "    {gave_up} whose caller gave up before the batch, {} with {} ms left at the pull that \
         waited longer",
        classes.late_own.len() - gave_up,
        TIGHT.as_millis()
    );
    line(
        "late at the run's deadline",
        classes.late_run.len(),
        examples(classes.late_run_ids()),
    );
    let retry = classes.retry();
    println!(
        "    {} of them to retry (ids {}); {} past their own deadline too, their callers gone",
        retry.len(),
        examples(retry.iter().copied()),
        classes.late_run.len() - retry.len()
    );
    line(
        "cancelled at the run's deadline",
        classes.cancelled.len(),
        examples(classes.cancelled.iter().copied()),
    );
    let was_applied = |id: &&u32| applied.contains_key(id);
    let (done, undone): (Vec<u32>, Vec<u32>) = classes.cancelled.iter().partition(was_applied);
    println!(
        "    the server's journal: {} applied anyway (ids {}), {} not applied (ids {})",
        done.len(),
        examples(done.iter().copied()),
        undone.len(),
        examples(undone.iter().copied())
    );
    for (kind, name) in [
        (Work::HungBeforeWrite, "hung before its write"),
        (Work::HungAfterWrite, "hung after its write"),
        (Work::Slow, "slow"),
        (Work::Quick, "quick"),
    ] {
        let of_kind: Vec<u32> = classes
            .cancelled
            .iter()
            .copied()
            .filter(|&id| work(id) == kind)
            .collect();
        if !of_kind.is_empty() {
            let applied = of_kind.iter().filter(|id| applied.contains_key(id)).count();
            println!(
                "      planned {name}: {} cancelled, {applied} applied",
                of_kind.len()
            );
        }
    }
    line(
        "never pulled",
        classes.never_pulled.len(),
        examples(classes.never_pulled.iter().copied()),
    );
}

fn check_classes(checks: &mut Checks, classes: &Classes, requests: u32) {
    let mut seen = vec![0u32; requests as usize];
    let mut strays = 0;
    let every_class = classes
        .completed_ids()
        .chain(classes.late_own.iter().copied())
        .chain(classes.late_run_ids())
        .chain(classes.cancelled.iter().copied())
        .chain(classes.never_pulled.iter().copied());
    for id in every_class {
        match seen.get_mut(id as usize) {
            Some(count) => *count += 1,
            None => strays += 1,
        }
    }
    let missing = seen.iter().filter(|&&count| count == 0).count();
    let twice = seen.iter().filter(|&&count| count > 1).count();
    checks.check(
        "every request id in exactly one class",
        missing == 0 && twice == 0 && strays == 0,
        || format!("{missing} in none, {twice} in more than one, {strays} unknown ids"),
    );
    let started_anyway: Vec<u32> = classes
        .completed_ids()
        .chain(classes.cancelled.iter().copied())
        .filter(|&id| caller(id) == Caller::GaveUp)
        .collect();
    checks.check(
        "no request whose caller gave up before the batch was started",
        started_anyway.is_empty(),
        || format!("ids {}", examples(started_anyway.iter().copied())),
    );
    checks.check(
        "late requests come back at their input position (their id)",
        classes.positions_off == 0,
        || format!("{} at another position", classes.positions_off),
    );
    checks.check(
        "one deadline outcome, the last; no outcome of another kind",
        classes.deadline_outcomes == 1 && classes.after_deadline == 0 && classes.other.is_empty(),
        || {
            format!(
                "{} deadline outcomes, {} outcomes after one; others: {:?}",
                classes.deadline_outcomes, classes.after_deadline, classes.other
            )
        },
    );
    let failures: Vec<&Failure> = classes
        .completed
        .iter()
        .filter_map(|outcome| outcome.as_ref().err())
        .collect();
    checks.check("no request failed on the way", failures.is_empty(), || {
        format!("{} failed, the first: {}", failures.len(), failures[0])
    });
    let not_ok = classes
        .completed
        .iter()
        .flatten()
        .filter(|answer| answer.status != StatusCode::OK)
        .count();
    checks.check("every answer 200", not_ok == 0, || {
        format!("{not_ok} answers with another status")
    });
}

fn check_journal(checks: &mut Checks, classes: &Classes, applied: &HashMap<u32, u32>) {
    let never_sent: Vec<u32> = classes
        .late_own
        .iter()
        .copied()
        .chain(classes.late_run_ids())
        .chain(classes.never_pulled.iter().copied())
        .filter(|id| applied.contains_key(id))
        .collect();
    checks.check(
        "no request late or never pulled applied by the server",
        never_sent.is_empty(),
        || {
            format!(
                "{} applied, ids {}",
                never_sent.len(),
                examples(never_sent.iter().copied())
            )
        },
    );
    let not_once: Vec<u32> = classes
        .completed_ids()
        .filter(|id| applied.get(id) != Some(&1))
        .collect();
    checks.check(
        "every completed request applied exactly once",
        not_once.is_empty(),
        || {
            format!(
                "{} not, ids {}",
                not_once.len(),
                examples(not_once.iter().copied())
            )
        },
    );
    let twice = classes
        .cancelled
        .iter()
        .filter(|id| applied.get(id).is_some_and(|&count| count > 1))
        .count();
    checks.check(
        "no cancelled request applied more than once",
        twice == 0,
        || format!("{twice} applied twice or more"),
    );
}
