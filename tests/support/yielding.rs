//! Futures that need several polls without any outside event.

use std::pin::Pin;
use std::task::{Context, Poll};

/// Wakes itself and returns `Pending` `yields` times, then resolves to its
/// value. Allocates nothing.
pub struct YieldThen<T> {
    yields: usize,
    value: Option<T>,
}

pub fn yield_then<T>(yields: usize, value: T) -> YieldThen<T> {
    YieldThen {
        yields,
        value: Some(value),
    }
}

/// One yield that works on any executor.
pub fn yield_now() -> YieldThen<()> {
    yield_then(1, ())
}

impl<T: Unpin> Future for YieldThen<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if self.yields == 0 {
            return Poll::Ready(
                self.value
                    .take()
                    .expect("YieldThen polled after completion"),
            );
        }
        self.yields -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
