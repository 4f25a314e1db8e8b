//! The SVG chart: the same figures as the tables, one panel per workload.

use std::error::Error;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::common::{Adapter, Family, JobKind, MEMORY_SIZES, MemoryCase};
use crate::measure::{Measured, MemoryRow, OverheadCell, Results};

type Panel<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The overhead panels' lines, in the order they are drawn and listed.
const SERIES: [Family; 8] = [
    Family::Bounded,
    Family::BoundedNoPrefetch,
    Family::BoundedOrdered,
    Family::BufferUnordered,
    Family::Buffered,
    Family::FbUnordered,
    Family::FbOrdered,
    Family::Sequential,
];

fn legend(family: Family) -> &'static str {
    match family {
        Family::Bounded => "bounded(w, w)",
        Family::BoundedNoPrefetch => "bounded(w, 0)",
        Family::BoundedOrdered => "bounded(w, w).ordered(w)",
        Family::BufferUnordered => "buffer_unordered(w)",
        Family::Buffered => "buffered(w)",
        Family::FbUnordered => "fb::buffered_unordered(w)",
        Family::FbOrdered => "fb::buffered_ordered(w)",
        Family::Sequential => "then (sequential)",
        // Counted by drain_once, not charted.
        Family::BoundedTimed => "bounded(w, w).timed()",
        Family::BoundedMaxWait => "bounded(w, w).max_wait(1 s)",
        Family::BoundedAdaptive => "bounded(w, w).adaptive(..)",
    }
}

/// One colour per family, the same in every panel.
fn family_color(family: Family) -> RGBColor {
    match family {
        Family::Bounded => RGBColor(0xd6, 0x27, 0x28),
        Family::BoundedNoPrefetch => RGBColor(0x8c, 0x1a, 0x1a),
        Family::BoundedOrdered => RGBColor(0xff, 0x7f, 0x0e),
        Family::BufferUnordered => RGBColor(0x1f, 0x77, 0xb4),
        Family::Buffered => RGBColor(0x17, 0xbe, 0xcf),
        Family::FbUnordered => RGBColor(0x2c, 0xa0, 0x2c),
        Family::FbOrdered => RGBColor(0x94, 0x67, 0xbd),
        Family::Sequential => RGBColor(0x7f, 0x7f, 0x7f),
        Family::BoundedTimed => RGBColor(0xe3, 0x77, 0xc2),
        Family::BoundedMaxWait => RGBColor(0xbc, 0xbd, 0x22),
        Family::BoundedAdaptive => RGBColor(0x8c, 0x56, 0x4b),
    }
}

pub fn draw(path: &Path, results: &Results) -> Result<(), Box<dyn Error>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (1200, 1250)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        "bounded-buffered against futures and futures-buffered (tokio current-thread; medians; relative figures)",
        ("sans-serif", 20),
    )?;
    let panels = body.split_evenly((3, 2));
    for (panel, kind) in panels.iter().zip(JobKind::ALL) {
        overhead_panel(panel, &results.overhead, kind)?;
    }
    bar_panel(
        &panels[2],
        "Slow head: time (ms), buffered(16) vs bounded(16,16).ordered(r)",
        &results.slow_head,
        |a| match a {
            Adapter::Ordered { window, .. } => format!("r={window}"),
            Adapter::FbOrdered(_) => "fb_ordered".to_owned(),
            other => other.family().name().to_owned(),
        },
    )?;
    bar_panel(
        &panels[3],
        "Slow source: time (ms), buffer_unordered(16) vs bounded(16, q)",
        &results.slow_source,
        |a| match a {
            Adapter::Bounded { waiting, .. } => format!("q={waiting}"),
            Adapter::FbUnordered(_) => "fb_unordered".to_owned(),
            other => other.family().name().to_owned(),
        },
    )?;
    memory_panel(&panels[4], "Memory: allocations", &results.memory, |r| {
        r.report.allocations as f64
    })?;
    memory_panel(
        &panels[5],
        "Memory: peak live bytes",
        &results.memory,
        |r| r.report.peak_bytes as f64,
    )?;
    root.present()?;
    Ok(())
}

fn overhead_panel(
    area: &Panel<'_>,
    cells: &[OverheadCell],
    kind: JobKind,
) -> Result<(), Box<dyn Error>> {
    let cells: Vec<&OverheadCell> = cells.iter().filter(|c| c.kind == kind).collect();
    let max = cells
        .iter()
        .flat_map(|c| SERIES.iter().map(|&family| c.ns_per_item(family)))
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("Overhead, {} futures: ns per item", kind.name()),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((0.7f64..6000f64).log_scale(), 0f64..max * 1.7)?;
    chart
        .configure_mesh()
        .x_desc("workers w")
        .x_label_formatter(&|w| format!("{w:.0}"))
        .draw()?;
    for family in SERIES {
        let color = family_color(family);
        let points: Vec<(f64, f64)> = cells
            .iter()
            .map(|c| (c.workers as f64, c.ns_per_item(family)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(legend(family))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

fn bar_panel(
    area: &Panel<'_>,
    caption: &str,
    measured: &[Measured],
    short: impl Fn(&Adapter) -> String,
) -> Result<(), Box<dyn Error>> {
    let max_ms = measured.iter().map(|m| m.seconds * 1e3).fold(0.0, f64::max);
    let labels: Vec<String> = measured.iter().map(|m| short(&m.adapter)).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5f64..measured.len() as f64 - 0.5, 0f64..max_ms * 1.15)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(measured.len())
        .x_label_formatter(&|x| {
            let index = x.round();
            if (x - index).abs() < 1e-6 && index >= 0.0 {
                labels.get(index as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("ms")
        .draw()?;
    for (index, m) in measured.iter().enumerate() {
        let x = index as f64;
        let ms = m.seconds * 1e3;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x - 0.35, 0.0), (x + 0.35, ms)],
            family_color(m.adapter.family()).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{ms:.0}"),
            (x - 0.2, ms + max_ms * 0.06),
            ("sans-serif", 12),
        )))?;
    }
    Ok(())
}

fn memory_panel(
    area: &Panel<'_>,
    caption: &str,
    rows: &[MemoryRow],
    value: impl Fn(&MemoryRow) -> f64,
) -> Result<(), Box<dyn Error>> {
    let max = rows.iter().map(&value).fold(1.0, f64::max);
    let (low_n, high_n) = (
        MEMORY_SIZES[0] as f64,
        MEMORY_SIZES[MEMORY_SIZES.len() - 1] as f64,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{caption} vs N (log-log)"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (low_n * 0.7..high_n * 1.4).log_scale(),
            (1f64..max * 3.0).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("items N")
        .x_label_formatter(&|n| format!("{n:.0e}"))
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    for case in MemoryCase::all() {
        let color = match case {
            MemoryCase::SpawnAllSemaphore => BLACK,
            MemoryCase::Stream(adapter) => family_color(adapter.family()),
        };
        // Spawn-all and buffer_unordered both allocate once per item: draw the
        // first wider, so it shows under the second.
        let width = if case == MemoryCase::SpawnAllSemaphore {
            6
        } else {
            2
        };
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.case == case)
            .map(|r| (r.n as f64, value(r).max(1.0)))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(width)))?
            .label(case.label())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 3, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}
