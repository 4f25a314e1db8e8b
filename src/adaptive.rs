//! Adaptive limits: a [`Controller`] fed with every item's run time sets the
//! `workers` limit, through the same budgets a [`Limits`](crate::Limits) handle
//! changes.
//!
//! The rule, written once: when an item completes, the stream asks the
//! classifier for the output's [`Verdict`]. Unless it is
//! [`Ignore`](Verdict::Ignore), the stream hands the controller a [`Sample`]
//! (when the item started, how long it ran, whether its output is
//! back-pressure, whether the limit was reached, how many were in flight) and
//! applies the limit the
//! controller returns at once, before anything else starts. A limit of 0 is
//! taken as 1: a controller hears only of completions, so a paused stream could
//! never resume. Items that never complete (expired before they started,
//! cancelled by fail fast, `close` or drop) are never classified: the
//! controller does not hear of them.

use std::fmt;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::budget::Budgets;
use crate::limits;
use crate::observe::{self, Cause};

/// What a completed item's output tells the controller: the classifier passed
/// to [`adaptive`](crate::BoundedBuffered::adaptive) returns it (or a `bool`,
/// `true` meaning back-pressure, through `From<bool>`).
///
/// # Examples
///
/// A client error says nothing about the service's load: ignore it.
///
/// ```
/// use bounded_buffered::{Aimd, BoundedStreamExt, Verdict};
/// use futures::{StreamExt, stream};
///
/// fn classify(status: &u16) -> Verdict {
///     match status {
///         429 | 503 => Verdict::Overload,
///         400..=499 => Verdict::Ignore,
///         _ => Verdict::Success,
///     }
/// }
///
/// assert_eq!(Verdict::from(true), Verdict::Overload);
/// assert_eq!(Verdict::from(false), Verdict::Success);
/// # futures::executor::block_on(async {
/// let statuses = stream::iter([200u16, 404, 503, 200])
///     .map(|status| async move { status })
///     .bounded(1, 0)
///     .adaptive(Aimd::new(1, 8), classify)
///     .collect::<Vec<_>>()
///     .await;
/// assert_eq!(statuses, [200, 404, 503, 200]);
/// # });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// A normal answer: its run time is the service's latency.
    Success,
    /// Back-pressure: the service refused or timed out (an HTTP 429 or 503).
    Overload,
    /// Neither: the output says nothing about the service's load (a client
    /// error, a call the item gave up on, a failure before the request was
    /// sent). The controller does not hear of it: its run time is not a
    /// latency and it is not back-pressure.
    Ignore,
}

impl From<bool> for Verdict {
    /// `true` is [`Verdict::Overload`], `false` [`Verdict::Success`]: a
    /// classifier written as `is_overload` keeps working.
    fn from(overload: bool) -> Self {
        if overload {
            Verdict::Overload
        } else {
            Verdict::Success
        }
    }
}

/// What the stream tells a [`Controller`] about one completed item whose
/// output was not [ignored](Verdict::Ignore).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sample {
    /// When the item started, measured from the stream's first clock reading.
    pub started: Duration,
    /// How long it ran, start to completion: the handler's duration, queueing
    /// inside the service included.
    pub run: Duration,
    /// The output is back-pressure: the classifier returned
    /// [`Verdict::Overload`] (or `true`).
    pub overload: bool,
    /// When it completed, the budgets allowed no further start: the `workers`
    /// limit (or the window) was reached. A limit that is not reached says
    /// nothing about the service: the source is the bottleneck.
    pub saturated: bool,
    /// The `workers` limit in force when it completed.
    pub limit: usize,
    /// Items started and not yet taken by the consumer when it completed,
    /// itself included: running, or complete and held (expired items aside).
    /// What the budgets count against the limit, and with the run times what
    /// Little's law needs: the limit only bounds it.
    pub in_flight: usize,
}

/// Sets a stream's `workers` limit from what its items show; plug in AIMD
/// ([`Aimd`](crate::Aimd)), Vegas, Gradient or your own.
///
/// # Examples
///
/// A controller that adds a worker after every 10 saturated completions and
/// halves on back-pressure:
///
/// ```
/// use bounded_buffered::{BoundedStreamExt, Controller, Sample};
/// use futures::{StreamExt, stream};
///
/// struct Gentle {
///     limit: usize,
///     saturated: usize,
/// }
///
/// impl Controller for Gentle {
///     fn initial(&self) -> usize {
///         self.limit
///     }
///
///     fn sample(&mut self, sample: &Sample) -> usize {
///         if sample.overload {
///             self.limit = (self.limit / 2).max(1);
///         } else if sample.saturated {
///             self.saturated += 1;
///             if self.saturated % 10 == 0 {
///                 self.limit += 1;
///             }
///         }
///         self.limit
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let mut replies = stream::iter(0..100u32)
///     .map(|n| async move { n })
///     .bounded(1, 0)
///     .adaptive(Gentle { limit: 2, saturated: 0 }, |_: &u32| false);
/// let limits = replies.limits();
/// assert_eq!(limits.workers(), 2);
/// while let Some(_) = replies.next().await {}
/// assert!(limits.workers() > 2);
/// # });
/// ```
pub trait Controller: Send + 'static {
    /// The `workers` limit to start with.
    fn initial(&self) -> usize;

    /// Learns from one completed item; returns the `workers` limit from now on.
    fn sample(&mut self, sample: &Sample) -> usize;
}

/// What [`adaptive`](crate::BoundedBuffered::adaptive) takes as its classifier:
/// any `FnMut(&O) -> V + Send + 'static`, `O` the futures' output and `V` a
/// [`Verdict`] or a `bool` (`true`: back-pressure). A trait only to name that
/// bound in one word; closures need no annotation.
///
/// # Examples
///
/// ```
/// use bounded_buffered::{Classify, Verdict};
///
/// fn check<F: Classify<Result<u32, String>>>(mut classify: F) -> Verdict {
///     classify(&Err(String::from("503"))).into()
/// }
///
/// assert_eq!(check(|reply| reply.is_err()), Verdict::Overload);
/// assert_eq!(check(|_| Verdict::Ignore), Verdict::Ignore);
/// ```
pub trait Classify<O>: FnMut(&O) -> <Self as Classify<O>>::Answer + Send + 'static {
    /// What it answers: a [`Verdict`], or a `bool`.
    type Answer: Into<Verdict>;
}

impl<O, F, V> Classify<O> for F
where
    F: FnMut(&O) -> V + Send + 'static,
    V: Into<Verdict>,
{
    type Answer = V;
}

/// The stream's side of adaptivity: its controller and classifier, if any, type
/// erased so that the stream's type does not change. Behind a `Mutex` only so
/// the stream stays `Sync`; the stream reaches it through `&mut`, never locks.
pub(crate) struct Adjust<O>(Option<Box<Mutex<dyn Feedback<O>>>>);

/// A controller with its output classifier.
pub(crate) trait Feedback<O>: Send {
    fn initial(&self) -> usize;
    fn sample(
        &mut self,
        output: &O,
        started: Duration,
        run: Duration,
        reach: (bool, usize),
        limit: usize,
    ) -> Option<(usize, bool)>;
}

struct Adaptive<C, F> {
    controller: C,
    classify: F,
}

impl<O, C, F> Feedback<O> for Adaptive<C, F>
where
    C: Controller,
    F: Classify<O>,
{
    fn initial(&self) -> usize {
        self.controller.initial()
    }

    fn sample(
        &mut self,
        output: &O,
        started: Duration,
        run: Duration,
        (saturated, in_flight): (bool, usize),
        limit: usize,
    ) -> Option<(usize, bool)> {
        let overload = match (self.classify)(output).into() {
            Verdict::Success => false,
            Verdict::Overload => true,
            // Not heard of: the limit stays, even one a handle set to 0.
            Verdict::Ignore => return None,
        };
        let sample = Sample {
            started,
            run,
            overload,
            saturated,
            limit,
            in_flight,
        };
        Some((self.controller.sample(&sample), overload))
    }
}

impl<O> Adjust<O> {
    pub(crate) fn none() -> Self {
        Self(None)
    }

    pub(crate) fn new<C: Controller, F: Classify<O>>(controller: C, classify: F) -> Self {
        Self(Some(Box::new(Mutex::new(Adaptive {
            controller,
            classify,
        }))))
    }

    /// The limit the controller starts with, if there is one.
    pub(crate) fn initial(&mut self) -> Option<usize> {
        Some(Self::controller(self.0.as_mut()?).initial().max(1))
    }

    fn controller(feedback: &mut Mutex<dyn Feedback<O>>) -> &mut dyn Feedback<O> {
        feedback
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Feeds one completed item to the controller, if there is one, and applies
    /// the limit it returns. `(active, held, expired)` are the counts just
    /// before it completed (itself among the `active`): the limit was reached
    /// if the budgets allowed no further start then.
    /// Whether a controller is set.
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Hands the controller the sample of an item that completed with
    /// `output`: when it started and how long it ran, whether the limit was
    /// reached (`saturated`, by the rule the stream starts items by) and how
    /// many were in flight, and applies the limit it returns to `budgets`
    /// and the handles' `settings`.
    #[inline]
    pub(crate) fn observe(
        &mut self,
        output: &O,
        (started, run): (Duration, Duration),
        reach: (bool, usize),
        budgets: &mut Budgets,
        settings: &OnceLock<std::sync::Arc<limits::Settings>>,
    ) {
        let Some(feedback) = self.0.as_mut() else {
            return;
        };
        let Some((limit, overload)) =
            Self::controller(feedback).sample(output, started, run, reach, budgets.workers)
        else {
            return;
        };
        let limit = limit.max(1);
        if limit != budgets.workers {
            let cause = Cause::Controller { overload };
            // Counted, shown and logged where the limits are kept: in the
            // handles' settings, if there are any (always with `metrics`).
            match settings.get() {
                Some(settings) => settings.set(Some(limit), None, cause),
                None => observe::limit_changed(
                    (budgets.workers, budgets.waiting),
                    (limit, budgets.waiting),
                    cause,
                ),
            }
            budgets.set(limit, budgets.waiting);
        }
    }
}

impl<O> fmt::Debug for Adjust<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Adaptive"
        } else {
            "Fixed"
        })
    }
}
