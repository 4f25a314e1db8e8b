//! The producer, the consumer and the reclaimer: each a process of its own,
//! started by the orchestrator (`run.rs`) or by hand.

use std::collections::VecDeque;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bounded_buffered::BoundedStreamExt;
use futures::{Stream, StreamExt, stream};
use redis::aio::MultiplexedConnection;
use tokio::signal::unix::{SignalKind, signal};

use crate::lua::{self, GROUP, Keys};
use crate::{Args, fate};

/// Attempts a job gets before it goes to the dead-letter stream.
pub const ATTEMPTS: u32 = 3;
/// How long a consumer waits before reading again when the stream had nothing
/// new for it (and the reclaimer, when nothing was idle long enough).
const IDLE: Duration = Duration::from_millis(10);
const RECLAIM_IDLE: Duration = Duration::from_millis(100);

/// The producer: adds jobs `0..jobs` to the stream, attempt 1, in pipelines of
/// 500 entries.
pub fn produce(args: &Args) -> ExitCode {
    let keys = Keys::new(&args.text("prefix"));
    let jobs = args.number("jobs");
    let client = redis::Client::open(args.text("redis")).expect("a Redis URL");
    let mut conn = client.get_connection().expect("a connection to Redis");
    let mut job = 0;
    while job < jobs {
        let mut pipe = redis::pipe();
        for job in job..(job + 500).min(jobs) {
            pipe.cmd("XADD")
                .arg(&keys.stream)
                .arg("*")
                .arg("job")
                .arg(job)
                .arg("attempt")
                .arg(1)
                .ignore();
        }
        pipe.query::<()>(&mut conn).expect("XADD");
        job += 500;
    }
    ExitCode::SUCCESS
}

/// One entry as a consumer got it from the broker.
#[derive(Clone, Debug)]
struct Entry {
    id: String,
    job: u64,
    attempt: u32,
}

/// What a job's future completes with: the entry, and whether the service
/// applied it, recognised it as a repeat, or failed.
#[derive(Debug)]
struct Outcome {
    entry: Entry,
    result: Result<Applied, ()>,
}

#[derive(Debug, PartialEq)]
enum Applied {
    First,
    Repeat,
}

/// Where a consumer's entries come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    /// `XREADGROUP ... >`: entries never delivered to anyone.
    Consume,
    /// `XAUTOCLAIM` with a minimum idle time: entries a consumer took and did
    /// not acknowledge in that time (a consumer that died).
    Reclaim,
}

/// A consumer (or the reclaimer): reads pages from the group, runs each job
/// through `bounded(workers, waiting)` (`.ordered(window)` when given),
/// spawned on this current-thread runtime, and acknowledges each entry after
/// its job completed. Runs until SIGTERM; then `close()`, drains, commits what
/// completed, hands back what it had read and not run, and exits.
pub async fn consume(args: &Args, role: Role) -> ExitCode {
    let keys = Keys::new(&args.text("prefix"));
    let name = args.text("name");
    let workers = args.number("workers") as usize;
    let waiting = args.number("waiting") as usize;
    let page = args.number("page");
    let window = args.optional("window").map(|window| window as usize);
    let min_idle = args.optional("min-idle-ms").unwrap_or(2_000);

    let client = redis::Client::open(args.text("redis")).expect("a Redis URL");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("a connection to Redis");
    // SIGTERM is caught from here on: a stop requested while connecting is
    // not lost.
    let mut terminate = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    redis::cmd("HSET")
        .arg(&keys.ready)
        .arg(&name)
        .arg(std::process::id())
        .query_async::<()>(&mut conn)
        .await
        .expect("HSET ready");

    let source = pages(
        conn.clone(),
        keys.clone(),
        name.clone(),
        role,
        page,
        min_idle,
    );
    let jobs = {
        let (conn, keys, name) = (conn.clone(), keys.clone(), name.clone());
        source.map(move |entry| run_job(conn.clone(), keys.clone(), name.clone(), entry))
    };
    let handle = tokio::runtime::Handle::current();
    let mut outcomes = match window {
        Some(window) => jobs
            .bounded(workers, waiting)
            .ordered(window)
            .spawn_on(handle),
        None => jobs.bounded(workers, waiting).spawn_on(handle),
    };

    let log = keys.log(&name);
    let mut committed = 0u64;
    let mut repeats = 0u64;
    let mut stop: Option<(Instant, u64)> = None;
    loop {
        tokio::select! {
            _ = terminate.recv(), if stop.is_none() => {
                // A graceful stop: nothing more is pulled from the source;
                // what runs and waits finishes and comes out below.
                outcomes.close();
                stop = Some((Instant::now(), committed));
            }
            outcome = outcomes.next() => match outcome {
                Some(outcome) => {
                    repeats += u64::from(outcome.result == Ok(Applied::Repeat));
                    commit(&mut conn, &keys, &log, outcome).await;
                    committed += 1;
                }
                None => break,
            },
        }
    }
    let stats = outcomes.stats();
    let Some((stopped, committed_before_stop)) = stop else {
        unreachable!("the source never ends: the loop ends only after close()");
    };
    // What the broker delivered to this consumer and the stream never pulled:
    // the rest of the page in the source when `close()` came, and the page of
    // a read that was on its way. A spawned stream drops its source at
    // `close()`, the read's future included, so only the broker still knows
    // them: they are pending for this consumer.
    let released: u64 = lua::RELEASE
        .key(&keys.stream)
        .key(&keys.acks)
        .key(&keys.released)
        .arg(GROUP)
        .arg(&name)
        .invoke_async(&mut conn)
        .await
        .expect("the release script");
    let pending: u64 = pending_for(&mut conn, &keys, &name).await;
    println!(
        "{name}: SIGTERM -> close() -> drained and committed {} ({} in all, {repeats} repeats) -> \
         handed back {released} read and not run -> exit after {:.0} ms with {pending} pending; \
         stats: pulled {}, completed {}, peak active {}, peak waiting {}, peak held {}",
        committed - committed_before_stop,
        committed,
        stopped.elapsed().as_secs_f64() * 1e3,
        stats.pulled,
        stats.completed,
        stats.peak_active,
        stats.peak_waiting,
        stats.peak_held,
    );
    if pending == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The entries of a consumer, page by page: a page is read when the last one
/// was handed out and the stream pulls again. A page read takes the entries
/// from the broker at once (they are pending for this consumer from then on),
/// while the stream takes them one at a time: the rest of a page waits in
/// here, outside the stream's budgets.
fn pages(
    conn: MultiplexedConnection,
    keys: Keys,
    name: String,
    role: Role,
    page: u64,
    min_idle: u64,
) -> impl Stream<Item = Entry> + Send + 'static {
    struct State {
        conn: MultiplexedConnection,
        keys: Keys,
        name: String,
        buffer: VecDeque<Entry>,
        cursor: String,
    }
    let state = State {
        conn,
        keys,
        name,
        buffer: VecDeque::new(),
        cursor: "0-0".to_string(),
    };
    stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(entry) = state.buffer.pop_front() {
                return Some((entry, state));
            }
            let reply: Vec<String> = match role {
                Role::Consume => lua::READ
                    .key(&state.keys.stream)
                    .key(&state.keys.peaks)
                    .arg(GROUP)
                    .arg(&state.name)
                    .arg(page)
                    .invoke_async(&mut state.conn)
                    .await
                    .expect("the read script"),
                Role::Reclaim => lua::CLAIM
                    .key(&state.keys.stream)
                    .key(&state.keys.peaks)
                    .arg(GROUP)
                    .arg(&state.name)
                    .arg(page)
                    .arg(min_idle)
                    .arg(&state.cursor)
                    .invoke_async(&mut state.conn)
                    .await
                    .expect("the claim script"),
            };
            if role == Role::Reclaim {
                state.cursor = reply[1].clone();
            }
            for fields in reply[2..].chunks(3) {
                state.buffer.push_back(Entry {
                    id: fields[0].clone(),
                    job: fields[1].parse().expect("a job id"),
                    attempt: fields[2].parse().expect("an attempt"),
                });
            }
            if state.buffer.is_empty() {
                let idle = match role {
                    Role::Consume => IDLE,
                    // A scan that came back to the start found nothing idle
                    // enough: wait before scanning again.
                    Role::Reclaim if state.cursor == "0-0" => RECLAIM_IDLE,
                    Role::Reclaim => Duration::ZERO,
                };
                tokio::time::sleep(idle).await;
            }
        }
    })
}

/// One job: a call of a few ms to a service that takes the job id as its
/// idempotency key (a timer, then the service's record in Redis). Some jobs
/// fail (see [`fate`]).
async fn run_job(
    mut conn: MultiplexedConnection,
    keys: Keys,
    consumer: String,
    entry: Entry,
) -> Outcome {
    let fate = fate(entry.job);
    tokio::time::sleep(fate.latency).await;
    let ok = !fate.fails(entry.attempt);
    let applied: i64 = lua::SERVICE
        .key(&keys.runs)
        .key(&keys.applied)
        .key(&keys.repeats)
        .arg(&entry.id)
        .arg(entry.job)
        .arg(entry.attempt)
        .arg(&consumer)
        .arg(if ok { "ok" } else { "fail" })
        .invoke_async(&mut conn)
        .await
        .expect("the service script");
    let result = match applied {
        1 => Ok(Applied::First),
        0 => Ok(Applied::Repeat),
        _ => Err(()),
    };
    Outcome { entry, result }
}

/// Acknowledges one entry whose job completed, with what goes with it (a retry
/// or a dead letter for a failed job; the consumer's log).
async fn commit(conn: &mut MultiplexedConnection, keys: &Keys, log: &str, outcome: Outcome) {
    let Outcome { entry, result } = outcome;
    let _acked: u64 = lua::COMMIT
        .key(&keys.stream)
        .key(&keys.acks)
        .key(&keys.noop_acks)
        .key(log)
        .key(&keys.dead)
        .arg(GROUP)
        .arg(&entry.id)
        .arg(if result.is_ok() { "done" } else { "failed" })
        .arg(entry.job)
        .arg(entry.attempt)
        .arg(ATTEMPTS)
        .invoke_async(conn)
        .await
        .expect("the commit script");
}

/// How many entries the broker lists as pending for `consumer`.
pub async fn pending_for(conn: &mut MultiplexedConnection, keys: &Keys, consumer: &str) -> u64 {
    let ids: Vec<redis::Value> = redis::cmd("XPENDING")
        .arg(&keys.stream)
        .arg(GROUP)
        .arg("-")
        .arg("+")
        .arg(1_000_000)
        .arg(consumer)
        .query_async(conn)
        .await
        .expect("XPENDING");
    ids.len() as u64
}
