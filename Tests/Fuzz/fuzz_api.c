/*
 * fuzz_api.c — libFuzzer target for the CKVOCore C API.
 *
 * Decodes the input into a sequence of API calls — hubs created and
 * destroyed, keys interned, observations registered with every option,
 * removed by token (plain, strict, deferred, stale or forged), by object and
 * by owner, changes announced with arbitrary kinds and index sets, NULL and
 * invalid arguments — and checks every result against a simple model of
 * what the engine must do:
 *   - each status is the one the model predicts;
 *   - a dispatch calls exactly the live observations of its key on that
 *     object (or wildcard), in registration order, each with the values its
 *     options allow;
 *   - every context is released at most once, never while its observation
 *     is live, and exactly once after ckvo_hub_flush or ckvo_hub_destroy.
 * Single-threaded: the concurrency tests live in the Swift suites.
 *
 * Build and run: `make fuzz` (FUZZ_SECONDS=60 by default).
 */
#include <ckvo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HUBS 2
#define MAX_OBS 256
#define N_OBJECTS 4
#define N_OWNERS 3
#define N_NAMES 4
#define MAX_INDEXES 8

#define CHECK(cond)                                                            \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "fuzz_api: invariant failed at %s:%d: %s\n", \
			    __FILE__, __LINE__, #cond);                         \
			abort();                                                \
		}                                                               \
	} while (0)

/* What the model knows about one registration. */
struct model_obs {
	int hub;
	ckvo_token_t token;
	int object; /* index into objects, or -1 for every object */
	ckvo_key_t key;
	int owner;  /* index into owners, or -1 */
	int callback;
	ckvo_options_t options;
	int live;
	_Atomic int released; /* written by the release callback, maybe on the hub's reclaimer thread */
};

static struct {
	ckvo_hub_t *hubs[MAX_HUBS];
	ckvo_key_t keys[MAX_HUBS][N_NAMES];
	struct model_obs obs[MAX_OBS];
	int n_obs;
	int registering; /* model index of the registration in progress, or -1 */
	int calls[MAX_OBS]; /* delivery log of the current dispatch: obs indexes */
	int n_calls;
	const ckvo_change_t *expected_change;
} m;

static char objects[N_OBJECTS];
static char owners[N_OWNERS];
static const char *names[N_NAMES] = { "name", "balance", "items", "a-much-longer.key/name" };

/* A context is the model index of its observation, smuggled in a pointer. */
static void *
context_of(int index)
{
	return (void *)(intptr_t)(index + 1);
}

static int
index_of(void *context)
{
	return (int)(intptr_t)context - 1;
}

static void
record(const ckvo_change_t *change, void *context, int callback)
{
	int i = index_of(context);

	CHECK(i >= 0 && (i < m.n_obs || i == m.registering));
	CHECK(m.obs[i].callback == callback);
	CHECK(m.obs[i].released == 0);
	CHECK(m.n_calls < MAX_OBS);
	m.calls[m.n_calls++] = i;
	if (change->is_initial)
		return;
	CHECK(m.expected_change != NULL);
	/* Values only as the options and the change allow. */
	{
		const ckvo_change_t *c = m.expected_change;
		bool want_new = (m.obs[i].options & CKVO_OPTION_NEW) && !change->is_prior &&
		    c->kind != CKVO_KIND_REMOVAL;
		bool want_old = (m.obs[i].options & CKVO_OPTION_OLD) && c->kind != CKVO_KIND_INSERTION;

		CHECK(change->new_value == (want_new ? c->new_value : NULL));
		CHECK(change->old_value == (want_old ? c->old_value : NULL));
		CHECK(change->kind == c->kind && change->key == c->key && change->object == c->object);
		CHECK(change->index_count == c->index_count && change->indexes == c->indexes);
	}
}

static void
callback_a(const ckvo_change_t *change, void *context)
{
	record(change, context, 0);
}

static void
callback_b(const ckvo_change_t *change, void *context)
{
	record(change, context, 1);
}

static void
release(void *context)
{
	int i = index_of(context);

	CHECK(i >= 0 && i < m.n_obs);
	CHECK(!m.obs[i].live);
	m.obs[i].released++;
	CHECK(m.obs[i].released == 1);
}

static ckvo_callback_t callbacks[2] = { callback_a, callback_b };

/* ------------------------------------------------------------- the input */

struct input {
	const uint8_t *data;
	size_t size;
};

static uint8_t
take(struct input *in)
{
	uint8_t byte;

	if (in->size == 0)
		return 0;
	byte = *in->data++;
	in->size--;
	return byte;
}

static uint64_t
take64(struct input *in)
{
	uint64_t value = 0;

	for (int i = 0; i < 8; i++)
		value = (value << 8) | take(in);
	return value;
}

/* ---------------------------------------------------------------- checks */

static int
object_index(const void *object)
{
	for (int i = 0; i < N_OBJECTS; i++)
		if (object == &objects[i])
			return i;
	return -1;
}

/* After a flush or destroy: released exactly once iff no longer live. */
static void
check_released(int hub)
{
	for (int i = 0; i < m.n_obs; i++) {
		if (m.obs[i].hub != hub)
			continue;
		CHECK(m.obs[i].released == (m.obs[i].live ? 0 : 1));
	}
}

static int
live_count(int hub)
{
	int n = 0;

	for (int i = 0; i < m.n_obs; i++)
		n += m.obs[i].hub == hub && m.obs[i].live;
	return n;
}

static void
hub_forget(int hub)
{
	/* Observations of a destroyed hub stay in the model as released history. */
	for (int i = 0; i < m.n_obs; i++)
		if (m.obs[i].hub == hub)
			m.obs[i].hub = -1;
	memset(m.keys[hub], 0, sizeof(m.keys[hub]));
	m.hubs[hub] = NULL;
}

/* -------------------------------------------------------------- the ops */

static void
op_create(int hub)
{
	if (m.hubs[hub] != NULL)
		return;
	m.hubs[hub] = ckvo_hub_create();
	CHECK(m.hubs[hub] != NULL);
}

static void
op_destroy(int hub)
{
	if (m.hubs[hub] == NULL)
		return;
	for (int i = 0; i < m.n_obs; i++)
		if (m.obs[i].hub == hub)
			m.obs[i].live = 0;
	CHECK(ckvo_hub_destroy(m.hubs[hub]) == CKVO_OK);
	check_released(hub);
	hub_forget(hub);
}

static void
op_intern(int hub, struct input *in)
{
	int n = take(in) % N_NAMES;
	ckvo_key_t key;

	if (m.hubs[hub] == NULL)
		return;
	key = ckvo_key_intern(m.hubs[hub], names[n], NULL);
	CHECK(key != 0);
	CHECK(m.keys[hub][n] == 0 || m.keys[hub][n] == key);
	m.keys[hub][n] = key;
	CHECK(strcmp(ckvo_key_name(m.hubs[hub], key), names[n]) == 0);
}

static ckvo_key_t
pick_key(int hub, struct input *in, bool *valid)
{
	uint8_t b = take(in);
	ckvo_key_t key = m.keys[hub][b % N_NAMES];

	*valid = key != 0;
	if ((b & 0xc0) == 0xc0) { /* a forged key */
		*valid = false;
		return (ckvo_key_t)(b * 977u + 1000u);
	}
	return key;
}

static void
op_observe(int hub, struct input *in)
{
	uint8_t how = take(in), opt = take(in);
	int object = (int)(how % (N_OBJECTS + 1)) - 1;
	int owner = (int)((how >> 3) % (N_OWNERS + 1)) - 1;
	int callback = (how >> 5) & 1;
	bool null_callback = (how >> 6) == 3;
	ckvo_options_t options = opt & 0x1f; /* 0x10: CKVO_OPTION_UNIQUE_CONTEXT */
	bool bad_options = (opt & 0x80) != 0;
	bool valid_key;
	ckvo_key_t key;
	ckvo_token_t token = CKVO_TOKEN_NONE_INITIALIZER;
	ckvo_status_t status, expected = CKVO_OK;
	int duplicate = -1, i;

	if (m.hubs[hub] == NULL || m.n_obs == MAX_OBS)
		return;
	key = pick_key(hub, in, &valid_key);
	if (bad_options)
		options |= 0x100;

	/*
	 * Contexts are unique per registration, so a duplicate re-uses one.
	 * CKVO_OPTION_UNIQUE_CONTEXT keeps its promise here: a registration
	 * with it, or of the same identity as one made with it, never re-uses
	 * a live context (the hub does not look such duplicates up).
	 */
	i = m.n_obs;
	if ((opt & 0x40) && m.n_obs > 0) {
		int j = take(in) % m.n_obs;

		if (m.obs[j].hub == hub && m.obs[j].live && m.obs[j].key == key &&
		    m.obs[j].object == object && m.obs[j].owner == owner &&
		    m.obs[j].callback == callback &&
		    ((options | m.obs[j].options) & CKVO_OPTION_UNIQUE_CONTEXT) == 0)
			duplicate = j;
	}

	if (null_callback || bad_options || !valid_key)
		expected = CKVO_EINVAL;
	else if (duplicate >= 0)
		expected = CKVO_EEXIST;

	m.obs[i] = (struct model_obs){ .hub = hub, .object = object, .key = key, .owner = owner,
		.callback = callback, .options = options, .live = 1 };
	m.n_calls = 0;
	m.registering = i;
	status = ckvo_observe(m.hubs[hub], object < 0 ? NULL : &objects[object], key, options,
	    owner < 0 ? NULL : &owners[owner], null_callback ? NULL : callbacks[callback],
	    context_of(duplicate >= 0 ? duplicate : i), release, &token);
	m.registering = -1;
	CHECK(status == expected);

	if (status == CKVO_EEXIST) {
		CHECK(ckvo_token_equal(token, m.obs[duplicate].token));
		return;
	}
	if (status != CKVO_OK)
		return;
	CHECK(!ckvo_token_is_none(token));
	for (int j = 0; j < m.n_obs; j++)
		CHECK(!ckvo_token_equal(m.obs[j].token, token) || m.obs[j].hub != hub);
	m.obs[i].token = token;
	m.n_obs++;
	/* The initial notification, and nothing else, during registration. */
	CHECK(m.n_calls == ((options & CKVO_OPTION_INITIAL) ? 1 : 0));
	if (m.n_calls == 1)
		CHECK(m.calls[0] == i);
}

static ckvo_token_t
pick_token(int hub, struct input *in, int *which)
{
	uint8_t b = take(in);

	*which = -1;
	if (b < 200 && m.n_obs > 0) {
		*which = b % m.n_obs;
		if (m.obs[*which].hub != hub)
			*which = -1;
		else
			return m.obs[*which].token;
	}
	switch (b & 3) { /* forged */
	case 0: return (ckvo_token_t)CKVO_TOKEN_NONE_INITIALIZER;
	case 1: return (ckvo_token_t){ UINT64_MAX, UINT64_MAX };
	case 2: return (ckvo_token_t){ 1, 0 };
	default: {
		uint64_t generation = take64(in);

		return (ckvo_token_t){ generation, take64(in) };
	}
	}
}

/* The model index of a token, if the model issued it in this hub. */
static int
model_find(int hub, ckvo_token_t token)
{
	for (int i = 0; i < m.n_obs; i++)
		if (m.obs[i].hub == hub && ckvo_token_equal(m.obs[i].token, token))
			return i;
	return -1;
}

static void
op_unobserve(int hub, struct input *in, int variant)
{
	int which;
	ckvo_token_t token;
	ckvo_status_t status;
	bool was_live;
	int i;

	if (m.hubs[hub] == NULL)
		return;
	token = pick_token(hub, in, &which);
	i = model_find(hub, token);
	was_live = i >= 0 && m.obs[i].live;
	if (was_live)
		m.obs[i].live = 0; /* before the call: its release may run inside it */
	if (variant == 0)
		status = ckvo_unobserve(m.hubs[hub], token);
	else if (variant == 1)
		status = ckvo_unobserve_sync(m.hubs[hub], token);
	else
		status = ckvo_unobserve_deferred(m.hubs[hub], token);
	CHECK(status == (was_live ? CKVO_OK : CKVO_ENOENT));
	if (variant == 1 && was_live)
		CHECK(m.obs[i].released == 1); /* strict removal releases before returning */
}

static void
op_unobserve_group(int hub, struct input *in, bool by_object)
{
	uint8_t b = take(in);
	int target = b % (by_object ? N_OBJECTS : N_OWNERS);
	bool any = false;
	ckvo_status_t status;

	if (m.hubs[hub] == NULL)
		return;
	for (int i = 0; i < m.n_obs; i++) {
		struct model_obs *o = &m.obs[i];

		if (o->hub == hub && o->live && (by_object ? o->object : o->owner) == target) {
			o->live = 0;
			any = true;
		}
	}
	status = by_object ? ckvo_unobserve_object(m.hubs[hub], &objects[target])
			   : ckvo_unobserve_owner(m.hubs[hub], &owners[target]);
	CHECK(status == (any ? CKVO_OK : CKVO_ENOENT));
}

static void
op_change(int hub, struct input *in, bool prior)
{
	uint8_t how = take(in);
	int object = (int)(how % (N_OBJECTS + 1)) - 1;
	size_t indexes[MAX_INDEXES];
	int old_value = 1, new_value = 2;
	bool valid_key, valid_change;
	ckvo_change_t change = { 0 };
	int expected[MAX_OBS], n_expected = 0;
	ckvo_status_t status;

	if (m.hubs[hub] == NULL)
		return;
	change.key = pick_key(hub, in, &valid_key);
	change.object = object < 0 ? NULL : &objects[object];
	change.kind = (ckvo_kind_t)((how >> 3) % 6); /* 0 and 5 are invalid */
	change.old_value = &old_value;
	change.new_value = &new_value;
	change.index_count = (how >> 6) ? take(in) % MAX_INDEXES : 0;
	for (size_t i = 0; i < change.index_count; i++)
		indexes[i] = take(in);
	change.indexes = change.index_count > 0 || (how & 0x80) ? indexes : NULL;
	valid_change = (change.kind == CKVO_KIND_SETTING && change.indexes == NULL) ||
	    (change.kind >= CKVO_KIND_INSERTION && change.kind <= CKVO_KIND_REPLACEMENT);

	for (int i = 0; i < m.n_obs; i++) {
		struct model_obs *o = &m.obs[i];

		if (o->hub != hub || !o->live || o->key != change.key)
			continue;
		if (o->object >= 0 && o->object != object)
			continue;
		if (prior && !(o->options & CKVO_OPTION_PRIOR))
			continue;
		expected[n_expected++] = i; /* model order is registration order */
	}

	m.n_calls = 0;
	m.expected_change = &change;
	status = prior ? ckvo_will_change(m.hubs[hub], &change) : ckvo_did_change(m.hubs[hub], &change);
	m.expected_change = NULL;
	if (!valid_key || !valid_change) {
		CHECK(status == CKVO_EINVAL);
		CHECK(m.n_calls == 0);
		return;
	}
	CHECK(status == CKVO_OK);
	CHECK(m.n_calls == n_expected);
	for (int i = 0; i < n_expected; i++)
		CHECK(m.calls[i] == expected[i]);
	CHECK(object_index(change.object) == object);
}

static void
op_flush(int hub)
{
	ckvo_hub_stats_t stats;

	if (m.hubs[hub] == NULL)
		return;
	CHECK(ckvo_hub_flush(m.hubs[hub]) == CKVO_OK);
	CHECK(ckvo_hub_stats(m.hubs[hub], &stats) == CKVO_OK);
	CHECK(stats.observations == (size_t)live_count(hub));
	CHECK(stats.pending_releases == 0);
	check_released(hub);
}

static void
op_has_observers(int hub, struct input *in)
{
	bool valid_key, any = false;
	uint8_t b = take(in);
	int object = b % N_OBJECTS;
	ckvo_key_t key;

	if (m.hubs[hub] == NULL)
		return;
	key = pick_key(hub, in, &valid_key);
	for (int i = 0; i < m.n_obs; i++) {
		struct model_obs *o = &m.obs[i];

		any |= o->hub == hub && o->live && o->key == key &&
		    (o->object < 0 || o->object == object);
	}
	if (any)
		CHECK(ckvo_has_observers(m.hubs[hub], &objects[object], key));
	if (!valid_key)
		CHECK(!ckvo_has_observers(m.hubs[hub], &objects[object], key));
}

static void
op_bad_arguments(struct input *in)
{
	ckvo_change_t change = { .kind = CKVO_KIND_SETTING };
	ckvo_hub_stats_t stats;

	switch (take(in) % 8) {
	case 0: CHECK(ckvo_observe(NULL, NULL, 1, 0, NULL, callback_a, NULL, NULL, NULL) == CKVO_EINVAL); break;
	case 1: CHECK(ckvo_unobserve(NULL, (ckvo_token_t){ 1, 0 }) == CKVO_EINVAL); break;
	case 2: CHECK(ckvo_did_change(NULL, &change) == CKVO_EINVAL); break;
	case 3: CHECK(ckvo_key_intern(NULL, "x", NULL) == 0); break;
	case 4: CHECK(ckvo_hub_stats(NULL, &stats) == CKVO_EINVAL); break;
	case 5: CHECK(ckvo_unobserve_object(NULL, objects) == CKVO_EINVAL); break;
	case 6: CHECK(!ckvo_has_observers(NULL, objects, 1)); break;
	default: CHECK(ckvo_hub_destroy(NULL) == CKVO_OK); break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };

	memset(&m, 0, sizeof(m));
	m.registering = -1;
	while (in.size > 0) {
		uint8_t op = take(&in);
		int hub = (op >> 4) & 1;

		switch (op % 15) {
		case 0: op_create(hub); break;
		case 1: op_destroy(hub); break;
		case 2: op_intern(hub, &in); break;
		case 3:
		case 4: op_observe(hub, &in); break;
		case 5: op_unobserve(hub, &in, 0); break;
		case 6: op_unobserve(hub, &in, 1); break;
		case 7: op_unobserve(hub, &in, 2); break;
		case 8: op_unobserve_group(hub, &in, true); break;
		case 9: op_unobserve_group(hub, &in, false); break;
		case 10:
		case 11: op_change(hub, &in, (op >> 5) & 1); break;
		case 12: op_flush(hub); break;
		case 13: op_has_observers(hub, &in); break;
		default: op_bad_arguments(&in); break;
		}
	}
	for (int hub = 0; hub < MAX_HUBS; hub++)
		op_destroy(hub);
	for (int i = 0; i < m.n_obs; i++)
		CHECK(m.obs[i].released == 1);
	return 0;
}
