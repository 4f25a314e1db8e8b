//! Simulated I/O: 65,536 futures each sleeping 100 µs, 256 at a time (the setup
//! futures-buffered publishes), on tokio's current-thread runtime and on smol.
//! The timers dominate: the adapters should be level here, none slower.
//! (No sequential floor: one at a time it would take over a minute per run.)

#[path = "common/mod.rs"]
mod common;

use common::{Adapter, IO_FUTURES, IO_WORKERS};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn simulated_io(c: &mut Criterion) {
    let adapters = Adapter::overhead_set(IO_WORKERS);
    let parameter = format!("w={IO_WORKERS}");

    let runtime = common::tokio_runtime();
    let mut group = c.benchmark_group("simulated_io/tokio_current_thread");
    group.throughput(Throughput::Elements(IO_FUTURES));
    for adapter in adapters {
        let run_once = || {
            let source = common::tokio_sleeps(IO_FUTURES, common::io_delay);
            runtime
                .block_on(common::run(adapter, source))
                .check(adapter, IO_FUTURES)
        };
        common::size_from_one_run(&mut group, run_once);
        group.bench_function(BenchmarkId::new(adapter.family().name(), &parameter), |b| {
            b.iter(run_once)
        });
    }
    group.finish();

    let mut group = c.benchmark_group("simulated_io/smol");
    group.throughput(Throughput::Elements(IO_FUTURES));
    for adapter in adapters {
        let run_once = || {
            let source = common::smol_sleeps(IO_FUTURES, common::io_delay);
            smol::block_on(common::run(adapter, source)).check(adapter, IO_FUTURES)
        };
        common::size_from_one_run(&mut group, run_once);
        group.bench_function(BenchmarkId::new(adapter.family().name(), &parameter), |b| {
            b.iter(run_once)
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::criterion_config();
    targets = simulated_io
}
criterion_main!(benches);
