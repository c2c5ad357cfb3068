/*
 * table.h — the registry's writer-side indexes (table.c) (never installed):
 * owner groups, observation identities for duplicate detection, and the
 * ck_hs sets (names, owners, objects) with their hashes.
 */
#ifndef CKVO_TABLE_H
#define CKVO_TABLE_H

#include <ck_hs.h>

#include "token.h"

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

/*
 * A ck_hs the registry owns (table.c). Each map ck_hs allocates names its
 * set once the set holds it, so that when ck_hs frees a replaced map the
 * free knows whose limbo and byte count it belongs to: no thread-local.
 */
struct ckvo_set {
	ck_hs_t hs;
	struct ckvo_ledger *ledger;
	unsigned long capacity; /* buckets of the current map */
	size_t overhead;        /* bytes of a map besides its buckets */
	bool shared;   /* read lock-free (names, objects): a replaced map waits a grace period */
};

/* table.c: ck_hs sets, hashes, identities */
unsigned long ckvo__hash_pointer(const void *pointer, uint64_t extra);
bool ckvo__names_init(struct ckvo_set *set, struct ckvo_ledger *ledger);
bool ckvo__groups_init(struct ckvo_set *set, struct ckvo_ledger *ledger, bool shared);
bool ckvo__set_put(struct ckvo_set *set, unsigned long hash, const void *object);
void ckvo__set_removed(struct ckvo_set *set);
void ckvo__set_destroy(struct ckvo_set *set);
unsigned long ckvo__name_hash(const struct ckvo_set *set, const char *name, size_t length);
unsigned long ckvo__group_hash(const struct ckvo_set *set, const void *pointer);
uint32_t ckvo__identity_hash(const struct ckvo_identity *identity);
struct ckvo_observation *ckvo__identity_find(struct ckvo_identities *table,
    struct ckvo_tokens *tokens, const struct ckvo_identity *identity);
bool ckvo__identity_reserve(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_ledger *ledger);
void ckvo__identity_insert(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_observation *obs);
void ckvo__identity_remove(struct ckvo_identities *table, struct ckvo_tokens *tokens,
    struct ckvo_ledger *ledger, struct ckvo_observation *obs);
void ckvo__identities_destroy(struct ckvo_identities *table, struct ckvo_ledger *ledger);

#endif /* CKVO_TABLE_H */
