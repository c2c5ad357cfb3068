/*
 * SwiftKVOTestSupport.h — a malloc-counting shim for SwiftKVOTests'
 * allocation test.
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

#endif
