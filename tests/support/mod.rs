//! The test-support library, one file per topic: the library of the
//! `bounded-buffered-tests` package, built once and linked by its test crates
//! (`suite`, `props`, `alloc`, `stress`). Under `--cfg loom` it is empty: the
//! loom crates build their gates on loom's types and share only
//! `loom/model.rs`.
//!
//! - `gate`: futures that complete when the test opens them and count what
//!   happens to them and their outputs; an injected [`Fault`], a self-wake.
//! - `poller`: polling by hand, with a waker that does nothing.
//! - `source`: sources that count their polls, or that the test feeds.
//! - `yielding`: futures that need several polls.
//! - `executors`: tokio's runtimes, a smol pool, either as a `Pool`
//!   (`both_pools!`), a step-by-step executor.
//! - `mode`: one test body, both modes (`both_modes!`, `drive!`, `Driven`).
//! - `schedule`: a stream in either mode stepped at random, budgets checked
//!   after each step; `completions`: gates opened in a random order.
//! - `limits`: limit changes and the limits in force, for property tests.
//! - `cases`: how many cases a property test runs.
//! - `fail_fast`: fallible gates (`try_bounded`), and what the gates logged
//!   asked against the fail-fast rule.
//! - `clock`: a clock the test moves by hand (`.clock(...)`).
//! - `metrics`: a recorder that keeps what `.metrics(..)` publishes;
//!   `traces`: a subscriber that keeps each event with its spans.
//! - `panic`, `rng`, `watchdog`: expected panics, one generator, hang limits.
#![cfg(not(loom))]

mod cases;
mod clock;
mod completions;
mod executors;
mod fail_fast;
mod gate;
mod limits;
mod metrics;
mod mode;
mod panic;
mod poller;
mod rng;
mod schedule;
mod source;
mod stats;
mod traces;
mod watchdog;
mod yielding;

pub use cases::{cases, config};
pub use clock::*;
pub use completions::random_completions;
pub use executors::{Pool, SmolPool, StepExecutor, tokio_current_thread, tokio_multi_thread};
pub use fail_fast::*;
pub use gate::{Counts, Fault, Gate, GateSource, Gates, Output};
pub use limits::{Change, InForce};
pub use metrics::{Recorded, nanos};
pub use mode::{Driven, Mode, Observe, WakeCount};
pub use panic::{INJECTED, caught, quiet_injected_panics};
pub use poller::{drain_ready, poll_once};
pub use rng::Rng;
pub use schedule::{
    Case, Got, OrderedIf, Run, Step, check_ended_on_tokio, drop_and_check, drop_before_tasks,
    opener,
};
pub use source::{Counted, FedSource, Feed, counted, fed_source};
pub use stats::{assert_all_done, fresh_stats};
pub use traces::{Logged, Traces};
pub use watchdog::{HANG_LIMIT, Watchdog, eventually};
pub use yielding::{yield_now, yield_then};
