/*
 * epoch.h — the epoch part (epoch.c): reader records, scans, and the limbo
 * where retired entries wait for their grace period. It knows nothing of
 * hubs, observations or locks: whoever retires an entry serializes its own
 * calls on its limbo, and gets back, once readers have moved on, memory to
 * free and parcels (values it handed in) to carry on.
 *
 * The read-section fast path is in reader.h.
 */
#ifndef CKVO_EPOCH_H
#define CKVO_EPOCH_H

#include <ck_epoch.h>
#include <ck_pr.h>
#include <ck_stack.h>
#include <stdbool.h>
#include <stddef.h>

#include "asan.h"
#include "tsan.h"

#define CKVO_LIKELY(x) __builtin_expect(!!(x), 1)
#define CKVO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CKVO_CONTAINER(type, member, ptr) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---------------------------------------------------------------- readers */

/* Per-thread reader state, across all hubs. */
struct ckvo_thread {
	ck_epoch_record_t *record; /* this thread's reader record, lazily registered */
	unsigned int depth;        /* dispatches in progress on this thread */
};

extern __thread struct ckvo_thread ckvo__thread __attribute__((tls_model("initial-exec")));
extern ck_epoch_t ckvo__epoch;

/*
 * True when scans order readers with membarrier(2), so a reader entering
 * its section needs no store-load fence (an xchg, several ns on some
 * CPUs). See epoch.c.
 */
extern bool ckvo__asymmetric_fence;

ck_epoch_record_t *ckvo__thread_record_slow(void);
void ckvo__threads_before_fork(void);
void ckvo__threads_after_fork_child(void);

/* What one scan of the reader records found (ckvo__epoch_scan). */
enum ckvo_scan {
	CKVO_SCAN_BUSY,    /* a reader is in a section begun in an older epoch */
	CKVO_SCAN_SETTLED, /* every reader in a section began it in this epoch; advanced */
	CKVO_SCAN_IDLE,    /* no reader is in a section */
};
enum ckvo_scan ckvo__epoch_scan(void);

/*
 * Returns after one IDLE or two SETTLED scans that all began after the
 * call: then no reader can hold anything unpublished before it. Blocks;
 * never call it inside a read section (it would wait for the caller).
 */
void ckvo__grace_wait(void);

/* ------------------------------------------------------------------ limbo */

/* Entries retired between the same two scans (epoch.c). */
struct ckvo_retired {
	ck_stack_entry_t *head, *tail;               /* memory: ck_epoch_entry_t stack entries */
	ck_stack_entry_t *parcels_head, *parcels_tail; /* values handed in, handed back ready */
	unsigned int count;   /* entries, parcels included */
	unsigned int parcels; /* parcels */
};

/*
 * Retired entries on their way through the grace period: fresh (retired
 * since the last scan that saw readers settle), then aged (one more such
 * scan makes them ready). Its owner serializes every call on it.
 */
struct ckvo_limbo {
	struct ckvo_retired fresh, aged;
	unsigned int poll_at; /* ckvo__limbo_due once fresh + aged hold this many */
};

/* A chain of parcels, linked through their ck_stack_entry_t, oldest retirement batch first. */
struct ckvo_parcels {
	ck_stack_entry_t *head, *tail;
	unsigned int count;
};

/*
 * What passed its grace period: memory for ckvo__ready_free (called once
 * every lock is dropped) and parcels for the owner to carry on.
 */
struct ckvo_ready {
	ck_stack_entry_t *memory;
	struct ckvo_parcels parcels;
};

#define CKVO_READY_INITIALIZER { NULL, { NULL, NULL, 0 } }

/* Retired entries accumulate to this many before an owner polls the epoch. */
#define CKVO_RECLAIM_BATCH 64u

/*
 * Retiring a list or map of at least this many bytes makes the next poll
 * due, so that large garbage goes back to the allocator promptly.
 */
#define CKVO_RECLAIM_LARGE 65536u

void ckvo__limbo_init(struct ckvo_limbo *limbo);
/* Retires memory: `function(entry)` frees it once no reader can hold it. */
void ckvo__retire(struct ckvo_limbo *limbo, ck_epoch_entry_t *entry, ck_epoch_cb_t *function);
/* Makes the next poll due when `bytes` (what was retired) is large. */
void ckvo__retire_large(struct ckvo_limbo *limbo, size_t bytes);
/* One scan: moves entries on by what it found (see epoch.c); what is ready goes to `ready`. */
void ckvo__limbo_poll(struct ckvo_limbo *limbo, struct ckvo_ready *ready);
/* Takes every entry out (fresh and aged together), for a caller that waits itself. */
void ckvo__limbo_detach(struct ckvo_limbo *limbo, struct ckvo_retired *detached);
/* Moves entries detached before a grace period that has since passed to `ready`. */
void ckvo__retired_take(struct ckvo_retired *retired, struct ckvo_ready *ready);
/* Frees the ready memory (outside every lock); the parcels are the caller's. */
void ckvo__ready_free(struct ckvo_ready *ready);

/* Retires a value: `link` comes back in a ckvo_ready's parcels once no reader can hold it. */
static inline void
ckvo__retire_parcel(struct ckvo_limbo *limbo, ck_stack_entry_t *link)
{
	struct ckvo_retired *fresh = &limbo->fresh;

	link->next = fresh->parcels_head;
	fresh->parcels_head = link;
	if (fresh->parcels_tail == NULL)
		fresh->parcels_tail = link;
	fresh->parcels++;
	fresh->count++;
}

/* Entries waiting for a grace period. */
static inline unsigned int
ckvo__limbo_pending(const struct ckvo_limbo *limbo)
{
	return limbo->fresh.count + limbo->aged.count;
}

/* Parcels waiting for a grace period. */
static inline unsigned int
ckvo__limbo_parcels(const struct ckvo_limbo *limbo)
{
	return limbo->fresh.parcels + limbo->aged.parcels;
}

/* Whether enough is pending (or something large) for a poll to be worth its scan. */
static inline bool
ckvo__limbo_due(const struct ckvo_limbo *limbo)
{
	return ckvo__limbo_pending(limbo) >= limbo->poll_at;
}

#endif /* CKVO_EPOCH_H */
