#!/usr/bin/env bash
# The admission measurements (tools/admission): two tenants with and without
# per_key, three tenants with fair shares (Tenants) against select_all with and
# without per_key, a byte-budgeted import against the counting allocator, a firehose
# with shed against back-pressure, a front end that answers "busy", and a
# start quota (rate and burst) against governor's limiter. Each
# runs on tokio's paused clock with seeded generators, so its table is the
# same on every run and every machine, and takes well under a second; each
# exits non-zero if one of its checks fails. `cargo test` does not build them
# (a workspace member outside `default-members`).
#
#   scripts/admission-bench.sh [binary...]    (default: all six)
set -euo pipefail
cd "$(dirname "$0")/.."

binaries=("$@")
if [ ${#binaries[@]} -eq 0 ]; then
    binaries=(tenants fair import firehose frontend rate)
fi

build_args=()
for binary in "${binaries[@]}"; do
    build_args+=(--bin "$binary")
done
cargo build --release -p admission "${build_args[@]}"
for binary in "${binaries[@]}"; do
    echo "== $binary"
    cargo run --release -q -p admission --bin "$binary"
    echo
done
