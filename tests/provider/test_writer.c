/*
 * Tests of provider/writer.c and the engine's recording path, without a
 * server: the engine is driven directly (INITIALIZE, START, STOP as the
 * transport would), the macros write records, and the bytes STOP would send
 * are checked two ways:
 *   - word by word against the format spec, by a reading written here from
 *     ../shared/spec/fuchsia-trace-format.txt (not from writer.c);
 *   - by the server's own decoder: the bytes, behind the magic record and a
 *     provider info record as the server writes them into a capture, go
 *     through ingest_file() and the rows are checked with SQL.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/syscall.h>

#include "../ingest_util.h"
#include "../../provider/provider_internal.h"

/* ---- An independent reading of the records --------------------------------- */

struct rec {
	const uint64_t *w; /* the record's words */
	size_t n;          /* its size in words */
};

/* Splits bytes into records by their header's size field; fails on a
 * zero size or a record running past the end. */
static size_t split(const uint8_t *p, size_t len, struct rec *out, size_t max)
{
	size_t off = 0, k = 0;

	assert_int_equal(len % 8, 0);
	while (off < len) {
		const uint64_t *w = (const uint64_t *)(const void *)(p + off);
		size_t words = (size_t)((w[0] >> 4) & 0xfff);

		assert_true(words > 0);
		assert_true(off + words * 8 <= len);
		assert_true(k < max);
		out[k].w = w;
		out[k].n = words;
		k++;
		off += words * 8;
	}
	return k;
}

static unsigned bits(uint64_t v, unsigned lo, unsigned hi)
{
	return (unsigned)((v >> lo) & ((UINT64_C(1) << (hi - lo + 1)) - 1));
}

/* A string stream of n bytes at w, zero-padded to 8. */
static void check_stream(const uint64_t *w, const char *s)
{
	size_t n = strlen(s), i;
	const uint8_t *b = (const uint8_t *)w;

	assert_memory_equal(b, s, n);
	for (i = n; i % 8; i++)
		assert_int_equal(b[i], 0);
}

static void check_string_record(const struct rec *r, unsigned idx, const char *s)
{
	assert_int_equal(bits(r->w[0], 0, 3), 2);
	assert_int_equal(r->n, 1 + (strlen(s) + 7) / 8);
	assert_int_equal(bits(r->w[0], 16, 30), idx);
	assert_int_equal(bits(r->w[0], 31, 31), 0);
	assert_int_equal(bits(r->w[0], 32, 46), strlen(s));
	assert_int_equal(bits(r->w[0], 47, 63), 0);
	check_stream(r->w + 1, s);
}

/* ---- Driving the engine ------------------------------------------------------- */

static uint8_t out_buf[1 << 20];
static size_t out_len;

static void rec_start(int mode, uint64_t size, const char *cats)
{
	assert_int_equal(eng_initialize(mode, size), 0);
	eng_start(ENG_CLEAR_ENTIRE, cats);
	assert_true(trace_is_enabled());
}

/* Stops and keeps what STOP would send, spans concatenated (durable first). */
static void rec_stop(void)
{
	struct eng_span s[3];
	size_t k, i;

	eng_stop();
	k = eng_stop_spans(s);
	out_len = 0;
	for (i = 0; i < k; i++) {
		assert_true(out_len + s[i].n <= sizeof(out_buf));
		memcpy(out_buf + out_len, s[i].p, s[i].n);
		out_len += s[i].n;
	}
	eng_terminate();
}

/* Ingests out_buf behind a magic and provider info record. */
static void rec_ingest(struct tdb *t)
{
	struct fxtw w;

	fxtw_init(&w, 0);
	fxtw_magic(&w);
	fxtw_provider_info(&w, 7, "prov");
	fxtw_bytes(&w, out_buf, out_len);
	tdb_ingest(t, &w);
	fxtw_fini(&w);
	assert_int_equal(t->rc, INGEST_OK);
}

static uint64_t my_tid(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

/* ---- Tests -------------------------------------------------------------------- */

/* Every argument type, word by word, and the records before the event. */
static void test_layout_args(void **state)
{
	struct rec r[64];
	size_t n, i;
	const uint64_t *w;
	const char *keys[] = {"n", "i32", "u32", "i64", "u64", "d", "s", "p", "k", "b"};
	double d = 2.5;
	uint64_t dbits;

	(void)state;
	trace_set_process_name("proc");
	rec_start(ENG_ONESHOT, 65536, "");
	TRACE_INSTANT("cat", "inst", TA_NULL("n"), TA_I32("i32", -5), TA_U32("u32", 7), TA_I64("i64", -1234567890123),
		      TA_U64("u64", UINT64_C(0xfedcba9876543210)), TA_DOUBLE("d", 2.5), TA_STRING("s", "hello"),
		      TA_POINTER("p", (void *)0x1000), TA_KOID("k", 42), TA_BOOL("b", 1));
	rec_stop();
	n = split(out_buf, out_len, r, 64);
	/* initialization record: header, ticks per second */
	assert_int_equal(r[0].n, 2);
	assert_int_equal(r[0].w[0], 1 | 2 << 4);
	assert_int_equal(r[0].w[1], trace_ticks_per_second());
	/* process name: kernel object, type 1 (process), inline name, koid */
	assert_int_equal(bits(r[1].w[0], 0, 3), 7);
	assert_int_equal(bits(r[1].w[0], 16, 23), 1);
	assert_int_equal(bits(r[1].w[0], 24, 39), 0x8000 | 4);
	assert_int_equal(bits(r[1].w[0], 40, 43), 0);
	assert_int_equal(bits(r[1].w[0], 44, 63), 0);
	assert_int_equal(r[1].w[1], (uint64_t)getpid());
	check_stream(r[1].w + 2, "proc");
	/* thread record: index 1, pid, tid */
	assert_int_equal(r[2].n, 3);
	assert_int_equal(r[2].w[0], 3 | 3 << 4 | 1 << 16);
	assert_int_equal(r[2].w[1], (uint64_t)getpid());
	assert_int_equal(r[2].w[2], my_tid());
	/* strings: category, name, then each key in order */
	check_string_record(&r[3], 1, "cat");
	check_string_record(&r[4], 2, "inst");
	for (i = 0; i < 10; i++)
		check_string_record(&r[5 + i], 3 + (unsigned)i, keys[i]);
	assert_int_equal(n, 16);
	/* the event */
	w = r[15].w;
	assert_int_equal(bits(w[0], 0, 3), 4);
	assert_int_equal(bits(w[0], 16, 19), 0); /* instant */
	assert_int_equal(bits(w[0], 20, 23), 10);
	assert_int_equal(bits(w[0], 24, 31), 1);
	assert_int_equal(bits(w[0], 32, 47), 1);
	assert_int_equal(bits(w[0], 48, 63), 2);
	assert_true(w[1] > 0);
	w += 2;
	assert_int_equal(w[0], 0 | 1 << 4 | 3 << 16); /* null */
	w += 1;
	assert_int_equal(w[0], 1 | 1 << 4 | 4 << 16 | (uint64_t)(uint32_t)-5 << 32); /* i32 */
	w += 1;
	assert_int_equal(w[0], 2 | 1 << 4 | 5 << 16 | UINT64_C(7) << 32); /* u32 */
	w += 1;
	assert_int_equal(w[0], 3 | 2 << 4 | 6 << 16);
	assert_int_equal(w[1], (uint64_t)INT64_C(-1234567890123));
	w += 2;
	assert_int_equal(w[0], 4 | 2 << 4 | 7 << 16);
	assert_int_equal(w[1], UINT64_C(0xfedcba9876543210));
	w += 2;
	memcpy(&dbits, &d, 8);
	assert_int_equal(w[0], 5 | 2 << 4 | 8 << 16);
	assert_int_equal(w[1], dbits);
	w += 2;
	assert_int_equal(w[0], 6 | 2 << 4 | 9 << 16 | (uint64_t)(0x8000 | 5) << 32); /* inline value */
	check_stream(w + 1, "hello");
	w += 2;
	assert_int_equal(w[0], 7 | 2 << 4 | 10 << 16);
	assert_int_equal(w[1], 0x1000);
	w += 2;
	assert_int_equal(w[0], 8 | 2 << 4 | 11 << 16);
	assert_int_equal(w[1], 42);
	w += 2;
	assert_int_equal(w[0], 9 | 1 << 4 | 12 << 16 | UINT64_C(1) << 32);
	w += 1;
	assert_int_equal((size_t)(w - r[15].w), r[15].n);
}

/* Each event type's own word, and a thread name. */
static void test_layout_events(void **state)
{
	struct rec r[64];
	size_t n, i, k = 0;
	const struct rec *ev[16];
	uint64_t t0;

	(void)state;
	rec_start(ENG_ONESHOT, 65536, "");
	trace_set_thread_name("main-thread");
	t0 = trace_now();
	TRACE_DURATION_BEGIN("c", "begin");
	TRACE_DURATION_END("c", "begin");
	TRACE_DURATION_COMPLETE("c", "complete", t0);
	TRACE_COUNTER("c", "counter", 77, TA_I64("v", 5));
	TRACE_ASYNC_BEGIN("c", "async", 0x1234);
	TRACE_ASYNC_INSTANT("c", "async", 0x1234);
	TRACE_ASYNC_END("c", "async", 0x1234);
	TRACE_FLOW_BEGIN("c", "flow", 99);
	TRACE_FLOW_STEP("c", "flow", 99);
	TRACE_FLOW_END("c", "flow", 99);
	{
		TRACE_DURATION("c", "zone", TA_U32("x", 3));
	}
	rec_stop();
	n = split(out_buf, out_len, r, 64);
	for (i = 0; i < n; i++)
		if (bits(r[i].w[0], 0, 3) == 4)
			ev[k++] = &r[i];
	assert_int_equal(k, 11);
	/* the thread's name: kernel object type 2, koid tid, "process" koid argument */
	for (i = 0; i < n && !(bits(r[i].w[0], 0, 3) == 7 && bits(r[i].w[0], 16, 23) == 2); i++)
		;
	assert_true(i < n);
	assert_int_equal(bits(r[i].w[0], 16, 23), 2);
	assert_int_equal(bits(r[i].w[0], 24, 39), 0x8000 | 11);
	assert_int_equal(bits(r[i].w[0], 40, 43), 1);
	assert_int_equal(r[i].w[1], my_tid());
	check_stream(r[i].w + 2, "main-thread");
	assert_int_equal(r[i].w[4], 8 | 3 << 4 | (uint64_t)(0x8000 | 7) << 16);
	check_stream(r[i].w + 5, "process");
	assert_int_equal(r[i].w[6], (uint64_t)getpid());
	/* types in order, and the word each type adds */
	{
		static const unsigned types[] = {2, 3, 4, 1, 5, 6, 7, 8, 9, 10, 4};
		static const size_t words[] = {2, 2, 3, 5, 3, 3, 3, 3, 3, 3, 4};

		for (i = 0; i < 11; i++) {
			assert_int_equal(bits(ev[i]->w[0], 16, 19), types[i]);
			assert_int_equal(ev[i]->n, words[i]);
		}
	}
	assert_true(ev[2]->w[2] >= ev[2]->w[1] && ev[2]->w[1] == t0);      /* complete: end time */
	assert_int_equal(ev[3]->w[2], 3 | 2 << 4 | (uint64_t)bits(ev[3]->w[2], 16, 31) << 16); /* the i64 arg */
	assert_int_equal(ev[3]->w[3], 5);
	assert_int_equal(ev[3]->w[4], 77);     /* counter id after the args */
	assert_int_equal(ev[4]->w[2], 0x1234); /* async ids */
	assert_int_equal(ev[6]->w[2], 0x1234);
	assert_int_equal(ev[9]->w[2], 99); /* flow id */
	assert_true(ev[10]->w[3] >= ev[10]->w[1]);
	assert_int_equal(bits(ev[10]->w[0], 20, 23), 1); /* the zone's argument */
}

static uint64_t worker_tid;

static void *named_worker(void *arg)
{
	(void)arg;
	worker_tid = my_tid();
	trace_set_thread_name("worker");
	TRACE_INSTANT("c", "from-worker");
	return NULL;
}

/* The same records read by the server's decoder. The thread named is not
 * the main one: on Linux its tid is the pid, one koid for two objects, and
 * the server keeps one name per koid. */
static void test_ingest_events(void **state)
{
	struct tdb t;
	uint64_t t0;
	pthread_t th;

	(void)state;
	trace_set_process_name("proc");
	trace_set_thread_name(""); /* forget test_layout_events' name for this thread */
	rec_start(ENG_ONESHOT, 65536, "");
	assert_int_equal(pthread_create(&th, NULL, named_worker, NULL), 0);
	pthread_join(th, NULL);
	TRACE_DURATION_BEGIN("c", "outer", TA_I32("a", -1));
	t0 = trace_now();
	TRACE_DURATION_COMPLETE("c", "complete", t0, TA_STRING("s", "str"), TA_STRING_LITERAL("l", "lit"));
	{
		TRACE_DURATION("c", "zone", TA_BOOL("b", 1), TA_DOUBLE("d", 0.5), TA_U64("u", 1u << 31));
	}
	TRACE_DURATION_END("c", "outer");
	TRACE_INSTANT("c", "inst", TA_POINTER("p", (void *)0x40), TA_KOID("k", 9), TA_NULL("n"), TA_U32("u32", 3),
		      TA_I64("i64", -7));
	TRACE_COUNTER("c", "cnt", 1, TA_I64("v", 10));
	TRACE_COUNTER("c", "cnt", 1, TA_I64("v", 20));
	TRACE_ASYNC_BEGIN("c", "op", 5);
	TRACE_ASYNC_END("c", "op", 5);
	TRACE_DURATION_BEGIN("c", "from");
	TRACE_FLOW_BEGIN("c", "fl", 3);
	TRACE_DURATION_END("c", "from");
	TRACE_DURATION_BEGIN("c", "to");
	TRACE_FLOW_END("c", "fl", 3);
	TRACE_DURATION_END("c", "to");
	rec_stop();
	rec_ingest(&t);
	assert_string_equal(tdb_rows(&t, "SELECT name, depth FROM slice_view JOIN tracks ON tracks.id = track_id "
				     "WHERE kind = 'thread' AND name != 'from-worker' ORDER BY ts, depth"),
			    "outer|0\ncomplete|1\nzone|1\ninst|0\nfrom|0\nto|0");
	assert_string_equal(t_args(&t, "outer"), "a=-1");
	assert_string_equal(t_args(&t, "complete"), "s=str,l=lit");
	assert_string_equal(t_args(&t, "zone"), "b=1,d=0.5,u=2147483648");
	assert_string_equal(t_args(&t, "inst"), "p=64,k=9,n=null,u32=3,i64=-7");
	assert_string_equal(tdb_rows(&t, "SELECT group_concat(value) FROM (SELECT value FROM counters ORDER BY ts)"),
			    "10,20");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name = 'op'"), 1);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM flows"), 1);
	assert_string_equal(tdb_rows(&t, "SELECT name FROM threads WHERE tid = %llu", (unsigned long long)worker_tid),
			    "worker");
	assert_string_equal(tdb_rows(&t, "SELECT name FROM processes WHERE pid = %d", (int)getpid()), "proc");
	assert_string_equal(tdb_rows(&t, "SELECT name FROM providers"), "prov");
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM diagnostics WHERE value != 0 AND name NOT LIKE '%%ok%%'"),
			 0);
	tdb_close(&t);
}

/* Categories: exact names, prefixes with '*', the empty list (all). */
static void test_categories(void **state)
{
	(void)state;
	assert_true(wire_category_match("", "x"));
	assert_true(wire_category_match("a, b*", "a"));
	assert_true(wire_category_match("a, b*", "bcd"));
	assert_true(wire_category_match("a,b*", "b"));
	assert_false(wire_category_match("a,b*", "ab"));
	assert_false(wire_category_match("abc", "ab"));
	assert_false(wire_category_match("ab", "abc"));
	rec_start(ENG_ONESHOT, 65536, "on,pre*");
	assert_true(TRACE_CATEGORY_ENABLED("on"));
	assert_true(TRACE_CATEGORY_ENABLED("prefix"));
	assert_false(TRACE_CATEGORY_ENABLED("off"));
	TRACE_INSTANT("off", "never");
	TRACE_INSTANT("on", "yes");
	rec_stop();
	assert_false(TRACE_CATEGORY_ENABLED("on"));
	assert_true(memmem(out_buf, out_len, "yes", 3) != NULL);
	assert_true(memmem(out_buf, out_len, "never", 5) == NULL);
}

/* Macros cost nothing but the check when off: their arguments are not
 * evaluated. */
static int evaluated;
static int side_effect(void)
{
	return ++evaluated;
}

static void test_off_no_evaluation(void **state)
{
	(void)state;
	TRACE_INSTANT("c", "x", TA_I32("v", side_effect()));
	{
		TRACE_DURATION("c", "z", TA_I32("v", side_effect()));
	}
	assert_int_equal(evaluated, 0);
	rec_start(ENG_ONESHOT, 65536, "");
	TRACE_INSTANT("c", "x", TA_I32("v", side_effect()));
	rec_stop();
	assert_int_equal(evaluated, 1);
}

static void *inline_thread(void *arg)
{
	(void)arg;
	TRACE_INSTANT("c", "late-thread");
	return NULL;
}

/* Past 32767 strings and 255 threads, refs go inline (the spec's advice). */
static void test_inline_fallback(void **state)
{
	struct rec r[64];
	pthread_t th;
	size_t n, i;
	struct tdb t;

	(void)state;
	rec_start(ENG_ONESHOT, 65536, "");
	TRACE_INSTANT("c", "first");
	atomic_store(&eng.next_string, 0x8000);
	atomic_store(&eng.next_thread, 0x100);
	assert_int_equal(pthread_create(&th, NULL, inline_thread, NULL), 0);
	pthread_join(th, NULL);
	TRACE_INSTANT("c", "inl", TA_I32("key2", 1));
	rec_stop();
	n = split(out_buf, out_len, r, 64);
	for (i = 0; i < n; i++) {
		const uint64_t *w = r[i].w;

		if (bits(w[0], 0, 3) != 4 || bits(w[0], 48, 63) == 2)
			continue;
		if (bits(w[0], 24, 31) == 0) { /* the late thread: inline pid and tid and name; "c" is
						 * found in the process's table, registered by this thread */
			assert_int_equal(w[2], (uint64_t)getpid());
			assert_int_equal(bits(w[0], 32, 47), 1);
			assert_int_equal(bits(w[0], 48, 63), 0x8000 | 11);
			check_stream(w + 4, "late-thread");
		} else { /* this thread: indexed category, inline name and key */
			assert_int_equal(bits(w[0], 32, 47), 1);
			assert_int_equal(bits(w[0], 48, 63), 0x8000 | 3);
			check_stream(w + 2, "inl");
			assert_int_equal(w[3], 1 | 2 << 4 | (uint64_t)(0x8000 | 4) << 16 | UINT64_C(1) << 32);
			check_stream(w + 4, "key2");
		}
	}
	rec_ingest(&t);
	assert_string_equal(tdb_rows(&t, "SELECT name FROM slice_view ORDER BY ts"), "first\nlate-thread\ninl");
	assert_int_equal(tdb_int(&t, "SELECT count(DISTINCT tid) FROM threads"), 2);
	tdb_close(&t);
}

static void *same_names_thread(void *arg)
{
	(void)arg;
	TRACE_INSTANT("c", "shared-name", TA_I32("shared-key", 2));
	return NULL;
}

/* One string record per distinct string per trace: another thread, and
 * another copy of the same characters, find the first registration. */
static void test_one_index_per_string(void **state)
{
	static char copy[] = "shared-name"; /* not the literal's address */
	struct rec r[64];
	pthread_t th;
	size_t n, i, strings = 0;

	(void)state;
	rec_start(ENG_ONESHOT, 65536, "");
	TRACE_INSTANT("c", "shared-name", TA_I32("shared-key", 1));
	assert_int_equal(pthread_create(&th, NULL, same_names_thread, NULL), 0);
	pthread_join(th, NULL);
	TRACE_INSTANT("c", copy);
	rec_stop();
	n = split(out_buf, out_len, r, 64);
	for (i = 0; i < n; i++)
		if (bits(r[i].w[0], 0, 3) == 2)
			strings++;
	assert_int_equal(strings, 3); /* "c", "shared-name", "shared-key" */
	for (i = 0; i < n; i++)
		if (bits(r[i].w[0], 0, 3) == 4)
			assert_int_equal(bits(r[i].w[0], 48, 63), 2);
}

static _Atomic int writer_inside;

/* A writer inside a record that needs the engine's lock, as one that finds
 * its buffer full and switches it does. */
static void *locking_writer(void *arg)
{
	struct trace_tls *t = eng_tls();

	(void)arg;
	eng_enter(t);
	atomic_store(&writer_inside, 1);
	nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); /* the engine starts waiting */
	pthread_mutex_lock(&eng.lock);
	pthread_mutex_unlock(&eng.lock);
	eng_leave(t);
	return NULL;
}

/* Waiting for writers must not hold the lock a writer inside a record may
 * need. (It once did: each streaming save then stalled until the wait gave
 * up, a second or more, and unpaced streaming fell to 5 MB/s.) */
static void test_quiesce_lets_writers_switch(void **state)
{
	struct timespec a, b;
	pthread_t th;
	double took;

	(void)state;
	atomic_store(&writer_inside, 0);
	assert_int_equal(pthread_create(&th, NULL, locking_writer, NULL), 0);
	while (!atomic_load(&writer_inside))
		sched_yield();
	clock_gettime(CLOCK_MONOTONIC, &a);
	eng_quiesce();
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(th, NULL);
	took = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	/* waiting for a writer gives up after at least 1 s: a wait that long
	 * means the writer could not get the lock */
	if (took > 0.9)
		fail_msg("eng_quiesce took %.3f s", took);
	assert_true(took >= 0.015); /* it did wait for the writer */
}

/* A string value longer than the cut is cut at a UTF-8 boundary; the record
 * stays within 32760 bytes and decodes. */
static void test_long_strings(void **state)
{
	static char big[40000];
	struct tdb t;

	(void)state;
	memset(big, 'a', sizeof(big) - 1);
	memcpy(big + 1999, "\xc3\xa9", 2); /* é across the 2000-byte cut: cut before it */
	rec_start(ENG_ONESHOT, 1 << 20, "");
	TRACE_INSTANT("c", "big", TA_STRING("s1", big), TA_STRING("s2", big), TA_STRING("s3", big));
	rec_stop();
	rec_ingest(&t);
	assert_int_equal(tdb_int(&t, "SELECT length(value) FROM arg_view WHERE key = 's1'"), 1999);
	assert_int_equal(tdb_int(&t, "SELECT count(*) FROM arg_view WHERE key LIKE 's_'"), 3);
	tdb_close(&t);
}

/* provider/utf8.h's cut at each kind of boundary, and its reading. */
static void test_utf8_helpers(void **state)
{
	static const char s[] = "ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z"; /* a b é € 😀 z: 12 bytes */
	char out[8];

	(void)state;
	assert_int_equal(utf8_cut(s, 12, 12), 12);
	assert_int_equal(utf8_cut(s, 12, 3), 2);   /* inside é */
	assert_int_equal(utf8_cut(s, 12, 4), 4);   /* after é */
	assert_int_equal(utf8_cut(s, 12, 6), 4);   /* inside € */
	assert_int_equal(utf8_cut(s, 12, 10), 7);  /* inside 😀 */
	assert_int_equal(utf8_cut(s, 12, 11), 11); /* after 😀 */
	assert_int_equal(utf8_cut("\x80\x80\x80\x80\x80", 5, 4), 4); /* not UTF-8: cut as bytes */
	assert_int_equal(utf8_copy(out, sizeof(out), s), 7); /* 7 bytes fit: a b é €, not half of 😀 */
	assert_string_equal(out, "ab\xc3\xa9\xe2\x82\xac");
	assert_true(utf8_valid(s, 12));
	assert_false(utf8_valid(s, 3));                  /* é cut short */
	assert_false(utf8_valid("\xc0\xaf", 2));         /* overlong */
	assert_false(utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
	assert_false(utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
}

static void *long_named_worker(void *arg)
{
	worker_tid = my_tid();
	trace_set_thread_name(arg);
	TRACE_INSTANT("c", "from-long-name");
	return NULL;
}

/* A thread or process name longer than 63 bytes with a 2-byte character
 * across the cut loses the whole character: 62 bytes, no lone 0xC3 for
 * the server to show as U+FFFD. */
static void test_long_names_cut_clean(void **state)
{
	char name[67];
	struct tdb t;
	pthread_t th;

	(void)state;
	memset(name, 'a', 62);
	memcpy(name + 62, "\xc3\xa9zz", 5); /* 66 bytes, the 63rd is 0xC3 */
	trace_set_process_name(name);
	rec_start(ENG_ONESHOT, 65536, "");
	assert_int_equal(pthread_create(&th, NULL, long_named_worker, name), 0);
	pthread_join(th, NULL);
	rec_stop();
	rec_ingest(&t);
	assert_string_equal(tdb_rows(&t, "SELECT length(CAST(name AS BLOB)), instr(CAST(name AS BLOB), X'C3') "
				     "FROM threads WHERE tid = %llu", (unsigned long long)worker_tid),
			    "62|0");
	assert_string_equal(tdb_rows(&t, "SELECT length(CAST(name AS BLOB)), instr(CAST(name AS BLOB), X'C3') "
				     "FROM processes WHERE pid = %d", (int)getpid()),
			    "62|0");
	tdb_close(&t);
	trace_set_process_name("proc");
}

static uint64_t mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* With the TSC as the clock (when the CPU has an invariant one), the
 * initialization record carries its calibrated rate and the server's own
 * decoder turns the ticks into CLOCK_MONOTONIC nanoseconds: a zone around a
 * 30 ms sleep starts between the readings of CLOCK_MONOTONIC taken around
 * it, and lasts 30 ms. */
static void test_tsc_times_in_ns(void **state)
{
	struct tdb t;
	uint64_t m0, m1, ts, dur;

	(void)state;
	eng_clock_init();
	if (!trace_clock_.tsc) {
		print_message("no invariant TSC: the clock is CLOCK_MONOTONIC, nothing to check\n");
		skip();
	}
	assert_int_not_equal(trace_ticks_per_second(), 1000000000u);
	rec_start(ENG_ONESHOT, 65536, "");
	m0 = mono_now_ns();
	{
		TRACE_DURATION("c", "tsc-zone");
		nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
	}
	m1 = mono_now_ns();
	rec_stop();
	rec_ingest(&t);
	ts = (uint64_t)tdb_int(&t, "SELECT ts FROM slice_view WHERE name = 'tsc-zone'");
	dur = (uint64_t)tdb_int(&t, "SELECT dur FROM slice_view WHERE name = 'tsc-zone'");
	tdb_close(&t);
	/* calibration to the kHz over 20 ms: a few microseconds either way */
	assert_true(ts + 200000 >= m0 && ts <= m1);
	assert_true(dur >= 29000000 && dur <= m1 - m0 + 200000);
}

static const char *const site_names[2] = {"first-name", "second-name"};

static void *site_worker(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < 100; i++)
		TRACE_INSTANT("c", site_names[i & 1]);
	return NULL;
}

/* A site keeps the refs of its category and first name: a second name at
 * the same site, other threads, and a new trace (new string indexes) all
 * still write the right strings. */
static void test_site_refs(void **state)
{
	struct tdb t;
	pthread_t th;
	int round;

	(void)state;
	for (round = 0; round < 2; round++) {
		rec_start(ENG_ONESHOT, 65536, "");
		if (round == 1)
			TRACE_INSTANT("c", "shifts-the-indexes");
		site_worker(NULL);
		assert_int_equal(pthread_create(&th, NULL, site_worker, NULL), 0);
		pthread_join(th, NULL);
		rec_stop();
		rec_ingest(&t);
		assert_string_equal(tdb_rows(&t, "SELECT name, count(*) FROM slice_view WHERE name LIKE '%%-name' "
						 "GROUP BY name ORDER BY name"),
				    "first-name|100\nsecond-name|100");
		assert_int_equal(tdb_int(&t, "SELECT count(*) FROM slice_view WHERE name LIKE '<unknown%%'"), 0);
		tdb_close(&t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_args),    cmocka_unit_test(test_layout_events),
		cmocka_unit_test(test_ingest_events),  cmocka_unit_test(test_categories),
		cmocka_unit_test(test_off_no_evaluation), cmocka_unit_test(test_inline_fallback),
		cmocka_unit_test(test_long_strings),      cmocka_unit_test(test_long_names_cut_clean),
		cmocka_unit_test(test_utf8_helpers),
		cmocka_unit_test(test_one_index_per_string),
		cmocka_unit_test(test_quiesce_lets_writers_switch),
		cmocka_unit_test(test_tsc_times_in_ns),   cmocka_unit_test(test_site_refs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
