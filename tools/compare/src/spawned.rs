//! The spawned section: issue 11's hand-off table (`bounded(16,
//! 16).spawn_on` against a task per item and `JoinSet` + `Semaphore`, on
//! 2-thread tokio and smol executors), the CPU scaling from 1 to 2 threads
//! against plain OS threads, and a huge worker budget over a few items. The
//! workloads are `benches/common/spawned.rs`, the same code as `cargo bench
//! --bench spawned`. Printed as tables with each target's verdict, and drawn
//! as `compare-spawned.svg` next to the main chart.

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::common::spawned::{
    Consumer, FEW_ITEMS, HANDOFF_WORKERS, Runner, SCALING_ITEMS, SCALING_ROUNDS, SmolPool, Work,
    cpu_on_threads, cpu_spawned, multi_thread_runtime, run_few_items, run_smol, run_tokio,
};
use crate::progress::Progress;

/// Runs per hand-off cell and runner (after one discarded warm-up round).
pub const HANDOFF_REPS: usize = 7;
/// Runs per scaling case.
pub const SCALING_REPS: usize = 5;
/// Samples per few-items case; each sample times [`FEW_RUNS`] runs.
pub const FEW_REPS: usize = 9;
pub const FEW_RUNS: u32 = 200;
/// The huge worker budget of the few-items case.
pub const FEW_HUGE_WORKERS: usize = 100_000;

/// The executors the hand-off table covers, each with 2 threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    Tokio,
    Smol,
}

impl Executor {
    const ALL: [Executor; 2] = [Executor::Tokio, Executor::Smol];

    fn name(self) -> &'static str {
        match self {
            Executor::Tokio => "tokio",
            Executor::Smol => "smol",
        }
    }

    fn runners(self) -> &'static [Runner] {
        match self {
            Executor::Tokio => &Runner::TOKIO,
            Executor::Smol => &Runner::SMOL,
        }
    }
}

/// The median of several samples, with the smallest and the largest: the
/// spread the README quotes (other work shares the machine's cores).
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        let mid = samples.len() / 2;
        let median = if samples.len() % 2 == 1 {
            samples[mid]
        } else {
            (samples[mid - 1] + samples[mid]) / 2.0
        };
        Self {
            median,
            min: samples[0],
            max: samples[samples.len() - 1],
        }
    }
}

/// One cell of the hand-off table: ns per item for each runner.
pub struct HandoffCell {
    pub executor: Executor,
    pub work: Work,
    pub consumer: Consumer,
    pub runs: Vec<(Runner, Spread)>,
}

impl HandoffCell {
    fn ns(&self, runner: Runner) -> Option<Spread> {
        self.runs
            .iter()
            .find(|(r, _)| *r == runner)
            .map(|(_, s)| *s)
    }

    /// The fastest alternative to spawned mode in this cell, by median.
    fn best_alternative(&self) -> (Runner, f64) {
        self.runs
            .iter()
            .filter(|(r, _)| *r != Runner::Spawned)
            .map(|(r, s)| (*r, s.median))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("every cell has an alternative")
    }

    /// Spawned mode's median over the best alternative's.
    pub fn ratio(&self) -> f64 {
        let spawned = self.ns(Runner::Spawned).expect("spawned is in every cell");
        spawned.median / self.best_alternative().1
    }
}

/// The scaling workload on `threads` threads: seconds per run.
pub struct ScalingRow {
    pub threads: usize,
    pub std_threads: Spread,
    pub spawned: Spread,
}

/// Everything the spawned section measured.
pub struct SpawnedResults {
    pub handoff: Vec<HandoffCell>,
    pub scaling: Vec<ScalingRow>,
    /// Seconds per run over [`FEW_ITEMS`] items: `bounded(FEW_ITEMS, 0)`, then
    /// `bounded(FEW_HUGE_WORKERS, 0)`.
    pub few: [Spread; 2],
}

/// The runs [`measure`] makes, for the progress line.
pub fn steps() -> usize {
    let cells: usize = Executor::ALL
        .iter()
        .map(|e| e.runners().len() * Work::ALL.len() * Consumer::ALL.len())
        .sum();
    cells * (HANDOFF_REPS + 1) + 2 * 2 * SCALING_REPS + 2 * FEW_REPS
}

/// Runs `run` for every key `reps` times, round-robin, so that a burst of
/// machine noise hits every key alike; returns each key's spread.
fn interleaved<K: Copy>(keys: &[K], reps: usize, mut run: impl FnMut(K) -> f64) -> Vec<Spread> {
    let mut samples = vec![Vec::with_capacity(reps); keys.len()];
    for _ in 0..reps {
        for (i, &key) in keys.iter().enumerate() {
            samples[i].push(run(key));
        }
    }
    samples.into_iter().map(Spread::of).collect()
}

pub fn measure(progress: &mut Progress) -> SpawnedResults {
    SpawnedResults {
        handoff: handoff(progress),
        scaling: scaling(progress),
        few: few(progress),
    }
}

fn handoff(progress: &mut Progress) -> Vec<HandoffCell> {
    let tokio = multi_thread_runtime(2);
    let smol = SmolPool::new(2);
    let mut cells = Vec::new();
    for executor in Executor::ALL {
        for work in Work::ALL {
            for consumer in Consumer::ALL {
                let items = work.items();
                let label = format!("{} {} {}", executor.name(), work.name(), consumer.name());
                let mut run_once = |runner: Runner| {
                    progress.step("spawned", &format!("{label} {}", runner.name()));
                    let start = Instant::now();
                    match executor {
                        Executor::Tokio => run_tokio(&tokio, runner, consumer, work, items),
                        Executor::Smol => run_smol(&smol, runner, consumer, work, items),
                    };
                    start.elapsed().as_secs_f64() * 1e9 / items as f64
                };
                // One round first, discarded: it warms the executor's threads
                // and caches, as criterion's warm-up does.
                interleaved(executor.runners(), 1, &mut run_once);
                let spreads = interleaved(executor.runners(), HANDOFF_REPS, &mut run_once);
                cells.push(HandoffCell {
                    executor,
                    work,
                    consumer,
                    runs: executor.runners().iter().copied().zip(spreads).collect(),
                });
            }
        }
    }
    cells
}

fn scaling(progress: &mut Progress) -> Vec<ScalingRow> {
    [1, 2]
        .into_iter()
        .map(|threads| {
            let runtime = multi_thread_runtime(threads);
            let spreads = interleaved(&[false, true], SCALING_REPS, |spawned| {
                progress.step("spawned scaling", &format!("threads={threads}"));
                let start = Instant::now();
                let done = if spawned {
                    cpu_spawned(&runtime)
                } else {
                    cpu_on_threads(threads)
                };
                assert_eq!(done, SCALING_ITEMS);
                start.elapsed().as_secs_f64()
            });
            ScalingRow {
                threads,
                std_threads: spreads[0],
                spawned: spreads[1],
            }
        })
        .collect()
}

fn few(progress: &mut Progress) -> [Spread; 2] {
    let runtime = multi_thread_runtime(2);
    let budgets = [FEW_ITEMS as usize, FEW_HUGE_WORKERS];
    let spreads = interleaved(&budgets, FEW_REPS, |workers| {
        progress.step("spawned few items", &format!("workers={workers}"));
        let start = Instant::now();
        for _ in 0..FEW_RUNS {
            run_few_items(&runtime, workers, FEW_ITEMS);
        }
        start.elapsed().as_secs_f64() / f64::from(FEW_RUNS)
    });
    [spreads[0], spreads[1]]
}

// ---------------------------------------------------------------------------
// Tables

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// The hand-off target: spawned at most this times the best alternative.
const HANDOFF_TARGET: f64 = 0.7;
/// The scaling target: spawned's 2-thread speed-up at least this times the OS
/// threads' in the same run.
const SCALING_TARGET: f64 = 0.95;
/// The few-items target: the huge budget at most this times the small one.
const FEW_TARGET: f64 = 2.0;

fn cell_text(spread: Option<Spread>) -> String {
    spread.map_or("-".to_owned(), |s| {
        format!("{:.0} ({:.0}-{:.0})", s.median, s.min, s.max)
    })
}

pub fn print(results: &SpawnedResults) {
    println!(
        "Spawned mode: bounded({HANDOFF_WORKERS}, {HANDOFF_WORKERS}).spawn_on(executor) against a task per item \
         (spawn + buffer_unordered({HANDOFF_WORKERS})) and JoinSet + Semaphore({HANDOFF_WORKERS}), \
         2 executor threads; ns per item, median of {HANDOFF_REPS} (min-max)"
    );
    println!(
        "  {:<6} {:<10} {:<8} {:>22} {:>22} {:>22} {:>7}",
        "exec", "futures", "consumer", "spawned", "task per item", "JoinSet+Semaphore", "ratio"
    );
    for cell in &results.handoff {
        println!(
            "  {:<6} {:<10} {:<8} {:>22} {:>22} {:>22} {:>7.2}",
            cell.executor.name(),
            cell.work.name(),
            cell.consumer.name(),
            cell_text(cell.ns(Runner::Spawned)),
            cell_text(cell.ns(Runner::TaskPerItem)),
            cell_text(cell.ns(Runner::JoinSetSemaphore)),
            cell.ratio()
        );
    }
    println!("  ratio: spawned's median over the best alternative's in its row");
    for executor in Executor::ALL {
        let worst = results
            .handoff
            .iter()
            .filter(|cell| cell.executor == executor)
            .max_by(|a, b| a.ratio().total_cmp(&b.ratio()))
            .expect("every executor has cells");
        println!(
            "  worst {} cell: {:.2} ({} {}); target <= {HANDOFF_TARGET}: {}",
            executor.name(),
            worst.ratio(),
            worst.work.name(),
            worst.consumer.name(),
            verdict(worst.ratio() <= HANDOFF_TARGET)
        );
    }
    println!();

    println!(
        "CPU scaling: {SCALING_ITEMS} items of {SCALING_ROUNDS} xorshift rounds, spawned on a 1- and a \
         2-thread tokio runtime against plain OS threads; ms per run, median of {SCALING_REPS} (min-max)"
    );
    for row in &results.scaling {
        println!(
            "  threads={}  OS threads {:>7.1} ({:.1}-{:.1})  spawned {:>7.1} ({:.1}-{:.1})",
            row.threads,
            row.std_threads.median * 1e3,
            row.std_threads.min * 1e3,
            row.std_threads.max * 1e3,
            row.spawned.median * 1e3,
            row.spawned.min * 1e3,
            row.spawned.max * 1e3,
        );
    }
    if let [one, two] = &results.scaling[..] {
        let os = one.std_threads.median / two.std_threads.median;
        let spawned = one.spawned.median / two.spawned.median;
        println!(
            "  2-thread speed-up: OS threads {os:.2}x, spawned {spawned:.2}x; spawned / OS = {:.2}, \
             target >= {SCALING_TARGET}: {}",
            spawned / os,
            verdict(spawned / os >= SCALING_TARGET)
        );
    }
    println!();

    let [small, huge] = results.few;
    println!(
        "Few items: {FEW_ITEMS} ready items, spawned on a 2-thread tokio runtime; µs per run, median of \
         {FEW_REPS} samples of {FEW_RUNS} runs (min-max)"
    );
    println!(
        "  bounded({FEW_ITEMS}, 0) {:.1} ({:.1}-{:.1}), bounded({FEW_HUGE_WORKERS}, 0) {:.1} ({:.1}-{:.1}): \
         {:.2}x, target <= {FEW_TARGET}: {}",
        small.median * 1e6,
        small.min * 1e6,
        small.max * 1e6,
        huge.median * 1e6,
        huge.min * 1e6,
        huge.max * 1e6,
        huge.median / small.median,
        verdict(huge.median / small.median <= FEW_TARGET)
    );
}

// ---------------------------------------------------------------------------
// The chart

type Panel<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn runner_color(runner: Runner) -> RGBColor {
    match runner {
        Runner::Spawned => RGBColor(0xd6, 0x27, 0x28),
        Runner::TaskPerItem => RGBColor(0x1f, 0x77, 0xb4),
        Runner::JoinSetSemaphore => RGBColor(0x2c, 0xa0, 0x2c),
    }
}

fn runner_legend(runner: Runner) -> &'static str {
    match runner {
        Runner::Spawned => "bounded(16, 16).spawn_on",
        Runner::TaskPerItem => "task per item",
        Runner::JoinSetSemaphore => "JoinSet + Semaphore",
    }
}

/// One panel per executor and kind of future: ns per item, bars grouped by
/// where the consumer runs.
pub fn draw(path: &Path, results: &SpawnedResults) -> Result<(), Box<dyn Error>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (1200, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        "Spawned mode against a task per item and JoinSet + Semaphore: ns per item, 2 threads \
         (medians; relative figures)",
        ("sans-serif", 18),
    )?;
    let panels = body.split_evenly((2, 3));
    let mut panels = panels.iter();
    for executor in Executor::ALL {
        for work in Work::ALL {
            let cells: Vec<&HandoffCell> = results
                .handoff
                .iter()
                .filter(|c| c.executor == executor && c.work == work)
                .collect();
            let panel = panels.next().expect("one panel per executor and work");
            handoff_panel(panel, executor, work, &cells)?;
        }
    }
    root.present()?;
    Ok(())
}

fn handoff_panel(
    area: &Panel<'_>,
    executor: Executor,
    work: Work,
    cells: &[&HandoffCell],
) -> Result<(), Box<dyn Error>> {
    let runners = executor.runners();
    // Each consumer's bars, then a gap.
    let stride = runners.len() + 1;
    let max = cells
        .iter()
        .flat_map(|c| c.runs.iter().map(|(_, s)| s.median))
        .fold(0.0, f64::max);
    let width = (cells.len() * stride) as f64 - 1.5;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{}, {} futures", executor.name(), work.name()),
            ("sans-serif", 15),
        )
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(55)
        .build_cartesian_2d(-0.5f64..width, 0f64..max * 1.9)?;
    let labels: Vec<(f64, &str)> = cells
        .iter()
        .enumerate()
        .map(|(group, cell)| {
            let center = (group * stride) as f64 + (runners.len() as f64 - 1.0) / 2.0;
            (center, cell.consumer.name())
        })
        .collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("ns per item")
        .draw()?;
    for (center, name) in labels {
        chart.draw_series(std::iter::once(Text::new(
            format!("consumer: {name}"),
            (center - 0.9, max * 1.3),
            ("sans-serif", 12),
        )))?;
    }
    for (group, cell) in cells.iter().enumerate() {
        for (index, (runner, spread)) in cell.runs.iter().enumerate() {
            let x = (group * stride + index) as f64;
            let color = runner_color(*runner);
            let bar = chart.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.4, 0.0), (x + 0.4, spread.median)],
                color.filled(),
            )))?;
            if group == 0 {
                bar.label(runner_legend(*runner)).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            }
            chart.draw_series(std::iter::once(Text::new(
                format!("{:.0}", spread.median),
                (x - 0.35, spread.median + max * 0.06),
                ("sans-serif", 11),
            )))?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 10))
        .draw()?;
    Ok(())
}
