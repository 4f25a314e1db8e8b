//! Stress: 2 x 10^4 items per test (10^6 in CI, `BB_STRESS_ITEMS`), futures completed
//! on other OS threads or run as tokio tasks, in both modes; a watchdog turns a
//! lost wakeup (a hang) into a failure.

mod verify_stress;
