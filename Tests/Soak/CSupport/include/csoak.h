/*
 * csoak.h — C helpers for the soak test (Tests/Soak).
 *
 * The soak's C-API phase registers observations whose context is a
 * csoak_obs_t: its callback checks, on the calling thread and at the moment
 * of the call, what can only be checked there (a call after the observation's
 * release, after its strict removal, after a removal that returned before the
 * dispatch started, values its options did not ask for, a delivery outside
 * any announcing thread), and notes its id in the calling thread's dispatch
 * trace so the announcing thread can check afterwards who was called.
 * Everything is stamped with one process-wide event clock.
 *
 * Prefix: csoak_. One concept per .c file; the section names below are the
 * file names. Unless a comment says otherwise every function may be called
 * from any thread.
 */
#ifndef CSOAK_H
#define CSOAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ckvo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------- backlog.c */

/*
 * ckvo_unobserve, timed: the longest call so far is kept, for the report (a
 * removal that inherits other threads' release work shows here; never a
 * threshold).
 */
ckvo_status_t csoak_unobserve_timed(ckvo_hub_t *hub, ckvo_token_t token);
/* The longest csoak_unobserve_timed call so far, in nanoseconds. */
uint64_t csoak_unobserve_slowest_ns(void);

/* ------------------------------------------------------------- clock.c */

/*
 * Ticks the process-wide event clock and returns the new time (never 0).
 * Sequentially consistent: ticks form one total order that agrees with
 * happens-before, so "stamped before" means the same on every thread.
 */
uint64_t csoak_clock_next(void);

/* -------------------------------------------------------- violations.c */

/* What a callback or release can find wrong at the moment it runs. */
typedef enum csoak_violation {
	CSOAK_CALL_AFTER_RELEASE,         /* callback after its context was released */
	CSOAK_RELEASED_TWICE,             /* release called a second time */
	CSOAK_RELEASED_WHILE_REGISTERED,  /* released though nothing removed it */
	CSOAK_CALL_AFTER_STRICT_REMOVAL,  /* callback running or entered after ckvo_unobserve_sync returned */
	CSOAK_CALL_AFTER_REMOVAL,         /* dispatch started after a removal of it returned */
	CSOAK_CALL_AFTER_OBJECT_REMOVAL,  /* ... after ckvo_unobserve_object of its object returned */
	CSOAK_CALL_AFTER_OWNER_REMOVAL,   /* ... after ckvo_unobserve_owner of its owner returned */
	CSOAK_CALL_OUTSIDE_DISPATCH,      /* a change delivered on a thread that is not announcing */
	CSOAK_WRONG_TARGET,               /* another object's or key's change */
	CSOAK_WRONG_VALUES,               /* values, indexes or flags other than its options ask for */
	CSOAK_BAD_INITIAL,                /* initial notification wrong, or not exactly one */
	CSOAK_SELF_REMOVAL_FAILED,        /* unobserving itself from its callback failed */
	CSOAK_TRACE_OVERFLOW,             /* more calls in one dispatch than observations exist */
	CSOAK_VIOLATION_COUNT
} csoak_violation_t;

/* Records one violation by the observation `id`. */
void csoak_violation_note(csoak_violation_t kind, uint64_t id);
/* Violations of `kind` so far. */
uint64_t csoak_violation_count(csoak_violation_t kind);
/* A short description of `kind`. Static storage. */
const char *csoak_violation_name(csoak_violation_t kind);
/* The id of the observation of the first violation of `kind` (0: none). */
uint64_t csoak_violation_first_id(csoak_violation_t kind);

/* ---------------------------------------------------------- removals.c */

/*
 * ckvo_unobserve_object and ckvo_unobserve_owner of the shared objects and
 * owners, made by one remover thread at a time and numbered per target (1, 2,
 * ...). A removal is "marked" before its call starts and "done", with the
 * clock time at which the call returned, after it returns. From these an
 * observation can tell whether such a removal may have removed it, and a
 * callback whether one certainly had before its dispatch started.
 */
typedef enum csoak_target {
	CSOAK_TARGET_OBJECT,
	CSOAK_TARGET_OWNER,
} csoak_target_t;

/* Shared objects and owners (indexes 0..CSOAK_TARGETS-1). */
#define CSOAK_TARGETS 3

/* Marks the next removal of target `index`; returns its number. */
uint64_t csoak_removal_begin(csoak_target_t target, unsigned index);
/* Marks removal `number` done; its call returned at clock time `returned_at`. */
void csoak_removal_end(csoak_target_t target, unsigned index, uint64_t number, uint64_t returned_at);
/* Removals of target `index` marked so far. */
uint64_t csoak_removals_marked(csoak_target_t target, unsigned index);
/* Removals of target `index` done so far. */
uint64_t csoak_removals_done(csoak_target_t target, unsigned index);
/*
 * True only if removal `number` of target `index` returned before clock time
 * `clock` (false when unknown: not done yet, or its record was overwritten by
 * a later removal that returned after `clock`).
 */
bool csoak_removal_returned_before(csoak_target_t target, unsigned index, uint64_t number,
    uint64_t clock);

/* --------------------------------------------------------- dispatch.c */

/* One call noted in a dispatch trace. */
typedef struct csoak_call {
	uint64_t id;                  /* the observation called */
	uint64_t registration_start;  /* clock before its ckvo_observe */
	uint64_t registered;          /* clock after it returned; 0 if not known yet */
} csoak_call_t;

/* What one announcement did. */
typedef struct csoak_dispatch {
	uint64_t started;      /* clock just before the ckvo call */
	uint64_t ended;        /* clock just after it returned */
	ckvo_status_t status;  /* what the ckvo call returned */
	size_t calls;          /* calls noted; only the first `capacity` are stored */
} csoak_dispatch_t;

/*
 * Announces `change` on `hub` (ckvo_will_change when `prior`, else
 * ckvo_did_change) with this thread's trace active: every csoak callback the
 * dispatch makes is stored in `calls` (up to `capacity`) and checked against
 * `change`. Not re-entrant: callbacks must not announce.
 */
void csoak_announce(ckvo_hub_t *hub, const ckvo_change_t *change, bool prior, csoak_call_t *calls,
    size_t capacity, csoak_dispatch_t *result);

/*
 * A trace for code that announces through another layer (the Swift setters):
 * between begin and end, csoak_trace_note appends entries (whatever the
 * callers note, e.g. ids) to `entries` on this thread. end returns how many
 * were noted (more than `capacity` means some were lost).
 */
void csoak_trace_begin(uint64_t *entries, size_t capacity);
/* Notes `entry`; false when no trace is active on this thread. */
bool csoak_trace_note(uint64_t entry);
size_t csoak_trace_end(void);

/* ------------------------------------------------------ observation.c */

/* How an observation removes itself from its own callback, if it does. */
typedef enum csoak_self_removal {
	CSOAK_SELF_NONE,
	CSOAK_SELF_UNOBSERVE,     /* ckvo_unobserve from its first traced call */
	CSOAK_SELF_DEFERRED,      /* ckvo_unobserve_deferred from its first traced call */
	CSOAK_SELF_IN_INITIAL,    /* ckvo_unobserve from its initial notification */
} csoak_self_removal_t;

/* How the owning thread removes an observation. */
typedef enum csoak_removal {
	CSOAK_REMOVE_PLAIN,     /* ckvo_unobserve */
	CSOAK_REMOVE_SYNC,      /* ckvo_unobserve_sync */
	CSOAK_REMOVE_DEFERRED,  /* ckvo_unobserve_deferred */
} csoak_removal_t;

/* What one observation is. `object_index`/`owner_index` name the shared
 * object and owner (-1: NULL, or a private one no remover touches). */
typedef struct csoak_obs_spec {
	uint64_t id;  /* unique, nonzero */
	ckvo_hub_t *hub;
	const void *object;
	int object_index;
	const void *owner;
	int owner_index;
	ckvo_key_t key;
	ckvo_options_t options;
	csoak_self_removal_t self_removal;
} csoak_obs_spec_t;

/* An observation context; destroy it only once its release ran. */
typedef struct csoak_obs csoak_obs_t;

/* What a registration saw. */
typedef struct csoak_registration {
	ckvo_status_t status;
	ckvo_token_t token;
	uint64_t registered;  /* clock after ckvo_observe returned */
	/* Object/owner removals marked before the call: a later count means one
	 * may have removed it. Only meaningful when `clean`. */
	uint64_t object_removals;
	uint64_t owner_removals;
	/* No removal of its object or owner was in flight when it registered. */
	bool clean;
} csoak_registration_t;

csoak_obs_t *csoak_obs_create(const csoak_obs_spec_t *spec);
void csoak_obs_destroy(csoak_obs_t *obs);

/*
 * Registers `obs` (ckvo_observe with the csoak callback and release) and
 * stamps the call. On success its token is published for its own callback.
 */
void csoak_obs_register(csoak_obs_t *obs, csoak_registration_t *result);
/*
 * Registers `obs` again with the same owner, object, key, callback and
 * context: the hub must answer CKVO_EEXIST and the existing token.
 */
ckvo_status_t csoak_obs_register_again(csoak_obs_t *obs, ckvo_token_t *token);

/*
 * Removes `obs` by `token`, the way `how` says, and stamps it: `removing` is
 * set before the call (so a release or a "not found" is explained), and after
 * a successful call the clock time it returned (and, for CKVO_REMOVE_SYNC,
 * that no callback may run any more). Returns the ckvo status.
 */
ckvo_status_t csoak_obs_remove(csoak_obs_t *obs, ckvo_token_t token, csoak_removal_t how);

/*
 * Whether something other than its owner's removal may have removed `obs`:
 * its own callback did, a removal of its object or owner was marked after it
 * began registering, or one was in flight then.
 */
bool csoak_obs_may_be_gone(const csoak_obs_t *obs);

uint64_t csoak_obs_id(const csoak_obs_t *obs);
uint64_t csoak_obs_calls(const csoak_obs_t *obs);         /* post-change calls */
uint64_t csoak_obs_prior_calls(const csoak_obs_t *obs);   /* prior calls */
uint64_t csoak_obs_initial_calls(const csoak_obs_t *obs); /* initial notifications */
uint64_t csoak_obs_releases(const csoak_obs_t *obs);

/* The key getter for CKVO_OPTION_INITIAL: every object's current value is
 * the one static marker, which the callback recognises. */
const void *csoak_initial_getter(const void *object, ckvo_key_t key);

/* ----------------------------------------------------------- memory.c */

/* Resident set size of this process, in bytes (/proc/self/statm); 0 if unknown. */
size_t csoak_resident_bytes(void);
/* Returns free heap memory to the system where the allocator can (malloc_trim). */
void csoak_trim_heap(void);
/* True when built with a sanitizer, whose shadow memory makes RSS meaningless. */
bool csoak_sanitized(void);

#ifdef __cplusplus
}
#endif

#endif /* CSOAK_H */
