//! Panics the tests expect: their messages, and a hook that keeps them out of
//! the test output.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// Every injected panic message starts with this, so the quiet hook can tell
/// them from real failures.
pub const INJECTED: &str = "injected panic";

/// The in-place stream's refusal to be polled after a panic escaped it.
pub const POLLED_AFTER_ESCAPE: &str = "polled after a panic escaped";

/// The spawned stream's refusal to be polled after it re-raised a panic.
pub const POLLED_AFTER_PANIC: &str = "polled after it re-raised a panic";

/// The message of a caught panic.
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        String::from("<non-string panic payload>")
    }
}

/// Runs `f`, turning a panic into its message.
pub fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| message(&*payload))
}

/// Keeps the expected panics (injected ones, and the streams' refusals to be
/// polled after one) out of the test output; any other panic still reports.
pub fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let message = message(info.payload());
            // `starts_with`: a failed assertion that quotes an injected panic
            // must still show.
            let expected = message.starts_with(INJECTED)
                || message.contains(POLLED_AFTER_ESCAPE)
                || message.contains(POLLED_AFTER_PANIC);
            if !expected {
                default(info);
            }
        }));
    });
}
