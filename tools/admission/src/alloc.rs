//! A counting global allocator: the bytes live now and the most live at once,
//! across all threads, for the import's memory peak. A binary installs it with
//! `#[global_allocator] static ALLOCATOR: Counting = Counting;`.
//!
//! It counts every allocation of the process (the runtime's, the stream's, the
//! documents'), by the size asked for, so a peak is the heap in use as the
//! program sees it (not the pages the system hands out).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Forwards to [`System`], counting the bytes asked for.
pub struct Counting;

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Set by the first allocation through [`Counting`], so that a binary that
/// forgot to install it fails instead of reporting zeros.
static INSTALLED: AtomicBool = AtomicBool::new(false);

fn allocated(size: usize) {
    let live = LIVE.fetch_add(size as u64, Relaxed) + size as u64;
    PEAK.fetch_max(live, Relaxed);
}

fn freed(size: usize) {
    LIVE.fetch_sub(size as u64, Relaxed);
}

/// Bytes live now.
pub fn live() -> u64 {
    LIVE.load(Relaxed)
}

/// Starts a new peak: from now on [`peak`] reports the most bytes live since
/// this call. Returns the bytes live now.
///
/// # Panics
///
/// If this binary does not use [`Counting`] as its global allocator.
pub fn reset_peak() -> u64 {
    assert!(
        INSTALLED.load(Relaxed),
        "install the allocator: #[global_allocator] static ALLOCATOR: Counting = Counting;"
    );
    let live = LIVE.load(Relaxed);
    PEAK.store(live, Relaxed);
    live
}

/// The most bytes live at once since [`reset_peak`].
pub fn peak() -> u64 {
    PEAK.load(Relaxed)
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the `GlobalAlloc` contract; the counters only read sizes and never
// touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        INSTALLED.store(true, Relaxed);
        // SAFETY: forwarded as received; the caller upholds `alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        INSTALLED.store(true, Relaxed);
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        freed(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `realloc`'s contract.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        if !new_ptr.is_null() {
            // Counted as the old block freed, then the new one allocated: a
            // move to a new block briefly holds both, which this leaves out
            // (the documents measured are allocated at their size and never
            // grow).
            freed(layout.size());
            allocated(new_size);
        }
        new_ptr
    }
}
