/*
 * probe.c — an observation context that counts its calls and releases,
 * records each call and runs optional hooks (which is how Swift tests act
 * from inside a callback).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

void ckvots__trace_note(uint64_t id); /* trace.c */

struct ckvots_probe {
	uint64_t id;
	ckvots_recorder_t *recorder;
	ckvots_change_hook_t on_change;
	ckvots_release_hook_t on_release;
	void *user;
	_Atomic uint64_t calls;
	_Atomic uint64_t releases;
	_Atomic uint64_t calls_after_release;
};

ckvots_probe_t *
ckvots_probe_create(ckvots_recorder_t *recorder, uint64_t id)
{
	ckvots_probe_t *probe = calloc(1, sizeof(*probe));
	if (probe == NULL)
		return NULL;
	probe->id = id;
	probe->recorder = recorder;
	atomic_init(&probe->calls, 0);
	atomic_init(&probe->releases, 0);
	atomic_init(&probe->calls_after_release, 0);
	return probe;
}

void
ckvots_probe_destroy(ckvots_probe_t *probe)
{
	free(probe);
}

uint64_t
ckvots_probe_id(const ckvots_probe_t *probe)
{
	return probe->id;
}

uint64_t
ckvots_probe_calls(const ckvots_probe_t *probe)
{
	return atomic_load(&((ckvots_probe_t *)probe)->calls);
}

uint64_t
ckvots_probe_releases(const ckvots_probe_t *probe)
{
	return atomic_load(&((ckvots_probe_t *)probe)->releases);
}

uint64_t
ckvots_probe_calls_after_release(const ckvots_probe_t *probe)
{
	return atomic_load(&((ckvots_probe_t *)probe)->calls_after_release);
}

void
ckvots_probe_set_hooks(ckvots_probe_t *probe, ckvots_change_hook_t on_change,
    ckvots_release_hook_t on_release, void *user)
{
	probe->on_change = on_change;
	probe->on_release = on_release;
	probe->user = user;
}

void
ckvots_probe_callback(const ckvo_change_t *change, void *context)
{
	ckvots_probe_t *probe = context;

	/* A call that starts after the release is a use-after-release by the hub. */
	if (atomic_load(&probe->releases) != 0)
		atomic_fetch_add(&probe->calls_after_release, 1);
	atomic_fetch_add(&probe->calls, 1);
	ckvots__trace_note(probe->id);
	if (probe->recorder != NULL)
		ckvots_recorder_append(probe->recorder, probe->id, change);
	if (probe->on_change != NULL)
		probe->on_change(change, probe->user);
}

void
ckvots_probe_release(void *context)
{
	ckvots_probe_t *probe = context;

	atomic_fetch_add(&probe->releases, 1);
	if (probe->on_release != NULL)
		probe->on_release(probe->user);
}
