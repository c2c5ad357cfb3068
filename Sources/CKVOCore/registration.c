/*
 * registration.c — the registry's way in and out: registering an
 * observation in the indexes dispatch reads, and unlinking it again. The
 * second stop of an observation's life (observe.c -> here -> dispatch.c;
 * unobserve: observe.c -> here -> session.c).
 *
 * Invariants it alone keeps
 * -------------------------
 * - Every function here except ckvo__registry_defer runs inside the hub's
 *   writer session (session.c), one writer at a time; none calls user code
 *   or takes a lock.
 * - An observation is published to readers by ckvo__list_append (and, for
 *   a new slot, by inserting the slot into the map or hanging it off the
 *   key) only after it is complete and indexed.
 * - Removal (observation_unlink) marks the observation REMOVED first, then
 *   clears it from its list and every index. Once the removal returns, a
 *   dispatch that starts later cannot find it, and one already running
 *   skips it when its turn comes (it checks the state).
 * - The registry never retires an observation nor releases it: every
 *   observation it unlinks goes back to the caller, as a value on a
 *   struct ckvo_unlinked, exactly once: by the removal that moved a LIVE
 *   observation to REMOVED, or by the drain for a DEFERRED one. The caller
 *   hands it to the writer session (session.c), which retires it. Memory
 *   readers may still reach (slots, lists, groups, maps) is retired into
 *   the session's limbo, registry->ledger.garbage.
 * - ckvo__registry_defer runs on the read side: it moves LIVE -> DEFERRED
 *   with a compare-and-swap and pushes the observation on
 *   registry->deferred. Whoever made that transition owns the push; the
 *   next drain unlinks it (if no writer did already) and hands it back.
 * - Of racing removals of one token, exactly one reports success: the one
 *   that moved the state away from LIVE (the writer's exchange to REMOVED or
 *   the reader's compare-and-swap to DEFERRED), not a writer that merely saw
 *   LIVE before a reader deferred it.
 * - An observation's state lives in its record's tag with its generation
 *   and options (registry.h). Only writers change the tag, except a
 *   reader's compare-and-swap from LIVE to DEFERRED, which names the
 *   generation it found, so it can never touch the record's next use
 *   (token.c).
 * - Registration keys (key->observations) are raised before an observation
 *   is published and lowered after it is unlinked, so ckvo_has_observers is
 *   never false while it can be called.
 */
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "registry.h"

/* --------------------------------------------------------------- groups */

/*
 * Owner groups and their member arrays, the owner set and the object set
 * hold memory in proportion to what is live: an array halves below a
 * quarter full (4 members at least), the sets follow ckvo__set_removed
 * (table.c). Each counts in registry->ledger.bytes while it is held.
 */
#define CKVO_MEMBERS_MIN 4u

static size_t
members_size(uint32_t capacity)
{
	return (size_t)capacity * sizeof(struct ckvo_observation *);
}

static struct ckvo_owner_group *
owner_group_get(struct ckvo_registry *registry, const void *owner, bool create)
{
	struct ckvo_owner_group probe = { .owner = owner };
	unsigned long hash = ckvo__group_hash(&registry->owners, owner);
	struct ckvo_owner_group *group = ck_hs_get(&registry->owners.hs, hash, &probe);

	if (group != NULL || !create)
		return group;
	group = calloc(1, sizeof(*group));
	if (group == NULL)
		return NULL;
	group->owner = owner;
	if (!ckvo__set_put(&registry->owners, hash, group)) {
		free(group);
		return NULL;
	}
	ckvo__bytes(&registry->ledger, (ptrdiff_t)sizeof(*group));
	return group;
}

static void
owner_group_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_owner_group, retire, entry));
}

static void
owner_group_drop_if_empty(struct ckvo_registry *registry, struct ckvo_owner_group *group)
{
	if (group->count != 0)
		return;
	(void)ck_hs_remove(&registry->owners.hs,
	    ckvo__group_hash(&registry->owners, group->owner), group);
	free(group->members);
	group->members = NULL;
	ckvo__bytes(&registry->ledger, -(ptrdiff_t)(members_size(group->capacity) + sizeof(*group)));
	/* A listing may still read `owner` through an observation that just left (listing.c). */
	ckvo__retire(registry->ledger.garbage, &group->retire, owner_group_free);
	ckvo__set_removed(&registry->owners);
}

/* Gives the members array of `group` room for `capacity`; false when out of memory. */
static bool
owner_group_resize(struct ckvo_registry *registry, struct ckvo_owner_group *group,
    uint32_t capacity)
{
	struct ckvo_observation **members = realloc(group->members, members_size(capacity));

	if (members == NULL)
		return false;
	ckvo__bytes(&registry->ledger, (ptrdiff_t)members_size(capacity) -
	    (ptrdiff_t)members_size(group->capacity));
	group->members = members;
	group->capacity = capacity;
	return true;
}

/* Makes room for one more member; false when out of memory. */
static bool
owner_group_reserve(struct ckvo_registry *registry, struct ckvo_owner_group *group)
{
	if (group->count < group->capacity)
		return true;
	if (group->capacity > UINT32_MAX / 2)
		return false;
	return owner_group_resize(registry, group,
	    group->capacity == 0 ? CKVO_MEMBERS_MIN : group->capacity * 2);
}

/*
 * Takes `obs` out of its owner's group (the last member fills its place).
 * Below a quarter full the array halves: still under half full, so as many
 * members must come or go again as it copies before the next resize.
 */
static void
owner_group_leave(struct ckvo_registry *registry, struct ckvo_observation *obs)
{
	struct ckvo_owner_group *group = obs->owner_group;
	struct ckvo_observation *last = group->members[--group->count];

	group->members[obs->owner_index] = last;
	last->owner_index = obs->owner_index;
	if (group->count == 0) {
		owner_group_drop_if_empty(registry, group);
		return;
	}
	/* Out of memory: it keeps its size until the next removal tries again. */
	if (group->capacity > CKVO_MEMBERS_MIN && group->count < group->capacity / 4)
		(void)owner_group_resize(registry, group, group->capacity / 2);
}

/* The newest slot of `object` (its `next` links the others), or NULL. */
static struct ckvo_slot *
object_first_slot(struct ckvo_registry *registry, const void *object)
{
	struct ckvo_slot_id probe = { .object = object };

	return ck_hs_get(&registry->objects.hs, ckvo__group_hash(&registry->objects, object), &probe);
}

/*
 * Makes `slot`, complete and fenced (slot_publish), its object's newest;
 * false (nothing changed) when out of memory. An object's first slot takes
 * its entry in the set; a later one replaces the entry, pointing on to the
 * one it replaces: a listing finds either, and walks on from either.
 */
static bool
object_slot_add(struct ckvo_registry *registry, struct ckvo_slot *slot)
{
	unsigned long hash = ckvo__group_hash(&registry->objects, slot->id.object);
	struct ckvo_slot *first = object_first_slot(registry, slot->id.object);
	void *previous;

	slot->prev = NULL;
	ck_pr_store_ptr(&slot->next, first);
	/* The link is visible before the slot is (ck_hs stores with no fence of its own). */
	ck_pr_fence_store();
	if (first == NULL)
		return ckvo__set_put(&registry->objects, hash, slot);
	/* Replaces an entry in place: never allocates, never fails. */
	(void)ck_hs_fas(&registry->objects.hs, hash, slot, &previous);
	first->prev = slot;
	return true;
}

/*
 * Takes `slot` out of its object's slots; the object leaves the set with
 * its last one. Its own `next` stays: a listing standing on it walks on to
 * slots that were linked when it arrived, all alive for its section.
 */
static void
object_slot_remove(struct ckvo_registry *registry, struct ckvo_slot *slot)
{
	struct ckvo_slot *prev = slot->prev, *next = slot->next;
	unsigned long hash;
	void *previous;

	if (next != NULL)
		next->prev = prev;
	if (prev != NULL) {
		ck_pr_store_ptr(&prev->next, next);
		return;
	}
	hash = ckvo__group_hash(&registry->objects, slot->id.object);
	if (next != NULL) {
		(void)ck_hs_fas(&registry->objects.hs, hash, next, &previous);
		return;
	}
	(void)ck_hs_remove(&registry->objects.hs, hash, slot);
	ckvo__set_removed(&registry->objects);
}

/* ---------------------------------------------------------------- slots */

static struct ckvo_slot *
slot_find(struct ckvo_registry *registry, struct ckvo_keyinfo *info, const void *object)
{
	if (object == NULL)
		return info->wildcard;
	if (info->hint != NULL && info->hint->id.object == object)
		return info->hint;
	return ckvo__slotmap_get(&registry->slots, object, info->id);
}

/*
 * A new, empty, unpublished slot with a list holding room for one observer,
 * calling `callback`.
 */
static struct ckvo_slot *
slot_create(struct ckvo_registry *registry, struct ckvo_keyinfo *info, const void *object,
    ckvo_callback_t callback)
{
	struct ckvo_slot *slot = calloc(1, CKVO_SLOT_BLOCK_SIZE);

	if (slot == NULL)
		return NULL;
	ckvo__bytes(&registry->ledger, (ptrdiff_t)CKVO_SLOT_BLOCK_SIZE);
	ckvo__list_init_first(slot, callback);
	slot->id.object = object;
	slot->id.key = info->id;
	return slot;
}

/*
 * Makes a filled slot of key `info` reachable by readers; false (nothing
 * published) when out of memory.
 */
static bool
slot_publish(struct ckvo_registry *registry, struct ckvo_keyinfo *info, struct ckvo_slot *slot)
{
	CKVO_TSAN_RELEASE(slot);
	CKVO_TSAN_RELEASE(slot->list);
	ck_pr_fence_store();
	if (slot->id.object == NULL) {
		ck_pr_store_ptr(&info->wildcard, slot);
		return true;
	}

	/*
	 * Everything that can fail comes before the first store a reader can
	 * see: room in the map, then the object's slots (a listing may find the
	 * slot there), then the map (dispatch finds it), which cannot fail now.
	 */
	if (!ckvo__slotmap_reserve(&registry->ledger, &registry->slots) || !object_slot_add(registry, slot))
		return false;
	ckvo__slotmap_put(&registry->slots, slot);
	ckvo__writer_add(&info->object_slots, 1);
	ck_pr_store_ptr(&info->hint, slot);
	return true;
}

static void
slot_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_slot, retire, entry));
}

/* Unpublishes an empty slot of key `info` and retires it with its list. */
static void
slot_drop(struct ckvo_registry *registry, struct ckvo_keyinfo *info, struct ckvo_slot *slot)
{
	if (slot->id.object == NULL) {
		ck_pr_store_ptr(&info->wildcard, NULL);
	} else {
		if (ck_pr_load_ptr(&info->hint) == slot)
			ck_pr_store_ptr(&info->hint, NULL);
		ckvo__slotmap_remove(&registry->ledger, &registry->slots, slot);
		ckvo__writer_add(&info->object_slots, -1);
		object_slot_remove(registry, slot);
	}
	ckvo__list_drop(&registry->ledger, slot);
	ckvo__bytes(&registry->ledger, -(ptrdiff_t)CKVO_SLOT_BLOCK_SIZE);
	/* Overwrites `live`, `dead` and `prev`, which no one reads any more; `next` stays. */
	ckvo__retire(registry->ledger.garbage, &slot->retire, slot_free);
}

/* --------------------------------------------------------- observations */


/* Counts an observation in its key's probe (ckvo_probe_t), by `delta` (under the lock). */
static void
key_count(struct ckvo_keyinfo *info, ckvo_options_t options, int delta)
{
	ckvo__writer_add(&info->probe.observations, delta);
	if ((options & CKVO_OPTION_PRIOR) != 0)
		ckvo__writer_add(&info->probe.prior_observations, delta);
}

/*
 * Moves the state of `obs` to REMOVED and returns the state it had. Only a
 * reader's LIVE -> DEFERRED can race with this, so the loop ends at once or
 * after that one change.
 */
static unsigned int
observation_mark_removed(struct ckvo_observation *obs)
{
	uint64_t tag = ck_pr_load_64(&obs->tag);

	while (!ck_pr_cas_64_value(&obs->tag, tag,
	    (tag & ~(uint64_t)CKVO_TAG_STATE_MASK) | CKVO_STATE_REMOVED, &tag))
		;
	return ckvo__tag_state(tag);
}

/*
 * Removes `obs` from every index and its list. Returns the state it had:
 * the caller retires it if that was LIVE (a DEFERRED one is retired by the
 * drain, which owns it).
 */
static unsigned int
observation_unlink(struct ckvo_registry *registry, struct ckvo_observation *obs)
{
	unsigned int previous = observation_mark_removed(obs);
	ckvo_options_t options = ckvo__tag_options(obs->tag);
	struct ckvo_slot *slot = obs->slot;
	struct ckvo_keyinfo *info = ckvo__key_lookup(registry, slot->id.key);
	void *context = slot->list->items[obs->index].context;

	if (ckvo__observation_indexed(options))
		ckvo__identity_remove(&registry->identities, &registry->tokens, &registry->ledger, obs);
	if (obs->owner_group != NULL)
		owner_group_leave(registry, obs);

	ckvo__list_remove(&registry->ledger, slot, obs);
	/*
	 * The fields of a linked observation are free now: they take what its
	 * release needs. A listing may still be reading `owner_group` where
	 * `origin` goes: it checks the tag again after that load, and this
	 * store comes after the REMOVED one above (listing.c).
	 */
	obs->context = context;
	ck_pr_fence_store();
	ck_pr_store_64(&obs->origin, 0);
	if (previous == CKVO_STATE_DEFERRED) {
		/*
		 * The reader that deferred it counted it in the slot. Uncount it
		 * only now that its entry is cleared: a dispatch that reads the
		 * lower count then reads the cleared entry (dispatch.c).
		 */
		ck_pr_fence_store();
		ck_pr_dec_64(&slot->deferred);
	}
	if (slot->live == 0)
		slot_drop(registry, info, slot);
	key_count(info, options, -1);
	registry->observations--;
	return previous;
}

/* Hands `obs`, unlinked, back to the caller at the end of `unlinked`. */
static void
unlinked_push(struct ckvo_unlinked *unlinked, struct ckvo_observation *obs)
{
	obs->link.next = NULL;
	if (unlinked->tail != NULL)
		unlinked->tail->next = &obs->link;
	else
		unlinked->head = &obs->link;
	unlinked->tail = &obs->link;
	unlinked->count++;
}

/*
 * Removes `obs` and returns whether this call ended it, handing it back on
 * `unlinked`. False when a reader deferred it first: that deferral is the
 * removal that succeeded, and the drain hands it back.
 */
static bool
observation_remove(struct ckvo_registry *registry, struct ckvo_observation *obs,
    struct ckvo_unlinked *unlinked)
{
	if (observation_unlink(registry, obs) != CKVO_STATE_LIVE)
		return false;
	unlinked_push(unlinked, obs);
	return true;
}

void
ckvo__registry_drain(struct ckvo_registry *registry, struct ckvo_unlinked *unlinked)
{
	ck_stack_entry_t *cursor;

	/* Usually empty: a plain load spares every lock an atomic exchange. */
	if (ck_pr_load_ptr(&registry->deferred.head) == NULL)
		return;
	cursor = ck_stack_batch_pop_upmc(&registry->deferred);
	while (cursor != NULL) {
		struct ckvo_observation *obs = CKVO_CONTAINER(struct ckvo_observation, link, cursor);

		CKVO_TSAN_ACQUIRE(obs);
		/* Written by the reader's push: an atomic load says so to TSan. */
		cursor = ck_pr_load_ptr(&cursor->next);
		if (ckvo__tag_state(ck_pr_load_64(&obs->tag)) == CKVO_STATE_DEFERRED)
			(void)observation_unlink(registry, obs);
		unlinked_push(unlinked, obs);
	}
}

bool
ckvo__registry_remove_all(struct ckvo_registry *registry, struct ckvo_unlinked *unlinked)
{
	bool removed = false;
	struct ckvo_token_dir *dir = registry->tokens.dir;

	for (uint32_t p = 0; dir != NULL && p < dir->capacity; p++) {
		struct ckvo_token_page *page = dir->pages[p];

		for (uint32_t i = 0; page != NULL && i < CKVO_TOKEN_PAGE_SIZE; i++) {
			struct ckvo_observation *obs = &page->records[i];
			unsigned int state = ckvo__tag_state(ck_pr_load_64(&obs->tag));

			/* DEFERRED ones too: unlinked here, handed back by the drain. */
			if (state == CKVO_STATE_LIVE || state == CKVO_STATE_DEFERRED) {
				(void)observation_remove(registry, obs, unlinked);
				removed = true;
			}
		}
	}
	return removed;
}

/*
 * Installs an observation under the writer lock. Everything that can fail
 * comes first; the observation becomes visible to dispatch (list append,
 * slot publication) and then, going LIVE, to token lookups, in that order.
 * `*result` is the new observation, or on CKVO_EEXIST the duplicate, whose
 * token the caller returns; on any other failure nothing is left installed.
 */
ckvo_status_t
ckvo__registry_add(struct ckvo_registry *registry, struct ckvo_keyinfo *info,
    const struct ckvo_identity *identity, ckvo_options_t options, ckvo_release_t release,
    struct ckvo_observation **result, ckvo_token_t *token)
{
	struct ckvo_observation **existing = result;
	bool indexed = ckvo__observation_indexed(options);
	struct ckvo_owner_group *group = NULL;
	struct ckvo_slot *slot, *new_slot = NULL;
	struct ckvo_observation *obs;
	uint64_t tag;

	*existing = NULL;
	if (indexed) {
		if (!ckvo__identity_reserve(&registry->identities, &registry->tokens, &registry->ledger))
			return CKVO_ENOMEM;
		*existing = ckvo__identity_find(&registry->identities, &registry->tokens, identity);
		if (*existing != NULL) {
			if (ckvo__tag_state(ck_pr_load_64(&(*existing)->tag)) == CKVO_STATE_LIVE)
				return CKVO_EEXIST;
			/* Marked dead by a reader but not drained yet: its drain hands it back. */
			(void)observation_unlink(registry, *existing);
			*existing = NULL;
		}
	}
	if (identity->owner != NULL) {
		group = owner_group_get(registry, identity->owner, true);
		if (group == NULL)
			return CKVO_ENOMEM;
		if (!owner_group_reserve(registry, group)) {
			owner_group_drop_if_empty(registry, group);
			return CKVO_ENOMEM;
		}
	}
	obs = ckvo__token_take(&registry->tokens, &registry->ledger);
	if (obs == NULL) {
		if (group != NULL)
			owner_group_drop_if_empty(registry, group);
		return CKVO_ENOMEM;
	}
	tag = ckvo__tag_with(obs->tag, options, CKVO_STATE_INSTALLING);
	ck_pr_store_64(&obs->tag, tag);
	obs->release = release;
	obs->owner_group = NULL;
	obs->identity = identity->hash;

	slot = slot_find(registry, info, identity->object);
	if (slot == NULL)
		slot = new_slot = slot_create(registry, info, identity->object, identity->callback);
	obs->slot = slot;

	/*
	 * The caller's token is written before a callback on another thread
	 * can run for this observation; counted before it can be seen, so
	 * has_observers is never falsely negative.
	 */
	if (token != NULL)
		*token = ckvo__token_of(obs);
	key_count(info, options, 1);
	/*
	 * From the append on, a dispatch may call the observation, and its
	 * callback may defer its own removal before we finish: PUBLISHED lets
	 * that deferral through (ckvo_unobserve_deferred), and going LIVE below
	 * then fails, leaving it to the drain. Nothing before the append can
	 * hand the token to a callback, so the failure path below never meets
	 * a deferral.
	 */
	tag = ckvo__tag_with(tag, options, CKVO_STATE_PUBLISHED);
	ck_pr_store_64(&obs->tag, tag);
	if (slot == NULL ||
	    !ckvo__list_append(&registry->ledger, slot, obs, identity->callback, identity->context) ||
	    (new_slot != NULL && !slot_publish(registry, info, new_slot))) {
		key_count(info, options, -1);
		if (token != NULL)
			*token = (ckvo_token_t)CKVO_TOKEN_NONE_INITIALIZER;
		/* Its list is still its first (one entry of room): one block. */
		if (new_slot != NULL)
			ckvo__bytes(&registry->ledger, -(ptrdiff_t)CKVO_SLOT_BLOCK_SIZE);
		free(new_slot);
		if (group != NULL)
			owner_group_drop_if_empty(registry, group);
		/* Never reachable by readers: back to its page at once. */
		ckvo__token_return(&registry->tokens, &registry->ledger, obs, registry->observations);
		return CKVO_ENOMEM;
	}

	if (indexed)
		ckvo__identity_insert(&registry->identities, &registry->tokens, obs);
	if (group != NULL) {
		obs->owner_group = group;
		obs->owner_index = group->count;
		group->members[group->count++] = obs;
	}
	registry->observations++;
	*result = obs;
	/*
	 * The observation is complete before a reader can find it LIVE by
	 * token. A compare-and-swap: a callback may have deferred it meanwhile
	 * (PUBLISHED -> DEFERRED); then it stays DEFERRED, on registry->deferred,
	 * and the next writer's drain removes it like any deferred one.
	 */
	CKVO_TSAN_RELEASE(obs);
	ck_pr_fence_store();
	(void)ck_pr_cas_64(&obs->tag, tag,
	    ckvo__tag_with(tag, options, CKVO_STATE_LIVE));
	return CKVO_OK;
}


ckvo_status_t
ckvo__registry_remove(struct ckvo_registry *registry, ckvo_token_t token,
    struct ckvo_unlinked *unlinked)
{
	uint64_t tag = 0;
	struct ckvo_observation *obs = ckvo__token_find(&registry->tokens, token, &tag);

	if (obs == NULL)
		return CKVO_ENOENT;
	/* A reader may defer it after the check: then only that one succeeded. */
	if (ckvo__tag_state(tag) == CKVO_STATE_LIVE && observation_remove(registry, obs, unlinked))
		return CKVO_OK;
	return CKVO_ENOENT;
}

/*
 * ck_stack_push_upmc, with the link written by an atomic store: the writer
 * that drains the stack later writes the same link (it chains the record
 * into its unlinked list), and the compare-and-swap that publishes the push
 * orders the two, which ThreadSanitizer cannot see through CK's assembly.
 * True when the push made the stack non-empty: the caller wakes whoever
 * carries deferred removals out (session.c).
 */
static bool
deferred_push(struct ckvo_registry *registry, struct ckvo_observation *obs)
{
	ck_stack_entry_t *head;

	do {
		head = ck_pr_load_ptr(&registry->deferred.head);
		ck_pr_store_ptr(&obs->link.next, head);
		/* The link, and the state before it, are visible before the push. */
		ck_pr_fence_store();
	} while (!ck_pr_cas_ptr(&registry->deferred.head, head, &obs->link));
	return head == NULL;
}

ckvo_status_t
ckvo__registry_defer(struct ckvo_registry *registry, ckvo_token_t token, bool *first)
{
	ck_epoch_record_t *record;
	struct ckvo_observation *obs;
	ckvo_status_t status = CKVO_ENOENT;
	uint64_t tag;

	*first = false;
	record = ckvo__thread_record();
	if (record == NULL)
		return CKVO_ENOMEM;

	ckvo__read_begin(record);
	obs = ckvo__token_find(&registry->tokens, token, &tag);
	/* PUBLISHED: its own callback, called before its registration finished (ckvo__registry_add). */
	if (obs != NULL && (ckvo__tag_state(tag) == CKVO_STATE_LIVE ||
	    ckvo__tag_state(tag) == CKVO_STATE_PUBLISHED)) {
		/*
		 * Make dispatches check states in this slot until a writer has
		 * unlinked it, and do so before the state changes: a dispatch
		 * that finds the slot's count zero then finds the observation
		 * still live, so once the state says DEFERRED every dispatch
		 * that starts skips it. The slot outlives this section even if a
		 * writer unlinks the observation meanwhile (the counter then
		 * returns to zero after a transient wrap, which only makes
		 * readers careful).
		 */
		ck_pr_inc_64(&obs->slot->deferred);
		for (;;) {
			uint64_t base = tag & ~(uint64_t)CKVO_TAG_STATE_MASK, seen;

			/* Fails if the tag changed: removed, deferred, went LIVE, or (never here) reused. */
			if (ck_pr_cas_64_value(&obs->tag, tag, base | CKVO_STATE_DEFERRED, &seen)) {
				/* Pairs with the acquire in ckvo__registry_drain. */
				CKVO_TSAN_RELEASE(obs);
				*first = deferred_push(registry, obs);
				status = CKVO_OK;
				break;
			}
			/* Its registration finished meanwhile (PUBLISHED -> LIVE): once more. */
			if (ckvo__tag_state(tag) == CKVO_STATE_PUBLISHED &&
			    seen == (base | CKVO_STATE_LIVE)) {
				tag = seen;
				continue;
			}
			ck_pr_dec_64(&obs->slot->deferred); /* removed or deferred already */
			break;
		}
	}
	ckvo__read_end(record);
	return status;
}

/* Removes every observation of `slot`, newest first; the last removal drops the slot. */
static void
slot_remove_all(struct ckvo_registry *registry, struct ckvo_slot *slot,
    struct ckvo_unlinked *unlinked)
{
	struct ckvo_list *list = NULL;
	uint32_t i = 0;

	for (;;) {
		bool last = slot->live == 1;

		if (slot->list != list) {
			/* A removal compacted the list: continue from the end of the new one. */
			list = slot->list;
			i = list->count;
		}
		while (list->items[i - 1].observation == 0)
			i--;
		(void)observation_remove(registry,
		    ckvo__entry_observation(list->items[--i].observation), unlinked);
		if (last)
			return;
	}
}

ckvo_status_t
ckvo__registry_remove_object(struct ckvo_registry *registry, const void *object,
    struct ckvo_unlinked *unlinked)
{
	struct ckvo_slot *slot;
	ckvo_status_t status = CKVO_ENOENT;

	/* Dropping an object's last slot takes it out of the set: the lookup then fails. */
	while ((slot = object_first_slot(registry, object)) != NULL) {
		slot_remove_all(registry, slot, unlinked);
		status = CKVO_OK;
	}
	return status;
}

ckvo_status_t
ckvo__registry_remove_owner(struct ckvo_registry *registry, const void *owner,
    struct ckvo_unlinked *unlinked)
{
	struct ckvo_owner_group *group = owner_group_get(registry, owner, false);

	if (group == NULL)
		return CKVO_ENOENT;
	/* Newest first; the group is retired together with its last observation. */
	for (uint32_t count = group->count; count-- > 0;)
		(void)observation_remove(registry, group->members[count], unlinked);
	return CKVO_OK;
}

/* ------------------------------------------------------------ lifecycle */

bool
ckvo__registry_init(struct ckvo_registry *registry, struct ckvo_limbo *garbage)
{
	int initialized = 0;

	registry->ledger.garbage = garbage;
	ck_stack_init(&registry->deferred);
	if (ckvo__slotmap_init(&registry->ledger, &registry->slots))
		initialized++;
	if (initialized == 1 && ckvo__names_init(&registry->names, &registry->ledger))
		initialized++;
	if (initialized == 2 && ckvo__groups_init(&registry->owners, &registry->ledger, false))
		initialized++;
	if (initialized == 3 && ckvo__groups_init(&registry->objects, &registry->ledger, true))
		initialized++;
	if (initialized == 4)
		return true;
	if (initialized > 0)
		ckvo__slotmap_destroy(&registry->slots);
	if (initialized > 1)
		ckvo__set_destroy(&registry->names);
	if (initialized > 2)
		ckvo__set_destroy(&registry->owners);
	return false;
}

/* Frees what is left once every observation is gone and released (keys aside: key.c). */
void
ckvo__registry_destroy(struct ckvo_registry *registry)
{
	ckvo__slotmap_destroy(&registry->slots);
	ckvo__set_destroy(&registry->names);
	ckvo__set_destroy(&registry->owners);
	ckvo__set_destroy(&registry->objects);
	ckvo__identities_destroy(&registry->identities, &registry->ledger);
	ckvo__tokens_destroy(&registry->tokens);
}
