//! The limit over time for a few models, one panel each, as one SVG: the limit
//! (blue steps, left axis), every fifth success's latency (grey dots, right
//! axis), the capacity before and after the change (red dashes), the change,
//! if the model has one (red line).

use std::fmt::Write;
use std::time::Duration;

use crate::job::Run;
use crate::models::{Change, Model};

const WIDTH: f64 = 900.0;
const PANEL: f64 = 260.0;
const PAD: f64 = 50.0;

pub fn svg(runs: &[(Model, Run)]) -> String {
    let height = PANEL * runs.len() as f64 + 20.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, (model, run)) in runs.iter().enumerate() {
        panel(&mut svg, i as f64 * PANEL + 10.0, model, run);
    }
    svg += "</svg>\n";
    svg
}

fn panel(svg: &mut String, top: f64, model: &Model, run: &Run) {
    let bottom = top + PANEL - PAD;
    let plot_top = top + 30.0;
    let end = run.elapsed.as_secs_f64();
    let highest = run.limits.iter().map(|&(_, l)| l).max().unwrap_or(1);
    let max_limit = (highest.max(model.capacity.max(model.capacity_after())) as f64 * 1.25).ceil();
    // Latency axis: 4 x the longer mean service time, so that the unloaded
    // band sits low and queueing shows above it.
    let max_latency = 4.0 * model.service.mean().max(model.service_after().mean());
    let x = |t: Duration| PAD + t.as_secs_f64() / end * (WIDTH - 2.0 * PAD);
    let y_limit = |l: f64| bottom - l / max_limit * (bottom - plot_top);
    let y_latency = |d: Duration| {
        bottom - (d.as_secs_f64() * 1e3).min(max_latency) / max_latency * (bottom - plot_top)
    };
    let _ = writeln!(
        svg,
        "<text x=\"{PAD}\" y=\"{:.1}\">{}: limit (blue, left axis 0–{max_limit}), latency of every fifth success (grey, right axis 0–{max_latency} ms)</text>",
        top + 15.0,
        model.name
    );
    for &(started, latency, _) in run.successes.iter().step_by(5) {
        let _ = writeln!(
            svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1\" fill=\"#999\"/>",
            x(started + latency),
            y_latency(latency)
        );
    }
    let mut path = String::new();
    let mut last = None;
    for &(at, limit) in &run.limits {
        let limit = limit as f64;
        match last {
            Some(previous) => {
                let _ = write!(path, "L{:.1},{:.1} ", x(at), y_limit(previous));
            }
            None => {
                let _ = write!(path, "M{:.1},{:.1} ", x(at), y_limit(limit));
            }
        }
        let _ = write!(path, "L{:.1},{:.1} ", x(at), y_limit(limit));
        last = Some(limit);
    }
    let _ = write!(
        path,
        "L{:.1},{:.1}",
        x(run.elapsed),
        y_limit(last.unwrap_or(0.0))
    );
    let _ = writeln!(
        svg,
        "<path d=\"{path}\" fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\"/>"
    );
    // The capacity before and after the change, and the change.
    let change = x(run.changed_at);
    for (from, to, capacity) in [
        (PAD, change, model.capacity),
        (change, WIDTH - PAD, model.capacity_after()),
    ] {
        let at = y_limit(capacity as f64);
        let _ = writeln!(
            svg,
            "<line x1=\"{from:.1}\" y1=\"{at:.1}\" x2=\"{to:.1}\" y2=\"{at:.1}\" stroke=\"#c33\" stroke-dasharray=\"2 3\"/>"
        );
    }
    for capacity in [model.capacity, model.capacity_after()] {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#c33\" text-anchor=\"end\">{capacity}</text>",
            PAD - 5.0,
            y_limit(capacity as f64) + 4.0
        );
    }
    if !matches!(model.change, Change::None) {
        let _ = writeln!(
            svg,
            "<line x1=\"{change:.1}\" y1=\"{plot_top:.1}\" x2=\"{change:.1}\" y2=\"{bottom:.1}\" stroke=\"#c33\"/>"
        );
    }
    for fraction in [0.25, 0.5] {
        let ms = max_latency * fraction;
        let at = y_latency(Duration::from_secs_f64(ms / 1e3));
        let _ = writeln!(
            svg,
            "<line x1=\"{PAD}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#777\">{ms} ms</text>",
            WIDTH - PAD,
            WIDTH - PAD + 5.0,
            at + 4.0
        );
    }
    let mut tick = Duration::ZERO;
    while tick < run.elapsed {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"black\"/>\n<text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4:.1}</text>",
            x(tick),
            bottom,
            bottom + 5.0,
            bottom + 18.0,
            tick.as_secs_f64()
        );
        tick += Duration::from_millis(500);
    }
    let _ = writeln!(
        svg,
        "<line x1=\"{PAD}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"black\"/>\n<text x=\"{1}\" y=\"{2:.1}\" text-anchor=\"end\">time, s (virtual; the job ends at {3:.2} s)</text>",
        bottom,
        WIDTH - PAD,
        bottom + 34.0,
        end
    );
}
