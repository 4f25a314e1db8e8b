//! The property tests: random budgets, schedules, faults and limit changes, with

mod verify_drop_panic;
mod verify_expiry;
mod verify_fail_fast;
mod verify_limits;
mod verify_props;
mod verify_spawned_drop;
mod verify_spawned_expiry;
mod verify_spawned_fail_fast;
mod verify_spawned_fail_fast_drop;
mod verify_spawned_limits;
mod verify_spawned_props;
