/*
 * Starts and stops the test store (tests/store/s3rver.mjs, s3rver from
 * npm) for the tests that need an S3-compatible store: the storage
 * contract test and the server's integration test. Header-only and free
 * of cmocka: -1 on failure, the caller asserts.
 */
#ifndef TESTS_STORE_S3RVER_UTIL_H
#define TESTS_STORE_S3RVER_UTIL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct s3rver {
	pid_t pid;     /* 0 when not running */
	unsigned port; /* where it listens; kept for a restart on the same port */
};

/*
 * Runs s3rver on 127.0.0.1:port (0: a free port) keeping its objects in
 * dir, with bucket made at start (kept if dir has it already), and waits
 * for its "port N" line. S3RVER names the script (default
 * tests/store/s3rver.mjs, from the repository root). 0, or -1 (reaped).
 */
static inline int s3rver_start(struct s3rver *s, const char *dir, const char *bucket, unsigned port)
{
	const char *script = getenv("S3RVER") ? getenv("S3RVER") : "tests/store/s3rver.mjs";
	char portarg[16], line[64];
	unsigned got = 0;
	int fd[2];
	FILE *f;

	snprintf(portarg, sizeof(portarg), "%u", port);
	if (pipe(fd) != 0)
		return -1;
	if ((s->pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execlp("node", "node", script, dir, bucket, portarg, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	if (s->pid < 0 || (f = fdopen(fd[0], "r")) == NULL) {
		close(fd[0]);
		return -1;
	}
	if (fgets(line, sizeof(line), f) == NULL || sscanf(line, "port %u", &got) != 1 || got == 0) {
		fclose(f);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
		return -1;
	}
	fclose(f);
	s->port = got;
	return 0;
}

/* Kills it at once, as a crash or a pulled cable would. */
static inline void s3rver_stop(struct s3rver *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
}

#endif
