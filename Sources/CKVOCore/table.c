/*
 * table.c — the ck_hs hash sets a hub is made of: allocator, hashes and
 * comparisons.
 *
 * ck_hs is single-writer, many-reader: every mutation happens under the
 * hub's writer lock. When a table grows, ck_hs frees the old map with
 * `defer == true` because readers may still be probing it; that free must
 * wait a grace period, so it is retired (reclaim.c) on the hub whose lock
 * this thread holds (ckvo__thread.writing). Tables only writers read
 * (owners, objects) go the same way, which is merely conservative; the
 * names are also read lock-free (ckvo_key_find). The identity table is not
 * a ck_hs: see below.
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
	struct ckvo_hub *counted; /* the hub whose bytes count it, or NULL (created with the hub) */
} __attribute__((aligned(16)));

static void *
hs_malloc(size_t size)
{
	struct map_header *header = malloc(sizeof(*header) + size);

	if (header == NULL)
		return NULL;
	header->size = size;
	header->counted = ckvo__thread.writing;
	if (header->counted != NULL)
		ckvo__bytes(header->counted, (ptrdiff_t)(sizeof(*header) + size));
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

	if (header->counted != NULL)
		ckvo__bytes(header->counted, -(ptrdiff_t)(sizeof(*header) + header->size));

	if (defer && hub != NULL) {
		ckvo__retire(hub, &header->retire, map_free);
		ckvo__retire_large(hub, size);
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

/*
 * hub->identities: open addressing over 32-bit record ids + 1 (0 is empty),
 * linear probing, at most 3/4 full, deletion by shifting later members of
 * the cluster back (no tombstones). Writer-only, so it is freed directly.
 * Each record keeps its 32-bit hash (obs->identity); the other fields of
 * its identity come from its slot, its list entry and itself, so a bucket
 * costs four bytes.
 */

uint32_t
ckvo__identity_hash(const struct ckvo_identity *identity)
{
	uint64_t h = mix64((uint64_t)(uintptr_t)identity->owner ^ 0xc2b2ae35ULL);

	h = mix64(h ^ (uint64_t)(uintptr_t)identity->object);
	h = mix64(h ^ identity->key);
	h = mix64(h ^ (uint64_t)(uintptr_t)identity->callback);
	return (uint32_t)mix64(h ^ (uint64_t)(uintptr_t)identity->context);
}

/* Whether live record `obs` has identity `identity`. */
static bool
identity_equal(const struct ckvo_observation *obs, const struct ckvo_identity *identity)
{
	const struct ckvo_slot *slot = obs->slot;
	const void *owner = obs->owner_group == NULL ? NULL : obs->owner_group->owner;

	return obs->identity == identity->hash && owner == identity->owner &&
	    obs->context == identity->context && slot->id.object == identity->object &&
	    slot->id.key == identity->key &&
	    slot->list->items[obs->index].callback == identity->callback;
}

struct ckvo_observation *
ckvo__identity_find(struct ckvo_hub *hub, const struct ckvo_identity *identity)
{
	struct ckvo_identities *table = &hub->identities;

	if (table->buckets == NULL)
		return NULL;
	for (uint32_t i = identity->hash & table->mask;; i = (i + 1) & table->mask) {
		uint32_t bucket = table->buckets[i];
		struct ckvo_observation *obs;

		if (bucket == 0)
			return NULL;
		obs = ckvo__token_record(hub, bucket - 1);
		if (identity_equal(obs, identity))
			return obs;
	}
}

static void
identity_place(struct ckvo_hub *hub, uint32_t *buckets, uint32_t mask, uint32_t bucket)
{
	uint32_t i = ckvo__token_record(hub, bucket - 1)->identity & mask;

	while (buckets[i] != 0)
		i = (i + 1) & mask;
	buckets[i] = bucket;
}

/* Moves the identities into a table of `capacity` buckets; false when out of memory. */
static bool
identity_resize(struct ckvo_hub *hub, uint32_t capacity)
{
	struct ckvo_identities *table = &hub->identities;
	uint32_t *buckets = calloc(capacity, sizeof(*buckets));

	if (buckets == NULL)
		return false;
	for (uint32_t i = 0; table->buckets != NULL && i <= table->mask; i++) {
		if (table->buckets[i] != 0)
			identity_place(hub, buckets, capacity - 1, table->buckets[i]);
	}
	if (table->buckets != NULL)
		ckvo__bytes(hub, -(ptrdiff_t)(((size_t)table->mask + 1) * sizeof(*buckets)));
	ckvo__bytes(hub, (ptrdiff_t)((size_t)capacity * sizeof(*buckets)));
	/* Writer-only: no reader can be probing it. */
	free(table->buckets);
	table->buckets = buckets;
	table->mask = capacity - 1;
	return true;
}

bool
ckvo__identity_reserve(struct ckvo_hub *hub)
{
	struct ckvo_identities *table = &hub->identities;
	uint32_t capacity = table->buckets == NULL ? 0 : table->mask + 1;

	if ((uint64_t)(table->count + 1) * 4 <= (uint64_t)capacity * 3)
		return true;
	if (capacity >= (1u << 31))
		return false;
	return identity_resize(hub, capacity == 0 ? 64 : capacity * 2);
}

void
ckvo__identity_insert(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	struct ckvo_identities *table = &hub->identities;

	identity_place(hub, table->buckets, table->mask, obs->id + 1);
	table->count++;
}

void
ckvo__identity_remove(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	struct ckvo_identities *table = &hub->identities;
	uint32_t mask = table->mask, hole = obs->identity & mask;

	while (table->buckets[hole] != obs->id + 1)
		hole = (hole + 1) & mask;
	table->count--;

	/*
	 * Shift back every later member of the cluster whose home is not
	 * cyclically in (hole, i]: lookups that passed the hole still find it.
	 */
	for (uint32_t i = (hole + 1) & mask; table->buckets[i] != 0; i = (i + 1) & mask) {
		uint32_t home = ckvo__token_record(hub, table->buckets[i] - 1)->identity & mask;

		if (((i - home) & mask) >= ((i - hole) & mask)) {
			table->buckets[hole] = table->buckets[i];
			hole = i;
		}
	}
	table->buckets[hole] = 0;

	/*
	 * Shrinks after a spike: below 1/16 full, to a quarter of the size
	 * (1/4 full at most, so the next growth is as far away as the last
	 * shrink: amortized O(1)). Out of memory: it keeps its size.
	 */
	if (mask + 1 > 64 && (uint64_t)table->count * 16 < (uint64_t)mask + 1)
		(void)identity_resize(hub, (mask + 1) / 4);
}

void
ckvo__identities_destroy(struct ckvo_hub *hub)
{
	if (hub->identities.buckets != NULL)
		ckvo__bytes(hub, -(ptrdiff_t)(((size_t)hub->identities.mask + 1) * sizeof(uint32_t)));
	free(hub->identities.buckets);
	memset(&hub->identities, 0, sizeof(hub->identities));
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

/*
 * Moves the groups of `hs` into a new set sized for them and frees the old
 * map at once: only writers ever read these sets, under the lock, so no
 * reader can be probing it. False (and `hs` unchanged) when out of memory.
 */
bool
ckvo__groups_resize(ck_hs_t *hs)
{
	ck_hs_iterator_t iterator = CK_HS_ITERATOR_INITIALIZER;
	unsigned long count = ck_hs_count(hs);
	ck_hs_t fresh;
	void *group;

	/* Room for twice the groups: ck_hs grows at half full, so no put below allocates. */
	if (!ck_hs_init(&fresh, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, group_hash, group_equal,
	    &ckvo__hs_allocator, count * 4 < 32 ? 32 : count * 4, hs->seed))
		return false;
	while (ck_hs_next(hs, &iterator, &group)) {
		if (!ck_hs_put(&fresh, ckvo__group_hash(&fresh, *(const void *const *)group), group)) {
			ck_hs_destroy(&fresh);
			return false;
		}
	}
	ck_hs_destroy(hs);
	*hs = fresh;
	return true;
}
