/*
 * slotmap.c — the (object, key) → slot map that dispatch reads lock-free.
 *
 * An open-addressing table of slot pointers with linear probing, written
 * under the hub lock and probed by readers inside their read sections. It
 * replaces a general hash set on the dispatch path: a probe is a hash, a
 * bucket load and the slot's own id, which the dispatch reads next anyway.
 *
 * Invariants it alone keeps
 * -------------------------
 * - A bucket is NULL (empty: probes stop), a tombstone (a removed slot:
 *   probes go on) or a published slot. Live slots and tombstones fill at
 *   most 3/4 of a table, so every probe meets an empty bucket.
 * - Insert, after ckvo__slotmap_reserve made room (so it cannot fail),
 *   stores the slot, complete and fenced by the caller (slot_publish), into the first empty or tombstone bucket of its probe
 *   sequence. A reader that probes past that bucket before the store misses
 *   the slot; its dispatch began before the registration returned.
 * - Remove turns the slot's bucket into a tombstone, or empties it when the
 *   next bucket is empty (no probe sequence goes on from there), and then
 *   empties the tombstones just before it for the same reason. Buckets never
 *   move within a table, so a reader never misses a slot that stays.
 * - When live slots would pass half of a table, or live slots and tombstones
 *   3/4 of it, or fall under 1/8 of it, the writer copies the live slots into a new table, publishes
 *   it with one store after a store fence, and retires the old one: readers
 *   still probing it are in read sections, and nothing writes it any more.
 * - A removed slot is retired by its remover (registration.c), so a reader that
 *   loaded it before the tombstone may finish comparing it.
 */
#include <stdlib.h>

#include "slotmap.h"

#define SLOTMAP_MIN_CAPACITY 64u

static size_t
table_size(uint32_t capacity)
{
	return sizeof(struct ckvo_slotmap_table) + (size_t)capacity * sizeof(struct ckvo_slot *);
}

static struct ckvo_slotmap_table *
table_create(uint32_t capacity)
{
	struct ckvo_slotmap_table *table = calloc(1, table_size(capacity));

	if (table != NULL)
		table->mask = capacity - 1;
	return table;
}

bool
ckvo__slotmap_init(struct ckvo_ledger *ledger, struct ckvo_slotmap *map)
{
	map->table = table_create(SLOTMAP_MIN_CAPACITY);
	map->count = 0;
	map->tombstones = 0;
	if (map->table == NULL)
		return false;
	ckvo__bytes(ledger, (ptrdiff_t)table_size(SLOTMAP_MIN_CAPACITY));
	return true;
}

void
ckvo__slotmap_destroy(struct ckvo_slotmap *map)
{
	free(map->table);
	map->table = NULL;
}

static void
table_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_slotmap_table, retire, entry));
}

/* The first empty or tombstone bucket of the probe sequence of (object, key). */
static uint32_t
table_free_bucket(const struct ckvo_slotmap_table *table, const void *object, ckvo_key_t key)
{
	uint32_t i = (uint32_t)ckvo__slot_id_hash(object, key) & table->mask;

	while (table->buckets[i] != NULL && table->buckets[i] != CKVO_SLOTMAP_TOMBSTONE)
		i = (i + 1) & table->mask;
	return i;
}

/* Replaces the table by one with room for `count` + 1 live slots and no tombstones. */
static bool
slotmap_rebuild(struct ckvo_ledger *ledger, struct ckvo_slotmap *map)
{
	struct ckvo_slotmap_table *old = map->table, *table;
	uint32_t capacity = SLOTMAP_MIN_CAPACITY;

	while ((uint64_t)(map->count + 1) * 2 > capacity) {
		if (capacity >= (1u << 30))
			return false;
		capacity *= 2;
	}
	table = table_create(capacity);
	if (table == NULL)
		return false;
	for (uint32_t i = 0; i <= old->mask; i++) {
		struct ckvo_slot *slot = old->buckets[i];

		if (slot != NULL && slot != CKVO_SLOTMAP_TOMBSTONE)
			table->buckets[table_free_bucket(table, slot->id.object, slot->id.key)] = slot;
	}
	map->tombstones = 0;

	/* The copied buckets are visible before the table is. */
	CKVO_TSAN_RELEASE(table);
	ck_pr_fence_store();
	ck_pr_store_ptr(&map->table, table);
	ckvo__bytes(ledger, (ptrdiff_t)table_size(capacity) - (ptrdiff_t)table_size(old->mask + 1));
	ckvo__retire(ledger->garbage, &old->retire, table_free);
	ckvo__retire_large(ledger->garbage, table_size(old->mask + 1));
	return true;
}

bool
ckvo__slotmap_reserve(struct ckvo_ledger *ledger, struct ckvo_slotmap *map)
{
	uint64_t capacity = (uint64_t)map->table->mask + 1;

	if ((uint64_t)(map->count + 1) * 2 > capacity ||
	    (uint64_t)(map->count + map->tombstones + 1) * 4 > capacity * 3)
		return slotmap_rebuild(ledger, map);
	return true;
}

void
ckvo__slotmap_put(struct ckvo_slotmap *map, struct ckvo_slot *slot)
{
	struct ckvo_slotmap_table *table = map->table;
	uint32_t i;

	i = table_free_bucket(table, slot->id.object, slot->id.key);
	if (table->buckets[i] == CKVO_SLOTMAP_TOMBSTONE)
		map->tombstones--;
	/* The caller fenced the slot's contents (slot_publish). */
	ck_pr_store_ptr(&table->buckets[i], slot);
	map->count++;
}

void
ckvo__slotmap_remove(struct ckvo_ledger *ledger, struct ckvo_slotmap *map, struct ckvo_slot *slot)
{
	struct ckvo_slotmap_table *table = map->table;
	uint32_t mask = table->mask;
	uint32_t i = (uint32_t)ckvo__slot_id_hash(slot->id.object, slot->id.key) & mask;

	while (table->buckets[i] != slot)
		i = (i + 1) & mask;
	map->count--;
	if (table->buckets[(i + 1) & mask] != NULL) {
		ck_pr_store_ptr(&table->buckets[i], CKVO_SLOTMAP_TOMBSTONE);
		map->tombstones++;
	} else {
		/* The end of a cluster: this bucket and the tombstones before it end no probe. */
		ck_pr_store_ptr(&table->buckets[i], NULL);
		for (i = (i - 1) & mask; table->buckets[i] == CKVO_SLOTMAP_TOMBSTONE;
		    i = (i - 1) & mask) {
			ck_pr_store_ptr(&table->buckets[i], NULL);
			map->tombstones--;
		}
	}
	/*
	 * Shrinks after a spike: below 1/8 full, rebuilt for what is left
	 * (over 1/4 full, so at least half the slots must go before the next
	 * shrink: amortized O(1)); at most 8 buckets per slot beyond the first
	 * 64. The old table is retired like a grown one. Out of memory: it
	 * keeps its size.
	 */
	if (mask + 1 > SLOTMAP_MIN_CAPACITY && (uint64_t)map->count * 8 < (uint64_t)mask + 1)
		(void)slotmap_rebuild(ledger, map);
}
