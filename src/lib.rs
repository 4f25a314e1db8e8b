#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    rust_2018_idioms,
    unreachable_pub
)]
#![doc(test(attr(deny(warnings))))]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adaptive;
mod admission;
mod aimd;
mod bounded;
mod budget;
mod clock;
mod engine;
mod expiry;
mod ext;
mod failure;
pub mod guide;
mod held;
mod index_queue;
mod items;
mod limits;
mod observe;
mod shed;
mod slots;
mod spawn;
mod stats;
mod sync;
mod tenants;
#[cfg(all(test, not(loom)))]
mod tests;
mod time;
mod timings;
mod wake;

pub use crate::adaptive::{Classify, Controller, Sample, Verdict};
pub use crate::admission::{
    KeyOf, KeyRule, Keyed, PerKey, Unkeyed, Unweighted, WeightOf, WeightRule, Weighted, Weights,
};
pub use crate::aimd::{Aimd, Decision, History};
pub use crate::bounded::{BoundedBuffered, TryBoundedBuffered};
pub use crate::clock::{Clocked, Clocking, Untimed};
pub use crate::expiry::{Expired, Unstarted};
pub use crate::ext::BoundedStreamExt;
pub use crate::items::{FutureStream, SendFutureStream, SendTryFutureStream, TryFutureStream};
pub use crate::limits::Limits;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub use crate::observe::HISTOGRAM_BUCKETS;
pub use crate::shed::{NotRun, Rejected, Shed};
#[cfg(feature = "smol")]
pub use crate::spawn::SmolGlobal;
pub use crate::spawn::{Spawnable, Spawned, Spawner};
pub use crate::stats::Stats;
pub use crate::tenants::{
    ErrorOf, FairShare, Fallible, FixedTenants, TenantOf, TenantShares, TenantStats, Tenanted,
    Tenants,
};
#[cfg(feature = "tokio")]
pub use crate::time::TokioTimer;
pub use crate::time::{Cancelled, Deadline, DeadlineOf, DeadlinePassed, Late, Timer, Unfinished};
#[cfg(feature = "smol")]
pub use crate::time::{SmolSleep, SmolTimer};
pub use crate::timings::{Histogram, Timings};
