/*
 * epoch.c — the epoch part: the process-wide epoch, each thread's reader
 * record, scans of the records, and the limbo where retired entries wait
 * for their grace period. It knows nothing of hubs: an owner (a hub's
 * writer session) retires entries into its own limbo, polls it, and gets
 * back what no reader can hold any more.
 *
 * Invariants it alone keeps
 * -------------------------
 * - One ck_epoch_t for the whole process. Every thread that reads gets one
 *   reader record, registered on first use and kept in a thread-local
 *   pointer (initial-exec TLS: no lookup call on the dispatch path). A
 *   pthread key destructor unregisters it when the thread exits, so
 *   ck_epoch_recycle hands it to the next new thread: short-lived threads do
 *   not grow the record list.
 * - Reader records never defer work (ck_epoch_call), and neither does
 *   anything else: owners keep their retired entries in their limbo and ask
 *   ckvo__epoch_scan whether readers have moved on. Nothing calls
 *   ck_epoch_poll or ck_epoch_synchronize, so every scan of the records in
 *   the process is the one below, and the global epoch advances only there.
 * - ck_epoch_unregister clears `active`, so a thread that exits inside a
 *   callback (pthread_exit from a callback) does not block grace periods.
 * - After fork() only the forking thread exists in the child. Records of the
 *   other threads may be marked active forever; the child unregisters them.
 * - Readers enter a section in one of two ways, chosen once per process:
 *   where the kernel offers private expedited membarrier(2), with plain
 *   stores (ckvo__read_begin, reader.h); elsewhere, or when the environment
 *   variable CKVO_FENCED_READERS is set to a non-empty value other than "0",
 *   with ck_epoch_begin, whose store-load fence orders `active` before the
 *   reader's loads.
 * - Every scan begins with a full fence on the scanning thread and, in the
 *   plain-store mode, with membarrier(2), which runs a full barrier on every
 *   CPU executing a thread of this process. Take any reader and the point
 *   where that barrier hit it: its section-entry stores made before the point
 *   are visible to the scan that follows; its loads made after the point see
 *   every store the scanner's thread could see when it issued the barrier,
 *   in particular every unpublication that happened before the scan (the
 *   owner of a limbo orders its unpublications before its own polls). So a
 *   reader that still holds something unpublished before the scan is seen
 *   active by the scan, with the epoch it entered in. One barrier per scan:
 *   a scan never relies on a barrier issued before an earlier scan.
 *
 * The limbo
 * ---------
 * - Memory a reader may reach is never freed directly. Its owner makes it
 *   unreachable from everything published, then retires it: pushes it on
 *   limbo->fresh. A value whose use readers may still hold (a parcel: an
 *   observation record) is retired the same way and handed back instead of
 *   freed. Entries move fresh -> aged -> ready only in ckvo__limbo_poll, by
 *   what one scan of the reader records found:
 *     IDLE     no reader in a section: fresh and aged are ready;
 *     SETTLED  every reader in a section entered in the current epoch (the
 *              scan then advanced it): aged is ready, fresh becomes aged;
 *     BUSY     nothing moves.
 * - Why a ready entry is unreachable. Every scan is preceded by its own
 *   barrier (above), issued after the entry's retirement (the owner
 *   serializes its retirements before its polls). A reader whose section
 *   began before that barrier took effect on its CPU is visible to the scan,
 *   active, with the epoch it entered in; a reader whose section began after
 *   it sees the entry unpublished and cannot reach it. IDLE: no reader is
 *   visible, so none can hold the entry. Two SETTLED scans S1, S2 after the
 *   retirement (fresh at S1, aged at S2): every reader holding the entry was
 *   visible at S1 with S1's epoch e. (S1 may read a stale epoch from the
 *   record of a reader that has set `active` but not yet stored the epoch it
 *   loaded. If that epoch is e or older, S2 below still finds it. If newer,
 *   the reader loaded it from an advance made after S1 read e, so after the
 *   entry was unpublished everywhere, and its section's loads come after
 *   that load (ckvo__read_begin): it cannot hold the entry.) S1 left the
 *   epoch at e + 1 or later, and S2, which comes later, read a newer epoch,
 *   so such a reader, still in the same section, would have made S2 BUSY.
 *   Nothing here relies on a scan, a barrier or an epoch advance made by
 *   another thread before the retirement, which ck_epoch_poll_deferred and
 *   ck_epoch_synchronize do (they free by epoch number; an advance made by a
 *   scan whose barrier preceded the retirement could free an entry under a
 *   reader whose section-entry store was still in its store buffer).
 * - A waiter (ckvo__grace_wait) applies the same rule to what it detached
 *   before the call: one IDLE or two SETTLED scans, all after the detach.
 * - Ready memory is freed by whoever took it, once it has dropped its
 *   locks (ckvo__ready_free): the free functions are plain free()s. Ready
 *   parcels go back to the owner, in retirement-batch order, and are never
 *   touched here again.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "epoch.h"

/* CK 0.7.1 src/ck_epoch.c: CK_EPOCH_STATE_USED is 0, CK_EPOCH_STATE_FREE is 1. */
#define CKVO_EPOCH_STATE_FREE 1u

__thread struct ckvo_thread ckvo__thread __attribute__((tls_model("initial-exec")));
ck_epoch_t ckvo__epoch;
bool ckvo__asymmetric_fence;

/* Marks reader records (record->ct), as opposed to records of other code sharing CK. */
static char reader_tag;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t record_key;

static void
record_destructor(void *value)
{
	ck_epoch_record_t *record = value;

	if (ckvo__thread.record == record)
		ckvo__thread.record = NULL;
	ck_epoch_unregister(record);
}

static long
membarrier(int command)
{
	return syscall(SYS_membarrier, command, 0, 0);
}

/* True when CKVO_FENCED_READERS asks for ck_epoch_begin (tests run the suite both ways). */
static bool
fenced_readers_forced(void)
{
	const char *value = getenv("CKVO_FENCED_READERS");

	return value != NULL && value[0] != '\0' && strcmp(value, "0") != 0;
}

static void
threads_init(void)
{
	long commands = membarrier(MEMBARRIER_CMD_QUERY);

	ck_epoch_init(&ckvo__epoch);
	(void)pthread_key_create(&record_key, record_destructor);
	if (fenced_readers_forced())
		return;
	if (commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		ckvo__asymmetric_fence = true;
}

enum ckvo_scan
ckvo__epoch_scan(void)
{
	ck_stack_entry_t *cursor;
	unsigned int epoch;
	bool active = false;

	(void)pthread_once(&once, threads_init);
	/*
	 * Orders this thread's earlier stores (unpublications) before the
	 * loads of the records below: the writer's half of ck_epoch_begin's
	 * store-load pairing. With plain-store readers, membarrier also runs
	 * the readers' half on their CPUs (see the top of this file).
	 */
	ck_pr_fence_memory();
	if (ckvo__asymmetric_fence)
		(void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);

	epoch = ck_pr_load_uint(&ckvo__epoch.epoch);
	CK_STACK_FOREACH(&ckvo__epoch.records, cursor) {
		ck_epoch_record_t *record =
		    CKVO_CONTAINER(ck_epoch_record_t, record_next, cursor);

		/*
		 * Pairs with the release in record_acquire: the record's memory
		 * was allocated before ck_epoch_register pushed it, and the loop
		 * reads its link with a plain load (CK_STACK_NEXT). The push is
		 * inside libck, which ThreadSanitizer cannot see.
		 */
		CKVO_TSAN_ACQUIRE(&ckvo__epoch.records);
		if ((ck_pr_load_uint(&record->state) & CKVO_EPOCH_STATE_FREE) != 0)
			continue;
		if (ck_pr_load_uint(&record->active) == 0)
			continue;
		if (ck_pr_load_uint(&record->epoch) != epoch)
			return CKVO_SCAN_BUSY;
		active = true;
	}
	if (!active)
		return CKVO_SCAN_IDLE;
	/* Fails only when another scan advanced it first: the epoch is newer either way. */
	(void)ck_pr_cas_uint(&ckvo__epoch.epoch, epoch, epoch + 1);
	return CKVO_SCAN_SETTLED;
}

/* A record from the free list, or a new one registered with context `ct`. */
static ck_epoch_record_t *
record_acquire(void *ct)
{
	ck_epoch_record_t *record;
	void *memory;

	(void)pthread_once(&once, threads_init);
	record = ck_epoch_recycle(&ckvo__epoch, ct);
	if (record != NULL)
		return record;

	/* Records are cache-line aligned and are never freed (a CK rule). */
	if (posix_memalign(&memory, CK_MD_CACHELINE, sizeof(ck_epoch_record_t)) != 0)
		return NULL;
	record = memory;
	/*
	 * The allocation happens before the push that publishes the record
	 * (ck_epoch_register, inside libck): say so to ThreadSanitizer, for
	 * the scans that walk the records (ckvo__epoch_scan). Released before
	 * the push, so a scan that loads the new record acquires after it.
	 */
	CKVO_TSAN_RELEASE(&ckvo__epoch.records);
	ck_epoch_register(&ckvo__epoch, record, ct);
	return record;
}

ck_epoch_record_t *
ckvo__thread_record_slow(void)
{
	ck_epoch_record_t *record = record_acquire(&reader_tag);

	if (record == NULL)
		return NULL;
	if (pthread_setspecific(record_key, record) != 0) {
		ck_epoch_unregister(record);
		return NULL;
	}
	ckvo__thread.record = record;
	return record;
}

/*
 * Called before fork(): a process-wide initialization another thread is
 * running (threads_init's membarrier registration can take milliseconds)
 * finishes first, so the child never inherits it half done. ThreadSanitizer's
 * pthread_once, unlike glibc's, would make the child wait for it forever.
 */
void
ckvo__threads_before_fork(void)
{
	(void)pthread_once(&once, threads_init);
}

void
ckvo__threads_after_fork_child(void)
{
	ck_stack_entry_t *cursor;

	if (pthread_once(&once, threads_init) != 0)
		return;

	/*
	 * The child has a new address space; make sure membarrier still
	 * covers it, or fall back to fenced readers (this thread is the only
	 * reader, so switching now is safe).
	 */
	if (ckvo__asymmetric_fence && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		ckvo__asymmetric_fence = false;

	/*
	 * Only this thread survived the fork. Free every other thread's reader
	 * record: one that was inside a dispatch would otherwise stay active
	 * and block every grace period in the child.
	 */
	CK_STACK_FOREACH(&ckvo__epoch.records, cursor) {
		ck_epoch_record_t *record =
		    CKVO_CONTAINER(ck_epoch_record_t, record_next, cursor);

		if (record == ckvo__thread.record)
			continue;
		if (ck_pr_load_ptr(&record->ct) != &reader_tag)
			continue;
		if (ck_pr_load_uint(&record->state) == CKVO_EPOCH_STATE_FREE)
			continue;
		ck_epoch_unregister(record);
	}
}

/* ------------------------------------------------------------------ limbo */

static const struct ckvo_retired retired_empty = { NULL, NULL, NULL, NULL, 0, 0 };

void
ckvo__limbo_init(struct ckvo_limbo *limbo)
{
	limbo->fresh = limbo->aged = retired_empty;
	limbo->poll_at = CKVO_RECLAIM_BATCH;
}

static void
retired_push(ck_stack_entry_t **head, ck_stack_entry_t **tail, ck_stack_entry_t *link)
{
	link->next = *head;
	*head = link;
	if (*tail == NULL)
		*tail = link;
}

void
ckvo__retire(struct ckvo_limbo *limbo, ck_epoch_entry_t *entry, ck_epoch_cb_t *function)
{
	entry->function = function;
	retired_push(&limbo->fresh.head, &limbo->fresh.tail, &entry->stack_entry);
	limbo->fresh.count++;
}

void
ckvo__retire_large(struct ckvo_limbo *limbo, size_t bytes)
{
	if (bytes >= CKVO_RECLAIM_LARGE)
		limbo->poll_at = 0;
}

/* Appends the chain head..tail to `parcels`. */
static void
parcels_append(struct ckvo_parcels *parcels, ck_stack_entry_t *head, ck_stack_entry_t *tail,
    unsigned int count)
{
	if (head == NULL)
		return;
	tail->next = NULL;
	if (parcels->tail != NULL)
		parcels->tail->next = head;
	else
		parcels->head = head;
	parcels->tail = tail;
	parcels->count += count;
}

void
ckvo__retired_take(struct ckvo_retired *retired, struct ckvo_ready *ready)
{
	if (retired->head != NULL) {
		retired->tail->next = ready->memory;
		ready->memory = retired->head;
	}
	parcels_append(&ready->parcels, retired->parcels_head, retired->parcels_tail,
	    retired->parcels);
	*retired = retired_empty;
}

void
ckvo__limbo_poll(struct ckvo_limbo *limbo, struct ckvo_ready *ready)
{
	switch (ckvo__epoch_scan()) {
	case CKVO_SCAN_IDLE:
		ckvo__retired_take(&limbo->aged, ready);
		ckvo__retired_take(&limbo->fresh, ready);
		break;
	case CKVO_SCAN_SETTLED:
		ckvo__retired_take(&limbo->aged, ready);
		limbo->aged = limbo->fresh;
		limbo->fresh = retired_empty;
		break;
	case CKVO_SCAN_BUSY:
		break;
	}
	limbo->poll_at = ckvo__limbo_pending(limbo) + CKVO_RECLAIM_BATCH;
}

/* Appends `from` (emptied) to `to`, chain by chain. */
static void
retired_append(struct ckvo_retired *to, struct ckvo_retired *from)
{
	if (from->head != NULL) {
		if (to->tail != NULL)
			to->tail->next = from->head;
		else
			to->head = from->head;
		to->tail = from->tail;
	}
	if (from->parcels_head != NULL) {
		if (to->parcels_tail != NULL)
			to->parcels_tail->next = from->parcels_head;
		else
			to->parcels_head = from->parcels_head;
		to->parcels_tail = from->parcels_tail;
	}
	to->count += from->count;
	to->parcels += from->parcels;
	*from = retired_empty;
}

void
ckvo__limbo_detach(struct ckvo_limbo *limbo, struct ckvo_retired *detached)
{
	*detached = retired_empty;
	retired_append(detached, &limbo->aged);
	retired_append(detached, &limbo->fresh);
	limbo->poll_at = CKVO_RECLAIM_BATCH;
}

void
ckvo__ready_free(struct ckvo_ready *ready)
{
	ck_stack_entry_t *cursor, *next;

	if (ready->memory == NULL)
		return;

	/* Pairs with every reader's release when it left its section. */
	CKVO_TSAN_ACQUIRE(&ckvo__epoch);
	for (cursor = ready->memory; cursor != NULL; cursor = next) {
		ck_epoch_entry_t *entry = CKVO_CONTAINER(ck_epoch_entry_t, stack_entry, cursor);

		next = CK_STACK_NEXT(cursor);
		entry->function(entry);
	}
	ready->memory = NULL;
}

/*
 * Backs off while readers are busy: each scan may cost a membarrier, which
 * interrupts every CPU running this process.
 */
void
ckvo__grace_wait(void)
{
	unsigned int settled = 0, busy = 0;

	for (;;) {
		switch (ckvo__epoch_scan()) {
		case CKVO_SCAN_IDLE:
			return;
		case CKVO_SCAN_SETTLED:
			if (++settled == 2)
				return;
			break;
		case CKVO_SCAN_BUSY:
			if (++busy <= 16) {
				(void)sched_yield();
			} else {
				long us = busy < 26 ? 1L << (busy - 16) : 1000L;
				struct timespec pause = { 0, us * 1000L };

				(void)nanosleep(&pause, NULL);
			}
			break;
		}
	}
}
