/* memory.c — resident set size and heap trimming for the soak's memory check. */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "csoak.h"

size_t
csoak_resident_bytes(void)
{
	unsigned long size = 0, resident = 0;
	long page = sysconf(_SC_PAGESIZE);
	FILE *statm = fopen("/proc/self/statm", "r");

	if (statm == NULL)
		return 0;
	if (fscanf(statm, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(statm);
	return page > 0 ? (size_t)resident * (size_t)page : 0;
}

void
csoak_trim_heap(void)
{
	malloc_trim(0);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define CSOAK_SANITIZED_ 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CSOAK_SANITIZED_ 1
#endif

bool
csoak_sanitized(void)
{
#ifdef CSOAK_SANITIZED_
	return true;
#else
	return false;
#endif
}
