//! The deterministic tests, one module per topic, each behaviour in both modes

mod budgets;
mod close;
mod core_adaptive;
mod core_api;
mod core_drop_panic;
mod core_executors;
mod core_fail_fast;
mod core_limits;
mod core_panic_location;
mod delivery;
mod progress;

mod core_wakes;
mod spawn_adaptive;
mod spawn_cancel;
mod spawn_fail_fast;
mod spawn_limits;

mod time;
mod verify_neighbours;
mod verify_spawned_destructor;
