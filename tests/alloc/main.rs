//! Contract point 13, the allocation bound, in both modes: the stream's storage
//! grows to its budgets once and is then reused, so the number of allocations
//! does not grow with the number of items. The only test binary with a global
//! allocator of its own (`counting.rs`), which counts per thread.

mod counting;
mod verify_alloc;

#[global_allocator]
static GLOBAL: counting::CountingAlloc = counting::CountingAlloc;
