/*
 * memory_breakdown.c — where the heap bytes of live C API observations go,
 * structure by structure (docs/benchmarks.md, "Memory per observation, by
 * structure"). `make memory-breakdown` builds it against the engine's
 * sources and runs it.
 *
 * Two workloads of N observations (default 100,000), as the benchmark's
 * memory rows: all on one (object, key), and one on each of N objects. For
 * each it reports the glibc heap growth (mallinfo2: uordblks + hblkhd) and
 * the engine's own structures, walked after registration, each counted at
 * its real heap footprint (malloc_usable_size + the 8-byte chunk header):
 * records in token pages and the page directory, observer lists, slots,
 * slot-map buckets, identity buckets, and the hash sets counted in the
 * hub's bytes (the objects set). What the walk does not attribute
 * (allocator slack) is the "rest" row.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../Sources/CKVOCore/engine.h"

static size_t
heap_now(void)
{
	struct mallinfo2 info = mallinfo2();

	return info.uordblks + info.hblkhd;
}

/* The heap footprint of one block: what malloc gave plus its chunk header. */
static size_t
block(const void *pointer)
{
	return pointer == NULL ? 0 : malloc_usable_size((void *)pointer) + sizeof(size_t);
}

static void
ignore(const ckvo_change_t *change, void *context)
{
	(void)change;
	(void)context;
}

struct tally {
	size_t pages, directory, lists, list_entries_used, slots, slotmap, identities, hub_sets;
};

static void
walk(struct ckvo_registry *registry, struct tally *t, size_t hub_bytes_before)
{
	struct ckvo_token_dir *dir = registry->tokens.dir;
	struct ckvo_slotmap_table *table = registry->slots.table;
	size_t counted;

	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; dir != NULL && i < dir->capacity; i++) {
		if (dir->pages[i] != NULL)
			t->pages += block(dir->pages[i]);
	}
	t->directory = block(dir);
	t->slotmap = block(table);
	for (uint32_t i = 0; i <= table->mask; i++) {
		struct ckvo_slot *slot = table->buckets[i];

		if (slot == NULL || slot == CKVO_SLOTMAP_TOMBSTONE)
			continue;
		/* The first list's room is in the slot's block: counted as a list. */
		t->slots += block(slot) - (CKVO_SLOT_BLOCK_SIZE - sizeof(*slot));
		t->lists += CKVO_SLOT_BLOCK_SIZE - sizeof(*slot);
		if (slot->list != ckvo__slot_first_list(slot))
			t->lists += block((char *)slot->list - sizeof(ck_epoch_entry_t));
		t->list_entries_used += slot->list->count;
	}
	t->identities = block(registry->identities.buckets);
	/* The objects set's growth beyond its first map: its buckets are 8 bytes. */
	counted = registry->objects.capacity * sizeof(void *);
	t->hub_sets = counted > hub_bytes_before ? counted - hub_bytes_before : 0;
}

static void
row(const char *name, size_t bytes, size_t n, const char *what)
{
	printf("| %s | %.1f | %s |\n", name, (double)bytes / (double)n, what);
}

static int
run(const char *title, size_t n, int per_object)
{
	ckvo_hub_t *hub = ckvo_hub_create();
	struct ckvo_registry *registry = &((struct ckvo_hub *)hub)->registry;
	ckvo_key_t key = ckvo_key_intern(hub, "value", NULL);
	char *objects = malloc(n);
	ckvo_token_t *tokens = malloc(n * sizeof(*tokens));
	struct tally t;
	size_t before, after, hub_before, attributed;

	if (hub == NULL || key == 0 || objects == NULL || tokens == NULL)
		return 1;
	hub_before = registry->objects.capacity * sizeof(void *);
	before = heap_now();
	for (size_t i = 0; i < n; i++) {
		if (ckvo_observe(hub, per_object ? &objects[i] : &objects[0], key, CKVO_OPTION_NEW, NULL,
		    ignore, (void *)(i + 1), NULL, &tokens[i]) != CKVO_OK)
			return 1;
	}
	after = heap_now();
	walk(registry, &t, hub_before);
	attributed = t.pages + t.directory + t.lists + t.slots + t.slotmap + t.identities +
	    t.hub_sets;

	printf("\n### %s: %zu observations\n\n", title, n);
	printf("| structure | bytes per observation | what |\n|---|---:|---|\n");
	row("observation record", t.pages, n, "token pages: 16 records of "
	    "sizeof(struct ckvo_observation) each, plus the page's bookkeeping");
	row("token directory", t.directory, n, "one page pointer per 16 records, doubling");
	row("list entries", t.lists, n, per_object ? "one list per slot, in the slot's block: "
	    "header + capacity 1" : "one list, capacity growing by half");
	row("slot", t.slots, n, "one per (object, key)");
	row("slot-map buckets", t.slotmap, n, "8-byte buckets, at most half full");
	row("identity buckets", t.identities, n, "4-byte buckets (duplicate detection)");
	row("objects set", t.hub_sets, n, "the ck_hs map from an object to its newest slot");
	row("rest (allocator, unattributed)", after - before > attributed ? after - before - attributed : 0,
	    n, "heap growth the walk does not name");
	row("**total (heap growth)**", after - before, n, "mallinfo2");
	printf("\nsizeof: record %zu, entry %zu, list header %zu, slot %zu, token page %zu\n",
	    sizeof(struct ckvo_observation), sizeof(struct ckvo_entry), sizeof(struct ckvo_list),
	    sizeof(struct ckvo_slot), sizeof(struct ckvo_token_page));
	for (size_t i = 0; i < n; i++)
		(void)ckvo_unobserve(hub, tokens[i]);
	(void)ckvo_hub_destroy(hub);
	free(tokens);
	free(objects);
	return 0;
}

int
main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;

	if (n == 0)
		return 2;
	return run("C API, one (object, key)", n, 0) || run("C API, one observation per object", n, 1);
}
