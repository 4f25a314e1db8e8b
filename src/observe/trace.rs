//! Feature `tracing`: the span current where a stream was spawned, entered by
//! its worker tasks, and `debug!` events when a limit changes.
//!
//! In place, a stream's futures are polled inside the consumer's poll, so
//! they log in whatever span the consumer is in. Spawned, they are polled by
//! tasks the executor runs, where the span the stream was built in is lost
//! (the bug class of pg_exporter #39, linkerd2-proxy #1243): so `spawn_on`
//! keeps [`Span::current`], and each task enters it for the whole of its poll
//! (the futures it runs, the source it pulls). A future that carries its own
//! span (`.instrument(span)`) enters it inside, so its own span is the
//! current one where it logs, as a child of the stream's.

use crate::observe::Cause;

/// The span current at `spawn_on`.
#[derive(Debug)]
pub(crate) struct Span(tracing::Span);

impl Span {
    pub(crate) fn current() -> Self {
        Span(tracing::Span::current())
    }

    /// Enters the span until the guard is dropped.
    #[inline]
    pub(crate) fn enter(&self) -> tracing::span::Entered<'_> {
        self.0.enter()
    }
}

/// A limit in force changed from `old` to `new` (`(workers, waiting)`):
/// one `debug!` event for each of the two that moved, with the reason.
#[cold]
pub(crate) fn limit_changed(old: (usize, usize), new: (usize, usize), cause: Cause) {
    for (limit, old, new) in [("workers", old.0, new.0), ("waiting", old.1, new.1)] {
        if old != new {
            tracing::debug!(
                target: "bounded_buffered",
                limit,
                old,
                new,
                reason = cause.reason(),
                "limit changed"
            );
        }
    }
}
