/* tally.c — call and release counters for very many observations (scale tests). */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct slot {
	_Atomic uint32_t calls;
	_Atomic uint32_t releases;
};

struct ckvots_tally {
	size_t count;
	struct slot *slots;
};

ckvots_tally_t *
ckvots_tally_create(size_t slots)
{
	ckvots_tally_t *tally = calloc(1, sizeof(*tally));
	if (tally == NULL)
		return NULL;
	/* calloc's zero bytes are a valid initial state for these lock-free atomics. */
	tally->slots = calloc(slots == 0 ? 1 : slots, sizeof(*tally->slots));
	if (tally->slots == NULL) {
		free(tally);
		return NULL;
	}
	tally->count = slots;
	return tally;
}

void
ckvots_tally_destroy(ckvots_tally_t *tally)
{
	if (tally == NULL)
		return;
	free(tally->slots);
	free(tally);
}

void *
ckvots_tally_slot(ckvots_tally_t *tally, size_t i)
{
	return i < tally->count ? &tally->slots[i] : NULL;
}

uint32_t
ckvots_tally_calls(const ckvots_tally_t *tally, size_t i)
{
	return atomic_load(&tally->slots[i].calls);
}

uint32_t
ckvots_tally_releases(const ckvots_tally_t *tally, size_t i)
{
	return atomic_load(&tally->slots[i].releases);
}

size_t
ckvots_tally_calls_equal(const ckvots_tally_t *tally, uint32_t value)
{
	size_t n = 0;
	for (size_t i = 0; i < tally->count; i++)
		n += atomic_load_explicit(&tally->slots[i].calls, memory_order_relaxed) == value;
	return n;
}

size_t
ckvots_tally_releases_equal(const ckvots_tally_t *tally, uint32_t value)
{
	size_t n = 0;
	for (size_t i = 0; i < tally->count; i++)
		n += atomic_load_explicit(&tally->slots[i].releases, memory_order_relaxed) == value;
	return n;
}

void
ckvots_tally_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	atomic_fetch_add_explicit(&((struct slot *)context)->calls, 1, memory_order_relaxed);
}

void
ckvots_tally_release(void *context)
{
	atomic_fetch_add_explicit(&((struct slot *)context)->releases, 1, memory_order_relaxed);
}

size_t
ckvots_tally_observe_all(ckvots_tally_t *tally, ckvo_hub_t *hub, const void *object,
    ckvo_key_t key, size_t count, ckvo_token_t *tokens, ckvo_status_t *first_error)
{
	size_t ok = 0;
	*first_error = CKVO_OK;
	for (size_t i = 0; i < count && i < tally->count; i++) {
		ckvo_status_t status = ckvo_observe(hub, object, key, 0, NULL, ckvots_tally_callback,
		    &tally->slots[i], ckvots_tally_release, &tokens[i]);
		if (status != CKVO_OK) {
			*first_error = status;
			break;
		}
		ok++;
	}
	return ok;
}

size_t
ckvots_unobserve_all(ckvo_hub_t *hub, const ckvo_token_t *tokens, const size_t *order, size_t count)
{
	size_t ok = 0;
	for (size_t i = 0; i < count; i++)
		ok += ckvo_unobserve(hub, tokens[order != NULL ? order[i] : i]) == CKVO_OK;
	return ok;
}
