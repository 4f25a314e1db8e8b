//! Fair shares among three tenants (issue 37):
//! `cargo run --release -p admission --bin fair`.
//!
//! Tenants A, B and C have weights 1, 1 and 2; the workers are 8, every job
//! sleeps 5 to 15 ms of virtual time (seeded, 10 ms on average), so the
//! stream starts about 800 jobs a second and a weight-1 tenant's share is
//! about 200 a second.
//!
//! - **steady**: A has 10,000 jobs queued in its source at the start. B and
//!   C are interactive: from t = 1 s, B's 300 jobs arrive one every 0 to 8
//!   ms (4 ms on average, 250 a second) and C's 600 one every 0 to 4 ms (2
//!   ms on average, 500 a second), each 1.25 times its weight's share, so
//!   that all three stay backlogged while B and C send.
//! - **light**: the same with B and C sending at half those rates (B every
//!   0 to 16 ms, C every 0 to 8 ms), below their shares: the weights then
//!   say nothing about the split (B and C get all they ask), and what
//!   counts is their latency.
//! - **joining**: A has 10,000 jobs and B 3,000 queued at the start; C
//!   joins at t = 3 s and sends 600 jobs, one every 0 to 4 ms. With
//!   `Tenants` C arrives through `Tenants::joining`; the other two
//!   configurations have C's (empty) source from the start.
//!
//! Three configurations, on the same jobs: `bounded(8, 32)` over
//! `stream::select_all` of the tenants' sources (each job a
//! `Keyed::new(tenant, ..)`), the same with `.per_key(6)`, and
//! `Tenants::new().with(..)` (or `joining`) with `.bounded(8, 32)`: 8
//! workers for all, 32 waiting places per tenant. Each in place and
//! spawned.
//!
//! Reported, over a window while B and C send (1.1 to 2.1 s; 3.1 to 4.1 s
//! when C joins): each tenant's share of the starts in the window against
//! its weight's share, Jain's index of the weighted shares (`x = share /
//! weight share`, `J = (Σx)² / (n Σx²)`, 1 when every tenant gets its
//! weight's share), the part of the window during which all three had a
//! job that had arrived and not started (backlogged), the interactive
//! tenants' latency from a job's arrival to its output, and when A's last
//! job (the backlog) and the last of all came out.

use std::pin::pin;
use std::time::{Duration, Instant};

use admission::{Checks, Mode, Percentiles, Table, draw, generator, ms, now, paused_runtime};
use bounded_buffered::{BoundedStreamExt, Keyed, TenantShares, Tenants};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, Stream, StreamExt, stream};

const WORKERS: usize = 8;
const WAITING: usize = 32;
const PER_KEY: usize = 6;
const WORK_MIN: Duration = Duration::from_millis(5);
const WORK_MAX: Duration = Duration::from_millis(15);

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
enum Tenant {
    A,
    B,
    C,
}

const TENANTS: [Tenant; 3] = [Tenant::A, Tenant::B, Tenant::C];

impl Tenant {
    fn index(self) -> usize {
        self as usize
    }

    fn weight(self) -> u32 {
        match self {
            Tenant::A | Tenant::B => 1,
            Tenant::C => 2,
        }
    }

    /// Its weight's share of the starts, while all three are busy.
    fn weight_share(self) -> f64 {
        let total: u32 = TENANTS.iter().map(|tenant| tenant.weight()).sum();
        f64::from(self.weight()) / f64::from(total)
    }
}

/// What a job returns: whose it was, when it arrived in its source, and when
/// it started (its first poll).
struct Done {
    tenant: Tenant,
    arrived: Instant,
    started: Instant,
    finished: Instant,
}

type Job = BoxFuture<'static, Done>;
type Source = BoxStream<'static, Job>;

fn job(tenant: Tenant, arrived: Instant, work: Duration) -> Job {
    async move {
        let started = now();
        tokio::time::sleep(work).await;
        Done {
            tenant,
            arrived,
            started,
            finished: now(),
        }
    }
    .boxed()
}

/// How a tenant's jobs arrive.
#[derive(Clone, Copy)]
enum Arrivals {
    /// All queued in its source at the start.
    Backlog(usize),
    /// `jobs` from `first` on, one every 0 to `2 × mean_gap` (whole ms).
    Interactive {
        first: Duration,
        jobs: usize,
        mean_gap: Duration,
    },
}

impl Arrivals {
    fn jobs(self) -> usize {
        match self {
            Arrivals::Backlog(jobs) | Arrivals::Interactive { jobs, .. } => jobs,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Steady,
    Light,
    Joining,
}

/// When C joins, in the joining scenario.
const JOIN_AT: Duration = Duration::from_secs(3);

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::Light => "light",
            Scenario::Joining => "C joins at 3 s",
        }
    }

    fn arrivals(self, tenant: Tenant) -> Arrivals {
        match (self, tenant) {
            (_, Tenant::A) => Arrivals::Backlog(10_000),
            (Scenario::Steady, Tenant::B) => Arrivals::Interactive {
                first: Duration::from_secs(1),
                jobs: 300,
                mean_gap: Duration::from_millis(4),
            },
            (Scenario::Light, Tenant::B) => Arrivals::Interactive {
                first: Duration::from_secs(1),
                jobs: 300,
                mean_gap: Duration::from_millis(8),
            },
            (Scenario::Light, Tenant::C) => Arrivals::Interactive {
                first: Duration::from_secs(1),
                jobs: 600,
                mean_gap: Duration::from_millis(4),
            },
            (Scenario::Joining, Tenant::B) => Arrivals::Backlog(3_000),
            (Scenario::Steady, Tenant::C) => Arrivals::Interactive {
                first: Duration::from_secs(1),
                jobs: 600,
                mean_gap: Duration::from_millis(2),
            },
            (Scenario::Joining, Tenant::C) => Arrivals::Interactive {
                first: JOIN_AT,
                jobs: 600,
                mean_gap: Duration::from_millis(2),
            },
        }
    }

    /// The window over which the starts are shared out: while B and C send.
    fn window(self) -> (Duration, Duration) {
        match self {
            Scenario::Steady | Scenario::Light => {
                (Duration::from_millis(1_100), Duration::from_millis(2_100))
            }
            Scenario::Joining => (Duration::from_millis(3_100), Duration::from_millis(4_100)),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Config {
    Plain,
    PerKey,
    Fair,
}

impl Config {
    const ALL: [Config; 3] = [Config::Plain, Config::PerKey, Config::Fair];

    fn name(self) -> String {
        match self {
            Config::Plain => format!("select_all + bounded({WORKERS}, {WAITING})"),
            Config::PerKey => {
                format!("select_all + bounded({WORKERS}, {WAITING}).per_key({PER_KEY})")
            }
            Config::Fair => format!("Tenants (1, 1, 2) + bounded({WORKERS}, {WAITING})"),
        }
    }
}

/// One job as the run saw it, in offsets from the run's start: its arrival
/// in its source, its start, its end, and its output.
#[derive(Clone, Copy)]
struct Out {
    tenant: Tenant,
    arrived: Duration,
    started: Duration,
    finished: Duration,
    done: Duration,
}

/// One tenant's source: its jobs, queued or sent by a task at their times.
/// The jobs' durations and arrival gaps are drawn from one generator per
/// tenant, so every configuration runs the same jobs.
fn source(scenario: Scenario, tenant: Tenant, started: Instant) -> Source {
    let mut rng = generator(10 + tenant.index() as u64);
    match scenario.arrivals(tenant) {
        Arrivals::Backlog(jobs) => {
            let work: Vec<Duration> = (0..jobs)
                .map(|_| draw(&mut rng, WORK_MIN, WORK_MAX))
                .collect();
            stream::iter(work)
                .map(move |work| job(tenant, started, work))
                .boxed()
        }
        Arrivals::Interactive {
            first,
            jobs,
            mean_gap,
        } => {
            let mut at = first;
            let plan: Vec<(Duration, Duration)> = (0..jobs)
                .map(|n| {
                    if n > 0 {
                        at += draw(&mut rng, Duration::ZERO, mean_gap * 2);
                    }
                    (at, draw(&mut rng, WORK_MIN, WORK_MAX))
                })
                .collect();
            let (sender, receiver) = async_channel::unbounded();
            let start = tokio::time::Instant::from_std(started);
            tokio::spawn(async move {
                for (at, work) in plan {
                    tokio::time::sleep_until(start + at).await;
                    sender
                        .send(job(tenant, now(), work))
                        .await
                        .expect("the stream takes every job");
                }
            });
            receiver.boxed()
        }
    }
}

/// Takes every output, noting when it came out; with `shares`, the crate's
/// per-tenant counts at the first output at or after `snapshot_at`.
async fn drain<S: Stream<Item = Done> + Unpin>(
    stream: &mut S,
    started: Instant,
    shares: Option<&TenantShares<Tenant>>,
    snapshot_at: Duration,
) -> (Vec<Out>, Option<Snapshot>) {
    let mut outs = Vec::new();
    let mut snapshot = None;
    while let Some(done) = stream.next().await {
        let at = now() - started;
        outs.push(Out {
            tenant: done.tenant,
            arrived: done.arrived - started,
            started: done.started - started,
            finished: done.finished - started,
            done: at,
        });
        if let Some(shares) = shares
            && snapshot.is_none()
            && at >= snapshot_at
        {
            let mut started = [0; 3];
            for stats in shares.stats() {
                started[stats.tenant.index()] = stats.started;
            }
            snapshot = Some(Snapshot { at, started });
        }
    }
    (outs, snapshot)
}

/// `TenantShares::stats` read during the run.
struct Snapshot {
    at: Duration,
    started: [u64; 3],
}

/// What one run gave: its jobs, and for `Tenants` the crate's counts.
struct Run {
    outs: Vec<Out>,
    snapshot: Option<Snapshot>,
    /// `TenantShares::stats` after the stream ended: (tenant, started,
    /// completed) of each tenant still listed.
    left_listed: Vec<(Tenant, u64, u64)>,
}

async fn run_keyed<S>(source: S, per_key: bool, mode: Mode, started: Instant) -> Run
where
    S: Stream<Item = Keyed<Tenant, Job>> + Send + 'static,
{
    let jobs = source.bounded(WORKERS, WAITING);
    let executor = tokio::runtime::Handle::current;
    let (outs, _) = match (per_key, mode) {
        (false, Mode::InPlace) => drain(&mut pin!(jobs), started, None, Duration::MAX).await,
        (false, Mode::Spawned) => {
            drain(&mut jobs.spawn_on(executor()), started, None, Duration::MAX).await
        }
        (true, Mode::InPlace) => {
            drain(
                &mut pin!(jobs.per_key(PER_KEY)),
                started,
                None,
                Duration::MAX,
            )
            .await
        }
        (true, Mode::Spawned) => {
            let mut jobs = jobs.per_key(PER_KEY).spawn_on(executor());
            drain(&mut jobs, started, None, Duration::MAX).await
        }
    };
    Run {
        outs,
        snapshot: None,
        left_listed: Vec::new(),
    }
}

async fn run(scenario: Scenario, config: Config, mode: Mode) -> Run {
    let started = now();
    let sources: Vec<(Tenant, Source)> = TENANTS
        .iter()
        .map(|&tenant| (tenant, source(scenario, tenant, started)))
        .collect();
    match config {
        Config::Plain | Config::PerKey => {
            let merged =
                stream::select_all(sources.into_iter().map(|(tenant, source)| {
                    source.map(move |job| Keyed::new(tenant, job)).boxed()
                }));
            run_keyed(merged, config == Config::PerKey, mode, started).await
        }
        Config::Fair => match scenario {
            Scenario::Steady | Scenario::Light => {
                let tenants = sources
                    .into_iter()
                    .fold(Tenants::new(), |tenants, (tenant, source)| {
                        tenants.with(tenant, tenant.weight(), source)
                    });
                run_fair(tenants, scenario, mode, started).await
            }
            Scenario::Joining => {
                let mut sources = sources;
                let (c, c_source) = sources.pop().expect("three sources");
                let join_at = tokio::time::Instant::from_std(started) + JOIN_AT;
                let first: Vec<(Tenant, u32, Source)> = sources
                    .into_iter()
                    .map(|(tenant, source)| (tenant, tenant.weight(), source))
                    .collect();
                let joining = stream::iter(first).chain(stream::once(async move {
                    tokio::time::sleep_until(join_at).await;
                    (c, c.weight(), c_source)
                }));
                let tenants = Tenants::joining(TENANTS.len(), joining.boxed());
                run_fair(tenants, scenario, mode, started).await
            }
        },
    }
}

async fn run_fair<J>(
    tenants: Tenants<Tenant, Source, J>,
    scenario: Scenario,
    mode: Mode,
    started: Instant,
) -> Run
where
    J: Stream<Item = (Tenant, u32, Source)> + Send + 'static,
{
    let shares = tenants.shares();
    let jobs = tenants.bounded(WORKERS, WAITING);
    let snapshot_at = scenario.window().1;
    let (outs, snapshot) = match mode {
        Mode::InPlace => drain(&mut pin!(jobs), started, Some(&shares), snapshot_at).await,
        Mode::Spawned => {
            let mut jobs = jobs.spawn_on(tokio::runtime::Handle::current());
            drain(&mut jobs, started, Some(&shares), snapshot_at).await
        }
    };
    let left_listed = shares
        .stats()
        .into_iter()
        .map(|stats| (stats.tenant, stats.started, stats.completed))
        .collect();
    Run {
        outs,
        snapshot,
        left_listed,
    }
}

/// What the table and the checks read off one run.
struct Measured {
    outputs: [usize; 3],
    /// Starts in the window, by tenant.
    window_starts: [usize; 3],
    /// Each tenant's part of the window's starts.
    shares: [f64; 3],
    jain: f64,
    /// The part of the window during which all three tenants had a job that
    /// had arrived and not started (sampled every millisecond).
    backlogged: f64,
    /// The most by which `|Sᵢ/wᵢ − Sⱼ/wⱼ|` over the window's starts exceeds
    /// the contract's `1/wᵢ + 1/wⱼ`, over the pairs (`≤ 0`: within it).
    over_bound: f64,
    latency: [Percentiles; 3],
    /// When A's last job came out.
    backlog_done: Duration,
    all_done: Duration,
    peak_running: usize,
}

impl Measured {
    fn of(outs: &[Out], scenario: Scenario) -> Self {
        let (from, to) = scenario.window();
        let mut outputs = [0; 3];
        let mut window_starts = [0; 3];
        let mut latencies: [Vec<Duration>; 3] = Default::default();
        let mut arrivals: [Vec<Duration>; 3] = Default::default();
        let mut starts: [Vec<Duration>; 3] = Default::default();
        for out in outs {
            let i = out.tenant.index();
            outputs[i] += 1;
            if (from..to).contains(&out.started) {
                window_starts[i] += 1;
            }
            latencies[i].push(out.done - out.arrived);
            arrivals[i].push(out.arrived);
            starts[i].push(out.started);
        }
        for times in arrivals.iter_mut().chain(starts.iter_mut()) {
            times.sort_unstable();
        }
        let total: usize = window_starts.iter().sum();
        let shares = window_starts.map(|n| n as f64 / total.max(1) as f64);
        let x: Vec<f64> = TENANTS
            .iter()
            .map(|tenant| shares[tenant.index()] / tenant.weight_share())
            .collect();
        let jain =
            x.iter().sum::<f64>().powi(2) / (x.len() as f64 * x.iter().map(|x| x * x).sum::<f64>());
        let millis = (to - from).as_millis() as u32;
        let all_backlogged = (0..millis)
            .filter(|&k| {
                let t = from + Duration::from_millis(u64::from(k)) + Duration::from_micros(500);
                (0..3).all(|i| {
                    arrivals[i].partition_point(|&a| a <= t)
                        > starts[i].partition_point(|&s| s <= t)
                })
            })
            .count();
        let mut over_bound = f64::NEG_INFINITY;
        for i in TENANTS {
            for j in TENANTS {
                if i < j {
                    let (wi, wj) = (f64::from(i.weight()), f64::from(j.weight()));
                    let gap = (window_starts[i.index()] as f64 / wi
                        - window_starts[j.index()] as f64 / wj)
                        .abs();
                    over_bound = over_bound.max(gap - (1.0 / wi + 1.0 / wj));
                }
            }
        }
        // Running at once, from the jobs' own starts and ends (an end
        // before a start at the same instant).
        let mut events: Vec<(Duration, i32)> = outs
            .iter()
            .flat_map(|out| [(out.started, 1), (out.finished, -1)])
            .collect();
        events.sort_unstable();
        let (mut running, mut peak_running) = (0i32, 0i32);
        for (_, change) in events {
            running += change;
            peak_running = peak_running.max(running);
        }
        let done_of = |tenant: Option<Tenant>| {
            outs.iter()
                .filter(|out| tenant.is_none_or(|tenant| out.tenant == tenant))
                .map(|out| out.done)
                .max()
                .unwrap_or_default()
        };
        Measured {
            outputs,
            window_starts,
            shares,
            jain,
            backlogged: all_backlogged as f64 / f64::from(millis),
            over_bound,
            latency: latencies.map(Percentiles::of),
            backlog_done: done_of(Some(Tenant::A)),
            all_done: done_of(None),
            peak_running: peak_running as usize,
        }
    }
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

fn main() {
    let runtime = paused_runtime();
    let mut table = Table::new(&[
        "scenario",
        "mode",
        "configuration",
        "A starts (w 25%)",
        "B starts (w 25%)",
        "C starts (w 50%)",
        "Jain",
        "all backlogged",
        "B p50",
        "B p99",
        "C p50",
        "C p99",
        "A (backlog) done",
        "all done",
    ]);
    let mut checks = Checks::default();
    let mut notes = Vec::new();
    println!(
        "three tenants, weights 1, 1, 2; {WORKERS} workers; jobs of {} to {}; \
         steady: A 10,000 queued, B 300 (every 0-8 ms) and C 600 (every 0-4 ms) from t = 1 s, \
         window 1.1-2.1 s; light: the same, B and C at half those rates; joining: A 10,000 and B 3,000 queued, C joins at 3 s with 600 \
         (every 0-4 ms), window 3.1-4.1 s; latency = arrival to output\n",
        ms(WORK_MIN),
        ms(WORK_MAX),
    );
    for scenario in [Scenario::Steady, Scenario::Light, Scenario::Joining] {
        for mode in Mode::BOTH {
            let runs = Config::ALL.map(|config| {
                let run = runtime.block_on(run(scenario, config, mode));
                let measured = Measured::of(&run.outs, scenario);
                (config, run, measured)
            });
            for (config, run, measured) in &runs {
                let interactive = |tenant: Tenant| {
                    matches!(scenario.arrivals(tenant), Arrivals::Interactive { .. })
                };
                let latency = |tenant: Tenant, p99: bool| {
                    if !interactive(tenant) {
                        return "-".into();
                    }
                    let latency = measured.latency[tenant.index()];
                    ms(if p99 { latency.p99 } else { latency.p50 })
                };
                table.row(vec![
                    scenario.name().into(),
                    mode.name().into(),
                    config.name(),
                    format!(
                        "{} ({})",
                        percent(measured.shares[0]),
                        measured.window_starts[0]
                    ),
                    format!(
                        "{} ({})",
                        percent(measured.shares[1]),
                        measured.window_starts[1]
                    ),
                    format!(
                        "{} ({})",
                        percent(measured.shares[2]),
                        measured.window_starts[2]
                    ),
                    format!("{:.3}", measured.jain),
                    percent(measured.backlogged),
                    latency(Tenant::B, false),
                    latency(Tenant::B, true),
                    latency(Tenant::C, false),
                    latency(Tenant::C, true),
                    ms(measured.backlog_done),
                    ms(measured.all_done),
                ]);
                let case = format!("{}, {}, {}", scenario.name(), mode.name(), config.name());
                let expected = TENANTS.map(|tenant| scenario.arrivals(tenant).jobs());
                checks.check(
                    measured.outputs == expected && run.outs.len() == expected.iter().sum(),
                    format!(
                        "{case}: every job came out once (A, B, C: {:?} of {expected:?})",
                        measured.outputs
                    ),
                );
                checks.check(
                    measured.peak_running <= WORKERS,
                    format!(
                        "{case}: at most {WORKERS} jobs ran at once ({})",
                        measured.peak_running
                    ),
                );
                if let Some(snapshot) = &run.snapshot {
                    // The crate's counts, read at an output: the jobs that
                    // had started by then, give or take those started at
                    // that instant.
                    let mine = TENANTS.map(|tenant| {
                        run.outs
                            .iter()
                            .filter(|out| out.tenant == tenant && out.started <= snapshot.at)
                            .count() as u64
                    });
                    let close =
                        (0..3).all(|i| snapshot.started[i].abs_diff(mine[i]) <= WORKERS as u64);
                    let what = format!(
                        "{case}: TenantShares' started at {} ({:?}) matches the jobs' own \
                         ({mine:?}) within {WORKERS}",
                        ms(snapshot.at),
                        snapshot.started
                    );
                    checks.check(close, what);
                }
                if *config == Config::Fair {
                    notes.push(format!(
                        "{case}: TenantShares::stats() after the end lists {:?} \
                         (tenant, started, completed)",
                        run.left_listed
                    ));
                }
            }
            // Issue 37's demands of the fair stream, against plain bounded.
            let (_, _, plain) = &runs[0];
            let (_, _, fair) = &runs[2];
            let case = format!("{}, {}, Tenants", scenario.name(), mode.name());
            checks.check(
                fair.backlog_done <= plain.backlog_done + WORK_MAX
                    && fair.all_done <= plain.all_done + WORK_MAX,
                format!(
                    "{case}: work-conserving: the backlog done at {} (plain {}), all at {} \
                     (plain {}), within one job ({})",
                    ms(fair.backlog_done),
                    ms(plain.backlog_done),
                    ms(fair.all_done),
                    ms(plain.all_done),
                    ms(WORK_MAX)
                ),
            );
            checks.check(
                fair.backlogged < 1.0 || fair.over_bound <= 0.0,
                format!(
                    "{case}: starts in the window within the contract's |Si/wi - Sj/wj| <= \
                     1/wi + 1/wj (worst pair {:+.2} over; all backlogged {})",
                    fair.over_bound,
                    percent(fair.backlogged)
                ),
            );
            // Only while all three are backlogged do the weights say what
            // each should get.
            if fair.backlogged >= 0.99 {
                checks.check(
                    fair.jain >= 0.99,
                    format!(
                        "{case}: Jain's index of the weighted shares {:.4} >= 0.99",
                        fair.jain
                    ),
                );
            }
        }
    }
    println!();
    table.print();
    println!();
    for note in notes {
        println!("{note}");
    }
    println!();
    checks.finish();
}
