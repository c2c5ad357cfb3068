/*
 * reader.h — entering and leaving an epoch read section: the inlined fast
 * path of the epoch part (epoch.c keeps the records and scans them).
 */
#ifndef CKVO_READER_H
#define CKVO_READER_H

#include "epoch.h"

/* This thread's reader record, or NULL when out of memory. */
static inline ck_epoch_record_t *
ckvo__thread_record(void)
{
	ck_epoch_record_t *record = ckvo__thread.record;

	if (CKVO_LIKELY(record != NULL))
		return record;
	return ckvo__thread_record_slow();
}

/* True inside any epoch read section on this thread (inside a callback). */
static inline bool
ckvo__in_read_section(void)
{
	ck_epoch_record_t *record = ckvo__thread.record;

	return record != NULL && ck_pr_load_uint(&record->active) != 0;
}

/* Enters a read section (the caller checked the record exists). */
static inline void
ckvo__read_begin(ck_epoch_record_t *record)
{
	if (!ckvo__asymmetric_fence) {
		ck_epoch_begin(record, NULL);
		/*
		 * Orders the load of the global epoch inside ck_epoch_begin
		 * before the section's loads (free under TSO). A scan may see
		 * `active` set with a stale epoch, before this reader stores the
		 * one it loaded; if that one came from a newer advance, the
		 * section's loads must see what was unpublished before that
		 * advance, or a later scan would take the reader for settled in
		 * the new epoch while it holds something retired before.
		 */
		ck_pr_fence_load();
		return;
	}

	/*
	 * ck_epoch_begin without its store-load fence. A scan issues
	 * membarrier(2) first: every store made here before that barrier is
	 * then visible to the scan, and every load made here after it sees
	 * what was unpublished before it (the argument of liburcu's "memb"
	 * flavour).
	 */
	if (record->active == 0) {
		ck_pr_store_uint(&record->active, 1);
		ck_pr_barrier();
		/* Every reader record belongs to ckvo__epoch: one load, not two. */
		ck_pr_store_uint(&record->epoch, ck_pr_load_uint(&ckvo__epoch.epoch));
	} else {
		ck_pr_store_uint(&record->active, record->active + 1);
	}
}

/* Leaves a read section. */
static inline void
ckvo__read_end(ck_epoch_record_t *record)
{
	/* Everything this reader did happens before frees that wait for it. */
	CKVO_TSAN_RELEASE(&ckvo__epoch);
	ck_epoch_end(record, NULL);
}

#endif /* CKVO_READER_H */
