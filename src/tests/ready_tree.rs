//! The ready tree at sizes no test budget reaches: 5,000 slots need three levels
//! of 64-bit words (a root of 63 children: 63 × 64 < 5,000 ≤ 63 × 64²), 300,000
//! need four. Wakes come from several threads; every woken slot is taken exactly
//! once, none is lost, none is invented. The root's control bit (a change of
//! limits) is reported once, names no slot, and survives a rebuild.

use std::sync::Arc;
use std::task::Waker;
use std::thread;

use super::{Rng, count_waker};
use crate::wake::ReadyTree;

const THREADS: usize = 4;

/// A tree with `slots` slots and every slot's waker.
fn tree(slots: usize) -> (ReadyTree, Arc<Vec<Waker>>) {
    let mut tree = ReadyTree::new(slots);
    let wakers = (0..slots).map(|index| tree.waker(index)).collect();
    (tree, Arc::new(wakers))
}

/// How often each slot was taken in one `take`.
fn take_counts(tree: &ReadyTree, slots: usize) -> Vec<usize> {
    let mut taken = vec![0; slots];
    tree.take(|index| taken[index] += 1, || {});
    taken
}

/// Each round picks a random set of slots; every thread wakes the ones in its
/// share and some of the others' (so many slots are woken twice, from two
/// threads), the threads are joined, then one `take` must list exactly the set.
fn wakes_from_threads_then_take(slots: usize) {
    let (tree, wakers) = tree(slots);
    let mut rng = Rng::new(slots as u64);
    for round in 0..3 {
        let woken: Arc<Vec<bool>> = Arc::new((0..slots).map(|_| rng.below(3) != 0).collect());
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (wakers, woken) = (Arc::clone(&wakers), Arc::clone(&woken));
                thread::spawn(move || {
                    for index in (0..slots).filter(|&index| woken[index]) {
                        if index % THREADS == thread || index % 5 == thread {
                            wakers[index].wake_by_ref();
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a waking thread panicked");
        }
        assert_eq!(tree.has_ready(), woken.contains(&true), "round {round}");
        let taken = take_counts(&tree, slots);
        for (index, &count) in taken.iter().enumerate() {
            let expected = usize::from(woken[index]);
            assert_eq!(
                count, expected,
                "{slots} slots, round {round}: slot {index}"
            );
        }
        assert!(!tree.has_ready(), "round {round}: a take left a bit set");
        assert_eq!(take_counts(&tree, slots), vec![0; slots], "round {round}");
    }
}

#[test]
fn three_levels_take_every_slot_woken_from_several_threads_once() {
    wakes_from_threads_then_take(5_000);
}

#[test]
fn four_levels_take_every_slot_woken_from_several_threads_once() {
    wakes_from_threads_then_take(300_000);
}

/// Every slot is woken exactly once, by one of several threads, while the
/// consumer keeps taking: whatever the interleaving, each slot is taken
/// exactly once over all the takes (the last one after the threads joined).
#[test]
fn slots_woken_while_the_consumer_takes_are_taken_once() {
    for slots in [5_000, 300_000] {
        let (tree, wakers) = tree(slots);
        let threads: Vec<_> = (0..THREADS)
            .map(|thread| {
                let wakers = Arc::clone(&wakers);
                thread::spawn(move || {
                    // From the top down, so each thread's wakes spread over
                    // every word while the consumer swaps them.
                    for index in (thread..slots).step_by(THREADS).rev() {
                        wakers[index].wake_by_ref();
                    }
                })
            })
            .collect();
        let mut taken = vec![0usize; slots];
        while !threads.iter().all(|thread| thread.is_finished()) {
            tree.take(|index| taken[index] += 1, || {});
        }
        for thread in threads {
            thread.join().expect("a waking thread panicked");
        }
        tree.take(|index| taken[index] += 1, || {});
        let wrong = taken.iter().position(|&count| count != 1);
        assert_eq!(wrong, None, "{slots} slots: a slot taken other than once");
    }
}

/// A parked consumer is woken once by a burst of wakes from other threads on
/// slots at every level, then finds exactly those slots.
#[test]
fn a_burst_of_wakes_reaches_a_parked_consumer_once() {
    let slots = 300_000;
    let (mut tree, wakers) = tree(slots);
    let (consumer, wakes) = count_waker();
    assert!(
        tree.park(&consumer),
        "nothing was woken: the consumer may sleep"
    );
    let picked = [0, 63, 64, 4_095, 4_096, 262_143, 262_144, 299_999];
    let threads: Vec<_> = picked
        .iter()
        .map(|&index| {
            let wakers = Arc::clone(&wakers);
            thread::spawn(move || wakers[index].wake_by_ref())
        })
        .collect();
    for thread in threads {
        thread.join().expect("a waking thread panicked");
    }
    assert_eq!(wakes.get(), 1, "the consumer is woken once for the burst");
    tree.unpark();
    let taken = take_counts(&tree, slots);
    for (index, &count) in taken.iter().enumerate() {
        assert_eq!(count, usize::from(picked.contains(&index)), "slot {index}");
    }
    // Parking again with nothing woken sleeps; one more wake wakes it again.
    assert!(tree.park(&consumer));
    wakers[123_456].wake_by_ref();
    assert_eq!(wakes.get(), 2);
}

#[test]
fn the_control_bit_is_reported_once_names_no_slot_and_survives_a_rebuild() {
    let (mut tree, wakers) = tree(63);
    let control = tree.control();
    control.signal();
    wakers[62].wake_by_ref();
    let mut controls = 0;
    let mut taken = Vec::new();
    tree.take(|index| taken.push(index), || controls += 1);
    assert_eq!((taken, controls), (vec![62], 1));
    assert!(!tree.has_ready());

    // Signalled before a rebuild, reported after it, on the new root.
    control.signal();
    tree.rebuild(64);
    assert_eq!(tree.capacity(), 63 * 64);
    let fresh: Vec<Waker> = (0..64).map(|index| tree.waker(index)).collect();
    // A wake on an old waker reaches no slot of the new tree.
    wakers[5].wake_by_ref();
    fresh[63].wake_by_ref();
    let mut taken = Vec::new();
    tree.take(|index| taken.push(index), || controls += 1);
    assert_eq!((taken, controls), (vec![63], 2));
}
