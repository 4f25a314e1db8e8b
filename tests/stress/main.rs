//! Stress: 10^5 items per test (10^6 in CI, `BB_STRESS_ITEMS`), futures completed

mod verify_spawned_stress;
mod verify_stress;
