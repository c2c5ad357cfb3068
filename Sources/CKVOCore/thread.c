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
 * - Reader records never defer work (ck_epoch_call): unregistering discards
 *   pending callbacks, and a thread may die at any time. Retirement goes
 *   through each hub's writer record, used only under that hub's lock.
 * - ck_epoch_unregister clears `active`, so a thread that exits inside a
 *   callback (pthread_exit from a callback) does not block grace periods.
 * - After fork() only the forking thread exists in the child. Records of the
 *   other threads may be marked active forever; the child unregisters them.
 * - Where the kernel offers private expedited membarrier(2), readers enter
 *   sections with plain stores and every writer calls ckvo__writer_fence
 *   before it lets ck_epoch scan the records (poll or synchronize). The
 *   barrier runs on every CPU executing a thread of this process, which
 *   makes the readers' section-entry stores visible to the scan that
 *   follows. Elsewhere readers use ck_epoch_begin and the fence is a no-op.
 */
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* CK 0.7.1 src/ck_epoch.c: CK_EPOCH_STATE_USED is 0, CK_EPOCH_STATE_FREE is 1. */
#define CKVO_EPOCH_STATE_FREE 1u

__thread struct ckvo_thread ckvo__thread __attribute__((tls_model("initial-exec")));
ck_epoch_t ckvo__epoch;
bool ckvo__asymmetric_fence;

/* Marks reader records (record->ct), as opposed to hubs' writer records. */
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

static void
threads_init(void)
{
	long commands = membarrier(MEMBARRIER_CMD_QUERY);

	ck_epoch_init(&ckvo__epoch);
	(void)pthread_key_create(&record_key, record_destructor);
	if (commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		ckvo__asymmetric_fence = true;
}

void
ckvo__writer_fence(void)
{
	if (ckvo__asymmetric_fence)
		(void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
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

ck_epoch_record_t *
ckvo__writer_record(struct ckvo_hub *hub)
{
	return record_acquire(hub);
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
