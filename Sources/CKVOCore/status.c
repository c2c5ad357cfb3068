/*
 * status.c — status messages and the library version.
 */
#include "ckvo.h"

const char *
ckvo_strerror(int status)
{
	switch (status) {
#define CKVO_STATUS_MESSAGE_(name, value, message) \
	case (value):                              \
		return (message);
		CKVO_STATUS_MAP(CKVO_STATUS_MESSAGE_)
#undef CKVO_STATUS_MESSAGE_
	default:
		return "unknown status";
	}
}

unsigned int
ckvo_version(void)
{
	return CKVO_VERSION_HEX;
}

const char *
ckvo_version_string(void)
{
	return CKVO_VERSION_STRING;
}
