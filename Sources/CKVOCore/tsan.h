/*
 * tsan.h — happens-before annotations for ThreadSanitizer.
 *
 * Concurrency Kit's atomics are inline assembly and libck.so is not
 * instrumented, so ThreadSanitizer cannot see the orderings that make the
 * engine correct. These macros state them: a release where a writer publishes
 * an object (or a reader leaves its epoch section), an acquire where a reader
 * loads a published object (or a writer frees after a grace period). They
 * compile to nothing outside TSan builds.
 */
#ifndef CKVO_TSAN_H
#define CKVO_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define CKVO_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CKVO_TSAN 1
#endif
#endif

#ifdef CKVO_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define CKVO_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define CKVO_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define CKVO_TSAN_ACQUIRE(p) ((void)0)
#define CKVO_TSAN_RELEASE(p) ((void)0)
#endif

#endif /* CKVO_TSAN_H */
