/* internal.h — what the csoak files share and Swift does not see. */
#ifndef CSOAK_INTERNAL_H
#define CSOAK_INTERNAL_H

#include "csoak.h"

/* This thread's dispatch trace (dispatch.c). */
struct csoak_trace {
	bool active;
	const ckvo_change_t *change; /* the announced change; NULL for a Swift trace */
	bool prior;                  /* ckvo_will_change */
	uint64_t started;            /* clock just before the announcing call */
	csoak_call_t *calls;         /* C announcements */
	uint64_t *entries;           /* Swift traces */
	size_t capacity;
	size_t count;
};

extern __thread struct csoak_trace csoak__trace;

/* Appends `call` to this thread's trace (which must be a C announcement's). */
void csoak__trace_call(const csoak_call_t *call);

#endif /* CSOAK_INTERNAL_H */
