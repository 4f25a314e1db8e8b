#!/usr/bin/env bash
# Exact instructions per item for one adapter and workload, counted by callgrind:
# drains the workload at two item counts and divides the difference by the extra
# items, so the runtime's start-up and the first growth of every buffer cancel
# out. Instruction counts do not depend on the machine's load, unlike timings.
#
#   scripts/instructions-per-item.sh <workers> <ready|yield_once> <adapter> [adapter ...]
#
# for example scripts/instructions-per-item.sh 16 ready bounded_no_prefetch fb_buffered_unordered
# Adapter names as in tools/compare/src/bin/drain_once.rs, and `spawned`,
# `spawned_timed`, `spawned_max_wait` (tools/compare/src/bin/spawned_once.rs:
# spawned mode on a one-thread executor run by hand), and `metrics_bounded`,
# `metrics_timed`, `metrics_spawned`, `metrics_spawned_timed`
# (tools/compare/src/bin/metrics_once.rs: `.metrics(..)` on, built with the
# feature). Needs valgrind. SMALL and LARGE (default 20000 and 60000) set
# the two item counts; FEATURES=metrics builds the other binaries with the
# library's feature `metrics` on (the cost of the feature when unused).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 3 ]; then
    sed -n '2,17p' "$0"
    exit 2
fi
workers=$1
kind=$2
shift 2

small=${SMALL:-20000}
large=${LARGE:-60000}

cargo build --release --quiet -p compare ${FEATURES:+--features "$FEATURES"} --bin drain_once --bin spawned_once
# Its own build, after the others: the feature it needs must not reach them.
if [[ " $* " == *" metrics_"* ]]; then
    cargo build --release --quiet -p compare --features metrics --bin metrics_once
fi
# Cargo knows where it built: CARGO_TARGET_DIR or build.target-dir may have
# moved the target directory. `cargo metadata` prints one line of JSON.
target_dir=$(cargo metadata --format-version 1 --no-deps |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
for binary in drain_once spawned_once; do
    if [ ! -x "$target_dir/release/$binary" ]; then
        echo "no $binary binary in '$target_dir/release' (the target directory cargo metadata reported)" >&2
        exit 1
    fi
done

count() {
    local output binary=$target_dir/release/drain_once
    # Spawned mode runs on its own one-thread executor (spawned_once.rs).
    if [[ $1 == spawned* ]]; then
        binary=$target_dir/release/spawned_once
    elif [[ $1 == metrics_* ]]; then
        binary=$target_dir/release/metrics_once
    fi
    # On failure (an unknown adapter name, say), show the binary's own message.
    if ! output=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" "$@" 2>&1); then
        printf '%s\n' "$output" >&2
        return 1
    fi
    awk '/Collected :/ { gsub(",", "", $4); print $4 }' <<<"$output"
}

for adapter in "$@"; do
    a=$(count "$adapter" "$workers" "$kind" "$small")
    b=$(count "$adapter" "$workers" "$kind" "$large")
    echo "$adapter w=$workers $kind: $(( (b - a) / (large - small) )) instructions per item"
done
