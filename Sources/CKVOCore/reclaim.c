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
 * - Ready entries run after the lock is dropped: that is where
 *   `release(context)` is called — outside every engine lock, so it may call
 *   back into the API — exactly once per observation.
 * - A writer's unlock polls only once CKVO_RECLAIM_BATCH entries are
 *   pending (a scan with membarrier costs microseconds: churn pays it once
 *   per batch), or when a list or map of CKVO_RECLAIM_LARGE bytes or more
 *   was retired (its growth paid for the scan). Whatever a writer leaves pending, the hub's background
 *   reclaimer (reclaimer.c) polls within CKVO_RECLAIM_PERIOD_NS, so a
 *   release never waits for an unrelated call into the library.
 * - A writer announces (hub->finishing) that it holds entries to run after
 *   unlocking, so a flush can wait until entries taken before it have run.
 * - hub->released counts observations whose grace period has passed (ready,
 *   whether or not their release has run yet): pending_releases = retired -
 *   released is what waits for readers, and in a fork child, where ready
 *   batches of vanished threads are lost, it is recounted from fresh and aged.
 * - Observation records live in the token pages (token.c). Retired
 *   observations are chained through their `link`, apart from other retired
 *   memory. Once their releases have run, their records go back to their
 *   pages in one pass under the lock (one lock per batch), for the next
 *   registrations to reuse with the next generation: observe + unobserve
 *   churn costs no malloc and no free. A page whose records have all come
 *   back is freed after a grace period. Records not in use are poisoned for
 *   AddressSanitizer, so a use after release is still caught.
 * - Blocking waits (flush, strict unobserve, destroy) first detach every
 *   retired entry under the lock, then, without the lock, scan until one
 *   IDLE or two SETTLED scans (the same rule as above, every scan after the
 *   detach), then run them. They refuse inside a read section, where the
 *   scans would wait for the caller itself.
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
	if (list->observations_head != NULL) {
		list->observations_tail->next = ready->observations;
		ready->observations = list->observations_head;
	}
	ck_pr_add_64(&hub->released, list->observations);
	*list = (struct ckvo_retired){ NULL, NULL, NULL, NULL, 0, 0 };
}

static bool
ready_empty(const struct ckvo_ready *ready)
{
	return ready->entries == NULL && ready->observations == NULL;
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

/* Drops the lock, leaving what is pending to the background reclaimer. */
static void
unlock_leaving_pending(struct ckvo_hub *hub)
{
	if (!hub->reclaimer_armed && ckvo__reclaim_pending(hub) != 0)
		ckvo__reclaimer_arm(hub);
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);
}

void
ckvo__hub_unlock_collect(struct ckvo_hub *hub, struct ckvo_ready *ready)
{
	if (ckvo__reclaim_pending(hub) >= hub->poll_at)
		ckvo__reclaim_poll(hub, ready);
	/* Announced under the lock, so a flush that follows waits for this batch. */
	if (!ready_empty(ready))
		ck_pr_inc_uint(&hub->finishing);
	unlock_leaving_pending(hub);
}

void
ckvo__hub_unlock(struct ckvo_hub *hub)
{
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;

	ckvo__hub_unlock_collect(hub, &ready);
	ckvo__reclaim_finish(hub, &ready);
}

void
ckvo__hub_unlock_quiet(struct ckvo_hub *hub)
{
	unlock_leaving_pending(hub);
}

/*
 * Calls the release of each observation of the chain `chain`, then, under
 * the lock, gives their records back to the token pages for reuse.
 */
static void
observations_finish(struct ckvo_hub *hub, ck_stack_entry_t *chain)
{
	ck_stack_entry_t *cursor, *next;

	for (cursor = chain; cursor != NULL; cursor = cursor->next) {
		struct ckvo_observation *obs = CKVO_CONTAINER(struct ckvo_observation, link, cursor);

		if (obs->release != NULL)
			obs->release(obs->context);
	}
	ckvo__hub_lock(hub);
	for (cursor = chain; cursor != NULL; cursor = next) {
		next = cursor->next;
		ckvo__token_return(hub, CKVO_CONTAINER(struct ckvo_observation, link, cursor));
	}
	ckvo__hub_unlock(hub);
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

/* Lowers hub->finishing, never below zero (a fork child starts it from zero). */
static void
finishing_done(struct ckvo_hub *hub)
{
	unsigned int count = ck_pr_load_uint(&hub->finishing);

	while (count != 0 && !ck_pr_cas_uint_value(&hub->finishing, count, count - 1, &count))
		;
}

void
ckvo__reclaim_finish(struct ckvo_hub *hub, struct ckvo_ready *ready)
{
	ck_stack_entry_t *cursor, *next;

	if (ready_empty(ready))
		return;

	/* Pairs with every reader's release when it left its section. */
	CKVO_TSAN_ACQUIRE(&ckvo__epoch);
	for (cursor = ready->entries; cursor != NULL; cursor = next) {
		ck_epoch_entry_t *entry =
		    CKVO_CONTAINER(ck_epoch_entry_t, stack_entry, cursor);

		next = CK_STACK_NEXT(cursor);
		entry->function(entry);
	}
	if (ready->observations != NULL) {
		ckvo__thread.releasing++;
		observations_finish(hub, ready->observations);
		ckvo__thread.releasing--;
	}
	*ready = (struct ckvo_ready)CKVO_READY_INITIALIZER;
	finishing_done(hub);
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
ckvo__reclaim_flush(struct ckvo_hub *hub)
{
	struct ckvo_ready detached = CKVO_READY_INITIALIZER;
	uint64_t observations;

	ckvo__hub_lock(hub);
	/*
	 * Everything retired so far; we run it after a grace period. Counted
	 * as released only after the wait: until then it is pending.
	 */
	observations = (uint64_t)hub->fresh.observations + hub->aged.observations;
	hub->fresh.observations = hub->aged.observations = 0;
	retired_take(hub, &hub->aged, &detached);
	retired_take(hub, &hub->fresh, &detached);
	hub->poll_at = CKVO_RECLAIM_BATCH;
	if (!ready_empty(&detached))
		ck_pr_inc_uint(&hub->finishing);
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);

	/* Wait, without the lock, until no reader can hold what was detached. */
	grace_wait();
	ck_pr_add_64(&hub->released, observations);
	ckvo__reclaim_finish(hub, &detached);

	/*
	 * Other writers may be running entries they took before this flush
	 * (after their unlock): wait for them too, unless this is itself a
	 * release callback, which such a writer may be running.
	 */
	if (ckvo__thread.releasing == 0) {
		while (ck_pr_load_uint(&hub->finishing) != 0)
			(void)sched_yield();
	}
}

void
ckvo__reclaim_after_fork_child(struct ckvo_hub *hub)
{
	/* Entries other threads were running, or waiting to run, are gone with them. */
	hub->finishing = 0;
	hub->released = hub->retired - hub->fresh.observations - hub->aged.observations;
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
