#!/usr/bin/env bash
# make relay-example: the README's two-terminal example, with two processes in place of the
# terminals. Each instance of RelayExample reads its commands from a FIFO; the script waits
# until both listen, types `order 7` into the first and `checkout on` into the second, checks
# that each printed what the other did, starts a third and a fourth that must start with the flag
# as last set (from the state table),
# then ends every input (a graceful shutdown) and checks that each stopped with nothing unsent.
# First it checks that the README still shows the example whole.
#
#   scripts/relay-example.sh PATH_TO_RelayExample      (PGHOST, PGPORT, PGUSER set)
set -euo pipefail
example=$1
root=$(cd "$(dirname "$0")/.." && pwd)
# The README's copy: from its first comment line to the end of the code block.
if ! diff <(awk '/^\/\/ Instances of one service/ {on = 1} on && /^```/ {exit} on' "$root/README.md") \
    <(grep -vE '^#(if Relay|endif)$' "$root/examples/RelayExample/main.swift") > /dev/null; then
    echo "FAIL: the README's relay example is not examples/RelayExample/main.swift"
    exit 1
fi
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
# A third instance, started after the flag was set, holds it from the start (the state table);
# then the flag off again and a fourth that starts with it off, so that whatever the table
# held before this run, one of the two reads a value this run wrote.
"$example" < /dev/null > "$work/third.out" 2>&1
grep -qE "^listening as .*; checkout is on$" "$work/third.out" || { echo "FAIL: a later instance did not start with checkout on:"; cat "$work/third.out"; exit 1; }
echo "checkout off" >&"$second_fd"
await "$work/first.out" "checkout is off"
"$example" < /dev/null > "$work/fourth.out" 2>&1
grep -qE "^listening as .*; checkout is off$" "$work/fourth.out" || { echo "FAIL: a later instance did not start with checkout off:"; cat "$work/fourth.out"; exit 1; }
exec {first_fd}>&- {second_fd}>&-
for pid in "${pids[@]}"; do wait "$pid"; done
pids=()
for name in first second third fourth; do
    echo "--- $name instance"
    cat "$work/$name.out"
    grep -qF "stopped: 0 message(s) not sent" "$work/$name.out" || { echo "FAIL: $name did not report its queue sent"; exit 1; }
done
echo "ok: each instance printed the other's order and flag, later ones started with the flag as last set (on, then off), and each shut down with its queue sent"
