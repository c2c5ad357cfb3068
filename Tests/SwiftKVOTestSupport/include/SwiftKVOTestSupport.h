/*
 * SwiftKVOTestSupport.h — a malloc-counting shim for SwiftKVOTests'
 * allocation test, and a byte ledger for CKVOCoreTests' held-memory tests.
 *
 * The test executable defines malloc & co. (interposing glibc's, which stay
 * reachable as __libc_*): every call on a thread that is counting bumps that
 * thread's counter, and otherwise the call passes straight through. Not
 * built under ThreadSanitizer or AddressSanitizer, whose runtimes own malloc:
 * skvo_alloc_counting_supported() then returns false and the test skips.
 */
#ifndef SWIFTKVO_TEST_SUPPORT_H
#define SWIFTKVO_TEST_SUPPORT_H

#include <stdbool.h>

/* Whether allocations can be counted in this build. */
bool skvo_alloc_counting_supported(void);

/* Starts counting this thread's heap allocations from zero. */
void skvo_alloc_begin(void);

/* Stops counting and returns the number of allocations since skvo_alloc_begin. */
long skvo_alloc_end(void);

/*
 * The byte ledger (process-wide, for a test that runs alone in its own
 * process): from skvo_ledger_begin on, every block malloc & co. hand out on
 * any thread is recorded with the size asked for until it is freed, on any
 * thread. skvo_ledger_begin returns false where allocations cannot be
 * counted; skvo_ledger_bytes returns the bytes of the recorded blocks not
 * freed yet (-1 if some block could not be recorded); skvo_ledger_end
 * disarms it and forgets every block.
 */
bool skvo_ledger_begin(void);
long skvo_ledger_bytes(void);
void skvo_ledger_end(void);

#endif
