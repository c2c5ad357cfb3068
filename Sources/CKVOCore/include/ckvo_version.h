/*
 * ckvo_version.h — the version of the CKVOCore headers.
 *
 * Compare CKVO_VERSION_HEX (what you compiled against) with ckvo_version()
 * (what you linked against) to detect a header/library mismatch.
 */
#ifndef CKVO_VERSION_H
#define CKVO_VERSION_H

#define CKVO_VERSION_MAJOR 1
#define CKVO_VERSION_MINOR 0
#define CKVO_VERSION_PATCH 0

/* 0xMMmmpp: one byte each for major, minor and patch. */
#define CKVO_VERSION_HEX \
	((CKVO_VERSION_MAJOR << 16) | (CKVO_VERSION_MINOR << 8) | CKVO_VERSION_PATCH)

#define CKVO_STRINGIFY_(x) #x
#define CKVO_STRINGIFY(x) CKVO_STRINGIFY_(x)
#define CKVO_VERSION_STRING                                                    \
	CKVO_STRINGIFY(CKVO_VERSION_MAJOR) "." CKVO_STRINGIFY(CKVO_VERSION_MINOR) \
	"." CKVO_STRINGIFY(CKVO_VERSION_PATCH)

#endif /* CKVO_VERSION_H */
