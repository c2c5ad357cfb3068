/* ckvo_callback.c — the SwiftKVO C API peer's callback (see cbench_ckvo.h). */
#include "cbench.h"
#include "cbench_ckvo.h"

void cbench_ckvo_callback(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
	cbench_tick();
}
