//! The deterministic tests, one module per topic, each behaviour in both modes

mod adaptive;
mod api;
mod budgets;
mod close;
mod delivery;
mod diagnostics;
mod drop_panic;
mod executors;
mod fail_fast;
mod limits;
mod progress;
mod time;
mod wakes;
