/*
 * cbench_ckvo.h — the C callback the SwiftKVO C API peer registers with
 * ckvo_observe: it does the same work as every other peer's callback.
 */
#ifndef CBENCH_CKVO_H
#define CBENCH_CKVO_H

#include <ckvo.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A ckvo_callback_t that calls cbench_tick(); ignores `change` and `context`. */
void cbench_ckvo_callback(const ckvo_change_t *change, void *context);

#ifdef __cplusplus
}
#endif

#endif /* CBENCH_CKVO_H */
