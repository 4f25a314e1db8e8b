//! What the examples share: the size they run at, the median of their
//! rounds, the checks they print and exit on, and the HTTP server the hyper
//! examples start.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// Serves HTTP/1 on an ephemeral port of 127.0.0.1 until the program ends,
/// each request by `handle`; once a connection is closed (every handler on it
/// done, or dropped with its client gone), `closed` hears its peer's address.
/// Returns the address it listens on.
///
/// # Panics
///
/// If no port on 127.0.0.1 can be bound, or `TCP_NODELAY` cannot be set.
pub async fn serve<H, F, C>(handle: H, closed: C) -> SocketAddr
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
    C: Fn(SocketAddr) + Clone + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port on 127.0.0.1");
    let addr = listener.local_addr().expect("the listener's address");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, peer)) = listener.accept().await else {
                continue;
            };
            tcp.set_nodelay(true).expect("TCP_NODELAY");
            let (handle, closed) = (handle.clone(), closed.clone());
            tokio::spawn(async move {
                // A client that goes away mid-request (dropped, or cancelled
                // at a deadline) ends the connection with an error, and hyper
                // drops the handler: not ours to report.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service_fn(handle))
                    .await;
                closed(peer);
            });
        }
    });
    addr
}

/// How many items a run handles: the first argument, else `BB_REAL_SIZE`, else
/// `default`. CI passes a small size; the default is the full-size run.
///
/// # Panics
///
/// If the argument or the variable is not a positive whole number: a run of
/// nothing would check nothing.
pub fn size(default: usize) -> usize {
    let given = std::env::args()
        .nth(1)
        .map(|arg| ("the first argument", arg))
        .or_else(|| {
            std::env::var("BB_REAL_SIZE")
                .ok()
                .map(|var| ("BB_REAL_SIZE", var))
        });
    match given {
        None => default,
        Some((name, text)) => match text.parse::<usize>() {
            Ok(size) if size > 0 => size,
            _ => {
                panic!("{name} is the number of items to run, a whole number above 0; got {text:?}")
            }
        },
    }
}

/// The median of an odd number of timings (the rounds of one adapter).
pub fn median(mut timings: Vec<Duration>) -> Duration {
    assert!(
        timings.len() % 2 == 1,
        "a median of an odd number of rounds"
    );
    timings.sort();
    timings[timings.len() / 2]
}

/// One line of a comparison table: both medians and their ratio.
pub fn comparison_line(adapter: &str, futures: &str, ours: Duration, theirs: Duration) -> String {
    format!(
        "  {adapter:<52} {:>7.1} ms   {futures:<36} {:>7.1} ms   {:>5.2}",
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64()
    )
}

/// The header that goes with [`comparison_line`].
pub fn comparison_header() -> String {
    format!(
        "  {:<52} {:>10}   {:<36} {:>10}   {:>5}",
        "adapter", "median", "futures", "median", "ratio"
    )
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Named checks, each run once per round; a check passes when it held in every
/// round. The report lists each with the first failure seen, and the process
/// fails if any did. Beside them, figures observed in each round, reported as
/// their range.
#[derive(Default)]
pub struct Checks {
    checks: Vec<Check>,
    observed: Vec<(String, u64, u64)>,
}

struct Check {
    name: String,
    runs: usize,
    failures: Vec<String>,
}

impl Checks {
    /// Records one evaluation of the check `name`; `failure` says what was seen
    /// when `held` is false.
    pub fn check(&mut self, name: &str, held: bool, failure: impl FnOnce() -> String) {
        let index = match self.checks.iter().position(|check| check.name == name) {
            Some(index) => index,
            None => {
                self.checks.push(Check {
                    name: name.to_string(),
                    runs: 0,
                    failures: Vec::new(),
                });
                self.checks.len() - 1
            }
        };
        let check = &mut self.checks[index];
        check.runs += 1;
        if !held {
            check.failures.push(failure());
        }
    }

    /// Records one round's value of the figure `name`.
    pub fn observe(&mut self, name: &str, value: u64) {
        match self.observed.iter_mut().find(|(seen, ..)| seen == name) {
            Some((_, low, high)) => {
                *low = (*low).min(value);
                *high = (*high).max(value);
            }
            None => self.observed.push((name.to_string(), value, value)),
        }
    }

    /// Prints the figures observed and every check with its result; a failure
    /// if any check failed.
    pub fn report(self) -> ExitCode {
        if !self.observed.is_empty() {
            println!("observed (lowest-highest over the rounds):");
            for (name, low, high) in &self.observed {
                if low == high {
                    println!("  {name}: {low}");
                } else {
                    println!("  {name}: {low}-{high}");
                }
            }
        }
        println!("checks:");
        let mut failed = 0;
        for check in &self.checks {
            match check.failures.first() {
                None => println!(
                    "  ok      {} ({} of {} runs)",
                    check.name, check.runs, check.runs
                ),
                Some(first) => {
                    failed += 1;
                    println!(
                        "  FAILED  {} (failed in {} of {} runs; first: {first})",
                        check.name,
                        check.failures.len(),
                        check.runs
                    );
                }
            }
        }
        if failed == 0 {
            println!("all {} checks held", self.checks.len());
            ExitCode::SUCCESS
        } else {
            println!("{failed} of {} checks failed", self.checks.len());
            ExitCode::FAILURE
        }
    }
}
