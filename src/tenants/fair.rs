//! The fair-share rule: which tenant's waiting item a free worker starts,
//! written once here and applied by the engine in both modes (it is the key
//! rule of a [`Tenants`](super::Tenants) stream, so the engine's `pick`
//! asks it, as it asks [`PerKey`](crate::PerKey)).
//!
//! The rule is start-time fair queueing (Goyal, Vin and Cheng, 1996) over
//! starts. Each tenant has a tag; the stream has a virtual time `V`, the tag
//! of the last start. A tenant's next start would happen at
//! `max(tag, V)`; the free worker takes the oldest waiting item of the
//! tenant whose next start is earliest (ties to the oldest item), among the
//! tenants whose cap and the ordered window let an item start. Starting it
//! sets `V` to that value and the tenant's tag to it plus `1 / weight`.
//!
//! Why starts, and not worker time: the rule decides when an item starts,
//! before anyone knows how long it will run, and a stream's items are often
//! of one kind per tenant; counting starts keeps the rule exact, needs no
//! clock, and is what a tenant's weight reads as ("twice the starts").
//!
//! What it guarantees (contract point 36):
//! - **Share.** Over any run of starts during which tenants `i` and `j` both
//!   have an item the caps and the window allow, their starts `Sᵢ`, `Sⱼ`
//!   satisfy `|Sᵢ/wᵢ − Sⱼ/wⱼ| ≤ 1/wᵢ + 1/wⱼ`. The arithmetic is exact: a
//!   tag step is `2³²/w` rounded down, and the bound holds in those units.
//! - **Work-conserving.** A tenant with an allowed item is always picked
//!   when a worker is free: the rule only orders the allowed items.
//! - **No banked credit.** A tenant that had nothing waiting comes back at
//!   `max(tag, V)`: whatever it did not use while idle is gone, so from its
//!   return on it is held to the same bound as the tenants that stayed
//!   busy, and never gets a burst of the starts it missed.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use super::share::{Share, TenantOf};
use crate::admission::KeyRule;
use crate::admission::sealed;

/// One virtual-time unit per start of a tenant of weight 1: a tenant of
/// weight `w` advances `UNIT / w` per start.
pub(crate) const UNIT: u128 = 1 << 32;

/// The fair-share rule of a [`Tenants`](super::Tenants) stream: part of the
/// stream's type; you never build or call it.
pub struct FairShare<K> {
    /// At most this many items of one tenant run at once.
    cap: usize,
    /// The tenants' tags, by slot (a slot's tag is replaced when another
    /// tenant takes the slot).
    tenants: Vec<Option<Tag<K>>>,
    /// The tag of the last start.
    now: u128,
    /// Tenants with an item running.
    running: usize,
    /// A tenant's waiting items fell below its budget, or nothing of it is
    /// left: the source may have an item (or a tenant) to give again.
    unblocked: bool,
}

/// A busy tenant's place in the rule.
struct Tag<K> {
    share: Arc<Share<K>>,
    /// When its next start would be, were it the only tenant.
    next: u128,
}

impl<K> FairShare<K> {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            tenants: Vec::new(),
            now: 0,
            running: 0,
            unblocked: false,
        }
    }

    /// The tag of `share`'s tenant, made at the current virtual time if it
    /// has none (it was idle, or is new).
    fn tag(&mut self, share: &Arc<Share<K>>) -> &mut Tag<K> {
        let slot = share.slot;
        if self.tenants.len() <= slot {
            self.tenants.resize_with(slot + 1, || None);
        }
        let entry = &mut self.tenants[slot];
        if !entry
            .as_ref()
            .is_some_and(|tag| Arc::ptr_eq(&tag.share, share))
        {
            *entry = Some(Tag {
                share: Arc::clone(share),
                next: 0,
            });
        }
        entry.as_mut().expect("made just now")
    }

    /// Once nothing of `share`'s tenant waits or runs, the source may let
    /// it go (and take in another): its tag stays until its slot is reused,
    /// and `max(tag, now)` already keeps it from banking credit.
    fn note_if_idle(&mut self, share: &Share<K>) {
        if share.is_idle() {
            self.unblocked = true;
        }
    }
}

impl<K> fmt::Debug for FairShare<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FairShare")
            .field("cap", &self.cap)
            .field("busy_tenants", &self.tenants.iter().flatten().count())
            .finish_non_exhaustive()
    }
}

impl<K> sealed::Sealed for FairShare<K> {}

impl<K, F> KeyRule<F> for FairShare<K>
where
    K: Send + Sync + 'static,
    F: TenantOf<K>,
{
    type Ticket = usize;
    const KEYED: bool = true;
    const RANKED: bool = true;

    #[inline]
    fn may_start(&self, item: &F) -> bool {
        item.share().running.load(Relaxed) < self.cap
    }

    #[inline]
    fn rank(&self, item: &F) -> u128 {
        let share = item.share();
        match self.tenants.get(share.slot) {
            Some(Some(tag)) if Arc::ptr_eq(&tag.share, share) => tag.next.max(self.now),
            _ => self.now,
        }
    }

    fn queued(&mut self, item: &F) {
        let share = item.share();
        self.tag(share);
        share.queued.fetch_add(1, Relaxed);
    }

    fn unqueued(&mut self, item: &F) {
        let share = item.share();
        if share.is_full(share.queued.fetch_sub(1, Relaxed)) {
            self.unblocked = true;
        }
        self.note_if_idle(share);
    }

    fn started(&mut self, item: &F) -> usize {
        let share = item.share();
        let now = self.now;
        let tag = self.tag(share);
        let start = tag.next.max(now);
        tag.next = start + share.step;
        self.now = start;
        if share.running.fetch_add(1, Relaxed) == 0 {
            self.running += 1;
        }
        share.started.fetch_add(1, Relaxed);
        share.slot
    }

    fn finished(&mut self, slot: usize) {
        // After fail fast every tenant is forgotten (`clear`): a future
        // that was running then counts for nobody.
        let Some(Some(tag)) = self.tenants.get(slot) else {
            return;
        };
        let share = &tag.share;
        share.finished.fetch_add(1, Relaxed);
        let last = share.running.fetch_sub(1, Relaxed) == 1;
        let idle = share.is_idle();
        if last {
            self.running -= 1;
        }
        self.unblocked |= idle;
    }

    fn clear(&mut self) {
        for tag in self.tenants.drain(..).flatten() {
            tag.share.queued.store(0, Relaxed);
            tag.share.running.store(0, Relaxed);
        }
        self.running = 0;
        self.unblocked = true;
    }

    fn keys_running(&self) -> usize {
        self.running
    }

    #[inline]
    fn take_unblocked(&mut self) -> bool {
        std::mem::take(&mut self.unblocked)
    }
}
