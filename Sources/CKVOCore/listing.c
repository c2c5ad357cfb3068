/*
 * listing.c — an object's observations, read lock-free (SPEC §2.20).
 *
 * Invariants it alone keeps
 * -------------------------
 * - A listing is a reader: it runs inside one epoch read section, takes no
 *   lock, writes nothing shared but this thread's reader record, and
 *   allocates nothing. It reads what a dispatch reads — the key array, the
 *   key's wildcard slot or the (object, key) slot, the slot's list and the
 *   entries below its count — so everything it loads stays alive until the
 *   section ends, as for a dispatch (dispatch.c).
 * - It reports an entry only when its record's tag says LIVE. The record
 *   of a non-cleared entry of a list loaded in the section was not removed
 *   before that load, so it is not reused while the section lasts
 *   (token.c): the generation, options, slot and owner group read from it
 *   belong to the observation the entry names. A LIVE tag was stored after
 *   the record was complete (registration.c, with a store fence), and is read
 *   before the fields that follow.
 * - The owner comes from the record's owner group, which is retired, not
 *   freed, when its last observation leaves (registration.c): a group the
 *   listing reaches through a record it found LIVE is alive for the
 *   section. `owner` never changes while the group lives.
 * - An object's slots are found from its entry in registry->objects (its
 *   newest slot) along slot->next, never by key: the cost is the object's,
 *   not the hub's. Every slot reached was linked at some moment of the
 *   section (a slot's `next` is only changed while it is linked, and kept
 *   once it is not), so it is retired after the section began and stays
 *   alive; `next` only leads to older slots, so the walk ends. Keys come
 *   out in interning order: each pass over the slots takes the
 *   LISTING_BATCH smallest keys above the last one listed.
 */
#include "engine.h"

/* Keys one pass over an object's slots sorts (on the stack); more take more passes. */
#define LISTING_BATCH 64

/* Slots (or, for NULL, keys) this thread's listings have examined: read by tests. */
_Thread_local uint64_t ckvo__listing_steps;

/* The state of one listing: where the next found observation goes. */
struct listing {
	ckvo_observation_info_t *out; /* copied into, when there is no visitor */
	size_t capacity;
	size_t count;
	ckvo_observation_visitor_t visit; /* called instead, inside the section */
	void *arg;
};

/* Adds the live observations of `slot` (may be NULL), in registration order. */
static void
list_slot(struct listing *l, struct ckvo_slot *slot, ckvo_key_t key)
{
	struct ckvo_list *list;
	uint32_t count;

	if (slot == NULL)
		return;
	/* Published by slot_publish (registration.c). */
	CKVO_TSAN_ACQUIRE(slot);
	list = ck_pr_load_ptr(&slot->list);
	count = ck_pr_load_32(&list->count);
	/* Entries below the count were written before it was published. */
	ck_pr_fence_load();
	CKVO_TSAN_ACQUIRE(list);
	for (uint32_t i = 0; i < count; i++) {
		const struct ckvo_entry *entry = &list->items[i];
		uint64_t observation = ck_pr_load_64(&entry->observation);
		struct ckvo_observation *obs;
		struct ckvo_owner_group *group;
		uint64_t tag;

		if (observation == 0)
			continue; /* removed from the current list */
		obs = ckvo__entry_observation(observation);
		tag = ck_pr_load_64(&obs->tag);
		if (ckvo__tag_state(tag) != CKVO_STATE_LIVE)
			continue;
		/* The fields below were written before the tag went LIVE (ckvo__registry_add). */
		ck_pr_fence_load();
		CKVO_TSAN_ACQUIRE(obs);
		group = ck_pr_load_ptr(&obs->owner_group);
		/*
		 * Once unlinked, the record holds its `origin` where `owner_group`
		 * was, stored after its state left LIVE (registration.c): the same
		 * tag after the load means the group was still the one read.
		 */
		ck_pr_fence_load();
		if (ck_pr_load_64(&obs->tag) != tag)
			continue;
		if (l->visit != NULL || l->count < l->capacity) {
			ckvo_observation_info_t info = {
				.token = ckvo__token_of(obs),
				.key = key,
				.options = ckvo__tag_options(tag),
				.owner = group == NULL ? NULL : group->owner,
				.callback = ckvo__list_callback(list, i),
				.context = entry->context,
			};
			if (l->visit != NULL)
				l->visit(&info, l->arg);
			else
				l->out[l->count] = info;
		}
		l->count++;
	}
}

/*
 * Fills `batch` with the slots of the LISTING_BATCH smallest keys above
 * `after` among the slots linked from `first`, sorted by key; one slot per
 * key, the newest (a key's older slot was emptied before its newer one was
 * made). Returns how many it holds; `*more` says whether a key above the
 * last one held was left out.
 */
static unsigned int
batch_fill(struct ckvo_slot *first, ckvo_key_t after, struct ckvo_slot **batch, bool *more)
{
	unsigned int n = 0;

	*more = false;
	for (struct ckvo_slot *slot = first; slot != NULL; slot = ck_pr_load_ptr(&slot->next)) {
		ckvo_key_t key;
		unsigned int i;

		/* Linked by object_slot_add (registration.c), after slot_publish's fence. */
		CKVO_TSAN_ACQUIRE(slot);
		ckvo__listing_steps++;
		key = slot->id.key;
		if (key <= after)
			continue;
		for (i = n; i > 0 && batch[i - 1]->id.key > key; i--)
			;
		if (i > 0 && batch[i - 1]->id.key == key)
			continue; /* an older slot of a key already held */
		if (i == LISTING_BATCH) {
			*more = true;
			continue;
		}
		if (n == LISTING_BATCH) {
			*more = true;
			n--;
		}
		for (unsigned int k = n; k > i; k--)
			batch[k] = batch[k - 1];
		batch[i] = slot;
		n++;
	}
	return n;
}

/* Lists the observations of `object` into `l`, inside one read section. */
static ckvo_status_t
list_object(ckvo_hub_t *hub, const void *object, struct listing *l)
{
	struct ckvo_registry *registry = &hub->registry;
	ck_epoch_record_t *record;

	record = ckvo__thread_record();
	if (CKVO_UNLIKELY(record == NULL))
		return CKVO_ENOMEM;

	ckvo__read_begin(record);
	if (object == NULL) {
		/* Observations of every object hang off their keys: one load per key of the hub. */
		uint32_t keys = ck_pr_load_32(&registry->key_count);

		for (ckvo_key_t key = 1; key <= keys; key++) {
			ckvo__listing_steps++;
			list_slot(l, ck_pr_load_ptr(&ckvo__key_lookup(registry, key)->wildcard), key);
		}
	} else {
		struct ckvo_slot_id probe = { .object = object };
		struct ckvo_slot *first = ck_hs_get(&registry->objects.hs,
		    ckvo__group_hash(&registry->objects, object), &probe);
		struct ckvo_slot *batch[LISTING_BATCH];
		ckvo_key_t after = 0;
		bool more = first != NULL;

		while (more) {
			unsigned int n = batch_fill(first, after, batch, &more);

			for (unsigned int i = 0; i < n; i++)
				list_slot(l, batch[i], batch[i]->id.key);
			after = n == 0 ? after : batch[n - 1]->id.key;
		}
	}
	ckvo__read_end(record);
	return CKVO_OK;
}

ckvo_status_t
ckvo_object_observations(ckvo_hub_t *hub, const void *object, ckvo_observation_info_t *out,
    size_t capacity, size_t *count)
{
	struct listing l = { .out = out, .capacity = capacity };
	ckvo_status_t status;

	if (hub == NULL || count == NULL || (out == NULL && capacity > 0))
		return CKVO_EINVAL;
	status = list_object(hub, object, &l);
	if (status == CKVO_OK)
		*count = l.count;
	return status;
}

ckvo_status_t
ckvo_object_observations_visit(ckvo_hub_t *hub, const void *object,
    ckvo_observation_visitor_t visit, void *arg)
{
	struct listing l = { .visit = visit, .arg = arg };

	if (hub == NULL || visit == NULL)
		return CKVO_EINVAL;
	return list_object(hub, object, &l);
}
