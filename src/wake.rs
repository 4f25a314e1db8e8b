//! How a wake travels from a worker slot to the task that polls the stream.
//!
//! Woken slots are recorded in a tree of 64-bit words: bit `b` of a leaf says
//! "slot `64 * leaf + b` was woken", and bit `b` of an inner word says "child `b`
//! has a bit set". Every slot owns one waker, built when the slot is created and
//! lent to each future that runs there, so starting a future allocates nothing.
//!
//! A wake sets the slot's bit with one `fetch_or`. Only a wake that finds its
//! word empty goes on to the parent word, so a burst of wakes in one word costs
//! one atomic operation each, and the bit itself is the "already queued" flag:
//! a slot is never queued twice. Only a wake that reaches an empty root may have
//! to wake the consumer, and only if the consumer parked; a future that wakes
//! itself while the consumer is inside `poll_next` costs no trip through the
//! executor. The tree is grown one leaf at a time as slots are created, so its
//! size follows the slots in use, not the worker budget.
//!
//! A future that wakes its own waker while this thread polls it (a yield, or a
//! budget running out) needs no atomics at all: the consumer marks the slot it is
//! polling in a thread-local, the wake finds its own mark there and flips it, and
//! the consumer puts the slot at the back of its queue of woken slots when the
//! poll returns.
//!
//! Why no wake is lost:
//! 1. The consumer takes a word with a `swap(0)` before it polls the slots it
//!    names, so a wake that lands during a poll sets the bit again, and the swap
//!    reads every wake before it, so the poll sees what those wakes published.
//! 2. A set bit in a child word always has its parent bit set, or the consumer
//!    has taken the parent bit and will swap the child next, or the waker that
//!    set the child's first bit has not reached the parent yet (and will).
//! 3. Before sleeping the consumer registers its waker, sets `parked`, then reads
//!    the root; a waker sets the root bit, then clears `parked`. All four are
//!    read-modify-writes, so each reads the latest value of its word, and
//!    whichever of the two root operations comes second sees the other thread's
//!    `parked` write: the consumer does not sleep, or the waker wakes it. Only the
//!    waker that turns `parked` off wakes it. (Plain `SeqCst` loads and stores
//!    would do as well in the C++ model, but loom checks `SeqCst` accesses as
//!    `AcqRel` and would report a lost wake that cannot happen.)

use std::cell::Cell;
use std::sync::Arc;
use std::task::{Wake, Waker};

use crate::sync::{AtomicBool, AtomicU64, AtomicWaker, Ordering::SeqCst};

/// Slots per word of the ready tree.
const FANOUT: usize = 64;

/// What [`POLLING`] holds once the future being polled woke itself. No waker
/// lives at this address: allocations are aligned.
const SELF_WOKEN: usize = 1;

#[cfg(not(loom))]
std::thread_local! {
    /// The slot whose future this thread is polling, as its [`mark`];
    /// [`SELF_WOKEN`] once that future woke its own waker; 0 otherwise.
    static POLLING: Cell<usize> = const { Cell::new(0) };
}

#[cfg(loom)]
loom::thread_local! {
    static POLLING: Cell<usize> = Cell::new(0);
}

/// The mark [`PollGuard`] leaves for the slot whose waker is `waker`: the address
/// of its [`SlotWaker`], which is the data pointer of a waker built from an `Arc`.
/// (Were that ever not so, a future waking itself would match no mark and its
/// wake would go through the tree: slower, still correct. A debug assertion in
/// [`ReadyTree::waker`] checks it.) Reading it off the waker keeps it out of the
/// slot, which the consumer touches on every poll.
#[inline]
fn mark(waker: &Waker) -> usize {
    waker.data() as usize
}

/// Marks this thread as polling the future of one slot, until dropped (even by
/// a panic, so a later waker at the same address cannot match a stale mark).
/// Nested polls (a future polling another stream of this crate) restore the
/// outer mark on the way out.
pub(crate) struct PollGuard {
    outer: usize,
}

impl PollGuard {
    /// `waker` is the waker of the slot about to be polled, built by
    /// [`ReadyTree::waker`].
    #[inline]
    pub(crate) fn enter(waker: &Waker) -> Self {
        Self {
            outer: POLLING.with(|polling| polling.replace(mark(waker))),
        }
    }

    /// Whether the future woke its own waker during this poll.
    #[inline]
    pub(crate) fn self_woken(&self) -> bool {
        POLLING.with(|polling| polling.get() == SELF_WOKEN)
    }
}

impl Drop for PollGuard {
    #[inline]
    fn drop(&mut self) {
        POLLING.with(|polling| polling.set(self.outer));
    }
}

/// State shared between the consumer and every slot's waker.
#[derive(Debug)]
struct Consumer {
    /// The consumer is about to sleep, or sleeps: the next waker must wake it.
    parked: AtomicBool,
    waker: AtomicWaker,
}

/// One word of the ready tree.
#[derive(Debug)]
struct Node {
    bits: AtomicU64,
    /// The parent word and this node's bit in it; `None` for the root.
    parent: Option<(Arc<Node>, u32)>,
}

impl Node {
    fn new(parent: Option<(Arc<Node>, u32)>) -> Arc<Self> {
        Arc::new(Self {
            bits: AtomicU64::new(0),
            parent,
        })
    }
}

/// The waker of one worker slot.
#[derive(Debug)]
struct SlotWaker {
    leaf: Arc<Node>,
    bit: u32,
    consumer: Arc<Consumer>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let slot = Arc::as_ptr(self) as usize;
        if POLLING.with(|polling| polling.get() == slot && polling.replace(SELF_WOKEN) == slot) {
            return;
        }
        let mut node = &self.leaf;
        let mut bit = self.bit;
        loop {
            // A word that already had a bit set is already on its way to the
            // consumer, through whoever set that bit first (rule 2).
            if node.bits.fetch_or(1 << bit, SeqCst) != 0 {
                return;
            }
            match &node.parent {
                Some((parent, parent_bit)) => (node, bit) = (parent, *parent_bit),
                None => break,
            }
        }
        // The root was empty: the consumer may be asleep (rule 3).
        let consumer = &self.consumer;
        if consumer.parked.swap(false, SeqCst) {
            consumer.waker.wake();
        }
    }
}

/// The consumer's side of the tree: every word, by level, leaves first.
#[derive(Debug)]
pub(crate) struct ReadyTree {
    /// `levels[0]` are the leaves; the last level, once it exists, is the root.
    levels: Vec<Vec<Arc<Node>>>,
    /// The root again, one pointer closer: the consumer reads it on every poll.
    root: Option<Arc<Node>>,
    /// Whether this consumer set `parked` and may not have seen it cleared: only
    /// then does it need to touch the shared flag when it starts polling.
    parked: bool,
    /// How many levels the tree has once its first slot exists: enough for
    /// `capacity` slots.
    depth: usize,
    consumer: Arc<Consumer>,
}

impl ReadyTree {
    /// A tree for at most `capacity` slots. Allocates no word yet.
    pub(crate) fn new(capacity: usize) -> Self {
        let mut depth = 1;
        let mut covered = FANOUT;
        while covered < capacity {
            depth += 1;
            covered = covered.saturating_mul(FANOUT);
        }
        Self {
            levels: Vec::new(),
            root: None,
            parked: false,
            depth,
            consumer: Arc::new(Consumer {
                parked: AtomicBool::new(false),
                waker: AtomicWaker::new(),
            }),
        }
    }

    /// Builds the waker of slot `index`, which must be the next slot: slots are
    /// created in order, so the words on its path are created here when needed.
    pub(crate) fn waker(&mut self, index: usize) -> Waker {
        if self.levels.is_empty() {
            let root = Node::new(None);
            self.levels = vec![Vec::new(); self.depth];
            self.levels[self.depth - 1].push(Arc::clone(&root));
            self.root = Some(root);
        }
        // Walk up from the leaf until a level already has the word needed.
        let mut missing = 0;
        let mut word = index / FANOUT;
        while self.levels[missing].len() <= word {
            debug_assert_eq!(
                self.levels[missing].len(),
                word,
                "slots are created in order"
            );
            missing += 1;
            word /= FANOUT;
        }
        // Create the missing words top-down, each under its existing parent.
        for level in (0..missing).rev() {
            let word = index / FANOUT.pow(level as u32 + 1);
            let parent = Arc::clone(&self.levels[level + 1][word / FANOUT]);
            let bit = (word % FANOUT) as u32;
            self.levels[level].push(Node::new(Some((parent, bit))));
        }
        let waker = Arc::new(SlotWaker {
            leaf: Arc::clone(&self.levels[0][index / FANOUT]),
            bit: (index % FANOUT) as u32,
            consumer: Arc::clone(&self.consumer),
        });
        let slot = Arc::as_ptr(&waker) as usize;
        let waker = Waker::from(waker);
        debug_assert_eq!(
            mark(&waker),
            slot,
            "a waker built from an `Arc` no longer carries its address: self-wakes would take the slow path"
        );
        waker
    }

    /// Whether some slot may have been woken since the last [`ReadyTree::take`].
    #[inline]
    pub(crate) fn has_ready(&self) -> bool {
        self.root
            .as_ref()
            .is_some_and(|root| root.bits.load(SeqCst) != 0)
    }

    /// Takes every woken slot off the tree, handing their indices to `woken`.
    #[inline]
    pub(crate) fn take(&self, mut woken: impl FnMut(usize)) {
        if let Some(root) = &self.root {
            self.take_word(self.depth - 1, 0, root, &mut woken);
        }
    }

    fn take_word(&self, level: usize, word: usize, node: &Node, woken: &mut impl FnMut(usize)) {
        let mut bits = node.bits.swap(0, SeqCst);
        while bits != 0 {
            let child = word * FANOUT + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if level == 0 {
                woken(child);
            } else {
                self.take_word(level - 1, child, &self.levels[level - 1][child], woken);
            }
        }
    }

    /// The consumer starts a `poll_next`: wakes that arrive now need not reach the
    /// executor, since the consumer looks at the tree before it sleeps.
    #[inline]
    pub(crate) fn unpark(&mut self) {
        if self.parked {
            self.parked = false;
            self.consumer.parked.swap(false, SeqCst);
        }
    }

    /// Wakes the consumer's task if it registered a waker (outside the protocol
    /// above: for a change the consumer must see on its next poll, such as a
    /// `close`, made while it may be asleep).
    pub(crate) fn wake_consumer(&self) {
        self.consumer.waker.wake();
    }

    /// The consumer wants to sleep: registers `waker`, then returns `true` if no
    /// slot was woken meanwhile (sleep: the next wake reaches `waker`), or `false`
    /// if one was (poll it instead of sleeping).
    pub(crate) fn park(&mut self, waker: &Waker) -> bool {
        self.consumer.waker.register(waker);
        self.consumer.parked.swap(true, SeqCst);
        // A read-modify-write, so it reads the latest bits (rule 3).
        let woken = self
            .root
            .as_ref()
            .is_some_and(|root| root.bits.fetch_or(0, SeqCst) != 0);
        if woken {
            self.consumer.parked.swap(false, SeqCst);
            false
        } else {
            self.parked = true;
            true
        }
    }
}

impl Drop for ReadyTree {
    /// Wakers can outlive the stream (a future may have handed its waker to a
    /// timer or another thread); they must not keep the consumer's task alive.
    fn drop(&mut self) {
        drop(self.consumer.waker.take());
    }
}
