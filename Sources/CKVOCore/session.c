/*
 * session.c — the writer session: lock -> edit -> commit. The stop of an
 * observation's life after it is unlinked (registration.c -> here), through
 * its grace period (epoch.c), to the release queue (release.c).
 *
 * Invariants it alone keeps
 * -------------------------
 * - Every change to a hub's registry happens between ckvo__session_begin
 *   and ckvo__session_commit (or its variants), under hub->lock, one writer
 *   at a time. Beginning carries out the removals readers queued
 *   (ckvo_unobserve_deferred): the registry drains them and hands them back.
 * - This is the one place that retires observations and moves retired
 *   entries on. Observations the registry hands back (the drain's and the
 *   caller's edit's) are retired here, as parcels of the hub's limbo
 *   (epoch.c), each exactly once; memory the registry replaced is already
 *   in that limbo. Only a poll here (commit, the reclaimer's pass) or a
 *   flush here moves the limbo on; ready observations go straight to the
 *   release queue (release.c), ready memory is freed after the lock is
 *   dropped.
 * - An observation removed from inside a release of the same hub carries
 *   that release's ticket as its origin (release.c), set here as it is
 *   retired, so whoever waits for the release also waits for it. Drained
 *   removals keep origin 0.
 * - A commit polls only once CKVO_RECLAIM_BATCH entries are pending (a
 *   scan with membarrier costs microseconds: churn pays it once per batch),
 *   or when a list or map of CKVO_RECLAIM_LARGE bytes or more was retired
 *   (its growth paid for the scan). Then, if it may, it runs its share of
 *   the queue as the runner, or is slowed while the backlog is over its
 *   bound (release.c). Whatever it leaves pending or queued, it arms
 *   the hub's background reclaimer (reclaimer.c) by bumping hub->wakeups
 *   and waking the futex on it: the reclaimer passes within
 *   CKVO_RECLAIM_PERIOD_NS, so a release never waits for an unrelated call
 *   into the library. Armed means "will pass again without being woken": a
 *   burst of removals costs one wake-up, steady churn none.
 * - The session settles the registry's spare token pages (token.c) once
 *   what a flush waited for is released, and when the background reclaimer
 *   goes idle: the spares kept for records in flight go back then.
 * - pending_releases = retired - done: observations removed whose release
 *   has not returned yet (retired, detached by a flush, or queued); all
 *   counters start at ckvo__counter_start(0), so the difference stays right
 *   across their wrap. In a fork child, where the chunk a vanished runner
 *   held and what a vanished flush detached are lost, `retired` is
 *   recounted from what remains (the forking thread's own chunk included).
 * - A flush (ckvo__session_flush: flush, strict unobserve, destroy) first
 *   detaches every retired entry under the lock, then, without the lock,
 *   waits a grace period (ckvo__grace_wait: one IDLE or two SETTLED scans,
 *   every scan after the detach), then queues the observations and waits
 *   for the queue up to their ticket (release.c): never for work queued
 *   after the call. A flush runs with cancellation disabled, so a thread
 *   never dies holding the lock or with its record on hub->flushes.
 *   Callers refuse inside a read section, where the scans
 *   would wait for the caller itself. A strict unobserve called from a
 *   release waits for the grace period only: its release is queued behind
 *   the running one.
 */
#include "engine.h"

void
ckvo__session_init(struct ckvo_hub *hub)
{
	ckvo__limbo_init(&hub->limbo);
	hub->retired = hub->flush_number = ckvo__counter_start(0);
}

/* Retires the observations on `unlinked`, as release `origin`'s follow-ups when not 0. */
static void
retire_unlinked(struct ckvo_hub *hub, struct ckvo_unlinked *unlinked, uint64_t origin)
{
	ck_stack_entry_t *cursor = unlinked->head, *next;

	for (; cursor != NULL; cursor = next) {
		struct ckvo_observation *obs = CKVO_CONTAINER(struct ckvo_observation, link, cursor);

		next = cursor->next;
		/* After the REMOVED state, as in observation_unlink (registration.c). */
		if (origin != 0)
			ck_pr_store_64(&obs->origin, origin);
		hub->retired++;
		ckvo__retire_parcel(&hub->limbo, cursor);
	}
	unlinked->head = unlinked->tail = NULL;
	unlinked->count = 0;
}

/* Carries out the removals readers queued (under the lock). Out of line: usually none. */
static __attribute__((noinline)) void
drain_slow(struct ckvo_hub *hub)
{
	struct ckvo_unlinked drained = CKVO_UNLINKED_INITIALIZER;

	ckvo__registry_drain(&hub->registry, &drained);
	retire_unlinked(hub, &drained, 0);
}

static inline void
drain(struct ckvo_hub *hub)
{
	/* Usually empty: a plain load spares every session an atomic exchange. */
	if (CKVO_UNLIKELY(ck_pr_load_ptr(&hub->registry.deferred.head) != NULL))
		drain_slow(hub);
}

void
ckvo__session_begin(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&hub->lock);
	drain(hub);
}

/* One scan: what is ready goes to the release queue (observations) and to `ready` (memory). */
static __attribute__((noinline)) void
poll(struct ckvo_hub *hub, struct ckvo_ready *ready)
{
	ckvo__limbo_poll(&hub->limbo, ready);
	ckvo__release_enqueue(hub, &ready->parcels);
}

/* Drops the lock, leaving what is pending or queued to the background reclaimer. */
static inline __attribute__((always_inline)) void
leave(struct ckvo_hub *hub)
{
	if (!hub->armed && (ckvo__limbo_pending(&hub->limbo) != 0 || ckvo__release_queued(hub))) {
		hub->armed = true;
		ckvo__reclaimer_wake(hub);
	}
	(void)pthread_mutex_unlock(&hub->lock);
}

/* The end of a commit that polls: out of line, once per CKVO_RECLAIM_BATCH retirements. */
static __attribute__((noinline)) void
commit_polling(struct ckvo_hub *hub, unsigned int share)
{
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;

	poll(hub, &ready);
	if (ready.memory != NULL) {
		/*
		 * Freed before a release runs here: a release may end this thread
		 * (pthread_exit), and nothing would free it then. Once per batch.
		 */
		(void)pthread_mutex_unlock(&hub->lock);
		ckvo__ready_free(&ready);
		(void)pthread_mutex_lock(&hub->lock);
	}
	ckvo__release_run(hub, share);
	leave(hub);
}

void
ckvo__session_commit(struct ckvo_hub *hub, struct ckvo_unlinked *unlinked)
{
	unsigned int share = 0;

	if (unlinked != NULL && unlinked->head != NULL) {
		share = unlinked->count;
		/* Only the hub's runner, inside a release, removes follow-ups (release.c). */
		retire_unlinked(hub, unlinked, hub->running ? ckvo__release_origin(hub) : 0);
	}
	if (CKVO_UNLIKELY(ckvo__limbo_due(&hub->limbo))) {
		commit_polling(hub, share);
		return;
	}
	/* Runs its share of the queue here unless inside a callback or a release (release.c). */
	if (ckvo__release_queued(hub))
		ckvo__release_run(hub, share);
	leave(hub);
}

void
ckvo__session_commit_quiet(struct ckvo_hub *hub)
{
	leave(hub);
}

void
ckvo__session_pass(struct ckvo_hub *hub, struct ckvo_ready *ready)
{
	drain(hub);
	if (ckvo__limbo_pending(&hub->limbo) != 0)
		poll(hub, ready);
}

void
ckvo__session_flush(struct ckvo_hub *hub, bool wait_for_releases)
{
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;
	struct ckvo_retired detached;
	struct ckvo_flush self = { 0, false, NULL }, **link;
	uint64_t ticket;
	int state;

	/* Its waits are not cancellation points: a cancel acts after it returns. */
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	ckvo__session_begin(hub);
	self.number = hub->flush_number++;
	self.next = hub->flushes;
	hub->flushes = &self;
	/* Everything retired so far; queued after a grace period, still pending until released. */
	ckvo__limbo_detach(&hub->limbo, &detached);
	(void)pthread_mutex_unlock(&hub->lock);

	/* Wait, without the lock, until no reader can hold what was detached. */
	ckvo__grace_wait();

	ckvo__session_begin(hub);
	ckvo__retired_take(&detached, &ready);
	ckvo__release_enqueue(hub, &ready.parcels);
	self.queued = true;
	(void)pthread_cond_broadcast(&hub->ran);
	/*
	 * What flushes begun before this one detached was removed before this
	 * call too: wait until they have queued it (a grace period of theirs,
	 * never a release), so that the ticket covers it.
	 */
	for (;;) {
		struct ckvo_flush *earlier = hub->flushes;

		while (earlier != NULL &&
		    (earlier->queued || !ckvo__counter_before(earlier->number, self.number)))
			earlier = earlier->next;
		if (earlier == NULL)
			break;
		(void)pthread_cond_wait(&hub->ran, &hub->lock);
	}
	for (link = &hub->flushes; *link != &self; link = &(*link)->next)
		;
	*link = self.next;
	/* Every observation removed before the call is queued at or before this ticket. */
	ticket = hub->queued;
	if (wait_for_releases) {
		/* Freed first: a release may end this thread (release.c). */
		(void)pthread_mutex_unlock(&hub->lock);
		ckvo__ready_free(&ready);
		(void)pthread_mutex_lock(&hub->lock);
		ckvo__release_wait(hub, ticket);
		ckvo__session_settle(hub);
	}
	leave(hub);
	ckvo__ready_free(&ready);
	(void)pthread_setcancelstate(state, NULL);
}

void
ckvo__session_settle(struct ckvo_hub *hub)
{
	/* Spare token pages follow the records in flight since the last settle (token.c). */
	ckvo__tokens_settle(&hub->registry.tokens, &hub->registry.ledger, hub->registry.observations);
}

bool
ckvo__session_idle(struct ckvo_hub *hub)
{
	return hub->registry.observations == 0 && !ckvo__session_wanted(hub) && !hub->running;
}

void
ckvo__session_after_fork_child(struct ckvo_hub *hub)
{
	ckvo__release_after_fork_child(hub);
	/*
	 * Flushes of vanished threads never queue what they detached (this
	 * thread runs no user code inside a flush, so none of them is its own).
	 */
	hub->flushes = NULL;
	/* Only what is retired or queued here (this thread's chunk included) can still be released. */
	hub->retired = hub->queued + ckvo__limbo_parcels(&hub->limbo);
}
