//! What a stream tells the world around it, beside `stats()` and
//! `timings()`: its figures through the `metrics` facade (feature `metrics`,
//! [`metrics.rs`](self::metrics)), the caller's `tracing` span inside spawned
//! tasks and `debug!` events on limit changes (feature `tracing`,
//! [`trace.rs`](self::trace)).
//!
//! The stream's code calls the same few hooks whatever the features: each
//! hook is here twice, once real and once inert (`inert.rs`: empty types and
//! empty `#[inline(always)]` functions), so that with a feature off nothing of
//! it is compiled into the stream, and the stream's modules carry no `cfg`.

#[cfg(not(all(feature = "metrics", feature = "tracing")))]
mod inert;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "tracing")]
mod trace;

#[cfg(not(feature = "metrics"))]
pub(crate) use self::inert::{LimitSeries, Metrics, Samples};
#[cfg(feature = "metrics")]
pub use self::metrics::HISTOGRAM_BUCKETS;
#[cfg(feature = "metrics")]
pub(crate) use self::metrics::{LimitSeries, Metrics, Samples};

#[cfg(not(feature = "tracing"))]
pub(crate) use self::inert::{Span, limit_changed};
#[cfg(feature = "tracing")]
pub(crate) use self::trace::{Span, limit_changed};

/// Who changed a limit: a [`Limits`](crate::Limits) handle, or the adaptive
/// controller after a sample (which was back-pressure or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Handle,
    Controller { overload: bool },
}

impl Cause {
    /// The reason as a `debug!` event names it.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn reason(self) -> &'static str {
        match self {
            Cause::Handle => "limits handle",
            Cause::Controller { overload: true } => "adaptive: back-pressure",
            Cause::Controller { overload: false } => "adaptive: run times",
        }
    }
}

/// Which of a stream's durations a sample is (the three of
/// [`Timings`](crate::Timings)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "metrics"), allow(dead_code))]
pub(crate) enum Kind {
    Wait = 0,
    Run = 1,
    Held = 2,
}
