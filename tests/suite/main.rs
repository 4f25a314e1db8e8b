//! The deterministic tests, one module per topic, each behaviour in both modes

mod core_adaptive;
mod core_api;
mod core_budgets;
mod core_close;
mod core_delivery;
mod core_executors;
mod core_limits;
mod core_ordered;
mod core_panic_location;
mod core_progress;
mod drop_panic;
mod fail_fast;

mod core_unordered;
mod core_wakes;
mod smoke;
mod spawn_adaptive;
mod spawn_budgets;
mod spawn_close;
mod spawn_delivery;
mod spawn_growth;
mod spawn_limits;
mod spawn_progress;
mod spawn_smoke;

mod time;
mod verify_neighbours;
