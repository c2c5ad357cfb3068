/*
 * token.c — tokens and the observation records they name.
 *
 * A token is (generation << 32) | (id + 1), where id is the index of the
 * observation's record in the token pages. A record's generation grows
 * every time the record is reused, and a record whose generation is
 * exhausted is never reused (reclaim.c), so a token is never handed out
 * twice in a hub's life. Token 0 is invalid by construction.
 *
 * Invariants
 * ----------
 * - The records live in fixed-size pages reached through a directory. A
 *   larger directory copies the page pointers and is published with one
 *   store; older directories stay until the hub dies, but a page leaves the
 *   current directory and is freed after a grace period once all its
 *   records are back (below), so an older directory may hold a dangling
 *   page pointer and is never walked. A reader that looks a token up
 *   outside the writer lock does so inside a read section, which keeps the
 *   page it loads alive; a record's address never changes while its page
 *   lives.
 * - A record is found by token only while its tag carries the token's
 *   generation. A reader compares the generation, and acts on the state,
 *   from one load of the tag; a compare-and-swap on the tag with that value
 *   (ckvo_unobserve_deferred) cannot touch a later generation.
 * - A record is reused only after a grace period following its removal,
 *   and removal moves its state to REMOVED first. So a reader that finds it
 *   LIVE or DEFERRED loaded the tag before the removal, inside a section
 *   that began earlier, and the record keeps its generation and slot until
 *   that section ends.
 * - Records are handed out and returned under the writer lock, from pages
 *   that have one not in use. A page whose records are all returned leaves
 *   the directory and is freed after a grace period (a reader holding an old
 *   token may still be loading a tag from it). The newest generation among
 *   its records is kept for its directory entry, and a page that later
 *   fills that entry starts above it, so a token still never comes back.
 *   A record whose generation is exhausted is never returned, so its page
 *   is never freed.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Grows the directory (and the per-entry generations) to hold entry `number`. */
static bool
dir_reserve(struct ckvo_tokens *tokens, uint32_t number)
{
	struct ckvo_token_dir *dir = tokens->dir, *bigger;
	uint32_t capacity = dir == NULL ? 8 : dir->capacity;
	uint32_t *generations;

	if (dir != NULL && number < dir->capacity)
		return true;
	while (capacity <= number)
		capacity *= 2;
	generations = realloc(tokens->generations, (size_t)capacity * sizeof(*generations));
	if (generations == NULL)
		return false;
	tokens->generations = generations;
	bigger = calloc(1, sizeof(*bigger) + (size_t)capacity * sizeof(bigger->pages[0]));
	if (bigger == NULL)
		return false;
	bigger->capacity = capacity;
	bigger->older = dir;
	if (dir != NULL)
		memcpy(bigger->pages, dir->pages, (size_t)dir->capacity * sizeof(dir->pages[0]));
	CKVO_TSAN_RELEASE(bigger);
	ck_pr_fence_store();
	ck_pr_store_ptr(&tokens->dir, bigger);
	return true;
}

static void
free_pages_add(struct ckvo_tokens *tokens, struct ckvo_token_page *page)
{
	page->free_prev = NULL;
	page->free_next = tokens->free_pages;
	if (tokens->free_pages != NULL)
		tokens->free_pages->free_prev = page;
	tokens->free_pages = page;
}

static void
free_pages_remove(struct ckvo_tokens *tokens, struct ckvo_token_page *page)
{
	if (page->free_prev != NULL)
		page->free_prev->free_next = page->free_next;
	else
		tokens->free_pages = page->free_next;
	if (page->free_next != NULL)
		page->free_next->free_prev = page->free_prev;
}

/* A new page in a vacant directory entry or a new one, all of its records free. */
static struct ckvo_token_page *
page_create(struct ckvo_tokens *tokens)
{
	bool vacant = tokens->vacant_count > 0;
	uint32_t number = vacant ? tokens->vacant[tokens->vacant_count - 1] : tokens->pages;
	uint32_t generation = vacant ? tokens->generations[number] : 0;
	struct ckvo_token_page *page;

	if (!vacant && (number > (UINT32_MAX >> CKVO_TOKEN_PAGE_BITS) - 1 ||
	    !dir_reserve(tokens, number)))
		return NULL;
	page = calloc(1, sizeof(*page));
	if (page == NULL)
		return NULL;
	page->number = number;
	for (uint32_t i = CKVO_TOKEN_PAGE_SIZE; i-- > 0;) {
		struct ckvo_observation *obs = &page->records[i];

		obs->id = (number << CKVO_TOKEN_PAGE_BITS) | i;
		obs->tag = ckvo__tag_make(generation, 0, CKVO_STATE_REMOVED);
		obs->link.next = page->free;
		page->free = &obs->link;
	}
	if (vacant)
		tokens->vacant_count--;
	else
		tokens->pages++;
	free_pages_add(tokens, page);
	CKVO_TSAN_RELEASE(page);
	ck_pr_fence_store();
	ck_pr_store_ptr(&tokens->dir->pages[number], page);
	return page;
}

/* Everything but the tag (a reader holding an old token may still load it) and the link. */
static void
record_poison(struct ckvo_observation *obs)
{
	CKVO_ASAN_POISON((char *)obs + sizeof(obs->tag),
	    offsetof(struct ckvo_observation, link) - sizeof(obs->tag));
	CKVO_ASAN_POISON((char *)(&obs->link + 1),
	    sizeof(*obs) - offsetof(struct ckvo_observation, link) - sizeof(obs->link));
}

struct ckvo_observation *
ckvo__token_take(struct ckvo_hub *hub)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	struct ckvo_token_page *page = tokens->free_pages;
	struct ckvo_observation *obs;

	if (page == NULL) {
		page = page_create(tokens);
		if (page == NULL)
			return NULL;
	}
	obs = CKVO_CONTAINER(struct ckvo_observation, link, page->free);
	CKVO_ASAN_UNPOISON(obs, sizeof(*obs));
	page->free = obs->link.next;
	if (page->free == NULL)
		free_pages_remove(tokens, page);
	page->in_use++;
	/*
	 * A reader holding an old token may load the tag, and finds the new
	 * generation; nothing else of the record is reachable until it is live.
	 */
	ck_pr_store_64(&obs->tag,
	    ckvo__tag_make(ckvo__tag_generation(obs->tag) + 1, 0, CKVO_STATE_INSTALLING));
	return obs;
}

static void
page_free(ck_epoch_entry_t *entry)
{
	struct ckvo_token_page *page = CKVO_CONTAINER(struct ckvo_token_page, retire, entry);

	/* Its records were poisoned as they came back. */
	CKVO_ASAN_UNPOISON(page, sizeof(*page));
	free(page);
}

void
ckvo__token_return(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	uint32_t number = obs->id >> CKVO_TOKEN_PAGE_BITS;
	struct ckvo_token_page *page = tokens->dir->pages[number];
	uint32_t newest = 0;

	ck_pr_store_64(&obs->tag,
	    ckvo__tag_make(ckvo__tag_generation(obs->tag), 0, CKVO_STATE_REMOVED));
	if (ckvo__tag_generation(obs->tag) == UINT32_MAX)
		return; /* exhausted: never reused, and its page stays */
	if (page->free == NULL)
		free_pages_add(tokens, page);
	obs->link.next = page->free;
	page->free = &obs->link;
	record_poison(obs);
	if (--page->in_use != 0)
		return;

	/* Every record is back: the page goes, its newest generation stays. */
	for (uint32_t i = 0; i < CKVO_TOKEN_PAGE_SIZE; i++) {
		uint32_t generation = ckvo__tag_generation(page->records[i].tag);

		if (generation > newest)
			newest = generation;
	}
	if ((tokens->vacant_count & (tokens->vacant_count + 1)) == 0) {
		uint32_t *grown = realloc(tokens->vacant,
		    ((size_t)tokens->vacant_count + 1) * 2 * sizeof(*grown));

		if (grown == NULL)
			return; /* the page stays, still usable */
		tokens->vacant = grown;
	}
	tokens->vacant[tokens->vacant_count++] = number;
	tokens->generations[number] = newest;
	free_pages_remove(tokens, page);
	ck_pr_store_ptr(&tokens->dir->pages[number], NULL);
	ckvo__retire(hub, &page->retire, page_free);
	ckvo__retire_large(hub, sizeof(*page));
}

ckvo_token_t
ckvo__token_of(const struct ckvo_observation *obs, uint64_t tag)
{
	return ((uint64_t)ckvo__tag_generation(tag) << 32) | ((uint64_t)obs->id + 1);
}

struct ckvo_observation *
ckvo__token_record(struct ckvo_hub *hub, uint32_t id)
{
	struct ckvo_token_dir *dir = ck_pr_load_ptr(&hub->tokens.dir);
	uint32_t page_index = id >> CKVO_TOKEN_PAGE_BITS;
	struct ckvo_token_page *page;

	if (dir == NULL)
		return NULL;
	CKVO_TSAN_ACQUIRE(dir);
	if (page_index >= dir->capacity)
		return NULL;
	page = ck_pr_load_ptr(&dir->pages[page_index]);
	if (page == NULL)
		return NULL;
	CKVO_TSAN_ACQUIRE(page);
	return &page->records[id & (CKVO_TOKEN_PAGE_SIZE - 1)];
}

struct ckvo_observation *
ckvo__token_find(struct ckvo_hub *hub, ckvo_token_t token, uint64_t *tag)
{
	uint64_t low = token & 0xffffffffu;
	struct ckvo_observation *obs;

	if (low == 0)
		return NULL;
	obs = ckvo__token_record(hub, (uint32_t)(low - 1));
	if (obs == NULL)
		return NULL;
	*tag = ck_pr_load_64(&obs->tag);
	/* Pairs with the release when the record went live (observe.c). */
	CKVO_TSAN_ACQUIRE(obs);
	if (ckvo__tag_generation(*tag) != (uint32_t)(token >> 32))
		return NULL;
	return obs;
}

void
ckvo__tokens_destroy(struct ckvo_hub *hub)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	struct ckvo_token_dir *dir = tokens->dir;

	if (dir != NULL) {
		for (uint32_t i = 0; i < dir->capacity; i++) {
			if (dir->pages[i] == NULL)
				continue;
			/* Records not in use are poisoned. */
			CKVO_ASAN_UNPOISON(dir->pages[i], sizeof(*dir->pages[i]));
			free(dir->pages[i]);
		}
	}
	while (dir != NULL) {
		struct ckvo_token_dir *older = dir->older;

		free(dir);
		dir = older;
	}
	free(tokens->generations);
	free(tokens->vacant);
	memset(tokens, 0, sizeof(*tokens));
}
