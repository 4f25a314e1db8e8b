//! The property tests: random budgets, schedules, faults and limit changes,
//! each property written once and run in both modes by one random stepper
//! (`support::Run`), with the budgets checked after every step.
//!
//! A debug build runs a quarter of each property's cases, `cargo test
//! --release` all of them (`support::cases`); `.ci/run` runs both.

mod admission;
mod verify_drop_panic;
mod verify_expiry;
mod verify_fail_fast;
mod verify_limits;
mod verify_props;
mod verify_tenants;
mod verify_time;
