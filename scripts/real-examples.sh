#!/usr/bin/env bash
# The examples with real components (examples/real: a hyper 1 server and
# client, a rusqlite import, a Prometheus scrape of `.metrics`, the hyper
# server behind a run deadline and requests' own deadlines, the adaptive limit
# against a hyper server that refuses some requests whatever the load), built and run
# once each at a small size. Each
# exits non-zero if one of its checks fails; their timings are printed, not
# checked (but that the deadline example's stream ends at its deadline). `cargo test` does not build them: hyper and a bundled SQLite are
# heavy, so they live in a workspace member outside `default-members`. The
# broker example of the same member needs a Redis server: `scripts/broker.sh`
# starts one and runs it.
#
#   scripts/real-examples.sh [http-requests] [sqlite-rows] [deadline-requests]
#                                              (default 500, 2000 and 300)
set -euo pipefail
cd "$(dirname "$0")/.."

http_requests=${1:-500}
sqlite_rows=${2:-2000}
# 300 requests: enough for the batch to stall on hung requests with some never
# pulled (it pulls 169); the run lasts its 1 s deadline at any size.
deadline_requests=${3:-300}

cargo build --release -p real --bin http --bin http_adaptive --bin sqlite --bin observe --bin deadline
cargo run --release -q -p real --bin http -- "$http_requests"
cargo run --release -q -p real --bin http_adaptive -- "$http_requests"
cargo run --release -q -p real --bin sqlite -- "$sqlite_rows"
cargo run --release -q -p real --bin observe
cargo run --release -q -p real --bin deadline -- "$deadline_requests"
