/*
 * observation.h — an observation's record and its state (never installed):
 * the tag readers compare-and-swap, and the list entry that names a record.
 * Records live in token pages (token.h); slots list them (slot.h).
 */
#ifndef CKVO_OBSERVATION_H
#define CKVO_OBSERVATION_H

#include <ck_pr.h>
#include <ck_stack.h>

#include "ckvo.h"
#include "epoch.h"

struct ckvo_slot;
struct ckvo_owner_group;

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
 * Adds `delta` to a counter that readers load lock-free but only writers
 * change, under the hub lock: a store, not a locked read-modify-write.
 */
static inline void
ckvo__writer_add(uint64_t *counter, int64_t delta)
{
	ck_pr_store_64(counter, ck_pr_load_64(counter) + (uint64_t)delta);
}

#endif /* CKVO_OBSERVATION_H */
