/*
 * Unit tests of the Chrome JSON export (query/export.c): its content,
 * compared event for event with a reading of the database made here
 * (docs/API.md, Export).
 *
 * The trace is gen_fxt's (included below: slices nested and complete,
 * instants, counters, flows, async operations, logs, context switches and
 * arguments of every type), plus a few records written here for the
 * edges: 64-bit argument values and a tid past 2^63, which must print
 * exactly; strings with quotes and control characters; a slice that never
 * ends; a process left unnamed, which the export's process name names.
 *
 * Both sides are brought to one line per event ("X|name|cat|ts|dur|pid|
 * tid|args", ...), sorted and compared as lists, so an event missing, one
 * too many, or one member wrong shows as the first line that differs. The
 * export's JSON is parsed with cJSON (numbers as doubles: the lines hold
 * numbers as doubles too, and the exact digits of the 64-bit values are
 * looked for in the text).
 */
#include "../testutil.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "../../query/query.h"

/* gen_fxt's generator, without its command line */
int gen_fxt_main(int argc, char **argv);
#define main gen_fxt_main
#include "../gen_fxt.c"
#undef main

enum { EDGE_PID = 7 };
#define EDGE_TID (UINT64_MAX - 1)

static struct tdb db;

/* ---- the trace ---------------------------------------------------------- */

static void write_edges(struct fxtw *w)
{
	const struct fxtw_thr th = FXTW_TINL(EDGE_PID, EDGE_TID);
	struct fxtw_arg a[10];

	a[0] = fxtw_arg_u64(FXTW_INL("u64max"), UINT64_MAX);
	a[1] = fxtw_arg_i64(FXTW_INL("i64min"), INT64_MIN);
	a[2] = fxtw_arg_koid(FXTW_INL("koid"), (UINT64_C(1) << 63) + 5);
	a[3] = fxtw_arg_u32(FXTW_INL("u32max"), UINT32_MAX);
	a[4] = fxtw_arg_i32(FXTW_INL("i32min"), INT32_MIN);
	a[5] = fxtw_arg_str(FXTW_INL("text"), FXTW_INL("q\"b\\s\x01\x1f\ttab\nnl"));
	a[6] = fxtw_arg_bool(FXTW_INL("yes"), 1);
	a[7] = fxtw_arg_null(FXTW_INL("nothing"));
	a[8] = fxtw_arg_double(FXTW_INL("tenth"), 0.1);
	a[9] = fxtw_arg_ptr(FXTW_INL("ptr"), UINT64_C(0xfedcba9876543210));
	fxtw_complete(w, th, FXTW_INL("edge"), FXTW_INL("edges \"quoted\""), 5000, 7001, a, 10);
	a[0] = fxtw_arg_bool(FXTW_INL("no"), 0);
	fxtw_begin(w, th, FXTW_INL("edge"), FXTW_INL("never ends"), 8000, a, 1);
}

static int setup(void **state)
{
	struct opts o = { 3000, 6, 42, 1000000000, 0, 0, NULL, 0 };
	struct gen g;

	(void)state;
	gen_init(&g, &o);
	write_preamble(&g, o.tps);
	run(&g);
	write_edges(&g.w);
	tdb_ingest(&db, &g.w);
	gen_fini(&g);
	if (db.rc != INGEST_OK)
		fail_msg("ingest failed: %d %s", db.rc, db.res.error);
	/* the trace holds every kind the export writes */
	assert_true(tdb_int(&db, "SELECT count(*) FROM slices s JOIN tracks t ON t.id = s.track_id "
				 "WHERE t.kind = 'async'") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM slices WHERE dur < 0") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM counters") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM flows") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM logs") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM sched") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM args WHERE type = 4 AND int_value < 0") > 0);
	assert_true(tdb_int(&db, "SELECT count(*) FROM processes WHERE pid = %d AND name IS NULL", EDGE_PID) == 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tdb_close(&db);
	return 0;
}

/* ---- lines ----------------------------------------------------------------- */

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, struct jbuf *b)
{
	char *s = jb_take(b, NULL);

	assert_non_null(s);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n++] = s;
}

static void lines_free(struct lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

__attribute__((format(printf, 2, 3))) static void put(struct jbuf *b, const char *fmt, ...)
{
	char t[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t, sizeof(t), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(t));
	jb_raw(b, t, (size_t)n);
}

/* Numbers as the doubles a JSON reader makes of them. */
static void put_num(struct jbuf *b, double d)
{
	put(b, "|%.17g", d);
}

/* ---- the database's side ----------------------------------------------------- */

static int64_t col(sqlite3_stmt *st, int i)
{
	return sqlite3_column_int64(st, i);
}

static sqlite3_stmt *prep(const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(db.db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("bad SQL: %s: %s", sql, sqlite3_errmsg(db.db));
	return st;
}

/* An argument set as "{k=v,...}" by the API's rules for argument values. */
static void db_args(struct jbuf *b, int64_t set)
{
	sqlite3_stmt *st = prep("SELECT key, type, value FROM arg_view WHERE arg_set_id = ? ORDER BY seq");

	jb_raw(b, "|{", 2);
	sqlite3_bind_int64(st, 1, set);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t v = col(st, 2);

		put(b, "%s=", (const char *)sqlite3_column_text(st, 0));
		switch (sqlite3_column_int(st, 1)) {
		case 0:
			put(b, "null");
			break;
		case 2:
		case 4:
		case 8:
			put(b, "%.17g", (double)(uint64_t)v);
			break;
		case 5:
			put(b, "%.17g", sqlite3_column_double(st, 2));
			break;
		case 6:
			put(b, "\"%s\"", (const char *)sqlite3_column_text(st, 2));
			break;
		case 7:
			put(b, "\"0x%" PRIx64 "\"", (uint64_t)v);
			break;
		case 9:
			put(b, "%s", v ? "true" : "false");
			break;
		case 10:
			put(b, "blob_bytes:%d", sqlite3_column_bytes(st, 2));
			break;
		default:
			put(b, "%.17g", (double)v);
		}
		jb_raw(b, ",", 1);
	}
	jb_raw(b, "}", 1);
	sqlite3_finalize(st);
}

static void db_slices(struct lines *l)
{
	sqlite3_stmt *st = prep("SELECT v.name, v.category, v.ts, v.dur, k.kind, k.pid, th.pid, th.tid, v.arg_set_id, v.id "
				"FROM slice_view v JOIN tracks k ON k.id = v.track_id "
				"LEFT JOIN threads th ON th.id = k.thread_id");
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0), *cat = (const char *)sqlite3_column_text(st, 1);
		int64_t ts = col(st, 2), dur = col(st, 3);
		int async = strcmp((const char *)sqlite3_column_text(st, 4), "async") == 0;

		jb_init(&b);
		if (async) { /* b (args), then e at the end when it ended: by id */
			put(&b, "b|%s|%s|%" PRId64 "|%" PRId64 "|%" PRId64, name, cat, ts, col(st, 5),
			    col(st, 9));
			db_args(&b, col(st, 8));
			lines_add(l, &b);
			if (dur < 0)
				continue;
			jb_init(&b);
			put(&b, "e|%s|%s|%" PRId64 "|%" PRId64 "|%" PRId64, name, cat, ts + dur, col(st, 5),
			    col(st, 9));
			lines_add(l, &b);
			continue;
		}
		put(&b, "%s|%s|%s|%" PRId64, dur < 0 ? "B" : "X", name, cat, ts);
		if (dur >= 0)
			put(&b, "|%" PRId64, dur);
		put_num(&b, (double)(uint64_t)col(st, 6));
		put_num(&b, (double)(uint64_t)col(st, 7));
		db_args(&b, col(st, 8));
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
}

static void db_counters(struct lines *l)
{
	sqlite3_stmt *st = prep("SELECT n.str, c.ts, k.pid, k.counter_id, s.str, c.value FROM counters c "
				"JOIN tracks k ON k.id = c.track_id JOIN strings n ON n.id = k.name_id "
				"JOIN strings s ON s.id = k.series_id");
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		jb_init(&b);
		put(&b, "C|%s|%" PRId64, (const char *)sqlite3_column_text(st, 0), col(st, 1));
		put_num(&b, (double)(uint64_t)col(st, 2));
		put_num(&b, (double)(uint64_t)col(st, 3));
		put(&b, "|{%s=%.17g,}", (const char *)sqlite3_column_text(st, 4), sqlite3_column_double(st, 5));
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
}

/* One line per arrow: where it starts (from_ts, the from-slice's thread)
 * and where it ends (to_ts, the to-slice's). */
static void db_flows(struct lines *l)
{
	sqlite3_stmt *st = prep("SELECT c.str, n.str, f.from_ts, tha.pid, tha.tid, f.to_ts, thb.pid, thb.tid FROM flows f "
				"JOIN slice_view a ON a.id = f.from_slice_id JOIN tracks ka ON ka.id = a.track_id "
				"JOIN threads tha ON tha.id = ka.thread_id "
				"JOIN slice_view b ON b.id = f.to_slice_id JOIN tracks kb ON kb.id = b.track_id "
				"JOIN threads thb ON thb.id = kb.thread_id "
				"JOIN strings c ON c.id = f.category_id JOIN strings n ON n.id = f.name_id");
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		jb_init(&b);
		put(&b, "flow|%s|%s|%" PRId64, (const char *)sqlite3_column_text(st, 0),
		    (const char *)sqlite3_column_text(st, 1), col(st, 2));
		put_num(&b, (double)(uint64_t)col(st, 3));
		put_num(&b, (double)(uint64_t)col(st, 4));
		put(&b, "|%" PRId64, col(st, 5));
		put_num(&b, (double)(uint64_t)col(st, 6));
		put_num(&b, (double)(uint64_t)col(st, 7));
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
}

static void db_logs(struct lines *l)
{
	sqlite3_stmt *st = prep("SELECT m.str, l.ts, l.pid, l.tid FROM logs l JOIN strings m ON m.id = l.message_id");
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		jb_init(&b);
		put(&b, "i|%s|log|t|%" PRId64, (const char *)sqlite3_column_text(st, 0), col(st, 1));
		put_num(&b, (double)(uint64_t)col(st, 2));
		put_num(&b, (double)(uint64_t)col(st, 3));
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
}

/* The pid of "CPU scheduling": one past every pid of the trace. */
static int64_t db_cpu_pid(void)
{
	return 1 + tdb_int(&db, "SELECT max(p) FROM (SELECT pid p FROM processes UNION ALL SELECT pid FROM threads "
				"UNION ALL SELECT pid FROM sched)");
}

/* Names: processes (unnamed ones as unnamed, when given), threads, and the
 * CPU scheduling process with a thread per CPU. */
static void db_names(struct lines *l, const char *unnamed)
{
	sqlite3_stmt *st = prep("SELECT 'process_name', pid, 0, name FROM processes UNION ALL "
				"SELECT 'thread_name', pid, tid, name FROM threads UNION ALL "
				"SELECT DISTINCT 'thread_name', -1, cpu, 'CPU ' || cpu FROM sched");
	int64_t cpu_pid = db_cpu_pid();
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 3);
		int64_t pid = col(st, 1);

		if (name == NULL && (unnamed == NULL || strcmp((const char *)sqlite3_column_text(st, 0), "process_name")))
			continue;
		jb_init(&b);
		put(&b, "M|%s", (const char *)sqlite3_column_text(st, 0));
		put_num(&b, (double)(uint64_t)(pid == -1 ? cpu_pid : pid));
		put_num(&b, (double)(uint64_t)col(st, 2));
		put(&b, "|{name=\"%s\",}", name ? name : unnamed);
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
	jb_init(&b);
	put(&b, "M|process_name");
	put_num(&b, (double)cpu_pid);
	put_num(&b, 0);
	put(&b, "|{name=\"CPU scheduling\",}");
	lines_add(l, &b);
}

/* Runs: X (B while running at the end) on the CPU's thread, named after
 * the thread that ran. */
static void db_sched(struct lines *l)
{
	sqlite3_stmt *st = prep("SELECT s.ts, s.dur, s.cpu, ifnull(th.name, 'tid ' || s.tid), s.pid, s.tid, s.priority, "
				"s.end_state FROM sched s JOIN threads th ON th.id = s.thread_id");
	int64_t cpu_pid = db_cpu_pid();
	struct jbuf b;

	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t dur = col(st, 1);
		const char *end = (const char *)sqlite3_column_text(st, 7);

		jb_init(&b);
		put(&b, "%s|%s|sched|%" PRId64, dur < 0 ? "B" : "X", (const char *)sqlite3_column_text(st, 3),
		    col(st, 0));
		if (dur >= 0)
			put(&b, "|%" PRId64, dur);
		put_num(&b, (double)cpu_pid);
		put_num(&b, (double)col(st, 2));
		put(&b, "|{pid=%.17g,tid=%.17g,priority=%.17g,end_state=", (double)(uint64_t)col(st, 4),
		    (double)(uint64_t)col(st, 5), (double)col(st, 6));
		if (end)
			put(&b, "\"%s\",}", end);
		else
			put(&b, "null,}");
		lines_add(l, &b);
	}
	sqlite3_finalize(st);
}

/* ---- the export's side ---------------------------------------------------- */

/* The whole export, read max bytes at a time (NUL-terminated). */
static char *export_text(const char *proc_name, size_t max, size_t *len)
{
	struct qry_error err = { 0 };
	struct qry_export *e = qry_export_open(db.path, proc_name, &err);
	struct jbuf out;
	char buf[65536];
	long n;

	if (e == NULL)
		fail_msg("qry_export_open: %s", err.msg);
	assert_true(max <= sizeof(buf));
	jb_init(&out);
	while ((n = qry_export_read(e, buf, max)) > 0) {
		assert_true((size_t)n <= max);
		jb_raw(&out, buf, (size_t)n);
	}
	assert_int_equal(n, 0);
	qry_export_close(e);
	return jb_take(&out, len);
}

static const cJSON *item(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (v == NULL) {
		char *s = cJSON_PrintUnformatted(o);

		fail_msg("no member %s in %s", k, s);
	}
	return v;
}

static const char *text_of(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	if (!cJSON_IsString(v))
		fail_msg("member %s is not a string", k);
	return v->valuestring;
}

/* Microseconds with nanosecond decimals back to nanoseconds. */
static int64_t ns_of(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);

	assert_true(cJSON_IsNumber(v));
	return (int64_t)llround(v->valuedouble * 1000.0);
}

static void ex_value(struct jbuf *b, const cJSON *v)
{
	if (cJSON_IsNull(v))
		put(b, "null");
	else if (cJSON_IsTrue(v))
		put(b, "true");
	else if (cJSON_IsFalse(v))
		put(b, "false");
	else if (cJSON_IsNumber(v))
		put(b, "%.17g", v->valuedouble);
	else if (cJSON_IsString(v))
		put(b, "\"%s\"", v->valuestring);
	else if (cJSON_IsObject(v) && cJSON_GetArraySize(v) == 1 && cJSON_IsNumber(cJSON_GetObjectItem(v, "blob_bytes")))
		put(b, "blob_bytes:%d", cJSON_GetObjectItem(v, "blob_bytes")->valueint);
	else
		put(b, "?");
}

static void ex_args(struct jbuf *b, const cJSON *e)
{
	const cJSON *a = item(e, "args"), *v;

	assert_true(cJSON_IsObject(a));
	jb_raw(b, "|{", 2);
	cJSON_ArrayForEach(v, a) {
		put(b, "%s=", v->string);
		ex_value(b, v);
		jb_raw(b, ",", 1);
	}
	jb_raw(b, "}", 1);
}

struct flow_end {
	double id;
	const cJSON *e;
};

static int flow_end_cmp(const void *a, const void *b)
{
	const struct flow_end *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* s and f events paired by id: one line per arrow. */
static void ex_flows(struct lines *l, struct flow_end *s, size_t ns, struct flow_end *f, size_t nf)
{
	struct jbuf b;
	size_t i;

	assert_int_equal(ns, nf);
	qsort(s, ns, sizeof(*s), flow_end_cmp);
	qsort(f, nf, sizeof(*f), flow_end_cmp);
	for (i = 0; i < ns; i++) {
		if (s[i].id != f[i].id || (i > 0 && s[i].id == s[i - 1].id))
			fail_msg("flow events do not pair by id at %.17g", s[i].id);
		assert_string_equal(text_of(s[i].e, "cat"), text_of(f[i].e, "cat"));
		assert_string_equal(text_of(s[i].e, "name"), text_of(f[i].e, "name"));
		assert_string_equal(text_of(f[i].e, "bp"), "e");
		jb_init(&b);
		put(&b, "flow|%s|%s|%" PRId64, text_of(s[i].e, "cat"), text_of(s[i].e, "name"), ns_of(s[i].e, "ts"));
		put_num(&b, item(s[i].e, "pid")->valuedouble);
		put_num(&b, item(s[i].e, "tid")->valuedouble);
		put(&b, "|%" PRId64, ns_of(f[i].e, "ts"));
		put_num(&b, item(f[i].e, "pid")->valuedouble);
		put_num(&b, item(f[i].e, "tid")->valuedouble);
		lines_add(l, &b);
	}
}

/* One event's line (flow ends are kept aside for pairing). */
static void ex_line(struct jbuf *b, const cJSON *e, const char *ph)
{
	if (strcmp(ph, "X") == 0 || strcmp(ph, "B") == 0) {
		put(b, "%s|%s|%s|%" PRId64, ph, text_of(e, "name"), text_of(e, "cat"), ns_of(e, "ts"));
		if (*ph == 'X')
			put(b, "|%" PRId64, ns_of(e, "dur"));
		put_num(b, item(e, "pid")->valuedouble);
		put_num(b, item(e, "tid")->valuedouble);
		ex_args(b, e);
	} else if (strcmp(ph, "b") == 0 || strcmp(ph, "e") == 0) {
		put(b, "%s|%s|%s|%" PRId64 "|%.0f|%.0f", ph, text_of(e, "name"), text_of(e, "cat"), ns_of(e, "ts"),
		    item(e, "pid")->valuedouble, item(e, "id")->valuedouble);
		if (*ph == 'b')
			ex_args(b, e);
	} else if (strcmp(ph, "C") == 0) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");

		put(b, "C|%s|%" PRId64, text_of(e, "name"), ns_of(e, "ts"));
		put_num(b, item(e, "pid")->valuedouble);
		put_num(b, id ? id->valuedouble : 0);
		ex_args(b, e);
	} else if (strcmp(ph, "M") == 0) {
		put(b, "M|%s", text_of(e, "name"));
		put_num(b, item(e, "pid")->valuedouble);
		put_num(b, item(e, "tid")->valuedouble);
		ex_args(b, e);
	} else if (strcmp(ph, "i") == 0) {
		put(b, "i|%s|%s|%s|%" PRId64, text_of(e, "name"), text_of(e, "cat"), text_of(e, "s"), ns_of(e, "ts"));
		put_num(b, item(e, "pid")->valuedouble);
		put_num(b, item(e, "tid")->valuedouble);
	} else {
		fail_msg("unexpected ph %s", ph);
	}
}

static void ex_lines(const cJSON *root, struct lines *l)
{
	const cJSON *evs = item(root, "traceEvents"), *e;
	size_t n = (size_t)cJSON_GetArraySize(evs), ns = 0, nf = 0;
	struct flow_end *s = calloc(n + 1, sizeof(*s)), *f = calloc(n + 1, sizeof(*f));
	struct jbuf b;

	assert_true(cJSON_IsArray(evs));
	cJSON_ArrayForEach(e, evs) {
		const char *ph = text_of(e, "ph");

		if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
			struct flow_end *x = *ph == 's' ? &s[ns++] : &f[nf++];

			x->id = item(e, "id")->valuedouble;
			x->e = e;
			continue;
		}
		jb_init(&b);
		ex_line(&b, e, ph);
		lines_add(l, &b);
	}
	ex_flows(l, s, ns, f, nf);
	free(s);
	free(f);
}

/* The two sides, sorted, line for line. */
static void expect_same(struct lines *want, struct lines *got)
{
	size_t i;

	qsort(want->v, want->n, sizeof(char *), str_cmp);
	qsort(got->v, got->n, sizeof(char *), str_cmp);
	for (i = 0; i < want->n && i < got->n; i++)
		if (strcmp(want->v[i], got->v[i]) != 0)
			fail_msg("export line %zu differs:\n  database: %s\n  export:   %s", i, want->v[i], got->v[i]);
	if (want->n != got->n)
		fail_msg("the export has %zu events where the database has %zu (first extra: %s)", got->n, want->n,
			 want->n < got->n ? got->v[want->n] : want->v[got->n]);
}

/* Every event of the database and nothing else, read in pieces of max
 * bytes; proc_name names the unnamed process. */
static void check_export(const char *proc_name, size_t max)
{
	struct lines want = { 0 }, got = { 0 };
	size_t len;
	char *text = export_text(proc_name, max, &len);
	cJSON *root = cJSON_ParseWithLength(text, len);

	if (root == NULL)
		fail_msg("the export is not JSON near: %.200s", cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : text);
	assert_string_equal(text_of(root, "displayTimeUnit"), "ns");
	db_slices(&want);
	db_counters(&want);
	db_logs(&want);
	db_names(&want, proc_name);
	db_sched(&want);
	db_flows(&want);
	ex_lines(root, &got);
	assert_true(want.n > 1000);
	expect_same(&want, &got);
	cJSON_Delete(root);
	lines_free(&want);
	lines_free(&got);
	free(text);
}

static void test_export_matches_database(void **state)
{
	(void)state;
	check_export(NULL, 65536);
}

/* Small reads split events anywhere; the unnamed process takes the name. */
static void test_export_small_reads_and_process_name(void **state)
{
	(void)state;
	check_export("the-binary", 7);
}

/* The exact digits of 64-bit values, which doubles cannot tell apart. */
static void test_export_exact_values(void **state)
{
	size_t len;
	char *text = export_text(NULL, 65536, &len);
	static const char *const want[] = {
		"\"u64max\":18446744073709551615",
		"\"i64min\":-9223372036854775808",
		"\"koid\":9223372036854775813",
		"\"u32max\":4294967295",
		"\"i32min\":-2147483648",
		"\"tid\":18446744073709551614",
		"\"ptr\":\"0xfedcba9876543210\"",
		"\"yes\":true",
		"\"no\":false",
		"\"nothing\":null",
		"\"tenth\":0.1",
		"\"text\":\"q\\\"b\\\\s\\u0001\\u001f\\u0009tab\\u000anl\"",
		"\"name\":\"edges \\\"quoted\\\"\"",
		"\"ts\":5.000,",
		"\"dur\":2.001,",
		"\"ph\":\"B\",\"ts\":8.000,",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (strstr(text, want[i]) == NULL)
			fail_msg("the export lacks %s", want[i]);
	free(text);
}

/* The pid of the "CPU scheduling" process of a trace of one process past
 * 2^63: one past it, compared as the unsigned koid it is (docs/API.md,
 * Export: "one past the greatest pid of the trace"). */
static char *export_of(const struct fxtw *w)
{
	struct qry_error err = { 0 };
	struct qry_export *e;
	struct tdb t;
	struct jbuf out;
	char buf[4096];
	long n;

	tdb_ingest(&t, w);
	assert_int_equal(t.rc, INGEST_OK);
	if ((e = qry_export_open(t.path, NULL, &err)) == NULL)
		fail_msg("qry_export_open: %s", err.msg);
	jb_init(&out);
	while ((n = qry_export_read(e, buf, sizeof(buf))) > 0)
		jb_raw(&out, buf, (size_t)n);
	assert_int_equal(n, 0);
	qry_export_close(e);
	tdb_close(&t);
	return jb_take(&out, NULL);
}

static void test_export_cpu_pid_past_2_63(void **state)
{
	static const uint64_t pids[] = { (UINT64_C(1) << 63) + 10, UINT64_MAX };
	static const char *const want[] = {
		"\"pid\":9223372036854775819,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"CPU scheduling\"}",
		"\"pid\":6,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"CPU scheduling\"}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct fxtw w;
		char *text;

		fxtw_init(&w, 0);
		fxtw_magic(&w);
		fxtw_thread(&w, 1, pids[i], 20);
		fxtw_thread(&w, 2, 5, 21); /* a small pid too: the greatest is past 2^63 */
		fxtw_complete(&w, FXTW_TIDX(1), FXTW_INL("c"), FXTW_INL("work"), 100, 200, NULL, 0);
		fxtw_complete(&w, FXTW_TIDX(2), FXTW_INL("c"), FXTW_INL("other"), 100, 200, NULL, 0);
		fxtw_context_switch(&w, 0, 2, 100, 0, 20, NULL, 0);
		text = export_of(&w);
		if (strstr(text, want[i]) == NULL)
			fail_msg("the export lacks %s in %s", want[i], text);
		free(text);
		fxtw_fini(&w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_matches_database),
		cmocka_unit_test(test_export_small_reads_and_process_name),
		cmocka_unit_test(test_export_exact_values),
		cmocka_unit_test(test_export_cpu_pid_past_2_63),
	};

	return cmocka_run_group_tests_name("export", tests, setup, teardown);
}
