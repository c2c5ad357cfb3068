/*
 * dispatch.c — announcing with a trace of who was called (see csoak.h).
 *
 * The trace lives in a thread-local: callbacks run synchronously on the
 * announcing thread, so a callback that finds no active trace on its thread
 * was called by something other than an announcement on that thread.
 */
#include "internal.h"

__thread struct csoak_trace csoak__trace;

void
csoak_announce(ckvo_hub_t *hub, const ckvo_change_t *change, bool prior, csoak_call_t *calls,
    size_t capacity, csoak_dispatch_t *result)
{
	csoak__trace = (struct csoak_trace){
		.active = true,
		.change = change,
		.prior = prior,
		.calls = calls,
		.capacity = capacity,
	};
	csoak__trace.started = csoak_clock_next();
	result->started = csoak__trace.started;
	result->status = prior ? ckvo_will_change(hub, change) : ckvo_did_change(hub, change);
	result->ended = csoak_clock_next();
	result->calls = csoak__trace.count;
	csoak__trace.active = false;
}

void
csoak__trace_call(const csoak_call_t *call)
{
	if (csoak__trace.count < csoak__trace.capacity)
		csoak__trace.calls[csoak__trace.count] = *call;
	csoak__trace.count++;
}

void
csoak_trace_begin(uint64_t *entries, size_t capacity)
{
	csoak__trace = (struct csoak_trace){ .active = true, .entries = entries, .capacity = capacity };
}

bool
csoak_trace_note(uint64_t entry)
{
	if (!csoak__trace.active || csoak__trace.entries == NULL)
		return false;
	if (csoak__trace.count < csoak__trace.capacity)
		csoak__trace.entries[csoak__trace.count] = entry;
	csoak__trace.count++;
	return true;
}

size_t
csoak_trace_end(void)
{
	size_t count = csoak__trace.count;

	csoak__trace.active = false;
	return count;
}
