//! The orchestrator's checks of one scenario, against what the broker
//! recorded (never against a process's memory).

use std::collections::{HashMap, HashSet};

use real::Checks;
use redis::Connection;
use redis::streams::StreamRangeReply;

use crate::lua::Keys;
use crate::records::{duplicate_runs, hash, out_of_order_commits, pending_count, repeats};
use crate::roles::ATTEMPTS;
use crate::run::{Event, Scenario, Seen};
use crate::{Failure, fate};

/// The checks of one scenario, against the broker's records.
pub fn verify(
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
