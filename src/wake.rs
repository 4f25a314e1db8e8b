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
//! The root word has one bit that names no slot: bit 63, the *control* bit. A
//! [`Control`] handle (held by a `Limits` handle) sets it when the stream's limits
//! change, exactly as a slot's waker sets a leaf bit, so the consumer notices the
//! change on its next look at the root, which it takes on every turn anyway: a
//! stream whose limits never change pays nothing for them. The root has 63
//! children, not 64.
//!
//! The tree is sized for the worker budget it was built for. Raising the workers
//! past it (through `Limits`) rebuilds it one level deeper: new words, a new waker
//! for every slot, and one more poll of every running future so that it registers
//! its new waker (a spurious poll, which every future must tolerate). Wakes on the
//! old wakers still reach the consumer, as spurious wakes. The root is replaced
//! under the consumer's `root` lock, which [`Control::signal`] holds while it sets
//! the control bit, so a signal lands on the new root or is carried over from
//! the old one.
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

use crate::sync::{AtomicBool, AtomicU64, AtomicWaker, Mutex, Ordering::SeqCst};

/// Slots per word of the ready tree.
const FANOUT: usize = 64;

/// The root's bit that carries a change of limits instead of a child.
const CONTROL: u64 = 1 << 63;

/// Children of the root word: all its bits but [`CONTROL`].
const ROOT_FANOUT: usize = FANOUT - 1;

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
    /// The tree's current root, for [`Control::signal`]: the tree may be rebuilt.
    root: Mutex<Arc<Node>>,
}

impl Consumer {
    /// The root word went from empty to set: wake the consumer if it sleeps
    /// (rule 3).
    fn root_was_empty(&self) {
        if self.parked.swap(false, SeqCst) {
            self.waker.wake();
        }
    }
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
        self.consumer.root_was_empty();
    }
}

/// Tells the consumer that its limits changed: sets the root's control bit, as a
/// slot's waker sets its leaf bit. `Clone + Send + Sync`; usable from anywhere.
#[derive(Clone, Debug)]
pub(crate) struct Control(Arc<Consumer>);

impl Control {
    pub(crate) fn signal(&self) {
        // Under the lock, so that a rebuild either sees this bit on the old root
        // or this signal sees the new root.
        let root = self.0.root.lock();
        let was_empty = root.bits.fetch_or(CONTROL, SeqCst) == 0;
        drop(root);
        if was_empty {
            self.0.root_was_empty();
        }
    }
}

/// The consumer's side of the tree: every word, by level, leaves first.
#[derive(Debug)]
pub(crate) struct ReadyTree {
    /// `levels[0]` are the leaves; the last level, once it exists, is the root.
    levels: Vec<Vec<Arc<Node>>>,
    /// The root again, one pointer closer: the consumer reads it on every poll.
    /// It exists from the start, for [`Control`].
    root: Arc<Node>,
    /// Whether this consumer set `parked` and may not have seen it cleared: only
    /// then does it need to touch the shared flag when it starts polling.
    parked: bool,
    /// How many levels the tree has: enough for `capacity` slots.
    depth: usize,
    capacity: usize,
    consumer: Arc<Consumer>,
}

/// The levels a tree needs for `capacity` slots, and how many slots they hold.
fn depth_for(capacity: usize) -> (usize, usize) {
    let mut depth = 1;
    let mut covered = ROOT_FANOUT;
    while covered < capacity {
        depth += 1;
        covered = covered.saturating_mul(FANOUT);
    }
    (depth, covered)
}

impl ReadyTree {
    /// A tree for at most `capacity` slots. Allocates its root word only.
    pub(crate) fn new(capacity: usize) -> Self {
        let (depth, capacity) = depth_for(capacity);
        let root = Node::new(None);
        Self {
            levels: Vec::new(),
            consumer: Arc::new(Consumer {
                parked: AtomicBool::new(false),
                waker: AtomicWaker::new(),
                root: Mutex::new(Arc::clone(&root)),
            }),
            root,
            parked: false,
            depth,
            capacity,
        }
    }

    /// How many slots the tree has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Rebuilds the tree for at least `capacity` slots, with no slot yet: the
    /// caller builds every slot's waker again, in order, and polls every running
    /// future once more (the old wakers wake the consumer, but name no slot).
    /// A control signal on the old root is carried over.
    #[cold]
    pub(crate) fn rebuild(&mut self, capacity: usize) {
        let (depth, capacity) = depth_for(capacity);
        let root = Node::new(None);
        let mut current = self.consumer.root.lock();
        *current = Arc::clone(&root);
        if self.root.bits.swap(0, SeqCst) & CONTROL != 0 {
            root.bits.fetch_or(CONTROL, SeqCst);
        }
        drop(current);
        self.root = root;
        self.levels = Vec::new();
        self.depth = depth;
        self.capacity = capacity;
    }

    /// The handle that signals a change of limits to this consumer.
    pub(crate) fn control(&self) -> Control {
        Control(Arc::clone(&self.consumer))
    }

    /// Builds the waker of slot `index`, which must be the next slot: slots are
    /// created in order, so the words on its path are created here when needed.
    pub(crate) fn waker(&mut self, index: usize) -> Waker {
        debug_assert!(index < self.capacity, "the tree is too small");
        if self.levels.is_empty() {
            self.levels = vec![Vec::new(); self.depth];
            self.levels[self.depth - 1].push(Arc::clone(&self.root));
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

    /// Whether some slot may have been woken, or the limits changed, since the
    /// last [`ReadyTree::take`].
    #[inline]
    pub(crate) fn has_ready(&self) -> bool {
        self.root.bits.load(SeqCst) != 0
    }

    /// Takes every woken slot off the tree, handing their indices to `woken`, and
    /// calls `control` if the limits changed.
    #[inline]
    pub(crate) fn take(&self, mut woken: impl FnMut(usize), control: impl FnOnce()) {
        let mut bits = self.root.bits.swap(0, SeqCst);
        if bits & CONTROL != 0 {
            bits &= !CONTROL;
            control();
        }
        self.take_bits(self.depth - 1, 0, bits, &mut woken);
    }

    fn take_word(&self, level: usize, word: usize, node: &Node, woken: &mut impl FnMut(usize)) {
        self.take_bits(level, word, node.bits.swap(0, SeqCst), woken);
    }

    fn take_bits(&self, level: usize, word: usize, mut bits: u64, woken: &mut impl FnMut(usize)) {
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
        let woken = self.root.bits.fetch_or(0, SeqCst) != 0;
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
