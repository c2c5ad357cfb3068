/*
 * keys.c — very many keys at once (scale tests): interning "<prefix><i>",
 * checking the names come back, observing and announcing each key. Loops in
 * C so a million of them cost what the engine costs, not a debug Swift loop.
 */
#include <stdio.h>
#include <string.h>

#include "ckvo_test_support.h"

#define NAME_MAX_ 64

static bool
format_name(char *buffer, const char *prefix, size_t i)
{
	int length = snprintf(buffer, NAME_MAX_, "%s%zu", prefix, i);
	return length > 0 && length < NAME_MAX_;
}

size_t
ckvots_keys_intern(ckvo_hub_t *hub, const char *prefix, size_t count, ckvo_key_t *keys)
{
	char name[NAME_MAX_];

	for (size_t i = 0; i < count; i++) {
		if (!format_name(name, prefix, i))
			return i;
		keys[i] = ckvo_key_intern(hub, name, NULL);
		if (keys[i] == 0)
			return i;
	}
	return count;
}

size_t
ckvots_keys_names_match(ckvo_hub_t *hub, const char *prefix, const ckvo_key_t *keys, size_t count)
{
	char name[NAME_MAX_];
	size_t matching = 0;

	for (size_t i = 0; i < count; i++) {
		const char *stored = ckvo_key_name(hub, keys[i]);
		if (stored != NULL && format_name(name, prefix, i) && strcmp(stored, name) == 0)
			matching++;
	}
	return matching;
}

size_t
ckvots_tally_observe_keys(ckvots_tally_t *tally, size_t first_slot, ckvo_hub_t *hub,
    const void *object, const ckvo_key_t *keys, size_t count, ckvo_token_t *tokens,
    ckvo_status_t *first_error)
{
	*first_error = CKVO_OK;
	for (size_t i = 0; i < count; i++) {
		void *slot = ckvots_tally_slot(tally, first_slot + i);
		ckvo_status_t status = slot == NULL ? CKVO_EINVAL
		                                    : ckvo_observe(hub, object, keys[i], 0, NULL,
		                                          ckvots_tally_callback, slot, ckvots_tally_release,
		                                          &tokens[i]);
		if (status != CKVO_OK) {
			*first_error = status;
			return i;
		}
	}
	return count;
}

size_t
ckvots_announce_keys(ckvo_hub_t *hub, const void *object, const ckvo_key_t *keys, size_t count)
{
	size_t ok = 0;

	for (size_t i = 0; i < count; i++) {
		ckvo_change_t change = { .object = object, .key = keys[i], .kind = CKVO_KIND_SETTING };
		ok += ckvo_did_change(hub, &change) == CKVO_OK;
	}
	return ok;
}

size_t
ckvots_keys_with_observers(ckvo_hub_t *hub, const void *object, const ckvo_key_t *keys,
    size_t count)
{
	size_t n = 0;

	for (size_t i = 0; i < count; i++)
		n += ckvo_has_observers(hub, object, keys[i]);
	return n;
}
