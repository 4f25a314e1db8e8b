//! Adaptive limits against the simulated service of `examples/adaptive`
//! (capacity 32, then 16 halfway; 5,000 successes), on tokio's paused clock.
//!
//! What the job achieves is measured in virtual time and is exact: the
//! example prints it (`cargo run --release --example adaptive`). This group
//! measures what running the job costs in real time, for the adaptive
//! controller and the static limits around the service's capacity: the price
//! of feeding a controller every completion, next to the adapter's own work
//! and the simulation's. Each iteration checks the job's outcome, so a change
//! that broke the controller would not pass for a faster one.

#[path = "../examples/adaptive/service.rs"]
#[allow(dead_code)]
mod service;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use service::{Policy, SUCCESSES};

fn adaptive(c: &mut Criterion) {
    let mut group = c.benchmark_group("adaptive");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    for policy in [Policy::Static(16), Policy::Static(32), Policy::Adaptive] {
        group.bench_function(BenchmarkId::new("job", policy.name()), |b| {
            b.iter(|| {
                let report = service::run(policy);
                assert_eq!(report.successes.len(), SUCCESSES);
                report.elapsed
            })
        });
    }
    group.finish();
}

criterion_group!(benches, adaptive);
criterion_main!(benches);
