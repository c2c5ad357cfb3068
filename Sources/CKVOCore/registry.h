/*
 * registry.h — the registry (never installed): what a hub observes, put
 * together from its parts, each in a header of its own that its .c file
 * includes alone:
 *   observation.h  a record and its tag            (token.c hands them out)
 *   slot.h         a slot and its observer list    (list.c)
 *   slotmap.h      (object, key) -> slot           (slotmap.c)
 *   token.h        token pages and tokens          (token.c)
 *   table.h        owner groups, identities, sets  (table.c)
 *   key.h          interned keys                   (key.c)
 *   ledger.h       bytes held and the limbo: what every part is given
 *                  instead of the whole registry
 * Only registration.c, which ties them together, and the hub's files
 * (engine.h) see the whole.
 *
 * The shape of a registry
 * -----------------------
 * A registry maps (object, key) to a *slot*; a slot owns an append-only
 * *list* of entries (callback, context, observation), in registration
 * order. The observation records themselves live in the token pages, at
 * the index their token names. Observations of a key on every object
 * (object == NULL) live in the key's own wildcard slot. Readers (dispatch,
 * listing) find a slot lock-free: the (object, key) -> slot map (slotmap.c)
 * is read under a ck_epoch section; the wildcard slot hangs off the key.
 *
 * Writers change a registry only inside its hub's writer session
 * (session.c), one at a time, and never block readers. Memory a reader can
 * reach is retired into the session's limbo (registry->ledger.garbage, epoch.c)
 * and freed after a grace period. An observation the registry unlinks is
 * not retired here: it is handed back to the caller as a value
 * (struct ckvo_unlinked), who gives it to the session.
 *
 * Ownership of memory that readers reach:
 *   registry->slots (slotmap.c) -> struct ckvo_slot (retired when its last
 *                                  observation goes)
 *   slot->list                 -> struct ckvo_list (retired when replaced,
 *                                  or freed with the slot when it is the
 *                                  slot's first)
 *   list->items[i]             -> struct ckvo_observation (in a token page;
 *                                  handed back when removed, after the entry
 *                                  is cleared in the current list, and reused
 *                                  only after a grace period)
 *   registry->keys             -> key arrays are never freed before the hub;
 *                                  each struct ckvo_keyinfo lives as long as
 *                                  the hub.
 *   registry->names            -> a ck_hs whose replaced maps are retired
 *                                  (table.c).
 *   registry->tokens.dir       -> token directories are retired when
 *                                  replaced; a page, which holds observation
 *                                  records, is retired once all its records
 *                                  are back (token.c).
 *   obs->owner_group           -> retired when empty (listing.c reads owner).
 *   registry->objects          -> a ck_hs (object -> newest slot) whose
 *                                  replaced maps are retired (table.c);
 *                                  slot->next links an object's other slots.
 */
#ifndef CKVO_REGISTRY_H
#define CKVO_REGISTRY_H

#include "key.h"
#include "slotmap.h"
#include "table.h"
#include "token.h"

struct ckvo_registry {
	struct ckvo_slotmap slots;    /* (object, key) -> slot; read lock-free */
	struct ckvo_key_array *keys;  /* published (atomic) */
	uint32_t key_count;           /* published (atomic) */
	struct ckvo_tokens tokens;
	ck_stack_t deferred;          /* observations marked dead by readers (MPSC) */

	/* Writer-only. */
	struct ckvo_set names;        /* name -> keyinfo (also read lock-free) */
	struct ckvo_identities identities; /* observation identity -> observation */
	struct ckvo_set owners;       /* owner -> owner group */
	struct ckvo_set objects;      /* object -> its newest slot (also read lock-free) */
	size_t observations;
	struct ckvo_ledger ledger;    /* bytes held, and the session's limbo */
};

/*
 * Observations the registry unlinked and hands back to its caller, linked
 * through their `link`, in the order they were unlinked: the caller gives
 * them to the writer session, which retires them (session.c).
 */
struct ckvo_unlinked {
	ck_stack_entry_t *head, *tail;
	unsigned int count;
};

#define CKVO_UNLINKED_INITIALIZER { NULL, NULL, 0 }

/* The key `key` of `registry`, or NULL: lock-free, on the dispatch path. */
static inline struct ckvo_keyinfo *
ckvo__key_lookup(struct ckvo_registry *registry, ckvo_key_t key)
{
	uint32_t count = ck_pr_load_32(&registry->key_count);
	struct ckvo_key_array *array;
	struct ckvo_keyinfo *info;

	if (CKVO_UNLIKELY(key == 0 || key > count))
		return NULL;
	/* The count is read before the array: the array is at least as new. */
	ck_pr_fence_load();
	array = ck_pr_load_ptr(&registry->keys);
	info = ck_pr_load_ptr(&array->keys[key - 1]);
	CKVO_TSAN_ACQUIRE(info);
	return info;
}

/* Whether an observation is in the identity table: it did not promise a unique context. */
static inline bool
ckvo__observation_indexed(ckvo_options_t options)
{
	return (options & CKVO_OPTION_UNIQUE_CONTEXT) == 0;
}

/* registration.c: observations in and out */
bool ckvo__registry_init(struct ckvo_registry *registry, struct ckvo_limbo *garbage);
void ckvo__registry_destroy(struct ckvo_registry *registry);
ckvo_status_t ckvo__registry_add(struct ckvo_registry *registry, struct ckvo_keyinfo *info,
    const struct ckvo_identity *identity, ckvo_options_t options, ckvo_release_t release,
    struct ckvo_observation **result, ckvo_token_t *token);
ckvo_status_t ckvo__registry_remove(struct ckvo_registry *registry, ckvo_token_t token,
    struct ckvo_unlinked *unlinked);
ckvo_status_t ckvo__registry_remove_object(struct ckvo_registry *registry, const void *object,
    struct ckvo_unlinked *unlinked);
ckvo_status_t ckvo__registry_remove_owner(struct ckvo_registry *registry, const void *owner,
    struct ckvo_unlinked *unlinked);
bool ckvo__registry_remove_all(struct ckvo_registry *registry, struct ckvo_unlinked *unlinked);
void ckvo__registry_drain(struct ckvo_registry *registry, struct ckvo_unlinked *unlinked);
ckvo_status_t ckvo__registry_defer(struct ckvo_registry *registry, ckvo_token_t token,
    bool *first);

/* key.c */
void ckvo__keys_destroy(struct ckvo_registry *registry);

#endif /* CKVO_REGISTRY_H */
