/* perfcheck.c — see include/perfcheck.h. */
#include "perfcheck.h"

#include <SwiftKVOTestSupport.h>

static long perfcheck_count;

__attribute__((noinline)) long
perfcheck_measure(perfcheck_body_t body, void *context, long iterations)
{
	if (!skvo_alloc_counting_supported()) {
		body(context, iterations);
		return -1;
	}
	skvo_alloc_begin();
	body(context, iterations);
	return skvo_alloc_end();
}

void perfcheck_tick(void) { perfcheck_count++; }

long perfcheck_take_count(void)
{
	long count = perfcheck_count;
	perfcheck_count = 0;
	return count;
}

void perfcheck_ckvo_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
	perfcheck_tick();
}
