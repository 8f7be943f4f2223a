/*
 * The traced program of the end-to-end test (test_e2e.c): THREADS threads,
 * each running STEPS steps. Each step is a zone "step" with the thread's
 * index, the step's number and a label as arguments; every fifth step has
 * a zone "inner" inside it and an instant "tick" inside that; each thread
 * counts its steps on a counter. The test knows all of it from the two
 * numbers, and the program prints "thread INDEX TID" for each thread so
 * that the test can check each event is on its thread.
 *
 *   e2e_prog THREADS STEPS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../provider/trace.h"

static int steps;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Waits until the trace clock is past the next nanosecond. "inner" is
 * written when its scope ends, after "tick"; were both to fall on the same
 * nanosecond, ingest would keep them in the order written (as Perfetto
 * does with ties), the instant before the slice and so not inside it, and
 * the test's expectation would not hold (3 runs in 175 did so). */
static void after_a_nanosecond(void)
{
	uint64_t t = trace_now(), step = trace_ticks_per_second() / 1000000000u + 1;

	while (trace_now() - t <= step)
		;
}

static void *run(void *arg)
{
	int t = (int)(long)arg, i;
	char name[16], label[32];

	snprintf(name, sizeof(name), "e2e-%d", t);
	trace_set_thread_name(name);
	pthread_mutex_lock(&out_lock);
	printf("thread %d %ld\n", t, (long)syscall(SYS_gettid));
	pthread_mutex_unlock(&out_lock);
	for (i = 0; i < steps; i++) {
		snprintf(label, sizeof(label), "t%d-s%d", t, i);
		TRACE_DURATION("e2e", "step", TA_I32("thread", t), TA_I32("seq", i), TA_STRING("label", label));
		if (i % 5 == 0) {
			TRACE_DURATION("e2e", "inner", TA_I32("seq", i));
			after_a_nanosecond();
			TRACE_INSTANT("e2e", "tick", TA_I32("seq", i), TA_DOUBLE("half", i / 2.0));
		}
		TRACE_COUNTER("e2e", "steps", (uint64_t)t, TA_I64("done", i + 1));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 4, i;
	pthread_t th[64];

	steps = argc > 2 ? atoi(argv[2]) : 100;
	if (threads < 1 || threads > 64 || steps < 1)
		return 2;
	if (!trace_provider_wait_started(30000))
		fprintf(stderr, "e2e_prog: not traced\n");
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run, (void *)(long)i);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	fflush(stdout);
	return 0;
}
