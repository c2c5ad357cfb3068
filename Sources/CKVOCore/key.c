/*
 * key.c — interned key names: the registry's key table and the key API.
 *
 * Invariants it alone keeps
 * -------------------------
 * - Key k is registry->keys->keys[k - 1]. Interning happens inside a
 *   writer session; a new key's info is filled, stored into the array, and only then is
 *   registry->key_count raised, so a reader that sees k <= key_count finds k.
 * - A full array is copied into a larger one that is published before the
 *   count grows. Old arrays are kept (chained) until the hub is destroyed, so
 *   readers need no epoch section to look a key up: key lookup is two loads.
 * - struct ckvo_keyinfo lives as long as the hub; its name never changes.
 *   Keys, their names and every key array count in registry->ledger.bytes.
 * - registry->names (name -> keyinfo) is a single-writer ck_hs: interning
 *   puts inside the session, ckvo_key_find reads it lock-free inside an epoch
 *   read section. A put publishes a keyinfo only after filling it; a map the
 *   set outgrows is freed after a grace period (table.c), so a finder never
 *   probes freed memory. Names are never removed.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Makes room for one more key; false when out of memory. */
static bool
keys_reserve(struct ckvo_registry *registry)
{
	struct ckvo_key_array *array = registry->keys;
	uint32_t capacity;
	struct ckvo_key_array *bigger;

	if (array != NULL && registry->key_count < array->capacity)
		return true;
	if (registry->key_count == UINT32_MAX - 1)
		return false;
	capacity = array == NULL ? 16 : array->capacity * 2;
	bigger = calloc(1, sizeof(*bigger) + (size_t)capacity * sizeof(bigger->keys[0]));
	if (bigger == NULL)
		return false;
	ckvo__bytes(&registry->ledger, (ptrdiff_t)(sizeof(*bigger) + (size_t)capacity * sizeof(bigger->keys[0])));
	bigger->capacity = capacity;
	bigger->older = array;
	if (array != NULL)
		memcpy(bigger->keys, array->keys, (size_t)registry->key_count * sizeof(array->keys[0]));
	CKVO_TSAN_RELEASE(bigger);
	ck_pr_fence_store();
	ck_pr_store_ptr(&registry->keys, bigger);
	return true;
}

/* Interns under the writer lock; 0 on failure. */
static ckvo_key_t
key_intern_locked(struct ckvo_registry *registry, const char *name, size_t length, ckvo_getter_t getter)
{
	struct ckvo_keyinfo probe = { .name = name, .name_length = length };
	unsigned long hash = ckvo__name_hash(&registry->names, name, length);
	struct ckvo_keyinfo *info = ck_hs_get(&registry->names.hs, hash, &probe);
	char *copy;

	if (info != NULL) {
		if (getter == NULL || info->getter == getter)
			return info->id;
		if (info->getter != NULL)
			return 0; /* a different getter is already bound to this name */
		info->getter = getter;
		return info->id;
	}

	if (!keys_reserve(registry))
		return 0;
	info = calloc(1, sizeof(*info));
	copy = malloc(length + 1);
	if (info == NULL || copy == NULL) {
		free(info);
		free(copy);
		return 0;
	}
	memcpy(copy, name, length);
	copy[length] = '\0';
	info->name = copy;
	info->name_length = length;
	info->getter = getter;
	info->id = registry->key_count + 1;

	/*
	 * The key is complete before a reader can reach it: ckvo_key_find finds
	 * it in the name table as soon as ck_hs_put stores it (ck_hs has no
	 * release fence of its own before that store).
	 */
	CKVO_TSAN_RELEASE(info);
	ck_pr_fence_store();
	if (!ckvo__set_put(&registry->names, hash, info)) {
		free(copy);
		free(info);
		return 0;
	}
	ckvo__bytes(&registry->ledger, (ptrdiff_t)(sizeof(*info) + length + 1));
	registry->keys->keys[info->id - 1] = info;
	/* In the array before the count admits it. */
	ck_pr_fence_store();
	ck_pr_store_32(&registry->key_count, info->id);
	return info->id;
}

ckvo_key_t
ckvo_key_intern(ckvo_hub_t *hub, const char *name, ckvo_getter_t getter)
{
	size_t length;
	ckvo_key_t key;

	if (hub == NULL || name == NULL)
		return 0;
	length = strnlen(name, CKVO_KEY_NAME_MAX + 1);
	if (length == 0 || length > CKVO_KEY_NAME_MAX)
		return 0;

	/* Never runs a release: a layer may intern while holding its own lock. */
	ckvo__session_begin(hub);
	key = key_intern_locked(&hub->registry, name, length, getter);
	ckvo__session_commit_quiet(hub);
	return key;
}

/*
 * Looks `name` up without interning; 0 when no key has that name. A key the
 * name table holds but the count does not admit yet is still being interned
 * (key_intern_locked stores it in the table first): it is not returned until
 * every other function accepts it, so the find is ordered before that intern.
 */
static ckvo_key_t
key_find(struct ckvo_registry *registry, const char *name, size_t length)
{
	struct ckvo_keyinfo probe = { .name = name, .name_length = length };
	unsigned long hash = ckvo__name_hash(&registry->names, name, length);
	struct ckvo_keyinfo *info = ck_hs_get(&registry->names.hs, hash, &probe);

	if (info == NULL || info->id > ck_pr_load_32(&registry->key_count))
		return 0;
	return info->id;
}

ckvo_key_t
ckvo_key_find(ckvo_hub_t *hub, const char *name, size_t length)
{
	ck_epoch_record_t *record;
	ckvo_key_t key;

	if (hub == NULL || name == NULL || length == 0 || length > CKVO_KEY_NAME_MAX)
		return 0;
	record = ckvo__thread_record();
	if (CKVO_UNLIKELY(record == NULL)) {
		/* No reader record (out of memory): the writer lock also excludes puts. */
		ckvo__session_begin(hub);
		key = key_find(&hub->registry, name, length);
		ckvo__session_commit(hub, NULL);
		return key;
	}
	ckvo__read_begin(record);
	key = key_find(&hub->registry, name, length);
	ckvo__read_end(record);
	return key;
}

const char *
ckvo_key_name(ckvo_hub_t *hub, ckvo_key_t key)
{
	struct ckvo_keyinfo *info;

	if (hub == NULL)
		return NULL;
	info = ckvo__key_lookup(&hub->registry, key);
	return info == NULL ? NULL : info->name;
}

const ckvo_probe_t *
ckvo_key_probe(ckvo_hub_t *hub, ckvo_key_t key)
{
	struct ckvo_keyinfo *info;

	if (hub == NULL)
		return NULL;
	info = ckvo__key_lookup(&hub->registry, key);
	return info == NULL ? NULL : &info->probe;
}

void
ckvo__keys_destroy(struct ckvo_registry *registry)
{
	struct ckvo_key_array *array = registry->keys;

	if (array != NULL) {
		for (uint32_t i = 0; i < registry->key_count; i++) {
			free((char *)array->keys[i]->name);
			free(array->keys[i]);
		}
	}
	while (array != NULL) {
		struct ckvo_key_array *older = array->older;

		free(array);
		array = older;
	}
	registry->keys = NULL;
	registry->key_count = 0;
}
