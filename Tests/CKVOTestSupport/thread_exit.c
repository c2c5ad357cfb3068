/*
 * thread_exit.c — threads that end in awkward ways: one that calls
 * pthread_exit() from inside a callback (its dispatch never returns), and many
 * short-lived threads that each dispatch once. The engine must not leave a
 * read section open (or grow without bound) for threads that are gone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct target {
	ckvo_hub_t *hub;
	const void *object;
	ckvo_key_t key;
};

static _Thread_local bool exit_inside_callback;

static void
exit_hook(const ckvo_change_t *change, void *user)
{
	(void)change;
	(void)user;
	if (exit_inside_callback)
		pthread_exit(NULL);
}

static void *
exiting_main(void *p)
{
	struct target *target = p;
	ckvo_change_t change = { .object = target->object, .key = target->key, .kind = CKVO_KIND_SETTING };
	exit_inside_callback = true;
	ckvo_did_change(target->hub, &change);
	exit_inside_callback = false;
	return p; /* reached only if the callback did not exit the thread */
}

int
ckvots_thread_exit_in_callback(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    ckvots_probe_t *probe, ckvo_token_t *token)
{
	ckvots_probe_set_hooks(probe, exit_hook, NULL, NULL);
	ckvo_status_t status = ckvo_observe(hub, object, key, 0, NULL, ckvots_probe_callback, probe,
	    ckvots_probe_release, token);
	if (status != CKVO_OK)
		return status;

	struct target target = { hub, object, key };
	pthread_t thread;
	int error = pthread_create(&thread, NULL, exiting_main, &target);
	if (error != 0)
		return error;
	void *result = NULL;
	pthread_join(thread, &result);
	return result == NULL ? 0 : CKVOTS_THREAD_DID_NOT_EXIT;
}

struct churn {
	struct target target;
	_Atomic size_t ok;
};

static void *
short_lived_main(void *p)
{
	struct churn *churn = p;
	ckvo_change_t change = {
		.object = churn->target.object, .key = churn->target.key, .kind = CKVO_KIND_SETTING
	};
	if (ckvo_did_change(churn->target.hub, &change) == CKVO_OK)
		atomic_fetch_add(&churn->ok, 1);
	return NULL;
}

size_t
ckvots_short_lived_dispatchers(ckvo_hub_t *hub, const void *object, ckvo_key_t key, size_t total,
    unsigned concurrent)
{
	struct churn churn = { .target = { hub, object, key } };
	atomic_init(&churn.ok, 0);
	if (concurrent == 0)
		concurrent = 1;
	pthread_t *threads = calloc(concurrent, sizeof(*threads));
	if (threads == NULL)
		return 0;
	for (size_t done = 0; done < total;) {
		unsigned batch = 0;
		for (; batch < concurrent && done + batch < total; batch++) {
			if (pthread_create(&threads[batch], NULL, short_lived_main, &churn) != 0)
				break;
		}
		for (unsigned i = 0; i < batch; i++)
			pthread_join(threads[i], NULL);
		if (batch == 0)
			break; /* cannot create threads: report what was done */
		done += batch;
	}
	free(threads);
	return atomic_load(&churn.ok);
}
