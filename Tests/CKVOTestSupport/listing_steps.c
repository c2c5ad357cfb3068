/*
 * listing_steps.c — what a listing examined: the engine counts, per thread,
 * the slots (keys, for a NULL object) its listings walk (listing.c), so a
 * test can tell the cost of listing one object without timing it.
 */
#include "ckvo_test_support.h"

extern _Thread_local uint64_t ckvo__listing_steps;

uint64_t
ckvots_listing_steps(void)
{
	return ckvo__listing_steps;
}
