/*
 * dispatch.c — delivering changes: the lock-free read side. The stop of
 * an observation's life between its registration (registration.c) and its
 * removal (observe.c): where it is called.
 *
 * Invariants it alone keeps
 * -------------------------
 * - A dispatch runs inside one epoch read section on this thread's record:
 *   nothing it loads (slot, list, observation, ck_hs map) is freed before it
 *   ends, whatever writers do meanwhile. It takes no lock and writes no
 *   shared memory except this thread's own epoch record.
 * - Snapshot: the dispatch loads each list and its count once at the start;
 *   observations appended later are past that count and not visited. One
 *   removed since the dispatch started (by an earlier callback, on any
 *   thread) is skipped: its entry is cleared, or, where entries are no
 *   longer cleared (list.c), its state says so.
 * - Lookup: the key's hint (its newest object slot) answers a dispatch on
 *   that object without probing the map. The hint is cleared before its
 *   slot leaves the map, so it never names a slot the map no longer holds
 *   except to a reader that started before the removal, as the map would.
 * - Order: entries of a list are in registration order; the specific list
 *   of (object, key) and the key's wildcard list are merged by their
 *   observations' generations, which a hub hands out in registration order.
 * - Values: each callback receives a copy of the change that carries only
 *   the values its options asked for. The copy is rebuilt only when the
 *   options differ from the previous callee's.
 * - Nesting: a per-thread depth counter refuses dispatches deeper than
 *   CKVO_NESTING_LIMIT with CKVO_ELOOP, before anything is delivered.
 * - Shape: a key without observers of every object (no wildcard slot) is
 *   dispatched in one inlined frame: a plain setting is validated with three
 *   compares, and only the object's list is visited. A wildcard slot sends
 *   the dispatch to an out-of-line path that merges both lists.
 */
#include "counters.h"
#include "engine.h"

/* Which values a callee may receive, given the change. */
static uint64_t
values_allowed(const ckvo_change_t *change, bool prior)
{
	uint64_t allowed = CKVO_ENTRY_NEW | CKVO_ENTRY_OLD;

	if (prior || change->kind == CKVO_KIND_REMOVAL)
		allowed &= ~CKVO_ENTRY_NEW;
	if (change->kind == CKVO_KIND_INSERTION)
		allowed &= ~CKVO_ENTRY_OLD;
	return allowed;
}

static bool
change_valid(const ckvo_change_t *change)
{
	switch (change->kind) {
	case CKVO_KIND_SETTING:
		return change->indexes == NULL && change->index_count == 0;
	case CKVO_KIND_INSERTION:
	case CKVO_KIND_REMOVAL:
	case CKVO_KIND_REPLACEMENT:
		return change->indexes != NULL || change->index_count == 0;
	default:
		return false;
	}
}

/* One list as a dispatch sees it: the slot, the list and its length at the start. */
struct snapshot {
	struct ckvo_slot *slot;
	struct ckvo_list *list;
	uint32_t count;
};

/* deliver() turns these bits into masks with a shift. */
_Static_assert(CKVO_ENTRY_NEW == 1 && CKVO_ENTRY_OLD == 2, "value option bits");

/* `view_values` before the first callee: no combination of value options. */
#define CKVO_VIEW_VALUES_UNSET (~(uint64_t)0)

/* The state of one delivery loop. */
struct delivery {
	const ckvo_change_t *change;
	ckvo_change_t *view;        /* what the current callee receives (apart, so
	                             * that callees, which get its address, cannot
	                             * reach the rest: it stays in registers) */
	uint64_t allowed;           /* values_allowed(), CKVO_ENTRY_* bits */
	uint64_t view_values;       /* the values `view` currently carries */
	uint64_t required;          /* CKVO_ENTRY_PRIOR for a prior dispatch */
};

static inline void
deliver(struct delivery *d, const struct snapshot *snap, const struct ckvo_entry *entry,
    ckvo_callback_t callback)
{
	uint64_t careful, observation, options, values;

	/*
	 * A replaced list is no longer cleared on removal, and readers mark
	 * observations DEFERRED without clearing: then the state decides.
	 * Read these before the entry: writers set `stale` before, and lower
	 * `deferred` after, clearing an entry, so a reader that finds neither
	 * set finds the entry cleared if its removal is complete.
	 */
	careful = ck_pr_load_32(&snap->list->stale) | ck_pr_load_64(&snap->slot->deferred);
	ck_pr_fence_load();
	observation = ck_pr_load_64(&entry->observation);
	if (observation == 0)
		return; /* removed from the current list */
	if (CKVO_UNLIKELY(careful != 0) &&
	    ckvo__tag_state(ck_pr_load_64(&ckvo__entry_observation(observation)->tag)) >=
	    CKVO_STATE_DEFERRED)
		return;
	options = observation & CKVO_ENTRY_BITS;
	if ((options & d->required) != d->required)
		return;
	values = options & d->allowed;
	if (CKVO_UNLIKELY(values != d->view_values)) {
		/* Masks, not branches: each value is kept or cleared by an AND. */
		d->view->new_value = (const void *)((uintptr_t)d->change->new_value &
		    -(uintptr_t)(values & CKVO_ENTRY_NEW));
		d->view->old_value = (const void *)((uintptr_t)d->change->old_value &
		    -(uintptr_t)((values & CKVO_ENTRY_OLD) >> 1));
		d->view_values = values;
	}
	callback(d->view, entry->context);
}

/* The published list of `slot` and its length at this moment. */
static inline void
snapshot_take(struct snapshot *snap, struct ckvo_slot *slot)
{
	snap->slot = slot;
	snap->list = NULL;
	snap->count = 0;
	if (slot == NULL)
		return;
	CKVO_TSAN_ACQUIRE(slot);
	snap->list = ck_pr_load_ptr(&slot->list);
	snap->count = ck_pr_load_32(&snap->list->count);
	/* Entries below the count were written before it was published. */
	ck_pr_fence_load();
	CKVO_TSAN_ACQUIRE(snap->list);
}

/* The slot of (object, key) on `object`: the key's hint or a map probe. */
static inline struct ckvo_slot *
slot_lookup(ckvo_hub_t *hub, const struct ckvo_keyinfo *info, const void *object)
{
	struct ckvo_slot *hint = ck_pr_load_ptr(&info->hint);

	if (hint != NULL) {
		CKVO_TSAN_ACQUIRE(hint);
		if (hint->id.object == object)
			return hint;
	}
	return ckvo__slotmap_get(&hub->registry.slots, object, info->id);
}

/* Delivers to the observers of a mixed list (one callback each), in order. Out of line: rare. */
static __attribute__((noinline)) void
deliver_list_mixed(struct delivery *d, const struct snapshot *snap)
{
	const struct ckvo_entry *items = snap->list->items;
	const ckvo_callback_t *callbacks = ckvo__list_callbacks(snap->list);

	for (uint32_t i = 0; i < snap->count; i++)
		deliver(d, snap, &items[i], callbacks[i]);
}

/* Delivers to the observers of one snapshot, in order. */
static inline __attribute__((always_inline)) void
deliver_list(struct delivery *d, const struct snapshot *snap)
{
	const struct ckvo_entry *items = snap->list->items;
	ckvo_callback_t callback = snap->list->callback;

	if (CKVO_UNLIKELY(snap->list->mixed)) {
		deliver_list_mixed(d, snap);
		return;
	}
	for (uint32_t i = 0; i < snap->count; i++)
		deliver(d, snap, &items[i], callback);
}


/*
 * Whether entry `a` goes before entry `b`: a cleared entry first (it calls
 * nothing, and it cannot hold back one registered after it), else by
 * generation, which a hub hands out in registration order (token.c).
 */
static inline bool
entry_before(const struct ckvo_entry *a, const struct ckvo_entry *b)
{
	uint64_t oa = ck_pr_load_64(&a->observation), ob;

	if (oa == 0)
		return true;
	ob = ck_pr_load_64(&b->observation);
	if (ob == 0)
		return false;
	return ckvo__counter_before(ck_pr_load_64(&ckvo__entry_observation(oa)->generation),
	    ck_pr_load_64(&ckvo__entry_observation(ob)->generation));
}

/*
 * Delivers to the observers of two snapshots, both non-empty, merged by
 * generation (a record keeps its generation until it is reused, and it is
 * not reused while this dispatch runs). Out of line: a key observed both
 * on one object and on every object is the rare case.
 */
static __attribute__((noinline)) void
deliver_merged(struct delivery *d, const struct snapshot *a, const struct snapshot *b)
{
	const struct ckvo_entry *ea = a->list->items, *eb = b->list->items;
	uint32_t i = 0, j = 0;

	while (i < a->count && j < b->count) {
		if (entry_before(&ea[i], &eb[j])) {
			deliver(d, a, &ea[i], ckvo__list_callback(a->list, i));
			i++;
		} else {
			deliver(d, b, &eb[j], ckvo__list_callback(b->list, j));
			j++;
		}
	}
	for (; i < a->count; i++)
		deliver(d, a, &ea[i], ckvo__list_callback(a->list, i));
	for (; j < b->count; j++)
		deliver(d, b, &eb[j], ckvo__list_callback(b->list, j));
}

/*
 * Prepares the view callees receive: the change as a prior or post
 * notification. `key` and `kind` are the values the dispatch validated.
 */
static inline void
delivery_init(struct delivery *d, ckvo_change_t *view, const ckvo_change_t *change, bool prior,
    uint64_t allowed, ckvo_key_t key, ckvo_kind_t kind)
{
	d->change = change;
	/*
	 * Field by field, not as one struct copy: the announcer has just
	 * written the change with word-sized stores, and a wider load spanning
	 * several of them is not forwarded from the store buffer (a stall that
	 * cost as much as the rest of a one-observer dispatch).
	 */
	view->object = change->object;
	/* old_value and new_value: written for the first callee (view_values is unset). */
	/* A setting has no indexes (validated): constants when `kind` is one. */
	view->indexes = kind == CKVO_KIND_SETTING ? NULL : change->indexes;
	view->index_count = kind == CKVO_KIND_SETTING ? 0 : change->index_count;
	view->key = key;
	view->kind = kind;
	view->is_prior = prior;
	view->is_initial = false;
	d->view = view;
	d->allowed = allowed;
	/* No value set yet: the first callee's options decide them. */
	d->view_values = CKVO_VIEW_VALUES_UNSET;
	d->required = prior ? CKVO_ENTRY_PRIOR : 0;
}

/*
 * A key that also has observers of every object: both lists, merged when
 * both have entries. Out of line, so that the common shape, one object's
 * observers, keeps a small frame.
 */
static __attribute__((noinline)) void
dispatch_with_wildcard(ckvo_hub_t *hub, const struct ckvo_keyinfo *info,
    const ckvo_change_t *change, bool prior, uint64_t allowed, ckvo_kind_t kind,
    struct ckvo_slot *wildcard_slot)
{
	struct snapshot specific, wildcard;
	struct delivery d;
	ckvo_change_t view;

	snapshot_take(&wildcard, wildcard_slot);
	snapshot_take(&specific, NULL);
	if (change->object != NULL && ck_pr_load_64(&info->object_slots) != 0)
		snapshot_take(&specific, slot_lookup(hub, info, change->object));
	if (specific.count == 0 && wildcard.count == 0)
		return;
	delivery_init(&d, &view, change, prior, allowed, info->id, kind);
	if (wildcard.count == 0)
		deliver_list(&d, &specific);
	else if (specific.count == 0)
		deliver_list(&d, &wildcard);
	else
		deliver_merged(&d, &specific, &wildcard);
}

/*
 * The observers of one object's list when there are several: out of line,
 * so that the loop's state, kept in callee-saved registers across the
 * calls, is saved and restored here and not on the one-observer path. One
 * copy for will and one for did, so that `prior` stays a constant in each.
 */
static inline __attribute__((always_inline)) void
dispatch_many(const ckvo_change_t *change, const struct snapshot *snap, bool prior, uint64_t allowed,
    ckvo_key_t key, ckvo_kind_t kind)
{
	/*
	 * A local copy that no callee can reach (the caller's escaped with its
	 * address), so the loop keeps it in registers instead of reloading it
	 * after every call.
	 */
	struct snapshot local = *snap;
	struct delivery d;
	ckvo_change_t view;

	delivery_init(&d, &view, change, prior, allowed, key, kind);
	deliver_list(&d, &local);
}

static __attribute__((noinline)) void
dispatch_many_prior(const ckvo_change_t *change, const struct snapshot *snap, uint64_t allowed,
    ckvo_key_t key, ckvo_kind_t kind)
{
	dispatch_many(change, snap, true, allowed, key, kind);
}

static __attribute__((noinline)) void
dispatch_many_post(const ckvo_change_t *change, const struct snapshot *snap, uint64_t allowed,
    ckvo_key_t key, ckvo_kind_t kind)
{
	dispatch_many(change, snap, false, allowed, key, kind);
}

/*
 * The observers of (change->object, key) alone: inlined, one frame for the
 * common shape; a single observer is called straight from that frame.
 */
static inline __attribute__((always_inline)) void
dispatch_object(ckvo_hub_t *hub, const struct ckvo_keyinfo *info, const ckvo_change_t *change,
    bool prior, uint64_t allowed, ckvo_kind_t kind)
{
	struct snapshot specific;
	struct delivery d;
	ckvo_change_t view;

	snapshot_take(&specific, slot_lookup(hub, info, change->object));
	if (specific.count == 0)
		return;
	if (CKVO_UNLIKELY(specific.count != 1)) {
		/* A copy: `specific` itself never leaves registers. */
		struct snapshot many = specific;

		if (prior)
			dispatch_many_prior(change, &many, allowed, info->id, kind);
		else
			dispatch_many_post(change, &many, allowed, info->id, kind);
		return;
	}
	delivery_init(&d, &view, change, prior, allowed, info->id, kind);
	/* A mixed list's `callback` is its first entry's too. */
	deliver(&d, &specific, &specific.list->items[0], specific.list->callback);
}

/*
 * Every dispatch that is not a plain setting of one object's key without
 * observers of every object, or that meets an error: out of line, reached
 * by a tail call from dispatch() below.
 */
static __attribute__((noinline)) ckvo_status_t
dispatch_general(ckvo_hub_t *hub, const ckvo_change_t *change, bool prior)
{
	struct ckvo_thread *thread = &ckvo__thread;
	struct ckvo_keyinfo *info;
	struct ckvo_slot *wildcard;
	ck_epoch_record_t *record;
	uint64_t allowed;
	ckvo_kind_t kind;

	if (CKVO_UNLIKELY(hub == NULL || change == NULL))
		return CKVO_EINVAL;
	info = ckvo__key_lookup(&hub->registry, change->key);
	if (CKVO_UNLIKELY(info == NULL))
		return CKVO_EINVAL;
	/* A plain setting, the common case, is valid without a closer look. */
	kind = change->kind;
	if (CKVO_LIKELY(kind == CKVO_KIND_SETTING && change->indexes == NULL &&
	    change->index_count == 0))
		allowed = prior ? CKVO_ENTRY_OLD : CKVO_ENTRY_NEW | CKVO_ENTRY_OLD;
	else if (change_valid(change))
		allowed = values_allowed(change, prior);
	else
		return CKVO_EINVAL;
	if (CKVO_UNLIKELY(thread->depth >= CKVO_NESTING_LIMIT))
		return CKVO_ELOOP;
	if (ck_pr_load_64(&info->probe.observations) == 0)
		return CKVO_OK;
	record = ckvo__thread_record();
	if (CKVO_UNLIKELY(record == NULL))
		return CKVO_ENOMEM;

	thread->depth++;
	ckvo__read_begin(record);
	wildcard = ck_pr_load_ptr(&info->wildcard);
	if (CKVO_UNLIKELY(wildcard != NULL))
		dispatch_with_wildcard(hub, info, change, prior, allowed, kind, wildcard);
	else if (change->object != NULL)
		dispatch_object(hub, info, change, prior, allowed, kind);
	/*
	 * The record again from the thread, not kept across the callbacks: the
	 * one-observer path then has nothing to save around its call.
	 */
	ckvo__read_end(ckvo__thread.record);
	ckvo__thread.depth--;
	return CKVO_OK;
}


/*
 * Inlined into will/did, so `prior` is a constant and a did-change loop
 * tests no option. The common shape — a valid plain setting of an object's
 * key, this thread's record ready, no runaway nesting — is checked first;
 * anything else goes on, by a tail call, to dispatch_general. Past that
 * point the only calls are the callbacks (or the out-of-line loops), after
 * which nothing but this thread's state is needed: the fast path saves no
 * registers.
 */
static inline __attribute__((always_inline)) ckvo_status_t
dispatch(ckvo_hub_t *hub, const ckvo_change_t *change, bool prior)
{
	struct ckvo_keyinfo *info;
	struct ckvo_slot *wildcard;
	ck_epoch_record_t *record;
	uint64_t allowed = prior ? CKVO_ENTRY_OLD : CKVO_ENTRY_NEW | CKVO_ENTRY_OLD;

	/* Every early return is CKVO_OK or a tail call: no status kept in a register. */
	if (CKVO_UNLIKELY(hub == NULL || change == NULL))
		return dispatch_general(hub, change, prior);
	info = ckvo__key_lookup(&hub->registry, change->key);
	record = ckvo__thread.record;
	if (CKVO_UNLIKELY(info == NULL || change->kind != CKVO_KIND_SETTING ||
	    change->indexes != NULL || change->index_count != 0 || change->object == NULL ||
	    record == NULL || ckvo__thread.depth >= CKVO_NESTING_LIMIT))
		return dispatch_general(hub, change, prior);
	if (ck_pr_load_64(&info->probe.observations) == 0)
		return CKVO_OK;

	ckvo__thread.depth++;
	ckvo__read_begin(record);
	wildcard = ck_pr_load_ptr(&info->wildcard);
	if (CKVO_UNLIKELY(wildcard != NULL))
		dispatch_with_wildcard(hub, info, change, prior, allowed, CKVO_KIND_SETTING, wildcard);
	else
		dispatch_object(hub, info, change, prior, allowed, CKVO_KIND_SETTING);
	ckvo__read_end(ckvo__thread.record);
	ckvo__thread.depth--;
	return CKVO_OK;
}

ckvo_status_t
ckvo_will_change(ckvo_hub_t *hub, const ckvo_change_t *change)
{
	return dispatch(hub, change, true);
}

ckvo_status_t
ckvo_did_change(ckvo_hub_t *hub, const ckvo_change_t *change)
{
	return dispatch(hub, change, false);
}
bool
ckvo_has_observers(ckvo_hub_t *hub, const void *object, ckvo_key_t key)
{
	struct ckvo_keyinfo *info;

	(void)object; /* a per-key count: "maybe" for other objects of an observed key */
	if (CKVO_UNLIKELY(hub == NULL))
		return false;
	info = ckvo__key_lookup(&hub->registry, key);
	return info != NULL && ckvo_probe_has_observers(&info->probe);
}

bool
ckvo_token_is_live(ckvo_hub_t *hub, ckvo_token_t token)
{
	ck_epoch_record_t *record;
	struct ckvo_observation *obs;
	uint64_t tag = 0;

	if (CKVO_UNLIKELY(hub == NULL || ckvo_token_is_none(token)))
		return false;
	record = ckvo__thread_record();
	if (CKVO_UNLIKELY(record == NULL))
		return false;
	/* A read section: the record's page may be retired meanwhile (token.c). */
	ckvo__read_begin(record);
	obs = ckvo__token_find(&hub->registry.tokens, token, &tag);
	ckvo__read_end(record);
	/* ckvo_unobserve removes exactly the LIVE ones (observe.c). */
	return obs != NULL && ckvo__tag_state(tag) == CKVO_STATE_LIVE;
}
