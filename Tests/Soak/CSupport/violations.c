/* violations.c — counts of what callbacks and releases found wrong (see csoak.h). */
#include <stdatomic.h>

#include "csoak.h"

static _Atomic uint64_t counts[CSOAK_VIOLATION_COUNT];
static _Atomic uint64_t first_ids[CSOAK_VIOLATION_COUNT];

static const char *const names[CSOAK_VIOLATION_COUNT] = {
	[CSOAK_CALL_AFTER_RELEASE] = "callback after its context was released",
	[CSOAK_RELEASED_TWICE] = "context released twice",
	[CSOAK_RELEASED_WHILE_REGISTERED] = "context released while nothing had removed the observation",
	[CSOAK_CALL_AFTER_STRICT_REMOVAL] = "callback running or entered after ckvo_unobserve_sync returned",
	[CSOAK_CALL_AFTER_REMOVAL] = "called by a dispatch that started after its removal returned",
	[CSOAK_CALL_AFTER_OBJECT_REMOVAL] =
	    "called by a dispatch that started after ckvo_unobserve_object of its object returned",
	[CSOAK_CALL_AFTER_OWNER_REMOVAL] =
	    "called by a dispatch that started after ckvo_unobserve_owner of its owner returned",
	[CSOAK_CALL_OUTSIDE_DISPATCH] = "change delivered on a thread that was not announcing it",
	[CSOAK_WRONG_TARGET] = "delivered a change of another object or key",
	[CSOAK_WRONG_VALUES] = "delivered values, indexes or flags its options did not ask for",
	[CSOAK_BAD_INITIAL] = "initial notification wrong or not delivered exactly once",
	[CSOAK_SELF_REMOVAL_FAILED] = "unobserving itself from its callback failed",
	[CSOAK_TRACE_OVERFLOW] = "more calls in one dispatch than observations exist",
};

void
csoak_violation_note(csoak_violation_t kind, uint64_t id)
{
	uint64_t none = 0;

	if ((unsigned)kind >= CSOAK_VIOLATION_COUNT)
		return;
	atomic_fetch_add(&counts[kind], 1);
	atomic_compare_exchange_strong(&first_ids[kind], &none, id);
}

uint64_t
csoak_violation_count(csoak_violation_t kind)
{
	return (unsigned)kind < CSOAK_VIOLATION_COUNT ? atomic_load(&counts[kind]) : 0;
}

const char *
csoak_violation_name(csoak_violation_t kind)
{
	return (unsigned)kind < CSOAK_VIOLATION_COUNT ? names[kind] : "unknown violation";
}

uint64_t
csoak_violation_first_id(csoak_violation_t kind)
{
	return (unsigned)kind < CSOAK_VIOLATION_COUNT ? atomic_load(&first_ids[kind]) : 0;
}
