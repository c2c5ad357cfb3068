/*
 * release.c — the release runner: user `release` callbacks run from a
 * queue, one runner per hub at a time, iteratively.
 *
 * Invariants
 * ----------
 * - An observation whose grace period has passed is appended to its hub's
 *   queue, under the hub lock, by whoever found it ready (reclaim.c). Its
 *   position in the queue is its ticket: hub->queued counts observations
 *   ever queued, hub->taken those a runner took off the front, hub->done
 *   those whose release has returned and whose record went back to its
 *   page (token.c). The queue is FIFO and only the runner takes from it, so
 *   done <= taken <= queued, and every observation with a ticket at most
 *   `done` has been released.
 * - At most one thread is a hub's runner (hub->running, under the lock).
 *   It takes a chunk off the front, drops the lock, calls the releases,
 *   takes the lock again, gives the records back and advances `done`,
 *   broadcasting hub->ran; then the next chunk, in a loop. So a release
 *   that removes again (even ckvo_unobserve_sync on the next token) only
 *   queues behind itself: the runner reaches it in a later turn of the
 *   same loop, on the same stack frame. Release depth is one.
 * - A thread becomes a runner only outside every read section (never
 *   inside a dispatch or an initial callback) and while it runs no release
 *   itself (ckvo__thread.releasing): a release never runs inside another
 *   callback, nor nested inside another release. The one exception is
 *   ckvo_hub_destroy called from a release of another hub: it must release
 *   everything of the hub it destroys, so it runs that hub's queue there.
 *   No release runs under a hub lock.
 * - A runner runs up to a ticket: what was queued when it began, plus what
 *   the releases it runs queue on the same hub (their own follow-ups). It
 *   never takes over other threads' later work indefinitely: what is left
 *   queued when it stops is the background reclaimer's (reclaimer.c), armed
 *   by the unlock that follows.
 * - A flush (reclaim.c) takes its ticket after queueing what it detached:
 *   it waits until `done` reaches that ticket and no further. While another
 *   thread is the runner it sleeps on hub->ran; when no thread is, it runs
 *   the queue itself up to its ticket. It never waits for work queued
 *   after it began.
 * - Nothing is held privately across a callback the engine does not
 *   control except a runner's current chunk: a thread that exits inside an
 *   initial callback or a dispatch leaves the queue as it was, and the
 *   background reclaimer runs it.
 */
#include <stdlib.h>

#include "internal.h"

/* Observations a runner takes off the queue at once: one lock per chunk to give records back. */
#define CKVO_RELEASE_CHUNK 64u

bool
ckvo__release_init(struct ckvo_hub *hub)
{
	return pthread_cond_init(&hub->ran, NULL) == 0;
}

void
ckvo__release_enqueue(struct ckvo_hub *hub, ck_stack_entry_t *head, ck_stack_entry_t *tail,
    unsigned int count)
{
	if (head == NULL)
		return;
	tail->next = NULL;
	if (hub->queue_tail != NULL)
		hub->queue_tail->next = head;
	else
		hub->queue_head = head;
	hub->queue_tail = tail;
	hub->queued += count;
	if (ckvo__thread.running == hub)
		ckvo__thread.queued_more = true;
}

/* Whether this thread may run releases now: outside every callback and release. */
static bool
may_run(void)
{
	return ckvo__thread.releasing == 0 && !ckvo__in_read_section();
}

/*
 * With the lock held and no runner: runs queued releases, as the hub's
 * runner, until `done` reaches `ticket` (or the queue is empty). Drops the
 * lock around each chunk's releases; returns with it held.
 */
static void
run(struct ckvo_hub *hub, uint64_t ticket)
{
	struct ckvo_hub *outer = ckvo__thread.running;
	bool outer_more = ckvo__thread.queued_more;

	hub->running = true;
	hub->runner = pthread_self();
	ckvo__thread.running = hub;
	ckvo__thread.queued_more = false;
	while (hub->done < ticket && hub->queue_head != NULL) {
		ck_stack_entry_t *chunk = hub->queue_head, *last = chunk, *cursor, *next;
		uint64_t want = ticket - hub->taken;
		unsigned int count = 1;

		if (want > CKVO_RELEASE_CHUNK)
			want = CKVO_RELEASE_CHUNK;
		while (count < want && last->next != NULL) {
			last = last->next;
			count++;
		}
		hub->queue_head = last->next;
		if (hub->queue_head == NULL)
			hub->queue_tail = NULL;
		last->next = NULL;
		hub->taken += count;

		ckvo__thread.writing = NULL;
		(void)pthread_mutex_unlock(&hub->lock);
		ckvo__thread.releasing++;
		for (cursor = chunk; cursor != NULL; cursor = cursor->next) {
			struct ckvo_observation *obs =
			    CKVO_CONTAINER(struct ckvo_observation, link, cursor);

			if (obs->release != NULL)
				obs->release(obs->context);
		}
		ckvo__thread.releasing--;
		ckvo__hub_lock(hub);
		for (cursor = chunk; cursor != NULL; cursor = next) {
			next = cursor->next;
			ckvo__token_return(hub, CKVO_CONTAINER(struct ckvo_observation, link, cursor));
		}
		hub->done += count;
		(void)pthread_cond_broadcast(&hub->ran);
		/* Follow-ups its releases queued on this hub are this runner's too. */
		if (ckvo__thread.queued_more) {
			ckvo__thread.queued_more = false;
			if (hub->queued > ticket)
				ticket = hub->queued;
		}
	}
	hub->running = false;
	ckvo__thread.running = outer;
	ckvo__thread.queued_more = outer_more;
	(void)pthread_cond_broadcast(&hub->ran);
}

void
ckvo__release_run(struct ckvo_hub *hub)
{
	if (hub->queue_head == NULL || hub->running || !may_run())
		return;
	run(hub, hub->queued);
}

void
ckvo__release_wait(struct ckvo_hub *hub, uint64_t ticket)
{
	while (hub->done < ticket) {
		if (!hub->running) {
			run(hub, ticket);
			continue;
		}
		ckvo__thread.writing = NULL;
		(void)pthread_cond_wait(&hub->ran, &hub->lock);
		ckvo__thread.writing = hub;
	}
}

bool
ckvo__release_is_runner(const struct ckvo_hub *hub)
{
	return hub->running && pthread_equal(hub->runner, pthread_self());
}

void
ckvo__release_after_fork_child(struct ckvo_hub *hub)
{
	/* A waiter or runner of the parent may be listed in the condition: start it afresh. */
	(void)ckvo__release_init(hub);
	if (hub->running && !pthread_equal(hub->runner, pthread_self())) {
		/* The chunk the vanished runner held is lost with it: count it as done. */
		hub->done = hub->taken;
		hub->running = false;
	}
}
