/*
 * counters.c — where the engine's growing counters start (counters.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool near_end;

static void
read_environment(void)
{
	const char *value = getenv("CKVO_COUNTERS_NEAR_END");

	near_end = value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

uint64_t
ckvo__counter_start(uint64_t natural)
{
	(void)pthread_once(&once, read_environment);
	return near_end ? natural - CKVO_COUNTERS_NEAR_END_SPAN : natural;
}
