//! `Aimd::new(1, 256)` with its defaults against a family of service models
//! (`models.rs`), both queue disciplines, several seeds, in place and spawned,
//! on tokio's paused clock: every figure is exact and repeats.
//!
//!     cargo run --release -p models [-- OPTIONS]
//!
//! - `--seeds tuned|held-out|all|FIRST-LAST` (default `held-out`): the rule
//!   was tuned on seeds 1 to 600 of the family (and 1 to 400 of the models
//!   outside it); seeds 601 to 800 are held out, and the README's table
//!   reports them.
//! - `--family family|refused|outside|unseen|refuse|fresh|sealed|shared|drift`
//!   (default `family`): the models of issue 20 (`models.rs`); those of
//!   issue 34, refused whatever the load (`models.rs`, held by `.ci/run` to
//!   the runs they met, not to every target: the rule misses some of their
//!   runs); models outside it that the rule was tuned against as well
//!   (`outside.rs`); models written apart from
//!   the rule of issue 20, first run once it was settled, and tuned on in
//!   issue 34 (`unseen.rs`); services with no queue across capacities and
//!   how much their run times vary (`refuse.rs`); the models written for
//!   issue 34 before its rule was run on them, run once it was frozen
//!   (`fresh.rs`; run again since, so no longer unseen); or models written
//!   after the rule that judges refusals against fewer in flight was frozen,
//!   run once on it (`sealed.rs`); or services whose requests slow each
//!   other down below a hard capacity, written after `http_adaptive` showed
//!   the miss (`shared.rs`); or services whose speed drifts, a factor the
//!   requests running together share, written after `http_adaptive`'s
//!   rounds showed it and run once on the rule of stop 48 (`drift.rs`).
//! - `--model TEXT`: only the models whose name contains TEXT.
//! - `--runs`: one line per run as well, not only the worst per row.
//! - `--trace`: the controller's decisions in each run (with `--model`;
//!   with `--oracle`, its limits: it makes no other decision).
//! - `--chart PATH`: writes an SVG of the limit over time for three models
//!   (the first held-out seed, FIFO, in place).
//! - `--oracle`: the oracle instead of the rule (`oracle.rs`): a controller
//!   told the capacity and the moment of a change, and nothing else: from
//!   4, one more with each success up to the capacity, a change heard of a
//!   round trip after it. A target it misses is out of reach of any
//!   controller that grows no faster and hears no sooner; the guide's
//!   adaptive page sets it beside the rule.
//! - `--guide PATH`: checks that the adaptive guide at PATH
//!   (`src/guide/adaptive.md`) has this run's line for each model, and for
//!   the family and the refused models each row too, exactly, and no other
//!   line for them (`guide.rs`); exits with 1 if not. The figures repeat, so
//!   a change that moves one updates the guide with it.
//! - `--at-least N`: exits with 1 only if fewer than N runs met every target
//!   (a floor: the runs a family met when it was set, so that a change
//!   that loses runs on a family the rule still misses cannot land
//!   unseen; `.ci/run` sets one for each such family).
//!
//! Each row of the table is the worst over its seeds: the lowest goodput, the
//! most wasted calls, the highest latency ratios, the longest settling, the
//! widest limit range and the lowest mean limit; and how many of its runs met
//! every target, and the runs met in all. It exits with 1 if any run
//! misses a target (with `--at-least N`, if fewer than N met them all).

mod chart;
mod drift;
mod fresh;
mod guide;
mod job;
mod models;
mod oracle;
mod outside;
mod refuse;
mod score;
mod sealed;
mod shared;
mod unseen;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use job::{Limiter, Mode};
use models::{Discipline, Model};
use score::{Score, Span};

/// The seeds the rule was tuned on: earlier rules were held out on parts of
/// this range in turn, and the range became tuning material as each was
/// looked at.
const TUNED: std::ops::RangeInclusive<u64> = 1..=600;
/// Run only to report on: not looked at while the rule was tuned.
const HELD_OUT: std::ops::RangeInclusive<u64> = 601..=800;
/// The models the chart shows.
const CHARTED: [&str; 3] = ["lognormal σ 0.6", "capacity rise", "latency rise"];

struct Options {
    seeds: Vec<u64>,
    family: fn() -> Vec<Model>,
    model: Option<String>,
    runs: bool,
    trace: bool,
    chart: Option<String>,
    at_least: Option<usize>,
    guide: Option<String>,
    /// The family's rows are in the guide's first table too.
    full_rows: bool,
    limiter: Limiter,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        seeds: HELD_OUT.collect(),
        family: Model::all,
        model: None,
        runs: false,
        trace: false,
        chart: None,
        at_least: None,
        guide: None,
        full_rows: true,
        limiter: Limiter::Aimd,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--seeds" => {
                options.seeds = match value()?.as_str() {
                    "tuned" => TUNED.collect(),
                    "held-out" => HELD_OUT.collect(),
                    "all" => TUNED.chain(HELD_OUT).collect(),
                    range => {
                        let seeds = range.split_once('-').and_then(|(first, last)| {
                            Some(first.parse::<u64>().ok()?..=last.parse::<u64>().ok()?)
                        });
                        match seeds {
                            Some(seeds) if !seeds.is_empty() => seeds.collect(),
                            _ => {
                                return Err(format!(
                                    "--seeds {range}: tuned, held-out, all or FIRST-LAST"
                                ));
                            }
                        }
                    }
                }
            }
            "--family" => {
                let family = value()?;
                options.full_rows = matches!(family.as_str(), "family" | "refused");
                options.family = match family.as_str() {
                    "family" => Model::all,
                    "refused" => Model::refused_anyway,
                    "outside" => outside::models,
                    "unseen" => unseen::models,
                    "refuse" => refuse::models,
                    "fresh" => fresh::models,
                    "sealed" => sealed::models,
                    "shared" => shared::models,
                    "drift" => drift::models,
                    other => {
                        return Err(format!(
                            "--family {other}: family, refused, outside, unseen, refuse, fresh, sealed, \
                             shared or drift"
                        ));
                    }
                }
            }
            "--model" => options.model = Some(value()?),
            "--runs" => options.runs = true,
            "--trace" => options.trace = true,
            "--chart" => options.chart = Some(value()?),
            "--oracle" => options.limiter = Limiter::Oracle,
            "--guide" => options.guide = Some(value()?),
            "--at-least" => {
                let runs = value()?;
                options.at_least = Some(
                    runs.parse()
                        .map_err(|_| format!("--at-least {runs}: a number of runs"))?,
                );
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if options.guide.is_some() && (options.model.is_some() || options.trace) {
        // The guide's lines are of every model of the family.
        return Err("--guide checks every model: not with --model or --trace".into());
    }
    Ok(options)
}

/// One row of the table: a model, a discipline, a mode.
#[derive(Clone, Copy)]
struct Row {
    model: Model,
    discipline: Discipline,
    mode: Mode,
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let mut rows = Vec::new();
    for model in (options.family)() {
        if options
            .model
            .as_ref()
            .is_some_and(|text| !model.name.contains(text.as_str()))
        {
            continue;
        }
        let disciplines: &[Discipline] = if model.queues() {
            &[Discipline::Fifo, Discipline::WakeAll]
        } else {
            &[Discipline::Fifo]
        };
        for &discipline in disciplines {
            for mode in [Mode::InPlace, Mode::Spawned] {
                rows.push(Row {
                    model,
                    discipline,
                    mode,
                });
            }
        }
    }
    let jobs: Vec<(usize, u64)> = (0..rows.len())
        .flat_map(|row| options.seeds.iter().map(move |&seed| (row, seed)))
        .collect();
    if options.trace {
        for &(row, seed) in &jobs {
            let Row {
                model,
                discipline,
                mode,
            } = rows[row];
            println!(
                "{} / {} / {} / seed {seed}",
                model.name,
                discipline.name(),
                mode.name(),
            );
            let run = job::run(&model, discipline, seed, mode, options.limiter);
            println!("  change at {:.3} s", run.changed_at.as_secs_f64());
            let ms = |d: std::time::Duration| format!("{:.2}", d.as_secs_f64() * 1e3);
            for decision in &run.decisions {
                println!(
                    "  {:>9} mean {:>7} base {:>7} {} -> {}",
                    ms(decision.at),
                    decision.mean_run.map_or("-".into(), ms),
                    decision.base.map_or("-".into(), ms),
                    if decision.overload { "overload" } else { "" },
                    decision.limit
                );
            }
            if options.limiter == Limiter::Oracle {
                for &(at, limit) in &run.limits {
                    println!("  {:>9} -> {limit}", ms(at));
                }
            }
        }
        return;
    }
    let scores = run_all(&rows, &jobs, options.limiter);

    println!(
        "{}; {} successes per run, the change at the {}th; seeds {:?}; each row the worst over its seeds",
        options.limiter.name(),
        models::SUCCESSES,
        models::CHANGE_AT,
        options.seeds
    );
    println!(
        "latency: successes after the first 200 ms against their own service times (the unloaded distribution), the worse phase (before or after the change)\n"
    );
    println!(
        "| model | queue | mode | goodput / ideal | wasted calls | p50 | p95 | p99 | limit after the ramp | settle after the change | limit after settling | targets | runs met |"
    );
    println!(
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- | ---: |"
    );
    let (mut all_met, mut all_runs) = (0, 0);
    let mut summaries = Vec::new();
    let mut guided = Vec::new();
    for (index, row) in rows.iter().enumerate() {
        let row_scores: Vec<&(u64, Score)> = scores
            .iter()
            .filter(|(job, _)| jobs[*job].0 == index)
            .map(|(_, s)| s)
            .collect();
        if options.runs {
            for (seed, score) in &row_scores {
                let met = usize::from(score.misses.is_empty());
                let line = row_line(row, &format!(" seed {seed}"), score, &format!("{met} / 1"));
                println!("{line}");
            }
        }
        let worst = row_scores
            .iter()
            .map(|(_, score)| score.clone())
            .reduce(Score::worst)
            .expect("at least one seed");
        let met = row_scores
            .iter()
            .filter(|(_, score)| score.misses.is_empty())
            .count();
        (all_met, all_runs) = (all_met + met, all_runs + row_scores.len());
        let line = row_line(row, "", &worst, &format!("{met} / {}", row_scores.len()));
        println!("{line}");
        if options.full_rows {
            let key = format!(
                "| {} | {} | {} | ",
                row.model.name,
                row.queue(),
                row.mode.name()
            );
            guided.push((key, line));
        }
        guide::Summary::add(
            &mut summaries,
            row.model.name,
            &worst,
            met,
            row_scores.len(),
        );
    }
    let guide_kept = options.guide.as_deref().is_none_or(|path| {
        println!("\nthe guide's lines for this family ({path}):");
        for summary in &summaries {
            println!("{}", summary.line());
        }
        guided.extend(
            summaries
                .iter()
                .map(|summary| (summary.key(), summary.line())),
        );
        guide::check(path, &guided)
    });

    if let Some(path) = options.chart {
        let charted: Vec<_> = CHARTED
            .iter()
            .filter_map(|name| Model::all().into_iter().find(|m| m.name.contains(name)))
            .map(|model| {
                let run = job::run(
                    &model,
                    Discipline::Fifo,
                    *HELD_OUT.start(),
                    Mode::InPlace,
                    options.limiter,
                );
                (model, run)
            })
            .collect();
        std::fs::write(&path, chart::svg(&charted)).expect("the chart is written");
        println!("\nchart: {path}");
    }
    println!("\nruns met: {all_met} of {all_runs}");
    if !guide_kept {
        println!("the guide's tables are not this run's: update them (every figure repeats)");
        std::process::exit(1);
    }
    match options.at_least {
        Some(floor) if all_met < floor => {
            println!("fewer than the {floor} runs this family met when the floor was set");
            std::process::exit(1);
        }
        Some(_) => {}
        None if all_met < all_runs => std::process::exit(1),
        None => {}
    }
}

/// Runs every job on as many threads as there are cores; returns (job, (seed,
/// score)) in job order.
fn run_all(rows: &[Row], jobs: &[(usize, u64)], limiter: Limiter) -> Vec<(usize, (u64, Score))> {
    let next = AtomicUsize::new(0);
    let done = Mutex::new(Vec::with_capacity(jobs.len()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let job = next.fetch_add(1, SeqCst);
                    let Some(&(row, seed)) = jobs.get(job) else {
                        break;
                    };
                    let Row {
                        model,
                        discipline,
                        mode,
                    } = rows[row];
                    let run = job::run(&model, discipline, seed, mode, limiter);
                    let score = Score::of(&model, &run);
                    done.lock().unwrap().push((job, (seed, score)));
                }
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(job, _)| *job);
    done
}

impl Row {
    /// The queue discipline, as the tables name it.
    fn queue(&self) -> &'static str {
        if self.model.queues() {
            self.discipline.name()
        } else {
            "none"
        }
    }
}

/// A row of the table (one seed's, or the worst over them).
fn row_line(row: &Row, seed: &str, score: &Score, met: &str) -> String {
    let span = |span: &Span| format!("{}–{}, mean {:.1}", span.low, span.high, span.mean);
    let settle = score.settle_text();
    let mut after = if score.settle.is_some() {
        span(&score.after)
    } else {
        "—".to_string()
    };
    if let Some(bound) = score.bound {
        after = format!("highest {} (bound {bound:.0})", score.highest);
    }
    let targets = if score.misses.is_empty() {
        "met".to_string()
    } else {
        format!("missed: {}", score.misses.join(", "))
    };
    format!(
        "| {}{seed} | {} | {} | {:.3} | {} | {:.2} | {:.2} | {:.2} | {} | {settle} | {after} | {targets} | {met} |",
        row.model.name,
        row.queue(),
        row.mode.name(),
        score.goodput,
        score.wasted_text(),
        score.quantiles[0],
        score.quantiles[1],
        score.quantiles[2],
        span(&score.before),
    )
}
