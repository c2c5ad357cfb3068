/*
 * hub.c — hub lifecycle: create, destroy, the default hub, flush, stats,
 * and fork safety.
 *
 * Invariants
 * ----------
 * - Every live hub is on one registry list. Around fork() the prepare
 *   handler takes the registry lock and then every hub's writer lock, so the
 *   child never inherits a lock held by a thread that no longer exists, nor
 *   a table in the middle of a change. Writers never call out under their
 *   lock, so prepare cannot wait for a callback.
 * - In the child, the other threads' epoch records are freed
 *   (ckvo__threads_after_fork_child): a dispatch that was running in another
 *   thread at fork time must not block grace periods forever.
 * - The child also recounts each hub's pending releases (releases other
 *   threads were about to run are lost with them) and starts a background
 *   reclaimer where entries are pending (reclaimer.c).
 * - Destroying a hub first stops its background reclaimer (joining it, so
 *   releases it was running have returned), then removes every
 *   observation, waits for a grace period (no other thread may be using the
 *   hub, but a dispatch of another hub sharing the epoch may be running),
 *   then runs every pending release. Releases may call back into the API,
 *   even on this hub, so this repeats until the hub is empty.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ckvo_hub *registry_head;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void
fork_prepare(void)
{
	ckvo__threads_before_fork();
	(void)pthread_mutex_lock(&registry_lock);
	for (struct ckvo_hub *hub = registry_head; hub != NULL; hub = hub->registry_next)
		(void)pthread_mutex_lock(&hub->lock);
}

static void
fork_parent(void)
{
	for (struct ckvo_hub *hub = registry_head; hub != NULL; hub = hub->registry_next)
		(void)pthread_mutex_unlock(&hub->lock);
	(void)pthread_mutex_unlock(&registry_lock);
}

static void
fork_child(void)
{
	/* Entries other threads were running are gone with them: never wait for them. */
	for (struct ckvo_hub *hub = registry_head; hub != NULL; hub = hub->registry_next)
		ckvo__reclaim_after_fork_child(hub);
	/* This thread took every lock in fork_prepare, so it may release them. */
	fork_parent();
	ckvo__threads_after_fork_child();

	/* Reclaimer threads did not survive: start new ones where releases are pending. */
	(void)pthread_mutex_lock(&registry_lock);
	for (struct ckvo_hub *hub = registry_head; hub != NULL; hub = hub->registry_next) {
		(void)pthread_mutex_lock(&hub->lock);
		ckvo__reclaimer_after_fork_child(hub);
		(void)pthread_mutex_unlock(&hub->lock);
	}
	(void)pthread_mutex_unlock(&registry_lock);
}

static void
fork_handlers_install(void)
{
	(void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void
registry_add(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&registry_lock);
	hub->registry_next = registry_head;
	if (registry_head != NULL)
		registry_head->registry_prev = hub;
	registry_head = hub;
	(void)pthread_mutex_unlock(&registry_lock);
}

static void
registry_remove(struct ckvo_hub *hub)
{
	(void)pthread_mutex_lock(&registry_lock);
	if (hub->registry_prev != NULL)
		hub->registry_prev->registry_next = hub->registry_next;
	else
		registry_head = hub->registry_next;
	if (hub->registry_next != NULL)
		hub->registry_next->registry_prev = hub->registry_prev;
	(void)pthread_mutex_unlock(&registry_lock);
}

/* Frees the tables of a hub whose initialization got this far. */
static void
tables_destroy(struct ckvo_hub *hub, int initialized)
{
	ck_hs_t *tables[] = { &hub->names, &hub->owners, &hub->objects };

	if (initialized > 0)
		ckvo__slotmap_destroy(&hub->slots);
	for (int i = 1; i < initialized; i++)
		ck_hs_destroy(tables[i - 1]);
}

ckvo_hub_t *
ckvo_hub_create(void)
{
	struct ckvo_hub *hub = calloc(1, sizeof(*hub));
	int initialized = 0;

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
	ck_stack_init(&hub->deferred);
	hub->poll_at = CKVO_RECLAIM_BATCH;
	/* Plus what the tables grow by (their initial sizes are a constant a few KB). */
	hub->bytes = sizeof(*hub);

	if (ckvo__slotmap_init(&hub->slots))
		initialized++;
	if (initialized == 1 && ckvo__names_init(&hub->names))
		initialized++;
	if (initialized == 2 && ckvo__groups_init(&hub->owners))
		initialized++;
	if (initialized == 3 && ckvo__groups_init(&hub->objects))
		initialized++;
	if (initialized != 4) {
		tables_destroy(hub, initialized);
		(void)pthread_cond_destroy(&hub->ran);
		(void)pthread_cond_destroy(&hub->wake);
		(void)pthread_mutex_destroy(&hub->lock);
		free(hub);
		return NULL;
	}

	registry_add(hub);
	return hub;
}

ckvo_status_t
ckvo_hub_flush(ckvo_hub_t *hub)
{
	if (hub == NULL)
		return CKVO_EINVAL;
	/* Inside a release: the running one was removed before the call and cannot be waited for. */
	if (ckvo__in_read_section() || ckvo__thread.releasing != 0)
		return CKVO_EDEADLK;
	ckvo__reclaim_flush(hub, true);
	return CKVO_OK;
}

ckvo_status_t
ckvo_hub_stats(ckvo_hub_t *hub, ckvo_hub_stats_t *stats)
{
	if (hub == NULL || stats == NULL)
		return CKVO_EINVAL;
	(void)pthread_mutex_lock(&hub->lock);
	stats->observations = hub->observations;
	stats->keys = hub->key_count;
	stats->pending_releases = hub->retired - hub->done;
	stats->bytes = hub->bytes;
	(void)pthread_mutex_unlock(&hub->lock);
	return CKVO_OK;
}

ckvo_status_t
ckvo_hub_destroy(ckvo_hub_t *hub)
{
	bool busy;

	if (hub == NULL)
		return CKVO_OK;
	if (hub->is_default)
		return CKVO_EINVAL;
	if (ckvo__in_read_section() || ckvo__thread.reclaiming == hub)
		return CKVO_EDEADLK;
	/* From one of its own releases, whichever thread runs it: the same refusal. */
	(void)pthread_mutex_lock(&hub->lock);
	busy = ckvo__release_is_runner(hub);
	(void)pthread_mutex_unlock(&hub->lock);
	if (busy)
		return CKVO_EDEADLK;

	registry_remove(hub);
	ckvo__reclaimer_stop(hub);
	do {
		ckvo__hub_lock(hub);
		busy = ckvo__remove_all(hub);
		ckvo__hub_unlock(hub);
		ckvo__reclaim_flush(hub, true);
		/* A release may have registered or removed again. */
		ckvo__hub_lock(hub);
		busy = busy || hub->observations != 0 ||
		    ckvo__reclaim_pending(hub) != 0 || ckvo__release_queued(hub) ||
		    hub->running || CK_STACK_FIRST(&hub->deferred) != NULL;
		ckvo__thread.writing = NULL;
		(void)pthread_mutex_unlock(&hub->lock);
	} while (busy);

	tables_destroy(hub, 4);
	ckvo__identities_destroy(hub);
	ckvo__keys_destroy(hub);
	ckvo__tokens_destroy(hub);
	(void)pthread_cond_destroy(&hub->ran);
	(void)pthread_cond_destroy(&hub->wake);
	(void)pthread_mutex_destroy(&hub->lock);
	free(hub);
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
