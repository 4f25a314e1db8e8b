//! Per-tenant sources with fair shares: [`Tenants`], the rule of
//! [`fair`], and the item type [`Tenanted`].
//!
//! A [`Tenants`] stream is the source; its `bounded(workers, waiting)`
//! runs it with one `workers` budget for all the tenants and a `waiting`
//! budget for each. The split of the work is the crate's usual one:
//!
//! - the source (this file) is mechanism: it holds each tenant's stream,
//!   polls only the tenants whose waiting items are below their budget
//!   (round robin, so one busy tenant never keeps another's ready items
//!   out), takes in new tenants while fewer than `max_tenants` are held,
//!   and lets a tenant go once its stream ended and nothing of it waits or
//!   runs;
//! - the decision of which waiting item starts is the fair-share rule
//!   ([`fair`]), the stream's key rule: the engine asks it in both modes,
//!   as it asks [`PerKey`](crate::PerKey).

pub(crate) mod fair;
mod share;
mod source;
mod watch;

pub use self::fair::FairShare;
#[cfg(test)]
pub(crate) use self::share::Share;
pub use self::share::{TenantOf, Tenanted};
pub use self::source::{ErrorOf, Fallible, FixedTenants, Tenants};
pub use self::watch::{TenantShares, TenantStats};
