//! What a stream with deadlines hands back for an item that did not finish:
//! [`Unfinished`], one of an expired, shed or late item (never started,
//! future handed back), an item cancelled at the run's deadline (started,
//! dropped, its input position handed back), or the deadline itself, last.

use std::error::Error;
use std::fmt;
use std::time::Instant;

use crate::expiry::{Expired, Unstarted, sealed};
use crate::shed::Rejected;

/// An item that was never started because a deadline passed first: the
/// run's ([`deadline`](crate::BoundedBuffered::deadline)), or its own
/// ([`Deadline`](crate::Deadline), checked when a worker picks it up).
///
/// It holds the item's future, never polled: [`into_inner`](Self::into_inner)
/// hands it back, so the caller can record it, retry it, or run it anyway.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// use bounded_buffered::{BoundedStreamExt, Deadline, Unfinished};
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let now = Instant::now();
/// // The second item's caller gave up before it could start.
/// let outcomes: Vec<_> = stream::iter([now + Duration::from_secs(60), now])
///     .map(|deadline| Deadline::new(deadline, async { "done" }))
///     .bounded(1, 1)
///     .item_deadlines()
///     .collect()
///     .await;
/// assert_eq!(outcomes[0].as_ref().ok(), Some(&"done"));
/// let Err(Unfinished::Late(late)) = &outcomes[1] else { panic!() };
/// assert!(late.is_own() && late.deadline() == now && late.position() == 1);
/// # });
/// ```
pub struct Late<F> {
    future: F,
    deadline: Instant,
    position: u64,
    own: bool,
}

impl<F> Late<F> {
    pub(crate) fn new(future: F, deadline: Instant, position: u64, own: bool) -> Self {
        Self {
            future,
            deadline,
            position,
            own,
        }
    }

    /// The deadline that passed.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether it was the item's own deadline ([`Deadline`](crate::Deadline)),
    /// rather than the run's: its own had passed by the time a worker
    /// picked it up, or, for an item still waiting when the run's deadline
    /// passed, its own came first (its caller is gone: not one to retry).
    pub fn is_own(&self) -> bool {
        self.own
    }

    /// The item's input position: 0 for the first item the stream pulled
    /// from its source, 1 for the next, and so on.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The item's future, never polled, borrowed: to look at the item (its
    /// key, its deadline) before deciding what to do with it.
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The item's future, never polled.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F> fmt::Debug for Late<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Late")
            .field("deadline", &self.deadline)
            .field("own", &self.own)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<F> fmt::Display for Late<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whose = if self.own { "its own" } else { "the run's" };
        write!(
            f,
            "item {} was not started: {whose} deadline passed",
            self.position
        )
    }
}

impl<F> Error for Late<F> {}

/// An item that had started and was cancelled (its future dropped) at the
/// run's [`deadline`](crate::BoundedBuffered::deadline): the stream did not
/// see it complete by then, so whatever it does outside the stream (a write,
/// a request) may or may not have happened. Its input position says which
/// item it was, so that the caller can reconcile it.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// use bounded_buffered::{BoundedStreamExt, TokioTimer, Unfinished};
/// use futures::{StreamExt, stream};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let deadline = tokio::time::Instant::now().into_std() + Duration::from_secs(1);
/// // Item 1 hangs: at the deadline it is cancelled, and said to be.
/// let outcomes: Vec<_> = stream::iter(0..3u64)
///     .map(|n| async move {
///         let ms = if n == 1 { 3_600_000 } else { 10 };
///         tokio::time::sleep(Duration::from_millis(ms)).await;
///         n
///     })
///     .bounded(3, 0)
///     .timer(TokioTimer)
///     .deadline(deadline)
///     .collect()
///     .await;
/// assert_eq!(outcomes[0].as_ref().ok(), Some(&0));
/// assert_eq!(outcomes[1].as_ref().ok(), Some(&2));
/// let Err(Unfinished::Cancelled(cancelled)) = &outcomes[2] else { panic!() };
/// assert_eq!(cancelled.position(), 1);
/// assert!(outcomes[3].as_ref().is_err_and(Unfinished::is_deadline));
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancelled {
    position: u64,
}

impl Cancelled {
    pub(crate) fn new(position: u64) -> Self {
        Self { position }
    }

    /// The item's input position: 0 for the first item the stream pulled
    /// from its source.
    pub fn position(&self) -> u64 {
        self.position
    }
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "item {} was cancelled at the run's deadline: it had started and not completed",
            self.position
        )
    }
}

impl Error for Cancelled {}

/// The last outcome of a run that its [`deadline`](crate::BoundedBuffered::deadline)
/// ended: nothing more was pulled or started from the deadline on, and what
/// was still waiting or running came back before this as
/// [`Unfinished::Late`] and [`Unfinished::Cancelled`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlinePassed {
    deadline: Instant,
    source_ended: bool,
}

impl DeadlinePassed {
    pub(crate) fn new(deadline: Instant, source_ended: bool) -> Self {
        Self {
            deadline,
            source_ended,
        }
    }

    /// The run's deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the source had ended before the deadline: `false` means it
    /// may hold items the stream never pulled.
    pub fn source_ended(&self) -> bool {
        self.source_ended
    }
}

impl fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the run's deadline passed: nothing more was pulled or started")?;
        if !self.source_ended {
            f.write_str(" (the source was not done)")?;
        }
        Ok(())
    }
}

impl Error for DeadlinePassed {}

/// What a stream with a run [`deadline`](crate::BoundedBuffered::deadline)
/// or [item deadlines](crate::BoundedBuffered::item_deadlines) yields for an
/// item that did not finish, and once for the deadline itself: every item
/// comes back exactly once, as an output or as one of these.
///
/// The first three were never started, and hand back the untouched future
/// ([`into_inner`](Self::into_inner)); a cancelled item had started, and hands
/// back its input position. With `max_wait` and `shed` on such a stream,
/// their outcomes come here too, so one type covers every cause.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
///
/// use bounded_buffered::{BoundedStreamExt, Unfinished};
/// use futures::{StreamExt, stream};
///
/// # futures::executor::block_on(async {
/// let mut done = 0;
/// let mut retry = Vec::new();
/// let mut outcomes = stream::iter(0..4u32)
///     .map(|n| async move { n })
///     .bounded(2, 2)
///     .timer(|_at: Instant| futures::future::pending::<()>())
///     .deadline(Instant::now() + Duration::from_secs(60));
/// while let Some(outcome) = outcomes.next().await {
///     match outcome {
///         Ok(_) => done += 1,
///         Err(Unfinished::Late(late)) => retry.push(late.into_inner()),
///         Err(Unfinished::Cancelled(cancelled)) => println!("check item {}", cancelled.position()),
///         Err(Unfinished::Deadline(end)) => println!("{end}"),
///         Err(other) => println!("{other}"),
///     }
/// }
/// assert_eq!((done, retry.len()), (4, 0));
/// # });
/// ```
pub enum Unfinished<F> {
    /// Never started: it waited longer than `max_wait`.
    Expired(Expired<F>),
    /// Never started: it was shed (the waiting queue was full).
    Rejected(Rejected<F>),
    /// Never started: a deadline passed, the run's or its own.
    Late(Late<F>),
    /// Started, and dropped at the run's deadline before it completed.
    Cancelled(Cancelled),
    /// The run's deadline passed: the last outcome of the run.
    Deadline(DeadlinePassed),
}

impl<F> Unfinished<F> {
    /// The item's future, never polled, if it was never started (expired,
    /// shed or late); `None` for a cancelled item or the deadline.
    pub fn into_inner(self) -> Option<F> {
        match self {
            Unfinished::Expired(expired) => Some(expired.into_inner()),
            Unfinished::Rejected(rejected) => Some(rejected.into_inner()),
            Unfinished::Late(late) => Some(late.into_inner()),
            Unfinished::Cancelled(_) | Unfinished::Deadline(_) => None,
        }
    }

    /// Whether this is the deadline's own outcome, the run's last.
    pub fn is_deadline(&self) -> bool {
        matches!(self, Unfinished::Deadline(_))
    }
}

impl<F> fmt::Debug for Unfinished<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfinished::Expired(expired) => f.debug_tuple("Expired").field(expired).finish(),
            Unfinished::Rejected(rejected) => f.debug_tuple("Rejected").field(rejected).finish(),
            Unfinished::Late(late) => f.debug_tuple("Late").field(late).finish(),
            Unfinished::Cancelled(cancelled) => {
                f.debug_tuple("Cancelled").field(cancelled).finish()
            }
            Unfinished::Deadline(end) => f.debug_tuple("Deadline").field(end).finish(),
        }
    }
}

impl<F> fmt::Display for Unfinished<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfinished::Expired(expired) => expired.fmt(f),
            Unfinished::Rejected(rejected) => rejected.fmt(f),
            Unfinished::Late(late) => late.fmt(f),
            Unfinished::Cancelled(cancelled) => cancelled.fmt(f),
            Unfinished::Deadline(end) => end.fmt(f),
        }
    }
}

impl<F> Error for Unfinished<F> {}

impl<F> sealed::Sealed for Unfinished<F> {}

impl<F> Unstarted<F> for Unfinished<F> {
    const EXPIRES: bool = true;
    const REJECTS: bool = true;
    const DEADLINES: bool = true;

    fn expired(expired: Expired<F>) -> Result<Self, Expired<F>> {
        Ok(Unfinished::Expired(expired))
    }

    fn rejected(rejected: Rejected<F>) -> Result<Self, Rejected<F>> {
        Ok(Unfinished::Rejected(rejected))
    }

    fn late(late: Late<F>) -> Result<Self, Late<F>> {
        Ok(Unfinished::Late(late))
    }

    fn cancelled(cancelled: Cancelled) -> Option<Self> {
        Some(Unfinished::Cancelled(cancelled))
    }

    fn deadline_passed(end: DeadlinePassed) -> Option<Self> {
        Some(Unfinished::Deadline(end))
    }

    fn is_rejected(&self) -> bool {
        matches!(self, Unfinished::Rejected(_))
    }
}
