//! Contract point 1 at a glance: a thousand ready futures, every output once.

use bounded_buffered::BoundedStreamExt;
use futures::{StreamExt, stream};

#[test]
fn smoke() {
    let out: Vec<u32> = futures::executor::block_on(
        stream::iter(0..1000u32)
            .map(|i| async move { i })
            .bounded(4, 8)
            .collect(),
    );
    assert_eq!(out.len(), 1000);
}
