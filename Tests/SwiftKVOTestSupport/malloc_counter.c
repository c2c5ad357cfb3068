/*
 * malloc_counter.c — see include/SwiftKVOTestSupport.h.
 *
 * Counting is per thread (a __thread counter and flag), so allocations made
 * concurrently by other tests' threads never disturb a measurement. The
 * byte ledger is process-wide: it is for a test running alone in a child.
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

#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *pointer);
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

/*
 * The byte ledger: while armed, every block allocated on any thread is
 * recorded with the size asked for, in an open-addressing table of its own
 * (mmap'd, so it never calls malloc), and leaves it when freed, on any
 * thread. Blocks allocated before it was armed are never counted.
 */
#define LEDGER_BITS 21
#define LEDGER_SIZE (1ul << LEDGER_BITS)

struct ledger_entry {
	uintptr_t pointer; /* 0: empty */
	size_t size;
};

static struct ledger_entry *ledger_table;
static atomic_int ledger_armed;
static atomic_long ledger_entries; /* blocks recorded and not freed */
static atomic_flag ledger_lock = ATOMIC_FLAG_INIT;
static long ledger_live;           /* their bytes (under ledger_lock) */
static long ledger_lost;           /* blocks not recorded: the table was full */

static size_t
ledger_home(uintptr_t pointer)
{
	uint64_t x = (uint64_t)pointer * 0x9e3779b97f4a7c15ULL;

	return (size_t)(x >> (64 - LEDGER_BITS));
}

static void
ledger_add(void *pointer, size_t size)
{
	size_t i;

	if (pointer == NULL || !atomic_load_explicit(&ledger_armed, memory_order_relaxed))
		return;
	while (atomic_flag_test_and_set_explicit(&ledger_lock, memory_order_acquire))
		;
	if ((size_t)atomic_load(&ledger_entries) * 2 >= LEDGER_SIZE) {
		ledger_lost++;
	} else {
		for (i = ledger_home((uintptr_t)pointer); ledger_table[i].pointer != 0;
		    i = (i + 1) & (LEDGER_SIZE - 1))
			;
		ledger_table[i].pointer = (uintptr_t)pointer;
		ledger_table[i].size = size;
		ledger_live += (long)size;
		atomic_fetch_add(&ledger_entries, 1);
	}
	atomic_flag_clear_explicit(&ledger_lock, memory_order_release);
}

static void
ledger_remove(void *pointer)
{
	size_t i, hole;

	if (pointer == NULL || atomic_load_explicit(&ledger_entries, memory_order_relaxed) == 0)
		return;
	while (atomic_flag_test_and_set_explicit(&ledger_lock, memory_order_acquire))
		;
	for (i = ledger_home((uintptr_t)pointer); ledger_table[i].pointer != 0 &&
	    ledger_table[i].pointer != (uintptr_t)pointer; i = (i + 1) & (LEDGER_SIZE - 1))
		;
	if (ledger_table[i].pointer != 0) {
		ledger_live -= (long)ledger_table[i].size;
		atomic_fetch_sub(&ledger_entries, 1);
		/* Backward-shift deletion: later members of the cluster stay reachable. */
		hole = i;
		for (i = (i + 1) & (LEDGER_SIZE - 1); ledger_table[i].pointer != 0;
		    i = (i + 1) & (LEDGER_SIZE - 1)) {
			size_t home = ledger_home(ledger_table[i].pointer);

			if (((i - home) & (LEDGER_SIZE - 1)) >= ((i - hole) & (LEDGER_SIZE - 1))) {
				ledger_table[hole] = ledger_table[i];
				hole = i;
			}
		}
		ledger_table[hole].pointer = 0;
	}
	atomic_flag_clear_explicit(&ledger_lock, memory_order_release);
}

/* Plain loads: off the ledger, each call costs a load and a branch, then a tail call. */
#define LEDGER_ARMED() __builtin_expect(atomic_load_explicit(&ledger_armed, memory_order_relaxed), 0)
#define LEDGER_IN_USE() \
	__builtin_expect(atomic_load_explicit(&ledger_entries, memory_order_relaxed) != 0, 0)

void *malloc(size_t size)
{
	SKVO_COUNT();
	if (!LEDGER_ARMED())
		return __libc_malloc(size);
	void *pointer = __libc_malloc(size);
	ledger_add(pointer, size);
	return pointer;
}

void free(void *pointer)
{
	if (LEDGER_IN_USE())
		ledger_remove(pointer);
	__libc_free(pointer);
}

void *calloc(size_t count, size_t size)
{
	SKVO_COUNT();
	if (!LEDGER_ARMED())
		return __libc_calloc(count, size);
	void *pointer = __libc_calloc(count, size);
	ledger_add(pointer, count * size);
	return pointer;
}

void *realloc(void *pointer, size_t size)
{
	SKVO_COUNT();
	if (LEDGER_IN_USE())
		ledger_remove(pointer);
	if (!LEDGER_ARMED())
		return __libc_realloc(pointer, size);
	void *moved = __libc_realloc(pointer, size);
	/* A failed realloc keeps the old block, which leaves the ledger (never while armed here). */
	ledger_add(moved, size);
	return moved;
}

void *memalign(size_t alignment, size_t size)
{
	SKVO_COUNT();
	void *pointer = __libc_memalign(alignment, size);
	ledger_add(pointer, size);
	return pointer;
}

void *aligned_alloc(size_t alignment, size_t size)
{
	SKVO_COUNT();
	void *pointer = __libc_memalign(alignment, size);
	ledger_add(pointer, size);
	return pointer;
}

int posix_memalign(void **result, size_t alignment, size_t size)
{
	SKVO_COUNT();
	void *pointer = __libc_memalign(alignment, size);
	if (pointer == NULL)
		return ENOMEM;
	ledger_add(pointer, size);
	*result = pointer;
	return 0;
}

bool skvo_ledger_begin(void)
{
	if (ledger_table == NULL) {
		void *table = mmap(NULL, LEDGER_SIZE * sizeof(*ledger_table), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (table == MAP_FAILED)
			return false;
		ledger_table = table;
	}
	atomic_store(&ledger_armed, 1);
	return true;
}

long skvo_ledger_bytes(void)
{
	long live;

	while (atomic_flag_test_and_set_explicit(&ledger_lock, memory_order_acquire))
		;
	live = ledger_lost != 0 ? -1 : ledger_live;
	atomic_flag_clear_explicit(&ledger_lock, memory_order_release);
	return live;
}

void skvo_ledger_end(void)
{
	atomic_store(&ledger_armed, 0);
	while (atomic_flag_test_and_set_explicit(&ledger_lock, memory_order_acquire))
		;
	for (size_t i = 0; i < LEDGER_SIZE; i++)
		ledger_table[i].pointer = 0;
	atomic_store(&ledger_entries, 0);
	ledger_live = 0;
	ledger_lost = 0;
	atomic_flag_clear_explicit(&ledger_lock, memory_order_release);
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
bool skvo_ledger_begin(void) { return false; }
long skvo_ledger_bytes(void) { return -1; }
void skvo_ledger_end(void) {}

#endif
