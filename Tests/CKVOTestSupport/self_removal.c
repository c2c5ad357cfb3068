/*
 * self_removal.c — one-shot observers: each removes itself with
 * ckvo_unobserve_deferred from its first callback, while another thread
 * announces without pause, so many first callbacks run while their
 * registration is still finishing on the registering thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct shot {
	ckvo_token_t token; /* written by ckvo_observe before any callback can run */
	atomic_int calls;
};

struct race {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	atomic_int stop;
	atomic_size_t refused;
	int object;
};

static struct race *current_race;

static void
one_shot(const ckvo_change_t *change, void *context)
{
	struct shot *shot = context;
	struct race *race = current_race;

	(void)change;
	if (atomic_fetch_add(&shot->calls, 1) != 0)
		return;
	/* Written by ckvo_observe before the observation was published to this dispatch. */
	if (ckvo_unobserve_deferred(race->hub, shot->token) != CKVO_OK)
		atomic_fetch_add(&race->refused, 1);
}

static void *
announcer(void *argument)
{
	struct race *race = argument;
	ckvo_change_t change = { .object = &race->object, .key = race->key, .kind = CKVO_KIND_SETTING };

	while (!atomic_load(&race->stop))
		(void)ckvo_did_change(race->hub, &change);
	return NULL;
}

int
ckvots_self_removal_race(ckvo_hub_t *hub, ckvo_key_t key, size_t count, size_t *refused,
    size_t *called)
{
	struct race race = { .hub = hub, .key = key };
	struct shot *shots = calloc(count, sizeof(*shots));
	ckvo_change_t change = { .object = &race.object, .key = key, .kind = CKVO_KIND_SETTING };
	pthread_t thread;
	size_t calls = 0;

	if (shots == NULL)
		return -1;
	current_race = &race;
	if (pthread_create(&thread, NULL, announcer, &race) != 0)
		return -1;
	for (size_t i = 0; i < count; i++) {
		/* Owners make registration longer after publication (the owner group): a wider window. */
		if (ckvo_observe(hub, &race.object, key, 0, &shots[i & 1023], one_shot, &shots[i], NULL,
		    &shots[i].token) != CKVO_OK)
			break;
	}
	atomic_store(&race.stop, 1);
	pthread_join(thread, NULL);
	/* Every one-shot observer not yet called is called now, and removes itself. */
	(void)ckvo_did_change(hub, &change);
	(void)ckvo_hub_flush(hub);
	for (size_t i = 0; i < count; i++)
		calls += atomic_load(&shots[i].calls) != 0;
	*refused = atomic_load(&race.refused);
	*called = calls;
	current_race = NULL;
	free(shots);
	return 0;
}
