//! The adaptive limit in front of a real HTTP stack whose refusals do not
//! come from load (issue 34): a hyper 1 server started in this program
//! (127.0.0.1, an ephemeral port) whose handlers take 2 ms and answer 429 for
//! one request id in 97 and 503 for one in 211 whatever the load (another
//! tenant's quota, a flaky shard), and a hyper-util client that classifies
//! 429 and 503 as back-pressure, as the docs show. It runs the requests
//! through static limits and through `Aimd`, three rounds each, and prints
//! the medians side by side with the adaptive run's final limit, and each
//! run's mean time per request: where it rises with the limit while the
//! throughput still does too (client and server sharing a few cores), that
//! rise is what holds `Aimd` below the best static limit, since it reads a
//! queue from the run time.
//!
//! ```sh
//! cargo run --release -p real --bin http_adaptive            # 5,000 requests a run
//! cargo run --release -p real --bin http_adaptive -- 500     # or BB_REAL_SIZE=500
//! ```
//!
//! It exits non-zero if a check fails: every request answered exactly once,
//! with the status the server planned, and no more requests at the server at
//! once than the limit allows. The times are printed, not checked (timing is
//! for benchmarks): the adaptive run's against the best static limit's, and
//! the issue's aim of at most 1.2 times it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bounded_buffered::{Aimd, BoundedStreamExt};
use futures::{StreamExt, stream};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use real::{Checks, median};

/// The static limits run beside the adaptive one; the highest is its `max`.
const STATIC: [usize; 5] = [4, 8, 16, 32, 64];
/// Requests lined up ahead of the workers.
const WAITING: usize = 64;
const ROUNDS: usize = 3;
/// The issue's aim: the adaptive run within this of the best static limit.
const AIM: f64 = 1.2;

#[tokio::main]
async fn main() -> ExitCode {
    let requests = u32::try_from(real::size(5_000)).expect("at most u32::MAX requests");
    let server = Arc::new(InFlight::default());
    let addr = start_server(Arc::clone(&server)).await;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build(connector);
    let max = *STATIC.last().expect("static limits");

    println!(
        "http_adaptive: {requests} requests a run to a hyper 1 server on {addr}, through a \
         hyper-util client"
    );
    println!(
        "  the server: handlers of 2 ms; 1 request id in 97 answered 429, 1 in 211 answered 503, \
         whatever the load; the client takes both as back-pressure"
    );
    println!("  {ROUNDS} rounds of each run, in turn; medians");

    let mut checks = Checks::default();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); STATIC.len() + 1];
    let mut request_times: Vec<Vec<Duration>> = vec![Vec::new(); STATIC.len() + 1];
    let mut finals = Vec::new();
    for _ in 0..ROUNDS {
        for (index, &workers) in STATIC.iter().enumerate() {
            let run = run(&client, addr, &server, requests, Some(workers)).await;
            check(
                &mut checks,
                &format!("bounded({workers}, {WAITING})"),
                &run,
                workers,
                requests,
            );
            times[index].push(run.elapsed);
            request_times[index].push(run.mean_request);
        }
        let run = run(&client, addr, &server, requests, None).await;
        check(&mut checks, "adaptive", &run, max, requests);
        times[STATIC.len()].push(run.elapsed);
        request_times[STATIC.len()].push(run.mean_request);
        finals.push(run.final_limit);
        checks.observe("adaptive: the final workers limit", run.final_limit as u64);
    }

    let medians: Vec<Duration> = times.into_iter().map(median).collect();
    let request_medians: Vec<Duration> = request_times.into_iter().map(median).collect();
    let best = STATIC
        .iter()
        .zip(&medians)
        .min_by_key(|(_, time)| **time)
        .map(|(&workers, &time)| (workers, time))
        .expect("static limits");
    println!(
        "  {:<56} {:>10}   {:>13}   {:>12}",
        "run", "median", "/ best static", "per request"
    );
    for (index, &workers) in STATIC.iter().enumerate() {
        line(
            &format!("bounded({workers}, {WAITING})"),
            medians[index],
            best.1,
            request_medians[index],
        );
    }
    let adaptive = medians[STATIC.len()];
    line(
        &format!("bounded(1, {WAITING}).adaptive(Aimd::new(1, {max}), is_429_or_503)"),
        adaptive,
        best.1,
        request_medians[STATIC.len()],
    );
    let ratio = adaptive.as_secs_f64() / best.1.as_secs_f64();
    println!(
        "  adaptive: {ratio:.2} x the best static limit's time (bounded({}, {WAITING})); the aim \
         is at most {AIM}: {}; final workers limits {finals:?}",
        best.0,
        if ratio <= AIM {
            "within it"
        } else {
            "beyond it"
        },
    );
    checks.report()
}

/// One run's outcome.
struct Run {
    elapsed: Duration,
    /// The mean time of a request, from its first poll to its body read.
    mean_request: Duration,
    /// Each request's status, by id; `None` if never answered.
    statuses: Vec<Option<StatusCode>>,
    answered_twice: usize,
    failures: Vec<String>,
    peak_in_flight: usize,
    final_limit: usize,
}

/// All the requests through a static limit of `workers`, or the adaptive one.
async fn run(
    client: &HttpClient,
    addr: SocketAddr,
    server: &InFlight,
    requests: u32,
    workers: Option<usize>,
) -> Run {
    server.peak.store(0, Relaxed);
    let calls = stream::iter(0..requests).map(|id| get(client.clone(), addr, id));
    let started = Instant::now();
    let (answers, final_limit) = match workers {
        Some(workers) => (
            calls.bounded(workers, WAITING).collect::<Vec<_>>().await,
            workers,
        ),
        None => {
            let max = *STATIC.last().expect("static limits");
            let mut answers = calls.bounded(1, WAITING).adaptive(
                Aimd::new(1, max),
                |answer: &Result<Answer, String>| {
                    matches!(answer, Ok(answer) if answer.status == StatusCode::TOO_MANY_REQUESTS
                        || answer.status == StatusCode::SERVICE_UNAVAILABLE)
                },
            );
            let limits = answers.limits();
            let mut all = Vec::with_capacity(requests as usize);
            while let Some(answer) = answers.next().await {
                all.push(answer);
            }
            (all, limits.workers())
        }
    };
    let elapsed = started.elapsed();
    let mut statuses = vec![None; requests as usize];
    let mut answered_twice = 0;
    let mut failures = Vec::new();
    let mut took = Duration::ZERO;
    let mut timed = 0u32;
    for answer in answers {
        match answer {
            Ok(Answer { id, status, time }) => {
                took += time;
                timed += 1;
                let slot = &mut statuses[id as usize];
                answered_twice += usize::from(slot.is_some());
                *slot = Some(status);
            }
            Err(failure) => failures.push(failure),
        }
    }
    Run {
        elapsed,
        mean_request: took / timed.max(1),
        statuses,
        answered_twice,
        failures,
        peak_in_flight: server.peak.load(Relaxed),
        final_limit,
    }
}

fn check(checks: &mut Checks, name: &str, run: &Run, limit: usize, requests: u32) {
    checks.check(
        &format!("{name}: no transport failure"),
        run.failures.is_empty(),
        || {
            format!(
                "{} failures, the first: {}",
                run.failures.len(),
                run.failures[0]
            )
        },
    );
    let unanswered = run
        .statuses
        .iter()
        .filter(|status| status.is_none())
        .count();
    checks.check(
        &format!("{name}: every request answered exactly once"),
        unanswered == 0 && run.answered_twice == 0,
        || {
            format!(
                "{unanswered} of {requests} never answered, {} twice",
                run.answered_twice
            )
        },
    );
    let wrong = (0..requests)
        .filter(|&id| run.statuses[id as usize].is_some_and(|status| status != planned(id)))
        .count();
    checks.check(
        &format!("{name}: every status as the server planned (200, 429 or 503)"),
        wrong == 0,
        || format!("{wrong} answers with another status"),
    );
    checks.check(
        &format!("{name}: at most {limit} requests at the server at once"),
        run.peak_in_flight <= limit,
        || format!("{} at once", run.peak_in_flight),
    );
}

fn line(name: &str, time: Duration, best: Duration, per_request: Duration) {
    println!(
        "  {name:<56} {:>7.1} ms   {:>13.2}   {:>9.2} ms",
        time.as_secs_f64() * 1e3,
        time.as_secs_f64() / best.as_secs_f64(),
        per_request.as_secs_f64() * 1e3,
    );
}

// ---------------------------------------------------------------- the server

/// Handlers running now, and the most at once since the last reset.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

async fn start_server(counts: Arc<InFlight>) -> SocketAddr {
    real::serve(move |request| handle(Arc::clone(&counts), request), |_| {}).await
}

async fn handle(
    counts: Arc<InFlight>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let now = counts.now.fetch_add(1, Relaxed) + 1;
    counts.peak.fetch_max(now, Relaxed);
    let id = request
        .uri()
        .path()
        .strip_prefix("/item/")
        .and_then(|id| id.parse::<u32>().ok());
    tokio::time::sleep(Duration::from_millis(2)).await; // the handler's own I/O
    counts.now.fetch_sub(1, Relaxed);
    let mut response = Response::new(Full::new(Bytes::from(format!("{id:?}"))));
    *response.status_mut() = id.map_or(StatusCode::NOT_FOUND, planned);
    Ok(response)
}

/// The plan, whatever the load: 429 for one id in 97, 503 for one in 211.
fn planned(id: u32) -> StatusCode {
    if id % 97 == 5 {
        StatusCode::TOO_MANY_REQUESTS
    } else if id % 211 == 11 {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

// ---------------------------------------------------------------- the client

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

struct Answer {
    id: u32,
    status: StatusCode,
    /// From the request's first poll to its body read.
    time: Duration,
}

/// One GET, its body read to the end (so that its connection goes back to the pool).
async fn get(client: HttpClient, addr: SocketAddr, id: u32) -> Result<Answer, String> {
    let started = Instant::now();
    let uri: Uri = format!("http://{addr}/item/{id}")
        .parse()
        .expect("a valid URI");
    let response = client
        .get(uri)
        .await
        .map_err(|error| format!("request {id}: {error}"))?;
    let status = response.status();
    response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("request {id}: {error}"))?;
    Ok(Answer {
        id,
        status,
        time: started.elapsed(),
    })
}
