/*
 * asan.h — manual poisoning for AddressSanitizer.
 *
 * Released observations are kept for reuse (token.c) instead of going
 * back to malloc, which would hide a use after release from AddressSanitizer.
 * Poisoning a parked observation keeps such a use a reported error. The
 * macros compile to nothing outside ASan builds.
 */
#ifndef CKVO_ASAN_H
#define CKVO_ASAN_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define CKVO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CKVO_ASAN 1
#endif
#endif

#ifdef CKVO_ASAN
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define CKVO_ASAN_POISON(p, size) __asan_poison_memory_region((p), (size))
#define CKVO_ASAN_UNPOISON(p, size) __asan_unpoison_memory_region((p), (size))
#else
#define CKVO_ASAN_POISON(p, size) ((void)(p), (void)(size))
#define CKVO_ASAN_UNPOISON(p, size) ((void)(p), (void)(size))
#endif

#endif /* CKVO_ASAN_H */
