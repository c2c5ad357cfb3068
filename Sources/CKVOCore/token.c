/*
 * token.c — tokens: index + generation, looked up lock-free.
 *
 * A token is (generation << 32) | (index + 1). Each index has a generation
 * that grows every time the index is reused, and an index whose generation
 * is exhausted is never reused, so a token is never handed out twice in a
 * hub's life. Token 0 is invalid by construction.
 *
 * Invariants
 * ----------
 * - The index → observation map is a directory of fixed-size pages. Pages
 *   and directories are only added (a larger directory copies the page
 *   pointers and is published with one store; older directories stay until
 *   the hub dies), so a reader never meets freed directory memory.
 * - page->obs[i] is published last, after the observation is installed
 *   everywhere else (a failed registration is never visible by token), and
 *   cleared before the observation is retired. A reader inside an epoch section
 *   that loaded the pointer may use it until the section ends, and must
 *   compare obs->token with its token (the index may have been reused).
 * - Generations and the free-index stack are writer-only.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CKVO_TOKEN_GENERATION_MAX UINT32_MAX

static inline ckvo_token_t
token_make(uint32_t index, uint32_t generation)
{
	return ((uint64_t)generation << 32) | ((uint64_t)index + 1);
}

static bool
token_split(ckvo_token_t token, uint32_t *index, uint32_t *generation)
{
	uint64_t low = token & 0xffffffffu;

	if (low == 0)
		return false;
	*index = (uint32_t)(low - 1);
	*generation = (uint32_t)(token >> 32);
	return true;
}

/* The page holding `index`, allocating the page (and a larger directory) as needed. */
static struct ckvo_token_page *
page_for_writer(struct ckvo_tokens *tokens, uint32_t index)
{
	uint32_t page_index = index >> CKVO_TOKEN_PAGE_BITS;
	struct ckvo_token_dir *dir = tokens->dir;
	struct ckvo_token_page *page;

	if (dir == NULL || page_index >= dir->capacity) {
		uint32_t capacity = dir == NULL ? 8 : dir->capacity * 2;
		struct ckvo_token_dir *bigger;

		while (capacity <= page_index)
			capacity *= 2;
		bigger = calloc(1, sizeof(*bigger) + (size_t)capacity * sizeof(bigger->pages[0]));
		if (bigger == NULL)
			return NULL;
		bigger->capacity = capacity;
		bigger->older = dir;
		if (dir != NULL)
			memcpy(bigger->pages, dir->pages, (size_t)dir->capacity * sizeof(dir->pages[0]));
		CKVO_TSAN_RELEASE(bigger);
		ck_pr_fence_store();
		ck_pr_store_ptr(&tokens->dir, bigger);
		dir = bigger;
	}

	page = dir->pages[page_index];
	if (page == NULL) {
		page = calloc(1, sizeof(*page));
		if (page == NULL)
			return NULL;
		CKVO_TSAN_RELEASE(page);
		ck_pr_fence_store();
		ck_pr_store_ptr(&dir->pages[page_index], page);
	}
	return page;
}

/* Grows the per-index generation array to hold `index`. */
static bool
generation_reserve(struct ckvo_tokens *tokens, uint32_t index)
{
	uint32_t capacity = tokens->generation_capacity;
	uint32_t *grown;

	if (index < capacity)
		return true;
	capacity = capacity == 0 ? 64 : capacity * 2;
	grown = realloc(tokens->generation, (size_t)capacity * sizeof(*grown));
	if (grown == NULL)
		return false;
	memset(grown + tokens->generation_capacity, 0,
	    (size_t)(capacity - tokens->generation_capacity) * sizeof(*grown));
	tokens->generation = grown;
	tokens->generation_capacity = capacity;
	return true;
}

bool
ckvo__token_reserve(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	struct ckvo_token_page *page;
	uint32_t index;
	bool reused = tokens->free_count > 0;

	if (reused) {
		index = tokens->free[tokens->free_count - 1];
	} else {
		if (tokens->used == UINT32_MAX)
			return false;
		index = tokens->used;
		if (!generation_reserve(tokens, index))
			return false;
	}

	page = page_for_writer(tokens, index);
	if (page == NULL)
		return false;

	if (reused)
		tokens->free_count--;
	else
		tokens->used++;
	tokens->generation[index]++;
	obs->token = token_make(index, tokens->generation[index]);
	return true;
}

void
ckvo__token_publish(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	uint32_t index = (uint32_t)(obs->token & 0xffffffffu) - 1;
	struct ckvo_token_page *page = hub->tokens.dir->pages[index >> CKVO_TOKEN_PAGE_BITS];

	/* The observation is complete before a reader can find it by token. */
	CKVO_TSAN_RELEASE(obs);
	ck_pr_fence_store();
	ck_pr_store_ptr(&page->obs[index & (CKVO_TOKEN_PAGE_SIZE - 1)], obs);
}

void
ckvo__token_release(struct ckvo_hub *hub, struct ckvo_observation *obs)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	uint32_t index = 0, generation = 0;
	struct ckvo_token_page *page;

	(void)token_split(obs->token, &index, &generation); /* always valid: we made it */
	page = tokens->dir->pages[index >> CKVO_TOKEN_PAGE_BITS];
	ck_pr_store_ptr(&page->obs[index & (CKVO_TOKEN_PAGE_SIZE - 1)], NULL);

	if (generation == CKVO_TOKEN_GENERATION_MAX)
		return; /* exhausted: never reuse this index */
	if (tokens->free_count == tokens->free_capacity) {
		uint32_t capacity = tokens->free_capacity == 0 ? 64 : tokens->free_capacity * 2;
		uint32_t *grown = realloc(tokens->free, (size_t)capacity * sizeof(*grown));

		if (grown == NULL)
			return; /* the index is lost, never reused: still correct */
		tokens->free = grown;
		tokens->free_capacity = capacity;
	}
	tokens->free[tokens->free_count++] = index;
}

struct ckvo_observation *
ckvo__token_find(struct ckvo_hub *hub, ckvo_token_t token)
{
	uint32_t index, generation, page_index;
	struct ckvo_token_dir *dir;
	struct ckvo_token_page *page;
	struct ckvo_observation *obs;

	if (!token_split(token, &index, &generation))
		return NULL;
	dir = ck_pr_load_ptr(&hub->tokens.dir);
	if (dir == NULL)
		return NULL;
	CKVO_TSAN_ACQUIRE(dir);
	page_index = index >> CKVO_TOKEN_PAGE_BITS;
	if (page_index >= dir->capacity)
		return NULL;
	page = ck_pr_load_ptr(&dir->pages[page_index]);
	if (page == NULL)
		return NULL;
	CKVO_TSAN_ACQUIRE(page);
	obs = ck_pr_load_ptr(&page->obs[index & (CKVO_TOKEN_PAGE_SIZE - 1)]);
	if (obs == NULL)
		return NULL;
	CKVO_TSAN_ACQUIRE(obs);
	return obs->token == token ? obs : NULL;
}

void
ckvo__tokens_destroy(struct ckvo_hub *hub)
{
	struct ckvo_tokens *tokens = &hub->tokens;
	struct ckvo_token_dir *dir = tokens->dir;

	if (dir != NULL) {
		for (uint32_t i = 0; i < dir->capacity; i++)
			free(dir->pages[i]);
	}
	while (dir != NULL) {
		struct ckvo_token_dir *older = dir->older;

		free(dir);
		dir = older;
	}
	free(tokens->generation);
	free(tokens->free);
	memset(tokens, 0, sizeof(*tokens));
}
