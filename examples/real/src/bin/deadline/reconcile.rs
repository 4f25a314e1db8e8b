//! The reconciliation: every request id put in one class from the stream's
//! outcomes and the source's rest, printed, and checked against the
//! server's journal.

use std::collections::HashMap;
use std::time::Instant;

use bounded_buffered::{Deadline, Unfinished};
use hyper::StatusCode;
use real::Checks;

use crate::EXAMPLES;
use crate::client::{Answer, Call, Failure};
use crate::plan::{Caller, TIGHT, Work, caller, work};

/// Every request of the run, by what became of it.
#[derive(Default)]
pub struct Classes {
    /// Outputs the stream yielded: answers, or failures on the way.
    pub completed: Vec<Result<Answer, Failure>>,
    /// Never started: their own deadline had passed when a worker picked
    /// them up. Never sent.
    pub late_own: Vec<u32>,
    /// Never started: still waiting at the run's deadline. Never sent.
    pub late_run: Vec<LateAtRun>,
    /// Started, and dropped at the run's deadline: sent, or on the way, or
    /// not yet; the server's journal says whether it applied them.
    pub cancelled: Vec<u32>,
    /// What the source still held: never pulled.
    pub never_pulled: Vec<u32>,
    /// `Unfinished::Deadline` outcomes (one expected, last).
    pub deadline_outcomes: usize,
    /// Outcomes after the deadline's, counted once per deadline outcome
    /// before them (none expected: it is the last).
    after_deadline: usize,
    /// Whether the source had ended by the deadline, as its outcome says.
    pub source_ended: Option<bool>,
    /// Outcomes of another kind (none expected: no `max_wait`, no `shed`).
    other: Vec<String>,
    /// Late requests whose input position is not their id.
    positions_off: usize,
}

pub struct LateAtRun {
    id: u32,
    /// Its own deadline had passed by the run's too: not worth retrying.
    caller_gave_up: bool,
}

type Outcome = Result<Result<Answer, Failure>, Unfinished<Deadline<Call>>>;

impl Classes {
    /// Puts the request of one outcome of a run with the deadline
    /// `run_deadline` in its class.
    pub fn record(&mut self, outcome: Outcome, run_deadline: Instant) {
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

pub fn print_classes(classes: &Classes, applied: &HashMap<u32, u32>) {
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

pub fn check_classes(checks: &mut Checks, classes: &Classes, requests: u32) {
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

pub fn check_journal(checks: &mut Checks, classes: &Classes, applied: &HashMap<u32, u32>) {
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
