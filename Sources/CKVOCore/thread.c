/*
 * thread.c — the process-wide epoch and each thread's reader record.
 *
 * Invariants
 * ----------
 * - One ck_epoch_t for the whole process. Every thread that dispatches gets
 *   one reader record, registered on first use and kept in a thread-local
 *   pointer (initial-exec TLS: no lookup call on the dispatch path). A
 *   pthread key destructor unregisters it when the thread exits, so
 *   ck_epoch_recycle hands it to the next new thread: short-lived threads do
 *   not grow the record list.
 * - Reader records never defer work (ck_epoch_call), and neither does
 *   anything else: hubs keep their retired entries themselves (reclaim.c)
 *   and ask ckvo__epoch_scan whether readers have moved on. Nothing calls
 *   ck_epoch_poll or ck_epoch_synchronize, so every scan of the records in
 *   the process is the one below, and the global epoch advances only there.
 * - ck_epoch_unregister clears `active`, so a thread that exits inside a
 *   callback (pthread_exit from a callback) does not block grace periods.
 * - After fork() only the forking thread exists in the child. Records of the
 *   other threads may be marked active forever; the child unregisters them.
 * - Readers enter a section in one of two ways, chosen once per process:
 *   where the kernel offers private expedited membarrier(2), with plain
 *   stores (ckvo__read_begin); elsewhere, or when the environment variable
 *   CKVO_FENCED_READERS is set to a non-empty value other than "0", with
 *   ck_epoch_begin, whose store-load fence orders `active` before the
 *   reader's loads.
 * - Every scan begins with a full fence on the scanning thread and, in the
 *   plain-store mode, with membarrier(2), which runs a full barrier on every
 *   CPU executing a thread of this process. Take any reader and the point
 *   where that barrier hit it: its section-entry stores made before the point
 *   are visible to the scan that follows; its loads made after the point see
 *   every store the scanner's thread could see when it issued the barrier,
 *   in particular every unpublication that happened before the scan (under
 *   the hub lock, which the scanner holds or took after the remover). So a
 *   reader that still holds something unpublished before the scan is seen
 *   active by the scan, with the epoch it entered in. reclaim.c builds its
 *   grace periods on this, one barrier per scan: a scan never relies on a
 *   barrier issued before an earlier scan.
 */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

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
