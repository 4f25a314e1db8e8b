#!/usr/bin/env bash
# Leak check: runs the drop-and-panic tests (every drop point, a panic in a
# future, the source and a destructor), the misbehaving-neighbour tests (late
# wakes from other threads after the stream is gone) and the randomized schedules
# under valgrind's memcheck, and the spawned mode's drop-and-panic tests (drop at
# every step, a panic in a future, the source or a destructor, on an executor the
# test owns). Fails on any memory error or definitely lost block.
#
# `--test-threads=1`: with libtest's worker threads, std's thread handles show as
# "possibly lost", which is not what this checks.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
fi

# The same debug build as `cargo test`, so after it nothing is rebuilt.
if [ -n "${VALGRIND_TARGET_DIR:-}" ]; then
    export CARGO_TARGET_DIR="$VALGRIND_TARGET_DIR"
fi

# Each pair: a test crate of bounded-buffered-tests, and the modules of it to run.
run() {
    local crate=$1
    shift
    local binary
    binary="$(cargo test --no-run -p bounded-buffered-tests --test "$crate" 2>&1 \
        | sed -n "s/^ *Executable .*(\(.*\/$crate-[0-9a-f]*\))$/\1/p")"
    if [ -z "$binary" ]; then
        echo "could not find the test binary of $crate" >&2
        exit 1
    fi
    echo "=== valgrind $binary $*"
    valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite "$binary" --test-threads=1 "$@"
}

run props verify_drop_panic:: verify_props::
run suite wakes::
