/*
 * release_backlog.c — the release queue under pressure and threads that
 * leave the engine abruptly: churn with slow releases (the backlog bound, a
 * flush that must return while others churn), fork() and pthread_exit()
 * inside a release run by a flush, a removal or the background thread, and
 * pthread_cancel() of a thread blocked in ckvo_hub_flush. Each scenario
 * returns 0 or a CKVOTS_BACKLOG_* code; hangs are the Swift test's timeout.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckvo_test_support.h"

static void
ignore_change(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

static uint64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void
sleep_ms(unsigned ms)
{
	struct timespec pause = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&pause, &pause) != 0 && errno == EINTR)
		;
}

/* Waits until *flag is set, for at most `ms`; whether it was. */
static bool
wait_flag(atomic_int *flag, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		if (atomic_load(flag))
			return true;
		sleep_ms(1);
	}
	return atomic_load(flag) != 0;
}

/* ------------------------------------------------------ churn, slow releases */

#define CHURN_SLOTS (1u << 22) /* cycles a churner records, at most */
#define CHURNERS 2

static long release_spin_ns;

/* A release that takes `release_spin_ns` of CPU, and counts itself. */
static void
slow_release(void *context)
{
	uint64_t start = now_ns();

	atomic_fetch_add((_Atomic unsigned char *)context, 1);
	while (now_ns() - start < (uint64_t)release_spin_ns)
		;
}

struct churn;

struct churner {
	struct churn *churn;
	_Atomic unsigned char *released; /* per cycle: times its context was released */
	_Atomic uint64_t removed;        /* cycles whose ckvo_unobserve returned */
	int status;
	pthread_t thread;
};

struct churn {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	uint64_t deadline;              /* churners stop by themselves then */
	atomic_int stop;
	size_t max_pending;             /* the sampler's */
	struct churner churners[CHURNERS];
	pthread_t sampler;
	bool sampler_joined;
};

static void *
churner_main(void *argument)
{
	struct churner *churner = argument;
	struct churn *churn = churner->churn;
	int object;

	for (uint64_t cycle = 0; cycle < CHURN_SLOTS && !atomic_load(&churn->stop); cycle++) {
		ckvo_token_t token;

		if ((cycle & 255) == 0 && now_ns() > churn->deadline)
			break;
		if (ckvo_observe(churn->hub, &object, churn->key, CKVO_OPTION_UNIQUE_CONTEXT, NULL,
		    ignore_change, (void *)&churner->released[cycle], slow_release, &token) != CKVO_OK ||
		    ckvo_unobserve(churn->hub, token) != CKVO_OK) {
			churner->status = CKVOTS_BACKLOG_STATUS;
			break;
		}
		atomic_store(&churner->removed, cycle + 1);
	}
	return NULL;
}

static void *
sampler_main(void *argument)
{
	struct churn *churn = argument;
	struct timespec pause = { 0, 50000 };

	while (!atomic_load(&churn->stop)) {
		ckvo_hub_stats_t stats;

		if (ckvo_hub_stats(churn->hub, &stats) == CKVO_OK && stats.pending_releases > churn->max_pending)
			churn->max_pending = stats.pending_releases;
		nanosleep(&pause, NULL);
	}
	return NULL;
}

static struct churn *
churn_start(ckvo_hub_t *hub, ckvo_key_t key, long spin_ns, unsigned seconds)
{
	struct churn *churn = calloc(1, sizeof(*churn));

	if (churn == NULL)
		return NULL;
	release_spin_ns = spin_ns;
	churn->hub = hub;
	churn->key = key;
	churn->deadline = now_ns() + (uint64_t)seconds * 1000000000u;
	for (int i = 0; i < CHURNERS; i++) {
		struct churner *churner = &churn->churners[i];

		churner->churn = churn;
		churner->released = calloc(CHURN_SLOTS, 1);
		if (churner->released == NULL || pthread_create(&churner->thread, NULL, churner_main, churner) != 0)
			abort();
	}
	if (pthread_create(&churn->sampler, NULL, sampler_main, churn) != 0)
		abort();
	return churn;
}

/* Stops and joins the threads, flushes, checks every cycle was released exactly once. */
static int
churn_finish(struct churn *churn, uint64_t *cycles)
{
	int result = 0;

	atomic_store(&churn->stop, 1);
	for (int i = 0; i < CHURNERS; i++)
		pthread_join(churn->churners[i].thread, NULL);
	if (!churn->sampler_joined)
		pthread_join(churn->sampler, NULL);
	if (ckvo_hub_flush(churn->hub) != CKVO_OK)
		result = CKVOTS_BACKLOG_STATUS;
	*cycles = 0;
	for (int i = 0; i < CHURNERS; i++) {
		struct churner *churner = &churn->churners[i];
		uint64_t removed = atomic_load(&churner->removed);

		if (churner->status != 0 && result == 0)
			result = churner->status;
		*cycles += removed;
		for (uint64_t cycle = 0; cycle < removed && result == 0; cycle++) {
			if (atomic_load(&churner->released[cycle]) != 1)
				result = CKVOTS_BACKLOG_NOT_ONCE;
		}
		free((void *)churner->released);
	}
	free(churn);
	return result;
}

int
ckvots_backlog_churn(ckvo_hub_t *hub, ckvo_key_t key, long release_ns, unsigned milliseconds,
    size_t *max_pending, uint64_t *cycles)
{
	struct churn *churn = churn_start(hub, key, release_ns, 60);
	size_t max;

	if (churn == NULL)
		return CKVOTS_BACKLOG_SETUP;
	sleep_ms(milliseconds);
	/* Sampled while the churners run, not during the final flush. */
	atomic_store(&churn->stop, 1);
	pthread_join(churn->sampler, NULL);
	churn->sampler_joined = true;
	max = churn->max_pending;
	*max_pending = max;
	return churn_finish(churn, cycles);
}

int
ckvots_flush_during_churn(ckvo_hub_t *hub, ckvo_key_t key, long release_ns, unsigned seconds,
    int *returned_while_churning, uint64_t *missing, uint64_t *cycles)
{
	struct churn *churn = churn_start(hub, key, release_ns, seconds);
	uint64_t removed_before[CHURNERS];
	int status;

	if (churn == NULL)
		return CKVOTS_BACKLOG_SETUP;
	/* Let the backlog build up. */
	sleep_ms(300);
	for (int i = 0; i < CHURNERS; i++)
		removed_before[i] = atomic_load(&churn->churners[i].removed);
	status = ckvo_hub_flush(hub);
	/* Whether the churners were still going (they stop by themselves at the deadline). */
	*returned_while_churning = now_ns() < churn->deadline;
	*missing = 0;
	for (int i = 0; i < CHURNERS; i++) {
		for (uint64_t cycle = 0; cycle < removed_before[i]; cycle++) {
			if (atomic_load(&churn->churners[i].released[cycle]) != 1)
				(*missing)++;
		}
	}
	{
		int result = churn_finish(churn, cycles);

		if (status != CKVO_OK)
			return CKVOTS_BACKLOG_STATUS;
		return result;
	}
}

/* --------------------------------------------- a release per runner kind */

struct cell {
	struct scene *scene;
	_Atomic unsigned int released;
};

#define SCENE_CELLS 128

struct scene {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	int runner;              /* CKVOTS_RUNNER_* */
	pthread_t caller;        /* the thread whose removal or flush should run the releases */
	atomic_int removing;     /* scene_remove is running: the only time a release may act */
	atomic_int acted;        /* the one release that forks or exits did */
	atomic_int in_child;
	atomic_int fork_failed;
	pid_t child;
	ckvo_token_t tokens[SCENE_CELLS];
	struct cell cells[SCENE_CELLS];
	atomic_int caller_done;
};

/*
 * Whether the release runs on the thread the scenario wants as runner, while
 * scene_remove runs. The caller also runs releases afterwards, in the removals
 * and the flush that clean up (for the removal runner, whenever the 64th
 * commit's poll found nothing ready yet: other suites' dispatches keep grace
 * periods open). Acting there would fork from code that does not expect it,
 * and the child would return into the test runner.
 */
static bool
on_wanted_runner(struct scene *scene)
{
	bool caller = pthread_equal(pthread_self(), scene->caller);

	if (!atomic_load(&scene->removing))
		return false;
	return scene->runner == CKVOTS_RUNNER_BACKGROUND ? !caller : caller;
}


static int
scene_observe(struct scene *scene, ckvo_release_t release)
{
	for (int i = 0; i < SCENE_CELLS; i++) {
		scene->cells[i].scene = scene;
		if (ckvo_observe(scene->hub, scene, scene->key, CKVO_OPTION_UNIQUE_CONTEXT, NULL,
		    ignore_change, &scene->cells[i], release, &scene->tokens[i]) != CKVO_OK)
			return CKVOTS_BACKLOG_SETUP;
	}
	return 0;
}

/*
 * Removes the scene's observations so that `scene->runner` runs their
 * releases: a flush of deferred removals, 64 removals whose last commit
 * polls, or 8 removals left to the background thread.
 */
static int
scene_remove(struct scene *scene, int count)
{
	switch (scene->runner) {
	case CKVOTS_RUNNER_FLUSH:
		for (int i = 0; i < count; i++)
			(void)ckvo_unobserve_deferred(scene->hub, scene->tokens[i]);
		return ckvo_hub_flush(scene->hub) == CKVO_OK ? 0 : CKVOTS_BACKLOG_STATUS;
	case CKVOTS_RUNNER_REMOVAL:
		for (int i = 0; i < count; i++)
			(void)ckvo_unobserve(scene->hub, scene->tokens[i]);
		return 0;
	default:
		for (int i = 0; i < count && i < 8; i++)
			(void)ckvo_unobserve(scene->hub, scene->tokens[i]);
		(void)wait_flag(&scene->acted, 5000);
		for (int i = 8; i < count; i++)
			(void)ckvo_unobserve(scene->hub, scene->tokens[i]);
		return 0;
	}
}

/* scene_remove, the one window in which the wanted runner's release acts. */
static int
scene_remove_acting(struct scene *scene, int count)
{
	int result;

	atomic_store(&scene->removing, 1);
	result = scene_remove(scene, count);
	atomic_store(&scene->removing, 0);
	return result;
}

static int
scene_check_once(struct scene *scene)
{
	for (int i = 0; i < SCENE_CELLS; i++) {
		if (atomic_load(&scene->cells[i].released) != 1)
			return CKVOTS_BACKLOG_NOT_ONCE;
	}
	return 0;
}

/* ---------------------------------------------------------- fork in a release */

static struct {
	_Atomic unsigned calls, releases;
} child_counts;

static void
child_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
	atomic_fetch_add(&child_counts.calls, 1);
}

static void
child_release(void *context)
{
	(void)context;
	atomic_fetch_add(&child_counts.releases, 1);
}

/* In the child: the API works, then a flush releases what the forking thread's chunk left. */
static int
child_uses_hub(struct scene *scene)
{
	ckvo_change_t change = { .object = &child_counts, .key = scene->key, .kind = CKVO_KIND_SETTING };
	ckvo_token_t token;

	if (ckvo_observe(scene->hub, &child_counts, scene->key, 0, NULL, child_callback, NULL,
	    child_release, &token) != CKVO_OK)
		return CKVOTS_FORK_CHILD_OBSERVE;
	if (ckvo_did_change(scene->hub, &change) != CKVO_OK)
		return CKVOTS_FORK_CHILD_DISPATCH;
	if (atomic_load(&child_counts.calls) != 1)
		return CKVOTS_FORK_CHILD_CALLS;
	if (ckvo_unobserve(scene->hub, token) != CKVO_OK)
		return CKVOTS_FORK_CHILD_UNOBSERVE;
	return 0;
}

static int
child_finishes(struct scene *scene)
{
	int result = child_uses_hub(scene);
	ckvo_hub_stats_t stats;

	if (result != 0)
		return result;
	for (int i = 0; i < SCENE_CELLS; i++)
		(void)ckvo_unobserve(scene->hub, scene->tokens[i]);
	if (ckvo_hub_flush(scene->hub) != CKVO_OK)
		return CKVOTS_FORK_CHILD_FLUSH;
	if (atomic_load(&child_counts.releases) != 1 || scene_check_once(scene) != 0)
		return CKVOTS_FORK_CHILD_RELEASE;
	if (ckvo_hub_stats(scene->hub, &stats) != CKVO_OK || stats.pending_releases != 0)
		return CKVOTS_FORK_CHILD_RELEASE;
	return 0;
}

/* The background child's last word: run by the surviving thread, still the hub's runner. */
static void
child_final_release(void *context)
{
	struct scene *scene = context;

	if (atomic_load(&child_counts.releases) != 1)
		_exit(CKVOTS_FORK_CHILD_RELEASE);
	(void)scene;
	_exit(0);
}

static void
fork_release(void *context)
{
	struct cell *cell = context;
	struct scene *scene = cell->scene;
	pid_t pid;

	atomic_fetch_add(&cell->released, 1);
	if (!on_wanted_runner(scene) || atomic_exchange(&scene->acted, 1) != 0)
		return;
	pid = fork();
	if (pid < 0) {
		atomic_store(&scene->fork_failed, 1);
		return;
	}
	if (pid != 0) {
		scene->child = pid;
		return;
	}
	atomic_store(&scene->in_child, 1);
	if (scene->runner == CKVOTS_RUNNER_BACKGROUND) {
		/* This thread is the child's only one, inside the hub's background thread's loop. */
		ckvo_token_t token;
		int result = child_uses_hub(scene);

		if (result != 0)
			_exit(result);
		/* Its release is a follow-up of this one: the same thread runs it, after this returns. */
		if (ckvo_observe(scene->hub, &child_counts, scene->key, 0, NULL, ignore_change, scene,
		    child_final_release, &token) != CKVO_OK || ckvo_unobserve(scene->hub, token) != CKVO_OK)
			_exit(CKVOTS_FORK_CHILD_UNOBSERVE);
	}
}

int
ckvots_fork_in_release(ckvo_hub_t *hub, ckvo_key_t key, int runner, unsigned timeout_seconds)
{
	int result = CKVOTS_BACKLOG_NOT_RUN;

	/* The wanted thread runs the releases almost always; a few attempts make it certain. */
	for (int attempt = 0; attempt < 20 && result == CKVOTS_BACKLOG_NOT_RUN; attempt++) {
		struct scene *scene = calloc(1, sizeof(*scene));

		if (scene == NULL)
			return CKVOTS_BACKLOG_SETUP;
		scene->hub = hub;
		scene->key = key;
		scene->runner = runner;
		scene->caller = pthread_self();
		if (scene_observe(scene, fork_release) != 0)
			return CKVOTS_BACKLOG_SETUP;
		result = scene_remove_acting(scene, runner == CKVOTS_RUNNER_REMOVAL ? 64 : SCENE_CELLS);
		if (atomic_load(&scene->in_child))
			_exit(result != 0 ? CKVOTS_FORK_CHILD_FLUSH : child_finishes(scene));
		for (int i = 0; i < SCENE_CELLS; i++)
			(void)ckvo_unobserve(hub, scene->tokens[i]);
		if (ckvo_hub_flush(hub) != CKVO_OK)
			return CKVOTS_BACKLOG_STATUS;
		/* The child has one thread: back in the test runner it would hang or run other tests. */
		if (atomic_load(&scene->in_child))
			_exit(CKVOTS_FORK_CHILD_ESCAPED);
		if (atomic_load(&scene->fork_failed))
			return CKVOTS_FORK_HELPER_FORK;
		if (result == 0)
			result = scene_check_once(scene);
		if (result == 0)
			result = atomic_load(&scene->acted) ? ckvots_wait_child(scene->child, timeout_seconds) :
			    CKVOTS_BACKLOG_NOT_RUN;
		free(scene);
	}
	return result;
}

/* ------------------------------------------------- pthread_exit in a release */

static void
exit_release(void *context)
{
	struct cell *cell = context;
	struct scene *scene = cell->scene;

	atomic_fetch_add(&cell->released, 1);
	if (on_wanted_runner(scene) && atomic_exchange(&scene->acted, 1) == 0)
		pthread_exit(NULL);
}

static void *
exit_caller_main(void *argument)
{
	struct scene *scene = argument;

	scene->caller = pthread_self();
	(void)scene_remove_acting(scene, scene->runner == CKVOTS_RUNNER_REMOVAL ? 64 : SCENE_CELLS);
	atomic_store(&scene->caller_done, 1);
	return scene;
}

static void
count_release(void *context)
{
	atomic_fetch_add((atomic_int *)context, 1);
}

int
ckvots_exit_in_release(ckvo_hub_t *hub, ckvo_key_t key, int runner)
{
	int result = CKVOTS_BACKLOG_NOT_RUN;

	for (int attempt = 0; attempt < 20 && result == CKVOTS_BACKLOG_NOT_RUN; attempt++) {
		struct scene *scene = calloc(1, sizeof(*scene));
		atomic_int later = 0;
		ckvo_token_t token;
		int object;
		pthread_t thread;

		if (scene == NULL)
			return CKVOTS_BACKLOG_SETUP;
		scene->hub = hub;
		scene->key = key;
		scene->runner = runner;
		if (scene_observe(scene, exit_release) != 0)
			return CKVOTS_BACKLOG_SETUP;
		if (runner == CKVOTS_RUNNER_BACKGROUND) {
			scene->caller = pthread_self();
			(void)exit_caller_main(scene);
		} else {
			if (pthread_create(&thread, NULL, exit_caller_main, scene) != 0)
				return CKVOTS_BACKLOG_SETUP;
			pthread_join(thread, NULL);
		}
		/* Whatever the exited thread had not removed, and a flush that must not wait for it. */
		for (int i = 0; i < SCENE_CELLS; i++)
			(void)ckvo_unobserve(hub, scene->tokens[i]);
		if (ckvo_hub_flush(hub) != CKVO_OK)
			return CKVOTS_BACKLOG_STATUS;
		result = scene_check_once(scene);
		if (result == 0 && !atomic_load(&scene->acted))
			result = CKVOTS_BACKLOG_NOT_RUN;
		if (result == 0 && scene->runner != CKVOTS_RUNNER_BACKGROUND &&
		    atomic_load(&scene->caller_done))
			result = CKVOTS_BACKLOG_NOT_RUN;
		/* Later work is released with no further call (the background thread lives on). */
		if (result == 0 &&
		    (ckvo_observe(hub, &object, key, 0, NULL, ignore_change, &later, count_release, &token) != CKVO_OK ||
		    ckvo_unobserve_deferred(hub, token) != CKVO_OK))
			result = CKVOTS_BACKLOG_STATUS;
		if (result == 0 && !wait_flag(&later, 10000))
			result = CKVOTS_BACKLOG_NOT_PROMPT;
		free(scene);
	}
	return result;
}

/* ------------------------------------------- pthread_cancel inside a flush */

struct cancel {
	ckvo_hub_t *hub;
	ckvo_key_t key;
	atomic_int holding;     /* the blocker (a release or a callback) has begun */
	atomic_int let_go;
	atomic_int flushing;    /* the cancelled thread is about to flush */
	atomic_int released;
	atomic_int blocker_released;
	ckvo_token_t blocker, plain;
	int flush_status;
};

static void
hold(struct cancel *cancel)
{
	atomic_store(&cancel->holding, 1);
	while (!atomic_load(&cancel->let_go))
		sched_yield();
}

static void
blocker_release(void *context)
{
	struct cancel *cancel = context;

	atomic_fetch_add(&cancel->blocker_released, 1);
	hold(cancel);
}

static void
blocker_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	hold(context);
}

static void *
runner_main(void *argument)
{
	struct cancel *cancel = argument;

	/* Becomes the runner and stays inside the blocker's release. */
	(void)ckvo_unobserve(cancel->hub, cancel->blocker);
	(void)ckvo_hub_flush(cancel->hub);
	return NULL;
}

static void *
dispatcher_main(void *argument)
{
	struct cancel *cancel = argument;
	ckvo_change_t change = { .object = cancel, .key = cancel->key, .kind = CKVO_KIND_SETTING };

	(void)ckvo_did_change(cancel->hub, &change);
	return NULL;
}

static void *
cancelled_main(void *argument)
{
	struct cancel *cancel = argument;

	(void)ckvo_unobserve(cancel->hub, cancel->plain);
	atomic_store(&cancel->flushing, 1);
	cancel->flush_status = ckvo_hub_flush(cancel->hub);
	/* Reached when the flush is not a cancellation point: the cancel acts here. */
	for (;;)
		pthread_testcancel();
	return NULL;
}

int
ckvots_cancel_in_flush(ckvo_hub_t *hub, ckvo_key_t key, int where)
{
	struct cancel *cancel = calloc(1, sizeof(*cancel));
	pthread_t blocker, cancelled;
	void *result;
	int status = 0;

	if (cancel == NULL)
		return CKVOTS_BACKLOG_SETUP;
	cancel->hub = hub;
	cancel->key = key;
	cancel->flush_status = 1;
	if (where == CKVOTS_CANCEL_WAITING_FOR_RUNNER) {
		if (ckvo_observe(hub, cancel, key, 0, NULL, ignore_change, cancel, blocker_release,
		    &cancel->blocker) != CKVO_OK)
			return CKVOTS_BACKLOG_SETUP;
	} else if (ckvo_observe(hub, cancel, key, 0, NULL, blocker_callback, cancel, NULL,
	    &cancel->blocker) != CKVO_OK) {
		return CKVOTS_BACKLOG_SETUP;
	}
	if (ckvo_observe(hub, &cancel->plain, key, 0, NULL, ignore_change, &cancel->released,
	    count_release, &cancel->plain) != CKVO_OK)
		return CKVOTS_BACKLOG_SETUP;
	if (pthread_create(&blocker, NULL,
	    where == CKVOTS_CANCEL_WAITING_FOR_RUNNER ? runner_main : dispatcher_main, cancel) != 0)
		return CKVOTS_BACKLOG_SETUP;
	if (!wait_flag(&cancel->holding, 10000))
		return CKVOTS_BACKLOG_SETUP;
	if (pthread_create(&cancelled, NULL, cancelled_main, cancel) != 0)
		return CKVOTS_BACKLOG_SETUP;
	(void)wait_flag(&cancel->flushing, 10000);
	/* Time to block in the wait (the cancel is pending until then otherwise: the same case). */
	sleep_ms(100);
	pthread_cancel(cancelled);
	sleep_ms(50);
	atomic_store(&cancel->let_go, 1);
	pthread_join(cancelled, &result);
	pthread_join(blocker, NULL);

	/* The hub works on: a writer, a flush, and both releases ran once. */
	if (where == CKVOTS_CANCEL_IN_GRACE_PERIOD)
		(void)ckvo_unobserve(hub, cancel->blocker);
	if (ckvo_hub_flush(hub) != CKVO_OK)
		status = CKVOTS_BACKLOG_STATUS;
	else if (atomic_load(&cancel->released) != 1 ||
	    (where == CKVOTS_CANCEL_WAITING_FOR_RUNNER && atomic_load(&cancel->blocker_released) != 1))
		status = CKVOTS_BACKLOG_NOT_ONCE;
	else if (result != PTHREAD_CANCELED)
		status = CKVOTS_BACKLOG_STATUS;
	else if (cancel->flush_status != CKVO_OK)
		status = CKVOTS_BACKLOG_CANCELLED_INSIDE;
	free(cancel);
	return status;
}
