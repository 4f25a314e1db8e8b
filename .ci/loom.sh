#!/usr/bin/env bash
# Model-checks the wake protocol with loom (tests/loom.rs): every interleaving of
# the crate's wake atomics with the test's threads, up to LOOM_MAX_PREEMPTIONS
# preemptions per run (default 2). Prints the interleavings explored per model.
#
# `--cfg loom` changes every crate in the graph, so this builds into its own
# target directory (first build about 2 minutes on 2 cores; the models then run
# in seconds).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
export RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --release --test loom -- --nocapture 2>&1 | tee "$log"
awk '/^loom: / { total += $(NF - 1) } END { printf "loom: %d interleavings in all (LOOM_MAX_PREEMPTIONS=%s)\n", total, ENVIRON["LOOM_MAX_PREEMPTIONS"] }' "$log"
