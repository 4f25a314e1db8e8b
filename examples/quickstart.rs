//! The crate at work, one budget at a time: `cargo run --example quickstart`.
//!
//! Handlers "do I/O" with tokio timers on a paused clock, so the run takes no real
//! time and prints the same figures on every machine.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use bounded_buffered::{BoundedStreamExt, Histogram};
use futures::{StreamExt, TryStreamExt, stream};
use tokio::time::{Instant, sleep};

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        workers_and_waiting().await;
        admission_boundary().await;
        ordered_window().await;
        spawned().await;
        fail_fast().await;
        graceful_close().await;
        expiry_and_timings().await;
    });
}

/// 100 items, 4 workers, 8 waiting: every item runs, never more than 4 at once.
async fn workers_and_waiting() {
    println!("1. 100 items through 4 workers and 8 waiting places");
    let mut results = stream::iter(0..100u32)
        .map(|item| async move {
            sleep(Duration::from_millis(1)).await; // simulated I/O
            item
        })
        .bounded(4, 8);
    while results.next().await.is_some() {}
    let stats = results.stats();
    println!(
        "   completed={}, peak_active={}, peak_waiting={}",
        stats.completed, stats.peak_active, stats.peak_waiting
    );
}

/// With every handler blocked, the source advances exactly workers + waiting.
async fn admission_boundary() {
    println!("2. admission: every handler blocked, 2 workers, 4 waiting");
    let yielded = Rc::new(Cell::new(0u32));
    let source = {
        let yielded = Rc::clone(&yielded);
        stream::iter(0..1_000u32).map(move |item| {
            yielded.set(yielded.get() + 1);
            async move {
                futures::future::pending::<()>().await; // a handler that never finishes
                item
            }
        })
    };
    let mut results = source.bounded(2, 4);
    // Give the adapter every chance to pull more than it may.
    for _ in 0..10 {
        assert!(futures::poll!(results.next()).is_pending());
    }
    let stats = results.stats();
    println!(
        "   the source yielded {} items: {} active + {} waiting; nothing beyond",
        yielded.get(),
        stats.active,
        stats.waiting
    );
}

/// One slow item at the head: `buffered`-like behaviour stalls the other
/// workers; a wider window keeps them busy while holding at most `window` results.
async fn ordered_window() {
    println!("3. ordered output: item 0 takes 50 ms, the other 63 take 1 ms, 4 workers");
    for window in [4, 16, 64] {
        let start = Instant::now();
        let mut results = stream::iter(0..64u32)
            .map(|item| async move {
                let ms = if item == 0 { 50 } else { 1 };
                sleep(Duration::from_millis(ms)).await;
                item
            })
            .bounded(4, 4)
            .ordered(window);
        let mut expected = 0;
        while let Some(item) = results.next().await {
            assert_eq!(item, expected, "outputs come in input order");
            expected += 1;
        }
        let label = if window == 4 {
            "window  4 (as buffered(4))".to_string()
        } else {
            format!("window {window:2}")
        };
        println!(
            "   {label}: all 64 in order after {:>2} ms, peak held {:>2}",
            start.elapsed().as_millis(),
            results.stats().peak_held
        );
    }
}

/// The same 100 items with the workers as tasks on the runtime: same budgets,
/// same stats, and the futures keep going while the consumer is busy.
async fn spawned() {
    println!("4. the same 100 items, spawned as tasks (spawn_on), while the consumer works");
    let start = Instant::now();
    let mut results = stream::iter(0..100u32)
        .map(|item| async move {
            sleep(Duration::from_millis(1)).await;
            item
        })
        .bounded(4, 8)
        .spawn_on(tokio::runtime::Handle::current());
    while results.next().await.is_some() {
        sleep(Duration::from_millis(1)).await; // the consumer's own work per item
    }
    let stats = results.stats();
    println!(
        "   completed={}, peak_active={}, peak_waiting={}, after {} ms (consumer alone: 100 ms)",
        stats.completed,
        stats.peak_active,
        stats.peak_waiting,
        start.elapsed().as_millis()
    );
}

/// Fail fast, ordered: the error surfaces while the slow head is still running
/// (the head is cancelled), instead of waiting behind it.
async fn fail_fast() {
    println!(
        "5. fail fast, ordered: item 0 takes 1 s, item 5 fails after 10 ms, the rest take 5 ms"
    );
    let job = |item: u32| async move {
        let ms = match item {
            0 => 1_000,
            5 => 10,
            _ => 5,
        };
        sleep(Duration::from_millis(ms)).await;
        if item == 5 {
            Err(format!("item {item} failed"))
        } else {
            Ok(item)
        }
    };

    let start = Instant::now();
    let mut outputs = stream::iter(0..100u32).map(job).bounded(8, 8).ordered(16);
    while let Some(output) = outputs.next().await {
        if let Err(error) = output {
            println!(
                "   bounded (error as an output): \"{error}\" after {:>4} ms, behind item 0",
                start.elapsed().as_millis()
            );
            break;
        }
    }

    let start = Instant::now();
    let mut outputs = stream::iter(0..100u32)
        .map(|item| Ok::<_, String>(job(item)))
        .try_bounded(8, 8)
        .ordered(16);
    let error = loop {
        match outputs.try_next().await {
            Ok(Some(_)) => {}
            Ok(None) => unreachable!("item 5 fails"),
            Err(error) => break error,
        }
    };
    let stats = outputs.stats();
    println!(
        "   try_bounded (fail fast):      \"{error}\" after {:>4} ms; pulled {}, running now {}",
        start.elapsed().as_millis(),
        stats.pulled,
        stats.active
    );
}

/// A graceful stop: after `close()` nothing more is pulled, everything already
/// pulled finishes and is yielded, and the source resumes where the stream left it.
async fn graceful_close() {
    println!("6. close after 10 outputs, 4 workers and 8 waiting places");
    let mut results = stream::iter(0..100u32)
        .map(|item| async move {
            sleep(Duration::from_millis(1)).await;
            item
        })
        .bounded(4, 8);
    let mut yielded = 0;
    while results.next().await.is_some() {
        yielded += 1;
        if yielded == 10 {
            results.close();
        }
    }
    let pulled = results.stats().pulled;
    let mut source = results.into_inner();
    let next = source.next().await.expect("items left").await;
    println!("   yielded {yielded} = pulled {pulled}; the source resumes at item {next}");
}

/// A burst larger than the workers can serve before its deadline: with a waiting
/// queue that holds the whole burst, the late part of it expires at pickup; with
/// one sized by capacity x deadline, nothing expires and the rest of the burst
/// waits in the source.
async fn expiry_and_timings() {
    println!(
        "7. a burst of 40 items, 4 workers of 100 ms (40 items/s), expiry after 250 ms of waiting"
    );
    for waiting in [36, 8] {
        let mut results = stream::iter(0..40u32)
            .map(|item| async move {
                sleep(Duration::from_millis(100)).await;
                item
            })
            .bounded(4, waiting)
            .max_wait(Duration::from_millis(250))
            .timed()
            .clock(|| Instant::now().into_std());
        let mut expired = Vec::new();
        while let Some(outcome) = results.next().await {
            if let Err(item) = outcome {
                expired.push(item); // its future, untouched, to retry or record
            }
        }
        let stats = results.stats();
        let timings = results.timings().expect("timed");
        println!(
            "   waiting {waiting:2}: completed {:2}, expired {:2}; wait {}; run {}",
            stats.completed,
            stats.expired,
            summary(&timings.wait),
            summary(&timings.run),
        );
    }
}

fn summary(histogram: &Histogram) -> String {
    format!(
        "p50 {:>3} ms, p99 {:>3} ms",
        histogram.quantile(0.5).as_millis(),
        histogram.quantile(0.99).as_millis()
    )
}
