/*
 * Export as Chrome Trace Event JSON, streamed.
 *
 * The reply is produced a batch of rows at a time as the HTTP layer asks
 * for bytes, so exporting a trace of any size takes constant memory. Thread
 * slices become complete ("X") events, async slices begin/end ("b"/"e")
 * pairs, counters "C" events, flows "s"/"f" pairs bound to their slices,
 * logs instants, and process and thread names metadata ("M") events. CPU
 * scheduling has no event of its own in the format: each CPU becomes a
 * thread ("CPU n") of a process of its own ("CPU scheduling", a pid no
 * other event uses), and each run on it a complete event named after the
 * thread that ran, as Perfetto draws CPU tracks. Times are microseconds
 * with nanosecond decimals, as the format wants.
 * Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"

enum { EX_HEAD, EX_PROCS, EX_THREADS, EX_CPUS, EX_SLICES, EX_COUNTERS, EX_FLOWS, EX_LOGS, EX_SCHED, EX_TAIL, EX_DONE };

static const char *const ex_sql[] = {
	/* ?1: the name of processes the trace leaves unnamed (XRay: its binary) */
	[EX_PROCS] = "SELECT pid, coalesce(name, ?1) FROM processes WHERE coalesce(name, ?1) IS NOT NULL",
	[EX_THREADS] = "SELECT pid, tid, name FROM threads WHERE name IS NOT NULL",
	[EX_SLICES] = "SELECT s.id, s.ts, s.dur, n.str, c.str, t.kind, t.pid, th.tid, s.arg_set_id FROM slices s "
		      "JOIN tracks t ON t.id = s.track_id LEFT JOIN threads th ON th.id = t.thread_id "
		      "JOIN strings n ON n.id = s.name_id JOIN strings c ON c.id = s.category_id",
	[EX_COUNTERS] = "SELECT c.ts, c.value, t.pid, n.str, s.str, t.counter_id FROM counters c "
			"JOIN tracks t ON t.id = c.track_id JOIN strings n ON n.id = t.name_id "
			"JOIN strings s ON s.id = t.series_id",
	[EX_FLOWS] = "SELECT f.id, f.from_ts, f.to_ts, ta.pid, tha.tid, tb.pid, thb.tid, c.str, n.str FROM flows f "
		     "JOIN slices a ON a.id = f.from_slice_id JOIN tracks ta ON ta.id = a.track_id "
		     "LEFT JOIN threads tha ON tha.id = ta.thread_id JOIN slices b ON b.id = f.to_slice_id "
		     "JOIN tracks tb ON tb.id = b.track_id LEFT JOIN threads thb ON thb.id = tb.thread_id "
		     "JOIN strings c ON c.id = f.category_id JOIN strings n ON n.id = f.name_id",
	[EX_LOGS] = "SELECT l.ts, l.pid, l.tid, m.str FROM logs l JOIN strings m ON m.id = l.message_id",
	[EX_CPUS] = "SELECT DISTINCT cpu FROM sched ORDER BY cpu",
	[EX_SCHED] = "SELECT s.ts, s.dur, s.cpu, th.name, s.pid, s.tid, s.priority, s.end_state FROM sched s "
		     "LEFT JOIN threads th ON th.id = s.thread_id ORDER BY s.cpu, s.ts",
};

struct qry_export {
	sqlite3 *db;
	struct qcur st;     /* the current phase's rows; closed (st.st NULL) between phases */
	struct qcur args;   /* arguments of a slice; its error fails the export */
	int phase;
	int first;          /* no event written yet: no comma */
	int cpus;           /* CPU threads named so far */
	int64_t cpu_pid;    /* the pid of the "CPU scheduling" process: no other event's */
	char *proc_name;    /* names unnamed processes; NULL: none */
	struct jbuf out;    /* text not yet handed out */
	size_t off;         /* bytes of out already handed out */
};

static void ex_us(struct jbuf *b, int64_t ns)
{
	char t[40];
	int n;

	if (ns < 0)
		n = snprintf(t, sizeof(t), "-%" PRId64 ".%03d", -(ns / 1000), (int)(-(ns % 1000)));
	else
		n = snprintf(t, sizeof(t), "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
	jb_raw(b, t, (size_t)n);
}

/* Starts an event object with its common members. */
static void ex_event(struct qry_export *e, const char *ph, int64_t ts, uint64_t pid, uint64_t tid)
{
	struct jbuf *b = &e->out;

	if (!e->first)
		jb_raw(b, ",\n", 2);
	e->first = 0;
	b->need_comma = 0;
	jb_obj(b);
	jb_key(b, "ph");
	jb_str(b, ph);
	jb_key(b, "ts");
	b->need_comma = 0;
	ex_us(b, ts);
	b->need_comma = 1;
	jb_key(b, "pid");
	jb_u64(b, pid);
	jb_key(b, "tid");
	jb_u64(b, tid);
}

/* "args" of the slice's argument set; a read error is kept in e->args. */
static void ex_args(struct qry_export *e, int64_t set)
{
	struct jbuf *b = &e->out;

	jb_key(b, "args");
	jb_obj(b);
	if (set > 0) {
		qcur_bind(&e->args, 1, set);
		while (qcur_step(&e->args)) {
			int type = (int)qcur_int(&e->args, 2);

			jb_key(b, qcur_text(&e->args, 0));
			if (type == 2 || type == 4 || type == 8) /* u32, u64, koid: stored with their bits */
				jb_u64(b, (uint64_t)qcur_int(&e->args, 1));
			else if (type == 9)
				jb_bool(b, (int)qcur_int(&e->args, 1));
			else
				qcur_put(&e->args, b, 1);
		}
		qcur_reset(&e->args);
	}
	jb_obj_end(b);
}

static void ex_meta(struct qry_export *e, const char *what, uint64_t pid, uint64_t tid, struct qcur *c, int col)
{
	ex_event(e, "M", 0, pid, tid);
	jb_key(&e->out, "name");
	jb_str(&e->out, what);
	jb_key(&e->out, "args");
	jb_obj(&e->out);
	jb_key(&e->out, "name");
	qcur_put(c, &e->out, col);
	jb_obj_end(&e->out);
	jb_obj_end(&e->out);
}

static void ex_slice(struct qry_export *e, struct qcur *c)
{
	int64_t id = qcur_int(c, 0), ts = qcur_int(c, 1), dur = qcur_int(c, 2);
	int async = strcmp(qcur_text(c, 5), "async") == 0;
	uint64_t pid = (uint64_t)qcur_int(c, 6), tid = (uint64_t)qcur_int(c, 7);
	struct jbuf *b = &e->out;
	int pass;

	for (pass = 0; pass < (async && dur >= 0 ? 2 : 1); pass++) {
		ex_event(e, async ? (pass ? "e" : "b") : (dur < 0 ? "B" : "X"), pass ? ts + dur : ts, pid, tid);
		jb_key(b, "name");
		qcur_put(c, b, 3);
		jb_key(b, "cat");
		qcur_put(c, b, 4);
		if (async) {
			jb_key(b, "id");
			jb_i64(b, id);
		} else if (dur >= 0) {
			jb_key(b, "dur");
			b->need_comma = 0;
			ex_us(b, dur);
			b->need_comma = 1;
		}
		if (pass == 0)
			ex_args(e, qcur_int(c, 8));
		jb_obj_end(b);
	}
}

static void ex_counter(struct qry_export *e, struct qcur *c)
{
	struct jbuf *b = &e->out;
	uint64_t u;

	ex_event(e, "C", qcur_int(c, 0), (uint64_t)qcur_int(c, 2), 0);
	jb_key(b, "name");
	qcur_put(c, b, 3);
	if (qcur_int(c, 5) != 0) {
		jb_key(b, "id");
		jb_u64(b, (uint64_t)qcur_int(c, 5));
	}
	jb_key(b, "args");
	jb_obj(b);
	jb_key(b, qcur_text(c, 4));
	if (tracedb_counter_u64(c->st, 1, &u))
		jb_u64(b, u);
	else
		qcur_put(c, b, 1);
	jb_obj_end(b);
	jb_obj_end(b);
}

static void ex_flow(struct qry_export *e, struct qcur *c)
{
	struct jbuf *b = &e->out;
	int end;

	for (end = 0; end < 2; end++) {
		ex_event(e, end ? "f" : "s", qcur_int(c, 1 + end), (uint64_t)qcur_int(c, 3 + 2 * end),
			 (uint64_t)qcur_int(c, 4 + 2 * end));
		jb_key(b, "id");
		jb_i64(b, qcur_int(c, 0));
		jb_key(b, "cat");
		qcur_put(c, b, 7);
		jb_key(b, "name");
		qcur_put(c, b, 8);
		if (end) {
			jb_key(b, "bp");
			jb_str(b, "e");
		}
		jb_obj_end(b);
	}
}

static void ex_log(struct qry_export *e, struct qcur *c)
{
	ex_event(e, "i", qcur_int(c, 0), (uint64_t)qcur_int(c, 1), (uint64_t)qcur_int(c, 2));
	jb_key(&e->out, "name");
	qcur_put(c, &e->out, 3);
	jb_key(&e->out, "cat");
	jb_str(&e->out, "log");
	jb_key(&e->out, "s");
	jb_str(&e->out, "t");
	jb_obj_end(&e->out);
}

/* A CPU: its thread of the "CPU scheduling" process (named with the first). */
static void ex_cpu(struct qry_export *e, struct qcur *c)
{
	char name[32];

	if (e->cpus++ == 0) {
		ex_event(e, "M", 0, (uint64_t)e->cpu_pid, 0);
		jb_key(&e->out, "name");
		jb_str(&e->out, "process_name");
		jb_key(&e->out, "args");
		jb_obj(&e->out);
		jb_key(&e->out, "name");
		jb_str(&e->out, "CPU scheduling");
		jb_obj_end(&e->out);
		jb_obj_end(&e->out);
	}
	snprintf(name, sizeof(name), "CPU %lld", (long long)qcur_int(c, 0));
	ex_event(e, "M", 0, (uint64_t)e->cpu_pid, (uint64_t)qcur_int(c, 0));
	jb_key(&e->out, "name");
	jb_str(&e->out, "thread_name");
	jb_key(&e->out, "args");
	jb_obj(&e->out);
	jb_key(&e->out, "name");
	jb_str(&e->out, name);
	jb_obj_end(&e->out);
	jb_obj_end(&e->out);
}

/* A run on a CPU: "X" named after its thread ("B" when still running at the
 * end), with the thread's pid and tid, priority and end state as args. */
static void ex_sched(struct qry_export *e, struct qcur *c)
{
	int64_t dur = qcur_int(c, 1);
	struct jbuf *b = &e->out;
	char tname[40];

	ex_event(e, dur < 0 ? "B" : "X", qcur_int(c, 0), (uint64_t)e->cpu_pid, (uint64_t)qcur_int(c, 2));
	jb_key(b, "name");
	if (qcur_is_null(c, 3)) {
		snprintf(tname, sizeof(tname), "tid %" PRIu64, (uint64_t)qcur_int(c, 5));
		jb_str(b, tname);
	} else {
		qcur_put(c, b, 3);
	}
	jb_key(b, "cat");
	jb_str(b, "sched");
	if (dur >= 0) {
		jb_key(b, "dur");
		b->need_comma = 0;
		ex_us(b, dur);
		b->need_comma = 1;
	}
	jb_key(b, "args");
	jb_obj(b);
	jb_key(b, "pid");
	jb_u64(b, (uint64_t)qcur_int(c, 4));
	jb_key(b, "tid");
	jb_u64(b, (uint64_t)qcur_int(c, 5));
	jb_key(b, "priority");
	jb_i64(b, qcur_int(c, 6));
	jb_key(b, "end_state");
	qcur_put(c, b, 7);
	jb_obj_end(b);
	jb_obj_end(b);
}

static void ex_row(struct qry_export *e, struct qcur *c)
{
	switch (e->phase) {
	case EX_CPUS:
		ex_cpu(e, c);
		break;
	case EX_SCHED:
		ex_sched(e, c);
		break;
	case EX_PROCS:
		ex_meta(e, "process_name", (uint64_t)qcur_int(c, 0), 0, c, 1);
		break;
	case EX_THREADS:
		ex_meta(e, "thread_name", (uint64_t)qcur_int(c, 0), (uint64_t)qcur_int(c, 1), c, 2);
		break;
	case EX_SLICES:
		ex_slice(e, c);
		break;
	case EX_COUNTERS:
		ex_counter(e, c);
		break;
	case EX_FLOWS:
		ex_flow(e, c);
		break;
	default:
		ex_log(e, c);
	}
}

/* Produces the next piece of text into e->out; -1 on a database error. */
static int ex_fill(struct qry_export *e)
{
	struct qry_error err; /* qry_export_read tells no more than -1 */
	int n = 0;

	if (e->phase == EX_HEAD) {
		jb_raw(&e->out, "{\"traceEvents\":[\n", 17);
		e->phase = EX_PROCS;
		return 0;
	}
	if (e->phase == EX_TAIL) {
		jb_raw(&e->out, "\n],\"displayTimeUnit\":\"ns\"}\n", 27);
		e->phase = EX_DONE;
		return 0;
	}
	if (e->st.st == NULL) {
		if (qcur_open(&e->st, e->db, ex_sql[e->phase], &err) != QRY_OK)
			return -1;
		if (e->phase == EX_PROCS)
			qcur_bind_text(&e->st, 1, e->proc_name);
	}
	while (n++ < 512 && qcur_step(&e->st))
		ex_row(e, &e->st);
	if (n > 512)
		return 0;
	if (qcur_close(&e->st, 0) != 0)
		return -1;
	e->phase++;
	return 0;
}

/* The pid of the "CPU scheduling" process: one past the greatest pid any
 * process, thread, track or run has, compared as the unsigned 64-bit koids
 * they are (stored with their bits: a pid past 2^63 reads negative); when
 * that is 2^64 - 1, one past the greatest pid below 2^63, which no event
 * has either. 0, or -1 on a database error. */
static int ex_cpu_pid(struct qry_export *e)
{
	struct qry_error err; /* qry_export_open tells its own */
	struct qcur c;
	int rc = qcur_open(&c, e->db,
			   "SELECT max(CASE WHEN p < 0 THEN p END), max(CASE WHEN p >= 0 THEN p END) FROM "
			   "(SELECT pid p FROM processes UNION ALL SELECT pid FROM threads UNION ALL "
			   "SELECT pid FROM tracks UNION ALL SELECT max(pid) FROM sched UNION ALL "
			   "SELECT min(pid) FROM sched)",
			   &err);

	if (rc == QRY_OK && qcur_step_required(&c)) { /* an aggregate: always a row */
		uint64_t high = (uint64_t)qcur_int(&c, 0); /* the greatest at or past 2^63 */
		int64_t low = qcur_int(&c, 1);              /* the greatest below 2^63 */

		if (!qcur_is_null(&c, 0) && high != UINT64_MAX)
			e->cpu_pid = (int64_t)(high + 1);
		else
			e->cpu_pid = qcur_is_null(&c, 1) ? 1 : (int64_t)((uint64_t)low + 1);
	}
	return qcur_close(&c, 0) == 0 && rc == QRY_OK ? 0 : -1;
}

struct qry_export *qry_export_open(const char *db_path, const char *process_name, struct qry_error *err)
{
	struct qry_export *e = calloc(1, sizeof(*e));
	struct qry_error scratch; /* the message below is the one told */
	const char *why = "";

	if (e == NULL || (process_name && (e->proc_name = strdup(process_name)) == NULL)) {
		free(e);
		err->code = QRY_ENOMEM;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return NULL;
	}
	e->first = 1;
	if ((e->db = tracedb_open_readonly(db_path, &why)) == NULL || ex_cpu_pid(e) != 0 ||
	    qcur_open(&e->args, e->db,
		      "SELECT k.str, CASE a.type WHEN 5 THEN a.real_value WHEN 6 THEN v.str "
		      "WHEN 7 THEN printf('0x%x', a.int_value) WHEN 10 THEN a.blob_value ELSE a.int_value END, "
		      "a.type FROM args a JOIN strings k ON k.id = a.key_id LEFT JOIN strings v ON v.id = a.string_id "
		      "WHERE a.id BETWEEN ?1 AND ?1 + 511 AND a.arg_set_id = ?1 ORDER BY a.id",
		      &scratch) != QRY_OK) {
		if (err->code == QRY_OK) {
			err->code = QRY_EDB;
			snprintf(err->msg, sizeof(err->msg), "%s", e->db ? "the trace database cannot be read" : why);
		}
		qry_export_close(e);
		return NULL;
	}
	return e;
}

long qry_export_read(struct qry_export *e, char *buf, size_t max)
{
	size_t n;

	while (e->off == e->out.len) {
		e->out.len = 0;
		e->off = 0;
		if (e->phase == EX_DONE)
			return 0;
		if (ex_fill(e) != 0 || e->out.oom || e->args.err)
			return -1;
	}
	n = e->out.len - e->off < max ? e->out.len - e->off : max;
	memcpy(buf, e->out.p + e->off, n);
	e->off += n;
	return (long)n;
}

void qry_export_close(struct qry_export *e)
{
	if (e == NULL)
		return;
	qcur_close(&e->st, 0);
	qcur_close(&e->args, 0);
	sqlite3_close(e->db);
	jb_fini(&e->out);
	free(e->proc_name);
	free(e);
}
