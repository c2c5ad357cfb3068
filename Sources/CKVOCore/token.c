/*
 * token.c — tokens and the observation records they name: where a record
 * is handed out for a new observation and given back, after its release,
 * for the next one.
 *
 * A token is (generation, index), where index is the position of the
 * observation's record in the hub's token pages and generation a 64-bit
 * number drawn, when the record is handed out, from one sequence shared by
 * every hub of the process (SPEC §2.21). Hubs take the sequence in blocks of
 * CKVO_GENERATION_BLOCK, so handing a record out costs no atomic operation
 * but once per block.
 *
 * Invariants it alone keeps
 * -------------------------
 * - No two registrations in the process, in any hub, get the same
 *   generation while the sequence lasts: it only grows, and a hub's block
 *   is its own. A token therefore names one observation of one hub. Given
 *   to another hub, or to a hub created after its own was destroyed, it
 *   meets a record whose generation differs (or no record), and is unknown
 *   there. Nothing is spent (SPEC §2.22): at one generation per nanosecond
 *   the sequence wraps after 584 years, and then it skips 0 (never a valid
 *   generation) and goes on; so no registration fails for lack of tokens.
 *   (CKVO_COUNTERS_NEAR_END starts it 2^16 before the wrap: counters.h.)
  * - Within one hub, generations grow in the order records are handed out,
 *   which is registration order (one writer at a time takes a record for
 *   each registration): dispatch orders two lists' observations by them,
 *   with ckvo__counter_before, which holds across the wrap (dispatch.c).
 * - The records live in pages of 16 reached through a directory. A larger
 *   directory copies the page pointers and is published with one store; the
 *   older one is retired through the epoch. A page leaves the directory and
 *   is freed after a grace period once all its records are back (below). A
 *   reader that looks a token up outside the writer lock does so inside a
 *   read section, which keeps the directory and page it loads alive; a
 *   record's address never changes while its page lives.
 * - A record is found by token only while its generation is the token's.
 *   The generation is stored before the tag that goes with it, and a reader
 *   loads the tag first: a tag whose check matches, followed by the token's
 *   generation, is that use's tag. It acts on the state from that one load;
 *   a compare-and-swap on the tag with that value (ckvo_unobserve_deferred)
 *   cannot touch a later use (below: no reuse while it reads).
 * - A record is reused only after a grace period following its removal,
 *   and removal moves its state to REMOVED first. So a reader that finds it
 *   LIVE or DEFERRED loaded the tag before the removal, inside a section
 *   that began earlier, and the record keeps its generation and slot until
 *   that section ends.
 * - Records are handed out and returned inside the writer session, from
 *   pages that have one not in use. A page whose records are all returned
 *   leaves the directory and is freed after a grace period (a reader holding
 *   an old token may still be loading a tag from it; ledger->garbage),
 *   unless it is kept as a spare. Its directory entry may be filled again by
 *   a new page: the generations its records get are new.
 * - Spares: empty pages kept so that churn allocates no page. Records in
 *   flight (handed out, their observation no longer live, not returned yet)
 *   come back a batch at a time after their grace period; while a reader is
 *   descheduled inside a read section (a busy announcer on a loaded
 *   machine), tens of thousands can be in flight and come back at once.
 *   So a hub keeps max(CKVO_TOKEN_SPARE_PAGES, flight_peak / 16 + 1) empty
 *   pages, where flight_peak is the most records in flight since the last
 *   settle. The session settles the tokens (ckvo__tokens_settle) when
 *   nothing is in flight any more: at the end of a flush, and when the
 *   background reclaimer finds nothing pending. Settling lowers the peak to
 *   what is in flight then and frees the spares beyond what it allows.
 * - Memory held: the live records' pages (at worst one page of 16 for each
 *   live observation, 1,088 bytes), the spares (eight after a settle, about
 *   9 KB; until then at most a page per 16 records that were in flight at
 *   once), the directory (8 bytes per page at the peak) and the stack of
 *   vacant entries (4 bytes per page at the peak); counted in
 *   registry->bytes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "token.h"

static void
dir_free(ck_epoch_entry_t *entry)
{
	free(CKVO_CONTAINER(struct ckvo_token_dir, retire, entry));
}

static size_t
dir_size(uint32_t capacity)
{
	return sizeof(struct ckvo_token_dir) + (size_t)capacity * sizeof(struct ckvo_token_page *);
}

/* Grows the directory to hold entry `number`; the old one is retired. */
static bool
dir_reserve(struct ckvo_ledger *ledger, struct ckvo_tokens *tokens, uint32_t number)
{
	struct ckvo_token_dir *dir = tokens->dir, *bigger;
	uint32_t capacity = dir == NULL ? 8 : dir->capacity;

	if (dir != NULL && number < dir->capacity)
		return true;
	while (capacity <= number)
		capacity *= 2;
	bigger = calloc(1, dir_size(capacity));
	if (bigger == NULL)
		return false;
	bigger->capacity = capacity;
	if (dir != NULL)
		memcpy(bigger->pages, dir->pages, (size_t)dir->capacity * sizeof(dir->pages[0]));
	CKVO_TSAN_RELEASE(bigger);
	ck_pr_fence_store();
	ck_pr_store_ptr(&tokens->dir, bigger);
	ckvo__bytes(ledger, (ptrdiff_t)dir_size(capacity));
	if (dir != NULL) {
		ckvo__bytes(ledger, -(ptrdiff_t)dir_size(dir->capacity));
		ckvo__retire(ledger->garbage, &dir->retire, dir_free);
	}
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

/* Keeps the empty `page` as a spare. */
static void
spare_add(struct ckvo_tokens *tokens, struct ckvo_token_page *page)
{
	page->spare_prev = NULL;
	page->spare_next = tokens->spare_pages;
	if (tokens->spare_pages != NULL)
		tokens->spare_pages->spare_prev = page;
	tokens->spare_pages = page;
	tokens->spares++;
}

/* `page` is no longer a spare: it hands out a record, or goes. */
static void
spare_remove(struct ckvo_tokens *tokens, struct ckvo_token_page *page)
{
	if (page->spare_prev != NULL)
		page->spare_prev->spare_next = page->spare_next;
	else
		tokens->spare_pages = page->spare_next;
	if (page->spare_next != NULL)
		page->spare_next->spare_prev = page->spare_prev;
	tokens->spares--;
}

/* Records handed out whose observation is no longer live and that are not back yet. */
static uint64_t
in_flight(const struct ckvo_tokens *tokens, uint64_t live)
{
	return tokens->out > live ? tokens->out - live : 0;
}

/* How many empty pages the hub keeps (see the top of this file). */
static uint32_t
spares_wanted(const struct ckvo_tokens *tokens)
{
	uint64_t wanted = tokens->flight_peak / CKVO_TOKEN_PAGE_SIZE + 1;

	if (wanted < CKVO_TOKEN_SPARE_PAGES)
		return CKVO_TOKEN_SPARE_PAGES;
	return wanted > CKVO_TOKEN_PAGES_MAX ? CKVO_TOKEN_PAGES_MAX : (uint32_t)wanted;
}

/* A new page in a vacant directory entry or a new one, all of its records free. */
static struct ckvo_token_page *
page_create(struct ckvo_ledger *ledger, struct ckvo_tokens *tokens)
{
	bool vacant = tokens->vacant_count > 0;
	uint32_t number = vacant ? tokens->vacant[tokens->vacant_count - 1] : tokens->pages;
	struct ckvo_token_page *page;

	if (!vacant && (number >= CKVO_TOKEN_PAGES_MAX || !dir_reserve(ledger, tokens, number)))
		return NULL;
	page = calloc(1, sizeof(*page));
	if (page == NULL)
		return NULL;
	ckvo__bytes(ledger, (ptrdiff_t)sizeof(*page));
	page->number = number;
	for (uint32_t i = CKVO_TOKEN_PAGE_SIZE; i-- > 0;) {
		struct ckvo_observation *obs = &page->records[i];

		obs->id = (number << CKVO_TOKEN_PAGE_BITS) | i;
		obs->tag = CKVO_STATE_REMOVED; /* generation 0: no token finds it */
		obs->link.next = page->free;
		page->free = &obs->link;
	}
	if (vacant)
		tokens->vacant_count--;
	else
		tokens->pages++;
	spare_add(tokens, page); /* empty until ckvo__token_take hands out its first record */
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

/* The process-wide sequence of generations; the next block starts here (0: not begun). */
static uint64_t generation_sequence;
static pthread_once_t generation_once = PTHREAD_ONCE_INIT;

static void
generation_sequence_init(void)
{
	ck_pr_store_64(&generation_sequence, ckvo__counter_start(1));
}

/* The next generation of this hub: never 0, unique in the process until the sequence wraps. */
static uint64_t
generation_take(struct ckvo_tokens *tokens)
{
	uint64_t generation;

	do {
		if (CKVO_UNLIKELY(tokens->generation_next == tokens->generation_end)) {
			(void)pthread_once(&generation_once, generation_sequence_init);
			/* Atomic: writers of other hubs take blocks concurrently. */
			tokens->generation_next =
			    ck_pr_faa_64(&generation_sequence, CKVO_GENERATION_BLOCK);
			tokens->generation_end = tokens->generation_next + CKVO_GENERATION_BLOCK;
		}
		generation = tokens->generation_next++;
	} while (CKVO_UNLIKELY(generation == 0));
	return generation;
}

struct ckvo_observation *
ckvo__token_take(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger)
{
	struct ckvo_token_page *page = tokens->free_pages;
	struct ckvo_observation *obs;
	uint64_t generation;

	if (page == NULL) {
		page = page_create(ledger, tokens);
		if (page == NULL)
			return NULL;
	}
	obs = CKVO_CONTAINER(struct ckvo_observation, link, page->free);
	CKVO_ASAN_UNPOISON(obs, sizeof(*obs));
	page->free = obs->link.next;
	if (page->free == NULL)
		free_pages_remove(tokens, page);
	if (page->in_use++ == 0)
		spare_remove(tokens, page);
	tokens->out++;
	/*
	 * A reader holding an old token may load the tag, and then the
	 * generation, which is the new one by then; nothing else of the record
	 * is reachable until it is live.
	 */
	generation = generation_take(tokens);
	ck_pr_store_64(&obs->generation, generation);
	ck_pr_fence_store();
	ck_pr_store_64(&obs->tag, ckvo__tag_check(generation) | CKVO_STATE_INSTALLING);
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

/*
 * Frees the empty `page` (not a spare): it leaves the directory, its entry
 * is vacant. False, and the page stays, when out of memory.
 */
static bool
page_release(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger, struct ckvo_token_page *page)
{
	uint32_t number = page->number;

	if (tokens->vacant_count == tokens->vacant_capacity) {
		/* Grows with the most entries ever vacant, counted at its real size. */
		uint32_t capacity = tokens->vacant_capacity == 0 ? 2 : tokens->vacant_capacity * 2;
		uint32_t *grown = realloc(tokens->vacant, (size_t)capacity * sizeof(*grown));

		if (grown == NULL)
			return false;
		tokens->vacant = grown;
		ckvo__bytes(ledger, (ptrdiff_t)(((size_t)capacity - tokens->vacant_capacity) *
		    sizeof(*grown)));
		tokens->vacant_capacity = capacity;
	}
	tokens->vacant[tokens->vacant_count++] = number;
	free_pages_remove(tokens, page);
	ck_pr_store_ptr(&tokens->dir->pages[number], NULL);
	ckvo__retire(ledger->garbage, &page->retire, page_free);
	ckvo__bytes(ledger, -(ptrdiff_t)sizeof(*page));
	return true;
}

void
ckvo__token_return(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger,
    struct ckvo_observation *obs, uint64_t live)
{
	uint32_t number = obs->id >> CKVO_TOKEN_PAGE_BITS;
	struct ckvo_token_page *page = tokens->dir->pages[number];
	uint64_t flight = in_flight(tokens, live);

	/* The peak is taken as records come back: they were all in flight together. */
	if (flight > tokens->flight_peak)
		tokens->flight_peak = flight;
	tokens->out--;
	ck_pr_store_64(&obs->tag, ckvo__tag_with(obs->tag, 0, CKVO_STATE_REMOVED));
	if (page->free == NULL)
		free_pages_add(tokens, page);
	obs->link.next = page->free;
	page->free = &obs->link;
	record_poison(obs);
	if (--page->in_use != 0)
		return;
	/* Every record is back: a spare, or the page goes (out of memory: a spare all the same). */
	if (tokens->spares < spares_wanted(tokens) || !page_release(tokens, ledger, page))
		spare_add(tokens, page);
}

void
ckvo__tokens_settle(struct ckvo_tokens *tokens, struct ckvo_ledger *ledger, uint64_t live)
{

	tokens->flight_peak = in_flight(tokens, live);
	while (tokens->spares > spares_wanted(tokens)) {
		struct ckvo_token_page *page = tokens->spare_pages;

		spare_remove(tokens, page);
		if (!page_release(tokens, ledger, page)) {
			spare_add(tokens, page);
			return;
		}
	}
}

struct ckvo_observation *
ckvo__token_find(struct ckvo_tokens *tokens, ckvo_token_t token, uint64_t *tag)
{
	struct ckvo_observation *obs;

	/* A record not yet handed out has generation 0; indexes are 32 bits. */
	if (token.generation == 0 || token.index > UINT32_MAX)
		return NULL;
	obs = ckvo__token_record(tokens, (uint32_t)token.index);
	if (obs == NULL)
		return NULL;
	*tag = ck_pr_load_64(&obs->tag);
	/* Pairs with the release when the record went live (registration.c). */
	CKVO_TSAN_ACQUIRE(obs);
	if ((*tag >> CKVO_TAG_CHECK_SHIFT) != (ckvo__tag_check(token.generation) >> CKVO_TAG_CHECK_SHIFT))
		return NULL;
	/* After the tag: the generation stored with it or a later one (ckvo__token_take). */
	ck_pr_fence_load();
	if (ck_pr_load_64(&obs->generation) != token.generation)
		return NULL;
	return obs;
}

void
ckvo__tokens_destroy(struct ckvo_tokens *tokens)
{
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
	free(dir);
	free(tokens->vacant);
	memset(tokens, 0, sizeof(*tokens));
}
