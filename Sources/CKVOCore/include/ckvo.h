/*
 * ckvo.h — CKVOCore, lock-free key-value observing for C.
 *
 * A hub is a registry of observations. An observation says: when `key` of
 * `object` changes, call `callback(change, context)`. The code that changes a
 * value announces it with ckvo_will_change() (optional, for "prior"
 * observers) and ckvo_did_change(); the hub calls every matching observer,
 * synchronously, on the announcing thread.
 *
 * Defaults that hold for every function below unless its comment says
 * otherwise:
 *   - Thread safety: any thread may call any function at any time, including
 *     from inside a callback (re-entrancy) — except ckvo_hub_destroy, which
 *     needs the hub to be otherwise idle.
 *   - Blocking: dispatch (will/did change, has_observers) never blocks and
 *     never takes a lock. Registration and removal serialize on a per-hub
 *     writer lock that is never held while user code runs, so they never
 *     wait for a callback (a removal may wait for a release another thread
 *     runs, only while the release backlog is over its bound: see
 *     ckvo_release_t). Only the functions whose name or comment says
 *     "waits" (ckvo_unobserve_sync, ckvo_hub_flush, ckvo_hub_destroy) wait
 *     for dispatches running on other threads.
 *   - Background thread: a hub starts one thread of its own at its first
 *     registration, which carries out deferred removals and runs releases
 *     within tens of milliseconds of the removal when no other call would
 *     (see ckvo_release_t). ckvo_hub_destroy stops it; it never keeps the
 *     process from exiting and blocks every signal.
 *   - Pointers: every pointer argument is borrowed for the duration of the
 *     call. `object` and `owner` pointers are identities only: the hub never
 *     dereferences them.
 *   - Errors: functions return a ckvo_status_t (CKVO_OK == 0, errors
 *     negative) or a documented invalid value. No argument value crashes the
 *     process; a failed call changes nothing and calls no callback.
 *     New status codes may be added in later versions.
 */
#ifndef CKVO_H
#define CKVO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckvo_probe.h"
#include "ckvo_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CKVO_EXPORT __attribute__((visibility("default")))
#else
#define CKVO_EXPORT
#endif

/* ---------------------------------------------------------------- status */

/*
 * The status list, defined once: X(NAME, value, message). CKVO_OK is 0 and
 * every error is negative.
 */
#define CKVO_STATUS_MAP(X)                                                     \
	X(OK, 0, "success")                                                     \
	X(EINVAL, -1, "invalid argument")                                       \
	X(ENOENT, -2, "no such observation")                                    \
	X(EEXIST, -3, "already observing")                                      \
	X(ENOMEM, -4, "out of memory")                                          \
	X(EDEADLK, -5, "would deadlock: called from inside a notification")     \
	X(ELOOP, -6, "notifications nested deeper than CKVO_NESTING_LIMIT")

typedef enum ckvo_status {
#define CKVO_STATUS_ENUM_(name, value, message) CKVO_##name = (value),
	CKVO_STATUS_MAP(CKVO_STATUS_ENUM_)
#undef CKVO_STATUS_ENUM_
} ckvo_status_t;

/*
 * A static, human-readable message for `status`; "unknown status" for a
 * value that is not a ckvo_status_t. Never NULL.
 */
CKVO_EXPORT const char *ckvo_strerror(int status);

/* The library's version as CKVO_VERSION_HEX would spell it (0xMMmmpp). */
CKVO_EXPORT unsigned int ckvo_version(void);

/* The library's version as "major.minor.patch". Static storage. */
CKVO_EXPORT const char *ckvo_version_string(void);

/* ------------------------------------------------------------------ types */

/* An opaque observation registry. */
typedef struct ckvo_hub ckvo_hub_t;

/* An interned key name. 0 is never a valid key. */
typedef uint32_t ckvo_key_t;

/*
 * Names one observation of one hub: a 128-bit value, copied freely. Its
 * fields are the hub's business; compare tokens with ckvo_token_equal. A
 * zero-initialized token (CKVO_TOKEN_NONE_INITIALIZER) is never valid.
 *
 * Tokens are never reused within the process: a stale token, or one given
 * to another hub (also to a hub created after its own was destroyed), is
 * CKVO_ENOENT and removes nothing (SPEC §2.21). They never run out either
 * (SPEC §2.22): the generation is drawn from one 64-bit sequence for the
 * whole process, which lasts 584 years at one registration per nanosecond,
 * so no registration ever fails for lack of tokens. (Version 0 of this
 * library had 64-bit tokens, whose 40-bit generation a process could
 * spend in days; version 1 widened them, hence the new SONAME.)
 */
typedef struct ckvo_token {
	uint64_t generation; /* never 0 in a valid token */
	uint64_t index;      /* the observation's record in its hub */
} ckvo_token_t;

/* The token that names nothing: what a failed ckvo_observe leaves. */
#define CKVO_TOKEN_NONE_INITIALIZER { 0, 0 }

/* Whether `a` and `b` are the same token. */
static inline bool
ckvo_token_equal(ckvo_token_t a, ckvo_token_t b)
{
	return a.generation == b.generation && a.index == b.index;
}

/* Whether `token` names nothing (the zero token, or any with generation 0). */
static inline bool
ckvo_token_is_none(ckvo_token_t token)
{
	return token.generation == 0;
}

/* What an observation asks for; combine with |. */
typedef uint32_t ckvo_options_t;
#define CKVO_OPTION_NEW ((ckvo_options_t)1u << 0)     /* carry the new value */
#define CKVO_OPTION_OLD ((ckvo_options_t)1u << 1)     /* carry the old value */
#define CKVO_OPTION_INITIAL ((ckvo_options_t)1u << 2) /* notify once at registration */
#define CKVO_OPTION_PRIOR ((ckvo_options_t)1u << 3)   /* also notify before changes */
/*
 * A registration promise, not a delivery option: `context` is in no other
 * live observation of the hub (e.g. a fresh allocation per registration), so
 * ckvo_observe skips duplicate detection, which makes registration and
 * removal cheaper. Broken, the promise costs no crash in the hub: the same
 * context registered twice this way is two observations, and `release`
 * receives it once for each.
 */
#define CKVO_OPTION_UNIQUE_CONTEXT ((ckvo_options_t)1u << 4)
#define CKVO_OPTIONS_ALL                                                       \
	(CKVO_OPTION_NEW | CKVO_OPTION_OLD | CKVO_OPTION_INITIAL | CKVO_OPTION_PRIOR | \
	    CKVO_OPTION_UNIQUE_CONTEXT)

/* What kind of change happened. The collection kinds carry indexes. */
typedef enum ckvo_kind {
	CKVO_KIND_SETTING = 1,     /* the value was set (replaced as a whole) */
	CKVO_KIND_INSERTION = 2,   /* elements were inserted at `indexes` */
	CKVO_KIND_REMOVAL = 3,     /* elements were removed from `indexes` */
	CKVO_KIND_REPLACEMENT = 4, /* elements at `indexes` were replaced */
} ckvo_kind_t;

/*
 * Dispatches nested deeper than this on one thread (a callback that changes
 * what it observes, again and again) are refused with CKVO_ELOOP instead of
 * overflowing the stack. Counted per thread, across all hubs.
 */
#define CKVO_NESTING_LIMIT 64

/*
 * A change, as announced and as delivered.
 *
 * Announcing (ckvo_will_change / ckvo_did_change): fill `object`, `key`,
 * `kind`, the value pointers you have and, for a collection kind, `indexes`;
 * `is_prior` and `is_initial` are ignored and set by the hub.
 *
 * Delivered: a callback receives a copy that carries only what its options
 * asked for: `new_value` is NULL unless CKVO_OPTION_NEW (and always NULL in a
 * prior notification and for a removal); `old_value` is NULL unless
 * CKVO_OPTION_OLD (and always NULL for an insertion and in the initial
 * notification). The value pointers and `indexes` are borrowed from the
 * announcer: valid only until the callback returns. Their type is a
 * convention between the code that announces and the code that observes.
 */
typedef struct ckvo_change {
	const void *object;    /* the changed object; NULL for a keyed broadcast */
	const void *old_value; /* borrowed; see above */
	const void *new_value; /* borrowed; see above */
	const size_t *indexes; /* collection kinds: affected indexes, ascending */
	size_t index_count;    /* number of entries in `indexes` */
	ckvo_key_t key;        /* the key that changed */
	ckvo_kind_t kind;      /* what happened */
	bool is_prior;         /* delivered before the change (CKVO_OPTION_PRIOR) */
	bool is_initial;       /* delivered at registration (CKVO_OPTION_INITIAL) */
} ckvo_change_t;

/*
 * Called for each change an observation receives; `context` is the pointer
 * given to ckvo_observe. Runs synchronously on the announcing thread, with no
 * hub lock held: it may observe, unobserve and announce changes itself.
 */
typedef void (*ckvo_callback_t)(const ckvo_change_t *change, void *context);

/*
 * The release backlog's bounds (see ckvo_release_t): releases queued and not
 * yet returned above which a removal made outside every callback and release
 * helps the runner or waits for it, and how many releases of other
 * observations one call runs beyond its own share.
 */
#define CKVO_RELEASE_BACKLOG 4096u
#define CKVO_RELEASE_CHUNK 64u

/*
 * Called exactly once per successful ckvo_observe, when the observation has
 * been removed and a grace period has passed in which no dispatch can still
 * use `context`. Releases run from a per-hub queue, one at a time, on
 * whichever thread runs that queue: a later ckvo_observe or removal
 * (ckvo_unobserve and its variants except ckvo_unobserve_deferred) made
 * outside every callback, ckvo_hub_flush, ckvo_hub_destroy, or the hub's
 * background thread. Never inside ckvo_key_intern, ckvo_hub_stats, a
 * dispatch or an initial callback (what a callback removes is released
 * after it returns, or by the background thread), and never nested inside
 * another release: a release that removes again queues that release behind
 * itself, so chains of releases run in a loop at a constant stack depth.
 * Runs with no hub lock held: it may call into this API, with the same
 * result whichever thread runs it: ckvo_unobserve_sync waits for dispatches
 * but not for the release it queues; ckvo_hub_flush returns CKVO_EDEADLK
 * (it would wait for the running release); ckvo_hub_destroy of the hub
 * whose observation it releases returns CKVO_EDEADLK, destroying nothing.
 *
 * Backlog (SPEC §2.23): when removals outpace the runner, a removal made
 * outside every callback and release (ckvo_unobserve and its variants,
 * ckvo_observe's own commit) runs at most what it removed plus 64 releases
 * of other observations (CKVO_RELEASE_CHUNK); while more than 4096 releases
 * are queued (CKVO_RELEASE_BACKLOG) it helps, or sleeps while another thread
 * runs the queue, until the backlog is under that bound. So pending_releases
 * stays under 4096 + 128 (what waits for a grace period) + the removals of
 * the calls in progress, about 64 bytes each plus what their contexts hold,
 * while no thread is held inside a read section: a blocked callback, or a
 * thread descheduled inside a dispatch, a listing or ckvo_unobserve_deferred,
 * holds every grace period back, and what is removed meanwhile waits. Once
 * it returns, a poll or a flush queues all of that at once, over the bound,
 * and removals are throttled until the runner has brought it back under. Such a removal may thus wait for a
 * release running on another thread: do not call it holding a lock a
 * release takes (the same rule as for releases it runs itself). Removals
 * made inside a callback or a release are never slowed.
 *
 * Threads: a release may call fork(): in the child the forking thread goes
 * on as the hub's runner (or its background thread) and the hub works. A
 * release that ends its thread (pthread_exit, or a cancellation it acts on)
 * counts as run; the releases after it are run by another thread, each
 * exactly once, and a background thread that ends this way is replaced.
 *
 * Promptness: with no dispatch running, the release runs within about 10 ms
 * of the removal even if the process makes no further call; with dispatches
 * running on other threads, within about 30 ms of the moment every dispatch
 * that began before the removal has returned. A callback that blocks delays
 * the releases of everything removed while it runs. The same bound holds for
 * ckvo_unobserve_deferred, counted from the return of the dispatch that
 * called it (the removal waits for that dispatch like for any other).
 */
typedef void (*ckvo_release_t)(void *context);

/*
 * Reads the current value of `key` on `object` for an initial notification.
 * Returns a pointer that must stay valid until the initial callback returns.
 */
typedef const void *(*ckvo_getter_t)(const void *object, ckvo_key_t key);

/* Counters describing a hub at one moment (for monitoring and tests). */
typedef struct ckvo_hub_stats {
	size_t observations;     /* registered and not yet removed */
	size_t keys;             /* interned keys */
	size_t pending_releases; /* removed, their release not yet returned */
	/*
	 * Heap bytes the hub holds, as requested from malloc (without the
	 * allocator's own overhead): the hub, its token pages and directory,
	 * its index tables (identities, slot map, object and owner sets, key
	 * names), observer lists, slots, owner groups and their member arrays,
	 * and every interned key with its name. Memory retired and waiting for
	 * a grace period is not counted (it is on its way back: after
	 * ckvo_hub_flush, twice so that records released by the first give
	 * their pages back, it is freed). Per-thread reader records, shared by
	 * every hub, are not counted. Exact: after a flush it differs from what
	 * the hub took from malloc by nothing. Held memory stays proportional
	 * to what is live (docs/reliability.md states the bound).
	 */
	size_t bytes;
} ckvo_hub_stats_t;

/* -------------------------------------------------------------------- hub */

/*
 * Creates an empty hub. Returns NULL when out of memory. The caller owns the
 * hub and frees it with ckvo_hub_destroy.
 */
CKVO_EXPORT ckvo_hub_t *ckvo_hub_create(void);

/*
 * Destroys `hub`: stops and joins its background thread (waiting for the
 * releases it may be running: do not call this holding a lock that a release
 * takes), removes every observation, waits for a grace period, then calls
 * each remaining `release` exactly once, on this thread. The caller must make sure no other thread
 * uses the hub (dispatches included) once the call begins, nor after it; the
 * wait is for dispatches of other hubs, which share the grace periods.
 * NULL is a no-op returning CKVO_OK. Returns CKVO_EINVAL for the default hub
 * (it lives as long as the process) and CKVO_EDEADLK, destroying nothing,
 * when called from inside a callback or from a release of this hub
 * (whichever thread runs it). From a release of another hub it is allowed.
 * Not a cancellation point: it runs with cancellation disabled.
 */
CKVO_EXPORT ckvo_status_t ckvo_hub_destroy(ckvo_hub_t *hub);

/* The process-wide hub, created on first use. Never NULL unless out of memory. */
CKVO_EXPORT ckvo_hub_t *ckvo_hub_default(void);

/*
 * Waits until every observation removed before the call has been released:
 * for dispatches running on other threads to leave, then for the hub's
 * release queue up to the last observation removed before the call (a
 * ticket), running those releases on this thread when no other thread is
 * running the queue, and sleeping while one is. It never waits for
 * releases of observations removed after the call began. Releases are
 * prompt without it (see ckvo_release_t); it is for orderly shutdown and
 * tests that need them at once. Returns CKVO_EDEADLK, waiting for nothing,
 * from inside a callback or a release. It returns while other threads keep
 * removing: later removals never extend its wait. Not a cancellation point:
 * it runs with cancellation disabled (also while it runs releases), so a
 * pthread_cancel takes effect at the thread's next cancellation point after
 * it returns; the same holds for ckvo_unobserve_sync and ckvo_hub_destroy.
 */
CKVO_EXPORT ckvo_status_t ckvo_hub_flush(ckvo_hub_t *hub);

/* Fills `stats`. CKVO_EINVAL when `hub` or `stats` is NULL. */
CKVO_EXPORT ckvo_status_t ckvo_hub_stats(ckvo_hub_t *hub, ckvo_hub_stats_t *stats);

/* ------------------------------------------------------------------- keys */

/*
 * Interns `name` (a NUL-terminated string, copied, at most 1024 bytes) and
 * returns its key; the same name always yields the same key in one hub.
 * `getter`, which may be NULL, is how CKVO_OPTION_INITIAL reads the current
 * value: the first non-NULL getter given for a name is kept, and a later call
 * with a different non-NULL getter fails. Returns 0 on failure (NULL hub,
 * NULL, empty or over-long name, conflicting getter, out of memory). Never
 * calls a `release`, so it may be called while holding a lock that a release
 * takes.
 */
CKVO_EXPORT ckvo_key_t ckvo_key_intern(ckvo_hub_t *hub, const char *name, ckvo_getter_t getter);

/*
 * The key interned from the `length` bytes at `name` (not NUL-terminated;
 * borrowed for the call), or 0 if no key has that name: never interns, so
 * looking up names nobody interned does not grow the hub. Lock-free and
 * non-blocking (a read of the name table, like a dispatch), for announcers
 * that resolve a name on every change; any thread, also inside a callback.
 * Returns 0 for a NULL hub or name, or a length of 0 or over 1024 bytes.
 */
CKVO_EXPORT ckvo_key_t ckvo_key_find(ckvo_hub_t *hub, const char *name, size_t length);

/*
 * The name `key` was interned from, or NULL if `key` is not a key of `hub`.
 * The string lives as long as the hub.
 */
CKVO_EXPORT const char *ckvo_key_name(ckvo_hub_t *hub, ckvo_key_t key);

/*
 * The counters of `key` (see ckvo_probe.h), for setters that check for
 * observers inline; NULL if `key` is not a key of `hub`. The probe lives as
 * long as the hub.
 */
CKVO_EXPORT const ckvo_probe_t *ckvo_key_probe(ckvo_hub_t *hub, ckvo_key_t key);

/* ----------------------------------------------------------- observation */

/*
 * Registers an observation of `key` on `object`.
 *
 * `object` NULL observes `key` on every object (including changes announced
 * with a NULL object); otherwise only changes of that object are delivered.
 * `owner` (may be NULL) groups observations for ckvo_unobserve_owner.
 * `callback` is required. `context` is passed to `callback` and, once, to
 * `release` (may be NULL) after the observation is removed.
 *
 * On success stores the new token in `*token` (if `token` is not NULL)
 * *before* the initial notification, so the initial callback can already
 * unobserve it, and returns CKVO_OK. With CKVO_OPTION_INITIAL the callback is
 * called once, before this function returns, with kind CKVO_KIND_SETTING,
 * `is_initial` set and, if CKVO_OPTION_NEW, the value returned by the key's
 * getter (NULL if the key has none), read after the observation was
 * installed.
 *
 * A registration with the same owner, object, key, callback and context as a
 * live one changes nothing: it returns CKVO_EEXIST and stores the existing
 * token (unless either was made with CKVO_OPTION_UNIQUE_CONTEXT). On any other
 * failure `*token` is the zero token and `release` is not called: the caller
 * keeps `context`.
 * Errors: CKVO_EINVAL (NULL hub or callback, unknown key, unknown option
 * bits), CKVO_EEXIST, CKVO_ENOMEM (the allocator failed: never for lack of
 * tokens, generations or key ids), CKVO_ELOOP (CKVO_OPTION_INITIAL requested
 * while this thread is already CKVO_NESTING_LIMIT dispatches deep).
 *
 * Cost: amortized O(1) in the number of observers of the key.
 */
CKVO_EXPORT ckvo_status_t ckvo_observe(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    ckvo_options_t options, const void *owner, ckvo_callback_t callback, void *context,
    ckvo_release_t release, ckvo_token_t *token);

/*
 * Removes the observation named by `token`. After it returns, no dispatch
 * that starts later calls it, and a dispatch already running on this thread
 * (this call made from inside a callback) does not reach it either. A
 * dispatch running on another thread may still be inside its callback; use
 * ckvo_unobserve_sync to wait for that. `release` runs later, after a grace
 * period. CKVO_ENOENT for a token that is unknown, stale or already removed.
 * Outside callbacks and releases it may run up to 65 queued releases (its
 * own share plus 64), and while the release backlog is over its bound it
 * waits for the thread running them (see ckvo_release_t); its waits are not
 * cancellation points.
 */
CKVO_EXPORT ckvo_status_t ckvo_unobserve(ckvo_hub_t *hub, ckvo_token_t token);

/*
 * Like ckvo_unobserve, then waits until no dispatch on any thread can still
 * be calling the observation's callback. It waits also when it returns
 * CKVO_ENOENT: the token may have been removed an instant earlier by
 * another call (e.g. a callback's ckvo_unobserve_deferred on its own token),
 * whose dispatch may still be running. Its release has run when it returns,
 * except when called from a release: then it is queued behind the running
 * one. Returns CKVO_EDEADLK, removing nothing, when called from inside a
 * callback (it would wait for itself).
 */
CKVO_EXPORT ckvo_status_t ckvo_unobserve_sync(ckvo_hub_t *hub, ckvo_token_t token);

/*
 * Marks the observation named by `token` dead and queues its removal for the
 * next registration or removal on the hub, or for the hub's background
 * thread, which it wakes if the queue was empty (a counter increment and a
 * futex wake-up, no lock): the release then runs within the bound described
 * at ckvo_release_t with no further call. Lock-free and non-blocking: safe
 * inside a callback on a dispatch path that must not wait for the writer
 * lock (e.g. a callback that finds its observer gone). Dispatches that reach
 * the observation after this returns skip it. CKVO_ENOENT as ckvo_unobserve.
 */
CKVO_EXPORT ckvo_status_t ckvo_unobserve_deferred(ckvo_hub_t *hub, ckvo_token_t token);

/*
 * The observed `object` is going away: removes every observation of it at
 * once (observations with a NULL object are left alone), so a new object at
 * the same address sees none of them. CKVO_ENOENT if there were none;
 * CKVO_EINVAL for a NULL hub or object.
 */
CKVO_EXPORT ckvo_status_t ckvo_unobserve_object(ckvo_hub_t *hub, const void *object);

/*
 * The observer `owner` is going away: removes every observation registered
 * with it. CKVO_ENOENT if there were none; CKVO_EINVAL for a NULL hub or
 * owner.
 */
CKVO_EXPORT ckvo_status_t ckvo_unobserve_owner(ckvo_hub_t *hub, const void *owner);

/* --------------------------------------------------------- introspection */

/* One live observation as ckvo_object_observations reports it (SPEC §2.20). */
typedef struct ckvo_observation_info {
	ckvo_token_t token;        /* its token, as ckvo_observe returned it */
	ckvo_key_t key;            /* 0 never; the key observed */
	ckvo_options_t options;    /* as registered */
	const void *owner;         /* as registered; may be NULL */
	ckvo_callback_t callback;  /* as registered */
	void *context;             /* for identification only: may be released once this returns */
} ckvo_observation_info_t;

/*
 * Copies the live observations of `object` (NULL: the observations made
 * with a NULL object, i.e. of every object) into out[0..capacity) and
 * stores their total number in `*count`, which may exceed `capacity`: call
 * again with a larger buffer. Observations removed (also by a deferred
 * removal whose writer has not run yet) or still being registered do not
 * appear.
 *
 * `out` (may be NULL when `capacity` is 0) and `count` are borrowed for
 * the call. The `context` pointers are copied, not retained: one may be
 * released as soon as this returns, so use it to identify an observation,
 * never to reach what it points to.
 *
 * Thread safety: any thread, also inside a callback or a release.
 * Lock-free for dispatch: reads under an epoch read section, like a
 * dispatch, never takes the writer lock, never blocks or delays dispatch,
 * registration or removal, calls no callback and allocates nothing (a
 * thread's first call into the hub may register its reader record, as its
 * first dispatch would). A snapshot: observations added or removed
 * concurrently may or may not appear.
 *
 * Order: by key (in interning order), and per key in registration
 * (dispatch) order.
 * Errors: CKVO_EINVAL (NULL hub or count, or out NULL with capacity > 0),
 * CKVO_ENOMEM (no reader record could be registered for this thread).
 * Cost: what the object has, never what the hub has: one hash lookup,
 * then O(observations of the object + k * ceil(k / 64)) for the k keys
 * observed on it (its keys are sorted 64 at a time, on the stack). For
 * NULL: one load per key interned in the hub, plus the observations.
 */
CKVO_EXPORT ckvo_status_t ckvo_object_observations(ckvo_hub_t *hub, const void *object,
    ckvo_observation_info_t *out, size_t capacity, size_t *count);

/*
 * Called by ckvo_object_observations_visit for each observation listed;
 * `info` is valid until it returns, and so is what `info->context` points
 * to: the visitor runs inside the listing's read section, so no release of
 * a listed observation can run meanwhile. It must not block and must not
 * call into the hub.
 */
typedef void (*ckvo_observation_visitor_t)(const ckvo_observation_info_t *info, void *arg);

/*
 * As ckvo_object_observations, but hands each observation to `visit` (with
 * `arg`) instead of copying it, so that the visitor may read what each
 * context points to (e.g. what kind of observer registered it). Same
 * snapshot, order, thread safety and cost, plus the visitor's; a visitor
 * that blocks delays the releases of everything removed meanwhile, like a
 * callback that blocks. Errors: CKVO_EINVAL (NULL hub or visit), CKVO_ENOMEM.
 */
CKVO_EXPORT ckvo_status_t ckvo_object_observations_visit(ckvo_hub_t *hub, const void *object,
    ckvo_observation_visitor_t visit, void *arg);

/* -------------------------------------------------------------- dispatch */

/*
 * Announces that `change->key` of `change->object` is about to change:
 * delivers a prior notification (`is_prior` set, no new value) to each
 * observation with CKVO_OPTION_PRIOR, in registration order. Optional when
 * nobody asked for prior notifications. Errors: CKVO_EINVAL (NULL hub or
 * change, unknown key, invalid kind or indexes), CKVO_ELOOP.
 */
CKVO_EXPORT ckvo_status_t ckvo_will_change(ckvo_hub_t *hub, const ckvo_change_t *change);

/*
 * Announces that `change->key` of `change->object` has changed: calls every
 * observation registered when the dispatch starts, in registration order,
 * each with the values its options asked for. An observation removed by an
 * earlier callback of the same dispatch is not called; one added during the
 * dispatch gets nothing for this change. Every announcement notifies, also
 * when the new value equals the old one. Lock-free; never blocks. Errors as
 * ckvo_will_change.
 */
CKVO_EXPORT ckvo_status_t ckvo_did_change(ckvo_hub_t *hub, const ckvo_change_t *change);

/*
 * Whether a change of `key` on `object` may reach an observer, so a setter
 * can skip building a change. May answer true when nobody would be called;
 * never answers false while such an observation exists. False for an invalid
 * hub or key. Lock-free, a few loads.
 */
CKVO_EXPORT bool ckvo_has_observers(ckvo_hub_t *hub, const void *object, ckvo_key_t key);

/*
 * Whether `token` names an observation of `hub` that ckvo_unobserve would
 * still remove: false once it was removed (by any ckvo_unobserve* call,
 * including the removal of its object or owner), and for the zero token, a stale token
 * or another hub's, and when this thread cannot get its reader record (out
 * of memory). Lock-free, a read section and a lookup; any thread, also from
 * inside a callback. What it answers may change as soon as it returns.
 */
CKVO_EXPORT bool ckvo_token_is_live(ckvo_hub_t *hub, ckvo_token_t token);

#ifdef __cplusplus
}
#endif

#endif /* CKVO_H */
