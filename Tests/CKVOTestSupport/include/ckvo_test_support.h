/*
 * ckvo_test_support.h — helpers for testing the CKVOCore C API from Swift.
 *
 * Everything here exists because it is awkward or impossible in Swift:
 * C11 atomics shared between raw pthreads, a callback that records into a
 * thread-safe log, per-context release counting, fork(), pthread_exit() from
 * inside a callback, the values of preprocessor macros Swift cannot import,
 * loops of millions of calls (a debug Swift loop would dominate their cost)
 * and the resident set size and heap in use.
 * Prefix: ckvots_ ("ckvo test support"). One concept per .c file; the section
 * names below are the file names.
 *
 * Unless a comment says otherwise, every function may be called from any
 * thread, and every object is owned by the caller who created it and must
 * outlive every hub that may still call back into it (destroy or flush the
 * hub first).
 */
#ifndef CKVO_TEST_SUPPORT_H
#define CKVO_TEST_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ckvo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ macros.c */

/*
 * Macro values Swift cannot import (casts, stringification, X-macros), as
 * the C compiler sees them in the header the tests were built against.
 */
/* CKVO_OPTIONS_ALL (Swift imports CKVO_OPTION_NEW & co. but not their |). */
extern const ckvo_options_t ckvots_options_all;

unsigned int ckvots_header_version_hex(void);
const char *ckvots_header_version_string(void);

/* Number of entries in CKVO_STATUS_MAP. */
size_t ckvots_status_count(void);
/* Entry `i` of CKVO_STATUS_MAP: its value, "CKVO_"-prefixed name and message. */
bool ckvots_status_at(size_t i, int *value, const char **name, const char **message);

/* True when built with ThreadSanitizer or AddressSanitizer. */
bool ckvots_sanitizer_active(void);

/* ----------------------------------------------------------- counter.c */

/* A sequentially consistent atomic counter, e.g. a global event sequence. */
typedef struct ckvots_counter ckvots_counter_t;

ckvots_counter_t *ckvots_counter_create(void);
void ckvots_counter_destroy(ckvots_counter_t *counter);
/* Adds `delta` and returns the new value (so the first next() returns 1). */
uint64_t ckvots_counter_add(ckvots_counter_t *counter, uint64_t delta);
uint64_t ckvots_counter_next(ckvots_counter_t *counter);
uint64_t ckvots_counter_load(const ckvots_counter_t *counter);
void ckvots_counter_store(ckvots_counter_t *counter, uint64_t value);

/* ---------------------------------------------------------- recorder.c */

/* A thread-safe, append-only log of delivered changes. */
typedef struct ckvots_recorder ckvots_recorder_t;

/* One delivered change, as a callback saw it. */
typedef struct ckvots_event {
	uint64_t probe_id;     /* which probe (observation) was called */
	uint64_t thread;       /* ckvots_thread_id() of the calling thread */
	const void *object;
	const void *old_value;
	const void *new_value;
	size_t index_count;
	ckvo_key_t key;
	ckvo_kind_t kind;
	bool is_prior;
	bool is_initial;
	bool indexes_present;  /* change->indexes was not NULL */
} ckvots_event_t;

ckvots_recorder_t *ckvots_recorder_create(void);
void ckvots_recorder_destroy(ckvots_recorder_t *recorder);
/* Appends a copy of `change` (and up to 64 of its indexes). */
void ckvots_recorder_append(ckvots_recorder_t *recorder, uint64_t probe_id,
    const ckvo_change_t *change);
size_t ckvots_recorder_count(ckvots_recorder_t *recorder);
/* Copies event `i` into `*event`; false if `i` is out of range. */
bool ckvots_recorder_event(ckvots_recorder_t *recorder, size_t i, ckvots_event_t *event);
/* Copies up to `capacity` recorded indexes of event `i`; returns how many were recorded. */
size_t ckvots_recorder_indexes(ckvots_recorder_t *recorder, size_t i, size_t *out,
    size_t capacity);
void ckvots_recorder_clear(ckvots_recorder_t *recorder);

/* An identifier of the calling thread (pthread_self as an integer). */
uint64_t ckvots_thread_id(void);

/* ------------------------------------------------------------- probe.c */

/*
 * A probe is an observation context: pass ckvots_probe_callback as the
 * callback, the probe as the context and ckvots_probe_release as the release.
 * It counts calls and releases atomically, appends each call to its recorder
 * (if any) and to the calling thread's trace (if one is active), then runs its
 * hooks. The test owns the probe; release only counts, so "released exactly
 * once" can be checked afterwards.
 */
typedef struct ckvots_probe ckvots_probe_t;
typedef void (*ckvots_change_hook_t)(const ckvo_change_t *change, void *user);
typedef void (*ckvots_release_hook_t)(void *user);

ckvots_probe_t *ckvots_probe_create(ckvots_recorder_t *recorder, uint64_t id);
void ckvots_probe_destroy(ckvots_probe_t *probe);
uint64_t ckvots_probe_id(const ckvots_probe_t *probe);
/* Callback invocations so far. */
uint64_t ckvots_probe_calls(const ckvots_probe_t *probe);
/* Release invocations so far (must end at exactly 1 per successful observe). */
uint64_t ckvots_probe_releases(const ckvots_probe_t *probe);
/* Callback invocations that began after the probe had been released. */
uint64_t ckvots_probe_calls_after_release(const ckvots_probe_t *probe);
/* Hooks run after counting/recording; either may be NULL. Set before observing. */
void ckvots_probe_set_hooks(ckvots_probe_t *probe, ckvots_change_hook_t on_change,
    ckvots_release_hook_t on_release, void *user);

void ckvots_probe_callback(const ckvo_change_t *change, void *context);
void ckvots_probe_release(void *context);

/* ------------------------------------------------------------- trace.c */

/*
 * A per-thread trace of which probes were called: between begin and end,
 * every probe callback on this thread appends its id to `buffer`.
 * end returns the number of ids noted (which may exceed `capacity`: only the
 * first `capacity` were stored).
 */
void ckvots_trace_begin(uint64_t *buffer, size_t capacity);
size_t ckvots_trace_end(void);

/* ------------------------------------------------------------- tally.c */

/*
 * Counters for many observations at once (scale tests): slot `i` is a context
 * whose calls and releases are counted by ckvots_tally_callback and
 * ckvots_tally_release.
 */
typedef struct ckvots_tally ckvots_tally_t;

ckvots_tally_t *ckvots_tally_create(size_t slots);
void ckvots_tally_destroy(ckvots_tally_t *tally);
void *ckvots_tally_slot(ckvots_tally_t *tally, size_t i);
uint32_t ckvots_tally_calls(const ckvots_tally_t *tally, size_t i);
uint32_t ckvots_tally_releases(const ckvots_tally_t *tally, size_t i);
/* Number of slots whose call (release) count equals `value`. */
size_t ckvots_tally_calls_equal(const ckvots_tally_t *tally, uint32_t value);
size_t ckvots_tally_releases_equal(const ckvots_tally_t *tally, uint32_t value);
void ckvots_tally_callback(const ckvo_change_t *change, void *context);
void ckvots_tally_release(void *context);

/*
 * Registers slot i for i in [0, count) as an observation of (object, key)
 * with no options, storing tokens in `tokens`. Returns the number of CKVO_OK
 * results; stops at the first failure and stores it in `*first_error`.
 */
size_t ckvots_tally_observe_all(ckvots_tally_t *tally, ckvo_hub_t *hub, const void *object,
    ckvo_key_t key, size_t count, ckvo_token_t *tokens, ckvo_status_t *first_error);
/* Unobserves tokens[order[i]] for i in [0, count) (order NULL: in order); counts CKVO_OK. */
size_t ckvots_unobserve_all(ckvo_hub_t *hub, const ckvo_token_t *tokens, const size_t *order,
    size_t count);

/* ----------------------------------------------------------- barrier.c */

/* Releases `count` threads together. */
typedef struct ckvots_barrier ckvots_barrier_t;

ckvots_barrier_t *ckvots_barrier_create(unsigned count);
void ckvots_barrier_destroy(ckvots_barrier_t *barrier);
void ckvots_barrier_wait(ckvots_barrier_t *barrier);

/* ----------------------------------------------------------- threads.c */

typedef void (*ckvots_thread_body_t)(unsigned index, void *arg);

/*
 * Starts `count` pthreads, releases them together through a barrier, runs
 * body(index, arg) on each and joins them all. Returns 0, or ENOMEM (then no
 * body ran). Aborts the process if a thread cannot be created.
 */
int ckvots_run_threads(unsigned count, ckvots_thread_body_t body, void *arg);

/*
 * Runs body(0, arg) on a new thread and waits at most `seconds` for it.
 * Returns 0 when it finished, ETIMEDOUT when it did not (the thread is then
 * left running, detached: the caller must keep `arg` alive forever).
 */
int ckvots_run_with_timeout(ckvots_thread_body_t body, void *arg, unsigned seconds);

/* ---------------------------------------------------------- sentinel.c */

/*
 * Detects a callback entered after ckvo_unobserve_sync returned. The callback
 * checks the "sync returned" flag on entry, counts itself inside while it
 * spins briefly (to widen the race window), then leaves.
 */
typedef struct ckvots_sentinel ckvots_sentinel_t;

ckvots_sentinel_t *ckvots_sentinel_create(unsigned spin);
void ckvots_sentinel_destroy(ckvots_sentinel_t *sentinel);
void ckvots_sentinel_callback(const ckvo_change_t *change, void *context);
void ckvots_sentinel_release(void *context);
/* Call right after ckvo_unobserve_sync returned CKVO_OK: sets the flag and
 * returns how many callbacks are still inside (must be 0). */
unsigned ckvots_sentinel_mark_sync_returned(ckvots_sentinel_t *sentinel);
uint64_t ckvots_sentinel_calls(const ckvots_sentinel_t *sentinel);
/* Callbacks entered after mark_sync_returned. */
uint64_t ckvots_sentinel_violations(const ckvots_sentinel_t *sentinel);
uint64_t ckvots_sentinel_releases(const ckvots_sentinel_t *sentinel);

/* -------------------------------------------------------------- cell.c */

/*
 * An observed object holding a current value, with a getter for
 * CKVO_OPTION_INITIAL. The getter also records whether the hub already
 * reported an observer for (cell, key) when it ran — i.e. whether the value
 * was read after the observation was installed.
 */
typedef struct ckvots_cell ckvots_cell_t;

ckvots_cell_t *ckvots_cell_create(ckvo_hub_t *hub, const void *value);
void ckvots_cell_destroy(ckvots_cell_t *cell);
void ckvots_cell_set(ckvots_cell_t *cell, const void *value);
const void *ckvots_cell_getter(const void *object, ckvo_key_t key);
unsigned ckvots_cell_getter_calls(const ckvots_cell_t *cell);
/* How many getter calls found ckvo_has_observers(hub, cell, key) false. */
unsigned ckvots_cell_getter_calls_before_install(const ckvots_cell_t *cell);

/* -------------------------------------------------------- fork_child.c */

/*
 * Runs `dispatchers` threads announcing changes of (object, key) on `hub` and
 * `writers` threads observing and unobserving it, then fork()s `forks` times
 * while they run. Each child, single-threaded, observes (object, key), announces
 * a change, checks its callback ran exactly once, unobserves, flushes, checks the
 * release ran exactly once, creates and destroys a fresh hub, and _exit()s with
 * 0 or a step code below. A child that does not finish within `timeout_seconds`
 * is killed. Returns 0 when every child exited 0, otherwise the first failing
 * child's code; CKVOTS_FORK_* codes >= 100 are the helper's own failures.
 */
enum {
	CKVOTS_FORK_OK = 0,
	CKVOTS_FORK_CHILD_OBSERVE = 10,
	CKVOTS_FORK_CHILD_DISPATCH = 11,
	CKVOTS_FORK_CHILD_CALLS = 12,
	CKVOTS_FORK_CHILD_UNOBSERVE = 13,
	CKVOTS_FORK_CHILD_FLUSH = 14,
	CKVOTS_FORK_CHILD_RELEASE = 15,
	CKVOTS_FORK_CHILD_NEW_HUB = 16,
	CKVOTS_FORK_CHILD_KEY = 17,
	CKVOTS_FORK_CHILD_ESCAPED = 18, /* a fork child got back to the test's own code */
	CKVOTS_FORK_HELPER_THREADS = 100,
	CKVOTS_FORK_HELPER_FORK = 101,
	CKVOTS_FORK_HELPER_WAIT = 102,
	CKVOTS_FORK_CHILD_TIMEOUT = 124,
	CKVOTS_FORK_CHILD_SIGNALED = 128, /* + signal number */
};

int ckvots_fork_scenario(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    unsigned dispatchers, unsigned writers, unsigned forks, unsigned timeout_seconds);

/* ---------------------------------------------------------- child_wait.c */

/*
 * Waits for the forked child `pid` (never another: pid <= 0 is refused) at
 * most `timeout_seconds` on the monotonic clock, then kills it. Returns its
 * exit status, CKVOTS_FORK_CHILD_SIGNALED + the signal that ended it,
 * CKVOTS_FORK_CHILD_TIMEOUT, or CKVOTS_FORK_HELPER_WAIT.
 */
int ckvots_wait_child(pid_t pid, unsigned timeout_seconds);

/* ---------------------------------------------------- prompt_release.c */

/*
 * Prompt release across fork(). Registers on `hub` an observation of
 * (object, key) whose callback blocks, starts a thread that announces a change
 * of (object, key) and so stays inside that callback, then observes and
 * removes (object, other_key) with a release that sets a flag, and fork()s.
 * The child, where the blocked thread does not exist, waits up to
 * `timeout_seconds` for the release without calling into the library, and
 * _exit()s 0 or CKVOTS_PROMPT_CHILD_NOT_RELEASED (under ThreadSanitizer,
 * where the engine starts no thread in a fork child, it exits 0 at once). The parent checks that the
 * release has not run while the blocked dispatch may still use it, lets the
 * callback return, and waits the same way for the release. Returns 0 or a
 * code below; the blocking observation is removed before returning. Not
 * reentrant: one call at a time (the flag is static, so a late release on
 * failure writes nowhere it should not).
 */
enum {
	CKVOTS_PROMPT_OK = 0,
	CKVOTS_PROMPT_CHILD_NOT_RELEASED = 20,
	CKVOTS_PROMPT_RELEASED_EARLY = 21,
	CKVOTS_PROMPT_PARENT_NOT_RELEASED = 22,
	CKVOTS_PROMPT_HELPER_SETUP = 103,
	CKVOTS_PROMPT_CHILD_SIGNALED = 128, /* + signal number */
};

int ckvots_fork_prompt_release(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    ckvo_key_t other_key, unsigned timeout_seconds);

/*
 * fork() while another thread is inside a `release` (its observation was
 * removed, its grace period passed, and that thread, flushing, is running it).
 * The child, where that thread does not exist, reports through its exit code
 * how many releases ckvo_hub_stats says are still pending on `hub` (capped at
 * 100; 0 is right: nothing there waits for a grace period any more), after a
 * ckvo_hub_flush that must not wait for the vanished thread. The parent lets
 * the release return and checks it ran once. Returns the child's count, or a
 * CKVOTS_PROMPT_* code >= 103 (CKVOTS_PROMPT_PARENT_NOT_RELEASED + 100 when the
 * parent's release did not run exactly once).
 */
int ckvots_fork_pending_with_release_in_flight(ckvo_hub_t *hub, const void *object, ckvo_key_t key);

/* --------------------------------------------------- release_runner.c */

/* Failures of the release_runner.c scenarios (0 is success). */
enum {
	CKVOTS_RELEASE_SETUP = -2000,         /* observing or starting a thread failed */
	CKVOTS_RELEASE_STATUS = -2001,        /* a removal or flush outside any release failed */
	CKVOTS_RELEASE_NESTED_STATUS = -2002, /* a strict removal inside a release failed */
	CKVOTS_RELEASE_NOT_ONCE = -2003,      /* a context was not released exactly once */
};

/*
 * Registers `depth` observations of `key` whose release each calls
 * ckvo_unobserve_sync on the next one, then removes the first with
 * ckvo_unobserve_sync on a thread with a stack of `stack_bytes`, flushes,
 * and checks every context was released exactly once. Returns 0 or a
 * CKVOTS_RELEASE_* code; a release that recursed would overflow that stack.
 */
int ckvots_release_chain(ckvo_hub_t *hub, ckvo_key_t key, size_t depth, size_t stack_bytes);

/*
 * Another thread removes the first of a chain of `depth` observations (each
 * release strictly removes the next) and one whose release holds that
 * thread, as the runner, until this thread flushes; then this thread
 * flushes. Stores how many links were released when that flush returned
 * (all of them: the flush waits for the first link's release and the
 * follow-ups it starts). Returns 0 or a CKVOTS_RELEASE_* code.
 */
int ckvots_flush_waits_for_follow_ups(ckvo_hub_t *hub, ckvo_key_t key, size_t depth,
    size_t *released_when_flush_returned);

/*
 * Three dispatches, each holding the announcer's (error-checking) mutex, whose
 * callback removes 64 observations; then a flush. Reports how many releases
 * ran inside that callback on the same thread, how many found the announcer's
 * mutex held by their own thread (a deadlock with a normal mutex), and what
 * ckvo_hub_flush returned inside the first release. Returns 0 or a code.
 */
int ckvots_releases_inside_dispatch(ckvo_hub_t *hub, ckvo_key_t key, size_t *released_inside,
    size_t *announcer_deadlocks, int *flush_status);

/*
 * A flush whose own release starts another thread that removes 64 more
 * observations (later work); the first of their releases waits up to
 * `seconds` for that flush to return. Stores in `*late_timed_out` whether it
 * gave up (the flush waited for later work). Returns 0 or a code.
 */
int ckvots_flush_ignores_later_releases(ckvo_hub_t *hub, ckvo_key_t key, unsigned seconds,
    int *late_timed_out);

/*
 * A thread removes 128 observations so that its next registration's unlock
 * finds 64 of them ready, registers with CKVO_OPTION_INITIAL and calls
 * pthread_exit() inside the initial callback. Then flushes (on the calling
 * thread) and stores how many of the 128 were released. Returns 0, a code, or
 * CKVOTS_THREAD_DID_NOT_EXIT.
 */
int ckvots_exit_inside_initial_callback(ckvo_hub_t *hub, ckvo_key_t key, size_t *released);

/* ---------------------------------------------------- memory_targets.c */

/*
 * On an empty hub: 200,000 observations of one object, every 512th kept, the
 * rest removed, flushed; then those removed too and a spike of 500,000
 * registered, removed and flushed. Stores ckvo_hub_stats' `bytes` at the
 * start, after the first flush and after the spike. Returns 0, or -1.
 */
int ckvots_memory_targets(ckvo_hub_t *hub, ckvo_key_t key, size_t *empty, size_t *survivors,
    size_t *after_spike);

/*
 * The same with distinct objects and owners (one object group and one owner
 * group per observation): 200,000 with every 512th kept, flushed; then a
 * spike of 500,000 of which one stays, flushed. Stores the bytes at the
 * start, after the first flush and after the spike; removes the last one.
 * Returns 0, or -1.
 */
int ckvots_memory_targets_objects(ckvo_hub_t *hub, ckvo_key_t key, size_t *empty,
    size_t *survivors, size_t *after_spike);

/* ------------------------------------------------------- held_memory.c */

/* Observations of a spike: one object and one owner (KVOController), or one of each per observation. */
#define CKVOTS_SHAPE_ONE_OWNER 0
#define CKVOTS_SHAPE_DISTINCT 1

/* Heap bytes a hub holds, by the allocator's ledger and by ckvo_hub_stats, each after two flushes. */
typedef struct ckvots_held {
	long empty, peak, held;                     /* ledger: before, at the top of, after the spike */
	size_t stats_empty, stats_peak, stats_held; /* ckvo_hub_stats' bytes at the same moments */
	size_t live;                                /* observations left after the spike */
} ckvots_held_t;

/*
 * On a new hub (created with the ledger armed; one observation registered
 * and removed first): `spike` observations of one key shaped by `shape`,
 * then all removed but every `keep_every`-th (0: none). Destroys the hub.
 * Returns 0, or -1 (a call failed, or the ledger is unavailable: a
 * sanitized build). Run alone in a process.
 */
int ckvots_held_after_spike(size_t spike, size_t keep_every, int shape, ckvots_held_t *out);

/*
 * A thread registers `count` observations on distinct objects and removes
 * them (`runner`: CKVOTS_RUNNER_REMOVAL, ckvo_unobserve, whose polling
 * commits run releases; CKVOTS_RUNNER_BACKGROUND, deferred, run by the
 * background thread); the release of the one in the middle ends the thread
 * that runs it. Then the rest is removed and the hub settled. Stores in
 * `*leaked` how much more the ledger grew than the hub's stats (-1 if not
 * measured). Returns 0, or -1 (a call failed or no ledger), -2 (not every
 * release ran).
 */
int ckvots_ledger_after_exit_in_release(int runner, size_t count, long *leaked);

/*
 * `cycles` times on one new hub: a new key, `spike` observations (shared and
 * single slots, owner groups, wildcards) registered, then all removed.
 * After each half, flushed: ledger[2c], ledger[2c + 1] are the ledger's
 * bytes over the empty hub, stats[2c], stats[2c + 1] the stats' bytes over
 * it. Returns 0, or -1. Run alone in a process.
 */
int ckvots_bytes_cycles(size_t spike, size_t cycles, long *ledger, long *stats);

/* ----------------------------------------------------- listing_steps.c */

/* Slots (keys, for a NULL object) the listings of this thread have examined so far. */
uint64_t ckvots_listing_steps(void);

/* -------------------------------------------------- probe_contention.c */

/* What ckvots_probe_contention saw. */
struct ckvots_probe_contention_result {
	size_t announced;   /* the checker's announcements that returned CKVO_OK */
	size_t delivered;   /* calls of the observation registered throughout */
	size_t zero_reads;  /* reads of the key's probe that said "no observers" */
	size_t failures;    /* unexpected statuses */
	uint64_t observations_after;       /* the probe's counters once the churn */
	uint64_t prior_observations_after; /* is over and flushed (1 and 0 expected) */
};

/*
 * Registers one observation of (object, key) that stays registered, then
 * starts `churners` threads that each run `iterations` registrations and
 * removals of other observations of `key` (by token, owner, object, from
 * their own callback, duplicates, every object, prior), all released by a
 * barrier, while this thread reads the key's probe and announces changes of
 * the object until they finish. Flushes, removes the persistent observation,
 * flushes again. Returns 0, or -1 when out of memory.
 */
int ckvots_probe_contention(ckvo_hub_t *hub, ckvo_key_t key, unsigned churners, size_t iterations,
    struct ckvots_probe_contention_result *result);

/* ------------------------------------------------------ self_removal.c */

/*
 * Registers `count` one-shot observers of `key` (with owners) on one object
 * while another thread announces changes of it without pause; each calls
 * ckvo_unobserve_deferred on its own token from its first callback. Then
 * announces once more and flushes. Stores how many deferrals were refused
 * and how many observers were called. Returns 0, or -1 when out of memory.
 * Not reentrant: one race at a time in the process.
 */
int ckvots_self_removal_race(ckvo_hub_t *hub, ckvo_key_t key, size_t count, size_t *refused,
    size_t *called);

/* ------------------------------------------------------ thread_exit.c */

/*
 * Registers `probe` as an observation of (object, key) on `hub` (storing its
 * token in `*token`; it stays registered), then starts a pthread that
 * announces a change of (object, key); the probe's callback calls
 * pthread_exit() from inside that dispatch, on that thread only. Joins the
 * thread. Replaces the probe's hooks. Returns 0, a negative ckvo status if
 * observing failed, a positive errno if the thread could not be started, or
 * CKVOTS_THREAD_DID_NOT_EXIT if the dispatch returned (the callback never ran
 * on that thread).
 */
enum { CKVOTS_THREAD_DID_NOT_EXIT = -1000 };
int ckvots_thread_exit_in_callback(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    ckvots_probe_t *probe, ckvo_token_t *token);

/*
 * Runs `total` short-lived threads, at most `concurrent` alive at a time, each
 * announcing one change of (object, key) on `hub` and exiting. Returns the
 * number of announcements that returned CKVO_OK.
 */
size_t ckvots_short_lived_dispatchers(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    size_t total, unsigned concurrent);

/* ------------------------------------------------------------- churn.c */

/*
 * The process's resident set size in bytes (/proc/self/statm resident pages
 * times the page size); 0 if it cannot be read.
 */
size_t ckvots_resident_bytes(void);

/*
 * Bytes the allocator has handed out and not yet been given back (glibc's
 * mallinfo2(): in-use chunks plus mmap'ed ones); 0 where unavailable.
 */
size_t ckvots_heap_bytes(void);

/*
 * Observe/unobserve cycles on one hub, for memory bounds. The churn keeps a
 * ring of `window` live observations: cycle i removes the one registered
 * `window` cycles earlier (if any) and registers a new one on
 * objects[i % object_count] and a key rotating through `keys` (so every
 * (object, key) pair comes up), with no options and its own owner; every
 * 64th cycle also announces a change of that pair. Callbacks and releases are
 * counted on the churn. Used by one thread at a time.
 */
typedef struct ckvots_churn ckvots_churn_t;

/* Copies `keys` and `objects`; NULL for an empty list, a zero window or out of memory. */
ckvots_churn_t *ckvots_churn_create(ckvo_hub_t *hub, const ckvo_key_t *keys, size_t key_count,
    const void *const *objects, size_t object_count, size_t window);
/* Does not unobserve: drain and flush (or destroy the hub) first. */
void ckvots_churn_destroy(ckvots_churn_t *churn);
/* Runs `cycles` more cycles; returns how many had every call return CKVO_OK. */
size_t ckvots_churn_run(ckvots_churn_t *churn, size_t cycles);
/* Unobserves the ring's live observations; returns how many returned CKVO_OK. */
size_t ckvots_churn_drain(ckvots_churn_t *churn);
/* Successful registrations, callback calls and releases so far. */
uint64_t ckvots_churn_observed(const ckvots_churn_t *churn);
uint64_t ckvots_churn_calls(const ckvots_churn_t *churn);
uint64_t ckvots_churn_releases(const ckvots_churn_t *churn);

/* -------------------------------------------------------------- keys.c */

/*
 * Interns "<prefix><i>" for i in [0, count) into keys[i]. Returns how many
 * succeeded (it stops at the first failure).
 */
size_t ckvots_keys_intern(ckvo_hub_t *hub, const char *prefix, size_t count, ckvo_key_t *keys);
/* How many i in [0, count) have ckvo_key_name(hub, keys[i]) equal to "<prefix><i>". */
size_t ckvots_keys_names_match(ckvo_hub_t *hub, const char *prefix, const ckvo_key_t *keys,
    size_t count);
/*
 * Registers tally slot first_slot + i as an observation of (object, keys[i])
 * with no options, for i in [0, count), storing tokens in `tokens`. Returns
 * the number of CKVO_OK results; stops at the first failure and stores it in
 * `*first_error`.
 */
size_t ckvots_tally_observe_keys(ckvots_tally_t *tally, size_t first_slot, ckvo_hub_t *hub,
    const void *object, const ckvo_key_t *keys, size_t count, ckvo_token_t *tokens,
    ckvo_status_t *first_error);
/* Announces a change of (object, keys[i]) for each i; returns how many returned CKVO_OK. */
size_t ckvots_announce_keys(ckvo_hub_t *hub, const void *object, const ckvo_key_t *keys,
    size_t count);
/* How many of `keys` ckvo_has_observers reports for `object`. */
size_t ckvots_keys_with_observers(ckvo_hub_t *hub, const void *object, const ckvo_key_t *keys,
    size_t count);

/* --------------------------------------------------- release_backlog.c */

/* Failures of the release_backlog.c scenarios (0 is success). */
enum {
	CKVOTS_BACKLOG_SETUP = -3000,    /* observing or starting a thread failed */
	CKVOTS_BACKLOG_STATUS = -3001,   /* an API call failed */
	CKVOTS_BACKLOG_NOT_ONCE = -3002, /* a context was not released exactly once */
	CKVOTS_BACKLOG_NOT_RUN = -3003,  /* the wanted thread never ran the release (after retries) */
	CKVOTS_BACKLOG_NOT_PROMPT = -3004, /* a deferred removal was not released without a call */
	CKVOTS_BACKLOG_CANCELLED_INSIDE = -3005, /* the cancel took effect inside ckvo_hub_flush */
};

/* Which thread runs the releases of a scenario. */
enum {
	CKVOTS_RUNNER_FLUSH = 0,      /* a ckvo_hub_flush of deferred removals */
	CKVOTS_RUNNER_REMOVAL = 1,    /* the 64th ckvo_unobserve, whose commit polls */
	CKVOTS_RUNNER_BACKGROUND = 2, /* the hub's background thread */
};

/* Where a thread is cancelled inside ckvo_hub_flush. */
enum {
	CKVOTS_CANCEL_WAITING_FOR_RUNNER = 0, /* sleeping while another thread runs a release */
	CKVOTS_CANCEL_IN_GRACE_PERIOD = 1,    /* waiting for a dispatch to return */
};

/*
 * Two threads observe and unobserve (one observation at a time, unique
 * contexts) for `milliseconds`, each release spinning `release_ns`; a third
 * samples ckvo_hub_stats' pending_releases every 50 us into `*max_pending`.
 * Then flushes and checks every context was released exactly once; `*cycles`
 * is the number of observe/unobserve pairs. Returns 0 or a CKVOTS_BACKLOG_* code.
 */
int ckvots_backlog_churn(ckvo_hub_t *hub, ckvo_key_t key, long release_ns, unsigned milliseconds,
    size_t *max_pending, uint64_t *cycles);

/*
 * The same churn for at most `seconds`; after 300 ms this thread flushes.
 * `*returned_while_churning`: the flush returned before the churners' own
 * deadline. `*missing`: observations removed before the flush began whose
 * release had not run when it returned. Then as ckvots_backlog_churn.
 */
int ckvots_flush_during_churn(ckvo_hub_t *hub, ckvo_key_t key, long release_ns, unsigned seconds,
    int *returned_while_churning, uint64_t *missing, uint64_t *cycles);

/*
 * A release run by `runner` (CKVOTS_RUNNER_*) forks. The child goes on (from
 * the flush or removal that ran it, or inside the background thread's loop),
 * uses the hub, flushes, checks every release ran once there and exits; the
 * parent checks the same. Only releases run while the scenario removes act:
 * the parent's clean-up removals and flush run releases too, and a child
 * forked there would return into the test runner. Returns 0, the child's
 * CKVOTS_FORK_* code, or a CKVOTS_BACKLOG_* code.
 */
int ckvots_fork_in_release(ckvo_hub_t *hub, ckvo_key_t key, int runner, unsigned timeout_seconds);

/*
 * A release run by `runner` calls pthread_exit. Then the rest is removed, a
 * flush must return, every one of 128 contexts is released exactly once, and
 * a deferred removal made afterwards is released with no further call.
 * Returns 0 or a CKVOTS_BACKLOG_* code (a hang is the caller's timeout).
 */
int ckvots_exit_in_release(ckvo_hub_t *hub, ckvo_key_t key, int runner);

/*
 * A thread blocked in ckvo_hub_flush (`where`: CKVOTS_CANCEL_*) is
 * cancelled; then the blocker lets go, and the hub must still take writers
 * and flushes, and release everything once. Returns 0 or a CKVOTS_BACKLOG_*
 * code (a hang is the caller's timeout).
 */
int ckvots_cancel_in_flush(ckvo_hub_t *hub, ckvo_key_t key, int where);

#ifdef __cplusplus
}
#endif

#endif /* CKVO_TEST_SUPPORT_H */
