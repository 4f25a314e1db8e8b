//! Fail fast without an error, and `size_hint` (contract points 1, 3 and 15
//! with 21; 16 and 17 spawned): `try_bounded` delivers every output and holds
//! its budgets exactly as `bounded` does, and `size_hint` promises no item an
//! error may cancel, then is exact once the run failed.

use std::task::Poll;

use bounded_buffered::BoundedStreamExt;
use futures::{StreamExt, TryStreamExt};
use support::{Case, Failures, Gates, Got, both_modes, drive, yield_now};

use super::Started;

both_modes! {
    /// Point 1 (17 spawned): without an error, `try_bounded` delivers every
    /// output once, in order when ordered.
    fn without_an_error_every_output_is_yielded_once(mode) {
        for window in [None, Some(2), Some(4), Some(5)] {
            let case = Case::new(3, 2, window, 50);
            let mut run = Started::new(mode, &case);
            let mut yielded = Vec::new();
            loop {
                match run.poll() {
                    Got::Ok(id) => yielded.push(id),
                    Got::End => break,
                    Got::Pending => {
                        run.gates.open_all();
                        run.run.settle();
                    }
                    got => panic!("no item fails, yet {got:?}"),
                }
            }
            if window.is_none() {
                yielded.sort_unstable();
            }
            assert_eq!(yielded, (0..50).collect::<Vec<_>>(), "window {window:?}");
            let stats = run.stats();
            assert_eq!((stats.pulled, stats.completed), (50, 50));
            assert!(run.run.is_terminated());
            // Spawned, every task ended with the stream (point 17), and
            // dropped everything.
            run.check_all_gone_if_spawned();
            run.drop_and_check();
            assert_eq!(run.gates.errors(), (0, 0));
        }
    }

    /// Point 3 (16 spawned): the budgets hold exactly as for `bounded`.
    fn the_budgets_hold_exactly_as_for_bounded(mode) {
        for (workers, waiting) in [(1usize, 0), (2, 3), (4, 8)] {
            for window in [None, Some(workers.div_ceil(2)), Some(workers + 2)] {
                let case = Case::new(workers, waiting, window, 1_000);
                let span = window.map_or(workers, |window| window.min(workers));
                let mut run = Started::new(mode, &case);
                let context = format!("W={workers} Q={waiting} window {window:?}");
                // Every future blocked: the source advanced exactly this far.
                assert_eq!(run.gates.pulled(), span + waiting, "{context}");
                assert_eq!(run.gates.started(), span, "{context}");
                assert_eq!(run.counts(), (span, waiting, 0), "{context}");
                if mode.is_spawned() {
                    assert_eq!(run.run.spawns(), span, "one task per start: {context}");
                }
                assert_eq!(run.poll(), Got::Pending);
                run.run.settle();
                assert_eq!(run.gates.pulled(), span + waiting, "not one more: {context}");
            }
        }
    }

    /// Point 15 with 21: any item may fail, so `size_hint` promises only one
    /// more item (the error, if it is one), and no item an error may cancel.
    fn size_hint_promises_no_item_that_an_error_may_cancel(mode) {
        let case = Case::new(2, 2, None, 10);
        let run = Started::unpolled(mode, &case, Gates::new());
        assert_eq!(run.run.size_hint(), (1, Some(10)));

        let case = Case::new(2, 2, None, 100).failing(Failures::futures(&[0]));
        let mut run = Started::new(mode, &case);
        assert_eq!(run.counts(), (2, 2, 0));
        let (lower, _) = run.run.size_hint();
        run.open_and_stall(0);
        let rest = run.drain();
        assert_eq!(rest, [Got::Err(0), Got::End]);
        let items = rest.len() - 1;
        assert!(lower <= items, "size_hint promised at least {lower} items; got {items}");
    }

    /// Points 15 and 21: once the run failed, `size_hint` is exact, and the
    /// same in both modes: the held outputs the error lets through, then the
    /// error.
    fn size_hint_after_the_error_is_exact(mode) {
        // Items 0 to 2 are ready; item 3 fails after one yield.
        let source = futures::stream::iter(0..4u32).map(|n| {
            Ok::<_, u32>(async move {
                if n == 3 {
                    yield_now().await;
                    return Err(n);
                }
                Ok(n)
            })
        });
        let mut run = drive!(mode, source.try_bounded(4, 0));
        let mut taken = 0;
        while taken < 2 {
            match run.poll() {
                Poll::Ready(Some(Ok(_))) => taken += 1,
                Poll::Pending => {}
                other => panic!("an output first: {other:?}"),
            }
        }
        // One output left to yield before the error.
        assert_eq!(run.size_hint(), (2, Some(2)));
        assert!(matches!(run.poll(), Poll::Ready(Some(Ok(_)))));
        assert_eq!(run.size_hint(), (1, Some(1)));
        assert_eq!(run.poll(), Poll::Ready(Some(Err(3))));
        assert_eq!(run.size_hint(), (0, Some(0)));
        assert_eq!(run.poll(), Poll::Ready(None));
    }
}

/// In place, without gates: plain async blocks on `futures::executor`.
#[test]
fn in_place_without_an_error_try_collect_gets_every_output_in_order() {
    futures::executor::block_on(async {
        let out: Vec<u32> = futures::stream::iter(0..50u32)
            .map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }))
            .try_bounded(3, 2)
            .ordered(4)
            .try_collect()
            .await
            .expect("no item fails");
        assert_eq!(out, (0..50).collect::<Vec<_>>());
    });
}
