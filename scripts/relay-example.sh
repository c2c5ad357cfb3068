#!/usr/bin/env bash
# make relay-example: the README's two-terminal example, with two processes in place of the
# terminals. Each instance of RelayExample reads its commands from a FIFO; the script waits
# until both listen, types `order 7` into the first and `checkout on` into the second, checks
# that each printed what the other did, starts a third that must hold the flag from the start,
# then ends every input (a graceful shutdown) and checks that each stopped with nothing unsent.
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

# Waits up to 60 s for the line `text` in an instance's output.
await() {
    local file=$1 text=$2
    for _ in $(seq 600); do
        grep -qxF "$text" "$file" && return 0
        sleep 0.1
    done
    echo "FAIL: no \"$text\" from $(basename "$file" .out); its output:"
    cat "$file"
    return 1
}

listening() { for _ in $(seq 600); do grep -q "^listening as " "$1" && return 0; sleep 0.1; done; cat "$1"; return 1; }
listening "$work/first.out"
listening "$work/second.out"
# The flag off first: the table keeps it across runs, so each run starts from a known value.
echo "checkout off" >&"$first_fd"
await "$work/second.out" "checkout is off"
echo "order 7" >&"$first_fd"
await "$work/second.out" "order 7 placed another instance"
echo "checkout on" >&"$second_fd"
await "$work/first.out" "checkout is on"
# A third instance, started after the flag was set, holds it from the start (the state table).
"$example" < /dev/null > "$work/third.out" 2>&1
grep -qE "^listening as .*; checkout is on$" "$work/third.out" || { echo "FAIL: a later instance did not start with checkout on:"; cat "$work/third.out"; exit 1; }
exec {first_fd}>&- {second_fd}>&-
for pid in "${pids[@]}"; do wait "$pid"; done
pids=()
for name in first second third; do
    echo "--- $name instance"
    cat "$work/$name.out"
    grep -qF "stopped: 0 message(s) not sent" "$work/$name.out" || { echo "FAIL: $name did not report its queue sent"; exit 1; }
done
echo "ok: each instance printed the other's order and flag, a later one started with the flag on, and each shut down with its queue sent"
