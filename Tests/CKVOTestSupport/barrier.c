/* barrier.c — release N threads together, so they contend from the first instruction. */
#include <pthread.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct ckvots_barrier {
	pthread_barrier_t barrier;
};

ckvots_barrier_t *
ckvots_barrier_create(unsigned count)
{
	ckvots_barrier_t *barrier = malloc(sizeof(*barrier));
	if (barrier == NULL)
		return NULL;
	if (pthread_barrier_init(&barrier->barrier, NULL, count == 0 ? 1 : count) != 0) {
		free(barrier);
		return NULL;
	}
	return barrier;
}

void
ckvots_barrier_destroy(ckvots_barrier_t *barrier)
{
	if (barrier == NULL)
		return;
	pthread_barrier_destroy(&barrier->barrier);
	free(barrier);
}

void
ckvots_barrier_wait(ckvots_barrier_t *barrier)
{
	pthread_barrier_wait(&barrier->barrier);
}
