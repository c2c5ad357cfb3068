/*
 * ledger.h — what a part of a registry needs to allocate and retire memory
 * (never installed): the count of heap bytes the hub holds, and the limbo
 * where memory a reader may still reach waits for its grace period.
 * Writer-only: every part takes the ledger, never the whole registry.
 */
#ifndef CKVO_LEDGER_H
#define CKVO_LEDGER_H

#include <stddef.h>

#include "epoch.h"

struct ckvo_ledger {
	/*
	 * Heap bytes held for the hub, as requested from malloc: raised at each
	 * allocation, lowered when a block is freed or retired (memory in the
	 * limbo is on its way back and not counted).
	 */
	size_t bytes;
	struct ckvo_limbo *garbage; /* where replaced memory waits (the session's) */
};

/* Counts `delta` bytes allocated (or, negative, freed). */
static inline void
ckvo__bytes(struct ckvo_ledger *ledger, ptrdiff_t delta)
{
	ledger->bytes += (size_t)delta;
}

#endif /* CKVO_LEDGER_H */
