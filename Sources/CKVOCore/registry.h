/*
 * registry.h — the registry (never installed): observations, their lists,
 * the slot map, keys, identities, owner groups, the object set, and the token
 * pages that hold the observation records.
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
 * reach is retired into the session's limbo (registry->garbage, epoch.c)
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

#include <ck_hs.h>
#include <ck_pr.h>
#include <ck_stack.h>

#include "ckvo.h"
#include "epoch.h"

/* Longest key name ckvo_key_intern accepts, in bytes, without the NUL. */
#define CKVO_KEY_NAME_MAX 1024

/* ------------------------------------------------------------ observation */

/*
 * Life of an observation, in the low bits of its tag; within one generation
 * it moves only forward. A record whose observation ended is reused, with a
 * new generation, only after a grace period and its release (release.c).
 */
enum ckvo_state {
	CKVO_STATE_INSTALLING = 0, /* being registered, not reachable yet: no token finds it */
	CKVO_STATE_PUBLISHED = 1,  /* reachable by dispatch, its registration still under way:
	                            * only a reader's deferral may move it (to DEFERRED) */
	CKVO_STATE_LIVE = 2,       /* dispatch calls it */
	CKVO_STATE_DEFERRED = 3,   /* a reader marked it dead; a writer removes it */
	CKVO_STATE_REMOVED = 4,    /* unindexed by a writer; never called again */
};

/*
 * An observation's tag: check << 24 | options << 8 | state, where the check
 * is the low 40 bits of the record's generation. One word, so that a
 * reader's compare-and-swap to DEFERRED (ckvo_unobserve_deferred) can only
 * hit the use of the record it looked up: the check and the full 64-bit
 * generation beside it (obs->generation) both name it, and a record is not
 * reused while a reader that looked it up is still in its section (token.c).
 */
#define CKVO_TAG_STATE_MASK 0xffu
#define CKVO_TAG_OPTIONS_SHIFT 8
#define CKVO_TAG_CHECK_SHIFT 24
_Static_assert((CKVO_OPTIONS_ALL >> (CKVO_TAG_CHECK_SHIFT - CKVO_TAG_OPTIONS_SHIFT)) == 0,
    "options fit below the check");

static inline unsigned int
ckvo__tag_state(uint64_t tag)
{
	return (unsigned int)(tag & CKVO_TAG_STATE_MASK);
}

static inline ckvo_options_t
ckvo__tag_options(uint64_t tag)
{
	return (ckvo_options_t)((uint32_t)tag >> CKVO_TAG_OPTIONS_SHIFT) &
	    ((1u << (CKVO_TAG_CHECK_SHIFT - CKVO_TAG_OPTIONS_SHIFT)) - 1);
}

/* The tag bits that a record's generation `generation` puts in its tag. */
static inline uint64_t
ckvo__tag_check(uint64_t generation)
{
	return generation << CKVO_TAG_CHECK_SHIFT;
}

/* `tag` with `options` and `state` in place of its own: the same use of the record. */
static inline uint64_t
ckvo__tag_with(uint64_t tag, ckvo_options_t options, unsigned int state)
{
	return (tag & ~(((uint64_t)1 << CKVO_TAG_CHECK_SHIFT) - 1)) |
	    ((uint64_t)options << CKVO_TAG_OPTIONS_SHIFT) | state;
}

struct ckvo_slot;
struct ckvo_owner_group;

/*
 * One observation. Records live in the token pages (token.c), at the index
 * their tokens name: a record whose observation ended goes back to its page
 * for reuse after a grace period, and a page whose records are all back is
 * retired through the epoch, so a reader reaches a record only inside a read
 * section (or under the writer lock). The callback and the context are not
 * stored here while the observation is linked: they live in its list entry,
 * the only place dispatch reads them. What serves only a linked
 * observation shares its place with what serves only an unlinked one. 64
 * bytes: a record holds its 64-bit generation, which orders observations as
 * registration does and names this use of the record in its token.
 */
struct ckvo_observation {
	uint64_t tag;                /* check, options, state (atomic) */
	uint64_t generation;         /* this use's; stored before the tag (atomic) */
	struct ckvo_slot *slot;      /* set before the observation is live, then fixed */
	ckvo_release_t release;
	union {
		/* Linked: NULL when registered without an owner (also read by listing.c). */
		struct ckvo_owner_group *owner_group;
		/* Unlinked: removed by the release at this ticket, or 0 (release.c, session.c). */
		uint64_t origin;
	};
	/*
	 * On registry->deferred while DEFERRED, then on an unlinked chain handed
	 * back, then in the limbo, then on the release queue, then on its token
	 * page's free records (token.c): never on two at once.
	 */
	ck_stack_entry_t link;
	uint32_t id;                 /* index in the token pages, fixed */
	uint32_t owner_index;        /* position in its owner group (writer-only) */
	union {
		/* Linked (writer-only). */
		struct {
			uint32_t index;      /* position in slot->list */
			uint32_t identity;   /* identity hash (see table.c) */
		};
		/* Unlinked: copied from its list entry for the release (registration.c). */
		void *context;
	};
};

/* ------------------------------------------------------------------- list */

/*
 * Entry bits that carry an observation's options next to its pointer (the
 * records are 8-byte aligned), so an entry is two words.
 */
#define CKVO_ENTRY_NEW ((uint64_t)1)
#define CKVO_ENTRY_OLD ((uint64_t)2)
#define CKVO_ENTRY_PRIOR ((uint64_t)4)
#define CKVO_ENTRY_BITS ((uint64_t)7)
/* The flags sit in a record address's low bits: every record is 8-aligned. */
_Static_assert(_Alignof(struct ckvo_observation) >= 8, "record alignment leaves no room for entry flags");
_Static_assert(sizeof(struct ckvo_observation) % 8 == 0, "records in a page must stay 8-aligned");

/*
 * One list entry. The context sits beside the observation, and the callback
 * is the list's (or, in a list of several callbacks, at the same index of
 * the array behind the entries), so that a fan-out reads the list
 * sequentially without touching the observations; `observation` is the
 * record's address with the CKVO_ENTRY_* bits of its options, or 0 once the
 * observation is removed (atomic).
 */
struct ckvo_entry {
	void *context;
	uint64_t observation;
};

static inline struct ckvo_observation *
ckvo__entry_observation(uint64_t observation)
{
	return (struct ckvo_observation *)(uintptr_t)(observation & ~CKVO_ENTRY_BITS);
}

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

/* ------------------------------------------------------------------- slot */

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

/* ---------------------------------------------------------------- slotmap */

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

/* -------------------------------------------------------------------- key */

struct ckvo_keyinfo {
	/* Read by dispatch. */
	struct ckvo_slot *wildcard;   /* observers of every object (atomic) */
	struct ckvo_slot *hint;       /* the key's newest object slot, or NULL (atomic) */
	ckvo_probe_t probe;           /* live observations of this key (atomic) */
	uint64_t object_slots;        /* slots with a non-NULL object (atomic; writers under the lock) */
	ckvo_getter_t getter;         /* set once, under the writer lock */

	/* Immutable after interning. */
	const char *name;
	size_t name_length;
	ckvo_key_t id;
};

/* Key id k lives at array[k - 1]. Old arrays are kept until the hub dies. */
struct ckvo_key_array {
	struct ckvo_key_array *older;
	uint32_t capacity;
	struct ckvo_keyinfo *keys[];
};

/* ----------------------------------------------------------------- tokens */

/*
 * 16 records a page: one survivor pins 1,088 bytes, not a page of 512 (33 KB),
 * and the directory costs half a byte a record.
 */
#define CKVO_TOKEN_PAGE_BITS 4
#define CKVO_TOKEN_PAGE_SIZE (1u << CKVO_TOKEN_PAGE_BITS)
/* A token is (generation, record index); the index is 32 bits (token.c). */
#define CKVO_TOKEN_PAGES_MAX ((uint32_t)1 << (32 - CKVO_TOKEN_PAGE_BITS))
/* Empty token pages a hub keeps for reuse at least (token.c): churn's records in flight. */
#define CKVO_TOKEN_SPARE_PAGES 8u
/* Generations a hub takes from the process-wide sequence at once. */
#define CKVO_GENERATION_BLOCK 1024u

/* The observation records of CKVO_TOKEN_PAGE_SIZE consecutive indexes. */
struct ckvo_token_page {
	struct ckvo_observation records[CKVO_TOKEN_PAGE_SIZE];

	/* Writer-only. */
	ck_stack_entry_t *free;        /* records not in use, linked through `link` */
	uint32_t in_use;               /* records handed out and not returned */
	uint32_t number;               /* its index in the directory */
	struct ckvo_token_page *free_prev, *free_next; /* on tokens.free_pages */
	struct ckvo_token_page *spare_prev, *spare_next; /* on tokens.spare_pages while empty */
	ck_epoch_entry_t retire;
};

/*
 * Page directory; replaced by a larger copy, the older one retired through
 * the epoch (a reader may still be loading a page pointer from it).
 */
struct ckvo_token_dir {
	ck_epoch_entry_t retire;
	uint32_t capacity; /* pages */
	struct ckvo_token_page *pages[];
};

struct ckvo_tokens {
	struct ckvo_token_dir *dir; /* published (atomic) */
	/* Writer-only. */
	struct ckvo_token_page *free_pages; /* pages with a record not in use */
	uint64_t generation_next, generation_end; /* this hub's block of generations */
	uint32_t *vacant;       /* stack of directory entries whose page was freed */
	uint32_t vacant_count, vacant_capacity;
	uint32_t pages;         /* directory entries ever filled */
	uint32_t spares;        /* pages kept with no record in use (token.c says how many) */
	struct ckvo_token_page *spare_pages; /* those pages */
	uint64_t out;           /* records handed out and not returned */
	uint64_t flight_peak;   /* most records out but not live since the last settle */
};

/* ---------------------------------------------------------------- groups */

/*
 * The observations registered with one owner, in no particular order.
 * `owner` is also read lock-free, through a live observation's
 * owner_group (listing.c): an empty group is retired, not freed. `members`
 * doubles when full and halves below a quarter full (registration.c).
 */
struct ckvo_owner_group {
	const void *owner; /* map key; never changes */
	uint32_t count, capacity;
	struct ckvo_observation **members; /* members[obs->owner_index] == obs */
	ck_epoch_entry_t retire;
};

/*
 * Observation identities (owner, object, key, callback, context), for
 * duplicate detection: an open-addressing table of record ids + 1, linear
 * probing, writer-only (table.c).
 */
struct ckvo_identities {
	uint32_t *buckets; /* 0: empty */
	uint32_t mask;     /* capacity - 1; capacity is a power of two */
	uint32_t count;
};

/* What an identity lookup compares against. */
struct ckvo_identity {
	const void *owner;
	const void *object;
	ckvo_key_t key;
	ckvo_callback_t callback;
	void *context;
	uint32_t hash;
};

/* ------------------------------------------------------------------- sets */

/*
 * A ck_hs the registry owns (table.c). Each map ck_hs allocates names its
 * set once the set holds it, so that when ck_hs frees a replaced map the
 * free knows whose limbo and byte count it belongs to: no thread-local.
 */
struct ckvo_registry;

struct ckvo_set {
	ck_hs_t hs;
	struct ckvo_registry *registry;
	unsigned long capacity; /* buckets of the current map */
	size_t overhead;        /* bytes of a map besides its buckets */
	bool shared;   /* read lock-free (names, objects): a replaced map waits a grace period */
};

/* --------------------------------------------------------------- registry */

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
	/*
	 * Heap bytes held for this registry's hub, as requested from malloc:
	 * raised at each allocation, lowered when a block is freed or retired
	 * (memory in the limbo is on its way back and not counted).
	 */
	size_t bytes;
	struct ckvo_limbo *garbage;   /* where replaced memory waits (the session's) */
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

/* Counts `delta` bytes allocated (or, negative, freed) for `registry` (writer-only). */
static inline void
ckvo__bytes(struct ckvo_registry *registry, ptrdiff_t delta)
{
	registry->bytes += (size_t)delta;
}

/*
 * Adds `delta` to a counter that readers load lock-free but only writers
 * change, under the hub lock: a store, not a locked read-modify-write.
 */
static inline void
ckvo__writer_add(uint64_t *counter, int64_t delta)
{
	ck_pr_store_64(counter, ck_pr_load_64(counter) + (uint64_t)delta);
}

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

/* table.c: ck_hs sets, hashes, identities */
unsigned long ckvo__hash_pointer(const void *pointer, uint64_t extra);
bool ckvo__names_init(struct ckvo_set *set, struct ckvo_registry *registry);
bool ckvo__groups_init(struct ckvo_set *set, struct ckvo_registry *registry, bool shared);
bool ckvo__set_put(struct ckvo_set *set, unsigned long hash, const void *object);
void ckvo__set_removed(struct ckvo_set *set);
void ckvo__set_destroy(struct ckvo_set *set);
unsigned long ckvo__name_hash(const struct ckvo_set *set, const char *name, size_t length);
unsigned long ckvo__group_hash(const struct ckvo_set *set, const void *pointer);
uint32_t ckvo__identity_hash(const struct ckvo_identity *identity);
struct ckvo_observation *ckvo__identity_find(struct ckvo_registry *registry,
    const struct ckvo_identity *identity);
bool ckvo__identity_reserve(struct ckvo_registry *registry);
void ckvo__identity_insert(struct ckvo_registry *registry, struct ckvo_observation *obs);
void ckvo__identity_remove(struct ckvo_registry *registry, struct ckvo_observation *obs);
void ckvo__identities_destroy(struct ckvo_registry *registry);

/* slotmap.c */
bool ckvo__slotmap_init(struct ckvo_registry *registry, struct ckvo_slotmap *map);
void ckvo__slotmap_destroy(struct ckvo_slotmap *map);
bool ckvo__slotmap_reserve(struct ckvo_registry *registry);
void ckvo__slotmap_put(struct ckvo_registry *registry, struct ckvo_slot *slot);
void ckvo__slotmap_remove(struct ckvo_registry *registry, struct ckvo_slot *slot);

/* list.c */
void ckvo__list_init_first(struct ckvo_slot *slot, ckvo_callback_t callback);
bool ckvo__list_append(struct ckvo_registry *registry, struct ckvo_slot *slot,
    struct ckvo_observation *obs, ckvo_callback_t callback, void *context);
void ckvo__list_remove(struct ckvo_registry *registry, struct ckvo_slot *slot,
    struct ckvo_observation *obs);
void ckvo__list_drop(struct ckvo_registry *registry, struct ckvo_slot *slot);

/* token.c */
struct ckvo_observation *ckvo__token_take(struct ckvo_registry *registry);
void ckvo__token_return(struct ckvo_registry *registry, struct ckvo_observation *obs);
ckvo_token_t ckvo__token_of(const struct ckvo_observation *obs);
struct ckvo_observation *ckvo__token_find(struct ckvo_registry *registry, ckvo_token_t token,
    uint64_t *tag);
struct ckvo_observation *ckvo__token_record(struct ckvo_registry *registry, uint32_t id);
void ckvo__tokens_settle(struct ckvo_registry *registry);
void ckvo__tokens_destroy(struct ckvo_registry *registry);

/* key.c */
void ckvo__keys_destroy(struct ckvo_registry *registry);

#endif /* CKVO_REGISTRY_H */
