/* clock.c — the process-wide event clock (see csoak.h). */
#include <stdatomic.h>

#include "csoak.h"

static _Atomic uint64_t now;

uint64_t
csoak_clock_next(void)
{
	/* seq_cst: one total order of ticks that agrees with happens-before. */
	return atomic_fetch_add(&now, 1) + 1;
}
