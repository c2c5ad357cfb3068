/*
 * observation.c — the soak's observation context: its callback and release
 * check, when they run, what only they can see (see csoak.h).
 *
 * Fields read by callbacks on other threads are atomics: the record is
 * written by its owning thread while other threads' dispatches may already
 * call it.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Removal generations not known yet (the callback then skips that check). */
#define UNKNOWN UINT64_MAX

/*
 * Every LINGER_EVERY-th observation stays in its callback a little longer
 * (a microsecond or so), so that removals often meet a callback still running
 * on another thread: ckvo_unobserve_sync must then wait for it.
 */
#define LINGER_EVERY 8
#define LINGER_SPINS 1000

struct csoak_obs {
	csoak_obs_spec_t spec;
	/* Written by ckvo_observe before an initial notification; read only on
	 * the registering thread. */
	ckvo_token_t engine_token;
	_Atomic bool published; /* engine_token is final: ckvo_observe returned CKVO_OK */
	_Atomic uint64_t registration_start;
	_Atomic uint64_t registered;
	_Atomic uint64_t object_removals_before;
	_Atomic uint64_t owner_removals_before;
	_Atomic uint64_t object_removals_after;
	_Atomic uint64_t owner_removals_after;
	_Atomic bool clean;
	_Atomic bool removing;      /* its owner began removing it */
	_Atomic bool self_removing; /* its callback began removing it */
	_Atomic uint64_t removed_at;
	_Atomic bool strictly_removed;
	_Atomic unsigned inside; /* callbacks running now */
	_Atomic uint64_t calls;
	_Atomic uint64_t prior_calls;
	_Atomic uint64_t initial_calls;
	_Atomic uint64_t releases;
};

/* The value csoak_initial_getter reports for every object. */
static const uint64_t initial_marker = 0x1417;

/* The observation this thread is registering (its initial callback runs here). */
static __thread const csoak_obs_t *registering;

static void obs_callback(const ckvo_change_t *change, void *context);
static void obs_release(void *context);

static void
note(const csoak_obs_t *obs, csoak_violation_t kind)
{
	csoak_violation_note(kind, obs->spec.id);
}

csoak_obs_t *
csoak_obs_create(const csoak_obs_spec_t *spec)
{
	csoak_obs_t *obs = calloc(1, sizeof(*obs));

	if (obs == NULL)
		return NULL;
	obs->spec = *spec;
	atomic_init(&obs->object_removals_after, UNKNOWN);
	atomic_init(&obs->owner_removals_after, UNKNOWN);
	return obs;
}

void
csoak_obs_destroy(csoak_obs_t *obs)
{
	free(obs);
}

/*
 * Whether a removal of its object or owner may have removed it: one was in
 * flight when it registered, or one was marked since.
 */
static bool
target_removed(const csoak_obs_t *obs)
{
	csoak_obs_t *o = (csoak_obs_t *)obs;

	if (!atomic_load(&o->clean))
		return true;
	if (o->spec.object_index >= 0 &&
	    csoak_removals_marked(CSOAK_TARGET_OBJECT, (unsigned)o->spec.object_index) !=
		atomic_load(&o->object_removals_before))
		return true;
	return o->spec.owner_index >= 0 &&
	    csoak_removals_marked(CSOAK_TARGET_OWNER, (unsigned)o->spec.owner_index) !=
	    atomic_load(&o->owner_removals_before);
}

bool
csoak_obs_may_be_gone(const csoak_obs_t *obs)
{
	return atomic_load(&((csoak_obs_t *)obs)->self_removing) || target_removed(obs);
}

static ckvo_status_t
observe(csoak_obs_t *obs, ckvo_token_t *token)
{
	const csoak_obs_spec_t *spec = &obs->spec;
	ckvo_status_t status;

	registering = obs;
	status = ckvo_observe(spec->hub, spec->object, spec->key, spec->options, spec->owner,
	    obs_callback, obs, obs_release, token);
	registering = NULL;
	return status;
}

void
csoak_obs_register(csoak_obs_t *obs, csoak_registration_t *result)
{
	const csoak_obs_spec_t *spec = &obs->spec;
	uint64_t object_done = 0, object_marked = 0, owner_done = 0, owner_marked = 0;

	/* Done before marked: equal means no removal was in flight in between. */
	if (spec->object_index >= 0) {
		object_done = csoak_removals_done(CSOAK_TARGET_OBJECT, (unsigned)spec->object_index);
		object_marked = csoak_removals_marked(CSOAK_TARGET_OBJECT, (unsigned)spec->object_index);
	}
	if (spec->owner_index >= 0) {
		owner_done = csoak_removals_done(CSOAK_TARGET_OWNER, (unsigned)spec->owner_index);
		owner_marked = csoak_removals_marked(CSOAK_TARGET_OWNER, (unsigned)spec->owner_index);
	}
	atomic_store(&obs->object_removals_before, object_marked);
	atomic_store(&obs->owner_removals_before, owner_marked);
	atomic_store(&obs->clean, object_done == object_marked && owner_done == owner_marked);

	atomic_store(&obs->registration_start, csoak_clock_next());
	result->status = observe(obs, &obs->engine_token);
	result->registered = csoak_clock_next();

	/* A removal marked from now on starts after the registration returned:
	 * it removes the observation for certain. */
	if (spec->object_index >= 0)
		atomic_store(&obs->object_removals_after,
		    csoak_removals_marked(CSOAK_TARGET_OBJECT, (unsigned)spec->object_index));
	if (spec->owner_index >= 0)
		atomic_store(&obs->owner_removals_after,
		    csoak_removals_marked(CSOAK_TARGET_OWNER, (unsigned)spec->owner_index));
	atomic_store(&obs->registered, result->registered);
	result->token = result->status == CKVO_OK ? obs->engine_token :
	    (ckvo_token_t)CKVO_TOKEN_NONE_INITIALIZER;
	if (result->status == CKVO_OK)
		atomic_store(&obs->published, true);
	result->object_removals = object_marked;
	result->owner_removals = owner_marked;
	result->clean = atomic_load(&obs->clean);
}

ckvo_status_t
csoak_obs_register_again(csoak_obs_t *obs, ckvo_token_t *token)
{
	return observe(obs, token);
}

ckvo_status_t
csoak_obs_remove(csoak_obs_t *obs, ckvo_token_t token, csoak_removal_t how)
{
	ckvo_hub_t *hub = obs->spec.hub;
	ckvo_status_t status;

	atomic_store(&obs->removing, true);
	switch (how) {
	case CSOAK_REMOVE_SYNC:
		status = ckvo_unobserve_sync(hub, token);
		break;
	case CSOAK_REMOVE_DEFERRED:
		status = ckvo_unobserve_deferred(hub, token);
		break;
	case CSOAK_REMOVE_PLAIN:
	default:
		status = csoak_unobserve_timed(hub, token);
		break;
	}
	if (status == CKVO_OK) {
		atomic_store(&obs->removed_at, csoak_clock_next());
		if (how == CSOAK_REMOVE_SYNC) {
			atomic_store(&obs->strictly_removed, true);
			if (atomic_load(&obs->inside) != 0)
				note(obs, CSOAK_CALL_AFTER_STRICT_REMOVAL);
		}
	}
	return status;
}

uint64_t
csoak_obs_id(const csoak_obs_t *obs)
{
	return obs->spec.id;
}

uint64_t
csoak_obs_calls(const csoak_obs_t *obs)
{
	return atomic_load(&((csoak_obs_t *)obs)->calls);
}

uint64_t
csoak_obs_prior_calls(const csoak_obs_t *obs)
{
	return atomic_load(&((csoak_obs_t *)obs)->prior_calls);
}

uint64_t
csoak_obs_initial_calls(const csoak_obs_t *obs)
{
	return atomic_load(&((csoak_obs_t *)obs)->initial_calls);
}

uint64_t
csoak_obs_releases(const csoak_obs_t *obs)
{
	return atomic_load(&((csoak_obs_t *)obs)->releases);
}

const void *
csoak_initial_getter(const void *object, ckvo_key_t key)
{
	(void)object;
	(void)key;
	return &initial_marker;
}

/*
 * Removes `obs` from its own callback with `token`, once (the first caller
 * to claim `self_removing`); a "not found" is fine only when something else
 * may have removed it first.
 */
static void
remove_self(csoak_obs_t *obs, ckvo_token_t token, bool deferred)
{
	ckvo_status_t status;

	if (atomic_exchange(&obs->self_removing, true))
		return;
	status = deferred ? ckvo_unobserve_deferred(obs->spec.hub, token)
			  : ckvo_unobserve(obs->spec.hub, token);
	if (status == CKVO_OK)
		atomic_store(&obs->removed_at, csoak_clock_next());
	else if (status != CKVO_ENOENT || !(atomic_load(&obs->removing) || target_removed(obs)))
		note(obs, CSOAK_SELF_REMOVAL_FAILED);
}

static void
initial_call(csoak_obs_t *obs, const ckvo_change_t *change)
{
	ckvo_options_t options = obs->spec.options;
	const void *expected_new = (options & CKVO_OPTION_NEW) != 0 ? &initial_marker : NULL;

	if (atomic_fetch_add(&obs->initial_calls, 1) != 0 || registering != obs ||
	    (options & CKVO_OPTION_INITIAL) == 0 || change->kind != CKVO_KIND_SETTING ||
	    change->is_prior || change->old_value != NULL || change->new_value != expected_new ||
	    change->index_count != 0)
		note(obs, CSOAK_BAD_INITIAL);
	if (obs->spec.self_removal == CSOAK_SELF_IN_INITIAL)
		remove_self(obs, obs->engine_token, false);
}

/* What the announcer passed, filtered by the observation's options. */
static bool
values_match(const csoak_obs_t *obs, const ckvo_change_t *change, const struct csoak_trace *trace)
{
	const ckvo_change_t *announced = trace->change;
	ckvo_options_t options = obs->spec.options;
	bool wants_new = (options & CKVO_OPTION_NEW) != 0 && !trace->prior &&
	    announced->kind != CKVO_KIND_REMOVAL;
	bool wants_old = (options & CKVO_OPTION_OLD) != 0 && announced->kind != CKVO_KIND_INSERTION;

	if (change->is_prior != trace->prior || (trace->prior && (options & CKVO_OPTION_PRIOR) == 0))
		return false;
	if (change->kind != announced->kind || change->index_count != announced->index_count)
		return false;
	if (change->index_count != 0 &&
	    (change->indexes == NULL ||
		memcmp(change->indexes, announced->indexes, change->index_count * sizeof(size_t)) != 0))
		return false;
	return change->new_value == (wants_new ? announced->new_value : NULL) &&
	    change->old_value == (wants_old ? announced->old_value : NULL);
}

/* Whether a removal that certainly removed `obs` returned before `started`. */
static void
check_removed_before(const csoak_obs_t *obs, uint64_t started)
{
	csoak_obs_t *o = (csoak_obs_t *)obs;
	uint64_t removed_at = atomic_load(&o->removed_at);
	uint64_t after;

	if (removed_at != 0 && removed_at < started)
		note(obs, CSOAK_CALL_AFTER_REMOVAL);
	after = atomic_load(&o->object_removals_after);
	if (obs->spec.object_index >= 0 && after != UNKNOWN &&
	    csoak_removal_returned_before(CSOAK_TARGET_OBJECT, (unsigned)obs->spec.object_index,
		after + 1, started))
		note(obs, CSOAK_CALL_AFTER_OBJECT_REMOVAL);
	after = atomic_load(&o->owner_removals_after);
	if (obs->spec.owner_index >= 0 && after != UNKNOWN &&
	    csoak_removal_returned_before(CSOAK_TARGET_OWNER, (unsigned)obs->spec.owner_index,
		after + 1, started))
		note(obs, CSOAK_CALL_AFTER_OWNER_REMOVAL);
}

/* Everything a traced (non-initial) call checks and notes. */
static void
traced_call(csoak_obs_t *obs, const ckvo_change_t *change, const struct csoak_trace *trace)
{
	if (change->object != trace->change->object || change->key != trace->change->key)
		note(obs, CSOAK_WRONG_TARGET);
	if (!values_match(obs, change, trace))
		note(obs, CSOAK_WRONG_VALUES);
	check_removed_before(obs, trace->started);
	csoak__trace_call(&(csoak_call_t){
	    .id = obs->spec.id,
	    .registration_start = atomic_load(&obs->registration_start),
	    .registered = atomic_load(&obs->registered),
	});
	atomic_fetch_add(trace->prior ? &obs->prior_calls : &obs->calls, 1);

	if (obs->spec.self_removal != CSOAK_SELF_UNOBSERVE &&
	    obs->spec.self_removal != CSOAK_SELF_DEFERRED)
		return;
	if (atomic_load(&obs->published))
		remove_self(obs, obs->engine_token, obs->spec.self_removal == CSOAK_SELF_DEFERRED);
}

static void
obs_callback(const ckvo_change_t *change, void *context)
{
	csoak_obs_t *obs = context;
	const struct csoak_trace *trace = &csoak__trace;

	atomic_fetch_add(&obs->inside, 1);
	if (atomic_load(&obs->releases) != 0)
		note(obs, CSOAK_CALL_AFTER_RELEASE);
	if (atomic_load(&obs->strictly_removed))
		note(obs, CSOAK_CALL_AFTER_STRICT_REMOVAL);
	if (change->key != obs->spec.key ||
	    (obs->spec.object != NULL && change->object != obs->spec.object))
		note(obs, CSOAK_WRONG_TARGET);
	if (change->is_initial)
		initial_call(obs, change);
	else if (!trace->active || trace->change == NULL)
		note(obs, CSOAK_CALL_OUTSIDE_DISPATCH);
	else
		traced_call(obs, change, trace);
	if (obs->spec.id % LINGER_EVERY == 0) {
		for (unsigned i = 0; i < LINGER_SPINS; i++)
			(void)atomic_load_explicit(&obs->releases, memory_order_relaxed);
	}
	atomic_fetch_sub(&obs->inside, 1);
}

static void
obs_release(void *context)
{
	csoak_obs_t *obs = context;

	if (atomic_fetch_add(&obs->releases, 1) != 0)
		note(obs, CSOAK_RELEASED_TWICE);
	if (!atomic_load(&obs->removing) && !csoak_obs_may_be_gone(obs))
		note(obs, CSOAK_RELEASED_WHILE_REGISTERED);
}
