/*
 * internal.h — CKVOCore's private data structures (never installed).
 *
 * The shape of a hub
 * ------------------
 * A hub maps (object, key) to a *slot*; a slot owns an append-only *list* of
 * entries (callback, context, observation), in registration order. The
 * observation records themselves live in the token pages, at the index
 * their token names. Observations of a key on
 * every object (object == NULL) live in the key's own wildcard slot. Readers
 * (dispatch) find a slot lock-free: the (object, key) → slot map
 * (slotmap.c) is read under a ck_epoch section; the wildcard slot hangs off
 * the key.
 *
 * Writers (observe, unobserve, interning) serialize on hub->lock and never
 * block readers. Everything a reader can reach is retired through reclaim.c
 * and freed only after a grace period; reclaimer.c runs the releases that
 * no writer gets to. The writer-only indexes (tokens, identities, owners,
 * objects) are touched by writers alone; the names are also read lock-free
 * (ckvo_key_find), under an epoch section.
 *
 * Ownership of memory that readers reach:
 *   hub->slots (slotmap.c) → struct ckvo_slot    (retired when its last
 *                                                 observation goes)
 *   slot->list           → struct ckvo_list      (retired when replaced)
 *   list->items[i]       → struct ckvo_observation (in a token page; retired
 *                                                 when removed, after the
 *                                                 entry is cleared in the
 *                                                 current list, and reused
 *                                                 only after a grace period)
 *   hub->key_table       → key arrays are never freed before the hub; each
 *                          struct ckvo_keyinfo lives as long as the hub.
 *   hub->tokens.dir      → token directories live as long as the hub; a
 *                          page, which holds observation records, is
 *                          retired through the epoch once all its records
 *                          are back (token.c). An older directory may then
 *                          hold a dangling page pointer: only the current
 *                          one is ever walked, and a token lookup outside
 *                          the writer lock stays inside a read section.
 */
#ifndef CKVO_INTERNAL_H
#define CKVO_INTERNAL_H

#include <ck_epoch.h>
#include <ck_hs.h>
#include <ck_pr.h>
#include <ck_stack.h>
#include <pthread.h>

#include "ckvo.h"
#include "asan.h"
#include "tsan.h"

#define CKVO_LIKELY(x) __builtin_expect(!!(x), 1)
#define CKVO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CKVO_CONTAINER(type, member, ptr) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Longest key name ckvo_key_intern accepts, in bytes, without the NUL. */
#define CKVO_KEY_NAME_MAX 1024

/* ------------------------------------------------------------ observation */

/*
 * Life of an observation, in the low bits of its tag; within one generation
 * it moves only forward. A record whose observation ended is reused, with a
 * new generation, only after a grace period (reclaim.c).
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
 * An observation's tag: generation << 24 | options << 8 | state. One word,
 * so that a reader's compare-and-swap to DEFERRED (ckvo_unobserve_deferred)
 * can only hit the generation its token names. A generation is 40 bits,
 * drawn from one process-wide sequence (token.c), never from the record.
 */
#define CKVO_TAG_STATE_MASK 0xffu
#define CKVO_TAG_OPTIONS_SHIFT 8
#define CKVO_TAG_GENERATION_SHIFT 24
#define CKVO_GENERATION_BITS 40
_Static_assert(CKVO_TAG_GENERATION_SHIFT + CKVO_GENERATION_BITS == 64, "a tag is one word");
_Static_assert((CKVO_OPTIONS_ALL >> (CKVO_TAG_GENERATION_SHIFT - CKVO_TAG_OPTIONS_SHIFT)) == 0,
    "options fit below the generation");

static inline unsigned int
ckvo__tag_state(uint64_t tag)
{
	return (unsigned int)(tag & CKVO_TAG_STATE_MASK);
}

static inline ckvo_options_t
ckvo__tag_options(uint64_t tag)
{
	return (ckvo_options_t)((uint32_t)tag >> CKVO_TAG_OPTIONS_SHIFT) &
	    ((1u << (CKVO_TAG_GENERATION_SHIFT - CKVO_TAG_OPTIONS_SHIFT)) - 1);
}

static inline uint64_t
ckvo__tag_generation(uint64_t tag)
{
	return tag >> CKVO_TAG_GENERATION_SHIFT;
}

static inline uint64_t
ckvo__tag_make(uint64_t generation, ckvo_options_t options, unsigned int state)
{
	return ((uint64_t)generation << CKVO_TAG_GENERATION_SHIFT) |
	    ((uint64_t)options << CKVO_TAG_OPTIONS_SHIFT) | state;
}

struct ckvo_slot;
struct ckvo_owner_group;

/*
 * One observation. Records live in the token pages (token.c), at the index
 * their tokens name: a record whose observation ended goes back to its page
 * for reuse after a grace period, and a page whose records are all back is
 * retired through the epoch, so a reader reaches a record only inside a read
 * section (or under the writer lock). The callback is not stored here:
 * it lives in the observation's list entry, the only place dispatch reads it.
 */
struct ckvo_observation {
	uint64_t tag;                /* generation, options, state (atomic) */
	struct ckvo_slot *slot;      /* set before the observation is live, then fixed */
	void *context;
	ckvo_release_t release;
	struct ckvo_owner_group *owner_group; /* NULL: registered without an owner */
	uint64_t seq;                /* hub-wide registration order */
	uint64_t origin;             /* removed by the release at this ticket, or 0 (release.c) */
	/*
	 * On hub->deferred while DEFERRED, then on a retired chain, then on
	 * its token page's free records (token.c): never on two at once.
	 */
	ck_stack_entry_t link;
	uint32_t id;                 /* index in the token pages, fixed */
	uint32_t index;              /* position in slot->list (writer-only) */
	uint32_t owner_index;        /* position in its owner group (writer-only) */
	uint32_t identity;           /* identity hash (writer-only, see table.c) */
};

/* ------------------------------------------------------------------- list */

/*
 * Entry bits that carry an observation's options next to its pointer (the
 * records are 8-byte aligned), so an entry is three words.
 */
#define CKVO_ENTRY_NEW ((uint64_t)1)
#define CKVO_ENTRY_OLD ((uint64_t)2)
#define CKVO_ENTRY_PRIOR ((uint64_t)4)
#define CKVO_ENTRY_BITS ((uint64_t)7)
/* The flags sit in a record address's low bits: every record is 8-aligned. */
_Static_assert(_Alignof(struct ckvo_observation) >= 8, "record alignment leaves no room for entry flags");
_Static_assert(sizeof(struct ckvo_observation) % 8 == 0, "records in a page must stay 8-aligned");

/*
 * One list entry. The callback and context sit side by side so that a
 * fan-out reads the list sequentially without touching the observations;
 * `observation` is the record's address with the CKVO_ENTRY_* bits of its
 * options, or 0 once the observation is removed (atomic).
 */
struct ckvo_entry {
	ckvo_callback_t callback;
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
 * registration and removal.
 */
struct ckvo_list {
	ck_epoch_entry_t retire;
	uint32_t count;    /* published length (atomic) */
	uint32_t capacity;
	uint32_t stale;    /* replaced: removals no longer clear entries here (atomic) */
	struct ckvo_entry items[];
};

/* ------------------------------------------------------------------- slot */

struct ckvo_keyinfo;
struct ckvo_object_group;

/* What the (object, key) → slot map is keyed by. */
struct ckvo_slot_id {
	const void *object;
	ckvo_key_t key;
};

/* The observers of one (object, key); object == NULL is a key's wildcard slot. */
struct ckvo_slot {
	struct ckvo_slot_id id; /* never changes while in the map */
	struct ckvo_list *list; /* published (atomic) */
	uint64_t deferred;  /* observations marked DEFERRED, not yet unlinked (atomic) */

	/* Writer-only. */
	struct ckvo_keyinfo *keyinfo;
	uint32_t live, dead; /* live and cleared entries in `list` */
	struct ckvo_object_group *group;
	struct ckvo_slot *group_prev, *group_next;
	ck_epoch_entry_t retire;
};

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
 * 16 records a page: one survivor pins 1.2 KB, not a page of 512 (37 KB),
 * and the directory costs half a byte a record.
 */
#define CKVO_TOKEN_PAGE_BITS 4
#define CKVO_TOKEN_PAGE_SIZE (1u << CKVO_TOKEN_PAGE_BITS)
/* A token is generation << CKVO_TOKEN_INDEX_BITS | record index (token.c). */
#define CKVO_TOKEN_INDEX_BITS CKVO_TAG_GENERATION_SHIFT
#define CKVO_TOKEN_PAGES_MAX (1u << (CKVO_TOKEN_INDEX_BITS - CKVO_TOKEN_PAGE_BITS))
/* Empty token pages a hub keeps for reuse (token.c): churn's records in flight. */
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
	uint32_t vacant_count;
	uint32_t pages;         /* directory entries ever filled */
	uint32_t spares;        /* pages kept with no record in use (at most CKVO_TOKEN_SPARE_PAGES) */
};

/* ---------------------------------------------------------------- groups */

/*
 * The observations registered with one owner, in no particular order.
 * `owner` is also read lock-free, through a live observation's
 * owner_group (listing.c): an empty group is retired, not freed.
 */
struct ckvo_owner_group {
	const void *owner; /* map key; never changes */
	uint32_t count, capacity;
	struct ckvo_observation **members; /* members[obs->owner_index] == obs */
	ck_epoch_entry_t retire;
};

struct ckvo_object_group {
	const void *object; /* map key */
	struct ckvo_slot *head;
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

/* -------------------------------------------------------------------- hub */

/*
 * Retired entries that wait for the same number of grace-period scans
 * (reclaim.c): memory linked through its ck_epoch_entry_t's stack entry,
 * and observations linked through their `link`.
 */
struct ckvo_retired {
	ck_stack_entry_t *head, *tail;
	ck_stack_entry_t *observations_head, *observations_tail;
	unsigned int count;        /* entries, observations included */
	unsigned int observations; /* retired observations */
};

/*
 * Memory that became free to reclaim after a grace period (reclaim.c):
 * ck_epoch_entry_t stack entries, freed by the thread that took them once
 * it has dropped the lock. Observations past their grace period go to the
 * hub's release queue instead (release.c).
 */
struct ckvo_ready {
	ck_stack_entry_t *entries;
};

#define CKVO_READY_INITIALIZER { NULL }

/*
 * A thread waiting for the release queue up to `ticket` (release.c): a
 * flush, or the runner itself. Follow-ups that a release queues move the
 * tickets of the waiters that wait for that release.
 */
struct ckvo_waiter {
	uint64_t ticket;
	struct ckvo_waiter *next;
};

/* A flush on its way (reclaim.c): what it detached is not queued yet. */
struct ckvo_flush {
	uint64_t number;
	bool queued;
	struct ckvo_flush *next;
};

struct ckvo_hub {
	pthread_mutex_t lock;         /* serializes writers */

	struct ckvo_slotmap slots;    /* (object, key) → slot; read lock-free */
	struct ckvo_key_array *keys;  /* published (atomic) */
	uint32_t key_count;           /* published (atomic) */
	struct ckvo_tokens tokens;
	ck_stack_t deferred;          /* observations marked dead by readers (MPSC) */

	/* Writer-only. */
	ck_hs_t names;                /* name → keyinfo */
	struct ckvo_identities identities; /* observation identity → observation */
	ck_hs_t owners;               /* owner → owner group */
	ck_hs_t objects;              /* object → object group */
	uint32_t owners_peak, objects_peak; /* most groups since last sized (observe.c) */
	uint64_t next_seq;
	size_t observations;
	size_t bytes;                 /* held by the engine for this hub, garbage included */

	/* Reclamation (reclaim.c), under `lock` unless noted. */
	struct ckvo_retired fresh;    /* retired since the last scan that saw readers settle */
	struct ckvo_retired aged;     /* retired before it: one more such scan frees them */
	unsigned int poll_at;         /* poll once fresh + aged hold this many */
	uint64_t retired;             /* observations retired */

	/* The release queue (release.c), under `lock`. */
	ck_stack_entry_t *queue_head, *queue_tail; /* past their grace period, oldest first */
	uint64_t queued;              /* observations ever queued: the tickets */
	uint64_t taken;               /* ... ever taken from the queue by a runner */
	uint64_t done;                /* ... whose release returned and record went back */
	struct ckvo_waiter *waiters;  /* threads waiting for `done` to reach their ticket */
	struct ckvo_flush *flushes;   /* flushes between their detach and their queueing */
	uint64_t flush_number;        /* flushes ever begun */
	bool running;                 /* a thread is this hub's runner */
	pthread_t runner;             /* that thread, while `running` */
	pthread_cond_t ran;           /* broadcast when `done` moves or the runner stops */

	/* The background reclaimer (reclaimer.c), under `lock`. */
	pthread_cond_t wake;          /* broadcast on stop, ending a period's sleep */
	uint32_t wakeups;             /* futex word, incremented to wake it (atomic, lock-free) */
	pthread_t reclaimer;
	bool reclaimer_running;       /* the thread exists (joinable) */
	bool reclaimer_armed;         /* it will poll again without being woken */
	bool reclaimer_stopped;       /* ckvo_hub_destroy began: never start it again */

	bool is_default;

	struct ckvo_hub *registry_prev, *registry_next; /* all hubs, for fork */
};

/* ---------------------------------------------------------------- threads */

/* Per-thread state, across all hubs. */
struct ckvo_thread {
	ck_epoch_record_t *record; /* this thread's reader record, lazily registered */
	unsigned int depth;        /* dispatches in progress on this thread */
	struct ckvo_hub *writing;  /* hub whose writer lock this thread holds */
	unsigned int releasing;    /* release callbacks running on this thread */
	struct ckvo_hub *reclaiming; /* hub whose background reclaimer this thread is */
	struct ckvo_hub *running;  /* hub whose releases this thread runs (innermost) */
	uint64_t position;         /* the ticket of the release it runs on `running` */
};

extern __thread struct ckvo_thread ckvo__thread __attribute__((tls_model("initial-exec")));
extern ck_epoch_t ckvo__epoch;

/*
 * True when writers order readers with membarrier(2) before every epoch
 * scan, so a reader entering its section needs no store-load fence (an
 * xchg, several ns on some CPUs). See thread.c.
 */
extern bool ckvo__asymmetric_fence;

/* Retired entries accumulate to this many before a writer polls the epoch. */
#define CKVO_RECLAIM_BATCH 64u

/*
 * The background reclaimer polls this long after it is woken, and again
 * every period while entries stay pending (see reclaimer.c for the bound
 * this gives on how late a release runs).
 */
#define CKVO_RECLAIM_PERIOD_NS 10000000L

/*
 * Retiring a list or map of at least this many bytes makes the next unlock
 * poll, so that large garbage goes back to the allocator promptly.
 */
#define CKVO_RECLAIM_LARGE 65536u

/* thread.c */
ck_epoch_record_t *ckvo__thread_record_slow(void);
void ckvo__threads_before_fork(void);
void ckvo__threads_after_fork_child(void);

/* What one scan of the reader records found (ckvo__epoch_scan). */
enum ckvo_scan {
	CKVO_SCAN_BUSY,    /* a reader is in a section begun in an older epoch */
	CKVO_SCAN_SETTLED, /* every reader in a section began it in this epoch; advanced */
	CKVO_SCAN_IDLE,    /* no reader is in a section */
};
enum ckvo_scan ckvo__epoch_scan(void);

/* This thread's reader record, or NULL when out of memory. */
static inline ck_epoch_record_t *
ckvo__thread_record(void)
{
	ck_epoch_record_t *record = ckvo__thread.record;

	if (CKVO_LIKELY(record != NULL))
		return record;
	return ckvo__thread_record_slow();
}

/* True inside any epoch read section on this thread (inside a callback). */
static inline bool
ckvo__in_read_section(void)
{
	ck_epoch_record_t *record = ckvo__thread.record;

	return record != NULL && ck_pr_load_uint(&record->active) != 0;
}

/* Enters / leaves a read section (the caller checked the record exists). */
static inline void
ckvo__read_begin(ck_epoch_record_t *record)
{
	if (!ckvo__asymmetric_fence) {
		ck_epoch_begin(record, NULL);
		/*
		 * Orders the load of the global epoch inside ck_epoch_begin
		 * before the section's loads (free under TSO). A scan may see
		 * `active` set with a stale epoch, before this reader stores the
		 * one it loaded; if that one came from a newer advance, the
		 * section's loads must see what was unpublished before that
		 * advance, or a later scan would take the reader for settled in
		 * the new epoch while it holds something retired before.
		 */
		ck_pr_fence_load();
		return;
	}

	/*
	 * ck_epoch_begin without its store-load fence. A writer issues
	 * membarrier(2) before each scan of the records: every store made
	 * here before the writer's barrier is then visible to its scan, and
	 * every load made here after it sees what the writer unpublished
	 * before it (the argument of liburcu's "memb" flavour).
	 */
	if (record->active == 0) {
		ck_pr_store_uint(&record->active, 1);
		ck_pr_barrier();
		/* Every reader record belongs to ckvo__epoch: one load, not two. */
		ck_pr_store_uint(&record->epoch, ck_pr_load_uint(&ckvo__epoch.epoch));
	} else {
		ck_pr_store_uint(&record->active, record->active + 1);
	}
}

static inline void
ckvo__read_end(ck_epoch_record_t *record)
{
	/* Everything this reader did happens before frees that wait for it. */
	CKVO_TSAN_RELEASE(&ckvo__epoch);
	ck_epoch_end(record, NULL);
}

/* Counts `delta` bytes allocated (or, negative, freed) for `hub` (under its lock). */
static inline void
ckvo__bytes(struct ckvo_hub *hub, ptrdiff_t delta)
{
	hub->bytes += (size_t)delta;
}

/* table.c: ck_hs plumbing */
extern struct ck_malloc ckvo__hs_allocator;
unsigned long ckvo__hash_pointer(const void *pointer, uint64_t extra);
bool ckvo__names_init(ck_hs_t *hs);
bool ckvo__groups_init(ck_hs_t *hs);
unsigned long ckvo__name_hash(const ck_hs_t *hs, const char *name, size_t length);
uint32_t ckvo__identity_hash(const struct ckvo_identity *identity);
struct ckvo_observation *ckvo__identity_find(struct ckvo_hub *hub,
    const struct ckvo_identity *identity);
bool ckvo__identity_reserve(struct ckvo_hub *hub);
void ckvo__identity_insert(struct ckvo_hub *hub, struct ckvo_observation *obs);
void ckvo__identity_remove(struct ckvo_hub *hub, struct ckvo_observation *obs);
void ckvo__identities_destroy(struct ckvo_hub *hub);
unsigned long ckvo__group_hash(const ck_hs_t *hs, const void *pointer);
bool ckvo__groups_resize(ck_hs_t *hs);

/*
 * Adds `delta` to a counter that readers load lock-free but only writers
 * change, under the hub lock: a store, not a locked read-modify-write.
 */
static inline void
ckvo__writer_add(uint64_t *counter, int64_t delta)
{
	ck_pr_store_64(counter, ck_pr_load_64(counter) + (uint64_t)delta);
}

/* hub.c / reclaim.c: the writer protocol */
void ckvo__hub_lock(struct ckvo_hub *hub);
void ckvo__hub_unlock(struct ckvo_hub *hub);
void ckvo__hub_unlock_quiet(struct ckvo_hub *hub);
void ckvo__reclaim_poll(struct ckvo_hub *hub, struct ckvo_ready *ready);
void ckvo__reclaim_finish(struct ckvo_ready *ready);
void ckvo__reclaim_flush(struct ckvo_hub *hub, bool wait_for_releases);
unsigned int ckvo__reclaim_pending(const struct ckvo_hub *hub);
void ckvo__reclaim_after_fork_child(struct ckvo_hub *hub);
void ckvo__retire(struct ckvo_hub *hub, ck_epoch_entry_t *entry, ck_epoch_cb_t *function);
void ckvo__retire_large(struct ckvo_hub *hub, size_t bytes);
void ckvo__retire_observation(struct ckvo_hub *hub, struct ckvo_observation *obs);
void ckvo__retire_list(struct ckvo_hub *hub, struct ckvo_list *list);
void ckvo__retire_slot(struct ckvo_hub *hub, struct ckvo_slot *slot);

/* release.c: the release runner */
bool ckvo__release_init(struct ckvo_hub *hub);
void ckvo__release_enqueue(struct ckvo_hub *hub, ck_stack_entry_t *head, ck_stack_entry_t *tail,
    unsigned int count);
void ckvo__release_run(struct ckvo_hub *hub);
void ckvo__release_wait(struct ckvo_hub *hub, uint64_t ticket);
bool ckvo__release_is_runner(const struct ckvo_hub *hub);
uint64_t ckvo__release_origin(const struct ckvo_hub *hub);
void ckvo__release_after_fork_child(struct ckvo_hub *hub);

/* True when the release queue holds releases not yet taken by a runner (under the lock). */
static inline bool
ckvo__release_queued(const struct ckvo_hub *hub)
{
	return hub->queue_head != NULL;
}

/* reclaimer.c: the background reclaimer */
bool ckvo__reclaimer_init(struct ckvo_hub *hub);
bool ckvo__reclaimer_start(struct ckvo_hub *hub);
void ckvo__reclaimer_arm(struct ckvo_hub *hub);
void ckvo__reclaimer_wake(struct ckvo_hub *hub);
void ckvo__reclaimer_stop(struct ckvo_hub *hub);
void ckvo__reclaimer_after_fork_child(struct ckvo_hub *hub);

/* The hash of (object, key): one multiply-mix, it is on the dispatch path. */
static inline unsigned long
ckvo__slot_id_hash(const void *object, ckvo_key_t key)
{
	uint64_t x = (uint64_t)(uintptr_t)object ^ ((uint64_t)key * 0x9e3779b97f4a7c15ULL);

	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	return (unsigned long)(x ^ (x >> 32));
}

/* slotmap.c */
bool ckvo__slotmap_init(struct ckvo_slotmap *map);
void ckvo__slotmap_destroy(struct ckvo_slotmap *map);
bool ckvo__slotmap_put(struct ckvo_hub *hub, struct ckvo_slotmap *map, struct ckvo_slot *slot);
void ckvo__slotmap_remove(struct ckvo_hub *hub, struct ckvo_slotmap *map, struct ckvo_slot *slot);

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
		/* Published by slot_publish (observe.c). */
		CKVO_TSAN_ACQUIRE(slot);
		if (slot->id.object == object && slot->id.key == key)
			return slot;
	}
}

/* key.c */
void ckvo__keys_destroy(struct ckvo_hub *hub);

/* The key `key` of `hub`, or NULL: lock-free, on the dispatch path. */
static inline struct ckvo_keyinfo *
ckvo__key_lookup(struct ckvo_hub *hub, ckvo_key_t key)
{
	uint32_t count = ck_pr_load_32(&hub->key_count);
	struct ckvo_key_array *array;
	struct ckvo_keyinfo *info;

	if (CKVO_UNLIKELY(key == 0 || key > count))
		return NULL;
	/* The count is read before the array: the array is at least as new. */
	ck_pr_fence_load();
	array = ck_pr_load_ptr(&hub->keys);
	info = ck_pr_load_ptr(&array->keys[key - 1]);
	CKVO_TSAN_ACQUIRE(info);
	return info;
}

/* list.c */
bool ckvo__list_append(struct ckvo_hub *hub, struct ckvo_slot *slot, struct ckvo_observation *obs,
    ckvo_callback_t callback);
void ckvo__list_remove(struct ckvo_hub *hub, struct ckvo_slot *slot, struct ckvo_observation *obs);
struct ckvo_list *ckvo__list_create(uint32_t capacity);

/* token.c */
struct ckvo_observation *ckvo__token_take(struct ckvo_hub *hub);
void ckvo__token_return(struct ckvo_hub *hub, struct ckvo_observation *obs);
ckvo_token_t ckvo__token_of(const struct ckvo_observation *obs, uint64_t tag);
struct ckvo_observation *ckvo__token_find(struct ckvo_hub *hub, ckvo_token_t token,
    uint64_t *tag);
struct ckvo_observation *ckvo__token_record(struct ckvo_hub *hub, uint32_t id);
void ckvo__tokens_destroy(struct ckvo_hub *hub);

/* observe.c */
void ckvo__drain_deferred(struct ckvo_hub *hub);
bool ckvo__remove_all(struct ckvo_hub *hub);

#endif /* CKVO_INTERNAL_H */
