/*
 * reclaimer.c — each hub's background reclaimer: releases run promptly even
 * when the process makes no further call into the library. It only drives
 * the writer session (session.c: drain, poll) and the release runner
 * (release.c); it changes nothing itself.
 *
 * Invariants it alone keeps
 * -------------------------
 * - The thread exists from a hub's first registration on (ckvo_observe
 *   refuses with CKVO_ENOMEM if it cannot be started), so a removal queued
 *   by a reader, which can neither take the lock nor start a thread, always
 *   has a thread to carry it out.
 * - A session that leaves retired entries pending when it commits arms the
 *   reclaimer (session.c), under the hub lock: hub->armed, and a wake-up.
 *   The thread clears hub->armed only when it goes idle, after one whole
 *   period without work; it then has the session settle the spare token
 *   pages kept for records in flight (token.c), so a lull between bursts
 *   of churn does not free pages the next burst would allocate again.
 * - A reader whose ckvo_unobserve_deferred takes the hub's queue of
 *   deferred removals from empty to non-empty wakes the thread too, with
 *   no lock and no allocation: it increments hub->wakeups and wakes the
 *   futex on that word (ckvo__reclaimer_wake). Idle, the thread reads
 *   hub->wakeups, then checks for work under the lock, then sleeps on the
 *   futex only while the word still holds what it read: a push after the
 *   check changed the word, so no wake-up is lost.
 * - Armed or woken, the thread sleeps CKVO_RECLAIM_PERIOD_NS (removals
 *   arriving meanwhile join the batch), then, under the lock, has the
 *   session carry out queued deferred removals and poll, and runs the hub's
 *   release queue as its runner (release.c) unless another thread is:
 *   those releases run on this thread. It repeats while anything is
 *   pending or queued and goes idle when nothing is.
 * - The bound. An entry is ready after one IDLE scan or two SETTLED scans
 *   that follow its retirement, and the thread scans once per period. With
 *   no dispatch running, a release runs within one period (10 ms) of its
 *   removal, plus the time to run the releases ahead of it. With dispatches
 *   running on other threads, within about three periods of the moment
 *   every dispatch that began before the removal has returned: a callback
 *   that blocks holds reclamation back until it returns (that is what a
 *   grace period is), and so does a thread that stays inside dispatch. A
 *   deferred removal counts from the moment the callback that queued it
 *   returns: it is the dispatch the grace period waits for.
 * - The thread sleeps idle on the futex and a period on hub->wake with the
 *   hub's own lock, holds the lock only to poll, blocks every signal, and
 *   is joinable: ckvo_hub_destroy stops and joins it before freeing the
 *   hub, and it is never started again after that. It does not keep the
 *   process alive: exit() ends it like any other thread, and a process
 *   whose main thread returns exits.
 * - fork(): the atfork handlers hold every hub lock across fork(), so the
 *   thread is asleep or between polls, never inside one. In the parent it
 *   carries on. The child has no such thread: it forgets it, initializes
 *   the condition variable again (it may list the vanished thread as a
 *   waiter) and, if the hub has observations or pending entries, starts a
 *   new one. Except under ThreadSanitizer, which kills a child of a
 *   multi-threaded process that starts a thread (its die_after_fork): there
 *   a fork child starts none, and its releases and deferred removals run at
 *   its next registration, removal or flush. A fork from a release this
 *   thread runs leaves it as the child's only thread: it stays the hub's
 *   reclaimer there, and the child starts no other.
 * - A release that ends the thread (pthread_exit) unwinds through a cleanup
 *   handler: unless ckvo_hub_destroy is stopping it (and joins it), the
 *   thread detaches itself and starts its successor, so deferred removals
 *   always have a thread to carry them out.
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#ifdef CKVO_TSAN
/* Set in a fork child: see the last invariant above. */
static bool no_thread_after_fork;
#endif

/* The hub whose reclaimer this thread is, or NULL. */
static __thread struct ckvo_hub *reclaiming __attribute__((tls_model("initial-exec")));

bool
ckvo__reclaimer_init(struct ckvo_hub *hub)
{
	pthread_condattr_t attr;
	bool ok;

	if (pthread_condattr_init(&attr) != 0)
		return false;
	/* Periods are measured on the monotonic clock: setting the date does not stretch them. */
	ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
	    pthread_cond_init(&hub->wake, &attr) == 0;
	(void)pthread_condattr_destroy(&attr);
	return ok;
}

bool
ckvo__reclaimer_is_current(const struct ckvo_hub *hub)
{
	return reclaiming == hub;
}

/* Sleeps one period with the lock released meanwhile; false once stopped. */
static bool
sleep_one_period(struct ckvo_hub *hub)
{
	struct timespec deadline;

	(void)clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_nsec += CKVO_RECLAIM_PERIOD_NS;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!hub->reclaimer_stopped &&
	    pthread_cond_timedwait(&hub->wake, &hub->lock, &deadline) != ETIMEDOUT)
		;
	return !hub->reclaimer_stopped;
}

/* With the lock held: returns, holding it, once there is work or the thread is stopped. */
static void
wait_for_work(struct ckvo_hub *hub)
{
	bool quiet = false;

	for (;;) {
		uint32_t seen = ck_pr_load_32(&hub->wakeups);

		/* Read the word before looking for work: see the invariants. */
		ck_pr_fence_load();
		if (hub->reclaimer_stopped || ckvo__session_wanted(hub))
			return;
		if (!quiet) {
			/* One quiet period first: a lull between bursts is not the end of them. */
			quiet = true;
			if (!sleep_one_period(hub))
				return;
			continue;
		}
		/* Going idle: nothing is in flight, the spares kept for it go (session.c). */
		ckvo__session_settle(hub);
		/* The pages it freed wait for a grace period: one more pass for them. */
		if (ckvo__session_wanted(hub))
			return;
		hub->armed = false;
		(void)pthread_mutex_unlock(&hub->lock);
		(void)syscall(SYS_futex, &hub->wakeups, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		(void)pthread_mutex_lock(&hub->lock);
	}
}


/*
 * The thread exits inside a release it runs (the runner's own handler ran
 * first, release.c): unless the hub is being destroyed, which joins it, it
 * detaches itself and a new thread takes over.
 */
static void
reclaimer_abandoned(void *argument)
{
	struct ckvo_hub *hub = argument;

	(void)pthread_mutex_lock(&hub->lock);
	if (!hub->reclaimer_stopped) {
		(void)pthread_detach(pthread_self());
		hub->reclaimer_running = false;
		(void)ckvo__reclaimer_start(hub);
	}
	(void)pthread_mutex_unlock(&hub->lock);
}

static void *
reclaimer_main(void *argument)
{
	struct ckvo_hub *hub = argument;
	struct ckvo_ready ready = CKVO_READY_INITIALIZER;

	reclaiming = hub;
	pthread_cleanup_push(reclaimer_abandoned, hub);
	(void)pthread_mutex_lock(&hub->lock);
	for (;;) {
		wait_for_work(hub);
		if (!sleep_one_period(hub))
			break;

		/* Deferred removals and a poll: what is ready is queued (session.c). */
		ckvo__session_pass(hub, &ready);
		/* Freed before any release runs: a release may end this thread. */
		if (ready.memory != NULL) {
			(void)pthread_mutex_unlock(&hub->lock);
			ckvo__ready_free(&ready);
			(void)pthread_mutex_lock(&hub->lock);
		}
		/* Runs the queue as the hub's runner unless another thread is (release.c). */
		ckvo__release_run_all(hub);
	}
	(void)pthread_mutex_unlock(&hub->lock);
	pthread_cleanup_pop(0);
	return NULL;
}

bool
ckvo__reclaimer_start(struct ckvo_hub *hub)
{
	sigset_t all, previous;

	if (hub->reclaimer_running || hub->reclaimer_stopped)
		return true;
#ifdef CKVO_TSAN
	if (no_thread_after_fork)
		return true;
#endif
	/* The new thread inherits this mask: signals go to the application's threads. */
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &previous);
	hub->reclaimer_running = pthread_create(&hub->reclaimer, NULL, reclaimer_main, hub) == 0;
	(void)pthread_sigmask(SIG_SETMASK, &previous, NULL);
	return hub->reclaimer_running;
}

void
ckvo__reclaimer_stop(struct ckvo_hub *hub)
{
	bool running;

	(void)pthread_mutex_lock(&hub->lock);
	hub->reclaimer_stopped = true;
	running = hub->reclaimer_running;
	hub->reclaimer_running = false;
	hub->armed = false;
	(void)pthread_cond_broadcast(&hub->wake);
	ckvo__reclaimer_wake(hub);
	(void)pthread_mutex_unlock(&hub->lock);
	/* It finishes the batch it may be running, then sees the flag. */
	if (running)
		(void)pthread_join(hub->reclaimer, NULL);
}

void
ckvo__reclaimer_after_fork_child(struct ckvo_hub *hub)
{
#ifdef CKVO_TSAN
	no_thread_after_fork = true;
#endif
	(void)ckvo__reclaimer_init(hub);
	if (reclaiming == hub) {
		/* Forked from a release it runs: this thread goes on as the child's reclaimer. */
		hub->reclaimer = pthread_self();
		hub->reclaimer_running = true;
		hub->armed = true;
		return;
	}
	hub->reclaimer_running = false;
	hub->armed = false;
	/* A new thread looks for work before it first sleeps: no wake-up needed. */
	if (ckvo__session_wanted(hub) || hub->registry.observations != 0)
		(void)ckvo__reclaimer_start(hub);
}
