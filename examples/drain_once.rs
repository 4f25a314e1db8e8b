//! Drains one overhead workload through one adapter, once, and exits: a target
//! for profilers (`perf record`, `valgrind --tool=callgrind`), where the
//! comparison's interleaving and repetitions would only get in the way.
//!
//! ```text
//! cargo run --release --example drain_once -- <adapter> <workers> <ready|yield_once> <items>
//! ```
//!
//! `<adapter>` is one of the benches' names: `then`, `bounded` (waiting = workers),
//! `bounded_no_prefetch`, `bounded_ordered` (window = waiting = workers),
//! `buffer_unordered`, `buffered`, `fb_buffered_unordered`, `fb_buffered_ordered`.
//! `scripts/instructions-per-item.sh` runs it under callgrind at two item counts
//! and prints the exact number of instructions each extra item cost.

#[path = "../benches/common/mod.rs"]
mod common;

use std::process::ExitCode;

use common::{Adapter, JobKind};

fn adapter(name: &str, workers: usize) -> Option<Adapter> {
    let mut all = vec![Adapter::Sequential];
    all.extend(Adapter::overhead_set(workers));
    all.into_iter().find(|adapter| adapter.family() == name)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [name, workers, kind, items] => workers.parse().ok().and_then(|workers| {
            let kind = JobKind::ALL.into_iter().find(|k| k.name() == kind)?;
            Some((adapter(name, workers)?, kind, items.parse::<u64>().ok()?))
        }),
        _ => None,
    };
    let Some((adapter, kind, items)) = parsed else {
        eprintln!(
            "usage: drain_once <adapter> <workers> <ready|yield_once> <items>\n\
             adapters: then bounded bounded_no_prefetch bounded_ordered \
             buffer_unordered buffered fb_buffered_unordered fb_buffered_ordered"
        );
        return ExitCode::FAILURE;
    };
    let outcome = common::tokio_runtime().block_on(common::run(adapter, common::jobs(items, kind)));
    outcome.check(adapter, items);
    println!("{}: {items} {} items", adapter.label(), kind.name());
    ExitCode::SUCCESS
}
