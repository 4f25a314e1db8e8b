//! The crate behind a broker: Redis Streams consumer groups, at-least-once,
//! several consumer processes, a crash and a graceful stop. One binary, three
//! roles, and an orchestrator that runs them as processes against a Redis
//! server and checks the outcome against what the broker recorded:
//!
//! - `produce`: adds N jobs to a stream (`XADD`).
//! - `consume`: one consumer of the group. It reads pages of entries
//!   (`XREADGROUP`), runs each job through `bounded(workers, waiting)` (with
//!   `--window`, `.ordered(window)`: its effects are committed in the order
//!   the consumer read them), spawned on its runtime, and acknowledges each
//!   entry (`XACK`) only after its job completed, never when the stream pulls
//!   it. On SIGTERM it calls `close()`, drains, commits what completed, hands
//!   back what it read and never ran, and exits with nothing pending.
//! - `reclaim`: the same pipeline fed by `XAUTOCLAIM` with a minimum idle
//!   time: it takes over the pending entries of a consumer that died.
//! - `run`: starts the others as processes and checks (see `run.rs`, and
//!   `processes.rs`, `verify.rs` and `records.rs` beside it).
//!
//! A job is a call of 2 to 6 ms to a service that takes the job id as its
//! idempotency key and records each job once: a repeated delivery is
//! recognised, not applied twice. One job in 50 fails on its first attempt
//! and one in 250 on every attempt: a failed job is added again with the next
//! attempt, and after the third it goes to a dead-letter stream.
//!
//! ```sh
//! scripts/broker.sh              # starts redis-server on a loopback port, 20,000 jobs a run
//! scripts/broker.sh 2000         # a smaller run (CI)
//! cargo run --release -p real --bin broker -- run --redis redis://127.0.0.1:6379 --jobs 2000
//! ```
//!
//! It exits non-zero if a check fails; throughput is printed, never checked.

mod lua;
mod processes;
mod records;
mod roles;
mod run;
mod verify;

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use roles::Role;

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let role = argv.next().unwrap_or_default();
    let args = Args::parse(argv);
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    };
    match role.as_str() {
        "produce" => roles::produce(&args),
        "consume" => runtime().block_on(roles::consume(&args, Role::Consume)),
        "reclaim" => runtime().block_on(roles::consume(&args, Role::Reclaim)),
        "run" => run::run(&args),
        _ => {
            eprintln!(
                "usage: broker run --redis URL [--jobs N] [--rounds R]\n       \
                 broker produce|consume|reclaim --redis URL --prefix P ... (started by `run`)"
            );
            ExitCode::from(2)
        }
    }
}

/// `--name value` pairs.
#[derive(Debug, Default)]
pub struct Args(HashMap<String, String>);

impl Args {
    fn parse(mut argv: impl Iterator<Item = String>) -> Self {
        let mut args = HashMap::new();
        while let Some(name) = argv.next() {
            let name = name
                .strip_prefix("--")
                .unwrap_or_else(|| panic!("expected --name, got {name:?}"));
            let value = argv
                .next()
                .unwrap_or_else(|| panic!("--{name} needs a value"));
            args.insert(name.to_string(), value);
        }
        Args(args)
    }

    pub fn text(&self, name: &str) -> String {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("--{name} is required"))
            .clone()
    }

    pub fn optional(&self, name: &str) -> Option<u64> {
        self.0.get(name).map(|value| {
            value
                .parse()
                .unwrap_or_else(|_| panic!("--{name} is a whole number; got {value:?}"))
        })
    }

    pub fn number(&self, name: &str) -> u64 {
        self.optional(name)
            .unwrap_or_else(|| panic!("--{name} is required"))
    }
}

/// What happens to a job: its call's latency, and whether it fails.
#[derive(Clone, Copy, Debug)]
pub struct Fate {
    pub latency: Duration,
    pub failure: Failure,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Failure {
    None,
    /// Fails on its first attempt, succeeds on the retry.
    Once,
    /// Fails on every attempt: dead-lettered after the last.
    Always,
}

impl Fate {
    pub fn fails(&self, attempt: u32) -> bool {
        match self.failure {
            Failure::None => false,
            Failure::Once => attempt == 1,
            Failure::Always => true,
        }
    }
}

/// A job's fate, from its id alone, so that the checks know it too.
pub fn fate(job: u64) -> Fate {
    // splitmix64: the latency spread over 2 to 6 whole ms (tokio's timer
    // rounds a sleep up to its next millisecond).
    let mut z = job.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let failure = if job % 250 == 3 {
        Failure::Always
    } else if job % 50 == 7 {
        Failure::Once
    } else {
        Failure::None
    };
    Fate {
        latency: Duration::from_millis(2 + z % 5),
        failure,
    }
}
