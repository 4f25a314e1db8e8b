//! How many cases a property test runs: `PROPTEST_CASES` if set, else the
//! test's own default, in a debug build a quarter of it, times
//! `BB_PROPTEST_SCALE` if set (a deeper run of every property, each at its
//! own scale: `BB_PROPTEST_SCALE=10` for ten times the cases).
//!
//! The quarter keeps the plain `cargo test` (a debug build, where a case
//! costs many times what it does optimized) quick; every property still runs
//! on the same strategies, so the same paths and boundaries, only fewer
//! draws of them. `.ci/run` also runs the property tests in release, with
//! every default in full.

use proptest::test_runner::Config;

/// In a debug build, each default is divided by this.
const DEBUG_DIVISOR: u32 = 4;

/// `PROPTEST_CASES`, or `default` (in a debug build, a quarter of it, at
/// least 1).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or_else(|| build_default(default).saturating_mul(scale()))
}

/// `BB_PROPTEST_SCALE`, or 1.
fn scale() -> u32 {
    std::env::var("BB_PROPTEST_SCALE")
        .ok()
        .and_then(|scale| scale.parse().ok())
        .unwrap_or(1)
}

fn build_default(default: u32) -> u32 {
    if cfg!(debug_assertions) {
        (default / DEBUG_DIVISOR).max(1)
    } else {
        default
    }
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

/// A property written once, run in both modes: `prop_both_modes! { fn
/// name(mode, case in strategy) cases(256, 256) { .. } }` makes a module
/// `name` with the proptests `in_place` and `spawned`, each running the body
/// with `mode` set, for [`cases`] of its own default (the first figure in
/// place, the second spawned).
#[macro_export]
macro_rules! prop_both_modes {
    (@one $test:ident, $mode:ident = $value:ident, $cases:expr, ($($arg:pat in $strategy:expr),+) $body:block) => {
        proptest::proptest! {
            #![proptest_config($crate::config($cases))]

            #[test]
            fn $test($($arg in $strategy),+) {
                let $mode = $crate::Mode::$value;
                $body
            }
        }
    };
    ($(
        $(#[$meta:meta])*
        fn $name:ident($mode:ident $(, $arg:pat in $strategy:expr)+ $(,)?)
            cases($in_place:expr, $spawned:expr) $body:block
    )*) => {$(
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::prop_both_modes!(@one in_place, $mode = InPlace, $in_place, ($($arg in $strategy),+) $body);
            $crate::prop_both_modes!(@one spawned, $mode = Spawned, $spawned, ($($arg in $strategy),+) $body);
        }
    )*};
}
