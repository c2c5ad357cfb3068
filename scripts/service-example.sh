#!/usr/bin/env bash
# make service-example: examples/InventoryService, a Hummingbird 2 service replicating an
# inventory through the relay, as two real instances A and B on loopback ports.
#
#   scripts/service-example.sh      (PGHOST, PGPORT, PGUSER set: make service-example does it)
#
# Checks, in order: the README's copy of the service is the source's; the example builds (once,
# in examples/InventoryService/.build); both instances answer /ready; N increments of SKU x sent
# to A, N of y to B and 2N/5 of z split across both, all at once with curl in parallel, end as
# x=N, y=N, z=2N/5 on both (no update lost); tags and price set on one instance reach the other;
# an SSE client on B saw A's changes; A, sent SIGTERM with an SSE client open, exits within
# 10 s with its queue sent; A started again holds what B holds, including what B wrote while A
# was down; both stop gracefully and leave no process and no port behind.
# SERVICE_EXAMPLE_N (default 500) scales the counts; a quick run: SERVICE_EXAMPLE_N=50.
# SERVICE_EXAMPLE_SANITIZE=thread builds the example under ThreadSanitizer instead (in
# examples/InventoryService/.build-tsan) and fails on any report from either instance.
# Uses bash, coreutils and curl only. Prints "N passed, N failed" last; exits 1 on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package=$root/examples/InventoryService
swift=${SWIFT:-swift}
n=${SERVICE_EXAMPLE_N:-500}
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "SERVICE_EXAMPLE_N must be a positive integer"; exit 2; }
z_each=$((n / 5))   # z: n/5 to each instance, 2n/5 in all
build=(--package-path "$package")
case ${SERVICE_EXAMPLE_SANITIZE:-} in
    "") ;;
    thread)
        build+=(--sanitize=thread --scratch-path "$package/.build-tsan")
        export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ;;
    *) echo "SERVICE_EXAMPLE_SANITIZE must be empty or thread"; exit 2 ;;
esac
export PGSSLMODE=${PGSSLMODE:-disable}
: "${PGHOST:?PGHOST is not set (make service-example sets it)}" "${PGPORT:?PGPORT is not set}"

started=$(date +%s)
passed=0
failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
# A check that failed: recorded, and the run goes on to the checks that do not depend on it.
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# A failure the rest cannot go on from.
die() { echo "FAIL: $*"; failed=$((failed + 1)); exit 1; }

work=$(mktemp -d)
declare -A pid=() port=()
readers=()
cleanup() {
    local status=$?
    for p in "${readers[@]}" "${pid[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${readers[@]}" "${pid[@]}"; do wait "$p" 2>/dev/null || true; done
    if ((status != 0 || failed > 0)); then
        for name in A B A2; do
            [[ -f $work/$name.log ]] || continue
            echo "--- log of instance $name"
            cat "$work/$name.log"
        done
    fi
    rm -rf "$work"
    echo "service example: $(( $(date +%s) - started )) s"
    echo "$passed passed, $failed failed"
    ((status == 0 && failed == 0)) || exit 1
}
trap cleanup EXIT

# --- the README shows the service as it is -------------------------------------------------
main=$package/Sources/InventoryService/main.swift
if diff -u --label "examples/InventoryService main.swift (README: begin .. end)" \
    --label "README.md (In a Hummingbird service)" \
    <(awk '/^\/\/ README: end$/ {exit} on {print} /^\/\/ README: begin$/ {on = 1}' "$main") \
    <(awk '/^## In a Hummingbird service$/ {section = 1} section && on && /^```$/ {exit} on {print}
           section && /^```swift$/ {on = 1}' "$root/README.md") > "$work/readme.diff"; then
    ok "the README's section \"In a Hummingbird service\" is main.swift between its README markers"
else
    cat "$work/readme.diff"
    fail "the README's copy of the service differs from main.swift (diff above)"
fi

# --- build, once ---------------------------------------------------------------------------
echo "== build: swift build ${build[*]#"$root/"} (a build folder of its own)"
build_started=$(date +%s)
if ! "$swift" build "${build[@]}" > "$work/build.log" 2>&1; then
    tail -60 "$work/build.log"
    die "the example did not build"
fi
binary=$("$swift" build "${build[@]}" --show-bin-path)/InventoryService
if grep -E "^$package/Sources/.*warning:" "$work/build.log"; then
    fail "the example builds with warnings (above)"
else
    ok "the example built in $(( $(date +%s) - build_started )) s, with no warning in its sources"
fi

# --- two instances -------------------------------------------------------------------------
# Nothing listens on a free port: a connection to it is refused.
listening() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
    local candidate
    for _ in $(seq 100); do
        candidate=$((20000 + RANDOM % 30000))
        listening "$candidate" || { echo "$candidate"; return 0; }
    done
    return 1
}
listening "$PGPORT" 2>/dev/null || [[ $PGHOST != 127.0.0.1 ]] || die "no PostgreSQL listening on 127.0.0.1:$PGPORT"

# A channel of this run's own: values the state table kept from earlier runs are not read.
channel="inventory_$(date +%s)_$$"
# Signed messages, as in production: both instances share a key made for this run.
signing_key="example:$(head -c 32 /dev/urandom | base64 -w 0)"
port[A]=$(free_port) || die "no free port"
port[B]=$(free_port) || die "no free port"
[[ ${port[A]} != "${port[B]}" ]] || port[B]=$((port[A] + 1))

# start NAME LOG: starts instance NAME (A or B) writing to LOG.
start() {
    PORT=${port[$1]} INSTANCE_ID=$1 RELAY_CHANNEL=$channel SWIFTKVO_RELAY_SIGNING_KEY=$signing_key \
        "$binary" > "$2" 2>&1 &
    pid[$1]=$!
}

# ready NAME: waits up to 60 s for 200 from NAME's /ready.
ready() {
    local code
    for _ in $(seq 600); do
        kill -0 "${pid[$1]}" 2>/dev/null || die "instance $1 exited before it was ready"
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${port[$1]}/ready" || true)
        [[ $code == 200 ]] && return 0
        sleep 0.1
    done
    die "instance $1 was not ready within 60 s (last answer: $code)"
}

url() { echo "http://127.0.0.1:${port[$1]}$2"; }

start A "$work/A.log"
start B "$work/B.log"
ready A
ready B
ok "A (port ${port[A]}) and B (port ${port[B]}) answer 200 on /ready (channel $channel, signed)"

# --- an SSE client on B --------------------------------------------------------------------
curl -sN -D "$work/B.events.headers" "$(url B /events)" > "$work/B.events" 2> /dev/null &
readers+=($!)
for _ in $(seq 100); do grep -q '^event: counts' "$work/B.events" && break; sleep 0.1; done
if grep -qi '^content-type: text/event-stream' "$work/B.events.headers" \
    && grep -q '^event: counts' "$work/B.events"; then
    ok "B's /events is text/event-stream and sent the counts as its first event"
else
    fail "B's /events did not open as an event stream: $(head -c 300 "$work/B.events.headers" "$work/B.events")"
fi

# --- concurrent writes to both ---------------------------------------------------------------
# URL lists: n increments of x to A, n of y to B, n/5 of z to each, interleaved.
for ((i = 0; i < n; i++)); do url A /items/x; done > "$work/x.urls"
for ((i = 0; i < n; i++)); do url B /items/y; done > "$work/y.urls"
for ((i = 0; i < z_each; i++)); do url A /items/z; url B /items/z; done > "$work/z.urls"
# send LIST: POSTs every URL of LIST, 8 curl processes at a time, 10 URLs each (one connection
# per process); fails if any request did not get a 2xx answer. The answers are not kept.
send() { xargs -P 8 -n 10 curl -fsS --fail-early --max-time 30 -X POST < "$1" > /dev/null; }
echo "== writes: $n x to A, $n y to B, $((2 * z_each)) z across both, at once (xargs -P 8 each)"
writes_started=$(date +%s%N)
send "$work/x.urls" & x_pid=$!
send "$work/y.urls" & y_pid=$!
send "$work/z.urls" & z_pid=$!
sent=0
for p in "$x_pid" "$y_pid" "$z_pid"; do wait "$p" || sent=$?; done
if ((sent == 0)); then
    ok "$((2 * n + 2 * z_each)) POSTs answered 2xx in $(( ($(date +%s%N) - writes_started) / 1000000 )) ms"
else
    fail "some POSTs were not answered 2xx (curl's errors above)"
fi

# Both answer the same /items for a whole second: nothing is on its way any more.
items() { curl -fsS --max-time 5 "$(url "$1" /items)"; }
quiet() {
    local a b previous=""
    for _ in $(seq 60); do
        a=$(items A) && b=$(items B) || { sleep 1; continue; }
        if [[ $a == "$b" && $a == "$previous" ]]; then return 0; fi
        previous=$([[ $a == "$b" ]] && echo "$a" || echo "")
        sleep 1
    done
    return 1
}
# count JSON SKU: SKU's count in an /items answer (nothing if it has none).
count() { { grep -oE "\"$2\":[0-9]+" <<< "$1" || true; } | cut -d: -f2; }

if quiet; then
    ok "A and B converged: both answer $(items A)"
else
    fail "A and B did not agree within 60 s: A $(items A || true), B $(items B || true)"
fi
for name in A B; do
    body=$(items "$name" || true)
    x=$(count "$body" x) y=$(count "$body" y) z=$(count "$body" z)
    if [[ $x == "$n" && $y == "$n" && $z == "$((2 * z_each))" ]]; then
        ok "$name holds x=$x y=$y z=$z: no update lost"
    else
        fail "$name holds x=${x:-none} y=${y:-none} z=${z:-none}," \
            "expected x=$n y=$n z=$((2 * z_each)): updates were lost"
    fi
done

# The relay's and the engine's metrics, in Prometheus' text format.
metrics=$(curl -fsS --max-time 5 "$(url A /metrics)" || true)
sent_total=$(grep -oE "^swiftkvo_relay_messages_sent_total\{channel=\"$channel\"\} [0-9]+" <<< "$metrics" \
    | cut -d' ' -f2 || true)
if [[ ${sent_total:-0} -gt 0 ]] && grep -q '^swiftkvo_engine_observations ' <<< "$metrics"; then
    ok "A's /metrics counts $sent_total messages sent and reports the engine's gauges"
else
    fail "A's /metrics lacks the relay's sent counter or the engine's gauges:$(echo; head -c 1000 <<< "$metrics")"
fi

# --- tags and price ------------------------------------------------------------------------
# await_items NAME PATTERN: waits up to 10 s for NAME's /items to match the regular expression.
await_items() {
    for _ in $(seq 100); do [[ $(items "$1" || true) =~ $2 ]] && return 0; sleep 0.1; done
    return 1
}
curl -fsS -o /dev/null -X POST "$(url A /tags/sale)"
curl -fsS -o /dev/null -X POST "$(url A /tags/new)"
await_items B '"tags":\["new","sale"\]' || fail "tags added on A did not reach B: $(items B || true)"
curl -fsS -o /dev/null -X DELETE "$(url B /tags/new)"
curl -fsS -o /dev/null -X PUT "$(url B '/price?value=9.5')"
if await_items A '"tags":\["sale"\]' && await_items B '"tags":\["sale"\]' \
    && await_items A '"price":9.5[,}]' && await_items B '"price":9.5[,}]'; then
    ok "tags added on A, one removed on B, and the price set on B reached both: tags [\"sale\"], price 9.5"
else
    fail "tags or price did not reach both: A $(items A || true), B $(items B || true)"
fi

# --- what B's SSE client saw ---------------------------------------------------------------
# Its counts (B's writes and those of A it applied), the tags A added and the price B set.
sleep 0.5
counts_events=$(grep -c '^event: counts' "$work/B.events" || true)
if ((counts_events > 1)) && grep -A1 '^event: tags' "$work/B.events" | grep -qxF 'data: ["new","sale"]' \
    && grep -A1 '^event: price' "$work/B.events" | grep -qxF 'data: 9.5'; then
    ok "B's SSE client saw $counts_events counts events, the tags A added and the price B set"
else
    fail "B's SSE client saw $counts_events counts events and not the tags or price expected;" \
        "its stream:$(echo; head -c 2000 "$work/B.events")"
fi

# --- SIGTERM with an SSE client open -------------------------------------------------------
curl -sN "$(url A /events)" > "$work/A.events" 2> /dev/null &
a_reader=$!
readers+=("$a_reader")
for _ in $(seq 100); do grep -q '^event: counts' "$work/A.events" && break; sleep 0.1; done
grep -q '^event: counts' "$work/A.events" || fail "A's /events sent nothing before SIGTERM"
echo "== SIGTERM to A, with its SSE client connected"
kill -TERM "${pid[A]}"
signalled=$(date +%s%N)
for _ in $(seq 100); do kill -0 "${pid[A]}" 2>/dev/null || break; sleep 0.1; done
if kill -0 "${pid[A]}" 2>/dev/null; then
    die "A was still running 10 s after SIGTERM"
fi
status=0
wait "${pid[A]}" || status=$?
stopped_in=$(( ($(date +%s%N) - signalled) / 1000000 ))
if ((status == 0)) && grep -qF "stopped: 0 message(s) not sent" "$work/A.log"; then
    ok "A exited 0 within $stopped_in ms of SIGTERM with an SSE client open, its queue sent"
else
    fail "A exited with status $status after SIGTERM ($stopped_in ms); its last line: $(tail -n 1 "$work/A.log")"
fi
for _ in $(seq 50); do kill -0 "$a_reader" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$a_reader" 2>/dev/null; then
    fail "A's SSE client was still connected after A exited"
else
    ok "A's SSE stream ended with A"
fi
listening "${port[A]}" && fail "port ${port[A]} still accepts connections after A exited"

# --- B writes while A is down; A starts again ------------------------------------------------
curl -fsS -o /dev/null -X POST "$(url B '/items/w?by=7')"
curl -fsS -o /dev/null -X POST "$(url B /tags/clearance)"
curl -fsS -o /dev/null -X PUT "$(url B '/price?value=12.25')"
expected=$(items B)
start A "$work/A2.log"
ready A
after=$(items A)
if [[ $after == "$expected" ]]; then
    ok "A, started again, holds what B holds from its first answer: $after"
elif quiet && [[ $(items A) == "$(items B)" ]]; then
    ok "A, started again, converged on what B holds: $(items A)"
else
    fail "A, started again, holds $(items A || true); B holds $(items B || true)"
fi
body=$(items A || true)
if [[ $(count "$body" x) == "$n" && $(count "$body" y) == "$n" && $(count "$body" z) == "$((2 * z_each))" \
    && $(count "$body" w) == 7 ]]; then
    ok "A, started again, holds x=$n y=$n z=$((2 * z_each)) w=7"
else
    fail "A, started again, holds $body: expected x=$n y=$n z=$((2 * z_each)) w=7"
fi
[[ $body =~ \"clearance\" && $body =~ \"price\":12.25 ]] \
    && ok "A, started again, has the tag and price B set while it was down" \
    || fail "A, started again, lacks what B wrote while it was down: $body"

# --- stop both -----------------------------------------------------------------------------
for name in A B; do kill -TERM "${pid[$name]}"; done
for name in A B; do
    status=0
    for _ in $(seq 100); do kill -0 "${pid[$name]}" 2>/dev/null || break; sleep 0.1; done
    kill -0 "${pid[$name]}" 2>/dev/null && die "$name was still running 10 s after SIGTERM"
    wait "${pid[$name]}" || status=$?
    log=$work/$name.log
    [[ $name == A ]] && log=$work/A2.log
    if ((status == 0)) && grep -qF "stopped: 0 message(s) not sent" "$log"; then
        ok "$name stopped on SIGTERM with its queue sent"
    else
        fail "$name exited with status $status; its last line: $(tail -n 1 "$log")"
    fi
done
for p in "${readers[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && fail "an SSE client (pid $p) was still connected after the instances stopped"
    wait "$p" 2>/dev/null || true
done
readers=()
pid=()
leftover=""
for name in A B; do listening "${port[$name]}" && leftover+=" ${port[$name]}"; done
[[ -z $leftover ]] && ok "no instance, SSE client or port left behind" || fail "ports still listening:$leftover"
if [[ -n ${SERVICE_EXAMPLE_SANITIZE:-} ]]; then
    reports=$(grep -l "WARNING: ThreadSanitizer" "$work"/A.log "$work"/A2.log "$work"/B.log 2> /dev/null || true)
    [[ -z $reports ]] && ok "ThreadSanitizer reported nothing in either instance" \
        || fail "ThreadSanitizer reported in: $(basename -a $reports | tr '\n' ' ')"
fi
