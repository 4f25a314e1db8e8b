//! A run time that rises with the load below a capacity, and the probes of
//! a third more items in flight that tell it from a queue (`Aimd`'s rule,
//! "A run time that rises with the load").

use std::time::Duration;

use super::{Feed, MS};
use crate::aimd::{Aimd, Decision};

impl Feed {
    /// A round of a service that, with `L` in flight, serves as many at once
    /// as `took(L)` items of `ms` each would: every item runs
    /// `ms × L / took(L)` on average (Little's law).
    /// The run times are `spread` above and below that in turn.
    fn serving_spread(&mut self, ms: u64, spread: f64, took: impl Fn(f64) -> f64) -> Decision {
        let limit = self.limit() as f64;
        let run = ms as f64 * MS as f64 * limit / took(limit);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let (low, high) = (
            (run * (1.0 - spread)).round() as u64,
            (run * (1.0 + spread)).round() as u64,
        );
        self.round_of(low, high, true)
    }
}

#[test]
fn a_run_time_that_rises_with_the_load_is_followed_to_max() {
    // 20 ms alone, half a percent more for each other request in service,
    // and no capacity up to `max`: 1.6 times as long at 128, and 19 times
    // the throughput of 4. Every limit above where the unloaded run time was
    // measured shows a queue against it, so the cuts alone would creep down
    // to where the rise is within the noise; the probes show that each
    // quarter more served more, up to `max`, and the run time there is the
    // unloaded one.
    let took = |limit: f64| limit / (1.0 + 0.005 * (limit - 1.0));
    let mut feed = Feed::new(Aimd::new(1, 128));
    let limits: Vec<_> = (0..300)
        .map(|_| feed.serving_spread(20, 0.2, took).limit)
        .collect();
    assert!(
        limits[200..].iter().all(|&limit| limit == 128),
        "{limits:?}"
    );
    let base = feed.last().base.expect("measured");
    assert!(base > Duration::from_millis(30), "{base:?}");
}

#[test]
fn a_run_time_that_rises_with_the_load_is_followed_to_the_capacity() {
    // The same service with a capacity of 64 and a queue beyond: 1.32
    // times as long at 64. The probes climb from the creep (45 to 53 with
    // the cuts alone) until one a quarter past the capacity serves no more
    // and the limit comes back; it holds a few above 64, where the probe
    // before it measured the unloaded run time with an item queued (65),
    // and a queue within one and a half standard errors stays (the rule's
    // paragraph on cuts).
    let took = |limit: f64| {
        let serving = limit.min(64.0);
        serving / (1.0 + 0.005 * (serving - 1.0))
    };
    let mut feed = Feed::new(Aimd::new(1, 256));
    let limits: Vec<_> = (0..300)
        .map(|_| feed.serving_spread(20, 0.2, took).limit)
        .collect();
    assert!(
        limits[200..]
            .iter()
            .all(|&limit| (64..=70).contains(&limit)),
        "{limits:?}"
    );
    let base = feed.last().base.expect("measured");
    assert!(base > Duration::from_millis(25), "{base:?}");
}
