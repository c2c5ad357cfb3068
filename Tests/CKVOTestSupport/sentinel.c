/*
 * sentinel.c — detects a callback entered after ckvo_unobserve_sync returned.
 *
 * The callback announces itself (`inside`++) before it reads the flag; the
 * test sets the flag before it reads `inside`. With sequentially consistent
 * atomics at least one side sees the other (Dekker), so a callback running
 * after the strict unobserve returned is always caught: either it sees the
 * flag (a violation) or the test sees it inside.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct ckvots_sentinel {
	unsigned spin;
	_Atomic unsigned inside;
	_Atomic bool sync_returned;
	_Atomic uint64_t calls;
	_Atomic uint64_t violations;
	_Atomic uint64_t releases;
};

ckvots_sentinel_t *
ckvots_sentinel_create(unsigned spin)
{
	ckvots_sentinel_t *sentinel = calloc(1, sizeof(*sentinel));
	if (sentinel == NULL)
		return NULL;
	sentinel->spin = spin;
	atomic_init(&sentinel->inside, 0);
	atomic_init(&sentinel->sync_returned, false);
	atomic_init(&sentinel->calls, 0);
	atomic_init(&sentinel->violations, 0);
	atomic_init(&sentinel->releases, 0);
	return sentinel;
}

void
ckvots_sentinel_destroy(ckvots_sentinel_t *sentinel)
{
	free(sentinel);
}

void
ckvots_sentinel_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	ckvots_sentinel_t *sentinel = context;

	atomic_fetch_add(&sentinel->inside, 1);
	if (atomic_load(&sentinel->sync_returned))
		atomic_fetch_add(&sentinel->violations, 1);
	atomic_fetch_add(&sentinel->calls, 1);
	/* Stay inside a little, so a strict unobserve has something to wait for. */
	for (unsigned i = 0; i < sentinel->spin; i++)
		atomic_signal_fence(memory_order_seq_cst);
	atomic_fetch_sub(&sentinel->inside, 1);
}

void
ckvots_sentinel_release(void *context)
{
	atomic_fetch_add(&((ckvots_sentinel_t *)context)->releases, 1);
}

unsigned
ckvots_sentinel_mark_sync_returned(ckvots_sentinel_t *sentinel)
{
	atomic_store(&sentinel->sync_returned, true);
	return atomic_load(&sentinel->inside);
}

uint64_t
ckvots_sentinel_calls(const ckvots_sentinel_t *sentinel)
{
	return atomic_load(&((ckvots_sentinel_t *)sentinel)->calls);
}

uint64_t
ckvots_sentinel_violations(const ckvots_sentinel_t *sentinel)
{
	return atomic_load(&((ckvots_sentinel_t *)sentinel)->violations);
}

uint64_t
ckvots_sentinel_releases(const ckvots_sentinel_t *sentinel)
{
	return atomic_load(&((ckvots_sentinel_t *)sentinel)->releases);
}
