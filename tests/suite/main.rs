//! The deterministic tests, one module per topic, each behaviour in both modes

mod adaptive;
mod api;
mod budgets;
mod close;
mod core_drop_panic;
mod core_fail_fast;
mod delivery;
mod diagnostics;
mod executors;
mod limits;
mod progress;
mod spawn_cancel;
mod spawn_contract;
mod spawn_fail_fast;
mod time;
mod verify_spawned_destructor;
mod wakes;
