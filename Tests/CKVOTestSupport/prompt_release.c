/*
 * prompt_release.c — fork() while a removed observation waits for a blocked
 * dispatch: the child releases it with no further call into the library, and
 * the parent releases it once the dispatch returns, with none either.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckvo_test_support.h"

/* ThreadSanitizer forbids starting threads in a fork child: the engine then starts no reclaimer there. */
#if defined(__SANITIZE_THREAD__)
#define FORK_CHILD_RECLAIMS 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FORK_CHILD_RECLAIMS 0
#endif
#endif
#ifndef FORK_CHILD_RECLAIMS
#define FORK_CHILD_RECLAIMS 1
#endif

struct blocker {
	ckvo_hub_t *hub;
	const void *object;
	ckvo_key_t key;
	_Atomic int entered;
	_Atomic int go;
};

static void
sleep_ms(long ms)
{
	struct timespec step = { 0, ms * 1000000L };

	nanosleep(&step, NULL);
}

static void
blocking_callback(const ckvo_change_t *change, void *context)
{
	struct blocker *blocker = context;

	(void)change;
	atomic_store(&blocker->entered, 1);
	while (!atomic_load(&blocker->go))
		sleep_ms(1);
}

static void
noop_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static void
flag_release(void *context)
{
	atomic_store((_Atomic int *)context, 1);
}

static void *
dispatch_main(void *argument)
{
	struct blocker *blocker = argument;
	ckvo_change_t change = { .object = blocker->object, .key = blocker->key, .kind = CKVO_KIND_SETTING };

	(void)ckvo_did_change(blocker->hub, &change);
	return NULL;
}

/* Sleeps until `*flag` is set or `timeout_seconds` pass; whether it was set. */
static bool
wait_flag(const _Atomic int *flag, unsigned timeout_seconds)
{
	for (unsigned long waited = 0; waited < (unsigned long)timeout_seconds * 100; waited++) {
		if (atomic_load(flag))
			return true;
		sleep_ms(10);
	}
	return atomic_load(flag) != 0;
}

int
ckvots_fork_prompt_release(ckvo_hub_t *hub, const void *object, ckvo_key_t key,
    ckvo_key_t other_key, unsigned timeout_seconds)
{
	struct blocker blocker = { .hub = hub, .object = object, .key = key };
	static _Atomic int released;
	ckvo_token_t blocking = CKVO_TOKEN_NONE_INITIALIZER, token = CKVO_TOKEN_NONE_INITIALIZER;
	pthread_t thread;
	int result = CKVOTS_PROMPT_OK, status = 0;
	pid_t pid;

	atomic_init(&blocker.entered, 0);
	atomic_init(&blocker.go, 0);
	atomic_store(&released, 0);
	if (ckvo_observe(hub, object, key, 0, NULL, blocking_callback, &blocker, NULL, &blocking) !=
	    CKVO_OK)
		return CKVOTS_PROMPT_HELPER_SETUP;
	if (pthread_create(&thread, NULL, dispatch_main, &blocker) != 0) {
		(void)ckvo_unobserve(hub, blocking);
		return CKVOTS_PROMPT_HELPER_SETUP;
	}
	while (!atomic_load(&blocker.entered))
		sleep_ms(1);

	/* Removed while the blocked dispatch is running: its release must wait for it. */
	if (ckvo_observe(hub, object, other_key, 0, NULL, noop_callback, &released, flag_release,
		&token) != CKVO_OK ||
	    ckvo_unobserve(hub, token) != CKVO_OK)
		result = CKVOTS_PROMPT_HELPER_SETUP;

	pid = result == CKVOTS_PROMPT_OK ? fork() : -1;
	if (pid == 0)
		_exit(!FORK_CHILD_RECLAIMS || wait_flag(&released, timeout_seconds) ?
			0 : CKVOTS_PROMPT_CHILD_NOT_RELEASED);
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status))
			result = WEXITSTATUS(status);
		else
			result = CKVOTS_PROMPT_CHILD_SIGNALED + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	} else if (result == CKVOTS_PROMPT_OK) {
		result = CKVOTS_PROMPT_HELPER_SETUP;
	}

	/* The dispatch is still inside its callback: the context must still be held. */
	if (atomic_load(&released) && result == CKVOTS_PROMPT_OK)
		result = CKVOTS_PROMPT_RELEASED_EARLY;
	atomic_store(&blocker.go, 1);
	(void)pthread_join(thread, NULL);
	if (!wait_flag(&released, timeout_seconds) && result == CKVOTS_PROMPT_OK &&
	    !ckvo_token_is_none(token))
		result = CKVOTS_PROMPT_PARENT_NOT_RELEASED;
	(void)ckvo_unobserve(hub, blocking);
	return result;
}

struct in_flight {
	ckvo_hub_t *hub;
	_Atomic int entered;
	_Atomic int go;
	_Atomic int releases;
};

static void
blocking_release(void *context)
{
	struct in_flight *flight = context;

	atomic_fetch_add(&flight->releases, 1);
	atomic_store(&flight->entered, 1);
	while (!atomic_load(&flight->go))
		sleep_ms(1);
}

static void *
flush_main(void *argument)
{
	struct in_flight *flight = argument;

	(void)ckvo_hub_flush(flight->hub);
	return NULL;
}

int
ckvots_fork_pending_with_release_in_flight(ckvo_hub_t *hub, const void *object, ckvo_key_t key)
{
	static struct in_flight flight;
	ckvo_token_t token = CKVO_TOKEN_NONE_INITIALIZER;
	pthread_t thread;
	int result, status = 0;
	pid_t pid;

	flight.hub = hub;
	atomic_store(&flight.entered, 0);
	atomic_store(&flight.go, 0);
	atomic_store(&flight.releases, 0);
	if (ckvo_observe(hub, object, key, 0, NULL, noop_callback, &flight, blocking_release, &token) !=
		CKVO_OK ||
	    ckvo_unobserve(hub, token) != CKVO_OK)
		return CKVOTS_PROMPT_HELPER_SETUP;
	/* Whichever thread takes the release (this flush, or the hub's own), it blocks there. */
	if (pthread_create(&thread, NULL, flush_main, &flight) != 0)
		return CKVOTS_PROMPT_HELPER_SETUP;
	while (!atomic_load(&flight.entered))
		sleep_ms(1);

	pid = fork();
	if (pid == 0) {
		ckvo_hub_stats_t stats;

		if (ckvo_hub_flush(hub) != CKVO_OK || ckvo_hub_stats(hub, &stats) != CKVO_OK)
			_exit(CKVOTS_PROMPT_HELPER_SETUP);
		_exit(stats.pending_releases > 100 ? 100 : (int)stats.pending_releases);
	}
	result = CKVOTS_PROMPT_HELPER_SETUP;
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(status))
			result = WEXITSTATUS(status);
		else
			result = CKVOTS_PROMPT_CHILD_SIGNALED + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	}
	atomic_store(&flight.go, 1);
	(void)pthread_join(thread, NULL);
	if (ckvo_hub_flush(hub) != CKVO_OK || atomic_load(&flight.releases) != 1)
		result = CKVOTS_PROMPT_PARENT_NOT_RELEASED + 100;
	return result;
}
