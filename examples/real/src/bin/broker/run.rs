//! The orchestrator: runs the roles as processes, scenario by scenario, and
//! checks each outcome against what the broker recorded (never against a
//! process's memory).
//!
//! This file holds the scenarios and the report; `processes.rs` runs one
//! scenario's processes, `verify.rs` checks its outcome, and `records.rs`
//! holds the queries of the broker's records that they share.

use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use real::{Checks, median};
use redis::Connection;

use crate::lua::Keys;
use crate::processes::execute;
use crate::records::{
    delete_keys, duplicate_runs, list_len, out_of_order_commits, peak_pending, repeats,
};
use crate::roles::ATTEMPTS;
use crate::verify::verify;
use crate::{Args, Failure, fate};

/// Each consumer's budgets: `bounded(WORKERS, WAITING)`, pages of `PAGE`.
pub const WORKERS: u64 = 16;
pub const WAITING: u64 = 16;
pub const PAGE: u64 = 16;
/// The ordered run's `.ordered(WINDOW)`.
const WINDOW: u64 = 64;
/// All keys of a run start with this.
const PREFIX: &str = "bb-broker";
/// How long the orchestrator waits for a run, or a process, before it gives up
/// (a failed check, not a hang).
pub const PATIENCE: Duration = Duration::from_secs(300);
/// How long a run may go without any change in what the broker reports before
/// the orchestrator gives up on it.
pub const STALL: Duration = Duration::from_secs(20);

/// What happens to consumer `c0` once a third of the jobs are resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// SIGKILL: it dies with entries pending; the reclaimer takes them over.
    Kill,
    /// SIGTERM: `close()`, drain, commit, hand back, exit.
    Stop,
}

#[derive(Debug)]
pub struct Scenario {
    pub prefix: String,
    pub consumers: usize,
    pub window: Option<u64>,
    reclaimer: bool,
    pub event: Option<Event>,
}

impl Scenario {
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = (0..self.consumers).map(|c| format!("c{c}")).collect();
        if self.reclaimer {
            names.push("reclaimer".to_string());
        }
        names
    }

    /// The most entries a live consumer may have pending: what its stream
    /// holds (`workers + waiting` unordered, `window + waiting` ordered), the
    /// rest of a page in the source, and the one output being committed.
    pub fn bound(&self) -> u64 {
        self.window.unwrap_or(WORKERS) + WAITING + PAGE
    }
}

/// What the orchestrator saw of one scenario.
#[derive(Debug, Default)]
pub struct Seen {
    pub elapsed: Duration,
    pub finished: bool,
    /// The killed consumer: when (jobs resolved), its pending ids right after,
    /// and how long until none of them was pending for it any more.
    pub killed_at: u64,
    pub crash_pending: Vec<String>,
    pub taken_over_after: Option<Duration>,
    /// The stopped consumer: when (jobs resolved), how long SIGTERM took to an
    /// exit, its exit status and its pending count after the exit.
    pub stopped_at: u64,
    pub stop_took: Option<Duration>,
    pub stop_status: Option<ExitStatus>,
    pub stop_pending: Option<u64>,
    /// Each process stopped at the end: its name, exit status and last line.
    pub exits: Vec<(String, Option<ExitStatus>, String)>,
}

pub fn run(args: &Args) -> ExitCode {
    let url = args.text("redis");
    let jobs = args.optional("jobs").unwrap_or(20_000);
    let rounds = args.optional("rounds").unwrap_or(3) as usize;
    let min_idle = args.optional("min-idle-ms").unwrap_or(2_000);
    let client = redis::Client::open(url.as_str()).expect("a Redis URL");
    let mut conn = client.get_connection().expect("a connection to Redis");
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut conn)
        .expect("INFO");
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string();
    delete_keys(&mut conn, &format!("{PREFIX}:*"));

    let (once, always) = (0..jobs).fold((0, 0), |(once, always), job| match fate(job).failure {
        Failure::None => (once, always),
        Failure::Once => (once + 1, always),
        Failure::Always => (once, always + 1),
    });
    println!("broker: Redis {version} at {url}; a consumer group on one stream, {jobs} jobs a run");
    println!(
        "  a job: a service call of 2-6 ms, its job id the service's idempotency key; {once} fail once \
         (retried), {always} fail every time (dead-lettered after {ATTEMPTS} attempts)"
    );
    println!(
        "  a consumer: one process, pages of {PAGE} (XREADGROUP), bounded({WORKERS}, {WAITING}) spawned \
         on a current-thread tokio runtime, XACK after the job completed"
    );

    let mut checks = Checks::default();
    let run = |conn: &mut Connection, label: &str, scenario: Scenario, checks: &mut Checks| {
        let keys = Keys::new(&scenario.prefix);
        let seen = execute(&url, conn, &keys, &scenario, jobs, min_idle);
        verify(conn, &keys, &scenario, &seen, jobs, label, checks);
        seen
    };

    println!();
    println!(
        "scaling out: 1, 2 and 4 consumer processes, unordered, {rounds} round{} each{}",
        if rounds == 1 { "" } else { "s" },
        if rounds == 1 {
            ""
        } else if rounds % 2 == 1 {
            " (medians)"
        } else {
            " (means)"
        },
    );
    println!(
        "  {:<10} {:>10} {:>9} {:>8} {:>22} {:>13}",
        "consumers", "time", "jobs/s", "vs one", "peak pending (bound)", "out of order"
    );
    let mut baseline = None;
    for consumers in [1, 2, 4] {
        let mut times = Vec::new();
        let mut peak = 0;
        let (mut out_of_order, mut commits) = (0, 0);
        for round in 0..rounds {
            let scenario = Scenario {
                prefix: format!("{PREFIX}:scale{consumers}:{round}"),
                consumers,
                window: None,
                reclaimer: false,
                event: None,
            };
            let bound = scenario.bound();
            let seen = run(
                &mut conn,
                &format!("{consumers} consumers"),
                scenario,
                &mut checks,
            );
            times.push(seen.elapsed);
            let keys = Keys::new(&format!("{PREFIX}:scale{consumers}:{round}"));
            peak = peak.max(peak_pending(&mut conn, &keys));
            for c in 0..consumers {
                let (late, all) = out_of_order_commits(&mut conn, &keys, &format!("c{c}"));
                out_of_order += late;
                commits += all;
            }
            if round + 1 == rounds {
                let time = if rounds % 2 == 1 {
                    median(times.clone())
                } else {
                    times.iter().sum::<Duration>() / rounds as u32
                };
                let rate = jobs as f64 / time.as_secs_f64();
                let baseline = *baseline.get_or_insert(rate);
                println!(
                    "  {:<10} {:>7.0} ms {:>9.0} {:>7.2}x {:>22} {:>13}",
                    consumers,
                    time.as_secs_f64() * 1e3,
                    rate,
                    rate / baseline,
                    format!("{peak} ({bound})"),
                    format!(
                        "{:.1} %",
                        100.0 * out_of_order as f64 / commits.max(1) as f64
                    ),
                );
            }
        }
    }
    println!(
        "  (out of order: the share of commits whose entry is older than the one the same consumer committed before)"
    );

    println!();
    println!(
        "in order: 2 consumers, bounded({WORKERS}, {WAITING}).ordered({WINDOW}): each commits in the order it read"
    );
    let scenario = Scenario {
        prefix: format!("{PREFIX}:ordered"),
        consumers: 2,
        window: Some(WINDOW),
        reclaimer: false,
        event: None,
    };
    let bound = scenario.bound();
    let seen = run(&mut conn, "ordered", scenario, &mut checks);
    let keys = Keys::new(&format!("{PREFIX}:ordered"));
    let out_of_order: u64 = (0..2)
        .map(|c| out_of_order_commits(&mut conn, &keys, &format!("c{c}")).0)
        .sum();
    println!(
        "  {:.0} ms, {:.0} jobs/s; peak pending {} (bound {bound}); out of order {out_of_order}",
        seen.elapsed.as_secs_f64() * 1e3,
        jobs as f64 / seen.elapsed.as_secs_f64(),
        peak_pending(&mut conn, &keys),
    );

    println!();
    println!(
        "crash: 2 consumers and a reclaimer (XAUTOCLAIM, min idle {min_idle} ms); c0 is killed (SIGKILL) \
         once a third of the jobs are resolved"
    );
    let scenario = Scenario {
        prefix: format!("{PREFIX}:crash"),
        consumers: 2,
        window: None,
        reclaimer: true,
        event: Some(Event::Kill),
    };
    let bound = scenario.bound();
    let seen = run(&mut conn, "crash", scenario, &mut checks);
    let keys = Keys::new(&format!("{PREFIX}:crash"));
    let duplicates = duplicate_runs(&mut conn, &keys);
    let reclaimed = list_len(&mut conn, &keys.log("reclaimer"));
    println!(
        "  c0 killed after {} of {jobs} jobs were resolved; pending for it at the crash: {} entries (bound {bound})",
        seen.killed_at,
        seen.crash_pending.len(),
    );
    match seen.taken_over_after {
        Some(after) => println!(
            "  the reclaimer took them over {:.2} s after the kill, and committed {reclaimed} entries in all",
            after.as_secs_f64()
        ),
        None => println!("  the reclaimer never took them over"),
    }
    println!(
        "  entries run twice: {} (completed by c0, not acknowledged when it died); recognised as repeats \
         by the service: {}",
        duplicates.len(),
        repeats(&mut conn, &keys),
    );
    println!(
        "  whole run {:.0} ms; peak pending {} (bound {bound})",
        seen.elapsed.as_secs_f64() * 1e3,
        peak_pending(&mut conn, &keys)
    );
    print_exits(&seen);

    println!();
    println!(
        "graceful stop: 2 consumers; c0 gets SIGTERM once a third of the jobs are resolved: close(), \
         drain, commit, hand back, exit"
    );
    let scenario = Scenario {
        prefix: format!("{PREFIX}:stop"),
        consumers: 2,
        window: None,
        reclaimer: false,
        event: Some(Event::Stop),
    };
    let seen = run(&mut conn, "graceful stop", scenario, &mut checks);
    println!(
        "  c0 stopped after {} of {jobs} jobs were resolved: exited (code {}) {:.0} ms after SIGTERM, {} pending for it after",
        seen.stopped_at,
        seen.stop_status
            .and_then(|status| status.code())
            .map_or("none".to_string(), |code| code.to_string()),
        seen.stop_took.unwrap_or_default().as_secs_f64() * 1e3,
        seen.stop_pending
            .map_or("?".to_string(), |pending| pending.to_string()),
    );
    print_exits(&seen);

    println!();
    checks.report()
}

fn print_exits(seen: &Seen) {
    for (_, _, line) in &seen.exits {
        println!("    {line}");
    }
}
