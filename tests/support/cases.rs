//! How many cases a property test runs: `PROPTEST_CASES` if set, else the
//! test's own default.

use proptest::test_runner::Config;

/// `PROPTEST_CASES`, or `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}

/// [`cases`] cases, and a failing case is reported with its inputs only:
/// nothing is written to the source tree.
pub fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    }
}
