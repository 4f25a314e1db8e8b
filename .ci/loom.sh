#!/usr/bin/env bash
# Model-checks the crate's hand-offs with loom: the in-place wake protocol
# (tests/loom/main.rs) and the spawned mode's claim, pull, hand-out, cancellation,
# failure, fail-fast, limits and refill paths (tests/loom_spawned/main.rs): every
# interleaving of the crate's atomics, mutex and wakers with the test's
# threads, up to LOOM_MAX_PREEMPTIONS preemptions per run (default 2). Prints the
# interleavings explored per model and in all, and how long it took.
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
cargo test --release -p bounded-buffered-tests --test loom --test loom_spawned --no-run
started=$SECONDS
# One binary per cargo call: a loom failure aborts its binary.
for binary in loom loom_spawned; do
    cargo test --release -p bounded-buffered-tests --test "$binary" -- --nocapture 2>&1 | tee -a "$log"
done
awk -v secs=$((SECONDS - started)) '/^loom: / { total += $(NF - 1) } END { printf "loom: %d interleavings in all (LOOM_MAX_PREEMPTIONS=%s), models ran in %d s\n", total, ENVIRON["LOOM_MAX_PREEMPTIONS"], secs }' "$log"
