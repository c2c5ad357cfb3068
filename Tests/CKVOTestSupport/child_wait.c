/* child_wait.c — waiting for a forked child with a deadline (see ckvo_test_support.h). */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "ckvo_test_support.h"

static double
monotonic_seconds(void)
{
	struct timespec now;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

int
ckvots_wait_child(pid_t pid, unsigned timeout_seconds)
{
	struct timespec step = { 0, 1000000 }; /* 1 ms */
	double deadline = monotonic_seconds() + timeout_seconds;
	int status = 0;

	/* Never waitpid(-1) or waitpid(0): those reap other tests' children. */
	if (pid <= 0)
		return CKVOTS_FORK_HELPER_WAIT;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return CKVOTS_FORK_HELPER_WAIT;
		/* Measured, not counted in sleeps: a loaded machine stretches every sleep. */
		if (monotonic_seconds() > deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			return CKVOTS_FORK_CHILD_TIMEOUT;
		}
		nanosleep(&step, NULL);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return CKVOTS_FORK_CHILD_SIGNALED + WTERMSIG(status);
	return CKVOTS_FORK_HELPER_WAIT;
}
