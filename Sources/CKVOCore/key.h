/*
 * key.h — an interned key and the array that numbers them (key.c) (never
 * installed). A key lives as long as its hub.
 */
#ifndef CKVO_KEY_H
#define CKVO_KEY_H

#include "ckvo.h"

/* Longest key name ckvo_key_intern accepts, in bytes, without the NUL. */
#define CKVO_KEY_NAME_MAX 1024

struct ckvo_slot;

struct ckvo_keyinfo {
	/* Read by dispatch. */
	struct ckvo_slot *wildcard;   /* observers of every object (atomic) */
	struct ckvo_slot *hint;       /* the key's newest object slot, or NULL (atomic) */
	ckvo_probe_t probe;           /* live observations of this key (atomic) */
	uint64_t object_slots;        /* slots with a non-NULL object (atomic; writers under the lock) */
	ckvo_getter_t getter;         /* set once, under the writer lock */

	/* Immutable after interning. */
	const char *name;
	size_t name_length;
	ckvo_key_t id;
};

/* Key id k lives at array[k - 1]. Old arrays are kept until the hub dies. */
struct ckvo_key_array {
	struct ckvo_key_array *older;
	uint32_t capacity;
	struct ckvo_keyinfo *keys[];
};

#endif /* CKVO_KEY_H */
