/*
 * perfcheck.h — C helpers for PerfCheck (Tests/PerfCheck, `make perf-check`).
 *
 * perfcheck_measure is the one function whose instructions are counted:
 * perf_check.py runs the fixture binary under
 * `valgrind --tool=callgrind --toggle-collect=perfcheck_measure`, so only what
 * the measured loop executes on the calling thread counts (not process start,
 * not fixture set-up, not other threads). It also counts the heap allocations
 * the loop makes on that thread, with SwiftKVOTestSupport's malloc shim.
 *
 * Prefix: perfcheck_. Single-threaded use only: the callback counter is a plain
 * global.
 */
#ifndef PERFCHECK_H
#define PERFCHECK_H

#include <ckvo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The measured loop: runs `iterations` operations of a fixture. */
typedef void (*perfcheck_body_t)(void *context, long iterations);

/*
 * Calls body(context, iterations) once and returns how many heap allocations
 * (malloc, calloc, realloc, memalign & co.) it made on this thread; -1 when
 * this build cannot count them. Never inlined: callgrind toggles on it.
 */
long perfcheck_measure(perfcheck_body_t body, void *context, long iterations);

/* Every fixture's callback does this: one increment of a global counter. */
void perfcheck_tick(void);

/* Returns the callbacks counted since the last call, and starts again from zero. */
long perfcheck_take_count(void);

/* A ckvo_callback_t that calls perfcheck_tick(); ignores `change` and `context`. */
void perfcheck_ckvo_callback(const ckvo_change_t *change, void *context);

#ifdef __cplusplus
}
#endif

#endif /* PERFCHECK_H */
