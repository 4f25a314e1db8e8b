//! Adaptive limits: a [`Controller`] fed with every item's run time sets the
//! `workers` limit, through the same budgets a [`Limits`](crate::Limits) handle
//! changes.
//!
//! The rule, written once: when an item completes, the stream hands the
//! controller a [`Sample`] (when the item started, how long it ran, whether its
//! output is back-pressure, whether the limit was reached) and applies the limit
//! the controller returns at once, before anything else starts. A limit of 0 is
//! taken as 1: a controller hears only of completions, so a paused stream could
//! never resume.

use std::fmt;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate::budget::Budgets;
use crate::limits;

/// What the stream tells a [`Controller`] about one completed item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sample {
    /// When the item started, measured from the stream's first clock reading.
    pub started: Duration,
    /// How long it ran, start to completion: the handler's duration, queueing
    /// inside the service included.
    pub run: Duration,
    /// The output is back-pressure (the `is_overload` classifier said so: an
    /// HTTP 429 or 503, a timeout).
    pub overload: bool,
    /// When it completed, the budgets allowed no further start: the `workers`
    /// limit (or the window) was reached. A limit that is not reached says
    /// nothing about the service: the source is the bottleneck.
    pub saturated: bool,
    /// The `workers` limit in force when it completed.
    pub limit: usize,
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
        saturated: bool,
        limit: usize,
    ) -> usize;
}

struct Adaptive<C, F> {
    controller: C,
    is_overload: F,
}

impl<O, C, F> Feedback<O> for Adaptive<C, F>
where
    C: Controller,
    F: FnMut(&O) -> bool + Send,
{
    fn initial(&self) -> usize {
        self.controller.initial()
    }

    fn sample(
        &mut self,
        output: &O,
        started: Duration,
        run: Duration,
        saturated: bool,
        limit: usize,
    ) -> usize {
        let sample = Sample {
            started,
            run,
            overload: (self.is_overload)(output),
            saturated,
            limit,
        };
        self.controller.sample(&sample)
    }
}

impl<O> Adjust<O> {
    pub(crate) fn none() -> Self {
        Self(None)
    }

    pub(crate) fn new<C, F>(controller: C, is_overload: F) -> Self
    where
        C: Controller,
        F: FnMut(&O) -> bool + Send + 'static,
    {
        Self(Some(Box::new(Mutex::new(Adaptive {
            controller,
            is_overload,
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
    #[inline]
    pub(crate) fn observe(
        &mut self,
        output: &O,
        (started, run): (Duration, Duration),
        (active, held, expired): (usize, usize, usize),
        budgets: &mut Budgets,
        shared: &OnceLock<std::sync::Arc<limits::Shared>>,
    ) {
        let Some(feedback) = self.0.as_mut() else {
            return;
        };
        let saturated = !budgets.may_start(active, held, expired);
        let limit = Self::controller(feedback)
            .sample(output, started, run, saturated, budgets.workers)
            .max(1);
        if limit != budgets.workers {
            budgets.set(limit, budgets.waiting);
            if let Some(shared) = shared.get() {
                shared.workers.store(limit, SeqCst);
            }
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
