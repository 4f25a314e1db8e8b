//! Unit tests of the internals the integration tests cannot reach at their
//! edges: a ready tree deeper than any worker budget the tests use, the ordered
//! ring wrapping at every size, the index queue's exactly-once listing, and
//! the AIMD controller on scripted samples.
//!
//! Not built under `--cfg loom`: the ready tree then uses loom's atomics, which
//! work only inside `loom::model`.

mod aimd;
mod fair;
mod held;
mod index_queue;
mod ready_tree;

/// splitmix64: a small deterministic generator, so every schedule here replays
/// from its seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound > 0`).
    fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }
}

/// A waker that counts its wakes (the library's unit tests have no
/// dev-dependency beyond what the doctests use).
fn count_waker() -> (std::task::Waker, std::sync::Arc<WakeCount>) {
    let count = std::sync::Arc::new(WakeCount::default());
    (std::task::Waker::from(std::sync::Arc::clone(&count)), count)
}

#[derive(Default)]
struct WakeCount(std::sync::atomic::AtomicUsize);

impl WakeCount {
    fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::task::Wake for WakeCount {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}
