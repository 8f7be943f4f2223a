/*
 * hello: a small program that shows the provider API (docs/PROVIDER.md).
 *
 * Three worker threads take jobs from a queue: each job is an async
 * operation from its submission to its end, a flow from the thread that
 * submitted it to the one that ran it, and a zone on the worker with its
 * arguments; a counter follows the queue's depth.
 *
 *   cc -o hello hello.c $(pkg-config --cflags --libs trace-provider)
 *   trace-server record -- ./hello          # or: TRACE_SERVER=http://127.0.0.1:8080 ./hello
 *
 * Without TRACE_SERVER it runs the same, untraced.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <trace.h>

#define JOBS 200
#define WORKERS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int queue[JOBS], head, tail, done;

static void work(int job)
{
	TRACE_DURATION("hello", "work", TA_I32("job", job), TA_STRING("kind", job % 2 ? "odd" : "even"));
	struct timespec nap = {0, (job % 7 + 1) * 100000L};

	nanosleep(&nap, NULL);
	if (job % 50 == 0)
		TRACE_INSTANT("hello", "milestone", TA_I32("job", job), TA_DOUBLE("fraction", job / (double)JOBS));
}

static void *worker(void *arg)
{
	char name[32];

	snprintf(name, sizeof(name), "worker-%d", (int)(long)arg);
	trace_set_thread_name(name);
	for (;;) {
		int job;

		pthread_mutex_lock(&lock);
		while (head == tail && !done)
			pthread_cond_wait(&cond, &lock);
		if (head == tail && done) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		job = queue[head++];
		TRACE_COUNTER("hello", "queue", 0, TA_I32("depth", tail - head));
		pthread_mutex_unlock(&lock);
		{
			TRACE_DURATION("hello", "run");
			TRACE_FLOW_END("hello", "handoff", (uint64_t)job);
			work(job);
		}
		TRACE_ASYNC_END("hello", "job", (uint64_t)job);
	}
}

int main(void)
{
	pthread_t th[WORKERS];
	int i;

	trace_set_process_name("hello");
	/* When started by `trace-server record`, wait (up to 2 s) for the
	 * server to start tracing so that the first jobs are recorded too. */
	trace_provider_wait_started(getenv("TRACE_SERVER") ? 2000 : 0);
	for (i = 0; i < WORKERS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)i);
	for (i = 0; i < JOBS; i++) {
		TRACE_DURATION("hello", "submit", TA_I32("job", i));
		TRACE_ASYNC_BEGIN("hello", "job", (uint64_t)i, TA_I32("job", i));
		TRACE_FLOW_BEGIN("hello", "handoff", (uint64_t)i);
		pthread_mutex_lock(&lock);
		queue[tail++] = i;
		TRACE_COUNTER("hello", "queue", 0, TA_I32("depth", tail - head));
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
	printf("hello: %d jobs done%s\n", JOBS, trace_is_enabled() ? " (traced)" : "");
	return 0; /* at exit the library sends what its buffers hold */
}
