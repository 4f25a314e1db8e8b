//! Drains one overhead workload through one adapter, once, and exits: a target
//! for profilers (`perf record`, `valgrind --tool=callgrind`), where the
//! comparison's interleaving and repetitions would only get in the way.
//!
//! ```text
//! cargo run --release -p compare --bin drain_once -- <adapter> <workers> <ready|yield_once> <items>
//! ```
//!
//! `<adapter>` is one of the benches' names (`Family::name` in
//! `benches/common`): `then`, `bounded` (waiting = workers),
//! `bounded_no_prefetch`, `bounded_ordered` (window = waiting = workers),
//! `buffer_unordered`, `buffered`, `fb_buffered_unordered`,
//! `fb_buffered_ordered`, and `bounded` with a per-item opt-in:
//! `bounded_timed`, `bounded_max_wait`, `bounded_adaptive`.
//! `scripts/instructions-per-item.sh` runs it under callgrind at two item
//! counts and prints the exact number of instructions each extra item cost.

// The one exception is the counting global allocator in `benches/common`,
// which this binary does not install.
#![deny(unsafe_code)]

#[allow(unsafe_code)]
#[path = "../../../../benches/common/mod.rs"]
mod common;

use std::process::ExitCode;

use common::{Adapter, Family, JobKind};

// This file is what the harness adds to the workloads, and it stays as close as
// possible to its first version (examples/drain_once.rs): rewriting the lookup
// below as an iterator chain, or collecting the usage line's names into a
// `Vec`, moved LLVM's inlining of the workloads enough to change the
// instructions per item of the peers' adapters by one or two (`buffered` 530
// became 528). After editing it, compare scripts/instructions-per-item.sh
// before and after.

/// The adapter called `name` exactly as the overhead workload runs it at
/// `workers` workers.
fn adapter(name: &str, workers: usize) -> Option<Adapter> {
    let mut all = vec![Adapter::Sequential];
    all.extend(Adapter::overhead_set(workers));
    all.extend(Adapter::opt_in_set(workers));
    all.into_iter()
        .find(|adapter| adapter.family().name() == name)
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
        // Printed piece by piece, not joined: see the top of this file.
        eprint!("usage: drain_once <adapter> <workers> <ready|yield_once> <items>\nadapters:");
        for family in Family::ALL {
            eprint!(" {}", family.name());
        }
        eprintln!();
        return ExitCode::FAILURE;
    };
    let outcome = common::tokio_runtime().block_on(common::run(adapter, common::jobs(items, kind)));
    outcome.check(adapter, items);
    println!("{}: {items} {} items", adapter.label(), kind.name());
    ExitCode::SUCCESS
}
