#!/usr/bin/env bash
# make relay-example: the README's two-terminal example, with two processes in place of the
# terminals. Each instance of RelayExample reads its commands from a FIFO; the script waits
# until both listen, types `order 7` into the first and `checkout on` into the second, checks
# that each printed what the other did, then ends both inputs (a graceful shutdown) and checks
# that each stopped with nothing left unsent.
#
#   scripts/relay-example.sh PATH_TO_RelayExample      (PGHOST, PGPORT, PGUSER set)
set -euo pipefail
example=$1
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
export PGSSLMODE=${PGSSLMODE:-disable}

for name in first second; do
    mkfifo "$work/$name.in"
    stdbuf -oL "$example" < "$work/$name.in" > "$work/$name.out" 2>&1 &   # line-buffered, read as it comes
    pids+=($!)
    exec {fd}>"$work/$name.in"   # keep the FIFO open: the instance reads until it is closed
    eval "${name}_fd=$fd"
done

# Waits up to 60 s for `text` in an instance's output.
await() {
    local file=$1 text=$2
    for _ in $(seq 600); do
        grep -qF "$text" "$file" && return 0
        sleep 0.1
    done
    echo "FAIL: no \"$text\" from $(basename "$file" .out); its output:"
    cat "$file"
    return 1
}

await "$work/first.out" "listening as "
await "$work/second.out" "listening as "
echo "order 7" >&"$first_fd"
await "$work/second.out" "order 7 placed another instance"
echo "checkout on" >&"$second_fd"
await "$work/first.out" "checkout is on"
exec {first_fd}>&- {second_fd}>&-
for pid in "${pids[@]}"; do wait "$pid"; done
pids=()
for name in first second; do
    echo "--- $name instance"
    cat "$work/$name.out"
    grep -qF "stopped: 0 message(s) not sent" "$work/$name.out" || { echo "FAIL: $name did not report its queue sent"; exit 1; }
done
echo "ok: each instance printed the other's order and flag, and shut down with its queue sent"
