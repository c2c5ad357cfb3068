/*
 * release.c — the release runner: user `release` callbacks run from a
 * queue, one runner per hub at a time, iteratively. The stop of an
 * observation's life after its grace period (session.c -> here), before
 * its record is reused (token.c).
 *
 * Invariants it alone keeps
 * -------------------------
 * - An observation whose grace period has passed is appended to its hub's
 *   queue, under the hub lock, by whoever found it ready (session.c). Its
 *   position in the queue is its ticket: hub->queued counts observations
 *   ever queued, hub->taken those a runner took off the front, hub->done
 *   those whose release has returned and whose record went back to its
 *   page (token.c). The queue is FIFO and only the runner takes from it, so
 *   done <= taken <= queued, and every observation with a ticket at most
 *   `done` has been released.
 * - At most one thread is a hub's runner (hub->running, under the lock).
 *   It takes a chunk off the front, drops the lock, calls the releases,
 *   takes the lock again, gives the records back and advances `done`,
 *   broadcasting hub->ran; then the next chunk, in a loop. So a release
 *   that removes again (even ckvo_unobserve_sync on the next token) only
 *   queues behind itself: the runner reaches it in a later turn of the
 *   same loop, on the same stack frame. Release depth is one.
 * - A thread becomes a runner only outside every read section (never
 *   inside a dispatch or an initial callback) and while it runs no release
 *   itself (runner_thread.releasing): a release never runs inside another
 *   callback, nor nested inside another release. The one exception is
 *   ckvo_hub_destroy called from a release of another hub: it must release
 *   everything of the hub it destroys, so it runs that hub's queue there.
 *   No release runs under a hub lock.
 * - An observation that a release removes from its own hub is that
 *   release's follow-up: it carries the release's ticket (obs->origin, set
 *   when it is removed), and whoever queues it after its grace period (the
 *   release's own strict removal, another thread's poll or flush, the
 *   background reclaimer) puts it at the front of the queue, just after the
 *   runner's current chunk, and moves past it the ticket of every waiter at
 *   or after that origin (hub->waiters). So whoever waits for a release
 *   also waits for the releases it started by strict removal, whichever
 *   thread runs them: the effect of the nested calls of old, without their
 *   stack. Waiters for earlier tickets do not move.
 * - A runner runs up to a ticket, moved by the follow-ups of the releases
 *   it runs: a writer's commit, its share plus one chunk; the background
 *   reclaimer, what was queued when it began; a flush, its own ticket. It
 *   never takes over other threads' later work indefinitely: what is left
 *   queued when it stops is the background reclaimer's (reclaimer.c), armed
 *   by the commit that follows.
 * - A flush (session.c) takes its ticket after queueing what it detached:
 *   it waits until `done` reaches that ticket, moved by follow-ups as
 *   above, and no further. While another thread is the runner it sleeps on
 *   hub->ran; when no thread is, it runs the queue itself up to its
 *   ticket. It never waits for work queued after it began other than the
 *   follow-ups of releases it waits for.
 * - The runner takes the hub lock only to take chunks and give records back
 *   (token.c): it never opens a writer session, never polls and never
 *   carries out deferred removals, so running releases never re-enters the
 *   session that queued them.
 * - The backlog is bounded (SPEC §2.23). A writer's commit, outside every
 *   callback and release, runs at most its own share (what it removed) plus
 *   CKVO_RELEASE_CHUNK others' releases; the background reclaimer runs the
 *   rest. While more than CKVO_RELEASE_BACKLOG releases are queued and not
 *   returned, such a commit helps (runs that budget as the runner) or, while
 *   another thread is the runner, sleeps on hub->ran until the backlog is
 *   back under the bound: it never returns over the bound without having
 *   run its budget, so removals cannot outpace the runner.
 * - Nothing is held privately across a callback the engine does not
 *   control except a runner's current chunk and the waiter records of the
 *   runner's frames. A thread that exits inside a release (pthread_exit, or
 *   a cancellation the release acts on) unwinds through cleanup handlers
 *   that, under the lock: count the releases of its chunk up to the one that
 *   exited as run, put the rest back at the front of the queue, unlink its
 *   waiter records and give up the runner role, waking the reclaimer. After
 *   fork() the child keeps the forking thread's own waiter records (it may be
 *   inside a release, as the runner) and drops every other thread's.
 * - Tickets (queued, taken, done, waiters' tickets) are 64-bit counters
 *   compared with ckvo__counter_before: their wrap is a place they pass.
 *   origin 0 means "none", so the release at ticket 0 hands its follow-ups
 *   origin ~0: waiters for the release before it wait for them too.
 */
#include <stdlib.h>

#include "counters.h"
#include "engine.h"

/* This thread's part in running releases, across all hubs. */
struct runner_thread {
	unsigned int releasing;    /* release callbacks running on this thread */
	struct ckvo_hub *running;  /* hub whose releases this thread runs (innermost) */
	uint64_t position;         /* the ticket of the release it runs on `running` */
};

static __thread struct runner_thread runner_thread __attribute__((tls_model("initial-exec")));

bool
ckvo__release_init(struct ckvo_hub *hub)
{
	hub->queued = hub->taken = hub->done = ckvo__counter_start(0);
	return pthread_cond_init(&hub->ran, NULL) == 0;
}

/* The later of two tickets. */
static inline uint64_t
ticket_max(uint64_t a, uint64_t b)
{
	return ckvo__counter_before(a, b) ? b : a;
}

/* Gives the record of the released observation at `link` back to its page (token.c). */
static void
record_return(struct ckvo_hub *hub, ck_stack_entry_t *link)
{
	struct ckvo_registry *registry = &hub->registry;

	ckvo__token_return(&registry->tokens, &registry->ledger,
	    CKVO_CONTAINER(struct ckvo_observation, link, link), registry->observations);
}

/* Appends the observation at `link` to the queue. */
static void
queue_append(struct ckvo_hub *hub, ck_stack_entry_t *link)
{
	link->next = NULL;
	if (hub->queue_tail != NULL)
		hub->queue_tail->next = link;
	else
		hub->queue_head = link;
	hub->queue_tail = link;
}

/*
 * Puts a follow-up of the release at ticket `origin` at the front of the
 * queue, just after the chunk the runner holds (tickets up to `taken`), so
 * what was queued behind moves back by one; and every waiter for that
 * release or a later one now waits for the follow-up too.
 */
static void
queue_follow_up(struct ckvo_hub *hub, ck_stack_entry_t *link, uint64_t origin)
{
	link->next = hub->queue_head;
	hub->queue_head = link;
	if (hub->queue_tail == NULL)
		hub->queue_tail = link;
	for (struct ckvo_waiter *waiter = hub->waiters; waiter != NULL; waiter = waiter->next) {
		if (!ckvo__counter_before(waiter->ticket, origin))
			waiter->ticket = ticket_max(waiter->ticket, hub->taken) + 1;
	}
}

void
ckvo__release_enqueue(struct ckvo_hub *hub, struct ckvo_parcels *parcels)
{
	ck_stack_entry_t *cursor, *next;

	if (parcels->head == NULL)
		return;
	parcels->tail->next = NULL;
	hub->queued += parcels->count;
	cursor = parcels->head;
	*parcels = (struct ckvo_parcels){ NULL, NULL, 0 };
	for (; cursor != NULL; cursor = next) {
		struct ckvo_observation *obs = CKVO_CONTAINER(struct ckvo_observation, link, cursor);

		next = cursor->next;
		if (obs->origin != 0)
			queue_follow_up(hub, cursor, obs->origin);
		else
			queue_append(hub, cursor);
	}
}

/* The ticket of the release of `hub` this thread is running, or 0. */
uint64_t
ckvo__release_origin(const struct ckvo_hub *hub)
{
	if (runner_thread.running != hub || runner_thread.releasing == 0)
		return 0;
	/* 0 means none: see the invariants. */
	return runner_thread.position != 0 ? runner_thread.position : ~(uint64_t)0;
}

static void
waiter_add(struct ckvo_hub *hub, struct ckvo_waiter *waiter, uint64_t ticket)
{
	waiter->ticket = ticket;
	waiter->thread = pthread_self();
	waiter->next = hub->waiters;
	hub->waiters = waiter;
}

static void
waiter_remove(struct ckvo_hub *hub, struct ckvo_waiter *waiter)
{
	struct ckvo_waiter **link = &hub->waiters;

	while (*link != waiter)
		link = &(*link)->next;
	*link = waiter->next;
}

/* Whether this thread may run releases now: outside every callback and release. */
static bool
may_run(void)
{
	return runner_thread.releasing == 0 && !ckvo__in_read_section();
}

bool
ckvo__releasing(void)
{
	return runner_thread.releasing != 0;
}

/* A runner's frame, for the cleanup handler of a thread that exits inside a release. */
struct run_frame {
	struct ckvo_hub *hub;
	struct ckvo_waiter *self;
	ck_stack_entry_t *chunk;  /* the chunk being released */
	ck_stack_entry_t *cursor; /* the observation whose release is being called */
	unsigned int count;       /* in the chunk */
};

/*
 * The thread exits inside the release at frame->cursor (without the lock):
 * that release and those before it count as run; the rest of the chunk goes
 * back to the front of the queue with its tickets, for the next runner.
 */
static void
run_abandoned(void *argument)
{
	struct run_frame *frame = argument;
	struct ckvo_hub *hub = frame->hub;
	ck_stack_entry_t *cursor = frame->chunk, *next, *last;
	unsigned int ran = 0;

	runner_thread.releasing--;
	(void)pthread_mutex_lock(&hub->lock);
	for (;; cursor = next) {
		bool exited = cursor == frame->cursor;

		next = cursor->next;
		record_return(hub, cursor);
		ran++;
		if (exited)
			break;
	}
	hub->done += ran;
	if (next != NULL) {
		for (last = next; last->next != NULL; last = last->next)
			;
		last->next = hub->queue_head;
		hub->queue_head = next;
		if (hub->queue_tail == NULL)
			hub->queue_tail = last;
		hub->taken -= frame->count - ran;
	}
	waiter_remove(hub, frame->self);
	hub->running = false;
	(void)pthread_cond_broadcast(&hub->ran);
	/* What is left is the background reclaimer's, as when a runner stops. */
	if (hub->queue_head != NULL) {
		hub->armed = true;
		ckvo__reclaimer_wake(hub);
	}
	(void)pthread_mutex_unlock(&hub->lock);
}

/*
 * Calls the releases of frame->chunk, the first at ticket `position` + 1,
 * under the cleanup handler that gives the chunk back if one ends the
 * thread. Its own function, with the ticket counted in the thread-local
 * state: no local of the caller is live across the handler's setjmp.
 */
static void
call_releases(struct run_frame *frame, uint64_t position)
{
	runner_thread.position = position;
	pthread_cleanup_push(run_abandoned, frame);
	for (ck_stack_entry_t *cursor = frame->chunk; cursor != NULL; cursor = cursor->next) {
		struct ckvo_observation *obs = CKVO_CONTAINER(struct ckvo_observation, link, cursor);

		/* Its ticket: what it queues is its follow-up (ckvo__release_enqueue). */
		runner_thread.position++;
		frame->cursor = cursor;
		if (obs->release != NULL)
			obs->release(obs->context);
	}
	pthread_cleanup_pop(0);
}

/*
 * With the lock held and no runner: runs queued releases, as the hub's
 * runner, until `done` reaches `ticket`, moved by follow-ups (or the queue
 * is empty). Drops the lock around each chunk's releases; returns with it
 * held.
 */
static void
run(struct ckvo_hub *hub, uint64_t ticket)
{
	struct ckvo_hub *outer = runner_thread.running;
	uint64_t outer_position = runner_thread.position;
	struct ckvo_waiter self;
	struct run_frame frame = { hub, &self, NULL, NULL, 0 };

	hub->running = true;
	hub->runner = pthread_self();
	runner_thread.running = hub;
	/* The follow-ups of the releases it runs move its ticket like any waiter's. */
	waiter_add(hub, &self, ticket);
	while (ckvo__counter_before(hub->done, self.ticket) && hub->queue_head != NULL) {
		ck_stack_entry_t *chunk = hub->queue_head, *last = chunk, *cursor, *next;
		uint64_t want = self.ticket - hub->taken, position = hub->taken;
		unsigned int count = 1;

		if (want > CKVO_RELEASE_CHUNK)
			want = CKVO_RELEASE_CHUNK;
		while (count < want && last->next != NULL) {
			last = last->next;
			count++;
		}
		hub->queue_head = last->next;
		if (hub->queue_head == NULL)
			hub->queue_tail = NULL;
		last->next = NULL;
		hub->taken += count;
		frame.chunk = chunk;
		frame.count = count;

		(void)pthread_mutex_unlock(&hub->lock);
		/*
		 * Every dispatch that could reach these observations left its read
		 * section before the scan that made them ready (epoch.c): pairs
		 * with the release in ckvo__read_end, for ThreadSanitizer, which
		 * cannot see the epoch. What follows (the releases, then the records
		 * given back and reused by later registrations through the hub
		 * lock) happens after those dispatches' reads of the records.
		 */
		CKVO_TSAN_ACQUIRE(&ckvo__epoch);
		runner_thread.releasing++;
		call_releases(&frame, position);
		runner_thread.releasing--;
		/* The lock only: deferred removals are the session's (session.c), not the runner's. */
		(void)pthread_mutex_lock(&hub->lock);
		for (cursor = chunk; cursor != NULL; cursor = next) {
			next = cursor->next;
			record_return(hub, cursor);
		}
		hub->done += count;
		(void)pthread_cond_broadcast(&hub->ran);
	}
	waiter_remove(hub, &self);
	hub->running = false;
	runner_thread.running = outer;
	runner_thread.position = outer_position;
	(void)pthread_cond_broadcast(&hub->ran);
}

/* Releases queued and not yet returned. */
static inline uint64_t
backlog(const struct ckvo_hub *hub)
{
	return hub->queued - hub->done;
}

/* As the runner, runs at most `budget` releases; returns how many ran. */
static uint64_t
run_some(struct ckvo_hub *hub, uint64_t budget)
{
	uint64_t done = hub->done, queued = hub->queued - hub->taken;

	run(hub, hub->taken + (budget < queued ? budget : queued));
	return hub->done - done;
}

/*
 * More than CKVO_RELEASE_BACKLOG releases are waiting: helps as the runner,
 * or sleeps while another thread is, until the backlog is under the bound or
 * this call has run its budget. Not a cancellation point.
 */
static __attribute__((noinline)) void
throttle(struct ckvo_hub *hub, uint64_t budget)
{
	uint64_t ran;
	int state;

	(void)pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	while (backlog(hub) > CKVO_RELEASE_BACKLOG && hub->queue_head != NULL) {
		if (hub->running) {
			(void)pthread_cond_wait(&hub->ran, &hub->lock);
			continue;
		}
		if (budget == 0)
			break;
		/* Follow-ups may make it run more than asked. */
		ran = run_some(hub, budget);
		budget -= ran < budget ? ran : budget;
	}
	(void)pthread_setcancelstate(state, NULL);
}

void
ckvo__release_run(struct ckvo_hub *hub, uint64_t share)
{
	if (hub->queue_head == NULL || !may_run())
		return;
	if (CKVO_UNLIKELY(backlog(hub) > CKVO_RELEASE_BACKLOG)) {
		throttle(hub, share + CKVO_RELEASE_CHUNK);
		return;
	}
	if (!hub->running)
		(void)run_some(hub, share + CKVO_RELEASE_CHUNK);
}

void
ckvo__release_run_all(struct ckvo_hub *hub)
{
	if (hub->queue_head == NULL || hub->running || !may_run())
		return;
	run(hub, hub->queued);
}

/* The waiter record of a thread that exits inside a release it runs while waiting. */
static void
wait_abandoned(void *argument)
{
	struct run_frame *frame = argument;

	(void)pthread_mutex_lock(&frame->hub->lock);
	waiter_remove(frame->hub, frame->self);
	(void)pthread_mutex_unlock(&frame->hub->lock);
}

void
ckvo__release_wait(struct ckvo_hub *hub, uint64_t ticket)
{
	struct ckvo_waiter self;
	struct run_frame frame = { hub, &self, NULL, NULL, 0 };

	waiter_add(hub, &self, ticket);
	pthread_cleanup_push(wait_abandoned, &frame);
	while (ckvo__counter_before(hub->done, self.ticket)) {
		if (!hub->running) {
			run(hub, self.ticket);
			continue;
		}
		(void)pthread_cond_wait(&hub->ran, &hub->lock);
	}
	pthread_cleanup_pop(0);
	waiter_remove(hub, &self);
}

bool
ckvo__release_is_runner(const struct ckvo_hub *hub)
{
	return hub->running && pthread_equal(hub->runner, pthread_self());
}

void
ckvo__release_after_fork_child(struct ckvo_hub *hub)
{
	struct ckvo_waiter **link = &hub->waiters;

	/* A waiter or runner of the parent may be listed in the condition: start it afresh. */
	(void)pthread_cond_init(&hub->ran, NULL);
	/*
	 * Waiters of vanished threads go (their records were on their stacks);
	 * this thread's stay: it may be inside a release, as the runner.
	 */
	while (*link != NULL) {
		if (pthread_equal((*link)->thread, pthread_self()))
			link = &(*link)->next;
		else
			*link = (*link)->next;
	}
	if (hub->running && !pthread_equal(hub->runner, pthread_self())) {
		/* The chunk the vanished runner held is lost with it: count it as done. */
		hub->done = hub->taken;
		hub->running = false;
	}
}
