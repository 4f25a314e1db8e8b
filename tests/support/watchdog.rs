//! Turning a hang into a failure. The limits are safety nets, never part of
//! what a test checks: code that works never comes near them.

use std::fmt::Display;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// How long a test may wait for something that should happen at once.
pub const HANG_LIMIT: Duration = Duration::from_secs(20);

/// Ends the whole test process with a message if no [`tick`](Self::tick)
/// came for its limit: for waits that cannot time out themselves (an
/// executor's `block_on`, a stream that stopped making progress). Dropping it
/// disarms it.
pub struct Watchdog {
    progress: mpsc::Sender<()>,
}

impl Watchdog {
    /// A watchdog that allows [`HANG_LIMIT`] between ticks.
    pub fn start(what: impl Display + Send + 'static) -> Self {
        Self::with_limit(what, HANG_LIMIT)
    }

    pub fn with_limit(what: impl Display + Send + 'static, limit: Duration) -> Self {
        let (progress, ticks) = mpsc::channel();
        thread::spawn(move || {
            loop {
                match ticks.recv_timeout(limit) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => {
                        eprintln!(
                            "watchdog: {what}: no progress for {limit:?} (a lost wakeup hangs the stream)"
                        );
                        std::process::exit(101);
                    }
                }
            }
        });
        Self { progress }
    }

    /// Progress: the limit starts again.
    pub fn tick(&self) {
        let _ = self.progress.send(());
    }
}

/// Spins (yielding the thread) until `condition` holds; for conditions nothing
/// announces, such as an executor's task count. Fails after [`HANG_LIMIT`].
pub fn eventually(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + HANG_LIMIT;
    while !condition() {
        assert!(
            Instant::now() < deadline,
            "watchdog: still waiting for {what}"
        );
        thread::yield_now();
    }
}
