#!/usr/bin/env python3
"""perf_check.py — instructions and heap allocations per operation, against a baseline.

Runs every fixture of the PerfCheck binary (Tests/PerfCheck) under
`valgrind --tool=callgrind --toggle-collect=perfcheck_measure`, once with N
operations and once with 2N, and takes (count(2N) - count(N)) / N: what one
operation costs, with the fixture's fixed costs cancelled out. Callgrind counts
the same instructions for the same binary and inputs on every run, so the check
can be strict: it fails when a fixture's instructions per operation rise more
than --threshold percent over the baseline, or when its allocations per
operation rise (see ALLOCATION_SLACK). It reports improvements too.

Some counts depend on the heap addresses a fixture gets (the engine hashes
them), so every count is the mean over LAYOUTS runs whose heap is shifted by a
padding block (PerfCheck's LAYOUT argument): otherwise an unrelated allocation
elsewhere could move a fixture across the threshold.

    perf_check.py --binary .build-perf/release/PerfCheck --baseline Tests/PerfCheck/baseline.tsv
    perf_check.py ... --update       # measure and rewrite the baseline (make perf-baseline)

The baseline is a TSV file with a comment header saying where and how it was made.
"""

import argparse
import concurrent.futures
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

LAYOUTS = 4

# Allocations per operation may rise by this much before the check fails, but only for a
# fixture whose baseline already allocates: a fixture at zero fails on any allocation.
# Churn takes observation records from a pool that the engine's background reclaimer refills
# on its own thread, so when a batch of 64 records comes back depends on that thread's
# scheduling, not on the code: one batch late in one of the four layouts moves the mean by
# 64 / 1000 / 4 = 0.016 per operation. A real regression (one more allocation per operation,
# or one per few operations) moves it by 0.1 to 1.
ALLOCATION_SLACK = 0.05

UPDATE_HINT = (
    "If the change is deliberate, update the baseline and commit it with a message saying why:\n"
    "    make perf-baseline && git add Tests/PerfCheck/baseline.tsv"
)


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def analysable_copy(binary, folder):
    """A copy of the binary without debug information.

    valgrind 3.19 (Debian 12) rejects the DWARF 5 that the Swift 6 toolchain emits
    ("Possibly corrupted debuginfo file") and gives up; the symbol table, which is
    all --toggle-collect needs, survives --strip-debug. The code is the same bytes.
    """
    copy = os.path.join(folder, "PerfCheck")
    run(["strip", "--strip-debug", "-o", copy, binary])
    return copy


def measure(binary, fixture, iterations, layout, folder):
    """(instructions, allocations) of one run of `fixture` with `iterations` operations.

    The binary runs as ./PerfCheck from its folder with a fixed environment: the
    counts must not depend on where the checkout or the temporary folder is. (They
    do otherwise: argv and the environment are copied to the heap, which moves the
    addresses the engine hashes, and so its probe lengths.)
    """
    out = os.path.join(folder, f"{fixture}.{iterations}.{layout}.callgrind")
    result = subprocess.run(
        [shutil.which("valgrind"), "--tool=callgrind", "--toggle-collect=perfcheck_measure",
         f"--callgrind-out-file={out}", "./" + os.path.basename(binary), fixture, str(iterations),
         str(layout)],
        cwd=os.path.dirname(binary), env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"perf-check: {fixture} × {iterations} failed (exit {result.returncode}):\n"
                 f"{result.stdout}{result.stderr}")
    with open(out) as f:
        summary = re.search(r"^summary:\s+(\d+)", f.read(), re.MULTILINE)
    allocations = re.search(r"allocations=(-?\d+)", result.stdout)
    if not summary or not allocations:
        sys.exit(f"perf-check: {fixture}: no instruction summary or allocation count:\n{result.stdout}")
    if int(allocations.group(1)) < 0:
        sys.exit("perf-check: this build cannot count allocations (a sanitizer build?)")
    return int(summary.group(1)), int(allocations.group(1))


def measure_all(binary, iterations):
    """{fixture: (instructions/op, allocations/op, summary)} in the binary's order."""
    listing = run([binary, "--list"]).stdout
    fixtures = [line.split("\t", 1) for line in listing.splitlines() if line]
    runs = [(name, n, layout) for name, _ in fixtures for layout in range(LAYOUTS)
            for n in (iterations, 2 * iterations)]
    with tempfile.TemporaryDirectory(prefix="perf-check.") as folder:
        copy = analysable_copy(binary, folder)
        # Two at a time: each valgrind run is one thread, and the counts do not depend on timing.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            counts = dict(zip(runs, pool.map(lambda r: measure(copy, *r, folder), runs)))
    results = {}
    for name, summary in fixtures:
        per_layout = [[(counts[(name, 2 * iterations, layout)][i] - counts[(name, iterations, layout)][i])
                       / iterations for layout in range(LAYOUTS)] for i in (0, 1)]
        results[name] = (sum(per_layout[0]) / LAYOUTS, sum(per_layout[1]) / LAYOUTS, summary)
        spread = f" (layouts {min(per_layout[0]):.1f}–{max(per_layout[0]):.1f})" \
            if min(per_layout[0]) != max(per_layout[0]) else ""
        print(f"  {name}: {results[name][0]:.1f} instructions{spread}, {results[name][1]:.3f} allocations",
              file=sys.stderr)
    return results


def read_baseline(path):
    """{fixture: (instructions/op, allocations/op)}; comment lines start with '#'."""
    baseline = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            baseline[fields[0]] = (float(fields[1]), float(fields[2]))
    return baseline


def describe_source():
    """The commit the working tree is at, and whether it has uncommitted changes."""
    try:
        commit = run(["git", "rev-parse", "--short=12", "HEAD"]).stdout.strip()
        dirty = run(["git", "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        return commit + (" plus uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def write_baseline(path, results, iterations):
    valgrind = run(["valgrind", "--version"]).stdout.strip()
    swift = run(["swift", "--version"]).stdout.splitlines()[0].strip()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    source = describe_source()  # before opening: truncating the baseline would count as a change
    with open(path, "w") as f:
        f.write(
            "# PerfCheck baseline: instructions and heap allocations per operation (make perf-check).\n"
            f"# Made by `make perf-baseline` at commit {source}, {date}.\n"
            f"# {swift}; {valgrind}, callgrind, {os.uname().machine}.\n"
            f"# Each value is (count at {2 * iterations} operations - count at {iterations}) / {iterations},\n"
            f"# counted inside perfcheck_measure on the measuring thread, mean of {LAYOUTS} heap layouts\n"
            "# (Tests/PerfCheck/README.md).\n"
            "# fixture\tinstructions/op\tallocations/op\toperation\n")
        for name, (instructions, allocations, summary) in results.items():
            f.write(f"{name}\t{instructions:.1f}\t{allocations:.3f}\t{summary}\n")


def compare(results, baseline, threshold):
    """Prints the table; returns the list of failures."""
    failures, notes = [], []
    print(f"{'fixture':<26} {'instr/op':>10} {'baseline':>10} {'change':>8}   {'allocs/op':>9} {'baseline':>9}")
    for name, (instructions, allocations, _) in results.items():
        if name not in baseline:
            print(f"{name:<26} {instructions:>10.1f} {'—':>10} {'':>8}   {allocations:>9.3f} {'—':>9}  NEW")
            failures.append(f"{name}: not in the baseline")
            continue
        base_instructions, base_allocations = baseline[name]
        change = (instructions - base_instructions) / base_instructions * 100 if base_instructions else 0.0
        verdict = ""
        if change > threshold:
            verdict = "REGRESSION"
            failures.append(f"{name}: {instructions:.1f} instructions per operation, "
                            f"{change:+.1f}% over the baseline's {base_instructions:.1f} (limit +{threshold:g}%)")
        elif change < -threshold:
            verdict = "improved"
            notes.append(f"{name}: {change:+.1f}% instructions per operation")
        allowed = base_allocations + ALLOCATION_SLACK if base_allocations > 0 else 0.0
        if round(allocations, 3) > round(allowed, 3):
            verdict = "REGRESSION"
            failures.append(f"{name}: {allocations:.3f} allocations per operation, "
                            f"up from {base_allocations:.3f} (limit {allowed:.3f})")
        elif round(allocations, 3) < round(base_allocations - ALLOCATION_SLACK, 3):
            verdict = verdict or "improved"
            notes.append(f"{name}: allocations per operation down from {base_allocations:.3f} to {allocations:.3f}")
        print(f"{name:<26} {instructions:>10.1f} {base_instructions:>10.1f} {change:>+7.1f}%   "
              f"{allocations:>9.3f} {base_allocations:>9.3f}  {verdict}".rstrip())
    for name in baseline:
        if name not in results:
            failures.append(f"{name}: in the baseline but no longer a fixture")
    if notes:
        print("\nImprovements (the baseline still holds the old numbers; `make perf-baseline` locks them in):")
        for note in notes:
            print(f"  {note}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the release-built PerfCheck executable")
    parser.add_argument("--baseline", required=True, help="the baseline TSV file")
    parser.add_argument("--iterations", type=int, default=1000, help="N: each fixture runs N and 2N operations")
    parser.add_argument("--threshold", type=float, default=3.0,
                        help="percent rise in instructions per operation that fails the check")
    parser.add_argument("--update", action="store_true", help="measure and rewrite the baseline")
    args = parser.parse_args()
    for tool in ("valgrind", "strip"):
        if shutil.which(tool) is None:
            sys.exit(f"perf-check: {tool} not found (make perf-deps installs it)")

    print(f"perf-check: counting {args.binary} under callgrind, "
          f"{args.iterations} and {2 * args.iterations} operations per fixture", file=sys.stderr)
    results = measure_all(args.binary, args.iterations)

    if args.update:
        write_baseline(args.baseline, results, args.iterations)
        print(f"perf-check: wrote {args.baseline}:")
        with open(args.baseline) as f:
            print(f.read(), end="")
        return 0

    if not os.path.exists(args.baseline):
        sys.exit(f"perf-check: no baseline at {args.baseline}; create one with `make perf-baseline`")
    failures = compare(results, read_baseline(args.baseline), args.threshold)
    if failures:
        print("\nperf-check FAILED:")
        for failure in failures:
            print(f"  {failure}")
        print("\n" + UPDATE_HINT)
        return 1
    print(f"\nperf-check passed: no fixture above +{args.threshold:g}% instructions "
          "or with more allocations per operation than the baseline allows.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
