/*
 * reclaim.c — the writer protocol and safe memory reclamation.
 *
 * Invariants
 * ----------
 * - Every writer operation runs between ckvo__hub_lock and
 *   ckvo__hub_unlock. Taking the lock first carries out the removals that
 *   readers queued (ckvo_unobserve_deferred); releasing it polls the epoch.
 * - Memory a reader may reach (observations, lists, slots, old ck_hs maps)
 *   is never freed directly: it is handed to ck_epoch_call on the hub's
 *   writer record, which only the lock holder touches. A reader that could
 *   see an object was inside an epoch section when the object was retired,
 *   so ck_epoch does not declare the object's epoch safe until that reader
 *   has left; then nobody can still hold a pointer to it.
 * - CK never runs our callbacks itself: ck_epoch_poll_deferred moves the safe
 *   entries onto a private stack, and we run them after dropping the lock.
 *   That is where `release(context)` is called — outside every engine lock,
 *   so it may call back into the API — exactly once per observation.
 * - Releasing the lock polls only once CKVO_RECLAIM_BATCH entries are
 *   pending, so a release may run some registrations after its removal;
 *   ckvo_hub_flush and ckvo_unobserve_sync make it prompt.
 * - A writer announces (hub->finishing) that it holds entries to run after
 *   unlocking, so a flush can wait until entries taken before it have run.
 * - A released observation's memory is parked on hub->spares (about
 *   CKVO_SPARE_MAX at most) rather than freed, and the next registrations
 *   take it under the lock: observe + unobserve churn then costs no malloc
 *   and no free. A whole batch is parked with one atomic push; the lock
 *   holder takes the whole stack with one exchange. Parked memory is
 *   poisoned for AddressSanitizer, so a use after release is still caught.
 * - Blocking waits (flush, strict unobserve, destroy) first detach the
 *   pending entries under the lock, then wait for a grace period without the
 *   lock (ck_epoch_synchronize), then run them. They refuse inside a read
 *   section, where synchronizing would wait for the caller itself.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void
ckvo__hub_lock(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&hub->lock);
	ckvo__thread.writing = hub;
	ckvo__drain_deferred(hub);
}

void
ckvo__hub_unlock_collect(struct ckvo_hub *hub, ck_stack_t *ready)
{
	/*
	 * Polling costs a membarrier (see thread.c): do it once per batch of
	 * new retirements, also while busy readers hold older ones back.
	 */
	if (ck_pr_load_uint(&hub->writer->n_pending) >= hub->poll_at) {
		ckvo__writer_fence();
		(void)ck_epoch_poll_deferred(hub->writer, ready);
		hub->poll_at = ck_pr_load_uint(&hub->writer->n_pending) + CKVO_RECLAIM_BATCH;
	}
	/* Announced under the lock, so a flush that follows waits for this batch. */
	if (CK_STACK_FIRST(ready) != NULL)
		ck_pr_inc_uint(&hub->finishing);
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);
}

void
ckvo__hub_unlock(struct ckvo_hub *hub)
{
	ck_stack_t ready = CK_STACK_INITIALIZER;

	ckvo__hub_unlock_collect(hub, &ready);
	ckvo__reclaim_finish(hub, &ready);
}

/* A chain of released observations being parked, linked by deferred_link. */
struct parking {
	ck_stack_entry_t *first, *last;
	unsigned int count, room;
};

/*
 * Calls the observation's release, then parks its memory in `p` for reuse,
 * or frees it when `p` is NULL or full.
 */
static void
observation_finish(struct ckvo_observation *obs, struct parking *p)
{
	ck_stack_entry_t *link = &obs->deferred_link;

	if (obs->release != NULL)
		obs->release(obs->context);
	if (p == NULL || p->count == p->room) {
		free(obs);
		return;
	}
	link->next = p->first;
	p->first = link;
	if (p->last == NULL)
		p->last = link;
	p->count++;
	/* Everything but the link: readers are long gone, nobody may touch it. */
	CKVO_ASAN_POISON(obs, offsetof(struct ckvo_observation, deferred_link));
	CKVO_ASAN_POISON((char *)(link + 1),
	    sizeof(*obs) - offsetof(struct ckvo_observation, deferred_link) - sizeof(*link));
}

/* The epoch callback of a retired observation (ckvo__reclaim_finish parks instead). */
static void
observation_release(ck_epoch_entry_t *entry)
{
	observation_finish(CKVO_CONTAINER(struct ckvo_observation, retire, entry), NULL);
}

/* Pushes the parked chain onto hub->spares with one compare-and-swap. */
static void
parking_finish(struct ckvo_hub *hub, struct parking *p)
{
	ck_stack_entry_t *head;

	if (p->first == NULL)
		return;
	CKVO_TSAN_RELEASE(&hub->spares);
	do {
		head = ck_pr_load_ptr(&hub->spares.head);
		ck_pr_store_ptr(&p->last->next, head);
	} while (!ck_pr_cas_ptr(&hub->spares.head, head, p->first));
	ck_pr_add_uint(&hub->spare_count, p->count);
}

struct ckvo_observation *
ckvo__observation_alloc(struct ckvo_hub *hub)
{
	ck_stack_entry_t *link = hub->spares_taken;
	struct ckvo_observation *obs;

	if (link == NULL && ck_pr_load_ptr(&hub->spares.head) != NULL) {
		link = ck_stack_batch_pop_upmc(&hub->spares);
		/* Approximate: a concurrent park may be counted late or lost. */
		(void)ck_pr_fas_uint(&hub->spare_count, 0);
		CKVO_TSAN_ACQUIRE(&hub->spares);
	}
	if (link == NULL)
		return calloc(1, sizeof(*obs));
	hub->spares_taken = link->next;
	obs = CKVO_CONTAINER(struct ckvo_observation, deferred_link, link);
	CKVO_ASAN_UNPOISON(obs, sizeof(*obs));
	memset(obs, 0, sizeof(*obs));
	return obs;
}

static void
spares_free(ck_stack_entry_t *link)
{
	while (link != NULL) {
		ck_stack_entry_t *next = link->next;
		struct ckvo_observation *obs =
		    CKVO_CONTAINER(struct ckvo_observation, deferred_link, link);

		CKVO_ASAN_UNPOISON(obs, sizeof(*obs));
		free(obs);
		link = next;
	}
}

void
ckvo__spares_destroy(struct ckvo_hub *hub)
{
	spares_free(hub->spares_taken);
	hub->spares_taken = NULL;
	CKVO_TSAN_ACQUIRE(&hub->spares);
	spares_free(ck_stack_batch_pop_upmc(&hub->spares));
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
ckvo__reclaim_finish(struct ckvo_hub *hub, ck_stack_t *ready)
{
	ck_stack_entry_t *cursor, *next;
	struct parking parking = { NULL, NULL, 0, 0 };
	uint64_t released = 0;
	unsigned int parked;

	if (CK_STACK_FIRST(ready) == NULL)
		return;
	parked = ck_pr_load_uint(&hub->spare_count);
	parking.room = parked < CKVO_SPARE_MAX ? CKVO_SPARE_MAX - parked : 0;

	/* Pairs with every reader's release when it left its section. */
	CKVO_TSAN_ACQUIRE(&ckvo__epoch);
	ckvo__thread.releasing++;
	for (cursor = CK_STACK_FIRST(ready); cursor != NULL; cursor = next) {
		ck_epoch_entry_t *entry =
		    CKVO_CONTAINER(ck_epoch_entry_t, stack_entry, cursor);

		next = CK_STACK_NEXT(cursor);
		if (entry->function == observation_release) {
			released++;
			observation_finish(
			    CKVO_CONTAINER(struct ckvo_observation, retire, entry), &parking);
		} else {
			entry->function(entry);
		}
	}
	ckvo__thread.releasing--;
	parking_finish(hub, &parking);
	/* One atomic add per batch, not per observation. */
	ck_pr_add_64(&hub->released, released);
	ck_stack_init(ready);
	finishing_done(hub);
}

static void
reclaim_detach_all(struct ckvo_hub *hub, ck_stack_t *out)
{
	ck_epoch_record_t *writer = hub->writer;

	/* Everything pending was retired before now; we run it after a grace period. */
	for (unsigned int i = 0; i < CK_EPOCH_LENGTH; i++) {
		ck_stack_entry_t *cursor = ck_stack_batch_pop_upmc(&writer->pending[i]);

		while (cursor != NULL) {
			ck_stack_entry_t *next = CK_STACK_NEXT(cursor);

			ck_stack_push_spnc(out, cursor);
			cursor = next;
		}
	}
	ck_pr_store_uint(&writer->n_pending, 0);
	hub->poll_at = CKVO_RECLAIM_BATCH;
}

void
ckvo__reclaim_flush(struct ckvo_hub *hub)
{
	ck_stack_t detached = CK_STACK_INITIALIZER;

	ckvo__hub_lock(hub);
	reclaim_detach_all(hub, &detached);
	if (CK_STACK_FIRST(&detached) != NULL)
		ck_pr_inc_uint(&hub->finishing);
	ckvo__thread.writing = NULL;
	(void)pthread_mutex_unlock(&hub->lock);

	/* Wait, without the lock, until no reader can hold what was detached. */
	ckvo__writer_fence();
	ck_epoch_synchronize(hub->writer);
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
ckvo__retire_observation(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	hub->retired++; /* under the lock, like every reader of it */
	ck_epoch_call(hub->writer, &obs->retire, observation_release);
}

void
ckvo__retire_list(struct ckvo_hub *hub, struct ckvo_list *list)
{
	ck_epoch_call(hub->writer, &list->retire, list_free);
}

void
ckvo__retire_slot(struct ckvo_hub *hub, struct ckvo_slot *slot)
{
	ck_epoch_call(hub->writer, &slot->retire, slot_free);
}
