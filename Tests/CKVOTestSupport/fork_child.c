/*
 * fork_child.c — fork() while other threads dispatch and register on a hub,
 * then check, in the single-threaded child, that the hub still works: the
 * engine must cope with epoch records of threads that vanished and with a
 * writer lock a vanished thread may have held (pthread_atfork).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckvo_test_support.h"

struct load {
	ckvo_hub_t *hub;
	const void *object;
	ckvo_key_t key;
	_Atomic bool stop;
};

static void
noop_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static void *
dispatcher_main(void *p)
{
	struct load *load = p;
	ckvo_change_t change = { .object = load->object, .key = load->key, .kind = CKVO_KIND_SETTING };
	while (!atomic_load(&load->stop)) {
		ckvo_will_change(load->hub, &change);
		ckvo_did_change(load->hub, &change);
	}
	return NULL;
}

static void *
writer_main(void *p)
{
	struct load *load = p;
	char context; /* a per-thread address, so writers never collide as duplicates */
	for (unsigned i = 0; !atomic_load(&load->stop); i++) {
		ckvo_token_t token = CKVO_TOKEN_NONE_INITIALIZER;
		if (ckvo_observe(load->hub, load->object, load->key, CKVO_OPTION_PRIOR, NULL,
			noop_callback, &context, NULL, &token) == CKVO_OK)
			ckvo_unobserve(load->hub, token);
		if (i % 64 == 0)
			ckvo_hub_flush(load->hub);
	}
	return NULL;
}

struct child_counts {
	unsigned calls;
	unsigned releases;
};

static void
child_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	((struct child_counts *)context)->calls++;
}

static void
child_release(void *context)
{
	((struct child_counts *)context)->releases++;
}

/* Runs in the child: only this thread exists. Returns an exit code. */
static int
child_scenario(ckvo_hub_t *hub, const void *object, ckvo_key_t key)
{
	static struct child_counts counts;
	ckvo_token_t token = CKVO_TOKEN_NONE_INITIALIZER;

	if (ckvo_key_intern(hub, "ckvots.fork.child", NULL) == 0)
		return CKVOTS_FORK_CHILD_KEY;
	if (ckvo_observe(hub, object, key, 0, NULL, child_callback, &counts, child_release, &token) !=
	    CKVO_OK)
		return CKVOTS_FORK_CHILD_OBSERVE;
	ckvo_change_t change = { .object = object, .key = key, .kind = CKVO_KIND_SETTING };
	if (ckvo_will_change(hub, &change) != CKVO_OK || ckvo_did_change(hub, &change) != CKVO_OK)
		return CKVOTS_FORK_CHILD_DISPATCH;
	if (counts.calls != 1)
		return CKVOTS_FORK_CHILD_CALLS;
	if (ckvo_unobserve(hub, token) != CKVO_OK)
		return CKVOTS_FORK_CHILD_UNOBSERVE;
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_FORK_CHILD_FLUSH;
	if (counts.releases != 1)
		return CKVOTS_FORK_CHILD_RELEASE;

	ckvo_hub_t *fresh = ckvo_hub_create();
	if (fresh == NULL)
		return CKVOTS_FORK_CHILD_NEW_HUB;
	ckvo_key_t fresh_key = ckvo_key_intern(fresh, "ckvots.fork.fresh", NULL);
	if (fresh_key == 0)
		return CKVOTS_FORK_CHILD_KEY;
	if (ckvo_observe(fresh, object, fresh_key, 0, NULL, child_callback, &counts, child_release,
		&token) != CKVO_OK)
		return CKVOTS_FORK_CHILD_OBSERVE;
	change.key = fresh_key;
	if (ckvo_did_change(fresh, &change) != CKVO_OK)
		return CKVOTS_FORK_CHILD_DISPATCH;
	if (counts.calls != 2)
		return CKVOTS_FORK_CHILD_CALLS;
	if (ckvo_hub_destroy(fresh) != CKVO_OK)
		return CKVOTS_FORK_CHILD_NEW_HUB;
	if (counts.releases != 2)
		return CKVOTS_FORK_CHILD_RELEASE;
	return CKVOTS_FORK_OK;
}

int
ckvots_fork_scenario(ckvo_hub_t *hub, const void *object, ckvo_key_t key, unsigned dispatchers,
    unsigned writers, unsigned forks, unsigned timeout_seconds)
{
	struct load load = { .hub = hub, .object = object, .key = key };
	atomic_init(&load.stop, false);
	unsigned count = dispatchers + writers;
	pthread_t *threads = calloc(count == 0 ? 1 : count, sizeof(*threads));
	if (threads == NULL)
		return CKVOTS_FORK_HELPER_THREADS;
	unsigned started = 0;
	int result = CKVOTS_FORK_OK;
	for (; started < count; started++) {
		void *(*body)(void *) = started < dispatchers ? dispatcher_main : writer_main;
		if (pthread_create(&threads[started], NULL, body, &load) != 0) {
			result = CKVOTS_FORK_HELPER_THREADS;
			break;
		}
	}

	for (unsigned f = 0; f < forks && result == CKVOTS_FORK_OK; f++) {
		/* Let the threads get going, so some are mid-dispatch or mid-write. */
		struct timespec pause = { 0, 2000000 }; /* 2 ms */
		nanosleep(&pause, NULL);
		pid_t pid = fork();
		if (pid < 0) {
			result = CKVOTS_FORK_HELPER_FORK;
			break;
		}
		if (pid == 0)
			_exit(child_scenario(hub, object, key));
		result = ckvots_wait_child(pid, timeout_seconds);
	}

	atomic_store(&load.stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return result;
}
