/*
 * slot.h — a slot, the observers of one (object, key), and its observer
 * list (list.c) (never installed). Dispatch reads a slot's list lock-free.
 */
#ifndef CKVO_SLOT_H
#define CKVO_SLOT_H

#include "ledger.h"
#include "observation.h"

/*
 * An observer list. Writers append at items[count] and then publish the new
 * count; readers read `count` once per dispatch and never look past it. A
 * list whose capacity is exhausted, or that holds too many removed entries,
 * is replaced by a compacted copy and retired. Cost is amortized O(1) per
 * registration and removal. A slot's first list, room for one entry, is
 * allocated with the slot and goes with it (ckvo__slot_first_list); a
 * larger one is allocated behind the limbo entry that retires it (list.c).
 *
 * Observers of one (object, key) usually share one callback (every Swift
 * observation has the same trampoline): the list then holds it once, in
 * `callback`, and its entries are two words. A list whose observations have
 * several callbacks is `mixed`: an array of `capacity` callbacks follows its
 * entries, and `callback` is its first entry's, so that a one-observer
 * dispatch reads one field either way. A list never changes form: an append
 * that needs the other form replaces the list (list.c).
 */
struct ckvo_list {
	uint32_t count;    /* published length (atomic) */
	uint32_t capacity;
	uint32_t stale;    /* replaced: removals no longer clear entries here (atomic) */
	uint32_t mixed;    /* one callback per entry (fixed) */
	ckvo_callback_t callback; /* every entry's, or the first entry's when mixed (fixed) */
	struct ckvo_entry items[];
};

/* The callbacks of a mixed list, one per entry. */
static inline ckvo_callback_t *
ckvo__list_callbacks(const struct ckvo_list *list)
{
	return (ckvo_callback_t *)(uintptr_t)&list->items[list->capacity];
}

/* The callback of entry `i` of `list`. */
static inline ckvo_callback_t
ckvo__list_callback(const struct ckvo_list *list, uint32_t i)
{
	return CKVO_LIKELY(!list->mixed) ? list->callback : ckvo__list_callbacks(list)[i];
}

struct ckvo_keyinfo;

/* What the (object, key) → slot map is keyed by. */
struct ckvo_slot_id {
	const void *object;
	ckvo_key_t key;
};

/*
 * The observers of one (object, key); object == NULL is a key's wildcard slot.
 * `id.object` comes first: registry->objects stores an object's first slot and
 * hashes and compares it by that field (table.c).
 */
struct ckvo_slot {
	struct ckvo_slot_id id; /* never changes while in the map */
	struct ckvo_list *list; /* published (atomic) */
	uint64_t deferred;  /* observations marked DEFERRED, not yet unlinked (atomic) */

	/*
	 * The next older slot of its object (atomic): registry->objects holds an
	 * object's newest slot, and a listing follows these lock-free. Kept once
	 * the slot is unpublished, so a listing standing on it walks on.
	 */
	struct ckvo_slot *next;
	union {
		/* While published (writer-only). */
		struct {
			uint32_t live, dead;    /* live and cleared entries in `list` */
			struct ckvo_slot *prev; /* the next newer slot of its object */
		};
		/* Once unpublished (slot_drop): its entry in the limbo. */
		ck_epoch_entry_t retire;
	};
	/* Followed, in the same allocation, by its first list (ckvo__slot_first_list). */
};

/* Bytes of a slot and its first list, one entry long: most slots have one observer. */
#define CKVO_SLOT_BLOCK_SIZE \
	(sizeof(struct ckvo_slot) + sizeof(struct ckvo_list) + sizeof(struct ckvo_entry))
_Static_assert(sizeof(struct ckvo_slot) % _Alignof(struct ckvo_list) == 0,
    "the first list follows its slot aligned");

/*
 * The list allocated with `slot`: its list until the first one that outgrows
 * it, never retired on its own, freed with the slot (whose grace period
 * covers every reader that can still reach it).
 */
static inline struct ckvo_list *
ckvo__slot_first_list(struct ckvo_slot *slot)
{
	return (struct ckvo_list *)(void *)(slot + 1);
}

/* list.c */
void ckvo__list_init_first(struct ckvo_slot *slot, ckvo_callback_t callback);
bool ckvo__list_append(struct ckvo_ledger *ledger, struct ckvo_slot *slot,
    struct ckvo_observation *obs, ckvo_callback_t callback, void *context);
void ckvo__list_remove(struct ckvo_ledger *ledger, struct ckvo_slot *slot,
    struct ckvo_observation *obs);
void ckvo__list_drop(struct ckvo_ledger *ledger, struct ckvo_slot *slot);

#endif /* CKVO_SLOT_H */
