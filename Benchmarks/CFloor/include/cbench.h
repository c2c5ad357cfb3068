/*
 * cbench.h — the C side of the benchmark harness.
 *
 * Three things live here:
 *   1. The one unit of work every peer's callback does: cbench_tick(), an
 *      increment of a per-thread counter. It is static inline so a Swift
 *      closure calls exactly the same code as a C callback, and per-thread so
 *      the contention workload measures the observation machinery, not a
 *      shared counter bouncing between cores. The harness reads the counter
 *      back with cbench_take_count() and checks it against the number of
 *      callbacks it expected (the checksum that keeps the work alive).
 *   2. The C floor: a subject with an array of {function pointer, context}
 *      observers, notified by a loop written in C.
 *   3. Small measurement helpers (heap bytes in use).
 *
 * Nothing here is thread-safe unless its comment says so.
 */
#ifndef CBENCH_H
#define CBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ the work */

/* This thread's callback count. initial-exec: one %fs-relative increment. */
extern __thread uint64_t cbench_tls_count __attribute__((tls_model("initial-exec")));

/* The work every callback of every peer does. */
static inline void cbench_tick(void) { cbench_tls_count++; }

/* Returns this thread's callback count and resets it to zero. */
uint64_t cbench_take_count(void);

/* A plain C callback that ticks; `context` is ignored. */
void cbench_tick_callback(void *context);

/* --------------------------------------------------------- the C floor */

typedef void (*cbench_fn_t)(void *context);

/* A value with observers: an array of {fn, context}, called in order. */
typedef struct cbench_subject cbench_subject_t;

/* NULL when out of memory. */
cbench_subject_t *cbench_subject_create(void);
void cbench_subject_destroy(cbench_subject_t *subject); /* NULL-safe */

/* Appends an observer; stores its id in *id. Returns 0, or -1 when out of memory. */
int cbench_subject_observe(cbench_subject_t *subject, cbench_fn_t fn, void *context, uint64_t *id);

/* Removes the observer `id` (order of the others kept). Returns 0, or -1 if not found. */
int cbench_subject_unobserve(cbench_subject_t *subject, uint64_t id);

/* Number of observers. */
size_t cbench_subject_count(const cbench_subject_t *subject);

/*
 * Sets the value and calls every observer. May run on several threads at
 * once while nobody observes or unobserves (the value is stored relaxed).
 */
void cbench_subject_set(cbench_subject_t *subject, int64_t value);

/* The floor's loop: `iterations` calls of cbench_subject_set, in C. */
void cbench_subject_set_loop(cbench_subject_t *subject, size_t iterations);

/* Sets subjects[i % count] for i in [start, start + iterations), in C. */
void cbench_subjects_round_robin(cbench_subject_t *const *subjects, size_t count, size_t start,
    size_t iterations);

/* ------------------------------------------------------------- helpers */

/*
 * Heap bytes in use according to glibc's mallinfo2(): uordblks (bytes in
 * in-use chunks, all arenas) + hblkhd (bytes in mmap'ed chunks).
 */
size_t cbench_heap_in_use(void);

#ifdef __cplusplus
}
#endif

#endif /* CBENCH_H */
