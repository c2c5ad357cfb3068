/*
 * probe_contention.c — a key's probe (ckvo_key_probe) under concurrent
 * registration and removal of the same key.
 *
 * One observation of (object, key) stays registered throughout. Churning
 * threads register and remove other observations of the same key in every
 * way the API offers (plain, with an owner, with a prior option, duplicates
 * refused with CKVO_EEXIST, on other objects and on every object, removed by
 * token, by owner, by object, and by themselves from their callback with
 * ckvo_unobserve_deferred, also before their registration has returned),
 * while a checker thread reads the probe and announces changes of the
 * object without pause. The probe must never read zero, and the persistent
 * observer must receive every one of the checker's announcements.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct contention;

/* One churning thread's observation that removes itself from its first callback. */
struct shot {
	struct contention *race;
	ckvo_token_t token;
	atomic_int called;
};

struct contention {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	const ckvo_probe_t *probe;
	ckvots_barrier_t *start;
	size_t iterations;
	atomic_int churners_left;
	atomic_size_t delivered;   /* calls of the persistent observer */
	atomic_size_t failures;    /* unexpected statuses in the churners */
	int object;                /* the persistent observer's object */
	int others[8];             /* objects only churners observe */
};

static void
persistent_callback(const ckvo_change_t *change, void *context)
{
	struct contention *race = context;

	(void)change;
	atomic_fetch_add_explicit(&race->delivered, 1, memory_order_relaxed);
}

static void
quiet_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static void
one_shot_callback(const ckvo_change_t *change, void *context)
{
	struct shot *shot = context;

	(void)change;
	if (atomic_fetch_add(&shot->called, 1) != 0)
		return;
	/* Written by ckvo_observe before the observation was published to this dispatch. */
	(void)ckvo_unobserve_deferred(shot->race->hub, shot->token);
}

static void
expect(struct contention *race, bool ok)
{
	if (!ok)
		atomic_fetch_add(&race->failures, 1);
}

struct churner {
	struct contention *race;
	int owner; /* this thread's owner identity */
	struct shot *shots; /* one per self-removing registration, freed after the flush */
};

static void *
churn_main(void *argument)
{
	struct churner *self = argument;
	struct contention *race = self->race;
	ckvo_hub_t *hub = race->hub;
	ckvo_key_t key = race->key;

	ckvots_barrier_wait(race->start);
	for (size_t i = 0; i < race->iterations; i++) {
		ckvo_token_t a = CKVO_TOKEN_NONE_INITIALIZER, b = CKVO_TOKEN_NONE_INITIALIZER;
		ckvo_status_t status;
		int *other = &race->others[i % 8];

		switch (i % 7) {
		case 0: /* plain, removed by token */
			expect(race, ckvo_observe(hub, &race->object, key, 0, NULL, quiet_callback,
			    self, NULL, &a) == CKVO_OK);
			expect(race, ckvo_unobserve(hub, a) == CKVO_OK);
			break;
		case 1: /* prior, with an owner, removed by owner */
			expect(race, ckvo_observe(hub, &race->object, key, CKVO_OPTION_PRIOR,
			    &self->owner, quiet_callback, self, NULL, &a) == CKVO_OK);
			expect(race, ckvo_unobserve_owner(hub, &self->owner) == CKVO_OK);
			break;
		case 2: /* a duplicate refused, then the original removed */
			expect(race, ckvo_observe(hub, &race->object, key, 0, &self->owner,
			    quiet_callback, &self->owner, NULL, &a) == CKVO_OK);
			status = ckvo_observe(hub, &race->object, key, 0, &self->owner,
			    quiet_callback, &self->owner, NULL, &b);
			expect(race, status == CKVO_EEXIST && ckvo_token_equal(b, a));
			expect(race, ckvo_unobserve(hub, a) == CKVO_OK);
			break;
		case 3: /* another object, removed with the object */
			expect(race, ckvo_observe(hub, other, key, CKVO_OPTION_UNIQUE_CONTEXT, NULL,
			    quiet_callback, self, NULL, &a) == CKVO_OK);
			expect(race, ckvo_unobserve_object(hub, other) != CKVO_EINVAL);
			break;
		case 4: /* every object, removed by token */
			expect(race, ckvo_observe(hub, NULL, key, 0, NULL, quiet_callback, self, NULL,
			    &a) == CKVO_OK);
			expect(race, ckvo_unobserve(hub, a) == CKVO_OK);
			break;
		case 5: { /* removes itself from its first callback (the checker announces) */
			struct shot *shot = &self->shots[i / 7];

			shot->race = race;
			expect(race, ckvo_observe(hub, &race->object, key, 0, NULL, one_shot_callback,
			    shot, NULL, &shot->token) == CKVO_OK);
			break;
		}
		default: /* plain, removed by token with a wait for the grace period */
			expect(race, ckvo_observe(hub, &race->object, key, CKVO_OPTION_NEW, NULL,
			    quiet_callback, self, NULL, &a) == CKVO_OK);
			if ((i / 7) % 16 == 0)
				expect(race, ckvo_unobserve_sync(hub, a) == CKVO_OK);
			else
				expect(race, ckvo_unobserve(hub, a) == CKVO_OK);
			break;
		}
	}
	/* Those no announcement reached yet (most removed themselves: CKVO_ENOENT). */
	for (size_t s = 0; s <= race->iterations / 7; s++)
		(void)ckvo_unobserve(hub, self->shots[s].token);
	atomic_fetch_sub(&race->churners_left, 1);
	return NULL;
}

int
ckvots_probe_contention(ckvo_hub_t *hub, ckvo_key_t key, unsigned churners, size_t iterations,
    struct ckvots_probe_contention_result *result)
{
	struct contention race = { .hub = hub, .key = key, .iterations = iterations };
	ckvo_change_t change = { .object = &race.object, .key = key, .kind = CKVO_KIND_SETTING };
	struct churner *threads = calloc(churners, sizeof(*threads));
	pthread_t *ids = calloc(churners, sizeof(*ids));
	ckvo_token_t persistent = CKVO_TOKEN_NONE_INITIALIZER;
	size_t announced = 0, zero = 0;
	unsigned started = 0;
	int error = 0;

	if (threads == NULL || ids == NULL || churners == 0) {
		free(threads);
		free(ids);
		return -1;
	}
	race.probe = ckvo_key_probe(hub, key);
	race.start = ckvots_barrier_create(churners + 1);
	if (race.probe == NULL || race.start == NULL ||
	    ckvo_observe(hub, &race.object, key, 0, NULL, persistent_callback, &race, NULL,
	    &persistent) != CKVO_OK) {
		ckvots_barrier_destroy(race.start);
		free(threads);
		free(ids);
		return -1;
	}
	atomic_store(&race.churners_left, (int)churners);
	for (; started < churners; started++) {
		threads[started].race = &race;
		threads[started].shots = calloc(iterations / 7 + 1, sizeof(struct shot));
		if (threads[started].shots == NULL)
			abort();
		if (pthread_create(&ids[started], NULL, churn_main, &threads[started]) != 0)
			break;
	}
	if (started != churners) {
		/* Cannot release the barrier for the others: give up the whole run. */
		abort();
	}

	ckvots_barrier_wait(race.start);
	while (atomic_load(&race.churners_left) > 0) {
		if (!ckvo_probe_has_observers(race.probe))
			zero++;
		if (ckvo_did_change(hub, &change) == CKVO_OK)
			announced++;
		else
			error = 1;
	}
	for (unsigned t = 0; t < churners; t++)
		pthread_join(ids[t], NULL);

	/* Self-removals queued by the last announcements are carried out by the flush. */
	(void)ckvo_hub_flush(hub);
	result->announced = announced;
	result->delivered = atomic_load(&race.delivered);
	result->zero_reads = zero;
	result->failures = atomic_load(&race.failures) + (size_t)error;
	result->observations_after = __atomic_load_n(&race.probe->observations, __ATOMIC_RELAXED);
	result->prior_observations_after =
	    __atomic_load_n(&race.probe->prior_observations, __ATOMIC_RELAXED);
	if (ckvo_unobserve(hub, persistent) != CKVO_OK)
		result->failures++;
	(void)ckvo_hub_flush(hub);
	ckvots_barrier_destroy(race.start);
	for (unsigned t = 0; t < churners; t++)
		free(threads[t].shots);
	free(threads);
	free(ids);
	return 0;
}
