/* macros.c — header macro values that Swift cannot import, seen through C. */
#include "ckvo_test_support.h"

const ckvo_options_t ckvots_options_all = CKVO_OPTIONS_ALL;

unsigned int
ckvots_header_version_hex(void)
{
	return CKVO_VERSION_HEX;
}

const char *
ckvots_header_version_string(void)
{
	return CKVO_VERSION_STRING;
}

struct status_entry {
	int value;
	const char *name;
	const char *message;
};

static const struct status_entry status_table[] = {
#define CKVOTS_STATUS_ENTRY_(name, value, message) { (value), "CKVO_" #name, (message) },
	CKVO_STATUS_MAP(CKVOTS_STATUS_ENTRY_)
#undef CKVOTS_STATUS_ENTRY_
};

size_t
ckvots_status_count(void)
{
	return sizeof(status_table) / sizeof(status_table[0]);
}

bool
ckvots_status_at(size_t i, int *value, const char **name, const char **message)
{
	if (i >= ckvots_status_count())
		return false;
	if (value != NULL)
		*value = status_table[i].value;
	if (name != NULL)
		*name = status_table[i].name;
	if (message != NULL)
		*message = status_table[i].message;
	return true;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define CKVOTS_SANITIZED_ 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define CKVOTS_SANITIZED_ 1
#endif

bool
ckvots_sanitizer_active(void)
{
#ifdef CKVOTS_SANITIZED_
	return true;
#else
	return false;
#endif
}
