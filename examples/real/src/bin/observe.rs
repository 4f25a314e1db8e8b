//! What a Prometheus scrape shows of two streams with `.metrics(name)`: the
//! exporter a service would install (metrics-exporter-prometheus, rendering
//! to a string here instead of serving `/metrics`), then a spawned, timed
//! fetch whose workers limit is raised halfway, and an in-place import with
//! tenants and weights, then the scrape (and, first, the fetch's gauges in a
//! scrape taken halfway through it).
//!
//! ```sh
//! cargo run --release -p real --bin observe            # 200 items per stream
//! cargo run --release -p real --bin observe -- 40      # or BB_REAL_SIZE=40
//! ```
//!
//! On tokio's paused clock, given to the fetch with `.clock(..)`: the
//! durations are exact, and every value in the scrape is the same on every
//! run (the order of the series is the exporter's own). It exits
//! non-zero if a check fails: each stream's counters and gauges in the scrape
//! are what its `stats()` reports, and the histograms count what `timings()`
//! does.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bounded_buffered::{BoundedStreamExt, Keyed, Stats, Weighted};
use futures::{StreamExt, stream};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use real::Checks;

/// The stream's clock: tokio's, paused.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() -> ExitCode {
    let items = real::size(200) as u64;
    // Installed first: `.metrics(..)` registers with the recorder current
    // when it is called.
    // Histograms with the crate's suggested buckets (the exporter's default
    // is a summary, whose quantiles come from a sketch over windows of real
    // time).
    let scrape = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Prefix("bounded_".into()),
            bounded_buffered::HISTOGRAM_BUCKETS,
        )
        .expect("buckets given")
        .install_recorder()
        .expect("the process's only recorder");
    let mut checks = Checks::default();

    // A fetch of `items` pages, 10 to 40 ms each, in worker tasks; the
    // workers limit raised from 4 to 8 halfway.
    let mut fetch = stream::iter(0..items)
        .map(|n| async move {
            tokio::time::sleep(Duration::from_millis(10 * (n % 4 + 1))).await;
            n
        })
        .bounded(4, 8)
        .timed()
        .clock(now)
        .metrics("fetch")
        .spawn_on(tokio::runtime::Handle::current());
    let limits = fetch.limits();
    let mut fetched = 0;
    let mut halfway = String::new();
    while fetch.next().await.is_some() {
        fetched += 1;
        if fetched == items / 2 {
            // A scrape mid-run: the gauges of the fetch at work.
            halfway = scrape.render();
            limits.set_workers(8);
        }
    }
    checks.check("fetch: every page fetched", fetched == items, || {
        format!("{fetched}")
    });

    // An import of `items` documents of 3 tenants, sizes 1 to 3, in place:
    // at most 2 of a tenant and 6 units at once.
    let mut import = stream::iter(0..items)
        .map(|n| {
            let import = async move {
                tokio::time::sleep(Duration::from_millis(5 * (n % 3 + 1))).await;
                n
            };
            Keyed::new(n % 3, Weighted::new(n % 3 + 1, import))
        })
        .bounded(4, 4)
        .per_key(2)
        .max_running_weight(6)
        .metrics("import");
    let mut imported = 0;
    while import.next().await.is_some() {
        imported += 1;
    }
    checks.check("import: every document imported", imported == items, || {
        format!("{imported}")
    });

    println!("# halfway through the fetch, before the raise (its gauges):");
    for line in halfway.lines() {
        let gauge = [
            "bounded_active{",
            "bounded_waiting{",
            "bounded_held{",
            "bounded_workers_limit{",
        ]
        .iter()
        .any(|name| line.starts_with(name));
        if gauge && line.contains("stream=\"fetch\"") {
            println!("{line}");
        }
    }
    let text = scrape.render();
    println!("\n# after both runs:\n{text}");
    check_scrape(&mut checks, &text, "fetch", &fetch.stats());
    check_scrape(&mut checks, &text, "import", &import.stats());
    let runs = fetch.timings().expect("timed").run.count();
    let count = value(&text, "bounded_run_seconds_count", "fetch");
    checks.check(
        "fetch: bounded_run_seconds_count is timings().run.count()",
        count == Some(runs as f64),
        || format!("{count:?} vs {runs}"),
    );
    checks.report()
}

/// The value of series `name` of `stream` in the scrape, if it is there.
fn value(text: &str, name: &str, stream: &str) -> Option<f64> {
    let prefix = format!("{name}{{stream=\"{stream}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|value| value.parse().ok())
}

/// Checks that the scrape shows `stats` for `stream`.
fn check_scrape(checks: &mut Checks, text: &str, stream: &str, stats: &Stats) {
    let series = [
        ("bounded_pulled_total", stats.pulled as f64),
        ("bounded_completed_total", stats.completed as f64),
        ("bounded_rejected_total", stats.rejected as f64),
        ("bounded_active", stats.active as f64),
        ("bounded_waiting", stats.waiting as f64),
        ("bounded_workers_limit", stats.workers_limit as f64),
    ];
    for (name, expected) in series {
        let seen = value(text, name, stream);
        checks.check(
            &format!("{stream}: {name} is what stats() reports"),
            seen == Some(expected),
            || format!("{seen:?} vs {expected}"),
        );
    }
}
