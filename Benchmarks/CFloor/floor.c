/*
 * floor.c — the C floor: an array of function pointers called by a C loop.
 * This is the cost of a notification with no machinery at all; every other
 * peer is compared against it.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "cbench.h"

__thread uint64_t cbench_tls_count __attribute__((tls_model("initial-exec")));

uint64_t cbench_take_count(void)
{
	uint64_t count = cbench_tls_count;
	cbench_tls_count = 0;
	return count;
}

void cbench_tick_callback(void *context)
{
	(void)context;
	cbench_tick();
}

struct cbench_observer {
	cbench_fn_t fn;
	void *context;
	uint64_t id;
};

struct cbench_subject {
	/* Written by every setter: kept off the observers' cache line. */
	_Alignas(64) int64_t value;
	_Alignas(64) struct cbench_observer *observers;
	size_t count;
	size_t capacity;
	uint64_t next_id;
};

cbench_subject_t *cbench_subject_create(void)
{
	cbench_subject_t *subject = aligned_alloc(64, sizeof(*subject));
	if (subject == NULL)
		return NULL;
	memset(subject, 0, sizeof(*subject));
	subject->next_id = 1;
	return subject;
}

void cbench_subject_destroy(cbench_subject_t *subject)
{
	if (subject == NULL)
		return;
	free(subject->observers);
	free(subject);
}

int cbench_subject_observe(cbench_subject_t *subject, cbench_fn_t fn, void *context, uint64_t *id)
{
	if (subject->count == subject->capacity) {
		size_t capacity = subject->capacity ? subject->capacity * 2 : 4;
		struct cbench_observer *grown =
		    realloc(subject->observers, capacity * sizeof(*grown));
		if (grown == NULL)
			return -1;
		subject->observers = grown;
		subject->capacity = capacity;
	}
	struct cbench_observer *slot = &subject->observers[subject->count++];
	slot->fn = fn;
	slot->context = context;
	slot->id = subject->next_id++;
	if (id != NULL)
		*id = slot->id;
	return 0;
}

int cbench_subject_unobserve(cbench_subject_t *subject, uint64_t id)
{
	for (size_t i = 0; i < subject->count; i++) {
		if (subject->observers[i].id == id) {
			memmove(&subject->observers[i], &subject->observers[i + 1],
			    (subject->count - i - 1) * sizeof(subject->observers[0]));
			subject->count--;
			return 0;
		}
	}
	return -1;
}

size_t cbench_subject_count(const cbench_subject_t *subject) { return subject->count; }

void cbench_subject_set(cbench_subject_t *subject, int64_t value)
{
	__atomic_store_n(&subject->value, value, __ATOMIC_RELAXED);
	const struct cbench_observer *observers = subject->observers;
	size_t count = subject->count;
	for (size_t i = 0; i < count; i++)
		observers[i].fn(observers[i].context);
}

void cbench_subject_set_loop(cbench_subject_t *subject, size_t iterations)
{
	for (size_t i = 0; i < iterations; i++)
		cbench_subject_set(subject, (int64_t)i);
}

void cbench_subjects_round_robin(cbench_subject_t *const *subjects, size_t count, size_t start,
    size_t iterations)
{
	size_t index = start % count;
	for (size_t i = 0; i < iterations; i++) {
		cbench_subject_set(subjects[index], (int64_t)i);
		if (++index == count)
			index = 0;
	}
}

size_t cbench_heap_in_use(void)
{
	struct mallinfo2 info = mallinfo2();
	return info.uordblks + info.hblkhd;
}
