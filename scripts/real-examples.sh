#!/usr/bin/env bash
# The examples with real components (examples/real: a hyper 1 server and
# client, a rusqlite import, a Prometheus scrape of `.metrics`), built and run
# once each at a small size. Each
# exits non-zero if one of its checks fails; their timings are printed, not
# checked. `cargo test` does not build them: hyper and a bundled SQLite are
# heavy, so they live in a workspace member outside `default-members`. The
# broker example of the same member needs a Redis server: `scripts/broker.sh`
# starts one and runs it.
#
#   scripts/real-examples.sh [http-requests] [sqlite-rows]    (default 500 and 2000)
set -euo pipefail
cd "$(dirname "$0")/.."

http_requests=${1:-500}
sqlite_rows=${2:-2000}

cargo build --release -p real --bin http --bin sqlite --bin observe
cargo run --release -q -p real --bin http -- "$http_requests"
cargo run --release -q -p real --bin sqlite -- "$sqlite_rows"
cargo run --release -q -p real --bin observe
