/*
 * token.h — the token pages that hold observation records, and the tokens
 * that name them (token.c) (never installed).
 */
#ifndef CKVO_TOKEN_H
#define CKVO_TOKEN_H

#include "ledger.h"
#include "observation.h"

/*
 * 16 records a page: one survivor pins 1,088 bytes, not a page of 512 (33 KB),
 * and the directory costs half a byte a record.
 */
#define CKVO_TOKEN_PAGE_BITS 4
#define CKVO_TOKEN_PAGE_SIZE (1u << CKVO_TOKEN_PAGE_BITS)
/* A token is (generation, record index); the index is 32 bits (token.c). */
#define CKVO_TOKEN_PAGES_MAX ((uint32_t)1 << (32 - CKVO_TOKEN_PAGE_BITS))
/* Empty token pages a hub keeps for reuse at least (token.c): churn's records in flight. */
#define CKVO_TOKEN_SPARE_PAGES 8u
/* Generations a hub takes from the process-wide sequence at once. */
#define CKVO_GENERATION_BLOCK 1024u

/* The observation records of CKVO_TOKEN_PAGE_SIZE consecutive indexes. */
struct ckvo_token_page {
	struct ckvo_observation records[CKVO_TOKEN_PAGE_SIZE];

	/* Writer-only. */
	ck_stack_entry_t *free;        /* records not in use, linked through `link` */
	uint32_t in_use;               /* records handed out and not returned */
	uint32_t number;               /* its index in the directory */
	struct ckvo_token_page *free_prev, *free_next; /* on tokens.free_pages */
	struct ckvo_token_page *spare_prev, *spare_next; /* on tokens.spare_pages while empty */
	ck_epoch_entry_t retire;
};

/*
 * Page directory; replaced by a larger copy, the older one retired through
 * the epoch (a reader may still be loading a page pointer from it).
 */
struct ckvo_token_dir {
	ck_epoch_entry_t retire;
	uint32_t capacity; /* pages */
	struct ckvo_token_page *pages[];
};

struct ckvo_tokens {
	struct ckvo_token_dir *dir; /* published (atomic) */
	/* Writer-only. */
	struct ckvo_token_page *free_pages; /* pages with a record not in use */
	uint64_t generation_next, generation_end; /* this hub's block of generations */
	uint32_t *vacant;       /* stack of directory entries whose page was freed */
	uint32_t vacant_count, vacant_capacity;
	uint32_t pages;         /* directory entries ever filled */
	uint32_t spares;        /* pages kept with no record in use (token.c says how many) */
	struct ckvo_token_page *spare_pages; /* those pages */
	uint64_t out;           /* records handed out and not returned */
	uint64_t flight_peak;   /* most records out but not live since the last settle */
};

/* The token of `obs` (under the writer lock, or inside a read section that found it). */
static inline ckvo_token_t
ckvo__token_of(const struct ckvo_observation *obs)
{
	return (ckvo_token_t){ .generation = obs->generation, .index = obs->id };
}

/*
 * The record at index `id`, or NULL: under the writer lock, or inside a read
 * section, which keeps the directory and page it loads alive. Inline: the
 * identity table resolves record ids through it on every registration.
 */
static inline struct ckvo_observation *
ckvo__token_record(struct ckvo_tokens *tokens, uint32_t id)
{
	struct ckvo_token_dir *dir = ck_pr_load_ptr(&tokens->dir);
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

/*
 * token.c. `live` is the hub's count of live observations: records handed
 * out beyond it are in flight (see token.c on spare pages).
 */
struct ckvo_observation *ckvo__token_take(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger);
void ckvo__token_return(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger,
    struct ckvo_observation *obs, uint64_t live);
struct ckvo_observation *ckvo__token_find(struct ckvo_tokens *tokens, ckvo_token_t token,
    uint64_t *tag);
void ckvo__tokens_settle(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger, uint64_t live);
void ckvo__tokens_destroy(struct ckvo_tokens *tokens);

#endif /* CKVO_TOKEN_H */
