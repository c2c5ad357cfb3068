/* recorder.c — a mutex-protected, append-only log of delivered changes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckvo_test_support.h"

#define RECORDED_INDEXES_MAX 64

struct entry {
	ckvots_event_t event;
	size_t indexes[RECORDED_INDEXES_MAX];
};

struct ckvots_recorder {
	pthread_mutex_t lock;
	struct entry *entries;
	size_t count;
	size_t capacity;
};

uint64_t
ckvots_thread_id(void)
{
	return (uint64_t)(uintptr_t)pthread_self();
}

ckvots_recorder_t *
ckvots_recorder_create(void)
{
	ckvots_recorder_t *recorder = calloc(1, sizeof(*recorder));
	if (recorder != NULL)
		pthread_mutex_init(&recorder->lock, NULL);
	return recorder;
}

void
ckvots_recorder_destroy(ckvots_recorder_t *recorder)
{
	if (recorder == NULL)
		return;
	pthread_mutex_destroy(&recorder->lock);
	free(recorder->entries);
	free(recorder);
}

void
ckvots_recorder_append(ckvots_recorder_t *recorder, uint64_t probe_id, const ckvo_change_t *change)
{
	struct entry entry;
	memset(&entry, 0, sizeof(entry));
	entry.event.probe_id = probe_id;
	entry.event.thread = ckvots_thread_id();
	entry.event.object = change->object;
	entry.event.old_value = change->old_value;
	entry.event.new_value = change->new_value;
	entry.event.index_count = change->index_count;
	entry.event.key = change->key;
	entry.event.kind = change->kind;
	entry.event.is_prior = change->is_prior;
	entry.event.is_initial = change->is_initial;
	entry.event.indexes_present = change->indexes != NULL;
	if (change->indexes != NULL) {
		size_t n = change->index_count < RECORDED_INDEXES_MAX ? change->index_count
								      : RECORDED_INDEXES_MAX;
		memcpy(entry.indexes, change->indexes, n * sizeof(size_t));
	}

	pthread_mutex_lock(&recorder->lock);
	if (recorder->count == recorder->capacity) {
		size_t capacity = recorder->capacity == 0 ? 64 : recorder->capacity * 2;
		struct entry *grown = realloc(recorder->entries, capacity * sizeof(*grown));
		if (grown == NULL) {
			pthread_mutex_unlock(&recorder->lock);
			abort(); /* a test helper out of memory: nothing sensible to report */
		}
		recorder->entries = grown;
		recorder->capacity = capacity;
	}
	recorder->entries[recorder->count++] = entry;
	pthread_mutex_unlock(&recorder->lock);
}

size_t
ckvots_recorder_count(ckvots_recorder_t *recorder)
{
	pthread_mutex_lock(&recorder->lock);
	size_t count = recorder->count;
	pthread_mutex_unlock(&recorder->lock);
	return count;
}

bool
ckvots_recorder_event(ckvots_recorder_t *recorder, size_t i, ckvots_event_t *event)
{
	bool found = false;
	pthread_mutex_lock(&recorder->lock);
	if (i < recorder->count) {
		*event = recorder->entries[i].event;
		found = true;
	}
	pthread_mutex_unlock(&recorder->lock);
	return found;
}

size_t
ckvots_recorder_indexes(ckvots_recorder_t *recorder, size_t i, size_t *out, size_t capacity)
{
	size_t recorded = 0;
	pthread_mutex_lock(&recorder->lock);
	if (i < recorder->count) {
		const struct entry *entry = &recorder->entries[i];
		if (entry->event.indexes_present) {
			recorded = entry->event.index_count < RECORDED_INDEXES_MAX
			    ? entry->event.index_count
			    : RECORDED_INDEXES_MAX;
		}
		memcpy(out, entry->indexes, (recorded < capacity ? recorded : capacity) * sizeof(size_t));
	}
	pthread_mutex_unlock(&recorder->lock);
	return recorded;
}

void
ckvots_recorder_clear(ckvots_recorder_t *recorder)
{
	pthread_mutex_lock(&recorder->lock);
	recorder->count = 0;
	pthread_mutex_unlock(&recorder->lock);
}
