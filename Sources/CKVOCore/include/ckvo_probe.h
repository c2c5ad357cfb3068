/*
 * ckvo_probe.h — the setter's fast path, inline.
 *
 * A probe is a key's pair of observation counters. A setter that keeps the
 * probe of its key (ckvo_key_probe, once) can decide with one load whether
 * to build a change at all, without a call into the library.
 */
#ifndef CKVO_PROBE_H
#define CKVO_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Counters of one key, across all objects. Read them only through the
 * functions below; the layout may change with the library's major version.
 */
typedef struct ckvo_probe {
	uint64_t observations;       /* live observations of the key */
	uint64_t prior_observations; /* those with CKVO_OPTION_PRIOR */
} ckvo_probe_t;

/*
 * Whether a change of the probe's key, on any object, may reach an observer:
 * the answer of ckvo_has_observers for every object (it may be true for an
 * object nobody observes; it is never false while an observation of the key
 * exists). One relaxed load; any thread.
 */
static inline bool
ckvo_probe_has_observers(const ckvo_probe_t *probe)
{
	return __atomic_load_n(&probe->observations, __ATOMIC_RELAXED) != 0;
}

/*
 * Whether ckvo_will_change on the probe's key may call anybody (some
 * observation asked for CKVO_OPTION_PRIOR). Same guarantees as above.
 */
static inline bool
ckvo_probe_has_prior_observers(const ckvo_probe_t *probe)
{
	return __atomic_load_n(&probe->prior_observations, __ATOMIC_RELAXED) != 0;
}

#ifdef __cplusplus
}
#endif

#endif /* CKVO_PROBE_H */
