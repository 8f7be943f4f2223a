/*
 * The traced program of the end-to-end test (test_e2e.c): THREADS threads,
 * each running STEPS steps. Each step is a zone "step" with the thread's
 * index, the step's number and a label as arguments; every fifth step has
 * a zone "inner" inside it and an instant "tick" inside that, and begins a
 * flow "next" that the step after it ends; each thread counts its steps on
 * a counter. The instant, the flow's begin and end and the counter are
 * each the first statement of their zone: written a tick or so after the
 * zone's start, often in the same nanosecond, and before the zone's own
 * record (written at its end); the trace must still hold them inside it
 * (docs/API.md, Meaning 3). The test knows all of it from the two
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
		if (i % 5 == 1)
			TRACE_FLOW_END("e2e", "next", (uint64_t)(t * 100000 + i - 1));
		else if (i % 5 == 0 && i + 1 < steps)
			TRACE_FLOW_BEGIN("e2e", "next", (uint64_t)(t * 100000 + i));
		if (i % 5 == 0) {
			TRACE_DURATION("e2e", "inner", TA_I32("seq", i));
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
