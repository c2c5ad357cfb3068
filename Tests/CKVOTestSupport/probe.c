/*
 * probe.c — an observation context that counts its calls and releases,
 * records each call and runs optional hooks (which is how Swift tests act
 * from inside a callback).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

void ckvots__trace_note(uint64_t id); /* trace.c */

/*
 * The hooks are atomic: a release may run on the hub's background thread
 * while a test changes them. `user` is stored before the hooks and never
 * cleared, so a hook that is loaded always finds it.
 */
struct ckvots_probe {
	uint64_t id;
	ckvots_recorder_t *recorder;
	_Atomic(ckvots_change_hook_t) on_change;
	_Atomic(ckvots_release_hook_t) on_release;
	_Atomic(void *) user;
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
	atomic_init(&probe->on_change, NULL);
	atomic_init(&probe->on_release, NULL);
	atomic_init(&probe->user, NULL);
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
	if (user != NULL)
		atomic_store(&probe->user, user);
	atomic_store(&probe->on_change, on_change);
	atomic_store(&probe->on_release, on_release);
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
	ckvots_change_hook_t on_change = atomic_load(&probe->on_change);
	if (on_change != NULL)
		on_change(change, atomic_load(&probe->user));
}

void
ckvots_probe_release(void *context)
{
	ckvots_probe_t *probe = context;

	atomic_fetch_add(&probe->releases, 1);
	ckvots_release_hook_t on_release = atomic_load(&probe->on_release);
	if (on_release != NULL)
		on_release(atomic_load(&probe->user));
}
