//! The index queue lists each index at most once, in the order it was first
//! pushed since it last left, checked against a plain model under random
//! pushes, pops, growth and clears.

use std::collections::VecDeque;

use super::Rng;
use crate::index_queue::IndexQueue;

#[test]
fn every_index_is_listed_at_most_once_in_first_push_order() {
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let mut len = 1 + rng.below(8);
        let mut queue = IndexQueue::new(len);
        let mut model: VecDeque<usize> = VecDeque::new();
        for step in 0..5_000 {
            match rng.below(20) {
                0..=10 => {
                    let index = rng.below(len);
                    queue.push(index);
                    if !model.contains(&index) {
                        model.push_back(index);
                    }
                }
                11..=17 => assert_eq!(queue.pop(), model.pop_front(), "seed {seed}, step {step}"),
                18 => {
                    len += rng.below(5);
                    queue.grow_to(len);
                }
                _ => {
                    queue.clear();
                    model.clear();
                }
            }
            assert_eq!(queue.len(), model.len(), "seed {seed}, step {step}");
            assert_eq!(queue.is_empty(), model.is_empty());
        }
        // What is left comes out once each, in order.
        let rest: Vec<usize> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(rest, Vec::from(model), "seed {seed}");
    }
}

#[test]
fn a_burst_of_pushes_of_one_index_lists_it_once_and_it_can_return() {
    let mut queue = IndexQueue::new(4);
    for _ in 0..10 {
        queue.push(2);
    }
    queue.push(0);
    queue.push(2);
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.pop(), Some(2));
    queue.push(2); // listed again once it left
    assert_eq!(queue.pop(), Some(0));
    assert_eq!(queue.pop(), Some(2));
    assert_eq!(queue.pop(), None);
    // Growing keeps what is listed and lets the new indices in.
    queue.push(3);
    queue.grow_to(1_000);
    queue.push(999);
    queue.push(3);
    assert_eq!(
        std::iter::from_fn(|| queue.pop()).collect::<Vec<_>>(),
        [3, 999]
    );
}
