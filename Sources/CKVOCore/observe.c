/*
 * observe.c — registering and removing observations: the C API's entry
 * points, and the first stop of an observation's life. Each call is one
 * writer session (session.c): begin, an edit of the registry (registration.c),
 * commit. What follows in the life of an observation: dispatch.c calls it;
 * a removal here unlinks it (registration.c) and hands it to the session, which
 * retires it through a grace period (epoch.c) to the release queue
 * (release.c), after which its record is reused (token.c).
 *
 * Invariants it alone keeps
 * -------------------------
 * - No user code runs inside a session: the initial notification runs
 *   after the commit, inside a read section entered before it, so the
 *   observation cannot be released under the callback; releases run only
 *   from the commit's runner, outside every read section (release.c).
 * - A hub has its background reclaimer from its first registration on
 *   (ckvo_observe refuses with CKVO_ENOMEM if it cannot be started), so a
 *   removal queued by a reader, which can neither take the lock nor start a
 *   thread, always has a thread to carry it out.
 * - Everything the registry unlinks in a call is given to that call's
 *   commit, which retires it: an unlinked observation is never dropped.
 * - ckvo_unobserve_deferred takes no lock: the registry marks the
 *   observation on the read side, and the push that makes the hub's queue
 *   of deferred removals non-empty wakes the reclaimer (ckvo__reclaimer_wake).
 */
#include "engine.h"

ckvo_status_t
ckvo_observe(ckvo_hub_t *hub, const void *object, ckvo_key_t key, ckvo_options_t options,
    const void *owner, ckvo_callback_t callback, void *context, ckvo_release_t release,
    ckvo_token_t *token)
{
	struct ckvo_observation *obs;
	struct ckvo_identity identity = {
		.owner = owner,
		.object = object,
		.key = key,
		.callback = callback,
		.context = context,
	};
	struct ckvo_keyinfo *info;
	ck_epoch_record_t *record = NULL;
	ckvo_getter_t getter;
	ckvo_status_t status;
	bool initial = (options & CKVO_OPTION_INITIAL) != 0;

	if (hub == NULL || callback == NULL || (options & ~CKVO_OPTIONS_ALL) != 0)
		return CKVO_EINVAL;
	info = ckvo__key_lookup(&hub->registry, key);
	if (info == NULL)
		return CKVO_EINVAL;
	if (initial) {
		if (ckvo__thread.depth >= CKVO_NESTING_LIMIT)
			return CKVO_ELOOP;
		record = ckvo__thread_record();
		if (record == NULL)
			return CKVO_ENOMEM;
	}

	if (ckvo__observation_indexed(options))
		identity.hash = ckvo__identity_hash(&identity);
	ckvo__session_begin(hub);
	/* A removal a reader queues later relies on it (reclaimer.c). */
	if (CKVO_UNLIKELY(!hub->reclaimer_running) && !ckvo__reclaimer_start(hub))
		status = CKVO_ENOMEM;
	else
		status = ckvo__registry_add(&hub->registry, info, &identity, options, release, &obs,
		    token);
	if (status == CKVO_EEXIST) {
		if (token != NULL)
			*token = ckvo__token_of(obs);
		ckvo__session_commit(hub, NULL);
		return status;
	}
	if (status != CKVO_OK || !initial) {
		ckvo__session_commit(hub, NULL);
		return status;
	}

	/*
	 * Enter a read section before the commit: from then on another thread
	 * may remove and retire `obs`, and the section keeps it alive for us.
	 */
	getter = info->getter;
	ckvo__read_begin(record);
	/* Inside the section: this commit queues releases but runs none (release.c). */
	ckvo__session_commit(hub, NULL);
	if (ckvo__tag_state(ck_pr_load_64(&obs->tag)) == CKVO_STATE_LIVE) {
		ckvo_change_t change = {
			.object = object,
			.key = key,
			.kind = CKVO_KIND_SETTING,
			.is_initial = true,
		};

		/* Read after installation: no change made since can be missed. */
		if ((options & CKVO_OPTION_NEW) != 0 && getter != NULL)
			change.new_value = getter(object, key);
		ckvo__thread.depth++;
		callback(&change, context);
		ckvo__thread.depth--;
	}
	ckvo__read_end(record);
	/* What the commit queued runs now, outside the section (or on the background thread). */
	if (ck_pr_load_ptr(&hub->queue_head) != NULL && !ckvo__in_read_section()) {
		ckvo__session_begin(hub);
		ckvo__session_commit(hub, NULL);
	}
	return CKVO_OK;
}

ckvo_status_t
ckvo_unobserve(ckvo_hub_t *hub, ckvo_token_t token)
{
	struct ckvo_unlinked removed = CKVO_UNLINKED_INITIALIZER;
	ckvo_status_t status;

	if (hub == NULL)
		return CKVO_EINVAL;
	ckvo__session_begin(hub);
	status = ckvo__registry_remove(&hub->registry, token, &removed);
	ckvo__session_commit(hub, &removed);
	return status;
}

ckvo_status_t
ckvo_unobserve_sync(ckvo_hub_t *hub, ckvo_token_t token)
{
	ckvo_status_t status;

	if (hub == NULL)
		return CKVO_EINVAL;
	if (ckvo__in_read_section())
		return CKVO_EDEADLK;
	status = ckvo_unobserve(hub, token);
	if (status != CKVO_OK && status != CKVO_ENOENT)
		return status;

	/*
	 * Wait for a grace period: every dispatch that could have loaded the
	 * observation has then ended. Its release runs here too, unless this
	 * is itself a release: then it is queued behind the running one, which
	 * this thread's runner reaches next (release.c), so a chain of such
	 * releases runs in a loop, not a recursion. Also after CKVO_ENOENT: a
	 * deferred removal may have won the race for this token (and the drain
	 * of our session unlinked it), while the callback that deferred it is
	 * still running.
	 */
	ckvo__session_flush(hub, !ckvo__releasing());
	return status;
}

ckvo_status_t
ckvo_unobserve_deferred(ckvo_hub_t *hub, ckvo_token_t token)
{
	ckvo_status_t status;
	bool first;

	if (hub == NULL)
		return CKVO_EINVAL;
	status = ckvo__registry_defer(&hub->registry, token, &first);
	/* The reclaimer carries the removal out if no writer does first (reclaimer.c). */
	if (first)
		ckvo__reclaimer_wake(hub);
	return status;
}

ckvo_status_t
ckvo_unobserve_object(ckvo_hub_t *hub, const void *object)
{
	struct ckvo_unlinked removed = CKVO_UNLINKED_INITIALIZER;
	ckvo_status_t status;

	if (hub == NULL || object == NULL)
		return CKVO_EINVAL;
	ckvo__session_begin(hub);
	status = ckvo__registry_remove_object(&hub->registry, object, &removed);
	ckvo__session_commit(hub, &removed);
	return status;
}

ckvo_status_t
ckvo_unobserve_owner(ckvo_hub_t *hub, const void *owner)
{
	struct ckvo_unlinked removed = CKVO_UNLINKED_INITIALIZER;
	ckvo_status_t status;

	if (hub == NULL || owner == NULL)
		return CKVO_EINVAL;
	ckvo__session_begin(hub);
	status = ckvo__registry_remove_owner(&hub->registry, owner, &removed);
	ckvo__session_commit(hub, &removed);
	return status;
}
