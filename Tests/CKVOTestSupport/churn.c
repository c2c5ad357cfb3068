/*
 * churn.c — long runs of observe/unobserve cycles for the memory-bound
 * tests, and the process's resident set size and heap to measure them by.
 *
 * A churn keeps a ring of `window` live observations: each cycle removes the
 * oldest (once the ring is full) and registers a new one, rotating through
 * the given objects and keys, so lists keep growing, compacting and being
 * replaced, and slots keep being created and retired. Every 64th cycle it
 * announces a change of the pair it just observed, so dispatch runs too.
 * Each ring position registers with its own owner (the address of its ring
 * entry), so no two live observations ever share an identity (no CKVO_EEXIST).
 */
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ckvo_test_support.h"

struct ckvots_churn {
	ckvo_hub_t *hub;
	ckvo_key_t *keys;
	size_t key_count;
	const void **objects;
	size_t object_count;
	ckvo_token_t *ring;
	size_t window;
	uint64_t cycle; /* cycles run so far, across calls */
	_Atomic uint64_t observed;
	_Atomic uint64_t calls;
	_Atomic uint64_t releases;
};

size_t
ckvots_resident_bytes(void)
{
	FILE *file = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (file == NULL)
		return 0;
	if (fscanf(file, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(file);
	return page > 0 ? (size_t)resident * (size_t)page : 0;
}

size_t
ckvots_heap_bytes(void)
{
#if defined(__GLIBC__)
	struct mallinfo2 info = mallinfo2();

	return info.uordblks + info.hblkhd;
#else
	return 0;
#endif
}

static void
churn_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	atomic_fetch_add_explicit(&((ckvots_churn_t *)context)->calls, 1, memory_order_relaxed);
}

static void
churn_release(void *context)
{
	atomic_fetch_add_explicit(&((ckvots_churn_t *)context)->releases, 1, memory_order_relaxed);
}

ckvots_churn_t *
ckvots_churn_create(ckvo_hub_t *hub, const ckvo_key_t *keys, size_t key_count,
    const void *const *objects, size_t object_count, size_t window)
{
	if (hub == NULL || keys == NULL || key_count == 0 || objects == NULL || object_count == 0 ||
	    window == 0)
		return NULL;
	ckvots_churn_t *churn = calloc(1, sizeof(*churn));
	if (churn == NULL)
		return NULL;
	churn->keys = calloc(key_count, sizeof(*churn->keys));
	churn->objects = calloc(object_count, sizeof(*churn->objects));
	churn->ring = calloc(window, sizeof(*churn->ring));
	if (churn->keys == NULL || churn->objects == NULL || churn->ring == NULL) {
		ckvots_churn_destroy(churn);
		return NULL;
	}
	for (size_t i = 0; i < key_count; i++)
		churn->keys[i] = keys[i];
	for (size_t i = 0; i < object_count; i++)
		churn->objects[i] = objects[i];
	churn->hub = hub;
	churn->key_count = key_count;
	churn->object_count = object_count;
	churn->window = window;
	atomic_init(&churn->observed, 0);
	atomic_init(&churn->calls, 0);
	atomic_init(&churn->releases, 0);
	return churn;
}

void
ckvots_churn_destroy(ckvots_churn_t *churn)
{
	if (churn == NULL)
		return;
	free(churn->keys);
	free(churn->objects);
	free(churn->ring);
	free(churn);
}

size_t
ckvots_churn_run(ckvots_churn_t *churn, size_t cycles)
{
	size_t ok = 0;

	for (size_t n = 0; n < cycles; n++, churn->cycle++) {
		uint64_t i = churn->cycle;
		size_t position = (size_t)(i % churn->window);
		const void *object = churn->objects[i % churn->object_count];
		ckvo_key_t key = churn->keys[(i / churn->object_count) % churn->key_count];
		bool good = true;

		if (!ckvo_token_is_none(churn->ring[position])) {
			good = ckvo_unobserve(churn->hub, churn->ring[position]) == CKVO_OK;
			churn->ring[position] = (ckvo_token_t)CKVO_TOKEN_NONE_INITIALIZER;
		}
		if (ckvo_observe(churn->hub, object, key, 0, &churn->ring[position], churn_callback,
		        churn, churn_release, &churn->ring[position]) == CKVO_OK)
			atomic_fetch_add_explicit(&churn->observed, 1, memory_order_relaxed);
		else
			good = false;
		if (i % 64 == 0) {
			ckvo_change_t change = { .object = object, .key = key, .kind = CKVO_KIND_SETTING };
			good = good && ckvo_did_change(churn->hub, &change) == CKVO_OK;
		}
		ok += good;
	}
	return ok;
}

size_t
ckvots_churn_drain(ckvots_churn_t *churn)
{
	size_t ok = 0;

	for (size_t i = 0; i < churn->window; i++) {
		if (ckvo_token_is_none(churn->ring[i]))
			continue;
		ok += ckvo_unobserve(churn->hub, churn->ring[i]) == CKVO_OK;
		churn->ring[i] = (ckvo_token_t)CKVO_TOKEN_NONE_INITIALIZER;
	}
	return ok;
}

uint64_t
ckvots_churn_observed(const ckvots_churn_t *churn)
{
	return atomic_load(&((ckvots_churn_t *)churn)->observed);
}

uint64_t
ckvots_churn_calls(const ckvots_churn_t *churn)
{
	return atomic_load(&((ckvots_churn_t *)churn)->calls);
}

uint64_t
ckvots_churn_releases(const ckvots_churn_t *churn)
{
	return atomic_load(&((ckvots_churn_t *)churn)->releases);
}
