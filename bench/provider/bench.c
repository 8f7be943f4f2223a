/*
 * bench/provider: what the provider library costs a traced program.
 *
 * A consumer thread in this process plays the server (tests/provider/peer.h
 * on a loopback socket): it starts the provider in streaming mode, reads
 * every DATA frame and answers every SAVE_BUFFER at once, as the server
 * does when the bytes are on its disk.
 *
 *   ns per zone, category on    (CPU time of a loop of n TRACE_DURATION zones
 *                                 while recording, minus the best of 5 runs of
 *                                 the same loop with its category off)
 *                                 / zones recorded (n minus those dropped), as
 *                                 Tracy measures its own; the best of 3
 *                                 captures
 *   ns per zone, category off   (best CPU time of the loop with the category
 *                                 off minus the best of an empty loop) / n
 *   the floor                   (two trace_now() and three stores per
 *                                 iteration, minus an empty loop) / iterations:
 *                                 what no library can go under on this CPU
 * The loops are timed with CLOCK_THREAD_CPUTIME_ID, so that the time the
 * thread spends preempted on a shared machine is not charged to the zones.
 *   streaming throughput        2 writer threads, records of 40 bytes: paced
 *                                 at 40 MB/s in all, then as fast as they go;
 *                                 MB/s of records received, records dropped
 *
 * With --external the provider is the real one of a real capture: the
 * library connects to $TRACE_SERVER by itself (bench/provider/server.sh
 * starts the server and the capture, with category "bench" on and
 * "bench-off" off), and the figures are the same but measured against the
 * server's own saving of buffers, except that the zone loop writes faster
 * than the server saves: its cost is per zone attempted (a dropped zone
 * costs its site check and reservation too), with the share dropped.
 *
 * Figures are printed, not judged. Usage: bench_provider [--external] [zones]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../provider/provider_internal.h"
#include "../../tests/provider/peer.h"

static struct peer P;
static _Atomic int consumer_stop;
static _Atomic uint64_t bytes_received;
static _Atomic int stopped_seen;
static uint64_t stats_dropped;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The loops' clock: this thread's CPU time, so that the time the thread
 * spends preempted on a shared machine is not charged to the zones. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads frames, answers SAVE_BUFFER, counts DATA bytes; until told to stop. */
static void *consumer(void *arg)
{
	struct peer_frame f;

	(void)arg;
	while (!atomic_load(&consumer_stop)) {
		if (peer_recv(&P, &f, 50) != 0)
			continue;
		if (f.request == 0x8000)
			atomic_fetch_add(&bytes_received, f.data64);
		else if (f.request == 0x0002)
			peer_send(&P, 0x0100, f.data32, f.data64, NULL, 0);
		else if (f.request == 0x8001)
			stats_dropped = f.data64;
		else if (f.request == 0x0003)
			atomic_store(&stopped_seen, 1);
		peer_frame_free(&f);
	}
	return NULL;
}

static pthread_t consumer_thread;

/* Categories, INITIALIZE streaming, START; the consumer takes over. */
static void capture_start(const char *cats, uint64_t size)
{
	struct peer_frame f;

	peer_send(&P, 0x8000, 1, strlen(cats), cats, strlen(cats));
	peer_send(&P, 0x8100, 3, size, NULL, 0);
	peer_send(&P, 0x8101, 1, 0, NULL, 0);
	if (peer_recv(&P, &f, 5000) != 0 || f.request != 0x0001) {
		fprintf(stderr, "bench_provider: the provider did not start\n");
		exit(1);
	}
	atomic_store(&stopped_seen, 0);
	atomic_store(&consumer_stop, 0);
	pthread_create(&consumer_thread, NULL, consumer, NULL);
}

static void capture_stop(void)
{
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	while (!atomic_load(&stopped_seen))
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	atomic_store(&consumer_stop, 1);
	pthread_join(consumer_thread, NULL);
}

#define BARRIER() __asm__ volatile("" ::: "memory")

static __attribute__((noinline)) double loop_empty(long n)
{
	double t = cpu_s();
	long i;

	for (i = 0; i < n; i++)
		BARRIER();
	return cpu_s() - t;
}

/* The same loop in a category the external capture leaves off. */
static __attribute__((noinline)) double loop_zones_off(long n)
{
	double t = cpu_s();
	long i;

	for (i = 0; i < n; i++) {
		TRACE_DURATION("bench-off", "zone");
		BARRIER();
	}
	return cpu_s() - t;
}

static __attribute__((noinline)) double loop_zones(long n)
{
	double t = cpu_s();
	long i;

	for (i = 0; i < n; i++) {
		TRACE_DURATION("bench", "zone");
		BARRIER();
	}
	return cpu_s() - t;
}

/* The best of 5 runs of a loop. */
static double best(double (*fn)(long), long n)
{
	double b = 1e9, t;
	int r;

	for (r = 0; r < 5; r++)
		if ((t = fn(n)) < b)
			b = t;
	return b;
}

/* The floor under a zone: its two clock reads and three stores. */
uint64_t bench_sink[3 << 10];
static __attribute__((noinline)) double loop_clock(long n)
{
	uint64_t *sink = bench_sink;
	double t = cpu_s();
	long i;

	for (i = 0; i < n; i++) {
		uint64_t a = trace_now();

		BARRIER();
		sink[(i * 3) & 3071] = a;
		sink[(i * 3 + 1) & 3071] = trace_now();
		sink[(i * 3 + 2) & 3071] = 0x40;
	}
	return cpu_s() - t;
}

static void bench_zones(long n)
{
	double on[3], off, empty, best_ns = 1e18;
	uint64_t dropped[3], recorded = 0, drop = 0;
	int r;

	for (r = 0; r < 3; r++) { /* 3 captures; the best figure per recorded zone */
		capture_start("bench", 64u << 20);
		on[r] = loop_zones(n);
		capture_stop();
		dropped[r] = stats_dropped;
	}
	capture_start("other", 64u << 20);
	off = best(loop_zones, n);
	capture_stop();
	empty = best(loop_empty, n);
	for (r = 0; r < 3; r++) {
		uint64_t rec = (uint64_t)n - dropped[r];
		double ns = rec ? (on[r] - off) * 1e9 / (double)rec : 1e18;

		if (ns < best_ns) {
			best_ns = ns;
			recorded = rec;
			drop = dropped[r];
		}
	}
	printf("ns per zone, category on (streaming): %.2f  (%ld zones, %llu recorded, %llu dropped)\n", best_ns, n,
	       (unsigned long long)recorded, (unsigned long long)drop);
	printf("ns per zone, category off: %.3f\n", (off - empty) * 1e9 / (double)n);
	printf("(the floor on this machine: two trace_now() and three stores take %.2f ns)\n",
	       (best(loop_clock, n / 4) - best(loop_empty, n / 4)) * 1e9 / (double)(n / 4));
}

struct writer {
	double rate;   /* bytes per second for this thread; 0: unpaced */
	double secs;
	uint64_t records;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	double t0 = now_s(), t;
	uint64_t i = 0;

	while ((t = now_s()) - t0 < w->secs) {
		uint64_t burst = 1000;

		if (w->rate > 0 && (double)i * 40 > w->rate * (t - t0)) {
			nanosleep(&(struct timespec){0, 100000}, NULL);
			continue;
		}
		for (; burst > 0; burst--, i++) /* 40 bytes: header, time, two one-word arguments, one two-word */
			TRACE_INSTANT("bench", "rec", TA_U32("a", i), TA_U32("b", 1), TA_U64("i", i));
	}
	w->records = i;
	return NULL;
}

static void bench_stream(double total_rate, double secs)
{
	struct writer w[2] = {{total_rate / 2, secs, 0}, {total_rate / 2, secs, 0}};
	pthread_t th[2];
	double t0;
	int i;

	atomic_store(&bytes_received, 0);
	capture_start("bench", 8u << 20);
	t0 = now_s();
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	capture_stop();
	t0 = now_s() - t0;
	if (total_rate > 0)
		printf("streaming, 2 threads paced at %.0f MB/s: ", total_rate / 1e6);
	else
		printf("streaming, 2 threads unpaced:          ");
	printf("%.1f MB/s received, %llu records written, %llu dropped (buffers of 8 MB not saved in time)\n",
	       (double)atomic_load(&bytes_received) / 1e6 / t0, (unsigned long long)(w[0].records + w[1].records),
	       (unsigned long long)stats_dropped);
}

/* Writers paced at rate bytes/s in all (0: unpaced) for secs; the
 * library's own counts before and after. */
static void external_stream(double rate, double secs)
{
	struct writer w[2] = {{rate / 2, secs, 0}, {rate / 2, secs, 0}};
	struct trace_stats a, b;
	pthread_t th[2];
	double t0;
	int i;

	trace_get_stats(&a);
	t0 = now_s();
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	nanosleep(&(struct timespec){0, 500 * 1000 * 1000}, NULL); /* the last save */
	trace_get_stats(&b);
	t0 = now_s() - t0;
	if (rate > 0)
		printf("streaming to the server, 2 threads paced at %.0f MB/s: ", rate / 1e6);
	else
		printf("streaming to the server, 2 threads unpaced:          ");
	printf("%.1f MB/s sent, %llu records written, %llu dropped\n", (double)(b.bytes_sent - a.bytes_sent) / 1e6 / t0,
	       (unsigned long long)(w[0].records + w[1].records),
	       (unsigned long long)(b.records_dropped - a.records_dropped));
}

static int external(long n)
{
	struct trace_stats st;
	double on, off, empty;
	uint64_t dropped;

	if (!trace_provider_wait_started(10000)) {
		fprintf(stderr, "bench_provider: no capture started this provider (TRACE_SERVER=%s)\n",
			getenv("TRACE_SERVER") ? getenv("TRACE_SERVER") : "");
		return 1;
	}
	/* streaming first: the zone loop below writes faster than any server
	 * saves, and the buffers it leaves to save would charge the paced run */
	external_stream(40e6, 3.0);
	external_stream(0, 3.0);
	nanosleep(&(struct timespec){1, 0}, NULL);
	trace_get_stats(&st);
	dropped = st.records_dropped;
	on = loop_zones(n);
	trace_get_stats(&st);
	dropped = st.records_dropped - dropped;
	off = best(loop_zones_off, n);
	empty = best(loop_empty, n);
	printf("ns per zone attempted, category on (streaming to the server): %.2f  (%ld zones, %.1f%% dropped: "
	       "buffers not yet saved)\n",
	       (on - off) * 1e9 / (double)n, n, 100.0 * (double)dropped / (double)n);
	printf("ns per zone, category off: %.3f\n", (off - empty) * 1e9 / (double)n);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 && strcmp(argv[1], "--external") != 0 ? atol(argv[1]) : 20000000;

	if (argc > 1 && strcmp(argv[1], "--external") == 0)
		return external(argc > 2 ? atol(argv[2]) : 5000000);
	struct trace_provider_config cfg = {NULL, NULL, "bench", 0};

	if (peer_listen(&P) != 0)
		return 1;
	cfg.server = P.url;
	if (trace_provider_start(&cfg) != 0 || peer_accept(&P, 5000, NULL) != 0) {
		fprintf(stderr, "bench_provider: no connection\n");
		return 1;
	}
	printf("clock: %s, %llu ticks per second\n", trace_ticks_per_second() == 1000000000u ? "CLOCK_MONOTONIC" : "TSC",
	       (unsigned long long)trace_ticks_per_second());
	bench_zones(n);
	bench_stream(40e6, 2.0);
	bench_stream(80e6, 2.0);
	bench_stream(0, 2.0);
	trace_provider_stop();
	peer_fini(&P);
	return 0;
}
