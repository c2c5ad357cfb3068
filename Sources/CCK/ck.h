/* The Concurrency Kit primitives CKVOCore is built on (Debian: libck-dev). */
#include <ck_epoch.h>
#include <ck_hs.h>
#include <ck_pr.h>
#include <ck_stack.h>
