/*
 * held_memory.c — what a hub holds, by the allocator's own count: the byte
 * ledger of SwiftKVOTestSupport's malloc shim records every block malloc &
 * co. hand out, on any thread, until it is freed. Each function creates its
 * hub after arming the ledger, so every byte the hub takes is recorded, and
 * compares only after flushes (memory retired for a grace period is not in
 * ckvo_hub_stats' bytes). Run alone in a process: the ledger counts every
 * thread's blocks.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "SwiftKVOTestSupport.h"
#include "ckvo_test_support.h"

static void
ignore(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static size_t
stats_bytes(ckvo_hub_t *hub)
{
	ckvo_hub_stats_t stats;

	return ckvo_hub_stats(hub, &stats) == CKVO_OK ? stats.bytes : 0;
}

/*
 * Flushes `hub` twice (records the first one releases give their pages back
 * to the second), then reads the ledger and the stats; accepted once two
 * more flushes change neither: the background thread may retire spare
 * pages at any moment (out of the stats at once, out of the ledger after a
 * grace period), and such a page is freed by the next flushes. At most 8
 * tries.
 */
static void
settle(ckvo_hub_t *hub, long *ledger, size_t *stats)
{
	(void)ckvo_hub_flush(hub);
	(void)ckvo_hub_flush(hub);
	for (int attempt = 0; attempt < 8; attempt++) {
		*stats = stats_bytes(hub);
		*ledger = skvo_ledger_bytes();
		/* Past the background thread's idle settle (a few 10 ms periods), then flushed. */
		(void)usleep(50000);
		(void)ckvo_hub_flush(hub);
		(void)ckvo_hub_flush(hub);
		if (*stats == stats_bytes(hub) && *ledger == skvo_ledger_bytes())
			return;
	}
}

/* A hub that has registered and removed once (its background thread runs), settled. */
static ckvo_hub_t *
hub_started(ckvo_key_t *key)
{
	ckvo_hub_t *hub = ckvo_hub_create();
	ckvo_token_t token;
	int object;

	if (hub == NULL)
		return NULL;
	*key = ckvo_key_intern(hub, "value", NULL);
	if (*key == 0 || ckvo_observe(hub, &object, *key, 0, NULL, ignore, NULL, NULL, &token) != CKVO_OK ||
	    ckvo_unobserve(hub, token) != CKVO_OK) {
		(void)ckvo_hub_destroy(hub);
		return NULL;
	}
	return hub;
}

/* This thread's reader record and a recycled one for the background thread exist before the ledger. */
static void
warm_up(void)
{
	ckvo_key_t key;
	ckvo_hub_t *hub = hub_started(&key);
	int object;

	if (hub != NULL) {
		size_t count;

		(void)ckvo_object_observations(hub, &object, NULL, 0, &count);
		(void)ckvo_hub_destroy(hub);
	}
}

int
ckvots_held_after_spike(size_t spike, size_t keep_every, int shape, ckvots_held_t *out)
{
	ckvo_token_t *tokens = malloc(spike * sizeof(*tokens));
	char *objects = malloc(spike), *owners = malloc(spike);
	ckvo_hub_t *hub = NULL;
	ckvo_key_t key;
	int status = -1;

	*out = (ckvots_held_t){ 0 };
	if (tokens == NULL || objects == NULL || owners == NULL)
		goto out;
	warm_up();
	if (!skvo_ledger_begin())
		goto out;
	hub = hub_started(&key);
	if (hub == NULL)
		goto out;
	settle(hub, &out->empty, &out->stats_empty);
	for (size_t i = 0; i < spike; i++) {
		const void *object = shape == CKVOTS_SHAPE_ONE_OWNER ? (void *)objects : &objects[i];
		const void *owner = shape == CKVOTS_SHAPE_ONE_OWNER ? (void *)owners : &owners[i];

		if (ckvo_observe(hub, object, key, 0, owner, ignore, (void *)(i + 1), NULL,
		    &tokens[i]) != CKVO_OK)
			goto out;
	}
	settle(hub, &out->peak, &out->stats_peak);
	for (size_t i = 0; i < spike; i++) {
		if (keep_every != 0 && i % keep_every == 0) {
			out->live++;
			continue;
		}
		if (ckvo_unobserve(hub, tokens[i]) != CKVO_OK)
			goto out;
	}
	settle(hub, &out->held, &out->stats_held);
	status = 0;
out:
	(void)ckvo_hub_destroy(hub);
	skvo_ledger_end();
	free(tokens);
	free(objects);
	free(owners);
	return status;
}

int
ckvots_bytes_cycles(size_t spike, size_t cycles, long *ledger, long *stats)
{
	ckvo_token_t *tokens = malloc(spike * sizeof(*tokens));
	char *objects = malloc(spike / 4 + 1), *owners = malloc(64);
	ckvo_hub_t *hub = NULL;
	ckvo_key_t keys[2];
	long ledger_empty;
	size_t stats_empty;
	int status = -1;

	if (tokens == NULL || objects == NULL || owners == NULL)
		goto out;
	warm_up();
	if (!skvo_ledger_begin())
		goto out;
	hub = hub_started(&keys[0]);
	if (hub == NULL)
		goto out;
	settle(hub, &ledger_empty, &stats_empty);
	for (size_t cycle = 0; cycle < cycles; cycle++) {
		char name[32];
		size_t at;

		/* A key a cycle: keys and their names are held until the hub goes. */
		(void)snprintf(name, sizeof(name), "cycle%zu", cycle);
		keys[1] = ckvo_key_intern(hub, name, NULL);
		if (keys[1] == 0)
			goto out;
		/*
		 * Shared and single slots, lists that grow and compact, owner
		 * groups of many members, wildcards: everything the hub counts.
		 */
		for (size_t i = 0; i < spike; i++) {
			const void *object = i % 10 == 9 ? NULL : &objects[i % (spike / 4 + 1)];

			if (ckvo_observe(hub, object, keys[i % 2], 0, i % 3 == 0 ? NULL : &owners[i % 64],
			    ignore, (void *)(i + 1), NULL, &tokens[i]) != CKVO_OK)
				goto out;
		}
		settle(hub, &ledger[2 * cycle], &at);
		stats[2 * cycle] = (long)at - (long)stats_empty;
		ledger[2 * cycle] -= ledger_empty;
		for (size_t i = 0; i < spike; i++) {
			if (ckvo_unobserve(hub, tokens[i]) != CKVO_OK)
				goto out;
		}
		settle(hub, &ledger[2 * cycle + 1], &at);
		stats[2 * cycle + 1] = (long)at - (long)stats_empty;
		ledger[2 * cycle + 1] -= ledger_empty;
	}
	status = 0;
out:
	(void)ckvo_hub_destroy(hub);
	skvo_ledger_end();
	free(tokens);
	free(objects);
	free(owners);
	return status;
}

static unsigned int exit_after;
static size_t exit_released;
static pthread_t exit_spared; /* the test's own thread: never ended */
static int exit_armed;

static void
release_exiting(void *context)
{
	(void)__atomic_add_fetch(&exit_released, 1, __ATOMIC_RELAXED);
	if ((uintptr_t)context == exit_after && !pthread_equal(pthread_self(), exit_spared) &&
	    __atomic_exchange_n(&exit_armed, 0, __ATOMIC_RELAXED) != 0)
		pthread_exit(NULL);
}

struct exit_scenario {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	int runner;
	size_t count;
	ckvo_token_t *tokens;
	char *objects;
};

/* Registers on distinct objects (a slot each, freed after a grace period), then removes. */
static void *
exit_scenario_run(void *argument)
{
	struct exit_scenario *scenario = argument;

	for (size_t i = 0; i < scenario->count; i++) {
		if (ckvo_observe(scenario->hub, &scenario->objects[i], scenario->key,
		    CKVO_OPTION_UNIQUE_CONTEXT, NULL, ignore, (void *)(uintptr_t)(i + 1), release_exiting,
		    &scenario->tokens[i]) != CKVO_OK)
			return NULL;
	}
	for (size_t i = 0; i < scenario->count; i++) {
		if (scenario->runner == CKVOTS_RUNNER_BACKGROUND)
			(void)ckvo_unobserve_deferred(scenario->hub, scenario->tokens[i]);
		else
			(void)ckvo_unobserve(scenario->hub, scenario->tokens[i]);
	}
	return NULL;
}

static void *
exit_at_once(void *argument)
{
	pthread_exit(argument);
}

int
ckvots_ledger_after_exit_in_release(int runner, size_t count, long *leaked)
{
	struct exit_scenario scenario = { .runner = runner, .count = count };
	long before = -1, after = -1;
	size_t stats_before = 0, stats_after = 0;
	pthread_t thread;
	int status = -1;

	*leaked = -1;
	scenario.tokens = malloc(count * sizeof(*scenario.tokens));
	scenario.objects = malloc(count);
	if (scenario.tokens == NULL || scenario.objects == NULL)
		goto out;
	warm_up();
	/* The first pthread_exit loads the unwinder, which keeps what it allocates. */
	if (pthread_create(&thread, NULL, exit_at_once, NULL) != 0)
		goto out;
	(void)pthread_join(thread, NULL);
	if (!skvo_ledger_begin())
		goto out;
	scenario.hub = hub_started(&scenario.key);
	if (scenario.hub == NULL)
		goto out;
	settle(scenario.hub, &before, &stats_before);
	exit_after = (unsigned int)(count / 2);
	exit_released = 0;
	exit_spared = pthread_self();
	exit_armed = 1;
	if (pthread_create(&thread, NULL, exit_scenario_run, &scenario) != 0)
		goto out;
	(void)pthread_join(thread, NULL);
	/* What the thread did not remove before it ended. */
	for (size_t i = 0; i < count; i++)
		(void)ckvo_unobserve(scenario.hub, scenario.tokens[i]);
	settle(scenario.hub, &after, &stats_after);
	/* The hub may keep more (spare token pages, a larger directory): its stats say how much. */
	if (before >= 0 && after >= 0)
		*leaked = (after - before) - ((long)stats_after - (long)stats_before);
	status = __atomic_load_n(&exit_released, __ATOMIC_RELAXED) == count ? 0 : -2;
out:
	(void)ckvo_hub_destroy(scenario.hub);
	skvo_ledger_end();
	free(scenario.tokens);
	free(scenario.objects);
	return status;
}
