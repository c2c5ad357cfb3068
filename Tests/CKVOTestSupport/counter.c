/* counter.c — a sequentially consistent atomic counter shared between threads. */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct ckvots_counter {
	_Atomic uint64_t value;
};

ckvots_counter_t *
ckvots_counter_create(void)
{
	ckvots_counter_t *counter = calloc(1, sizeof(*counter));
	if (counter != NULL)
		atomic_init(&counter->value, 0);
	return counter;
}

void
ckvots_counter_destroy(ckvots_counter_t *counter)
{
	free(counter);
}

uint64_t
ckvots_counter_add(ckvots_counter_t *counter, uint64_t delta)
{
	/* seq_cst: the values form one total order that agrees with happens-before,
	 * which is what the concurrency tests use to order events across threads. */
	return atomic_fetch_add(&counter->value, delta) + delta;
}

uint64_t
ckvots_counter_next(ckvots_counter_t *counter)
{
	return ckvots_counter_add(counter, 1);
}

uint64_t
ckvots_counter_load(const ckvots_counter_t *counter)
{
	return atomic_load(&((ckvots_counter_t *)counter)->value);
}

void
ckvots_counter_store(ckvots_counter_t *counter, uint64_t value)
{
	atomic_store(&counter->value, value);
}
