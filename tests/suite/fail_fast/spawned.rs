//! Fail fast, spawned only (contract point 21 with 18): the error stops every
//! start though the consumer never polls, an executor shut down after the
//! error leaves the error to the consumer, and a failing run on tokio's
//! multi-thread runtime drops everything.

use futures::StreamExt;
use support::{
    Case, Failures, Gates, Got, Mode, Watchdog, check_ended_on_tokio, tokio_multi_thread,
};

use super::Started;

/// Spawned, point 21 with 18: the error stops every start though the
/// consumer never polls.
#[test]
fn spawned_a_slow_consumer_the_error_stops_every_start_though_nobody_polls() {
    // Ordered with a window wider than the workers: a completion frees its
    // worker whether or not the consumer takes anything.
    let case = Case::new(2, 1, Some(8), 100).failing(Failures::futures(&[2]));
    let mut run = Started::new(Mode::Spawned, &case);
    run.open_and_stall(1);
    // 1 is held behind the head; its worker took item 2 and pulled item 3.
    assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
    run.open_and_step(2);
    assert_eq!(run.gates.first_error(), Some(2));
    // However the tasks are stepped and the gates opened, nothing starts
    // and nothing is pulled.
    for _ in 0..3 {
        run.gates.open_all();
        run.run.settle();
        assert_eq!((run.gates.pulled(), run.gates.started()), (4, 3));
        assert_eq!(run.gates.started_after_error(), Vec::<usize>::new());
    }
    assert_eq!(run.live_tasks(), 0);
    assert_eq!(run.gates.drops(3), 1, "the waiting item never started");
    // Output 1 sat behind the cancelled head: only the error is left.
    assert_eq!(run.poll(), Got::Err(2));
    run.check_ended_after_error();
}

/// Spawned, point 21: the tasks dropped unpolled after the error (a runtime
/// shut down) are no lost item, since the run had ended.
#[test]
fn spawned_an_executor_shut_down_after_the_error_leaves_the_error_to_the_consumer() {
    for window in [None, Some(4)] {
        let case = Case::new(3, 2, window, 100).failing(Failures::futures(&[1]));
        let mut run = Started::new(Mode::Spawned, &case);
        run.open_and_step(1);
        assert_eq!(run.live_tasks(), 2);
        drop(std::mem::take(run.run.executor()));
        run.gates.check_all_dropped_once();
        run.expect_error_then_end(1);
        run.drop_and_check();
    }
}

#[test]
fn spawned_on_tokio_multi_thread_the_run_ends_with_the_error_and_drops_everything() {
    let runtime = tokio_multi_thread();
    for window in [None, Some(4)] {
        let failing = 250;
        let case = Case::new(4, 4, window, 1_000).failing(Failures::futures(&[failing]));
        // Every gate open: each future completes in its first poll, on either
        // of the runtime's threads.
        let gates = Gates::open_except(&[]);
        let mut stream = case.fallible(&gates).spawn_on(runtime.handle().clone());
        let (got, ended) = runtime.block_on(async {
            let _watchdog = Watchdog::start("a failing run on tokio");
            let got: Vec<Got> = (&mut stream).map(Got::of_try).collect().await;
            (got, stream.next().await.is_none())
        });
        assert!(ended, "None forever");
        assert!(futures::stream::FusedStream::is_terminated(&stream));
        let (error, oks) = got.split_last().expect("the error, then the end");
        assert_eq!(*error, Got::Err(failing), "{window:?}");
        let ids = oks.iter().map(|got| match got {
            Got::Ok(id) => *id,
            other => panic!("an output after the error: {other:?}"),
        });
        let mut ids: Vec<usize> = ids.collect();
        if window.is_some() {
            assert_eq!(ids, (0..ids.len()).collect::<Vec<_>>(), "the prefix");
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), oks.len(), "an output twice");
        assert!(!ids.contains(&failing), "the failed item was yielded");
        assert!(gates.pulled() < case.items, "the run stopped early");
        drop(stream);
        check_ended_on_tokio(&runtime, &gates, Vec::new());
        assert_eq!(gates.errors(), (1, 1));
    }
}
