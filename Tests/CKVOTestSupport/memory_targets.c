/*
 * memory_targets.c — the bytes a hub holds after removals (issue #21's
 * targets): 200,000 observations of one object with every 512th kept, and a
 * spike of 500,000 removed, each followed by a flush.
 */
#include <stdlib.h>

#include "ckvo_test_support.h"

static void
ignore(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static size_t
hub_bytes(ckvo_hub_t *hub)
{
	ckvo_hub_stats_t stats;

	return ckvo_hub_stats(hub, &stats) == CKVO_OK ? stats.bytes : (size_t)-1;
}

int
ckvots_memory_targets(ckvo_hub_t *hub, ckvo_key_t key, size_t *empty, size_t *survivors,
    size_t *after_spike)
{
	ckvo_token_t *tokens = malloc(500000 * sizeof(*tokens));
	int object;

	if (tokens == NULL)
		return -1;
	*empty = hub_bytes(hub);
	for (size_t i = 0; i < 200000; i++) {
		if (ckvo_observe(hub, &object, key, 0, NULL, ignore, (void *)(i + 1), NULL,
		    &tokens[i]) != CKVO_OK)
			return -1;
	}
	for (size_t i = 0; i < 200000; i++) {
		if (i % 512 != 0 && ckvo_unobserve(hub, tokens[i]) != CKVO_OK)
			return -1;
	}
	(void)ckvo_hub_flush(hub);
	(void)ckvo_hub_flush(hub); /* the pages the first one's releases gave back */
	*survivors = hub_bytes(hub);
	for (size_t i = 0; i < 200000; i += 512)
		(void)ckvo_unobserve(hub, tokens[i]);
	for (size_t i = 0; i < 500000; i++) {
		if (ckvo_observe(hub, &object, key, 0, NULL, ignore, (void *)(i + 1), NULL,
		    &tokens[i]) != CKVO_OK)
			return -1;
	}
	for (size_t i = 0; i < 500000; i++)
		(void)ckvo_unobserve(hub, tokens[i]);
	(void)ckvo_hub_flush(hub);
	(void)ckvo_hub_flush(hub);
	*after_spike = hub_bytes(hub);
	free(tokens);
	return 0;
}

int
ckvots_memory_targets_objects(ckvo_hub_t *hub, ckvo_key_t key, size_t *empty, size_t *survivors,
    size_t *after_spike)
{
	ckvo_token_t *tokens = malloc(500000 * sizeof(*tokens));
	/* Distinct objects and owners: one object group and one owner group each. */
	char *objects = malloc(500000), *owners = malloc(500000);
	int status = -1;

	if (tokens == NULL || objects == NULL || owners == NULL)
		goto out;
	*empty = hub_bytes(hub);
	for (size_t i = 0; i < 200000; i++) {
		if (ckvo_observe(hub, &objects[i], key, 0, &owners[i], ignore, NULL, NULL,
		    &tokens[i]) != CKVO_OK)
			goto out;
	}
	for (size_t i = 0; i < 200000; i++) {
		if (i % 512 != 0 && ckvo_unobserve(hub, tokens[i]) != CKVO_OK)
			goto out;
	}
	(void)ckvo_hub_flush(hub);
	(void)ckvo_hub_flush(hub);
	*survivors = hub_bytes(hub);
	for (size_t i = 0; i < 200000; i += 512)
		(void)ckvo_unobserve(hub, tokens[i]);
	for (size_t i = 0; i < 500000; i++) {
		if (ckvo_observe(hub, &objects[i], key, 0, &owners[i], ignore, NULL, NULL,
		    &tokens[i]) != CKVO_OK)
			goto out;
	}
	/* One survivor keeps each set from emptying. */
	for (size_t i = 1; i < 500000; i++)
		(void)ckvo_unobserve(hub, tokens[i]);
	(void)ckvo_hub_flush(hub);
	(void)ckvo_hub_flush(hub);
	*after_spike = hub_bytes(hub);
	(void)ckvo_unobserve(hub, tokens[0]);
	(void)ckvo_hub_flush(hub);
	status = 0;
out:
	free(tokens);
	free(objects);
	free(owners);
	return status;
}
