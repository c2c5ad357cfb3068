/*
 * thermostat.c — embedding CKVOCore in a plain C program.
 *
 * Build against an installed copy:
 *     cc thermostat.c $(pkg-config --cflags --libs ckvo) -o thermostat
 * or run `make example` in the repository.
 */
#include <ckvo.h>
#include <stdio.h>
#include <stdlib.h>

struct thermostat {
	double temperature;
};

static ckvo_hub_t *hub;
static ckvo_key_t temperature_key;

/* How an initial notification reads the current value. */
static const void *
temperature_get(const void *object, ckvo_key_t key)
{
	(void)key;
	return &((const struct thermostat *)object)->temperature;
}

/* The setter announces the change around the store. */
static void
thermostat_set(struct thermostat *t, double value)
{
	double old = t->temperature;
	ckvo_change_t change = {
		.object = t,
		.key = temperature_key,
		.kind = CKVO_KIND_SETTING,
		.old_value = &old,
		.new_value = &value,
	};

	if (!ckvo_has_observers(hub, t, temperature_key)) {
		t->temperature = value;
		return;
	}
	(void)ckvo_will_change(hub, &change);
	t->temperature = value;
	(void)ckvo_did_change(hub, &change);
}

static void
display(const ckvo_change_t *change, void *context)
{
	const char *room = context;
	const double *new_value = change->new_value;
	const double *old_value = change->old_value;

	if (change->is_initial)
		printf("%s: starts at %.1f\n", room, *new_value);
	else
		printf("%s: %.1f -> %.1f\n", room, *old_value, *new_value);
}

static void
audit(const ckvo_change_t *change, void *context)
{
	int *count = context;

	(*count)++;
	printf("audit: %s changed (%d so far)\n", ckvo_key_name(hub, change->key), *count);
}

static void
release_room(void *context)
{
	printf("released observer context \"%s\"\n", (const char *)context);
}

int
main(void)
{
	struct thermostat kitchen = { .temperature = 19.5 };
	ckvo_token_t display_token;
	int audits = 0;
	ckvo_status_t status;

	printf("ckvo %s (header %s)\n", ckvo_version_string(), CKVO_VERSION_STRING);
	if (ckvo_version() != CKVO_VERSION_HEX)
		return EXIT_FAILURE;

	hub = ckvo_hub_create();
	temperature_key = ckvo_key_intern(hub, "temperature", temperature_get);
	if (hub == NULL || temperature_key == 0)
		return EXIT_FAILURE;

	status = ckvo_observe(hub, &kitchen, temperature_key,
	    CKVO_OPTION_INITIAL | CKVO_OPTION_NEW | CKVO_OPTION_OLD, NULL, display, "kitchen",
	    release_room, &display_token);
	if (status != CKVO_OK) {
		fprintf(stderr, "observe: %s\n", ckvo_strerror(status));
		return EXIT_FAILURE;
	}
	/* A NULL object observes the key on every thermostat. */
	status = ckvo_observe(hub, NULL, temperature_key, 0, NULL, audit, &audits, NULL, NULL);
	if (status != CKVO_OK)
		return EXIT_FAILURE;

	thermostat_set(&kitchen, 21.0);
	thermostat_set(&kitchen, 21.0); /* every change notifies, equal or not */

	status = ckvo_unobserve(hub, display_token);
	printf("unobserve: %s\n", ckvo_strerror(status));
	status = ckvo_unobserve(hub, display_token);
	printf("unobserve again: %s\n", ckvo_strerror(status));
	thermostat_set(&kitchen, 18.0);

	(void)ckvo_hub_destroy(hub);
	return audits == 3 ? EXIT_SUCCESS : EXIT_FAILURE;
}
