#!/usr/bin/env bash
# The broker example (examples/real/src/bin/broker): Redis Streams consumer
# groups, consumers as processes, a crash and a graceful stop. Installs
# redis-server from Debian's packages when it is missing, starts a private one
# on a loopback port (no persistence, a temporary directory), runs the
# example's orchestrator against it and stops the server on the way out. Exits
# non-zero if a check fails; throughput is printed, not checked.
#
#   scripts/broker.sh [jobs] [rounds]    (default 20000 jobs a run, 3 rounds of the scaling runs)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${1:-20000}
rounds=${2:-3}

if ! command -v redis-server >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
fi

dir=$(mktemp -d)
server=
stop_server() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap stop_server EXIT

cargo build --release -q -p real --bin broker

# A free loopback port: a server that cannot bind exits at once.
port=
for _ in 1 2 3 4 5 6 7 8 9 10; do
    candidate=$((20000 + RANDOM % 30000))
    redis-server --port "$candidate" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$dir" --logfile "$dir/redis.log" &
    server=$!
    for _ in $(seq 50); do
        # Ours, not another server that already had the port.
        if redis-cli -p "$candidate" info server 2>/dev/null | grep -q "^process_id:${server}[^0-9]"; then
            port=$candidate
            break 2
        fi
        if ! kill -0 "$server" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
done
if [ -z "$port" ]; then
    echo "broker.sh: could not start redis-server on a loopback port" >&2
    cat "$dir/redis.log" >&2 || true
    exit 1
fi

cargo run --release -q -p real --bin broker -- run --redis "redis://127.0.0.1:$port" --jobs "$jobs" --rounds "$rounds"
