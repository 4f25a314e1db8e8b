//! The deterministic tests, one module per topic, each behaviour in both modes

mod adaptive;
mod adaptive_verdict;
mod api;
mod budgets;
mod close;
mod deadlines;
mod delivery;
mod diagnostics;
mod drop_panic;
mod executors;
mod fail_fast;
mod keyed;
mod limits;
mod metrics;
mod poll_order;
mod progress;
mod rate;
mod shed;
mod tenants;
mod time;
mod traces;
mod wakes;
mod weighted;
