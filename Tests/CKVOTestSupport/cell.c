/*
 * cell.c — an observed object that holds a current value, and the getter
 * CKVO_OPTION_INITIAL reads it through. The getter also checks that the hub
 * already reports an observer when it runs (installed before the read).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "ckvo_test_support.h"

struct ckvots_cell {
	ckvo_hub_t *hub;
	_Atomic(const void *) value;
	_Atomic unsigned getter_calls;
	_Atomic unsigned calls_before_install;
};

ckvots_cell_t *
ckvots_cell_create(ckvo_hub_t *hub, const void *value)
{
	ckvots_cell_t *cell = calloc(1, sizeof(*cell));
	if (cell == NULL)
		return NULL;
	cell->hub = hub;
	atomic_init(&cell->value, value);
	atomic_init(&cell->getter_calls, 0);
	atomic_init(&cell->calls_before_install, 0);
	return cell;
}

void
ckvots_cell_destroy(ckvots_cell_t *cell)
{
	free(cell);
}

void
ckvots_cell_set(ckvots_cell_t *cell, const void *value)
{
	atomic_store(&cell->value, value);
}

const void *
ckvots_cell_getter(const void *object, ckvo_key_t key)
{
	/* The hub never dereferences objects; this getter does, by contract with
	 * the tests: every object observed with it is a ckvots_cell_t. */
	ckvots_cell_t *cell = (ckvots_cell_t *)object;
	if (cell == NULL)
		return NULL;
	atomic_fetch_add(&cell->getter_calls, 1);
	if (!ckvo_has_observers(cell->hub, object, key))
		atomic_fetch_add(&cell->calls_before_install, 1);
	return atomic_load(&cell->value);
}

unsigned
ckvots_cell_getter_calls(const ckvots_cell_t *cell)
{
	return atomic_load(&((ckvots_cell_t *)cell)->getter_calls);
}

unsigned
ckvots_cell_getter_calls_before_install(const ckvots_cell_t *cell)
{
	return atomic_load(&((ckvots_cell_t *)cell)->calls_before_install);
}
