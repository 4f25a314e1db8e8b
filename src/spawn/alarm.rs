//! The alarm task of a spawned stream with a run deadline or a start rate:
//! it sleeps on the stream's timer until the instant the engine names
//! ([`Engine::alarm`](crate::engine::Engine::alarm)), then takes the lock so
//! that the engine can act (stop the run at its deadline, or send a task
//! for a start a token freed), and sleeps again. Nothing else wakes a
//! stream whose futures are all blocked and whose consumer is parked. One
//! per stream, spawned with the first worker; it holds no item, and ends
//! once the run is over.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::shared::Shared;
use crate::engine::SendSpec;
use crate::sync::Arc;
use crate::time::Alarm;

/// What the alarm task does after a lock section.
pub(super) enum Wake {
    /// Sleep until this instant, then look again.
    At(std::time::Instant),
    /// Nothing to wait for now; a section that needs the alarm wakes it.
    Idle,
    /// The run is over.
    Stop,
}

pub(super) struct AlarmTask<R: SendSpec> {
    shared: Arc<Shared<R>>,
    alarm: Alarm,
}

impl<R: SendSpec> AlarmTask<R> {
    pub(super) fn new(shared: Arc<Shared<R>>, alarm: Alarm) -> Self {
        Self { shared, alarm }
    }
}

impl<R: SendSpec> Future for AlarmTask<R> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        // Before the section: a wake after it reaches this poll's waker.
        this.shared.alarm_waker.register(cx.waker());
        let mut fired = false;
        loop {
            match Shared::section(&this.shared, |state| state.alarm()) {
                Wake::Stop => {
                    this.alarm.disarm();
                    return Poll::Ready(());
                }
                Wake::Idle => return Poll::Pending,
                Wake::At(at) => {
                    if this.alarm.poll_at(at, cx).is_pending() {
                        return Poll::Pending;
                    }
                    // Its time came: a section with a fresh reading acts.
                    // A timer that fires again at once (its clock ahead of
                    // the stream's) gets a yield, not a spin.
                    if std::mem::replace(&mut fired, true) {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}
