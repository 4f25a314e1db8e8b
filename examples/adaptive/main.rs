//! Adaptive limits against a simulated service whose capacity drops halfway:
//! static limits of 4 to 128 against `Aimd` starting from four workers, on
//! tokio's paused clock (exact, repeatable figures; the run takes a few seconds
//! of real time).
//!
//!     cargo run --release --example adaptive [-- chart.svg]
//!
//! `ROUNDS=1` prints the controller's rounds. With a path, it also writes an SVG chart of the adaptive run's limit and
//! latency over time.

mod service;

use std::time::Duration;

use service::{CAPACITY, LOWER_CAPACITY, Policy, RAMP, Report, SERVICE_TIME};

fn main() {
    let policies = [4, 16, 32, 64, 128]
        .map(Policy::Static)
        .into_iter()
        .chain([Policy::Adaptive, Policy::AdaptiveSpawned]);
    let reports: Vec<Report> = policies.map(service::run).collect();

    println!(
        "5,000 successes from a service of capacity {CAPACITY}, then {LOWER_CAPACITY} after 2,500 (10 ms a request, \"overloaded\" past 2x capacity in flight)\n"
    );
    println!(
        "{:<16} {:>10} {:>11} {:>8} {:>8} {:>8} {:>17}",
        "limit", "goodput/s", "overloaded", "p50", "p95", "p99", "p95 after 200 ms"
    );
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    for report in &reports {
        println!(
            "{:<16} {:>10.0} {:>11} {:>8} {:>8} {:>8} {:>17}",
            report.policy.name(),
            report.goodput(),
            report.overloaded,
            ms(report.latency(0.50, Duration::ZERO)),
            ms(report.latency(0.95, Duration::ZERO)),
            ms(report.latency(0.99, Duration::ZERO)),
            ms(report.latency(0.95, RAMP)),
        );
    }

    let best = reports.iter().map(Report::goodput).fold(0.0, f64::max);
    let (adaptive, spawned) = match &reports[reports.len() - 2..] {
        [adaptive, spawned] => (adaptive, spawned),
        _ => unreachable!("two adaptive runs"),
    };
    for report in [adaptive, spawned] {
        targets(report, best);
    }

    // The controller's history, readable while it runs: `ROUNDS=1` prints it.
    if std::env::var_os("ROUNDS").is_some() {
        println!("\nthe adaptive run's rounds (when, mean run time, limit set):");
        for round in &adaptive.rounds {
            let mean = round.mean_run.map_or("overload".to_string(), ms);
            println!("{:>9} {:>9} {:>4}", ms(round.at), mean, round.limit);
        }
    }

    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(&path, chart(adaptive)).expect("the chart is written");
        println!("\nchart: {path}");
    }
}

/// Prints how an adaptive run did against the targets.
fn targets(adaptive: &Report, best: f64) {
    println!("\n{} against the targets:", adaptive.policy.name());
    println!(
        "- goodput {:.2}x the best static limit (target >= 0.85)",
        adaptive.goodput() / best
    );
    println!(
        "- {} overloaded answers (target <= 50)",
        adaptive.overloaded
    );
    println!(
        "- p95 after the ramp {:.2}x the unloaded {} ms (target <= 1.5)",
        adaptive.latency(0.95, RAMP).as_secs_f64() / SERVICE_TIME.as_secs_f64(),
        SERVICE_TIME.as_millis()
    );
    let waited = |ramp: bool| {
        adaptive
            .successes
            .iter()
            .filter(|&&(started, latency)| (started < RAMP) == ramp && latency > SERVICE_TIME)
            .count()
    };
    println!(
        "- successes that waited (queued inside the service): {} during the ramp, {} after it",
        waited(true),
        waited(false)
    );
    // The settling target: within [0.8, 1.25] x the new capacity, for good, within
    // 300 ms of the drop.
    let (low, high) = (
        (0.8 * LOWER_CAPACITY as f64).ceil() as usize,
        (1.25 * LOWER_CAPACITY as f64).floor() as usize,
    );
    match adaptive.settled(low, high) {
        Some((settle, lowest, highest)) => println!(
            "- after the drop: within [{low}, {high}] for good after {} ms (target <= 300), then {lowest} to {highest}",
            settle.as_millis()
        ),
        None => println!("- after the drop: the limit never stayed within [{low}, {high}]"),
    }
}

/// An SVG of the adaptive run: the limit (steps) and each success's latency
/// (dots) over time, the capacity drop marked.
fn chart(report: &Report) -> String {
    let (width, height, pad) = (900.0, 360.0, 50.0);
    let end = report.elapsed.as_secs_f64();
    let max_limit = report
        .limits
        .iter()
        .map(|&(_, l)| l)
        .max()
        .unwrap_or(1)
        .max(CAPACITY * 2) as f64;
    // Not a multiple of the limit axis: 10 and 20 ms must not sit on the
    // lines of the two capacities.
    let max_latency = 25.0; // ms
    let x = |t: Duration| pad + t.as_secs_f64() / end * (width - 2.0 * pad);
    let y_limit = |l: usize| height - pad - l as f64 / max_limit * (height - 2.0 * pad);
    let y_latency = |d: Duration| {
        height - pad - (d.as_secs_f64() * 1e3).min(max_latency) / max_latency * (height - 2.0 * pad)
    };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    svg += &format!(
        "<text x=\"{pad}\" y=\"20\">Adaptive limit (AIMD, blue, left axis 0-{max_limit}) and success latency (grey dots, right axis 0-{max_latency} ms); capacity {CAPACITY} then {LOWER_CAPACITY} (red line)</text>\n"
    );
    for (_, latency_point) in report.successes.iter().enumerate().step_by(5) {
        let (started, latency) = *latency_point;
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1\" fill=\"#999\"/>\n",
            x(started + latency),
            y_latency(latency)
        );
    }
    let mut path = String::new();
    let mut last = None;
    for &(at, limit) in &report.limits {
        if let Some(previous) = last {
            path += &format!("L{:.1},{:.1} ", x(at), y_limit(previous));
        } else {
            path += &format!("M{:.1},{:.1} ", x(at), y_limit(limit));
        }
        path += &format!("L{:.1},{:.1} ", x(at), y_limit(limit));
        last = Some(limit);
    }
    path += &format!(
        "L{:.1},{:.1}",
        x(report.elapsed),
        y_limit(last.unwrap_or(0))
    );
    svg += &format!("<path d=\"{path}\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\"/>\n");
    let drop = x(report.dropped_at);
    svg += &format!(
        "<line x1=\"{drop:.1}\" y1=\"{pad}\" x2=\"{drop:.1}\" y2=\"{}\" stroke=\"#c33\" stroke-dasharray=\"4\"/>\n",
        height - pad
    );
    for capacity in [CAPACITY, LOWER_CAPACITY] {
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1f5fbf\">{capacity}</text>\n",
            pad - 25.0,
            y_limit(capacity) + 4.0
        );
    }
    for ms in [10, 20] {
        let at = y_latency(Duration::from_millis(ms));
        svg += &format!(
            "<line x1=\"{pad}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#777\">{ms} ms</text>\n",
            width - pad,
            width - pad + 5.0,
            at + 4.0
        );
    }
    let mut tick = Duration::ZERO;
    while tick < report.elapsed {
        svg += &format!(
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"black\"/>\n<text x=\"{0:.1}\" y=\"{3}\" text-anchor=\"middle\">{4:.1}</text>\n",
            x(tick),
            height - pad,
            height - pad + 5.0,
            height - pad + 18.0,
            tick.as_secs_f64()
        );
        tick += Duration::from_millis(500);
    }
    svg += &format!(
        "<line x1=\"{pad}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"black\"/>\n<text x=\"{1}\" y=\"{2}\" text-anchor=\"end\">time, s (virtual; run ends at {3:.2} s)</text>\n",
        height - pad,
        width - pad,
        height - pad + 36.0,
        end
    );
    svg += "</svg>\n";
    svg
}
