//! The orchestrator: runs the roles as processes, scenario by scenario, and
//! checks each outcome against what the broker recorded (never against a
//! process's memory).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use real::{Checks, median};
use redis::Connection;
use redis::streams::StreamRangeReply;

use crate::lua::{self, GROUP, Keys};
use crate::roles::ATTEMPTS;
use crate::{Args, Failure, fate};

/// Each consumer's budgets: `bounded(WORKERS, WAITING)`, pages of `PAGE`.
const WORKERS: u64 = 16;
const WAITING: u64 = 16;
const PAGE: u64 = 16;
/// The ordered run's `.ordered(WINDOW)`.
const WINDOW: u64 = 64;
/// All keys of a run start with this.
const PREFIX: &str = "bb-broker";
/// How long the orchestrator waits for a run, or a process, before it gives up
/// (a failed check, not a hang).
const PATIENCE: Duration = Duration::from_secs(300);
/// How long a run may go without any change in what the broker reports before
/// the orchestrator gives up on it.
const STALL: Duration = Duration::from_secs(20);

/// What happens to consumer `c0` once a third of the jobs are resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Event {
    /// SIGKILL: it dies with entries pending; the reclaimer takes them over.
    Kill,
    /// SIGTERM: `close()`, drain, commit, hand back, exit.
    Stop,
}

#[derive(Debug)]
struct Scenario {
    prefix: String,
    consumers: usize,
    window: Option<u64>,
    reclaimer: bool,
    event: Option<Event>,
}

impl Scenario {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = (0..self.consumers).map(|c| format!("c{c}")).collect();
        if self.reclaimer {
            names.push("reclaimer".to_string());
        }
        names
    }

    /// The most entries a live consumer may have pending: what its stream
    /// holds (`workers + waiting` unordered, `window + waiting` ordered), the
    /// rest of a page in the source, and the one output being committed.
    fn bound(&self) -> u64 {
        self.window.unwrap_or(WORKERS) + WAITING + PAGE
    }
}

/// What the orchestrator saw of one scenario.
#[derive(Debug, Default)]
struct Seen {
    elapsed: Duration,
    finished: bool,
    /// The killed consumer: when (jobs resolved), its pending ids right after,
    /// and how long until none of them was pending for it any more.
    killed_at: u64,
    crash_pending: Vec<String>,
    taken_over_after: Option<Duration>,
    /// The stopped consumer: when (jobs resolved), how long SIGTERM took to an
    /// exit, its exit status and its pending count after the exit.
    stopped_at: u64,
    stop_took: Option<Duration>,
    stop_status: Option<ExitStatus>,
    stop_pending: Option<u64>,
    /// Each process stopped at the end: its name, exit status and last line.
    exits: Vec<(String, Option<ExitStatus>, String)>,
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

/// Starts the processes of one scenario, produces the jobs, waits until every
/// job is resolved and nothing is pending, with the scenario's event on the
/// way, then stops every process with SIGTERM.
fn execute(
    url: &str,
    conn: &mut Connection,
    keys: &Keys,
    scenario: &Scenario,
    jobs: u64,
    min_idle: u64,
) -> Seen {
    delete_keys(conn, &format!("{}:*", scenario.prefix));
    redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query::<()>(conn)
        .expect("XGROUP CREATE");
    let exe = std::env::current_exe().expect("this program's path");
    let spawn = |role: &str, extra: &[String]| -> Child {
        Command::new(&exe)
            .arg(role)
            .args(["--redis", url, "--prefix", &scenario.prefix])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("a process of this program")
    };
    let budgets = |name: &str| {
        let mut extra: Vec<String> = [
            ("name", name.to_string()),
            ("workers", WORKERS.to_string()),
            ("waiting", WAITING.to_string()),
            ("page", PAGE.to_string()),
            ("min-idle-ms", min_idle.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [format!("--{flag}"), value])
        .collect();
        if let Some(window) = scenario.window {
            extra.extend(["--window".to_string(), window.to_string()]);
        }
        extra
    };
    let mut processes = Processes(
        scenario
            .names()
            .into_iter()
            .map(|name| {
                let role = if name == "reclaimer" {
                    "reclaim"
                } else {
                    "consume"
                };
                let child = spawn(role, &budgets(&name));
                (name, Some(child))
            })
            .collect(),
    );
    let ready_by = Instant::now() + PATIENCE;
    while redis::cmd("HLEN")
        .arg(&keys.ready)
        .query::<usize>(conn)
        .expect("HLEN")
        < processes.0.len()
    {
        assert!(Instant::now() < ready_by, "the consumers never connected");
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut seen = Seen::default();
    let start = Instant::now();
    processes.0.push((
        "producer".to_string(),
        Some(spawn("produce", &["--jobs".to_string(), jobs.to_string()])),
    ));
    let mut event_done = scenario.event.is_none();
    let mut last_progress = (Instant::now(), [0; 4]);
    let mut event_time = None;
    let mut stopping = false;
    loop {
        let [pending, lag, applied, dead]: [i64; 4] = lua::PROGRESS
            .key(&keys.stream)
            .key(&keys.applied)
            .key(&keys.dead)
            .arg(GROUP)
            .invoke::<Vec<i64>>(conn)
            .expect("the progress script")
            .try_into()
            .expect("four figures");
        let resolved = (applied + dead) as u64;
        if resolved == jobs && pending == 0 && lag == 0 {
            seen.elapsed = start.elapsed();
            seen.finished = true;
            break;
        }
        if [pending, lag, applied, dead] != last_progress.1 {
            last_progress = (Instant::now(), [pending, lag, applied, dead]);
        } else if last_progress.0.elapsed() > STALL || start.elapsed() > PATIENCE {
            seen.elapsed = start.elapsed();
            println!(
                "  no progress for {:.0} s: {resolved} of {jobs} jobs resolved, {pending} pending, {lag} not delivered",
                last_progress.0.elapsed().as_secs_f64()
            );
            break;
        }
        if !event_done && resolved * 3 >= jobs {
            event_done = true;
            event_time = Some(Instant::now());
            match scenario.event {
                Some(Event::Kill) => {
                    let mut child = processes.0[0].1.take().expect("c0 runs");
                    seen.killed_at = resolved;
                    child.kill().expect("SIGKILL");
                    child.wait().expect("the killed consumer's status");
                    // Whatever it sent before it died has reached the server
                    // by now; what is left pending for it is what it lost.
                    std::thread::sleep(Duration::from_millis(50));
                    seen.crash_pending = pending_ids(conn, keys, "c0");
                    if !seen.crash_pending.is_empty() {
                        redis::cmd("SADD")
                            .arg(&keys.crash)
                            .arg(&seen.crash_pending)
                            .query::<()>(conn)
                            .expect("SADD");
                    }
                }
                Some(Event::Stop) => {
                    seen.stopped_at = resolved;
                    terminate(processes.0[0].1.as_ref().expect("c0 runs"));
                    stopping = true;
                }
                None => unreachable!(),
            }
        }
        if scenario.event == Some(Event::Kill)
            && seen.taken_over_after.is_none()
            && event_time.is_some()
            && pending_ids(conn, keys, "c0").is_empty()
        {
            seen.taken_over_after = event_time.map(|time| time.elapsed());
        }
        if stopping
            && let Some(child) = processes.0[0].1.as_mut()
            && let Some(status) = child.try_wait().expect("the stopped consumer's status")
        {
            seen.stop_took = event_time.map(|time| time.elapsed());
            seen.stop_status = Some(status);
            seen.stop_pending = Some(pending_ids(conn, keys, "c0").len() as u64);
            let line = last_line(child);
            seen.exits.push(("c0".to_string(), Some(status), line));
            processes.0[0].1 = None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (_, producer) = processes.0.pop().expect("the producer");
    producer
        .expect("the producer")
        .wait()
        .expect("the producer's status");

    // Every process left gets SIGTERM: a graceful stop with nothing to do.
    for (_, child) in &processes.0 {
        if let Some(child) = child {
            terminate(child);
        }
    }
    for (name, child) in &mut processes.0 {
        let Some(mut child) = child.take() else {
            continue;
        };
        let by = Instant::now() + STALL;
        let status = loop {
            if let Some(status) = child.try_wait().expect("a consumer's status") {
                break Some(status);
            }
            if Instant::now() > by {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if name == "c0" && scenario.event == Some(Event::Stop) && seen.stop_status.is_none() {
            seen.stop_status = status;
            seen.stop_pending = Some(pending_ids(conn, keys, "c0").len() as u64);
        }
        let line = last_line(&mut child);
        seen.exits.push((name.clone(), status, line));
    }
    seen
}

/// The processes of a scenario, killed if the orchestrator leaves early (a
/// panic): none outlives it.
struct Processes(Vec<(String, Option<Child>)>);

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in &mut self.0 {
            if let Some(child) = child {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// The checks of one scenario, against the broker's records.
fn verify(
    conn: &mut Connection,
    keys: &Keys,
    scenario: &Scenario,
    seen: &Seen,
    jobs: u64,
    label: &str,
    checks: &mut Checks,
) {
    let check = |checks: &mut Checks, name: &str, held: bool, failure: String| {
        checks.check(name, held, || format!("{label}: {failure}"));
    };
    check(
        checks,
        "every job resolved, nothing pending, within the time allowed",
        seen.finished,
        format!("still unfinished after {:?}", seen.elapsed),
    );

    let entries: StreamRangeReply = redis::cmd("XRANGE")
        .arg(&keys.stream)
        .arg("-")
        .arg("+")
        .query(conn)
        .expect("XRANGE");
    let dead: StreamRangeReply = redis::cmd("XRANGE")
        .arg(&keys.dead)
        .arg("-")
        .arg("+")
        .query(conn)
        .expect("XRANGE");
    let runs = hash(conn, &keys.runs);
    let acks = hash(conn, &keys.acks);
    let noop_acks = hash(conn, &keys.noop_acks);
    let released = hash(conn, &keys.released);
    let applied: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(&keys.applied)
        .query(conn)
        .expect("HGETALL");

    // Every job: applied once at the attempt its fate allows, or dead-lettered
    // after the last attempt; never both, never neither.
    let mut dead_jobs: HashMap<u64, (u32, usize)> = HashMap::new();
    for letter in &dead.ids {
        let job: u64 = letter.get("job").expect("a job id");
        let attempt: u32 = letter.get("attempt").expect("an attempt");
        dead_jobs.entry(job).or_insert((attempt, 0)).1 += 1;
    }
    let mut wrong = Vec::new();
    for job in 0..jobs {
        let record = applied.get(&job.to_string());
        let letter = dead_jobs.get(&job);
        let attempt = record.and_then(|record| record.rsplit(' ').next());
        let right = match fate(job).failure {
            Failure::None => attempt == Some("1") && letter.is_none(),
            Failure::Once => attempt == Some("2") && letter.is_none(),
            Failure::Always => record.is_none() && letter == Some(&(ATTEMPTS, 1)),
        };
        if !right {
            wrong.push(format!(
                "job {job}: applied {record:?}, dead-lettered {letter:?}"
            ));
        }
    }
    check(
        checks,
        "every job processed: applied once, or dead-lettered after its last attempt; none lost",
        wrong.is_empty(),
        format!("{} jobs wrong, first: {:?}", wrong.len(), wrong.first()),
    );

    let unacknowledged: Vec<&str> = entries
        .ids
        .iter()
        .filter(|entry| acks.get(&entry.id) != Some(&1))
        .map(|entry| entry.id.as_str())
        .collect();
    let group_pending = pending_count(conn, keys);
    check(
        checks,
        "every entry acknowledged exactly once (XACK), none pending",
        unacknowledged.is_empty() && noop_acks.is_empty() && group_pending == 0,
        format!(
            "{} entries not acknowledged once (first {:?}), {} acknowledged twice, {group_pending} pending",
            unacknowledged.len(),
            unacknowledged.first(),
            noop_acks.len()
        ),
    );

    let never_run: HashSet<&str> = entries
        .ids
        .iter()
        .filter(|entry| !runs.contains_key(&entry.id))
        .map(|entry| entry.id.as_str())
        .collect();
    let handed_back: HashSet<&str> = released.keys().map(String::as_str).collect();
    check(
        checks,
        "every entry ran, except those a stopping consumer handed back unrun",
        never_run == handed_back && (handed_back.is_empty() || scenario.event == Some(Event::Stop)),
        format!(
            "{} never ran, {} handed back",
            never_run.len(),
            handed_back.len()
        ),
    );

    let duplicates = duplicate_runs(conn, keys);
    if scenario.event == Some(Event::Kill) {
        let crash: HashSet<&str> = seen.crash_pending.iter().map(String::as_str).collect();
        let outside: Vec<&String> = duplicates
            .iter()
            .filter(|id| !crash.contains(id.as_str()))
            .collect();
        check(
            checks,
            "entries run twice only among those pending for the killed consumer at the crash",
            outside.is_empty(),
            format!("{} ran twice outside them: {outside:?}", outside.len()),
        );
        check(
            checks,
            "the killed consumer's pending list at the crash within its admission bound",
            !crash.is_empty() && crash.len() as u64 <= scenario.bound(),
            format!("{} pending (bound {})", crash.len(), scenario.bound()),
        );
        let reclaimed: HashSet<String> = redis::cmd("LRANGE")
            .arg(keys.log("reclaimer"))
            .arg(0)
            .arg(-1)
            .query(conn)
            .expect("LRANGE");
        let missed: Vec<&&str> = crash
            .iter()
            .filter(|id| !reclaimed.contains(**id))
            .collect();
        check(
            checks,
            "the reclaimer took over and committed every entry the killed consumer left",
            missed.is_empty() && seen.taken_over_after.is_some(),
            format!(
                "{} not committed by the reclaimer: {missed:?}",
                missed.len()
            ),
        );
    } else {
        check(
            checks,
            "no entry ran twice",
            duplicates.is_empty(),
            format!("{} ran twice: {duplicates:?}", duplicates.len()),
        );
    }
    let repeated_runs: u64 = duplicates
        .iter()
        .filter(|id| {
            let entry = entries.ids.iter().find(|entry| &&entry.id == id);
            entry.is_some_and(|entry| {
                let job: u64 = entry.get("job").expect("a job id");
                let attempt: u32 = entry.get("attempt").expect("an attempt");
                !fate(job).fails(attempt)
            })
        })
        .map(|id| runs[id] - 1)
        .sum();
    check(
        checks,
        "every repeated run of a job recognised by its idempotency key, none applied twice",
        repeats(conn, keys) == repeated_runs,
        format!(
            "{} repeats recognised, {repeated_runs} repeated runs",
            repeats(conn, keys)
        ),
    );

    let peaks = hash(conn, &keys.peaks);
    let over: Vec<(&String, &u64)> = peaks
        .iter()
        .filter(|(_, peak)| **peak > scenario.bound())
        .collect();
    check(
        checks,
        "a live consumer's pending list (XPENDING after each read) never above workers (or window) + waiting + a page",
        over.is_empty(),
        format!("above {}: {over:?}", scenario.bound()),
    );

    if scenario.window.is_some() {
        let disordered: u64 = (0..scenario.consumers)
            .map(|c| out_of_order_commits(conn, keys, &format!("c{c}")).0)
            .sum();
        check(
            checks,
            "ordered: each consumer committed its entries in the order it read them",
            disordered == 0,
            format!("{disordered} commits out of order"),
        );
    }

    if scenario.event == Some(Event::Stop) {
        check(
            checks,
            "the stopped consumer exited cleanly with nothing pending for it",
            seen.stop_status.is_some_and(|status| status.success()) && seen.stop_pending == Some(0),
            format!(
                "exit {:?}, {:?} pending after",
                seen.stop_status, seen.stop_pending
            ),
        );
    }
    let failed_exits: Vec<String> = seen
        .exits
        .iter()
        .filter(|(_, status, _)| !status.is_some_and(|status| status.success()))
        .map(|(name, status, line)| format!("{name}: {status:?} {line}"))
        .collect();
    check(
        checks,
        "every consumer stopped at the end (SIGTERM) exited cleanly with nothing pending",
        failed_exits.is_empty(),
        failed_exits.join("; "),
    );
}

fn print_exits(seen: &Seen) {
    for (_, _, line) in &seen.exits {
        println!("    {line}");
    }
}

fn terminate(child: &Child) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill -TERM");
    assert!(status.success(), "kill -TERM {} failed", child.id());
}

fn last_line(child: &mut Child) -> String {
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    out.lines().last().unwrap_or("(no output)").to_string()
}

fn delete_keys(conn: &mut Connection, pattern: &str) {
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(conn).expect("KEYS");
    if !keys.is_empty() {
        redis::cmd("DEL").arg(&keys).query::<()>(conn).expect("DEL");
    }
}

fn hash(conn: &mut Connection, key: &str) -> HashMap<String, u64> {
    redis::cmd("HGETALL").arg(key).query(conn).expect("HGETALL")
}

fn list_len(conn: &mut Connection, key: &str) -> u64 {
    redis::cmd("LLEN").arg(key).query(conn).expect("LLEN")
}

fn pending_ids(conn: &mut Connection, keys: &Keys, consumer: &str) -> Vec<String> {
    let pending: Vec<(String, String, u64, u64)> = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(1_000_000)
        .arg(consumer)
        .query(conn)
        .expect("XPENDING");
    pending.into_iter().map(|(id, ..)| id).collect()
}

fn pending_count(conn: &mut Connection, keys: &Keys) -> u64 {
    let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(GROUP)
        .query(conn)
        .expect("XPENDING");
    summary.0
}

fn peak_pending(conn: &mut Connection, keys: &Keys) -> u64 {
    hash(conn, &keys.peaks).into_values().max().unwrap_or(0)
}

fn repeats(conn: &mut Connection, keys: &Keys) -> u64 {
    hash(conn, &keys.repeats).into_values().sum()
}

/// Entries that ran more than once.
fn duplicate_runs(conn: &mut Connection, keys: &Keys) -> Vec<String> {
    let mut ids: Vec<String> = hash(conn, &keys.runs)
        .into_iter()
        .filter(|(_, runs)| *runs > 1)
        .map(|(id, _)| id)
        .collect();
    ids.sort();
    ids
}

/// Commits in a consumer's log whose entry id is below the one before it, and
/// all its commits.
fn out_of_order_commits(conn: &mut Connection, keys: &Keys, consumer: &str) -> (u64, u64) {
    let log: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.log(consumer))
        .arg(0)
        .arg(-1)
        .query(conn)
        .expect("LRANGE");
    let ids: Vec<(u64, u64)> = log.iter().map(|id| entry_id(id)).collect();
    let late = ids.windows(2).filter(|pair| pair[1] < pair[0]).count();
    (late as u64, ids.len() as u64)
}

fn entry_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').expect("an entry id");
    (
        ms.parse().expect("milliseconds"),
        seq.parse().expect("a sequence number"),
    )
}
