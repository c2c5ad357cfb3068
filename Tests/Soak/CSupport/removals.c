/*
 * removals.c — the numbered ckvo_unobserve_object / ckvo_unobserve_owner
 * removals of the shared targets (see csoak.h).
 *
 * One remover thread at a time, so removals of one target are serial:
 * removal n+1 is marked after removal n is done. Each done removal stores the
 * clock time its call returned in returned[n % RING] before publishing
 * `done = n`. A reader that sees done >= n finds in that slot the time of
 * removal n or of a later one (which returned later still), so "returned
 * before t" read from it is never true when removal n returned after t.
 */
#include <stdatomic.h>

#include "csoak.h"

#define RING 16

struct target {
	_Atomic uint64_t marked;
	_Atomic uint64_t done;
	_Atomic uint64_t returned[RING];
};

static struct target targets[2][CSOAK_TARGETS];

static struct target *
target_at(csoak_target_t kind, unsigned index)
{
	if ((unsigned)kind > CSOAK_TARGET_OWNER || index >= CSOAK_TARGETS)
		return NULL;
	return &targets[kind][index];
}

uint64_t
csoak_removal_begin(csoak_target_t kind, unsigned index)
{
	struct target *target = target_at(kind, index);

	return target != NULL ? atomic_fetch_add(&target->marked, 1) + 1 : 0;
}

void
csoak_removal_end(csoak_target_t kind, unsigned index, uint64_t number, uint64_t returned_at)
{
	struct target *target = target_at(kind, index);

	if (target == NULL)
		return;
	atomic_store(&target->returned[number % RING], returned_at);
	atomic_store(&target->done, number);
}

uint64_t
csoak_removals_marked(csoak_target_t kind, unsigned index)
{
	struct target *target = target_at(kind, index);

	return target != NULL ? atomic_load(&target->marked) : 0;
}

uint64_t
csoak_removals_done(csoak_target_t kind, unsigned index)
{
	struct target *target = target_at(kind, index);

	return target != NULL ? atomic_load(&target->done) : 0;
}

bool
csoak_removal_returned_before(csoak_target_t kind, unsigned index, uint64_t number, uint64_t clock)
{
	struct target *target = target_at(kind, index);

	if (target == NULL || number == 0 || atomic_load(&target->done) < number)
		return false;
	return atomic_load(&target->returned[number % RING]) < clock;
}
