/*
 * The provider library against a test peer on a loopback socket that
 * speaks docs/PROVIDER-PROTOCOL.md (peer.h): the handshake, each buffering
 * mode's edges (exactly full, one record over, wrapping with the durable
 * buffer full, BUFFER_SAVED arriving late), a server that disappears and
 * returns, one that refuses or misbehaves, alerts, TERMINATE, and two
 * threads streaming at once. What the provider sends is read back by a
 * reading of the records written here and by the server's decoder.
 */
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "../ingest_util.h"
#include "../../provider/provider_internal.h"
#include "peer.h"

static struct peer P;

/* ---- What the provider sent ---------------------------------------------------- */

struct got {
	uint8_t *stream; /* DATA payloads in the order received */
	size_t len, cap;
	int ndata[4];    /* DATA frames by kind */
	uint32_t saves[256], nsaves; /* SAVE_BUFFER wrap counts */
	uint64_t save_dend[256];
	uint32_t wrapped;
	uint64_t dropped;
	uint64_t overwritten; /* OVERWRITTEN's count; -1 when none came */
	int stats, stopped;
};

static void got_fini(struct got *g)
{
	free(g->stream);
	memset(g, 0, sizeof(*g));
}

/* Takes one frame into g; returns its request, or -1 on timeout. */
static int got_frame(struct got *g, int ms)
{
	struct peer_frame f;

	if (peer_recv(&P, &f, ms) != 0)
		return -1;
	assert_int_equal(f.reserved, 0);
	switch (f.request) {
	case 0x8000:
		assert_true(f.data32 == 2 || f.data32 == 3);
		assert_true(f.data64 > 0 && f.data64 % 8 == 0);
		g->ndata[f.data32]++;
		if (g->len + f.data64 > g->cap) {
			g->cap = (g->len + f.data64) * 2;
			g->stream = realloc(g->stream, g->cap);
		}
		memcpy(g->stream + g->len, f.payload, f.data64);
		g->len += f.data64;
		break;
	case 0x0002:
		assert_true(g->nsaves < 256);
		g->save_dend[g->nsaves] = f.data64;
		g->saves[g->nsaves++] = f.data32;
		break;
	case 0x8002:
		g->overwritten = f.data64;
		break;
	case 0x8001:
		g->wrapped = f.data32;
		g->dropped = f.data64;
		g->stats++;
		break;
	case 0x0003:
		g->stopped++;
		break;
	case 0x0001:
		assert_int_equal(f.data32, 1);
		break;
	default:
		fail_msg("unexpected packet 0x%x", f.request);
	}
	peer_frame_free(&f);
	return f.request;
}

/* Frames until STOPPED; answers SAVE_BUFFER when answer is set. */
static void got_until_stopped(struct got *g, int answer)
{
	int r;

	while ((r = got_frame(g, 5000)) != 0x0003) {
		assert_true(r != -1);
		if (r == 0x0002 && answer)
			peer_send(&P, 0x0100, g->saves[g->nsaves - 1], g->save_dend[g->nsaves - 1], NULL, 0);
	}
	assert_int_equal(g->stats, 1);
}

/* The events of the stream, read independently: name, first u32 argument,
 * thread koid. Strings and threads come from the records before them. */
struct ev {
	char name[32];
	uint32_t seq;
	uint64_t tid;
};

static size_t got_events(const struct got *g, struct ev *out, size_t max)
{
	static char strs[0x8000][32];
	static uint64_t tids[256];
	size_t off = 0, k = 0;

	memset(strs, 0, sizeof(strs));
	while (off < g->len) {
		const uint64_t *w = (const uint64_t *)(const void *)(g->stream + off);
		size_t words = (size_t)(w[0] >> 4 & 0xfff);
		unsigned type = w[0] & 0xf;

		assert_true(words > 0 && off + words * 8 <= g->len);
		if (type == 2)
			snprintf(strs[w[0] >> 16 & 0x7fff], 32, "%.*s", (int)(w[0] >> 32 & 0x7fff), (const char *)(w + 1));
		if (type == 3)
			tids[w[0] >> 16 & 0xff] = w[2];
		if (type == 4 && k < max) {
			unsigned ref = (unsigned)(w[0] >> 48), th = (unsigned)(w[0] >> 24 & 0xff);
			const uint64_t *a = w + 2 + (th ? 0 : 2);

			assert_true(ref != 0 && !(ref & 0x8000)); /* these tests use indexed names */
			memcpy(out[k].name, strs[ref], sizeof(out[k].name));
			out[k].name[sizeof(out[k].name) - 1] = '\0';
			out[k].tid = th ? tids[th] : w[3];
			out[k].seq = (w[0] >> 20 & 0xf) && (*a & 0xf) == 2 ? (uint32_t)(*a >> 32) : 0;
			k++;
		}
		off += words * 8;
	}
	return k;
}

/* Ingests the stream as the server would write it into a capture. */
static void got_ingest(const struct got *g, struct tdb *t)
{
	struct fxtw w;

	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 1, "modes");
	fxtw_bytes(&w, g->stream, g->len);
	tdb_ingest(t, &w);
	fxtw_fini(&w);
	assert_int_equal(t->rc, INGEST_OK);
}

/* ---- Sessions -------------------------------------------------------------------- */

static int start_provider(const char *url, const char *token)
{
	struct trace_provider_config cfg = {url, token, "modes test", 0};

	return trace_provider_start(&cfg);
}

/* The server's side of a start: categories, INITIALIZE, START, and STARTED
 * back. */
static void begin_capture(int mode, uint64_t size, const char *cats)
{
	assert_int_equal(peer_send(&P, 0x8000, 1, strlen(cats), cats, strlen(cats)), 0);
	assert_int_equal(peer_send(&P, 0x8100, (uint32_t)mode, size, NULL, 0), 0);
	assert_int_equal(peer_send(&P, 0x8101, 1, 0, NULL, 0), 0);
	assert_int_equal(peer_recv(&P, &(struct peer_frame){0}, 5000), 0);
	assert_true(trace_is_enabled());
}

static void connect_and_begin(int mode, uint64_t size)
{
	assert_int_equal(start_provider(P.url, NULL), 0);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	begin_capture(mode, size, "");
}

static void end_session(void)
{
	trace_provider_stop();
	peer_hangup(&P);
}

static uint64_t rolling_used(void)
{
	return atomic_load(&eng.rolling) & ENG_OFF_MASK;
}

static uint64_t durable_used(void)
{
	return atomic_load(&eng.durable) & ENG_OFF_MASK;
}

/* Waits up to 10 s for cond (the machine may be busy). */
#define WAIT_FOR(cond)                                                                                                 \
	do {                                                                                                           \
		int waited_;                                                                                           \
		for (waited_ = 0; !(cond) && waited_ < 10000; waited_++)                                              \
			nanosleep(&(struct timespec){0, 1000000}, NULL);                                               \
		assert_true(cond);                                                                                     \
	} while (0)

/* ---- Tests --------------------------------------------------------------------------- */

/* The upgrade request as the document writes it, and STARTED's version. */
static void test_handshake(void **state)
{
	struct peer_frame f;
	char want[64];

	(void)state;
	assert_int_equal(start_provider(P.url, "s3cret-token-1234"), 0);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	snprintf(want, sizeof(want), "&pid=%d HTTP/1.1\r\n", (int)getpid());
	assert_true(strncmp(P.request, "GET /api/providers/connect?name=modes%20test", 44) == 0);
	assert_non_null(strstr(P.request, want));
	assert_non_null(strstr(P.request, "\r\nConnection: Upgrade\r\n"));
	assert_non_null(strstr(P.request, "\r\nUpgrade: fxt-provider/1"));
	assert_non_null(strstr(P.request, "\r\nAuthorization: Bearer s3cret-token-1234"));
	snprintf(want, sizeof(want), "\r\nHost: 127.0.0.1:%u\r\n", P.port);
	assert_non_null(strstr(P.request, want));
	assert_false(trace_is_enabled());
	peer_send(&P, 0x8100, 1, 8192, NULL, 0);
	peer_send(&P, 0x8101, 1, 0, NULL, 0);
	assert_int_equal(peer_recv(&P, &f, 5000), 0);
	assert_int_equal(f.request, 0x0001);
	assert_int_equal(f.data32, 1);
	assert_int_equal(f.data64, 0);
	assert_true(trace_provider_wait_started(1000));
	end_session();
}

/* Oneshot, filled to exactly its size: nothing dropped; one more record is
 * dropped and counted; the buffer goes out whole. */
static void test_oneshot_exactly_full(void **state)
{
	struct got g = {0};
	uint64_t left;
	struct ev ev[512];
	size_t n;

	(void)state;
	connect_and_begin(ENG_ONESHOT, 4096);
	TRACE_INSTANT("c", "e", TA_U32("seq", 0)); /* registers the thread, "c", "e", "seq" */
	left = eng.rolling_size - rolling_used();
	if (left % 16 == 8) {
		TRACE_INSTANT("c", "e", TA_U32("seq", 1)); /* 24 bytes */
		left -= 24;
	}
	while (left > 0) {
		TRACE_INSTANT("c", "e"); /* 16 bytes */
		left -= 16;
	}
	assert_int_equal(rolling_used(), 4096);
	assert_int_equal(atomic_load(&eng.dropped), 0);
	TRACE_INSTANT("c", "e");
	assert_int_equal(atomic_load(&eng.dropped), 1);
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.len, 4096);
	assert_int_equal(g.ndata[3], 1);
	assert_int_equal(g.ndata[2], 0);
	assert_int_equal(g.dropped, 1);
	assert_int_equal(g.wrapped, 0);
	n = got_events(&g, ev, 512);
	assert_true(n > 200);
	got_fini(&g);
	end_session();
}

/* Oneshot with 16 bytes left and a 24-byte record: dropped, and oneshot
 * stops there (the next, smaller record is dropped too). */
static void test_oneshot_one_over(void **state)
{
	struct got g = {0};
	uint64_t left;
	struct tdb t;

	(void)state;
	connect_and_begin(ENG_ONESHOT, 4096);
	TRACE_INSTANT("c", "e", TA_U32("seq", 0));
	left = eng.rolling_size - rolling_used();
	if (left % 16 == 8) {
		TRACE_INSTANT("c", "e", TA_U32("seq", 1));
		left -= 24;
	}
	while (left > 16) {
		TRACE_INSTANT("c", "e");
		left -= 16;
	}
	assert_int_equal(left, 16);
	TRACE_INSTANT("c", "e", TA_U32("seq", 2));
	TRACE_INSTANT("c", "e");
	assert_int_equal(atomic_load(&eng.dropped), 2);
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.len, 4096 - 16);
	assert_int_equal(g.dropped, 2);
	got_ingest(&g, &t);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'e'"),
			 tdb_int(&t, "SELECT count(*) FROM slices"));
	tdb_close(&t);
	got_fini(&g);
	end_session();
}

static char names[200][8];

/* Circular with the durable buffer filled to its last byte: the rolling
 * buffers wrap many times, nothing is dropped, the newest records are kept
 * and every name still resolves; then one new string does not fit in the
 * durable buffer, tracing stops and every later record is counted. */
static void test_circular_wrap_durable_full(void **state)
{
	struct got g = {0};
	static struct ev ev[4096];
	uint64_t left;
	size_t n, i, k = 0;
	struct tdb t;

	(void)state;
	connect_and_begin(ENG_CIRCULAR, 16384);
	assert_int_equal(eng.durable_size, 1024);
	TRACE_INSTANT("c", "w", TA_U32("seq", 0));
	left = eng.durable_size - durable_used();
	if (left % 16 == 8) {
		TRACE_INSTANT("c", "name-of-9"); /* a 24-byte string record */
		left -= 24;
	}
	for (; left > 0; left -= 16, k++) { /* each name's string record is 16 bytes */
		snprintf(names[k], sizeof(names[k]), "n%u", (unsigned)(k % 1000));
		TRACE_INSTANT("c", names[k]);
	}
	assert_int_equal(durable_used(), eng.durable_size);
	for (i = 1; i <= 2000; i++)
		TRACE_INSTANT("c", "w", TA_U32("seq", i));
	assert_int_equal(atomic_load(&eng.dropped), 0);
	/* one record over in the durable buffer */
	TRACE_INSTANT("c", "brand-new");
	for (i = 2001; i <= 2005; i++)
		TRACE_INSTANT("c", "w", TA_U32("seq", i));
	assert_int_equal(atomic_load(&eng.dropped), 6);
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.ndata[2], 1);
	assert_int_equal(g.ndata[3], 2);
	assert_int_equal(g.dropped, 6);
	assert_true(g.wrapped >= 5); /* 2000 x 24 bytes through 7680-byte buffers */
	n = got_events(&g, ev, 4096);
	/* the kept records are the newest: a run of seq ending at 2000 */
	assert_int_equal(ev[n - 1].seq, 2000);
	for (i = 1; i < n; i++)
		assert_int_equal(ev[i].seq, ev[i - 1].seq + 1);
	assert_true(n >= 7680 / 24 && n <= 2 * 7680 / 24);
	got_ingest(&g, &t);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'w'"), (int64_t)n);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name LIKE '<unknown%%'"), 0);
	tdb_close(&t);
	got_fini(&g);
	end_session();
}

/* Circular: what the buffers wrote over is counted in records, sent to
 * the server (OVERWRITTEN, before STATS) and in trace_get_stats: every
 * record written that was neither sent nor dropped. */
static void test_circular_overwritten(void **state)
{
	struct got g = {0};
	static struct ev ev[1024];
	struct trace_stats st;
	uint32_t i;
	size_t n;

	(void)state;
	connect_and_begin(ENG_CIRCULAR, 16384); /* rolling buffers of 320 instants */
	for (i = 1; i <= 2000; i++)
		TRACE_INSTANT("c", "w", TA_U32("seq", i));
	g.overwritten = (uint64_t)-1;
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	n = got_events(&g, ev, 1024);
	assert_int_equal(g.dropped, 0);
	assert_true(n >= 320 && n < 2000);
	assert_int_equal(g.overwritten, 2000 - n);
	trace_get_stats(&st);
	assert_int_equal(st.records_overwritten, 2000 - n);
	got_fini(&g);
	end_session();
}

/* Streaming: a buffer exactly full sends nothing yet; the next record
 * switches and sends it with SAVE_BUFFER; while BUFFER_SAVED is late the
 * other buffer fills and records are dropped, with no second SAVE_BUFFER;
 * once it comes writing resumes in the saved buffer. With the periodic
 * flush off, so that only full buffers are sent. */
static void test_streaming_late_saved(void **state)
{
	struct got g = {0};
	static struct ev ev[2048];
	uint32_t seq = 0, i;
	uint64_t dend;
	size_t n;

	(void)state;
	setenv("TRACE_FLUSH_MS", "0", 1); /* exact frames: only full buffers are sent */
	connect_and_begin(ENG_STREAMING, 16384);
	assert_int_equal(eng.rolling_size, 7680);
	for (i = 0; i < 320; i++) /* 320 x 24 bytes = 7680: exactly full */
		TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	assert_int_equal(rolling_used(), 7680);
	assert_false(peer_wait(P.fd, 200));
	TRACE_INSTANT("c", "s", TA_U32("seq", ++seq)); /* 321: switches */
	while (g.nsaves == 0)
		assert_true(got_frame(&g, 5000) != -1);
	assert_int_equal(g.saves[0], 0);
	assert_int_equal(g.ndata[2], 1);
	assert_int_equal(g.ndata[3], 1);
	dend = g.save_dend[0];
	assert_int_equal(dend, durable_used());
	assert_int_equal(g.len, dend + 7680);
	for (i = 0; i < 319 + 60; i++) /* fills buffer 1 (321..640), then 60 dropped */
		TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	assert_int_equal(atomic_load(&eng.dropped), 60);
	assert_false(peer_wait(P.fd, 300)); /* no second SAVE_BUFFER before BUFFER_SAVED */
	peer_send(&P, 0x0100, 0, dend, NULL, 0);
	WAIT_FOR(atomic_load(&eng.ready[0]));
	TRACE_INSTANT("c", "s", TA_U32("seq", ++seq)); /* 701: resumes in buffer 0 */
	while (g.nsaves == 1)
		assert_true(got_frame(&g, 5000) != -1);
	assert_int_equal(g.saves[1], 1);
	assert_int_equal(g.ndata[2], 1); /* no new durable records: no durable DATA */
	peer_send(&P, 0x0100, 1, g.save_dend[1], NULL, 0);
	for (i = 0; i < 9; i++)
		TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.dropped, 60);
	assert_int_equal(g.wrapped, 2);
	n = got_events(&g, ev, 2048);
	assert_int_equal(n, 710 - 60);
	for (i = 0; i < n; i++)
		assert_int_equal(ev[i].seq, i < 640 ? i + 1 : i + 61);
	got_fini(&g);
	end_session();
}

/* Clock c in seconds. */
static double clock_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Streaming, a slow program: a record written into a buffer far from full
 * reaches the server within about a second (2 s allowed on a busy
 * machine), without STOP; a slow writer's records keep coming; the save of
 * the buffer and the stop after it do not send them again. */
static void test_streaming_flushes_slow_writer(void **state)
{
	struct got g = {0};
	static struct ev ev[512];
	uint32_t seq = 0, i;
	double t0;
	size_t n;
	int r;

	(void)state;
	connect_and_begin(ENG_STREAMING, 16384); /* rolling buffers of 7680 bytes, 320 instants */
	t0 = clock_s(CLOCK_MONOTONIC);
	TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	while (g.ndata[3] == 0)
		assert_true(got_frame(&g, 2000) == 0x8000);
	assert_true(clock_s(CLOCK_MONOTONIC) - t0 < 2.0);
	assert_int_equal(g.nsaves, 0);
	for (i = 0; i < 30; i++) { /* 24 bytes every 40 ms: 600 bytes/s */
		TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
		nanosleep(&(struct timespec){0, 40 * 1000 * 1000}, NULL);
	}
	t0 = clock_s(CLOCK_MONOTONIC);
	while ((got_events(&g, ev, 512)) < seq) {
		assert_true(got_frame(&g, 2000) == 0x8000);
		assert_true(clock_s(CLOCK_MONOTONIC) - t0 < 2.0);
	}
	for (i = 0; i < 320; i++) /* past the buffer's end: a save, of what was not sent yet */
		TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	while (g.nsaves == 0)
		if ((r = got_frame(&g, 5000)) == -1)
			fail_msg("no SAVE_BUFFER");
	peer_send(&P, 0x0100, g.saves[0], g.save_dend[0], NULL, 0);
	TRACE_INSTANT("c", "s", TA_U32("seq", ++seq));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.dropped, 0);
	n = got_events(&g, ev, 512);
	assert_int_equal(n, seq);
	for (i = 0; i < n; i++)
		assert_int_equal(ev[i].seq, i + 1);
	got_fini(&g);
	end_session();
}

/* Streaming, stopped but not terminated: nothing to flush, and the
 * provider's thread sleeps (it once polled without a timeout, spinning). */
static void test_streaming_stopped_is_idle(void **state)
{
	struct got g = {0};
	double c0;

	(void)state;
	connect_and_begin(ENG_STREAMING, 16384);
	TRACE_INSTANT("c", "s", TA_U32("seq", 1));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	nanosleep(&(struct timespec){0, 500 * 1000 * 1000}, NULL);
	assert_true(clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0 < 0.1);
	got_fini(&g);
	end_session();
}

/* The server goes away mid-capture: tracing goes off, the program runs on;
 * the provider reconnects when the server is back and records again. */
static void test_server_disappears_and_returns(void **state)
{
	struct got g = {0};
	struct ev ev[64];
	size_t n;

	(void)state;
	connect_and_begin(ENG_STREAMING, 16384);
	TRACE_INSTANT("c", "before");
	peer_hangup(&P);
	WAIT_FOR(!trace_is_enabled());
	TRACE_INSTANT("c", "while-away");
	assert_false(TRACE_CATEGORY_ENABLED("c"));
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	begin_capture(ENG_STREAMING, 16384, "");
	TRACE_INSTANT("c", "after");
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	n = got_events(&g, ev, 64);
	assert_int_equal(n, 1);
	assert_string_equal(ev[0].name, "after");
	got_fini(&g);
	end_session();
}

/* After the server vanished (tracing off, buffers freed), the statistics
 * still tell what was written: at least what was sent, not 0 beside it. */
static void test_stats_after_server_vanished(void **state)
{
	struct trace_stats st;
	struct got g = {0};
	int i;

	(void)state;
	connect_and_begin(ENG_STREAMING, 16384);
	for (i = 0; i < 100; i++)
		TRACE_INSTANT("c", "s", TA_U32("seq", (uint32_t)i));
	while (g.ndata[3] == 0) /* the periodic flush sent them */
		assert_true(got_frame(&g, 2000) == 0x8000);
	peer_hangup(&P);
	WAIT_FOR(!trace_is_enabled() && eng.mem == NULL);
	trace_get_stats(&st);
	assert_true(st.bytes_sent >= 2400);
	assert_true(st.bytes_written >= st.bytes_sent);
	got_fini(&g);
	end_session();
}

/* No server at all: start succeeds, nothing is recorded, stop is quick. */
static void test_no_server(void **state)
{
	struct peer dead;
	char url[64];
	struct timespec a, b;

	(void)state;
	assert_int_equal(peer_listen(&dead), 0);
	snprintf(url, sizeof(url), "%s", dead.url);
	peer_fini(&dead); /* nothing listens there now */
	assert_int_equal(start_provider(url, NULL), 0);
	nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
	TRACE_INSTANT("c", "nobody");
	assert_false(trace_is_enabled());
	clock_gettime(CLOCK_MONOTONIC, &a);
	trace_provider_stop();
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 2);
}

/* TRACE_START_TIMEOUT_MS with nothing listening: the connection is refused
 * at once, so starting does not wait out the 3 s. */
static void test_start_timeout_refused(void **state)
{
	struct peer dead;
	char url[64];
	double t0;

	(void)state;
	assert_int_equal(peer_listen(&dead), 0);
	snprintf(url, sizeof(url), "%s", dead.url);
	peer_fini(&dead);
	setenv("TRACE_START_TIMEOUT_MS", "3000", 1);
	t0 = clock_s(CLOCK_MONOTONIC);
	assert_int_equal(start_provider(url, NULL), 0);
	unsetenv("TRACE_START_TIMEOUT_MS");
	assert_true(clock_s(CLOCK_MONOTONIC) - t0 < 1.0);
	assert_false(trace_is_enabled());
	trace_provider_stop();
}

/* A refused upgrade (401) is retried; the next, accepted, works. */
static void test_refused_then_accepted(void **state)
{
	(void)state;
	assert_int_equal(start_provider(P.url, NULL), 0);
	assert_int_equal(peer_accept(&P, 5000, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}"), 0);
	assert_true(peer_closed(&P, 2000));
	peer_hangup(&P);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	begin_capture(ENG_ONESHOT, 8192, "");
	end_session();
}

/* An unknown packet or a nonzero reserved field closes the connection; an
 * unanswered BUFFER_SAVED does not. */
static void test_protocol_violations(void **state)
{
	uint8_t bad[16] = {0x77, 0x77};
	uint8_t reserved[16] = {0x02, 0x81, 0x01};

	(void)state;
	assert_int_equal(start_provider(P.url, NULL), 0);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	peer_send(&P, 0x0100, 5, 5, NULL, 0); /* answers nothing: ignored */
	assert_false(peer_closed(&P, 300));
	assert_int_equal(send(P.fd, bad, 16, 0), 16);
	assert_true(peer_closed(&P, 2000));
	peer_hangup(&P);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	assert_int_equal(send(P.fd, reserved, 16, 0), 16); /* STOP with reserved = 1 */
	assert_true(peer_closed(&P, 2000));
	peer_hangup(&P);
	assert_int_equal(peer_accept(&P, 5000, NULL), 0);
	peer_send(&P, 0x8000, 1, (64u << 20) + 1, NULL, 0); /* payload over 64 MiB */
	assert_true(peer_closed(&P, 2000));
	end_session();
}

/* An alert: its name in bytes 2 to 15, cut at 14. */
static void test_alert(void **state)
{
	struct peer_frame f;

	(void)state;
	assert_int_equal(trace_alert("nobody"), -1); /* not connected */
	connect_and_begin(ENG_ONESHOT, 8192);
	assert_int_equal(trace_alert(""), -1);
	assert_int_equal(trace_alert("bad\nname"), -1);
	assert_int_equal(trace_alert("disk-full-on-node-7"), 0);
	assert_int_equal(peer_recv(&P, &f, 5000), 0);
	assert_int_equal(f.raw[0], 4);
	assert_int_equal(f.raw[1], 0);
	assert_memory_equal(f.raw + 2, "disk-full-on-n", 14);
	end_session();
}

/* An alert queued right before the program ends is sent: trace_alert
 * answered 0, "sends an alert" (docs/PROVIDER.md). The provider's thread
 * used to see the stop first and close with the alert still queued. */
static void test_alert_at_exit(void **state)
{
	struct peer_frame f;
	int alerts = 0, stopped = 0;

	(void)state;
	connect_and_begin(ENG_ONESHOT, 8192);
	assert_int_equal(trace_alert("last-alert"), 0);
	trace_provider_stop();
	while (!stopped && peer_recv(&P, &f, 5000) == 0) {
		if (f.request == 4 && memcmp(f.raw + 2, "last-alert\0\0\0\0", 14) == 0)
			alerts++;
		stopped = f.request == 3;
		peer_frame_free(&f);
	}
	assert_true(stopped);
	assert_int_equal(alerts, 1);
	peer_hangup(&P);
}

/* TERMINATE while recording sends as STOP does, then frees the buffer. */
static void test_terminate(void **state)
{
	struct got g = {0};
	struct ev ev[8];

	(void)state;
	connect_and_begin(ENG_CIRCULAR, 16384);
	TRACE_INSTANT("c", "t");
	peer_send(&P, 0x8103, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(got_events(&g, ev, 8), 1);
	WAIT_FOR(eng.mem == NULL);
	assert_false(trace_is_enabled());
	got_fini(&g);
	end_session();
}

/* Exit while recording: trace_provider_stop sends what the buffers hold. */
static void test_stop_while_recording(void **state)
{
	struct got g = {0};
	struct ev ev[8];

	(void)state;
	connect_and_begin(ENG_ONESHOT, 8192);
	TRACE_INSTANT("c", "last-words");
	trace_provider_stop();
	got_until_stopped(&g, 0);
	assert_int_equal(got_events(&g, ev, 8), 1);
	assert_string_equal(ev[0].name, "last-words");
	got_fini(&g);
	peer_hangup(&P);
}

static _Atomic int exited;

static void *exit_thread(void *arg)
{
	(void)arg;
	trace_provider_stop(); /* what exit() runs */
	atomic_store(&exited, 1);
	return NULL;
}

/* Exit while recording, with a server slow to read (a small receive
 * window) that sends STOP meanwhile, as `trace-server record` has the
 * server do once the program has ended: the provider closes only when the
 * server has every frame. Closing at once left frames in its send queue,
 * and the STOP reaching the closed socket reset the connection and threw
 * them away. */
static void test_exit_slow_server(void **state)
{
	struct peer saved = P;
	struct got g = {0};
	struct ev ev[1100];
	int small = 4096, i, waited;
	pthread_t th;

	(void)state;
	assert_int_equal(peer_listen(&P), 0);
	assert_int_equal(setsockopt(P.lfd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	connect_and_begin(ENG_ONESHOT, 65536);
	for (i = 0; i < 1000; i++)
		TRACE_INSTANT("c", "queued", TA_U32("seq", (uint32_t)i));
	atomic_store(&exited, 0);
	assert_int_equal(pthread_create(&th, NULL, exit_thread, NULL), 0);
	/* the provider has sent what the window takes; it closes at once or
	 * waits for us */
	for (waited = 0; !atomic_load(&exited) && waited < 1000; waited++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_int_equal(peer_send(&P, 0x8102, 0, 0, NULL, 0), 0); /* STOP */
	got_until_stopped(&g, 0);
	assert_int_equal(got_events(&g, ev, 1100), 1000);
	assert_int_equal(ev[999].seq, 999);
	pthread_join(th, NULL);
	got_fini(&g);
	peer_fini(&P);
	P = saved;
}

/* START again after STOP: "clear nondurable" keeps the durable records,
 * which are not sent twice, and the strings the new records refer to still
 * resolve; "clear entire" starts the tables again. It counts DATA frames:
 * the periodic flush is off. */
static void test_restart_dispositions(void **state)
{
	struct got g = {0};
	struct ev ev[8];
	struct tdb t;

	(void)state;
	setenv("TRACE_FLUSH_MS", "0", 1);
	connect_and_begin(ENG_STREAMING, 16384);
	TRACE_INSTANT("c", "again", TA_U32("seq", 1));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(g.ndata[2], 1);
	peer_send(&P, 0x8101, 2, 0, NULL, 0); /* clear nondurable */
	assert_true(got_frame(&g, 5000) == 0x0001);
	TRACE_INSTANT("c", "again", TA_U32("seq", 2));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	g.stats = 0;
	got_until_stopped(&g, 0);
	assert_int_equal(g.ndata[2], 1); /* no durable records the second time */
	assert_int_equal(g.ndata[3], 2);
	assert_int_equal(got_events(&g, ev, 8), 2);
	assert_int_equal(ev[1].seq, 2);
	assert_string_equal(ev[1].name, "again");
	got_ingest(&g, &t);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'again'"), 2);
	tdb_close(&t);
	peer_send(&P, 0x8101, 1, 0, NULL, 0); /* clear entire: a new initialization record, strings again */
	assert_true(got_frame(&g, 5000) == 0x0001);
	TRACE_INSTANT("c", "again", TA_U32("seq", 3));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	g.stats = 0;
	got_until_stopped(&g, 0);
	assert_int_equal(g.ndata[2], 2);
	got_fini(&g);
	end_session();
}

/* Circular, START with "retain" after STOP: the records of both runs are
 * sent at the second STOP. */
static void test_circular_retain(void **state)
{
	struct got g = {0}, g2 = {0};
	struct ev ev[8];

	(void)state;
	connect_and_begin(ENG_CIRCULAR, 16384);
	TRACE_INSTANT("c", "first", TA_U32("seq", 1));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	peer_send(&P, 0x8101, 3, 0, NULL, 0); /* retain */
	assert_true(got_frame(&g2, 5000) == 0x0001);
	TRACE_INSTANT("c", "second", TA_U32("seq", 2));
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g2, 0);
	assert_int_equal(got_events(&g2, ev, 8), 2);
	assert_string_equal(ev[0].name, "first");
	assert_string_equal(ev[1].name, "second");
	got_fini(&g);
	got_fini(&g2);
	end_session();
}

/* A child made by fork() while recording: it records nothing, does not
 * disturb the parent's provider, and exits at once (its exit handler finds
 * no provider thread to wait for). */
static void test_fork_child(void **state)
{
	struct got g = {0};
	struct ev ev[8];
	struct timespec a, b;
	pid_t pid;
	int status;

	(void)state;
	connect_and_begin(ENG_ONESHOT, 8192);
	TRACE_INSTANT("c", "parent-before");
	clock_gettime(CLOCK_MONOTONIC, &a);
	if ((pid = fork()) == 0) {
		TRACE_INSTANT("c", "child");
		exit(TRACE_CATEGORY_ENABLED("c") ? 3 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(WIFEXITED(status));
	/* a child that waited for a provider thread would take the 5 s exit
	 * timeout; under ASan on a loaded machine LeakSanitizer's check at the
	 * child's exit alone has taken over 2 s */
	assert_true(b.tv_sec - a.tv_sec < 4);
	TRACE_INSTANT("c", "parent-after");
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 0);
	assert_int_equal(got_events(&g, ev, 8), 2);
	assert_string_equal(ev[0].name, "parent-before");
	assert_string_equal(ev[1].name, "parent-after");
	got_fini(&g);
	end_session();
}

#define STRESS_N 30000

static void *stress_writer(void *arg)
{
	const char *name = arg;
	uint32_t i;

	for (i = 1; i <= STRESS_N; i++)
		TRACE_INSTANT("c", name, TA_U32("seq", i));
	return NULL;
}

/* Two threads streaming through small buffers while the peer saves them:
 * every record arrives whole, each thread's in order, and what arrived plus
 * what was counted as dropped is what was written. */
static void test_streaming_two_threads(void **state)
{
	static struct ev ev[2 * STRESS_N];
	struct got g = {0};
	pthread_t th[2];
	uint32_t last[2] = {0, 0};
	size_t n, i, count[2] = {0, 0};
	int r;

	(void)state;
	connect_and_begin(ENG_STREAMING, 65536);
	pthread_create(&th[0], NULL, stress_writer, "t0");
	pthread_create(&th[1], NULL, stress_writer, "t1");
	for (i = 0; i < 2; i++) {
		while (pthread_tryjoin_np(th[i], NULL) != 0)
			if ((r = got_frame(&g, 10)) == 0x0002)
				peer_send(&P, 0x0100, g.saves[g.nsaves - 1], g.save_dend[g.nsaves - 1], NULL, 0);
	}
	peer_send(&P, 0x8102, 0, 0, NULL, 0);
	got_until_stopped(&g, 1);
	n = got_events(&g, ev, 2 * STRESS_N);
	for (i = 0; i < n; i++) {
		int k = ev[i].name[1] - '0';

		assert_true(ev[i].seq > last[k]);
		last[k] = ev[i].seq;
		count[k]++;
	}
	assert_int_equal(count[0] + count[1] + g.dropped, 2 * STRESS_N);
	got_fini(&g);
	end_session();
}

static int setup(void **state)
{
	(void)state;
	return peer_listen(&P);
}

/* After each test, pass or fail: no provider running, no connection. */
static int test_end(void **state)
{
	(void)state;
	unsetenv("TRACE_FLUSH_MS");
	trace_provider_stop();
	peer_hangup(&P);
	while (peer_wait(P.lfd, 50)) /* connections the stopped provider left in the backlog */
		close(accept(P.lfd, NULL, NULL));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	peer_fini(&P);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_handshake, test_end),
		cmocka_unit_test_teardown(test_oneshot_exactly_full, test_end),
		cmocka_unit_test_teardown(test_oneshot_one_over, test_end),
		cmocka_unit_test_teardown(test_circular_wrap_durable_full, test_end),
		cmocka_unit_test_teardown(test_streaming_late_saved, test_end),
		cmocka_unit_test_teardown(test_circular_overwritten, test_end),
		cmocka_unit_test_teardown(test_streaming_stopped_is_idle, test_end),
		cmocka_unit_test_teardown(test_streaming_flushes_slow_writer, test_end),
		cmocka_unit_test_teardown(test_server_disappears_and_returns, test_end),
		cmocka_unit_test_teardown(test_stats_after_server_vanished, test_end),
		cmocka_unit_test_teardown(test_no_server, test_end),
		cmocka_unit_test_teardown(test_start_timeout_refused, test_end),
		cmocka_unit_test_teardown(test_refused_then_accepted, test_end),
		cmocka_unit_test_teardown(test_protocol_violations, test_end),
		cmocka_unit_test_teardown(test_alert, test_end),
		cmocka_unit_test_teardown(test_alert_at_exit, test_end),
		cmocka_unit_test_teardown(test_terminate, test_end),
		cmocka_unit_test_teardown(test_stop_while_recording, test_end),
		cmocka_unit_test_teardown(test_exit_slow_server, test_end),
		cmocka_unit_test_teardown(test_restart_dispositions, test_end),
		cmocka_unit_test_teardown(test_fork_child, test_end),
		cmocka_unit_test_teardown(test_circular_retain, test_end),
		cmocka_unit_test_teardown(test_streaming_two_threads, test_end),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
