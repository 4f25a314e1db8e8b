//! The guide: what the front page leaves out, one page a topic. Each page is
//! a module with nothing in it but its documentation, included from a
//! markdown file beside this one (`src/guide/*.md`, which reads on GitHub
//! too); its Rust examples are doctests, run by `cargo test --doc`.
//!
//! | page | what it covers |
//! | --- | --- |
//! | [`budgets`] | the three budgets against `buffer_unordered` and `buffered`, choosing them, memory, executors |
//! | [`spawned`] | in place or spawned: the in-place blind spot, what `spawn_on` keeps and costs, against a task per item |
//! | [`failure`] | error as an output, fail fast, drain: `bounded`, `try_bounded`, `close` |
//! | [`time`] | `max_wait`, `timed` and `clock`; planning a queue from measured throughput; a deadline for the run and for each item, a start rate |
//! | [`adaptive`] | `Limits` handles and the `Aimd` controller, against a simulated service and a family of models |
//! | [`tenants`] | per-key limits, weight budgets and shedding, measured |
//! | [`metrics`] | `.metrics(name)` through the `metrics` facade, spans in spawned tasks, and what they cost |
//! | [`broker`] | scaling out behind a broker: Redis Streams consumer groups, at-least-once, a crash and a graceful stop |
//! | [`performance`] | overhead, instructions, slow heads, slow sources and memory against `futures` and futures-buffered |
//! | [`verification`] | how each claim is checked, a cold build's times, and working on the crate |
//!
//! The crate's contract, the numbered list the pages cite as "contract point
//! N", is in the [crate documentation](crate#what-the-adapter-guarantees).

pub mod budgets {
    #![doc = include_str!("budgets.md")]
}

pub mod spawned {
    #![doc = include_str!("spawned.md")]
}

pub mod failure {
    #![doc = include_str!("failure.md")]
}

pub mod time {
    #![doc = include_str!("time.md")]
}

pub mod adaptive {
    #![doc = include_str!("adaptive.md")]
}

pub mod tenants {
    #![doc = include_str!("tenants.md")]
}

pub mod metrics {
    #![cfg_attr(feature = "metrics", doc = include_str!("metrics.md"))]
    #![cfg_attr(
        not(feature = "metrics"),
        doc = "Exporting metrics and traces: this page's examples need the feature \
               `metrics`; build the documentation with it (`cargo doc --features metrics`), \
               as docs.rs does, or read `src/guide/metrics.md`."
    )]
}

pub mod broker {
    #![doc = include_str!("broker.md")]
}

pub mod performance {
    #![doc = include_str!("performance.md")]
}

pub mod verification {
    #![doc = include_str!("verification.md")]
}
