/*
 * reclaim.c — the writer protocol and safe memory reclamation.
 *
 * Invariants
 * ----------
 * - Every writer operation runs between ckvo__hub_lock and
 *   ckvo__hub_unlock. Taking the lock first carries out the removals that
 *   readers queued (ckvo_unobserve_deferred); releasing it may poll.
 * - Memory a reader may reach (observations, lists, slots, old ck_hs maps)
 *   is never freed directly. The lock holder makes it unreachable from
 *   everything published, then retires it: pushes it on hub->fresh. Retired
 *   entries move fresh -> aged -> ready only in ckvo__reclaim_poll, under the
 *   lock, by what one scan of the reader records (ckvo__epoch_scan) found:
 *     IDLE     no reader in a section: fresh and aged are ready;
 *     SETTLED  every reader in a section entered in the current epoch (the
 *              scan then advanced it): aged is ready, fresh becomes aged;
 *     BUSY     nothing moves.
 * - Why a ready entry is unreachable. Every scan is preceded by its own
 *   barrier (thread.c), issued after the entry's retirement (the lock
 *   orders the retiring writer before the poll). A reader whose section
 *   began before that barrier took effect on its CPU is visible to the scan,
 *   active, with the epoch it entered in; a reader whose section began after
 *   it sees the entry unpublished and cannot reach it. IDLE: no reader is
 *   visible, so none can hold the entry. Two SETTLED scans S1, S2 after the
 *   retirement (fresh at S1, aged at S2): every reader holding the entry was
 *   visible at S1 with S1's epoch e. (S1 may read a stale epoch from the
 *   record of a reader that has set `active` but not yet stored the epoch it
 *   loaded. If that epoch is e or older, S2 below still finds it. If newer,
 *   the reader loaded it from an advance made after S1 read e, so after the
 *   entry was unpublished everywhere, and its section's loads come after
 *   that load (ckvo__read_begin): it cannot hold the entry.) S1 left the
 *   epoch at e + 1 or later, and
 *   S2, which comes later under the same lock, read a newer epoch, so such a
 *   reader, still in the same section, would have made S2 BUSY. Nothing here
 *   relies on a scan, a barrier or an epoch advance made by another thread
 *   before the retirement, which ck_epoch_poll_deferred and
 *   ck_epoch_synchronize do (they free by epoch number; an advance made by a
 *   scan whose barrier preceded the retirement could free an entry under a
 *   reader whose section-entry store was still in its store buffer).
 * - Ready memory (lists, slots, maps, token pages) is freed by the thread
 *   that took it, after it drops the lock. Ready observations are not
 *   released here: they are appended to the hub's release queue, and the
 *   release runner (release.c) calls `release(context)` — outside every
 *   engine lock, every read section and every other release — exactly once
 *   per observation, then gives the record back to its page.
 * - A writer's unlock polls only once CKVO_RECLAIM_BATCH entries are
 *   pending (a scan with membarrier costs microseconds: churn pays it once
 *   per batch), or when a list or map of CKVO_RECLAIM_LARGE bytes or more
 *   was retired (its growth paid for the scan). Then, if it may, it runs
 *   the queue as the runner (release.c). Whatever it leaves pending or
 *   queued, the hub's background reclaimer (reclaimer.c) polls and runs
 *   within CKVO_RECLAIM_PERIOD_NS, so a release never waits for an
 *   unrelated call into the library.
 * - pending_releases = retired - done: observations removed whose release
 *   has not returned yet (retired, detached by a flush, or queued). In a
 *   fork child, where the chunk a vanished runner held and what a vanished
 *   flush detached are lost, `retired` is recounted from what remains.
 * - Observation records live in the token pages (token.c); records come
 *   back for reuse, with a new generation, once their releases have run:
 *   observe + unobserve churn costs no malloc and no free. A page whose
 *   records have all come back is freed after a grace period. Records not
 *   in use are poisoned for AddressSanitizer, so a use after release is
 *   still caught.
 * - Blocking waits (flush, strict unobserve, destroy) first detach every
 *   retired entry under the lock, then, without the lock, scan until one
 *   IDLE or two SETTLED scans (the same rule as above, every scan after the
 *   detach), then queue the observations and wait for the queue up to their
 *   ticket (release.c): never for work queued after the call. They refuse
 *   inside a read section, where the scans would wait for the caller
 *   itself. A strict unobserve called from a release waits for the grace
 *   period only: its release is queued behind the running one.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

void
ckvo__hub_lock(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&hub->lock);
	ckvo__thread.writing = hub;
	ckvo__drain_deferred(hub);
}

unsigned int
ckvo__reclaim_pending(const struct ckvo_hub *hub)
{
	return hub->fresh.count + hub->aged.count;
}

static void
retired_push(ck_stack_entry_t **head, ck_stack_entry_t **tail, ck_stack_entry_t *link)
{
	link->next = *head;
	*head = link;
	if (*tail == NULL)
		*tail = link;
}

/* Moves every entry of `list` onto `ready`; they are past their grace period. */
static void
retired_take(struct ckvo_hub *hub, struct ckvo_retired *list, struct ckvo_ready *ready)
{
	if (list->head != NULL) {
		list->tail->next = ready->entries;
		ready->entries = list->head;
	}
	ckvo__release_enqueue(hub, list->observations_head, list->observations_tail,
	    list->observations);
	*list = (struct ckvo_retired){ NULL, NULL, NULL, NULL, 0, 0 };
}

void
ckvo__reclaim_poll(struct ckvo_hub *hub, struct ckvo_ready *ready)
{
	switch (ckvo__epoch_scan()) {
	case CKVO_SCAN_IDLE:
		retired_take(hub, &hub->aged, ready);
		retired_take(hub, &hub->fresh, ready);
		break;
	case CKVO_SCAN_SETTLED:
		retired_take(hub, &hub->aged, ready);
		hub->aged = hub->fresh;
		hub->fresh = (struct ckvo_retired){ NULL, NULL, NULL, NULL, 0, 0 };
		break;
	case CKVO_SCAN_BUSY:
		break;
	}
	hub->poll_at = ckvo__reclaim_pending(hub) + CKVO_RECLAIM_BATCH;
}

/* Drops the lock, leaving what is pending or queued to the background reclaimer. */
static void
unlock_leaving_pending(struct ckvo_hub *hub)
{
	if (!hub->reclaimer_armed &&
	    (ckvo__reclaim_pending(hub) != 0 || ckvo__release_queued(hub)))
		ckvo__reclaimer_arm(hub);
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);
}

void
ckvo__hub_unlock(struct ckvo_hub *hub)
{
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;

	if (ckvo__reclaim_pending(hub) >= hub->poll_at)
		ckvo__reclaim_poll(hub, &ready);
	/* Runs the queue here unless inside a callback or a release (release.c). */
	ckvo__release_run(hub);
	unlock_leaving_pending(hub);
	ckvo__reclaim_finish(&ready);
}

void
ckvo__hub_unlock_quiet(struct ckvo_hub *hub)
{
	unlock_leaving_pending(hub);
}

static void
list_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_list, retire, entry));
}

static void
slot_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_slot, retire, entry));
}

void
ckvo__reclaim_finish(struct ckvo_ready *ready)
{
	ck_stack_entry_t *cursor, *next;

	if (ready->entries == NULL)
		return;

	/* Pairs with every reader's release when it left its section. */
	CKVO_TSAN_ACQUIRE(&ckvo__epoch);
	for (cursor = ready->entries; cursor != NULL; cursor = next) {
		ck_epoch_entry_t *entry =
		    CKVO_CONTAINER(ck_epoch_entry_t, stack_entry, cursor);

		next = CK_STACK_NEXT(cursor);
		entry->function(entry);
	}
	ready->entries = NULL;
}

/*
 * Returns after one IDLE or two SETTLED scans that all began after the
 * call: then no reader can hold anything retired before it (see the top of
 * this file). Backs off while readers are busy: each scan may cost a
 * membarrier, which interrupts every CPU running this process.
 */
static void
grace_wait(void)
{
	unsigned int settled = 0, busy = 0;

	for (;;) {
		switch (ckvo__epoch_scan()) {
		case CKVO_SCAN_IDLE:
			return;
		case CKVO_SCAN_SETTLED:
			if (++settled == 2)
				return;
			break;
		case CKVO_SCAN_BUSY:
			if (++busy <= 16) {
				(void)sched_yield();
			} else {
				long us = busy < 26 ? 1L << (busy - 16) : 1000L;
				struct timespec pause = { 0, us * 1000L };

				(void)nanosleep(&pause, NULL);
			}
			break;
		}
	}
}

void
ckvo__reclaim_flush(struct ckvo_hub *hub, bool wait_for_releases)
{
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;
	struct ckvo_retired aged, fresh;
	struct ckvo_flush self = { 0, false, NULL }, **link;
	uint64_t ticket;

	ckvo__hub_lock(hub);
	self.number = hub->flush_number++;
	self.next = hub->flushes;
	hub->flushes = &self;
	/* Everything retired so far; queued after a grace period, still pending until released. */
	aged = hub->aged;
	fresh = hub->fresh;
	hub->aged = hub->fresh = (struct ckvo_retired){ NULL, NULL, NULL, NULL, 0, 0 };
	hub->poll_at = CKVO_RECLAIM_BATCH;
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);

	/* Wait, without the lock, until no reader can hold what was detached. */
	grace_wait();

	ckvo__hub_lock(hub);
	retired_take(hub, &aged, &ready);
	retired_take(hub, &fresh, &ready);
	self.queued = true;
	(void)pthread_cond_broadcast(&hub->ran);
	/*
	 * What flushes begun before this one detached was removed before this
	 * call too: wait until they have queued it (a grace period of theirs,
	 * never a release), so that the ticket covers it.
	 */
	for (;;) {
		struct ckvo_flush *earlier = hub->flushes;

		while (earlier != NULL && (earlier->queued || earlier->number >= self.number))
			earlier = earlier->next;
		if (earlier == NULL)
			break;
		ckvo__thread.writing = NULL;
		(void)pthread_cond_wait(&hub->ran, &hub->lock);
		ckvo__thread.writing = hub;
	}
	for (link = &hub->flushes; *link != &self; link = &(*link)->next)
		;
	*link = self.next;
	/* Every observation removed before the call is queued at or before this ticket. */
	ticket = hub->queued;
	if (wait_for_releases)
		ckvo__release_wait(hub, ticket);
	unlock_leaving_pending(hub);
	ckvo__reclaim_finish(&ready);
}

void
ckvo__reclaim_after_fork_child(struct ckvo_hub *hub)
{
	ckvo__release_after_fork_child(hub);
	/* Flushes of vanished threads never queue what they detached. */
	hub->flushes = NULL;
	/* Only what is retired or queued here can still be released. */
	hub->retired = hub->done + hub->fresh.observations + hub->aged.observations +
	    (hub->queued - hub->taken);
}

void
ckvo__retire(struct ckvo_hub *hub, ck_epoch_entry_t *entry, ck_epoch_cb_t *function)
{
	entry->function = function;
	retired_push(&hub->fresh.head, &hub->fresh.tail, &entry->stack_entry);
	hub->fresh.count++;
}

void
ckvo__retire_large(struct ckvo_hub *hub, size_t bytes)
{
	if (bytes >= CKVO_RECLAIM_LARGE)
		hub->poll_at = 0;
}

void
ckvo__retire_observation(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	hub->retired++;
	hub->fresh.observations++;
	hub->fresh.count++;
	retired_push(&hub->fresh.observations_head, &hub->fresh.observations_tail, &obs->link);
}

void
ckvo__retire_list(struct ckvo_hub *hub, struct ckvo_list *list)
{
	ckvo__retire(hub, &list->retire, list_free);
}

void
ckvo__retire_slot(struct ckvo_hub *hub, struct ckvo_slot *slot)
{
	ckvo__retire(hub, &slot->retire, slot_free);
}
