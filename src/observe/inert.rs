//! The hooks with their feature off: types of size zero (each holding a `()`,
//! so that they are built with `default()` as the real ones are) and
//! functions that do nothing, each `#[inline(always)]`, so a stream built
//! without the feature compiles to what it was before the feature existed.

#[cfg(not(feature = "metrics"))]
pub(crate) use self::metrics::{LimitSeries, Metrics, Samples};
#[cfg(not(feature = "tracing"))]
pub(crate) use self::trace::{Span, limit_changed};

#[cfg(not(feature = "metrics"))]
mod metrics {
    use crate::clock::Clocking;
    use crate::observe::Kind;
    use crate::stats::Stats;

    /// No exporter: never on.
    #[derive(Debug, Default)]
    pub(crate) struct Metrics(());

    impl Metrics {
        #[inline(always)]
        pub(crate) fn is_on(&self) -> bool {
            false
        }

        #[inline(always)]
        pub(crate) fn adopt(&mut self, _: &mut impl Clocking, _: (bool, bool)) {}

        #[inline(always)]
        pub(crate) fn check_recorder(&self, _: &str) {}

        #[inline(always)]
        pub(crate) fn due(&mut self, _: bool) -> bool {
            false
        }

        #[inline(always)]
        pub(crate) fn publish(&mut self, _: &Stats, _: bool, _: &mut impl Clocking) {}
    }

    /// No limits' series: never made, since no exporter hands one out.
    #[derive(Debug)]
    pub(crate) enum LimitSeries {}

    impl LimitSeries {
        #[inline(always)]
        pub(crate) fn show(&self, _: (usize, usize)) {
            match *self {}
        }

        #[inline(always)]
        pub(crate) fn changed(&self, _: (usize, usize), _: (usize, usize)) {
            match *self {}
        }
    }

    /// No samples kept.
    #[derive(Debug, Default)]
    pub(crate) struct Samples(());

    impl Samples {
        #[inline(always)]
        pub(crate) fn tap(&mut self) {}

        #[inline(always)]
        pub(crate) fn record(&mut self, _: Kind, _: usize) {}

        #[inline(always)]
        pub(crate) fn drain(&mut self, _: &mut dyn FnMut(usize, u64, usize)) {}
    }
}

#[cfg(not(feature = "tracing"))]
mod trace {
    use crate::observe::Cause;

    /// No span to carry into the tasks.
    #[derive(Debug)]
    pub(crate) struct Span;

    impl Span {
        #[inline(always)]
        pub(crate) fn current() -> Self {
            Span
        }

        #[inline(always)]
        pub(crate) fn enter(&self) -> Entered {
            Entered
        }
    }

    /// Nothing entered.
    pub(crate) struct Entered;

    #[inline(always)]
    pub(crate) fn limit_changed(_: (usize, usize), _: (usize, usize), _: Cause) {}
}
