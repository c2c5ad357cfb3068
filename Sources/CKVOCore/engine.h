/*
 * engine.h — a hub and the parts above its registry (never installed).
 *
 * The engine's parts, from the bottom up; each uses only those below it:
 *   epoch     epoch.c, epoch.h, reader.h  reader records, scans, the limbo
 *   registry  registration.c, list.c, slotmap.c, table.c, token.c, key tables
 *             (registry.h)             what is observed; hands unlinked
 *                                      observations back as values
 *   runner    release.c                user releases from a queue
 *   session   session.c                lock -> edit -> commit; the one place
 *                                      that moves retired entries on
 *   reclaimer reclaimer.c              drives the session and the runner
 *             when no caller does
 *   API       observe.c, dispatch.c, listing.c, key.c, hub.c
 */
#ifndef CKVO_ENGINE_H
#define CKVO_ENGINE_H

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ckvo.h"
#include "counters.h"
#include "epoch.h"
#include "reader.h"
#include "registry.h"

/*
 * A thread waiting for the release queue up to `ticket` (release.c): a
 * flush, or the runner itself. Follow-ups that a release queues move the
 * tickets of the waiters that wait for that release.
 */
struct ckvo_waiter {
	uint64_t ticket;
	pthread_t thread;             /* its thread: a fork child keeps only its own */
	struct ckvo_waiter *next;
};

/* A flush on its way (session.c): what it detached is not queued yet. */
struct ckvo_flush {
	uint64_t number;
	bool queued;
	struct ckvo_flush *next;
};

struct ckvo_hub {
	struct ckvo_registry registry; /* what is observed (registration.c) */

	/* The writer session (session.c), under `lock` unless noted. */
	pthread_mutex_t lock;         /* serializes writers */
	struct ckvo_limbo limbo;      /* retired, waiting for a grace period (epoch.c) */
	uint64_t retired;             /* observations retired */
	struct ckvo_flush *flushes;   /* flushes between their detach and their queueing */
	uint64_t flush_number;        /* flushes ever begun */
	uint32_t wakeups;             /* futex word the reclaimer sleeps on (atomic, lock-free) */
	bool armed;                   /* the reclaimer will pass again without being woken */

	/* The release queue (release.c), under `lock`. */
	ck_stack_entry_t *queue_head, *queue_tail; /* past their grace period, oldest first */
	uint64_t queued;              /* observations ever queued: the tickets */
	uint64_t taken;               /* ... ever taken from the queue by a runner */
	uint64_t done;                /* ... whose release returned and record went back */
	struct ckvo_waiter *waiters;  /* threads waiting for `done` to reach their ticket */
	bool running;                 /* a thread is this hub's runner */
	pthread_t runner;             /* that thread, while `running` */
	pthread_cond_t ran;           /* broadcast when `done` moves or the runner stops */

	/* The background reclaimer (reclaimer.c), under `lock`. */
	pthread_cond_t wake;          /* broadcast on stop, ending a period's sleep */
	pthread_t reclaimer;
	bool reclaimer_running;       /* the thread exists (joinable) */
	bool reclaimer_stopped;       /* ckvo_hub_destroy began: never start it again */

	bool is_default;

	struct ckvo_hub *hubs_prev, *hubs_next; /* all hubs, for fork */
};

/*
 * The background reclaimer passes this long after it is woken, and again
 * every period while entries stay pending (see reclaimer.c for the bound
 * this gives on how late a release runs).
 */
#define CKVO_RECLAIM_PERIOD_NS 10000000L

/* release.c: the release runner */
bool ckvo__release_init(struct ckvo_hub *hub);
void ckvo__release_enqueue(struct ckvo_hub *hub, struct ckvo_parcels *parcels);
void ckvo__release_run(struct ckvo_hub *hub, uint64_t share);
void ckvo__release_run_all(struct ckvo_hub *hub);
void ckvo__release_wait(struct ckvo_hub *hub, uint64_t ticket);
bool ckvo__release_is_runner(const struct ckvo_hub *hub);
uint64_t ckvo__release_origin(const struct ckvo_hub *hub);
bool ckvo__releasing(void);
void ckvo__release_after_fork_child(struct ckvo_hub *hub);

/* True when the release queue holds releases not yet taken by a runner (under the lock). */
static inline bool
ckvo__release_queued(const struct ckvo_hub *hub)
{
	return hub->queue_head != NULL;
}

/* session.c: the writer session */
void ckvo__session_init(struct ckvo_hub *hub);
void ckvo__session_begin(struct ckvo_hub *hub);
void ckvo__session_commit(struct ckvo_hub *hub, struct ckvo_unlinked *unlinked);
void ckvo__session_commit_quiet(struct ckvo_hub *hub);
void ckvo__session_pass(struct ckvo_hub *hub, struct ckvo_ready *ready);
void ckvo__session_flush(struct ckvo_hub *hub, bool wait_for_releases);
void ckvo__session_settle(struct ckvo_hub *hub);
bool ckvo__session_idle(struct ckvo_hub *hub);
void ckvo__session_after_fork_child(struct ckvo_hub *hub);

/* Whether a pass has work: retired entries, queued releases, or removals readers queued. */
static inline bool
ckvo__session_wanted(struct ckvo_hub *hub)
{
	return ckvo__limbo_pending(&hub->limbo) != 0 || ckvo__release_queued(hub) ||
	    ck_pr_load_ptr(&hub->registry.deferred.head) != NULL;
}

/*
 * Wakes the hub's background reclaimer (reclaimer.c): a counter increment and
 * a futex wake-up, no lock and no allocation, so a reader may call it too.
 */
static inline void
ckvo__reclaimer_wake(struct ckvo_hub *hub)
{
	/* Locked increment: ordered after the caller's push, before the wake. */
	ck_pr_inc_32(&hub->wakeups);
	(void)syscall(SYS_futex, &hub->wakeups, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* reclaimer.c: the background reclaimer */
bool ckvo__reclaimer_init(struct ckvo_hub *hub);
bool ckvo__reclaimer_start(struct ckvo_hub *hub);
bool ckvo__reclaimer_is_current(const struct ckvo_hub *hub);
void ckvo__reclaimer_stop(struct ckvo_hub *hub);
void ckvo__reclaimer_after_fork_child(struct ckvo_hub *hub);

#endif /* CKVO_ENGINE_H */
