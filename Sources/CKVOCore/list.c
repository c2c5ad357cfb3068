/*
 * list.c — a slot's observer list: append-only, read lock-free.
 *
 * Invariants it alone keeps
 * -------------------------
 * - Only the writer (under the hub lock) changes a list. Readers load
 *   slot->list, then list->count once, and visit items[0, count). So an
 *   observation appended during a dispatch is not visited by it (the
 *   snapshot rule), and a list never changes under a reader except for
 *   entries being cleared.
 * - Append: fill items[count], then publish count + 1 with a store fence in
 *   between, so a reader that sees the new count sees the entry.
 * - Remove: clear items[obs->index].observation in the current list. Entries
 *   carry the callback, the context and the options, so a reader normally
 *   never touches the observation itself. It does check the state in obs->tag
 *   (REMOVED or DEFERRED) when its list is `stale` (replaced: later removals clear
 *   entries only in the new list) or when the slot counts `deferred`
 *   observations (marked dead by readers, who cannot clear entries). The
 *   observation is reused only after a grace period, and its token page is
 *   retired through the epoch, so the pointer stays valid for the reader's
 *   section.
 * - When the list is full, or cleared entries outnumber live ones, the live
 *   entries are copied, in order, into a new list that is published with one
 *   pointer store; the old list is retired. Each copy is paid for by the
 *   appends or removals since the previous one: amortized O(1) per operation,
 *   so a million observers on one key register in linear time. A new slot's
 *   list holds one entry, in the slot's own allocation (freed with the
 *   slot, never retired on its own), and a full list that only grew gets
 *   room for half as many again: most slots have one observer, and a long
 *   list carries less unused room. A full list holding cleared entries
 *   (observers come and go) gets room for as many again, so churn copies it
 *   half as often.
 */
#include <stdlib.h>

#include "slot.h"

/* Compact once at least this many entries are cleared and they outnumber the live ones. */
#define CKVO_LIST_COMPACT_MIN 16u

/*
 * A list allocated on its own comes right behind the limbo entry that
 * retires it, so the list itself carries no word a reader never reads.
 */
static size_t
list_size(uint32_t capacity, bool mixed)
{
	return sizeof(ck_epoch_entry_t) + sizeof(struct ckvo_list) + (size_t)capacity *
	    (sizeof(struct ckvo_entry) + (mixed ? sizeof(ckvo_callback_t) : 0));
}

static ck_epoch_entry_t *
list_retire_entry(struct ckvo_list *list)
{
	return (ck_epoch_entry_t *)(void *)list - 1;
}

static void
list_init(struct ckvo_list *list, uint32_t capacity, bool mixed, ckvo_callback_t callback)
{
	list->count = 0;
	list->capacity = capacity;
	list->stale = 0;
	list->mixed = mixed;
	list->callback = callback;
}

/*
 * A list for `capacity` entries: all calling `callback`, or, `mixed`, each
 * its own, `callback` being the first's.
 */
static struct ckvo_list *
list_create(uint32_t capacity, bool mixed, ckvo_callback_t callback)
{
	ck_epoch_entry_t *retire = malloc(list_size(capacity, mixed));
	struct ckvo_list *list;

	if (retire == NULL)
		return NULL;
	list = (struct ckvo_list *)(void *)(retire + 1);
	list_init(list, capacity, mixed, callback);
	return list;
}

void
ckvo__list_init_first(struct ckvo_slot *slot, ckvo_callback_t callback)
{
	slot->list = ckvo__slot_first_list(slot);
	list_init(slot->list, 1, false, callback);
}

static void
list_free(ck_epoch_entry_t *entry)
{
	free(entry);
}

/* Retires `list` of `slot`, unless it is the slot's first, which goes with the slot. */
static void
list_retire(struct ckvo_ledger *ledger, struct ckvo_slot *slot, struct ckvo_list *list)
{
	if (list == ckvo__slot_first_list(slot))
		return;
	ckvo__bytes(ledger, -(ptrdiff_t)list_size(list->capacity, list->mixed));
	ckvo__retire(ledger->garbage, list_retire_entry(list), list_free);
}

void
ckvo__list_drop(struct ckvo_ledger *ledger, struct ckvo_slot *slot)
{
	list_retire(ledger, slot, slot->list);
}

/*
 * Whether the `live` entries of `list` and then `adding` (unless NULL) have
 * more than one callback between them; `*first` is the first of them.
 */
static bool
list_needs_mixed(const struct ckvo_list *list, uint32_t live, ckvo_callback_t adding,
    ckvo_callback_t *first)
{
	bool mixed = false;

	*first = NULL;
	if (!list->mixed) {
		/* One callback for all: no entry to look at. */
		*first = live != 0 ? list->callback : adding;
		return adding != NULL && adding != *first;
	}
	for (uint32_t i = 0; i < list->count; i++) {
		ckvo_callback_t callback;

		if (list->items[i].observation == 0)
			continue;
		callback = ckvo__list_callback(list, i);
		if (*first == NULL)
			*first = callback;
		else if (callback != *first)
			mixed = true;
	}
	if (adding != NULL) {
		if (*first == NULL)
			*first = adding;
		else if (adding != *first)
			mixed = true;
	}
	return mixed;
}

/*
 * Copies the live entries of the current list into a new one with room to
 * grow, in the form `adding`, appended next, needs too (NULL: a compaction).
 */
static bool
list_rebuild(struct ckvo_ledger *ledger, struct ckvo_slot *slot, uint32_t capacity,
    ckvo_callback_t adding)
{
	struct ckvo_list *old = slot->list;
	ckvo_callback_t first;
	bool mixed = list_needs_mixed(old, slot->live, adding, &first);
	struct ckvo_list *list = list_create(capacity, mixed, first);
	uint32_t n = 0;

	if (list == NULL)
		return false;
	ckvo__bytes(ledger, (ptrdiff_t)list_size(capacity, mixed));
	for (uint32_t i = 0; i < old->count; i++) {
		uint64_t observation = old->items[i].observation;

		if (observation == 0)
			continue;
		ckvo__entry_observation(observation)->index = n;
		if (mixed)
			ckvo__list_callbacks(list)[n] = ckvo__list_callback(old, i);
		list->items[n++] = old->items[i];
	}
	list->count = n;
	slot->dead = 0;

	/* The copied entries are visible before the list is. */
	CKVO_TSAN_RELEASE(list);
	ck_pr_fence_store();
	ck_pr_store_ptr(&slot->list, list);
	/* Before any later removal: readers still on `old` must check states. */
	ck_pr_store_32(&old->stale, 1);
	if (old != ckvo__slot_first_list(slot))
		ckvo__retire_large(ledger->garbage, list_size(old->capacity, old->mixed));
	list_retire(ledger, slot, old);
	return true;
}

/* The CKVO_ENTRY_* bits of `options`. */
static uint64_t
entry_bits(ckvo_options_t options)
{
	return ((options & CKVO_OPTION_NEW) != 0 ? CKVO_ENTRY_NEW : 0) |
	    ((options & CKVO_OPTION_OLD) != 0 ? CKVO_ENTRY_OLD : 0) |
	    ((options & CKVO_OPTION_PRIOR) != 0 ? CKVO_ENTRY_PRIOR : 0);
}

bool
ckvo__list_append(struct ckvo_ledger *ledger, struct ckvo_slot *slot, struct ckvo_observation *obs,
    ckvo_callback_t callback, void *context)
{
	struct ckvo_list *list = slot->list;
	uint32_t count;

	/* Full, or holding one callback for all that is not this one. */
	if (list->count == list->capacity || (!list->mixed && list->callback != callback)) {
		uint64_t room = slot->dead != 0 ? slot->live : slot->live / 2;
		uint64_t wanted = (uint64_t)slot->live + room + 2;

		if (wanted > UINT32_MAX)
			return false;
		if (!list_rebuild(ledger, slot, (uint32_t)wanted, callback))
			return false;
		list = slot->list;
	}

	count = list->count;
	if (list->mixed)
		ckvo__list_callbacks(list)[count] = callback;
	list->items[count] = (struct ckvo_entry){
		.context = context,
		.observation = (uint64_t)(uintptr_t)obs | entry_bits(ckvo__tag_options(obs->tag)),
	};
	obs->slot = slot;
	obs->index = count;
	slot->live++;

	/* The entry and the observation it points to are visible before the count. */
	CKVO_TSAN_RELEASE(list);
	ck_pr_fence_store();
	ck_pr_store_32(&list->count, count + 1);
	return true;
}

void
ckvo__list_remove(struct ckvo_ledger *ledger, struct ckvo_slot *slot, struct ckvo_observation *obs)
{
	struct ckvo_list *list = slot->list;

	ck_pr_store_64(&list->items[obs->index].observation, 0);
	slot->live--;
	slot->dead++;
	if (slot->live > 0 && slot->dead >= CKVO_LIST_COMPACT_MIN && slot->dead > slot->live) {
		/*
		 * live < dead <= UINT32_MAX, so live * 2 fits in 64 bits; capped,
		 * it still leaves room for every live entry. On allocation failure
		 * the cleared entries simply stay until the next try.
		 */
		uint64_t wanted = (uint64_t)slot->live * 2;

		(void)list_rebuild(ledger, slot, wanted > UINT32_MAX ? UINT32_MAX : (uint32_t)wanted,
		    NULL);
	}
}
