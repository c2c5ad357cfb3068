/*
 * malloc_counter.c — see include/SwiftKVOTestSupport.h.
 *
 * Counting is per thread (a __thread counter and flag), so allocations made
 * concurrently by other tests' threads never disturb a measurement.
 */
#include "SwiftKVOTestSupport.h"

#include <errno.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SKVO_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SKVO_SANITIZED 1
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(SKVO_SANITIZED)

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static __thread long skvo_count;
static __thread int skvo_counting;

#define SKVO_COUNT()                                                           \
	do {                                                                   \
		if (skvo_counting)                                             \
			skvo_count++;                                          \
	} while (0)

void *malloc(size_t size)
{
	SKVO_COUNT();
	return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
	SKVO_COUNT();
	return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size)
{
	SKVO_COUNT();
	return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size)
{
	SKVO_COUNT();
	return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
	SKVO_COUNT();
	return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size)
{
	SKVO_COUNT();
	void *pointer = __libc_memalign(alignment, size);
	if (pointer == NULL)
		return ENOMEM;
	*result = pointer;
	return 0;
}

bool skvo_alloc_counting_supported(void) { return true; }

void skvo_alloc_begin(void)
{
	skvo_count = 0;
	skvo_counting = 1;
}

long skvo_alloc_end(void)
{
	skvo_counting = 0;
	return skvo_count;
}

#else

bool skvo_alloc_counting_supported(void) { return false; }
void skvo_alloc_begin(void) {}
long skvo_alloc_end(void) { return 0; }

#endif
