//! The plan, the same in every run: what the server's handler does for each
//! request (quick, slow, or hung before or after its write), and how much of
//! its own deadline each request's caller has left.

use std::time::{Duration, Instant};

use crate::HUNG;

/// Spreads consecutive ids over the plan (Knuth's multiplicative hash), the
/// same in every run.
fn scattered(id: u32, multiplier: u32) -> u32 {
    id.wrapping_mul(multiplier) >> 16
}

/// What the server's handler does for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// The write after 2-8 ms.
    Quick,
    /// The write after 40-80 ms.
    Slow,
    /// Waits `HUNG` for a lock, then writes.
    HungBeforeWrite,
    /// Writes at once, then waits `HUNG` for a replica before answering.
    HungAfterWrite,
}

pub fn work(id: u32) -> Work {
    match scattered(id, 2_654_435_761) % 40 {
        0 => Work::HungBeforeWrite,
        1 => Work::HungAfterWrite,
        2..=6 => Work::Slow,
        _ => Work::Quick,
    }
}

/// How long the handler takes before its write, and after it.
pub fn handling_time(id: u32) -> (Duration, Duration) {
    let spread = u64::from(scattered(id, 2_654_435_761) / 40);
    match work(id) {
        Work::Quick => (Duration::from_millis(2 + spread % 7), Duration::ZERO),
        Work::Slow => (Duration::from_millis(40 + spread % 41), Duration::ZERO),
        Work::HungBeforeWrite => (HUNG, Duration::ZERO),
        Work::HungAfterWrite => (Duration::from_millis(1), HUNG),
    }
}

/// A passed deadline: its caller gave up this long before the batch started.
pub const PASSED_BY: Duration = Duration::from_millis(20);
/// A tight deadline: what is left of it when the request is pulled.
pub const TIGHT: Duration = Duration::from_millis(3);
/// An ample deadline: past the run's.
pub const AMPLE: Duration = Duration::from_secs(5);

/// The deadline request `id` brings, pulled at `pulled` in a batch that
/// started at `start`: an end-to-end deadline of which its caller spent all
/// (1 in 25), most (1 in 25), or little.
pub fn request_deadline(id: u32, start: Instant, pulled: Instant) -> Instant {
    match caller(id) {
        Caller::GaveUp => start - PASSED_BY,
        Caller::Hurried => pulled + TIGHT,
        Caller::Ample => pulled + AMPLE,
    }
}

/// How much of its deadline request `id`'s caller has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// None: it gave up before the batch started.
    GaveUp,
    /// `TIGHT`, from the pull on.
    Hurried,
    /// `AMPLE`, from the pull on.
    Ample,
}

pub fn caller(id: u32) -> Caller {
    match scattered(id, 2_246_822_519) % 25 {
        0 => Caller::GaveUp,
        1 => Caller::Hurried,
        _ => Caller::Ample,
    }
}
