//! Contract point 17 at a glance: the spawned mode on tokio and on smol's global
//! executor, every output once, in input order when ordered.

use bounded_buffered::{BoundedStreamExt, SmolGlobal};
use futures::{StreamExt, stream};

#[test]
fn smoke() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let out: Vec<u32> = rt.block_on(
        stream::iter(0..1000u32)
            .map(|i| async move { i })
            .bounded(4, 8)
            .spawn_on(rt.handle().clone())
            .collect(),
    );
    assert_eq!(out.len(), 1000);
    let out: Vec<u32> = smol::block_on(
        stream::iter(0..1000u32)
            .map(|i| async move { i })
            .bounded(4, 8)
            .ordered(5)
            .spawn_on(SmolGlobal)
            .collect(),
    );
    assert_eq!(out, (0..1000).collect::<Vec<_>>());
}
