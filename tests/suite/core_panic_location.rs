//! Contract point 11: the bad-input panics point at the caller's line
//! (`#[track_caller]`). Alone in its binary, since it swaps the process-wide
//! panic hook.

// Under `--cfg loom` the crate uses loom's primitives, which work only inside
// `loom::model`, and smol is not built: these tests are for the normal build.

use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Context;

use bounded_buffered::BoundedStreamExt;
use futures::{Stream, stream};

/// Runs `call`, which must panic, and returns the file and line the panic
/// reported.
fn panic_location(call: impl FnOnce()) -> (String, u32) {
    let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
    let record = Arc::clone(&seen);
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let location = info.location().map(|at| (at.file().to_owned(), at.line()));
        *record.lock().expect("the hook runs once at a time") = location;
    }));
    let result = panic::catch_unwind(AssertUnwindSafe(call));
    panic::set_hook(previous);
    assert!(result.is_err(), "the call did not panic");
    let location = seen.lock().expect("the hook is done").take();
    location.expect("the panic had a location")
}

#[test]
fn bad_budgets_panic_at_the_callers_line() {
    let here = |line: u32| (file!().to_owned(), line);

    let line = line!() + 1;
    let at = panic_location(|| drop(stream::iter([std::future::ready(())]).bounded(0, 1)));
    assert_eq!(at, here(line), "workers == 0");

    let unpolled = stream::iter([std::future::ready(())]).bounded(1, 1);
    let line = line!() + 1;
    let at = panic_location(|| drop(unpolled.ordered(0)));
    assert_eq!(at, here(line), "window == 0");

    let mut polled = stream::iter([std::future::ready(())]).bounded(1, 1);
    let waker = futures::task::noop_waker();
    let _ = Pin::new(&mut polled).poll_next(&mut Context::from_waker(&waker));
    let line = line!() + 1;
    let at = panic_location(|| drop(polled.ordered(1)));
    assert_eq!(at, here(line), "ordered after the first poll");
}
