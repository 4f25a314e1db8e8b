//! Held-out models: services written apart from the rule, without looking at
//! how the controller does on them, and run only to report on. They are not
//! to be tuned against: a model changed after its results were seen belongs
//! in `outside.rs`.
//!
//! Each stands for a service a user of an HTTP client, a database pool or an
//! RPC fan-out meets, and they differ from the family and from `outside.rs`
//! in their mean service times, capacities, shapes, overflow and changes.

use crate::models::{Change, Dist, Model, Overflow, Rng, Source};

/// An exponential draw with this mean.
fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    -mean * (1.0 - rng.unit()).ln()
}

/// A uniform draw in [low, high).
fn uniform(rng: &mut Rng, low: f64, high: f64) -> f64 {
    low + (high - low) * rng.unit()
}

/// A read behind a cache: a share `miss` of them miss and read from disk
/// (lognormal σ 0.3 with mean `disk`), the others hit in `low` to `high` ms.
fn cached(rng: &mut Rng, miss: f64, disk: f64, (low, high): (f64, f64)) -> f64 {
    if rng.unit() < miss {
        rng.lognormal(disk, 0.3)
    } else {
        uniform(rng, low, high)
    }
}

/// In-memory key-value lookup: 1 ms of fixed cost plus an exponential 2 ms.
fn kv_lookup(rng: &mut Rng) -> f64 {
    1.0 + exponential(rng, 2.0)
}
const KV_LOOKUP_MEAN: f64 = 3.0;

/// Database read behind a cache: 80 % hits of 2-4 ms, 20 % misses that read
/// from disk, about 40 ms.
fn cached_read(rng: &mut Rng) -> f64 {
    cached(rng, 0.2, 40.0, (2.0, 4.0))
}
const CACHED_READ_MEAN: f64 = 0.8 * 3.0 + 0.2 * 40.0;

/// Third-party HTTP API: 20-60 ms, evenly.
fn partner_api(rng: &mut Rng) -> f64 {
    uniform(rng, 20.0, 60.0)
}
const PARTNER_API_MEAN: f64 = 40.0;

/// Object storage GET: Pareto from 12 ms with α 1.8, cut at 600 ms (the
/// client's timeout and retry).
fn object_get(rng: &mut Rng) -> f64 {
    const MIN: f64 = 12.0;
    const ALPHA: f64 = 1.8;
    const CAP: f64 = 600.0;
    (MIN / (1.0 - rng.unit()).powf(1.0 / ALPHA)).min(CAP)
}
/// E[min(X, cap)] = min + min / (α - 1) x (1 - (min / cap)^(α - 1)).
const OBJECT_GET_MEAN: f64 = 26.3;

/// Report rendering: gamma with shape 2 (two exponential stages) and mean
/// 60 ms.
fn render(rng: &mut Rng) -> f64 {
    exponential(rng, 30.0) + exponential(rng, 30.0)
}
const RENDER_MEAN: f64 = 60.0;

/// Cold cache: half the reads miss (about 50 ms), half hit (3-5 ms).
fn cold_cache(rng: &mut Rng) -> f64 {
    cached(rng, 0.5, 50.0, (3.0, 5.0))
}
const COLD_CACHE_MEAN: f64 = 0.5 * 50.0 + 0.5 * 4.0;

/// Warm cache: a tenth of the reads miss.
fn warm_cache(rng: &mut Rng) -> f64 {
    cached(rng, 0.1, 50.0, (3.0, 5.0))
}
const WARM_CACHE_MEAN: f64 = 0.1 * 50.0 + 0.9 * 4.0;

/// Webhook delivery: 30 ms of connection and TLS, then an exponential 50 ms
/// at the receiver.
fn webhook(rng: &mut Rng) -> f64 {
    30.0 + exponential(rng, 50.0)
}
const WEBHOOK_MEAN: f64 = 80.0;
/// Events per second from the queue the webhooks are read from: it needs 12
/// deliveries in flight on average, a quarter of the capacity.
const WEBHOOK_RATE: f64 = 150.0;

/// Legacy backend transaction: normal, mean 15 ms, σ 3 ms, at least 5 ms.
fn legacy(rng: &mut Rng) -> f64 {
    (15.0 + 3.0 * rng.normal()).max(5.0)
}
const LEGACY_MEAN: f64 = 15.0;

/// An in-memory key-value store (Redis-like) behind a 6-connection pool that refuses when busy.
const KV_STORE: Model = Model {
    capacity: 6,
    overflow: Overflow::Refuse,
    ..Model::new(
        "kv store 3 ms, pool 6, refuse",
        Dist::Custom {
            draw: kv_lookup,
            mean: KV_LOOKUP_MEAN,
        },
    )
};

/// A relational database read path with a row cache in front: hits are quick, misses go to disk.
const CACHED_DB: Model = Model {
    capacity: 20,
    ..Model::new(
        "db cache 80 % hit / 20 % miss, 20",
        Dist::Custom {
            draw: cached_read,
            mean: CACHED_READ_MEAN,
        },
    )
};

/// A model inference server with 100 replicas and an unbounded request queue in front.
const INFERENCE: Model = Model {
    capacity: 100,
    overflow: Overflow::Queue,
    ..Model::new(
        "inference 120 ms σ 0.2, 100, queue",
        Dist::LogNormal {
            mean: 120.0,
            sigma: 0.2,
        },
    )
};

/// A third-party HTTP API allowing 5 concurrent requests per key, answering 429 beyond.
const PARTNER_API: Model = Model {
    capacity: 5,
    overflow: Overflow::Refuse,
    ..Model::new(
        "partner API uniform 20-60 ms, 5, refuse",
        Dist::Custom {
            draw: partner_api,
            mean: PARTNER_API_MEAN,
        },
    )
};

/// Object storage GETs (S3-like): a Pareto tail, cut by the client's timeout.
const OBJECT_STORE: Model = Model {
    capacity: 48,
    ..Model::new(
        "object GET Pareto α 1.8 cap 600 ms, 48",
        Dist::Custom {
            draw: object_get,
            mean: OBJECT_GET_MEAN,
        },
    )
};

/// A report-rendering service that autoscales from 30 to 90 workers.
const SCALE_OUT: Model = Model {
    capacity: 30,
    change: Change::Capacity(90),
    ..Model::new(
        "render gamma 60 ms, scale-out 30 → 90",
        Dist::Custom {
            draw: render,
            mean: RENDER_MEAN,
        },
    )
};

/// An RPC fan-out to a worker fleet with no queue that loses half its nodes (a zone going down).
/// (From the default start at 4, doubling once per run time and stopping at
/// the capacity, these 5,000 calls take at best 1 / 0.888 of the ideal time,
/// and 1 / 0.867 from a start at 2: its goodput target is out of reach of such
/// a controller; the guide's adaptive page says so. The oracle, `--oracle`,
/// meets it on 393 of 400 runs on seeds 601 to 800, worst 0.886: with run
/// times that vary this much, one more with each success grows faster than
/// a doubling a mean run time.)
const ZONE_LOSS: Model = Model {
    capacity: 200,
    overflow: Overflow::Refuse,
    change: Change::Capacity(100),
    ..Model::new(
        "fleet 100 ms σ 0.8, zone loss 200 → 100, refuse",
        Dist::LogNormal {
            mean: 100.0,
            sigma: 0.8,
        },
    )
};

/// A read replica restarted with a cold cache that then warms up: the service time falls.
const CACHE_WARM_UP: Model = Model {
    capacity: 16,
    change: Change::Service(Dist::Custom {
        draw: warm_cache,
        mean: WARM_CACHE_MEAN,
    }),
    ..Model::new(
        "cache warm-up 27 → 8.6 ms, 16",
        Dist::Custom {
            draw: cold_cache,
            mean: COLD_CACHE_MEAN,
        },
    )
};

/// A webhook dispatcher fed by a message-queue consumer slower than the receivers.
const WEBHOOKS: Model = Model {
    capacity: 48,
    source: Source::Poisson(WEBHOOK_RATE),
    ..Model::new(
        "webhooks 80 ms, slow source (150/s), 48",
        Dist::Custom {
            draw: webhook,
            mean: WEBHOOK_MEAN,
        },
    )
};

/// A legacy mainframe gateway that runs two transactions at a time and queues the rest.
const LEGACY_GATEWAY: Model = Model {
    capacity: 2,
    overflow: Overflow::Queue,
    ..Model::new(
        "legacy normal 15 ms, 2, queue",
        Dist::Custom {
            draw: legacy,
            mean: LEGACY_MEAN,
        },
    )
};

/// The held-out models.
pub fn models() -> Vec<Model> {
    vec![
        KV_STORE,
        CACHED_DB,
        INFERENCE,
        PARTNER_API,
        OBJECT_STORE,
        SCALE_OUT,
        ZONE_LOSS,
        CACHE_WARM_UP,
        WEBHOOKS,
        LEGACY_GATEWAY,
    ]
}
