//! The deterministic tests, one module per topic, each behaviour in both modes

mod adaptive;
mod api;
mod core_budgets;
mod core_close;
mod core_delivery;
mod core_drop_panic;
mod core_fail_fast;
mod core_ordered;
mod core_progress;

mod core_unordered;
mod executors;
mod limits;
mod smoke;
mod spawn_budgets;
mod spawn_cancel;
mod spawn_close;
mod spawn_delivery;
mod spawn_fail_fast;
mod spawn_growth;
mod spawn_progress;
mod spawn_smoke;

mod diagnostics;
mod spawn_contract;
mod time;
mod verify_spawned_destructor;
mod wakes;
