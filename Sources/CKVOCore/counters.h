/*
 * counters.h — the engine's counters that only grow (generations, release
 * tickets, flush numbers): where they start, and how two of them compare.
 *
 * Every such counter is 64 bits wide: at one increment per nanosecond it
 * wraps after 584 years. They are compared with ckvo__counter_before, which
 * stays right across a wrap as long as the two values are less than 2^63
 * apart, so a counter's end is a place it passes, never a limit.
 *
 * Tests reach that place without running for centuries: with the
 * environment variable CKVO_COUNTERS_NEAR_END set to a non-empty value other
 * than "0", every counter starts CKVO_COUNTERS_NEAR_END_SPAN increments
 * before it wraps (read once per process, like CKVO_FENCED_READERS).
 */
#ifndef CKVO_COUNTERS_H
#define CKVO_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

/* Increments a counter started near its end makes before it wraps. */
#define CKVO_COUNTERS_NEAR_END_SPAN ((uint64_t)1 << 16)

/*
 * Where a counter that would start at `natural` starts: `natural` itself,
 * or, under CKVO_COUNTERS_NEAR_END, that many increments before the wrap.
 */
uint64_t ckvo__counter_start(uint64_t natural);

/* Whether counter value `a` comes before `b`, across a wrap. */
static inline bool
ckvo__counter_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

#endif /* CKVO_COUNTERS_H */
