/* threads.c — run a body on N raw pthreads released together, or on one with a deadline. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckvo_test_support.h"

struct worker {
	unsigned index;
	ckvots_thread_body_t body;
	void *arg;
	ckvots_barrier_t *barrier;
};

static void *
worker_main(void *p)
{
	struct worker *worker = p;
	ckvots_barrier_wait(worker->barrier);
	worker->body(worker->index, worker->arg);
	return NULL;
}

int
ckvots_run_threads(unsigned count, ckvots_thread_body_t body, void *arg)
{
	if (count == 0)
		return 0;
	struct worker *workers = calloc(count, sizeof(*workers));
	pthread_t *threads = calloc(count, sizeof(*threads));
	/* One extra party: this thread, so nobody starts unless every thread exists. */
	ckvots_barrier_t *barrier = ckvots_barrier_create(count + 1);
	if (workers == NULL || threads == NULL || barrier == NULL) {
		free(workers);
		free(threads);
		ckvots_barrier_destroy(barrier);
		return ENOMEM;
	}

	for (unsigned i = 0; i < count; i++) {
		workers[i] = (struct worker){ i, body, arg, barrier };
		int error = pthread_create(&threads[i], NULL, worker_main, &workers[i]);
		if (error != 0) {
			/* The threads already started wait at a barrier that can no
			 * longer fill: there is no clean way back, so stop loudly. */
			fprintf(stderr, "ckvots_run_threads: pthread_create: %s\n", strerror(error));
			abort();
		}
	}
	ckvots_barrier_wait(barrier);
	for (unsigned i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	ckvots_barrier_destroy(barrier);
	free(workers);
	free(threads);
	return 0;
}

struct timed {
	ckvots_thread_body_t body;
	void *arg;
	_Atomic int done;
};

static void *
timed_main(void *p)
{
	struct timed *timed = p;
	timed->body(0, timed->arg);
	atomic_store(&timed->done, 1);
	return NULL;
}

int
ckvots_run_with_timeout(ckvots_thread_body_t body, void *arg, unsigned seconds)
{
	struct timed *timed = calloc(1, sizeof(*timed));
	if (timed == NULL)
		return ENOMEM;
	timed->body = body;
	timed->arg = arg;
	atomic_init(&timed->done, 0);

	pthread_t thread;
	int error = pthread_create(&thread, NULL, timed_main, timed);
	if (error != 0) {
		free(timed);
		return error;
	}
	/* Polls `done` rather than timing anything: the deadline only turns a
	 * hang into a failed test instead of a stuck test run. */
	struct timespec step = { 0, 1000000 }; /* 1 ms */
	for (unsigned long waited = 0; waited < (unsigned long)seconds * 1000; waited++) {
		if (atomic_load(&timed->done)) {
			pthread_join(thread, NULL);
			free(timed);
			return 0;
		}
		nanosleep(&step, NULL);
	}
	if (atomic_load(&timed->done)) {
		pthread_join(thread, NULL);
		free(timed);
		return 0;
	}
	pthread_detach(thread); /* `timed` is leaked on purpose: the thread still uses it */
	return ETIMEDOUT;
}
