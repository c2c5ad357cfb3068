/* trace.c — which probes were called on this thread between begin and end. */
#include "ckvo_test_support.h"

static _Thread_local uint64_t *trace_buffer;
static _Thread_local size_t trace_capacity;
static _Thread_local size_t trace_count;
static _Thread_local bool trace_active;

void ckvots__trace_note(uint64_t id);

void
ckvots_trace_begin(uint64_t *buffer, size_t capacity)
{
	trace_buffer = buffer;
	trace_capacity = capacity;
	trace_count = 0;
	trace_active = true;
}

size_t
ckvots_trace_end(void)
{
	trace_active = false;
	trace_buffer = NULL;
	return trace_count;
}

void
ckvots__trace_note(uint64_t id)
{
	if (!trace_active)
		return;
	if (trace_count < trace_capacity)
		trace_buffer[trace_count] = id;
	trace_count++;
}
