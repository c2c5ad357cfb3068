/*
 * table.c — the ck_hs sets a registry is made of (names, owner groups,
 * objects), its hashes, and the identity table.
 *
 * Invariants it alone keeps
 * -------------------------
 * - ck_hs is single-writer, many-reader: every mutation happens inside the
 *   hub's writer session, through the ckvo__set_* functions here, which
 *   leave the set's current map naming its set (map_claim). ck_hs frees a
 *   map it replaced through ckvo__hs_allocator with `defer == true` when
 *   readers may still be probing it: the map's own header says which set it
 *   belonged to, so the free finds that registry's limbo and byte count
 *   from the pointer it is given, never from the calling thread.
 * - A replaced map of a shared set (the names, read lock-free by
 *   ckvo_key_find; the objects, read by listings) is retired into the
 *   registry's limbo and freed after a grace period. The owner set is read
 *   only by writers, so its replaced maps are freed at once.
 * - Every map a set holds counts in registry->bytes, header included, from
 *   the moment the set holds it until it is freed or retired.
 * - ck_hs only grows (at half full, to a quarter). A group set (owners,
 *   objects) under 1/8 full is moved into a map about a third full
 *   (ckvo__set_removed), so a map never has more than 8 buckets per entry
 *   beyond its first size, and each move follows at least a quarter as
 *   many removals or inserts as it copies: amortized O(1).
 * - Stored objects keep their key fields unchanged while stored, and stay
 *   alive until a grace period after removal where the set is shared,
 *   because ck_hs calls the comparison on other stored objects while
 *   probing.
 * - The identity table is not a ck_hs (below): writer-only, freed directly.
 */
#include <stdlib.h>
#include <string.h>

#include "key.h"
#include "slot.h"
#include "table.h"

/* Each map allocation is preceded by the entry that retires it. */
struct map_header {
	ck_epoch_entry_t retire;
	size_t size;
	struct ckvo_set *set; /* the set that held it (counted in its bytes), or NULL */
} __attribute__((aligned(16)));

/* The smallest map a set has: ck_hs_init's and a reset's size. */
#define SET_MIN_CAPACITY 32ul

static void *
hs_malloc(size_t size)
{
	struct map_header *header = malloc(sizeof(*header) + size);

	if (header == NULL)
		return NULL;
	header->size = size;
	header->set = NULL;
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
	struct ckvo_set *set = header->set;

	(void)size;
	if (set == NULL) {
		/* Never a set's map (a growth that failed half way): no reader saw it. */
		free(header);
		return;
	}
	ckvo__bytes(set->ledger, -(ptrdiff_t)(sizeof(*header) + header->size));
	if (defer && set->shared) {
		ckvo__retire(set->ledger->garbage, &header->retire, map_free);
		ckvo__retire_large(set->ledger->garbage, header->size);
		return;
	}
	free(header);
}

static struct ck_malloc hs_allocator = {
	.malloc = hs_malloc,
	.realloc = NULL,
	.free = hs_free,
};

/* Makes the set's current map name the set (after every call that may have replaced it). */
static void
map_claim(struct ckvo_set *set)
{
	struct map_header *header = (struct map_header *)(void *)set->hs.map - 1;

	if (header->set == set)
		return;
	header->set = set;
	ckvo__bytes(set->ledger, (ptrdiff_t)(sizeof(*header) + header->size));
	/* ck_hs maps are a fixed header plus 8-byte buckets. */
	set->capacity = (header->size - set->overhead) / sizeof(void *);
}

static bool
set_init(struct ckvo_set *set, struct ckvo_ledger *ledger, bool shared,
    ck_hs_hash_cb_t *hash, ck_hs_compare_cb_t *compare, unsigned long capacity,
    unsigned long seed)
{
	set->ledger = ledger;
	set->shared = shared;
	if (!ck_hs_init(&set->hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, hash, compare, &hs_allocator,
	    capacity, seed))
		return false;
	set->overhead = (((struct map_header *)(void *)set->hs.map) - 1)->size -
	    capacity * sizeof(void *);
	map_claim(set);
	return true;
}

bool
ckvo__set_put(struct ckvo_set *set, unsigned long hash, const void *object)
{
	bool put = ck_hs_put(&set->hs, hash, object);

	map_claim(set);
	return put;
}

void
ckvo__set_destroy(struct ckvo_set *set)
{
	ck_hs_destroy(&set->hs);
}

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
ckvo__names_init(struct ckvo_set *set, struct ckvo_ledger *ledger)
{
	return set_init(set, ledger, true, name_hash, name_equal, SET_MIN_CAPACITY, 0x85ebca6bULL);
}

unsigned long
ckvo__name_hash(const struct ckvo_set *set, const char *name, size_t length)
{
	return name_hash_bytes(name, length, set->hs.seed);
}

/* ------------------------------------------------ observation identities */

/*
 * registry->identities: open addressing over 32-bit record ids + 1 (0 is empty),
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
	const struct ckvo_entry *entry = &slot->list->items[obs->index];
	const void *owner = obs->owner_group == NULL ? NULL : obs->owner_group->owner;

	return obs->identity == identity->hash && owner == identity->owner &&
	    entry->context == identity->context && slot->id.object == identity->object &&
	    slot->id.key == identity->key &&
	    ckvo__list_callback(slot->list, obs->index) == identity->callback;
}

struct ckvo_observation *
ckvo__identity_find(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    const struct ckvo_identity *identity)
{

	if (table->buckets == NULL)
		return NULL;
	for (uint32_t i = identity->hash & table->mask;; i = (i + 1) & table->mask) {
		uint32_t bucket = table->buckets[i];
		struct ckvo_observation *obs;

		if (bucket == 0)
			return NULL;
		obs = ckvo__token_record(tokens, bucket - 1);
		if (identity_equal(obs, identity))
			return obs;
	}
}

static void
identity_place(struct ckvo_tokens *tokens, uint32_t *buckets, uint32_t mask, uint32_t bucket)
{
	uint32_t i = ckvo__token_record(tokens, bucket - 1)->identity & mask;

	while (buckets[i] != 0)
		i = (i + 1) & mask;
	buckets[i] = bucket;
}

/* Moves the identities into a table of `capacity` buckets; false when out of memory. */
static bool
identity_resize(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_ledger *ledger, uint32_t capacity)
{
	uint32_t *buckets = calloc(capacity, sizeof(*buckets));

	if (buckets == NULL)
		return false;
	for (uint32_t i = 0; table->buckets != NULL && i <= table->mask; i++) {
		if (table->buckets[i] != 0)
			identity_place(tokens, buckets, capacity - 1, table->buckets[i]);
	}
	if (table->buckets != NULL)
		ckvo__bytes(ledger, -(ptrdiff_t)(((size_t)table->mask + 1) * sizeof(*buckets)));
	ckvo__bytes(ledger, (ptrdiff_t)((size_t)capacity * sizeof(*buckets)));
	/* Writer-only: no reader can be probing it. */
	free(table->buckets);
	table->buckets = buckets;
	table->mask = capacity - 1;
	return true;
}

bool
ckvo__identity_reserve(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_ledger *ledger)
{
	uint32_t capacity = table->buckets == NULL ? 0 : table->mask + 1;

	if ((uint64_t)(table->count + 1) * 4 <= (uint64_t)capacity * 3)
		return true;
	if (capacity >= (1u << 31))
		return false;
	return identity_resize(table, tokens, ledger, capacity == 0 ? 64 : capacity * 2);
}

void
ckvo__identity_insert(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_observation *obs)
{

	identity_place(tokens, table->buckets, table->mask, obs->id + 1);
	table->count++;
}

void
ckvo__identity_remove(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_ledger *ledger, struct ckvo_observation *obs)
{
	uint32_t mask = table->mask, hole = obs->identity & mask;

	while (table->buckets[hole] != obs->id + 1)
		hole = (hole + 1) & mask;
	table->count--;

	/*
	 * Shift back every later member of the cluster whose home is not
	 * cyclically in (hole, i]: lookups that passed the hole still find it.
	 */
	for (uint32_t i = (hole + 1) & mask; table->buckets[i] != 0; i = (i + 1) & mask) {
		uint32_t home = ckvo__token_record(tokens, table->buckets[i] - 1)->identity & mask;

		if (((i - home) & mask) >= ((i - hole) & mask)) {
			table->buckets[hole] = table->buckets[i];
			hole = i;
		}
	}
	table->buckets[hole] = 0;

	/*
	 * Shrinks after a spike: below 1/8 full, to half the size (under 1/4
	 * full, so a quarter of the entries must go, or the table double, before
	 * the next resize: amortized O(1)); at most 8 buckets per entry beyond
	 * the first 64. Out of memory: it keeps its size.
	 */
	if (mask + 1 > 64 && (uint64_t)table->count * 8 < (uint64_t)mask + 1)
		(void)identity_resize(table, tokens, ledger, (mask + 1) / 2);
}

void
ckvo__identities_destroy(struct ckvo_identities *table, struct ckvo_ledger *ledger)
{
	if (table->buckets != NULL)
		ckvo__bytes(ledger, -(ptrdiff_t)(((size_t)table->mask + 1) * sizeof(uint32_t)));
	free(table->buckets);
	memset(table, 0, sizeof(*table));
}

/* ------------------------------------------------- owner groups, objects */

/* Owner groups and slots (the objects set) both start with the pointer they are found by. */
static unsigned long
group_hash(const void *object, unsigned long seed)
{
	return ckvo__hash_pointer(*(const void *const *)object, seed);
}

static bool
group_equal(const void *stored, const void *probe)
{
	/* A listing probes the objects set: the slot was published by slot_publish. */
	CKVO_TSAN_ACQUIRE(stored);
	return *(const void *const *)stored == *(const void *const *)probe;
}

bool
ckvo__groups_init(struct ckvo_set *set, struct ckvo_ledger *ledger, bool shared)
{
	return set_init(set, ledger, shared, group_hash, group_equal, SET_MIN_CAPACITY,
	    0x27d4eb2fULL);
}

unsigned long
ckvo__group_hash(const struct ckvo_set *set, const void *pointer)
{
	return ckvo__hash_pointer(pointer, set->hs.seed);
}

/*
 * Moves the entries of `set` into a new map of about three buckets each
 * (an empty one when none is left), published with one store as ck_hs
 * publishes a grown map; the old map is freed, or retired when the set is
 * shared. False (and `set` unchanged) when out of memory.
 */
static bool
set_resize(struct ckvo_set *set)
{
	ck_hs_iterator_t iterator = CK_HS_ITERATOR_INITIALIZER;
	unsigned long count = ck_hs_count(&set->hs);
	struct ck_hs_map *old = set->hs.map;
	ck_hs_t fresh;
	void *entry;

	if (count == 0) {
		/* Publishes an empty map and hands the old one to hs_free, deferred. */
		if (!ck_hs_reset_size(&set->hs, SET_MIN_CAPACITY))
			return false;
		map_claim(set);
		return true;
	}
	/* Under half full: no put below grows it. */
	if (!ck_hs_init(&fresh, set->hs.mode, set->hs.hf, set->hs.compare, set->hs.m,
	    count * 3 < SET_MIN_CAPACITY ? SET_MIN_CAPACITY : count * 3, set->hs.seed))
		return false;
	while (ck_hs_next(&set->hs, &iterator, &entry)) {
		if (!ck_hs_put(&fresh, set->hs.hf(entry, fresh.seed), entry)) {
			ck_hs_destroy(&fresh);
			return false;
		}
	}
	/* The copied entries are visible before the map is (readers of a shared set). */
	CKVO_TSAN_RELEASE(fresh.map);
	ck_pr_fence_store();
	ck_pr_store_ptr(&set->hs.map, fresh.map);
	hs_free(old, 0, true);
	map_claim(set);
	return true;
}

void
ckvo__set_removed(struct ckvo_set *set)
{
	/* Out of memory: it keeps its size until the next removal tries again. */
	if (set->capacity > SET_MIN_CAPACITY && ck_hs_count(&set->hs) * 8 < set->capacity)
		(void)set_resize(set);
}
