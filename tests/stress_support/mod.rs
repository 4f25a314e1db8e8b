//! What the two stress binaries (`verify_stress`, `verify_spawned_stress`)
//! share: the item count and the watchdog that turns a hang into a failure.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

/// Items per test: `BB_STRESS_ITEMS`, or 100 000 (quick in a debug build).
pub fn items() -> u64 {
    std::env::var("BB_STRESS_ITEMS")
        .ok()
        .and_then(|items| items.parse().ok())
        .unwrap_or(100_000)
}

/// Fails the whole test binary if `tick` is not called for a while: the stream
/// stopped making progress. Dropping the watchdog stops it.
pub struct Watchdog {
    progress: mpsc::Sender<()>,
}

impl Watchdog {
    pub fn start(name: &'static str) -> Self {
        let stall = Duration::from_secs(
            std::env::var("BB_STRESS_STALL_SECS")
                .ok()
                .and_then(|secs| secs.parse().ok())
                .unwrap_or(30),
        );
        let (progress, ticks) = mpsc::channel();
        thread::spawn(move || {
            loop {
                match ticks.recv_timeout(stall) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => {
                        eprintln!(
                            "{name}: no progress for {stall:?}: a wakeup was lost (the stream hangs)"
                        );
                        std::process::exit(1);
                    }
                }
            }
        });
        Self { progress }
    }

    pub fn tick(&self) {
        let _ = self.progress.send(());
    }
}
