/* backlog.c — how long the slowest ckvo_unobserve took (see csoak.h). */
#include <stdatomic.h>
#include <time.h>

#include "csoak.h"

static _Atomic uint64_t slowest;

static uint64_t
monotonic_ns(void)
{
	struct timespec now;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

ckvo_status_t
csoak_unobserve_timed(ckvo_hub_t *hub, ckvo_token_t token)
{
	uint64_t start = monotonic_ns();
	ckvo_status_t status = ckvo_unobserve(hub, token);
	uint64_t took = monotonic_ns() - start, seen = atomic_load(&slowest);

	while (took > seen && !atomic_compare_exchange_weak(&slowest, &seen, took))
		;
	return status;
}

uint64_t
csoak_unobserve_slowest_ns(void)
{
	return atomic_load(&slowest);
}
