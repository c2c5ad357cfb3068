/*
 * hub.c — hub lifecycle: create, destroy, the default hub, flush, stats,
 * and fork safety. A hub is its registry and the parts that keep it
 * (hub.h); this file puts them together and takes them apart.
 *
 * Invariants it alone keeps
 * -------------------------
 * - Every live hub is on one list (hubs_head). Around fork() the prepare
 *   handler takes the lock of that list and then every hub's writer lock, so the
 *   child never inherits a lock held by a thread that no longer exists, nor
 *   a table in the middle of a change. Writers never call out under their
 *   lock, so prepare cannot wait for a callback.
 * - In the child, the other threads' epoch records are freed
 *   (ckvo__threads_after_fork_child): a dispatch that was running in another
 *   thread at fork time must not block grace periods forever.
 * - The child also recounts each hub's pending releases (releases other
 *   threads were about to run are lost with them, session.c) and starts a
 *   background reclaimer where entries are pending (reclaimer.c). The
 *   forking thread may be inside a release, as a runner: its own waiter
 *   records and chunk stay valid in the child (release.c).
 * - Flush and destroy wait with cancellation disabled: a cancelled caller
 *   finishes them and never leaves the hub locked or its records linked.
 * - Destroying a hub first stops its background reclaimer (joining it, so
 *   releases it was running have returned), then removes every
 *   observation, waits for a grace period (no other thread may be using the
 *   hub, but a dispatch of another hub sharing the epoch may be running),
 *   then runs every pending release. Releases may call back into the API,
 *   even on this hub, so this repeats until the hub is empty.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static pthread_mutex_t hubs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ckvo_hub *hubs_head;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void
fork_prepare(void)
{
	ckvo__threads_before_fork();
	(void)pthread_mutex_lock(&hubs_lock);
	for (struct ckvo_hub *hub = hubs_head; hub != NULL; hub = hub->hubs_next)
		(void)pthread_mutex_lock(&hub->lock);
}

static void
fork_parent(void)
{
	for (struct ckvo_hub *hub = hubs_head; hub != NULL; hub = hub->hubs_next)
		(void)pthread_mutex_unlock(&hub->lock);
	(void)pthread_mutex_unlock(&hubs_lock);
}

static void
fork_child(void)
{
	/* Entries other threads were running are gone with them: never wait for them. */
	for (struct ckvo_hub *hub = hubs_head; hub != NULL; hub = hub->hubs_next)
		ckvo__session_after_fork_child(hub);
	/* This thread took every lock in fork_prepare, so it may release them. */
	fork_parent();
	ckvo__threads_after_fork_child();

	/* Reclaimer threads did not survive: start new ones where releases are pending. */
	(void)pthread_mutex_lock(&hubs_lock);
	for (struct ckvo_hub *hub = hubs_head; hub != NULL; hub = hub->hubs_next) {
		(void)pthread_mutex_lock(&hub->lock);
		ckvo__reclaimer_after_fork_child(hub);
		(void)pthread_mutex_unlock(&hub->lock);
	}
	(void)pthread_mutex_unlock(&hubs_lock);
}

static void
fork_handlers_install(void)
{
	(void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void
hubs_add(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&hubs_lock);
	hub->hubs_next = hubs_head;
	if (hubs_head != NULL)
		hubs_head->hubs_prev = hub;
	hubs_head = hub;
	(void)pthread_mutex_unlock(&hubs_lock);
}

static void
hubs_remove(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&hubs_lock);
	if (hub->hubs_prev != NULL)
		hub->hubs_prev->hubs_next = hub->hubs_next;
	else
		hubs_head = hub->hubs_next;
	if (hub->hubs_next != NULL)
		hub->hubs_next->hubs_prev = hub->hubs_prev;
	(void)pthread_mutex_unlock(&hubs_lock);
}

ckvo_hub_t *
ckvo_hub_create(void)
{
	struct ckvo_hub *hub = calloc(1, sizeof(*hub));

	if (hub == NULL)
		return NULL;
	(void)pthread_once(&fork_once, fork_handlers_install);
	if (pthread_mutex_init(&hub->lock, NULL) != 0) {
		free(hub);
		return NULL;
	}
	if (!ckvo__reclaimer_init(hub)) {
		(void)pthread_mutex_destroy(&hub->lock);
		free(hub);
		return NULL;
	}
	if (!ckvo__release_init(hub)) {
		(void)pthread_cond_destroy(&hub->wake);
		(void)pthread_mutex_destroy(&hub->lock);
		free(hub);
		return NULL;
	}
	ckvo__session_init(hub);
	if (!ckvo__registry_init(&hub->registry, &hub->limbo)) {
		(void)pthread_cond_destroy(&hub->ran);
		(void)pthread_cond_destroy(&hub->wake);
		(void)pthread_mutex_destroy(&hub->lock);
		free(hub);
		return NULL;
	}
	/* The registry counted its own tables; the hub is the rest. */
	hub->registry.ledger.bytes += sizeof(*hub);

	hubs_add(hub);
	return hub;
}

ckvo_status_t
ckvo_hub_flush(ckvo_hub_t *hub)
{
	if (hub == NULL)
		return CKVO_EINVAL;
	/* Inside a release: the running one was removed before the call and cannot be waited for. */
	if (ckvo__in_read_section() || ckvo__releasing())
		return CKVO_EDEADLK;
	ckvo__session_flush(hub, true);
	return CKVO_OK;
}

ckvo_status_t
ckvo_hub_stats(ckvo_hub_t *hub, ckvo_hub_stats_t *stats)
{
	if (hub == NULL || stats == NULL)
		return CKVO_EINVAL;
	(void)pthread_mutex_lock(&hub->lock);
	stats->observations = hub->registry.observations;
	stats->keys = hub->registry.key_count;
	stats->pending_releases = hub->retired - hub->done;
	stats->bytes = hub->registry.ledger.bytes;
	(void)pthread_mutex_unlock(&hub->lock);
	return CKVO_OK;
}

ckvo_status_t
ckvo_hub_destroy(ckvo_hub_t *hub)
{
	bool busy;
	int state;

	if (hub == NULL)
		return CKVO_OK;
	if (hub->is_default)
		return CKVO_EINVAL;
	if (ckvo__in_read_section() || ckvo__reclaimer_is_current(hub))
		return CKVO_EDEADLK;
	/* From one of its own releases, whichever thread runs it: the same refusal. */
	(void)pthread_mutex_lock(&hub->lock);
	busy = ckvo__release_is_runner(hub);
	(void)pthread_mutex_unlock(&hub->lock);
	if (busy)
		return CKVO_EDEADLK;

	/* Its waits (the join, the flushes) are not cancellation points. */
	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	hubs_remove(hub);
	ckvo__reclaimer_stop(hub);
	do {
		struct ckvo_unlinked removed = CKVO_UNLINKED_INITIALIZER;

		ckvo__session_begin(hub);
		busy = ckvo__registry_remove_all(&hub->registry, &removed);
		ckvo__session_commit(hub, &removed);
		ckvo__session_flush(hub, true);
		/* A release may have registered or removed again. */
		(void)pthread_mutex_lock(&hub->lock);
		busy = busy || !ckvo__session_idle(hub);
		(void)pthread_mutex_unlock(&hub->lock);
	} while (busy);

	ckvo__registry_destroy(&hub->registry);
	ckvo__keys_destroy(&hub->registry);
	(void)pthread_cond_destroy(&hub->ran);
	(void)pthread_cond_destroy(&hub->wake);
	(void)pthread_mutex_destroy(&hub->lock);
	free(hub);
	(void)pthread_setcancelstate(state, NULL);
	return CKVO_OK;
}

static ckvo_hub_t *default_hub;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void
default_hub_create(void)
{
	ckvo_hub_t *hub = ckvo_hub_create();

	if (hub != NULL)
		hub->is_default = true;
	ck_pr_store_ptr(&default_hub, hub);
}

ckvo_hub_t *
ckvo_hub_default(void)
{
	ckvo_hub_t *hub = ck_pr_load_ptr(&default_hub);

	if (CKVO_LIKELY(hub != NULL))
		return hub;
	(void)pthread_once(&default_once, default_hub_create);
	return ck_pr_load_ptr(&default_hub);
}
