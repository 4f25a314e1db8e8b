//! The crate in front of a real HTTP stack: a hyper 1 server started in this
//! program (127.0.0.1, an ephemeral port) whose handlers take a few ms and
//! answer some requests 429 or 503, and a hyper-util client that sends the
//! requests through `bounded`, `.ordered(..)`, `try_bounded` (failing fast on
//! the first 5xx) and `spawn_on`, each against its counterpart from `futures`
//! in the same run. Three rounds; the table shows the medians.
//!
//! ```sh
//! cargo run --release -p real --bin http            # 5,000 requests a run
//! cargo run --release -p real --bin http -- 500     # or BB_REAL_SIZE=500
//! ```
//!
//! It exits non-zero if a check fails: every request answered exactly once, in
//! order where the adapter promises it, with the status the server planned; no
//! more requests at the server at once than the workers budget; and after the
//! first 5xx, no more requests sent than were already pulled.

use std::convert::Infallible;
use std::fmt::Display;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Stats};
use futures::{Stream, StreamExt, TryStreamExt, stream};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use real::{Checks, comparison_header, comparison_line, median};

/// Requests running at once, in every adapter and in futures' counterparts.
const WORKERS: usize = 32;
/// Requests the adapter lines up ahead of the workers (futures has no such budget).
const WAITING: usize = 32;
/// Answers `.ordered(..)` may hold behind a slow one.
const WINDOW: usize = 128;
const ROUNDS: usize = 3;

#[tokio::main]
async fn main() -> ExitCode {
    let requests = u32::try_from(real::size(5_000)).expect("at most u32::MAX requests");
    let server = Arc::new(ServerCounts::default());
    let addr = start_server(Arc::clone(&server)).await;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let setup = Setup {
        client: Client::builder(TokioExecutor::new()).build(connector),
        addr,
        server,
        requests,
        outage_from: requests - requests / 10,
    };

    println!(
        "http: {requests} requests a run to a hyper 1 server on {addr}, through a hyper-util client, \
         {WORKERS} at a time"
    );
    println!(
        "  the server: handlers of 1-5 ms (1 in 50 takes 12 ms); 1 request in 40 answered 429, \
         1 in 125 answered 503"
    );
    println!(
        "  fail fast: an outage from request {} on (every answer 503); the run ends at the first 5xx",
        setup.outage_from
    );
    println!(
        "  {ROUNDS} rounds, adapter and futures alternating first; medians; ratio = adapter / futures"
    );

    let mut checks = Checks::default();
    let mut times: [[Vec<Duration>; 2]; 4] = Default::default();
    for round in 0..ROUNDS {
        let futures_first = round % 2 == 1;
        let pairs = [
            unordered(&setup, &mut checks, futures_first).await,
            ordered(&setup, &mut checks, futures_first).await,
            fail_fast(&setup, &mut checks, futures_first).await,
            spawned(&setup, &mut checks, futures_first).await,
        ];
        for (scenario, (ours, theirs)) in pairs.into_iter().enumerate() {
            times[scenario][0].push(ours);
            times[scenario][1].push(theirs);
        }
    }

    let (w, q) = (WORKERS, WAITING);
    let names = [
        (
            format!("bounded({w}, {q})"),
            format!("buffer_unordered({w})"),
        ),
        (
            format!("bounded({w}, {q}).ordered({WINDOW})"),
            format!("buffered({w})"),
        ),
        (
            format!("try_bounded({w}, {q})"),
            format!("try_buffer_unordered({w})"),
        ),
        (
            format!("bounded({w}, {q}).spawn_on(tokio)"),
            format!("tokio::spawn + buffer_unordered({w})"),
        ),
    ];
    println!("{}", comparison_header());
    for ((adapter, futures), [ours, theirs]) in names.iter().zip(times) {
        println!(
            "{}",
            comparison_line(adapter, futures, median(ours), median(theirs))
        );
    }
    checks.report()
}

// ---------------------------------------------------------------- the server

/// What the server saw during one run.
#[derive(Default)]
struct ServerCounts {
    received: AtomicU64,
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
}

/// Starts the server on an ephemeral port of 127.0.0.1; it runs until the
/// program ends. `/item/{id}` answers by the plan; `/outage/{from}/{id}` the
/// same, except 503 for every id from `from` on.
async fn start_server(counts: Arc<ServerCounts>) -> SocketAddr {
    real::serve(move |request| handle(Arc::clone(&counts), request), |_| {}).await
}

async fn handle(
    counts: Arc<ServerCounts>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let _in_flight = InFlight::enter(&counts);
    let Some((id, outage_from)) = route(request.uri().path()) else {
        let mut missing = Response::new(Full::new(Bytes::from_static(b"no such route")));
        *missing.status_mut() = StatusCode::NOT_FOUND;
        return Ok(missing);
    };
    tokio::time::sleep(handling_time(id)).await; // the handler's own I/O
    let mut response = Response::new(Full::new(Bytes::from(format!("item {id}"))));
    *response.status_mut() = planned_status(id, outage_from);
    Ok(response)
}

/// Counts a handler while it runs, also when hyper drops it because its client
/// went away (a fail-fast run cancels requests).
struct InFlight<'a>(&'a ServerCounts);

impl<'a> InFlight<'a> {
    fn enter(counts: &'a ServerCounts) -> Self {
        counts.received.fetch_add(1, Relaxed);
        let now = counts.in_flight.fetch_add(1, Relaxed) + 1;
        counts.peak_in_flight.fetch_max(now, Relaxed);
        Self(counts)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

fn route(path: &str) -> Option<(u32, Option<u32>)> {
    let mut parts = path.strip_prefix('/')?.split('/');
    match (parts.next()?, parts.next(), parts.next(), parts.next()) {
        ("item", Some(id), None, None) => Some((id.parse().ok()?, None)),
        ("outage", Some(from), Some(id), None) => {
            Some((id.parse().ok()?, Some(from.parse().ok()?)))
        }
        _ => None,
    }
}

/// The plan, the same in every run: 1 to 5 ms, and 12 ms for 1 request in 50,
/// scattered over the ids.
fn handling_time(id: u32) -> Duration {
    let scattered = id.wrapping_mul(2_654_435_761) >> 16; // Knuth's multiplicative hash
    let ms = if scattered % 50 == 0 {
        12
    } else {
        1 + scattered % 5
    };
    Duration::from_millis(u64::from(ms))
}

fn planned_status(id: u32, outage_from: Option<u32>) -> StatusCode {
    let in_outage = outage_from.is_some_and(|from| id >= from);
    if in_outage || (outage_from.is_none() && id % 125 == 7) {
        StatusCode::SERVICE_UNAVAILABLE
    } else if id % 40 == 3 {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::OK
    }
}

// ---------------------------------------------------------------- the client

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

fn item_uri(addr: SocketAddr, id: u32) -> Uri {
    format!("http://{addr}/item/{id}")
        .parse()
        .expect("a valid URI")
}

struct Setup {
    client: HttpClient,
    addr: SocketAddr,
    server: Arc<ServerCounts>,
    requests: u32,
    outage_from: u32,
}

impl Setup {
    fn item(&self, id: u32) -> Uri {
        item_uri(self.addr, id)
    }

    fn in_outage(&self, id: u32) -> Uri {
        format!("http://{}/outage/{}/{id}", self.addr, self.outage_from)
            .parse()
            .expect("a valid URI")
    }

    /// Waits for the last run's cancelled requests to leave the server, then
    /// zeroes its counts for the next run.
    async fn reset_server(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.server.in_flight.load(Relaxed) > 0 {
            assert!(
                Instant::now() < deadline,
                "the server still runs handlers 10 s after a run ended"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.server.received.store(0, Relaxed);
        self.server.peak_in_flight.store(0, Relaxed);
    }
}

#[derive(Debug)]
struct Answer {
    id: u32,
    status: StatusCode,
}

#[derive(Debug)]
enum Failure {
    /// A 5xx answer, in the run that fails fast on one.
    ServerError { id: u32, status: StatusCode },
    /// The request or its body failed on the way.
    Transport { id: u32, error: String },
    /// Not the body the server sends for this id.
    WrongBody { id: u32, body: String },
}

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::ServerError { id, status } => {
                write!(f, "request {id}: the server answered {status}")
            }
            Failure::Transport { id, error } => write!(f, "request {id}: {error}"),
            Failure::WrongBody { id, body } => {
                write!(f, "request {id}: the body {body:?} is another request's")
            }
        }
    }
}

/// One GET, its body read to the end (so that its connection goes back to the pool).
async fn get(client: HttpClient, uri: Uri, id: u32) -> Result<Answer, Failure> {
    let transport = |error: &dyn Display| Failure::Transport {
        id,
        error: error.to_string(),
    };
    let response = client.get(uri).await.map_err(|error| transport(&error))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| transport(&error))?
        .to_bytes();
    if body != format!("item {id}").as_bytes() {
        let body = String::from_utf8_lossy(&body).into_owned();
        return Err(Failure::WrongBody { id, body });
    }
    Ok(Answer { id, status })
}

/// A GET for which a 5xx answer is an error.
async fn get_failing_on_5xx(client: HttpClient, uri: Uri, id: u32) -> Result<Answer, Failure> {
    let answer = get(client, uri, id).await?;
    if answer.status.is_server_error() {
        return Err(Failure::ServerError {
            id,
            status: answer.status,
        });
    }
    Ok(answer)
}

// ------------------------------------------------------------- the scenarios

#[derive(Clone, Copy)]
enum Side {
    Adapter,
    Futures,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Adapter => "adapter",
            Side::Futures => "futures",
        }
    }
}

/// Runs both sides of a comparison, in the order given, and checks each as
/// soon as it ends (before the next run resets the server's counts).
async fn in_turn<T>(
    ours: impl Future<Output = T>,
    theirs: impl Future<Output = T>,
    futures_first: bool,
    mut check: impl FnMut(Side, &T),
) -> (T, T) {
    if futures_first {
        let theirs = theirs.await;
        check(Side::Futures, &theirs);
        let ours = ours.await;
        check(Side::Adapter, &ours);
        (ours, theirs)
    } else {
        let ours = ours.await;
        check(Side::Adapter, &ours);
        let theirs = theirs.await;
        check(Side::Futures, &theirs);
        (ours, theirs)
    }
}

/// Every answer of a run that goes to the end.
struct Run {
    elapsed: Duration,
    answers: Vec<Result<Answer, Failure>>,
    stats: Option<Stats>,
}

async fn drain<S>(answers: &mut S) -> Vec<Result<Answer, Failure>>
where
    S: Stream<Item = Result<Answer, Failure>> + Unpin,
{
    let mut all = Vec::new();
    while let Some(answer) = answers.next().await {
        all.push(answer);
    }
    all
}

/// `bounded` against `buffer_unordered`: answers as they come.
async fn unordered(
    setup: &Setup,
    checks: &mut Checks,
    futures_first: bool,
) -> (Duration, Duration) {
    let ours = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| get(setup.client.clone(), setup.item(id), id))
            .bounded(WORKERS, WAITING);
        let answers_seen = drain(&mut answers).await;
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: Some(answers.stats()),
        }
    };
    let theirs = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| get(setup.client.clone(), setup.item(id), id))
            .buffer_unordered(WORKERS);
        let answers_seen = drain(&mut answers).await;
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: None,
        }
    };
    let check = |side, run: &Run| check_run(setup, checks, side, "unordered", run, false);
    let (ours, theirs) = in_turn(ours, theirs, futures_first, check).await;
    (ours.elapsed, theirs.elapsed)
}

/// `.ordered(..)` against `buffered`: answers in request order. (The README's
/// first snippet is this one.)
async fn ordered(setup: &Setup, checks: &mut Checks, futures_first: bool) -> (Duration, Duration) {
    let ours = async {
        setup.reset_server().await;
        let start = Instant::now();
        let client = &setup.client;
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| get(client.clone(), setup.item(id), id))
            .bounded(WORKERS, WAITING) // 32 requests in flight, 32 more lined up
            .ordered(WINDOW); // answers in request order, at most 128 held
        let mut answers_seen = Vec::new();
        while let Some(answer) = answers.next().await {
            answers_seen.push(answer);
        }
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: Some(answers.stats()),
        }
    };
    let theirs = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| get(setup.client.clone(), setup.item(id), id))
            .buffered(WORKERS);
        let answers_seen = drain(&mut answers).await;
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: None,
        }
    };
    let check = |side, run: &Run| check_run(setup, checks, side, "ordered", run, true);
    let (ours, theirs) = in_turn(ours, theirs, futures_first, check).await;
    (ours.elapsed, theirs.elapsed)
}

/// `bounded(..).spawn_on(..)` against the usual spawned form: a task per
/// request, `buffer_unordered` over their join handles.
async fn spawned(setup: &Setup, checks: &mut Checks, futures_first: bool) -> (Duration, Duration) {
    let ours = async {
        setup.reset_server().await;
        let start = Instant::now();
        // The source moves into the worker tasks: it owns what it uses.
        let (client, addr) = (setup.client.clone(), setup.addr);
        let mut answers = stream::iter(0..setup.requests)
            .map(move |id| get(client.clone(), item_uri(addr, id), id))
            .bounded(WORKERS, WAITING)
            .spawn_on(tokio::runtime::Handle::current());
        let answers_seen = drain(&mut answers).await;
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: Some(answers.stats()),
        }
    };
    let theirs = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| tokio::spawn(get(setup.client.clone(), setup.item(id), id)))
            .buffer_unordered(WORKERS)
            .map(|joined| joined.expect("a request task does not panic"));
        let answers_seen = drain(&mut answers).await;
        Run {
            elapsed: start.elapsed(),
            answers: answers_seen,
            stats: None,
        }
    };
    let check = |side, run: &Run| check_run(setup, checks, side, "spawned", run, false);
    let (ours, theirs) = in_turn(ours, theirs, futures_first, check).await;
    (ours.elapsed, theirs.elapsed)
}

fn check_run(
    setup: &Setup,
    checks: &mut Checks,
    side: Side,
    scenario: &str,
    run: &Run,
    in_order: bool,
) {
    let requests = setup.requests;
    let name = |what: &str| format!("{}, {scenario}: {what}", side.name());

    let failures: Vec<&Failure> = run
        .answers
        .iter()
        .filter_map(|a| a.as_ref().err())
        .collect();
    checks.check(
        &name("no request failed on the way"),
        failures.is_empty(),
        || format!("{} failed, the first: {}", failures.len(), failures[0]),
    );
    let ids: Vec<u32> = run
        .answers
        .iter()
        .flatten()
        .map(|answer| answer.id)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    checks.check(
        &name("every request answered exactly once"),
        sorted.iter().copied().eq(0..requests),
        || format!("{} answers for {requests} requests", ids.len()),
    );
    if in_order {
        checks.check(
            &name("answers in request order"),
            ids.iter().copied().eq(0..requests),
            || {
                let first = ids.windows(2).position(|pair| pair[0] > pair[1]);
                format!("first out of order after position {first:?}")
            },
        );
    }
    let unplanned = run
        .answers
        .iter()
        .flatten()
        .filter(|answer| answer.status != planned_status(answer.id, None))
        .count();
    checks.check(
        &name("every status as the server planned (200, 429 or 503)"),
        unplanned == 0,
        || format!("{unplanned} answers with another status"),
    );
    let received = setup.server.received.load(Relaxed);
    let peak = setup.server.peak_in_flight.load(Relaxed);
    checks.observe(&name("most requests at the server at once"), peak as u64);
    checks.check(
        &name(&format!(
            "the server got each request once, at most {WORKERS} at once"
        )),
        received == u64::from(requests) && peak <= WORKERS,
        || format!("received {received}, at most {peak} at once"),
    );
    if let Some(stats) = run.stats {
        checks.check(
            &name(&format!(
                "stats: all completed, at most {WORKERS} active and {WAITING} waiting"
            )),
            stats.completed == u64::from(requests)
                && stats.peak_active <= WORKERS
                && stats.peak_waiting <= WAITING,
            || format!("{stats:?}"),
        );
    }
}

/// A run that ends at the first 5xx.
struct FailFastRun {
    elapsed: Duration,
    ok: Vec<Answer>,
    error: Option<Failure>,
    stats: Option<Stats>,
}

/// `try_bounded` against `try_buffer_unordered`: an outage starts at
/// `outage_from`, and the run ends at the first 5xx.
async fn fail_fast(
    setup: &Setup,
    checks: &mut Checks,
    futures_first: bool,
) -> (Duration, Duration) {
    let ours = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| {
                let uri = setup.in_outage(id);
                Ok::<_, Failure>(get_failing_on_5xx(setup.client.clone(), uri, id))
            })
            .try_bounded(WORKERS, WAITING);
        let (ok, error) = until_error(&mut answers).await;
        let elapsed = start.elapsed();
        let stats = answers.stats();
        drop(answers);
        settle().await;
        FailFastRun {
            elapsed,
            ok,
            error,
            stats: Some(stats),
        }
    };
    let theirs = async {
        setup.reset_server().await;
        let start = Instant::now();
        let mut answers = stream::iter(0..setup.requests)
            .map(|id| {
                let uri = setup.in_outage(id);
                Ok::<_, Failure>(get_failing_on_5xx(setup.client.clone(), uri, id))
            })
            .try_buffer_unordered(WORKERS);
        let (ok, error) = until_error(&mut answers).await;
        let elapsed = start.elapsed();
        drop(answers); // cancels the requests still running
        settle().await;
        FailFastRun {
            elapsed,
            ok,
            error,
            stats: None,
        }
    };
    let check = |side, run: &FailFastRun| check_fail_fast(setup, checks, side, run);
    let (ours, theirs) = in_turn(ours, theirs, futures_first, check).await;
    (ours.elapsed, theirs.elapsed)
}

/// A request cancelled at the error may still reach the server (its bytes were
/// on the way): waiting longer than a handler takes (at most 12 ms) lets the
/// count of requests sent include those too.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn until_error<S>(answers: &mut S) -> (Vec<Answer>, Option<Failure>)
where
    S: Stream<Item = Result<Answer, Failure>> + Unpin,
{
    let mut ok = Vec::new();
    loop {
        match answers.try_next().await {
            Ok(Some(answer)) => ok.push(answer),
            Ok(None) => return (ok, None),
            Err(failure) => return (ok, Some(failure)),
        }
    }
}

fn check_fail_fast(setup: &Setup, checks: &mut Checks, side: Side, run: &FailFastRun) {
    let name = |what: &str| format!("{}, fail fast: {what}", side.name());
    let from = setup.outage_from;
    let ends_in_outage = matches!(
        run.error,
        Some(Failure::ServerError { id, status })
            if id >= from && status == StatusCode::SERVICE_UNAVAILABLE
    );
    checks.check(
        &name("ends with a 503 of the outage"),
        ends_in_outage,
        || match &run.error {
            Some(failure) => failure.to_string(),
            None => "no error: the stream ended".to_string(),
        },
    );
    let before_outage = run
        .ok
        .iter()
        .all(|answer| answer.id < from && answer.status == planned_status(answer.id, Some(from)));
    checks.check(
        &name("every answer before it from before the outage, 200 or 429 as planned"),
        before_outage,
        || format!("{} answers", run.ok.len()),
    );
    // Before the error every completed item is from before the outage; any
    // other item pulled is in flight, and futures' buffer holds at most
    // `WORKERS` of them, the adapter `WORKERS + WAITING`.
    let in_flight = match side {
        Side::Adapter => WORKERS + WAITING,
        Side::Futures => WORKERS,
    };
    let bound = u64::from(from) + in_flight as u64;
    let received = setup.server.received.load(Relaxed);
    checks.observe(
        &name(&format!("requests sent (the outage starts at {from})")),
        received,
    );
    checks.check(
        &name(&format!(
            "at most {in_flight} requests sent from the outage start on (the in-flight budget)"
        )),
        received <= bound,
        || format!("the server got {received}, bound {bound}"),
    );
    if let Some(stats) = run.stats {
        checks.check(
            &name("stats: nothing running or waiting after the error"),
            stats.active == 0 && stats.waiting == 0,
            || format!("{stats:?}"),
        );
    }
}
