/*
 * slotmap.h — the (object, key) -> slot map (slotmap.c) (never installed):
 * open addressing, read lock-free by dispatch, written by the hub's writer.
 */
#ifndef CKVO_SLOTMAP_H
#define CKVO_SLOTMAP_H

#include "slot.h"

/* A removed slot's bucket: probes go on past it. */
#define CKVO_SLOTMAP_TOMBSTONE ((struct ckvo_slot *)(uintptr_t)1)

struct ckvo_slotmap_table {
	ck_epoch_entry_t retire;
	uint32_t mask; /* capacity - 1; capacity is a power of two */
	struct ckvo_slot *buckets[]; /* NULL, a tombstone or a slot (atomic) */
};

/* The (object, key) → slot map (slotmap.c). */
struct ckvo_slotmap {
	struct ckvo_slotmap_table *table; /* published (atomic), never NULL */
	uint32_t count, tombstones;       /* writer-only */
};

/* The hash of (object, key): one multiply-mix, it is on the dispatch path. */
static inline unsigned long
ckvo__slot_id_hash(const void *object, ckvo_key_t key)
{
	uint64_t x = (uint64_t)(uintptr_t)object ^ ((uint64_t)key * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	return (unsigned long)(x ^ (x >> 32));
}

/* The slot of (object, key), or NULL: lock-free, inside a read section or under the lock. */
static inline struct ckvo_slot *
ckvo__slotmap_get(struct ckvo_slotmap *map, const void *object, ckvo_key_t key)
{
	struct ckvo_slotmap_table *table = ck_pr_load_ptr(&map->table);
	uint32_t i = (uint32_t)ckvo__slot_id_hash(object, key);

	/* Pairs with the release that published the table (its buckets written before). */
	CKVO_TSAN_ACQUIRE(table);
	for (;; i++) {
		struct ckvo_slot *slot = ck_pr_load_ptr(&table->buckets[i & table->mask]);

		if (slot == NULL)
			return NULL;
		if (slot == CKVO_SLOTMAP_TOMBSTONE)
			continue;
		/* Published by slot_publish (registration.c). */
		CKVO_TSAN_ACQUIRE(slot);
		if (slot->id.object == object && slot->id.key == key)
			return slot;
	}
}

/* slotmap.c */
bool ckvo__slotmap_init(struct ckvo_ledger *ledger, struct ckvo_slotmap *map);
void ckvo__slotmap_destroy(struct ckvo_slotmap *map);
bool ckvo__slotmap_reserve(struct ckvo_ledger *ledger, struct ckvo_slotmap *map);
void ckvo__slotmap_put(struct ckvo_slotmap *map, struct ckvo_slot *slot);
void ckvo__slotmap_remove(struct ckvo_ledger *ledger, struct ckvo_slotmap *map,
    struct ckvo_slot *slot);

#endif /* CKVO_SLOTMAP_H */
