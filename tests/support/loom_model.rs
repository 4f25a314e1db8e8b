//! The loom models' runner, for the `loom` and `loom_spawned` test crates,
//! each of which pulls this file in with `#[path]` (the support library is
//! empty under `--cfg loom`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Runs `f` under loom and prints how many interleavings it explored (run with
/// `--nocapture` to see them; `.ci/loom.sh` adds them up).
pub fn model(name: &str, f: impl Fn() + Sync + Send + 'static) {
    let explored = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&explored);
    loom::model(move || {
        counter.fetch_add(1, Relaxed);
        f();
    });
    println!("loom: {name}: {} interleavings", explored.load(Relaxed));
}
