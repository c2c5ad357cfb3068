/*
 * table.c — the ck_hs hash sets a hub is made of: allocator, hashes and
 * comparisons.
 *
 * ck_hs is single-writer, many-reader: every mutation happens under the
 * hub's writer lock. When a table grows, ck_hs frees the old map with
 * `defer == true` because readers may still be probing it; that free must
 * wait a grace period, so it is retired (reclaim.c) on the hub whose lock
 * this thread holds (ckvo__thread.writing). Tables only writers read
 * (identities, owners, objects) go the same way, which is merely
 * conservative; the names are also read lock-free (ckvo_key_find).
 *
 * Stored objects keep their key fields unchanged while stored, and stay
 * alive until a grace period after removal (the slots' retirement), because
 * ck_hs calls the comparison on other stored objects while probing.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Each map allocation is preceded by the entry that retires it. */
struct map_header {
	ck_epoch_entry_t retire;
	size_t size;
} __attribute__((aligned(16)));

static void *
hs_malloc(size_t size)
{
	struct map_header *header = malloc(sizeof(*header) + size);

	if (header == NULL)
		return NULL;
	header->size = size;
	return header + 1;
}

static void
map_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct map_header, retire, entry));
}

static void
hs_free(void *pointer, size_t size, bool defer)
{
	struct map_header *header = (struct map_header *)pointer - 1;
	struct ckvo_hub *hub = ckvo__thread.writing;

	(void)size;
	if (defer && hub != NULL) {
		ckvo__retire(hub, &header->retire, map_free);
		return;
	}
	free(header);
}

struct ck_malloc ckvo__hs_allocator = {
	.malloc = hs_malloc,
	.realloc = NULL,
	.free = hs_free,
};

/* A 64-bit finalizer (splitmix64): cheap and well mixed. */
static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

unsigned long
ckvo__hash_pointer(const void *pointer, uint64_t extra)
{
	return (unsigned long)mix64((uint64_t)(uintptr_t)pointer ^ mix64(extra));
}

/* -------------------------------------------------------- (object, key) */

/*
 * Stored objects are slots; probes are slots or bare ids. A slot starts with
 * its id, so both are read as a struct ckvo_slot_id.
 */
static unsigned long
slot_hash(const void *object, unsigned long seed)
{
	const struct ckvo_slot_id *id = object;

	return ckvo__slot_id_hash(id->object, id->key, seed);
}

static bool
slot_equal(const void *stored, const void *probe)
{
	const struct ckvo_slot_id *a = stored, *b = probe;

	/* Readers compare against any slot on the probe path, published by slot_publish. */
	CKVO_TSAN_ACQUIRE(stored);
	return a->object == b->object && a->key == b->key;
}

bool
ckvo__slots_init(ck_hs_t *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, slot_hash, slot_equal,
	    &ckvo__hs_allocator, 64, 0x9e3779b97f4a7c15ULL);
}

/* ------------------------------------------------------------ key names */

/*
 * Eight bytes at a time, each word folded in with a multiply and a shift,
 * then one full mix: a post that looks its name up (ckvo_key_find) hashes
 * the name every time.
 */
static unsigned long
name_hash_bytes(const char *name, size_t length, unsigned long seed)
{
	uint64_t h = seed ^ ((uint64_t)length * 0x9e3779b97f4a7c15ULL);
	uint64_t word;
	size_t i = 0;

	for (; i + sizeof(word) <= length; i += sizeof(word)) {
		memcpy(&word, name + i, sizeof(word));
		h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	if (i < length) {
		word = 0;
		for (size_t shift = 0; i < length; i++, shift += 8)
			word |= (uint64_t)(unsigned char)name[i] << shift;
		h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
	}
	return (unsigned long)mix64(h);
}

static unsigned long
name_hash(const void *object, unsigned long seed)
{
	const struct ckvo_keyinfo *info = object;

	return name_hash_bytes(info->name, info->name_length, seed);
}

static bool
name_equal(const void *stored, const void *probe)
{
	const struct ckvo_keyinfo *a = stored, *b = probe;

	/* ckvo_key_find compares against keyinfos published by key_intern_locked. */
	CKVO_TSAN_ACQUIRE(stored);
	return a->name_length == b->name_length && memcmp(a->name, b->name, a->name_length) == 0;
}

bool
ckvo__names_init(ck_hs_t *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, name_hash, name_equal,
	    &ckvo__hs_allocator, 32, 0x85ebca6bULL);
}

unsigned long
ckvo__name_hash(const ck_hs_t *hs, const char *name, size_t length)
{
	return name_hash_bytes(name, length, hs->seed);
}

/* ------------------------------------------------ observation identities */

static unsigned long
identity_hash_fields(const struct ckvo_observation *obs, unsigned long seed)
{
	uint64_t h = mix64((uint64_t)(uintptr_t)obs->owner ^ seed);

	h = mix64(h ^ (uint64_t)(uintptr_t)obs->object);
	h = mix64(h ^ obs->key);
	h = mix64(h ^ (uint64_t)(uintptr_t)obs->callback);
	return (unsigned long)mix64(h ^ (uint64_t)(uintptr_t)obs->context);
}

static unsigned long
identity_hash(const void *object, unsigned long seed)
{
	return identity_hash_fields(object, seed);
}

/* Both sides carry their hash (obs->identity): most probes end at its comparison. */
static bool
identity_equal(const void *stored, const void *probe)
{
	const struct ckvo_observation *a = stored, *b = probe;

	return a->identity == b->identity && a->owner == b->owner && a->object == b->object &&
	    a->key == b->key && a->callback == b->callback && a->context == b->context;
}

bool
ckvo__identities_init(ck_hs_t *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, identity_hash,
	    identity_equal, &ckvo__hs_allocator, 64, 0xc2b2ae35ULL);
}

unsigned long
ckvo__identity_hash(const ck_hs_t *hs, const struct ckvo_observation *obs)
{
	return identity_hash_fields(obs, hs->seed);
}

/* ------------------------------------------------- owner / object groups */

/* Both group types start with the grouping pointer. */
static unsigned long
group_hash(const void *object, unsigned long seed)
{
	return ckvo__hash_pointer(*(const void *const *)object, seed);
}

static bool
group_equal(const void *stored, const void *probe)
{
	return *(const void *const *)stored == *(const void *const *)probe;
}

bool
ckvo__groups_init(ck_hs_t *hs)
{
	return ck_hs_init(hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, group_hash, group_equal,
	    &ckvo__hs_allocator, 32, 0x27d4eb2fULL);
}

unsigned long
ckvo__group_hash(const ck_hs_t *hs, const void *pointer)
{
	return ckvo__hash_pointer(pointer, hs->seed);
}
