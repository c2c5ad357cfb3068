/*
 * release_runner.c — releases that call back into the API, run by whichever
 * thread the engine picks: chains of strict removals on a small stack,
 * removals inside a dispatch, a release that flushes or destroys its own
 * hub, a flush racing later work, a thread that exits inside an initial
 * callback. Each scenario returns a count or a status the test checks.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ckvo_test_support.h"

static void
ignore_change(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

/* ------------------------------------------------ a chain of strict removals */

struct chain {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	size_t depth;
	ckvo_token_t *tokens;
	_Atomic unsigned char *released; /* per link: times released */
	atomic_size_t failures;          /* a strict removal in a release that failed */
	int status;
};

struct chain_link {
	struct chain *chain;
	size_t index;
};

static void
chain_release(void *context)
{
	struct chain_link *link = context;
	struct chain *chain = link->chain;

	atomic_fetch_add(&chain->released[link->index], 1);
	if (link->index + 1 < chain->depth &&
	    ckvo_unobserve_sync(chain->hub, chain->tokens[link->index + 1]) != CKVO_OK)
		atomic_fetch_add(&chain->failures, 1);
}

static void *
chain_main(void *argument)
{
	struct chain *chain = argument;

	chain->status = ckvo_unobserve_sync(chain->hub, chain->tokens[0]);
	return NULL;
}

int
ckvots_release_chain(ckvo_hub_t *hub, ckvo_key_t key, size_t depth, size_t stack_bytes)
{
	struct chain chain = { hub, key, depth, NULL, NULL, 0, 0 };
	struct chain_link *links = calloc(depth, sizeof(*links));
	pthread_attr_t attr;
	pthread_t thread;
	int result = 0;

	chain.tokens = calloc(depth, sizeof(*chain.tokens));
	chain.released = calloc(depth, sizeof(*chain.released));
	if (links == NULL || chain.tokens == NULL || chain.released == NULL)
		return CKVOTS_RELEASE_SETUP;
	for (size_t i = 0; i < depth; i++) {
		links[i] = (struct chain_link){ &chain, i };
		if (ckvo_observe(hub, links, key, 0, NULL, ignore_change, &links[i], chain_release,
		    &chain.tokens[i]) != CKVO_OK)
			return CKVOTS_RELEASE_SETUP;
	}
	if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, stack_bytes) != 0 ||
	    pthread_create(&thread, &attr, chain_main, &chain) != 0)
		return CKVOTS_RELEASE_SETUP;
	pthread_join(thread, NULL);
	pthread_attr_destroy(&attr);
	if (ckvo_hub_flush(hub) != CKVO_OK || chain.status != CKVO_OK)
		result = CKVOTS_RELEASE_STATUS;
	else if (atomic_load(&chain.failures) != 0)
		result = CKVOTS_RELEASE_NESTED_STATUS;
	for (size_t i = 0; i < depth && result == 0; i++) {
		if (atomic_load(&chain.released[i]) != 1)
			result = CKVOTS_RELEASE_NOT_ONCE;
	}
	free(links);
	free(chain.tokens);
	free((void *)chain.released);
	return result;
}

/* ------------------------------------- follow-ups run by another thread */

struct relay {
	struct chain chain;
	atomic_int blocker_running; /* the blocker's release has begun on the runner */
	atomic_int flushing;        /* the main thread is about to flush */
	ckvo_token_t blocker;
	ckvo_token_t first;
	int status;
};

/* Runs first in the runner's chunk and holds it until the main thread flushes. */
static void
blocker_release(void *context)
{
	struct relay *relay = context;

	atomic_store(&relay->blocker_running, 1);
	while (!atomic_load(&relay->flushing))
		(void)sched_yield();
	/* Let the flush reach its wait (not needed for correctness: more often the bad order). */
	for (int i = 0; i < 100; i++)
		(void)sched_yield();
}

static void *
relay_runner_main(void *argument)
{
	struct relay *relay = argument;

	/* Removed in this order, queued in the reverse: the blocker's release runs first. */
	if (ckvo_unobserve(relay->chain.hub, relay->first) != CKVO_OK ||
	    ckvo_unobserve(relay->chain.hub, relay->blocker) != CKVO_OK)
		relay->status = CKVOTS_RELEASE_STATUS;
	/* Becomes the runner of a chunk holding the blocker and the chain's first link. */
	if (ckvo_hub_flush(relay->chain.hub) != CKVO_OK)
		relay->status = CKVOTS_RELEASE_STATUS;
	return NULL;
}

int
ckvots_flush_waits_for_follow_ups(ckvo_hub_t *hub, ckvo_key_t key, size_t depth,
    size_t *released_when_flush_returned)
{
	struct relay relay = { .chain = { hub, key, depth, NULL, NULL, 0, 0 } };
	struct chain_link *links = calloc(depth, sizeof(*links));
	pthread_t thread;
	size_t released = 0;
	int object;

	relay.chain.tokens = calloc(depth, sizeof(*relay.chain.tokens));
	relay.chain.released = calloc(depth, sizeof(*relay.chain.released));
	if (links == NULL || relay.chain.tokens == NULL || relay.chain.released == NULL)
		return CKVOTS_RELEASE_SETUP;
	for (size_t i = 0; i < depth; i++) {
		links[i] = (struct chain_link){ &relay.chain, i };
		if (ckvo_observe(hub, &object, key, 0, NULL, ignore_change, &links[i], chain_release,
		    &relay.chain.tokens[i]) != CKVO_OK)
			return CKVOTS_RELEASE_SETUP;
	}
	relay.first = relay.chain.tokens[0];
	if (ckvo_observe(hub, &object, key, 0, NULL, ignore_change, &relay, blocker_release,
	    &relay.blocker) != CKVO_OK)
		return CKVOTS_RELEASE_SETUP;
	if (pthread_create(&thread, NULL, relay_runner_main, &relay) != 0)
		return CKVOTS_RELEASE_SETUP;
	while (!atomic_load(&relay.blocker_running))
		(void)sched_yield();

	/*
	 * The first link was removed before this flush and its release has not
	 * run (it waits behind the blocker, on the other thread): the flush
	 * waits for it, and so for the chain of strict removals it starts.
	 */
	atomic_store(&relay.flushing, 1);
	if (ckvo_hub_flush(hub) != CKVO_OK)
		relay.status = CKVOTS_RELEASE_STATUS;
	for (size_t i = 0; i < depth; i++)
		released += atomic_load(&relay.chain.released[i]);
	*released_when_flush_returned = released;

	pthread_join(thread, NULL);
	(void)ckvo_hub_flush(hub);
	if (relay.status == 0 && atomic_load(&relay.chain.failures) != 0)
		relay.status = CKVOTS_RELEASE_NESTED_STATUS;
	free(links);
	free(relay.chain.tokens);
	free((void *)relay.chain.released);
	return relay.status;
}

/* ------------------------------------------------ releases and dispatch */

static _Thread_local int inside_callback;

struct inside {
	ckvo_hub_t *hub;
	ckvo_token_t tokens[256];
	struct inside **contexts;        /* contexts[i] == this; &contexts[i] is observation i's context */
	size_t next;
	pthread_mutex_t announcer; /* held by the announcing thread around each dispatch */
	atomic_size_t released_inside;   /* releases run inside a callback on the same thread */
	atomic_size_t announcer_deadlock; /* releases that would have deadlocked on it */
	atomic_size_t released;
	int flush_status;                /* ckvo_hub_flush from the first release */
};

static void
inside_callback_remove(const ckvo_change_t *change, void *context)
{
	struct inside *inside = *(struct inside **)context;

	(void)change;
	if (context != (void *)&inside->contexts[0])
		return;
	inside_callback++;
	for (int i = 0; i < 64 && inside->next < 256; i++)
		(void)ckvo_unobserve(inside->hub, inside->tokens[inside->next++]);
	inside_callback--;
}

static void
inside_release(void *context)
{
	struct inside *inside = *(struct inside **)context;
	int error;

	if (inside_callback != 0)
		atomic_fetch_add(&inside->released_inside, 1);
	/* An error-checking mutex reports the deadlock instead of hanging. */
	error = pthread_mutex_lock(&inside->announcer);
	if (error == EDEADLK)
		atomic_fetch_add(&inside->announcer_deadlock, 1);
	else if (error == 0)
		pthread_mutex_unlock(&inside->announcer);
	if (atomic_fetch_add(&inside->released, 1) == 0)
		inside->flush_status = ckvo_hub_flush(inside->hub);
}

int
ckvots_releases_inside_dispatch(ckvo_hub_t *hub, ckvo_key_t key, size_t *released_inside,
    size_t *announcer_deadlocks, int *flush_status)
{
	struct inside *inside = calloc(1, sizeof(*inside));
	struct inside **contexts = calloc(256, sizeof(*contexts));
	pthread_mutexattr_t attr;
	ckvo_change_t change = { .object = inside, .key = key, .kind = CKVO_KIND_SETTING };

	if (inside == NULL || contexts == NULL)
		return CKVOTS_RELEASE_SETUP;
	inside->hub = hub;
	inside->contexts = contexts;
	inside->next = 1;
	inside->flush_status = 1;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&inside->announcer, &attr);
	for (size_t i = 0; i < 256; i++) {
		contexts[i] = inside;
		/* Observation 0 is the one that removes. */
		if (ckvo_observe(hub, inside, key, 0, NULL, inside_callback_remove, &contexts[i],
		    inside_release, &inside->tokens[i]) != CKVO_OK)
			return CKVOTS_RELEASE_SETUP;
	}
	/* Each dispatch removes 64 from inside its callback, holding the announcer's lock. */
	for (int round = 0; round < 3; round++) {
		pthread_mutex_lock(&inside->announcer);
		(void)ckvo_did_change(hub, &change);
		pthread_mutex_unlock(&inside->announcer);
	}
	(void)ckvo_unobserve(hub, inside->tokens[0]);
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_RELEASE_STATUS;
	*released_inside = atomic_load(&inside->released_inside);
	*announcer_deadlocks = atomic_load(&inside->announcer_deadlock);
	*flush_status = inside->flush_status;
	/*
	 * The observations no callback removed still name `inside` in their
	 * contexts: release them before it is freed, not when the hub is
	 * destroyed (they would lock a freed mutex).
	 */
	while (inside->next < 256)
		(void)ckvo_unobserve(hub, inside->tokens[inside->next++]);
	if (ckvo_hub_flush(hub) != CKVO_OK || atomic_load(&inside->released) != 256)
		return CKVOTS_RELEASE_NOT_ONCE;
	pthread_mutex_destroy(&inside->announcer);
	free(inside);
	free(contexts);
	return 0;
}

/* ------------------------------------------------ a flush and later work */

struct later {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	ckvo_token_t first;            /* removed before the flush */
	ckvo_token_t late[64];         /* removed by another thread while the flush runs */
	atomic_int flush_returned;
	atomic_int removals_returned;  /* the other thread's removals returned */
	atomic_int late_release_started;
	atomic_int late_timed_out;     /* a late release gave up waiting for the flush */
	atomic_int first_timed_out;
	atomic_size_t late_released;
	unsigned seconds;
};

static bool
wait_until(atomic_int *a, atomic_int *b, unsigned seconds)
{
	struct timespec pause = { 0, 1000000 };

	for (unsigned i = 0; i < seconds * 1000u; i++) {
		if (atomic_load(a) != 0 || (b != NULL && atomic_load(b) != 0))
			return true;
		nanosleep(&pause, NULL);
	}
	return false;
}

static void *
later_remover(void *argument)
{
	struct later *later = argument;

	/* 64 removals: the last unlock polls, finds them past a grace period and queues them. */
	for (int i = 0; i < 64; i++)
		(void)ckvo_unobserve(later->hub, later->late[i]);
	atomic_store(&later->removals_returned, 1);
	return NULL;
}

static void
first_release(void *context)
{
	struct later *later = context;
	pthread_t thread;

	/* Runs inside the flush: now another thread removes (and may take) later work. */
	if (pthread_create(&thread, NULL, later_remover, later) != 0)
		return;
	if (!wait_until(&later->removals_returned, &later->late_release_started, later->seconds))
		atomic_store(&later->first_timed_out, 1);
	pthread_detach(thread);
}

static void
late_release(void *context)
{
	struct later *later = context;

	/* Later work that blocks until the flush has returned. */
	if (atomic_fetch_add(&later->late_release_started, 1) == 0 &&
	    !wait_until(&later->flush_returned, NULL, later->seconds))
		atomic_store(&later->late_timed_out, 1);
	atomic_fetch_add(&later->late_released, 1);
}

int
ckvots_flush_ignores_later_releases(ckvo_hub_t *hub, ckvo_key_t key, unsigned seconds,
    int *late_timed_out)
{
	struct later *later = calloc(1, sizeof(*later));
	struct timespec pause = { 0, 1000000 };

	if (later == NULL)
		return CKVOTS_RELEASE_SETUP;
	later->hub = hub;
	later->key = key;
	later->seconds = seconds;
	if (ckvo_observe(hub, later, key, 0, NULL, ignore_change, later, first_release,
	    &later->first) != CKVO_OK)
		return CKVOTS_RELEASE_SETUP;
	for (int i = 0; i < 64; i++) {
		if (ckvo_observe(hub, later, key, CKVO_OPTION_UNIQUE_CONTEXT, NULL, ignore_change, later,
		    late_release, &later->late[i]) != CKVO_OK)
			return CKVOTS_RELEASE_SETUP;
	}
	if (ckvo_unobserve(hub, later->first) != CKVO_OK)
		return CKVOTS_RELEASE_SETUP;
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_RELEASE_STATUS;
	atomic_store(&later->flush_returned, 1);
	/* The later work is released in the end (by its own thread or the background one). */
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_RELEASE_STATUS;
	while (atomic_load(&later->late_released) != 64)
		nanosleep(&pause, NULL);
	*late_timed_out = atomic_load(&later->late_timed_out);
	/* The detached remover has returned (its removals did); the struct may go. */
	while (atomic_load(&later->removals_returned) == 0)
		nanosleep(&pause, NULL);
	free(later);
	return 0;
}

/* ------------------------------------------------ exit inside an initial callback */

struct initial_exit {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	ckvo_token_t tokens[300];
	size_t next;
	atomic_size_t released;
};

static void
initial_exit_remove(const ckvo_change_t *change, void *context)
{
	struct initial_exit *state = context;

	(void)change;
	for (int i = 0; i < 64; i++)
		(void)ckvo_unobserve(state->hub, state->tokens[state->next++]);
}

static void
initial_exit_release(void *context)
{
	atomic_fetch_add(&((struct initial_exit *)context)->released, 1);
}

static void
initial_exit_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
	pthread_exit(NULL);
}

static void *
initial_exit_main(void *argument)
{
	struct initial_exit *state = argument;
	ckvo_change_t change = { .object = state, .key = state->key, .kind = CKVO_KIND_SETTING };
	ckvo_token_t token;

	/* 64 removed inside a dispatch (aged by its scan), 63 more, and one deferred... */
	(void)ckvo_did_change(state->hub, &change);
	for (int i = 0; i < 63; i++)
		(void)ckvo_unobserve(state->hub, state->tokens[state->next++]);
	(void)ckvo_unobserve_deferred(state->hub, state->tokens[state->next++]);
	/* ...so the unlock of this registration finds 64 ready; then the thread exits. */
	(void)ckvo_observe(state->hub, &state->next, state->key, CKVO_OPTION_INITIAL, NULL,
	    initial_exit_callback, NULL, NULL, &token);
	return argument;
}

int
ckvots_exit_inside_initial_callback(ckvo_hub_t *hub, ckvo_key_t key, size_t *released)
{
	struct initial_exit *state = calloc(1, sizeof(*state));
	pthread_t thread;
	void *result = NULL;

	if (state == NULL)
		return CKVOTS_RELEASE_SETUP;
	state->hub = hub;
	state->key = key;
	state->next = 1;
	/* Observation 0 removes 64 others from its callback; the others only count releases. */
	if (ckvo_observe(hub, state, key, 0, NULL, initial_exit_remove, state, NULL,
	    &state->tokens[0]) != CKVO_OK)
		return CKVOTS_RELEASE_SETUP;
	for (size_t i = 1; i < 300; i++) {
		if (ckvo_observe(hub, state, key, CKVO_OPTION_UNIQUE_CONTEXT, NULL, ignore_change, state,
		    initial_exit_release, &state->tokens[i]) != CKVO_OK)
			return CKVOTS_RELEASE_SETUP;
	}
	if (pthread_create(&thread, NULL, initial_exit_main, state) != 0)
		return CKVOTS_RELEASE_SETUP;
	pthread_join(thread, &result);
	if (result != NULL)
		return CKVOTS_THREAD_DID_NOT_EXIT;
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_RELEASE_STATUS;
	*released = atomic_load(&state->released);
	/* Nothing may name `state` once it is freed: its observers (contexts) and the exited registration (object). */
	(void)ckvo_unobserve_object(hub, state);
	(void)ckvo_unobserve_object(hub, &state->next);
	if (ckvo_hub_flush(hub) != CKVO_OK)
		return CKVOTS_RELEASE_STATUS;
	free(state);
	return 0;
}
