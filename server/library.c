/*
 * The library's own endpoints beyond a trace's list: the filters every
 * one of them takes (docs/API.md, Library), trends of a slice name across
 * traces (catalog/trends.c), and one SQL query over many traces.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server_internal.h"

static const char *arg(const struct call *x, const char *key)
{
	return MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- filters ---------------------------------------------------------------- */

static int parse_time(const char *s, int64_t *out)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	if ((end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) == NULL || *end != '\0') {
		memset(&tm, 0, sizeof(tm));
		if ((end = strptime(s, "%Y-%m-%d", &tm)) == NULL || *end != '\0')
			return -1;
	}
	*out = (int64_t)timegm(&tm);
	return 0;
}

struct label_args {
	struct cat_filter *f;
	char err[256];
};

static enum MHD_Result filter_label(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct label_args *a = cls;
	struct cat_filter *f = a->f;

	(void)kind;
	if (strcmp(k, "label") != 0 || a->err[0])
		return MHD_YES;
	if (f->nlabels == CAT_MAX_FILTER_LABELS) {
		snprintf(a->err, sizeof(a->err), "at most %d 'label' filters", CAT_MAX_FILTER_LABELS);
		return MHD_NO;
	}
	if (cat_label_parse(v ? v : "", 1, &f->labels[f->nlabels], a->err, sizeof(a->err)) != 0)
		return MHD_NO;
	f->bare[f->nlabels] = v == NULL || strchr(v, '=') == NULL;
	f->nlabels++;
	return MHD_YES;
}

int srv_library_filter(struct call *x, struct cat_filter *f)
{
	struct label_args la = { f, "" };
	const char *s;
	int64_t v;

	f->q = arg(x, "q");
	f->format = arg(x, "format");
	f->status = -1;
	f->pinned = -1;
	f->after = INT64_MIN;
	f->before = INT64_MAX;
	f->max_size = UINT64_MAX;
	MHD_get_connection_values(x->c, MHD_GET_ARGUMENT_KIND, filter_label, &la);
	if (la.err[0]) {
		srv_send_error(x->c, x->r, 400, "bad_label", la.err);
		return -1;
	}
	if ((s = arg(x, "status")) != NULL) {
		for (f->status = 0; f->status < TS_NSTATUS && strcmp(s, cat_status_name(f->status)) != 0; f->status++)
			;
		if (f->status == TS_NSTATUS) {
			srv_send_error(x->c, x->r, 400, "bad_parameter",
					     "'status' must be queued, ingesting, ready, failed or live");
			return -1;
		}
	}
	if (f->format && strcmp(f->format, "fxt") != 0 && strcmp(f->format, "xray-fdr") != 0) {
		srv_send_error(x->c, x->r, 400, "bad_parameter", "'format' must be fxt or xray-fdr");
		return -1;
	}
	if ((s = arg(x, "pinned")) != NULL) {
		if (strcmp(s, "true") != 0 && strcmp(s, "false") != 0) {
			srv_send_error(x->c, x->r, 400, "bad_parameter", "'pinned' must be true or false");
			return -1;
		}
		f->pinned = strcmp(s, "true") == 0;
	}
	if (((s = arg(x, "uploaded_after")) != NULL && parse_time(s, &f->after) != 0) ||
	    ((s = arg(x, "uploaded_before")) != NULL && parse_time(s, &f->before) != 0)) {
		srv_send_error(x->c, x->r, 400, "bad_parameter",
				     "'uploaded_after' and 'uploaded_before' are dates: YYYY-MM-DD or "
				     "YYYY-MM-DDTHH:MM:SSZ (UTC)");
		return -1;
	}
	if ((s = arg(x, "uploaded_before")) != NULL && strchr(s, 'T') == NULL)
		f->before += 86399; /* a date covers its whole day */
	if (srv_param_i64(x->c, x->r, "min_size", 0, 0, INT64_MAX, &v, 0) != 0)
		return -1;
	f->min_size = (uint64_t)v;
	if (srv_param_i64(x->c, x->r, "max_size", INT64_MAX, 0, INT64_MAX, &v, 0) != 0)
		return -1;
	f->max_size = arg(x, "max_size") ? (uint64_t)v : UINT64_MAX;
	f->sort = CAT_SORT_CREATED;
	f->limit = CAT_LIST_MAX;
	return 0;
}

/* ---- trends ----------------------------------------------------------------- */

/* GET /api/trends?name=NAME[&order=created|label:KEY][&stat=p50|p95|max|avg][&threshold=F] and the filters */
enum MHD_Result srv_h_trends(struct call *x)
{
	struct cat_trend_opts o = { 0 };
	struct cat_filter *f = calloc(1, sizeof(*f));
	const char *s;
	char err[256], *end;
	enum MHD_Result ret = MHD_YES;
	struct jbuf b;
	int rc;

	if (f == NULL)
		return srv_send_error(x->c, x->r, 500, "out_of_memory", "the server ran out of memory");
	if (srv_library_filter(x, f) != 0)
		goto out;
	if ((o.name = arg(x, "name")) == NULL || o.name[0] == '\0') {
		ret = srv_send_error(x->c, x->r, 400, "missing_parameter", "the query parameter 'name' is required");
		goto out;
	}
	if ((s = arg(x, "order")) != NULL && strcmp(s, "created") != 0) {
		struct cat_label l;

		if (strncmp(s, "label:", 6) != 0 || cat_label_parse(s + 6, 1, &l, err, sizeof(err)) != 0 ||
		    strchr(s + 6, '=') != NULL) {
			ret = srv_send_error(x->c, x->r, 400, "bad_parameter",
					     "'order' is created or label:KEY (a label's key, e.g. label:build)");
			goto out;
		}
		o.order_label = s + 6;
	}
	if ((s = arg(x, "stat")) != NULL && cat_trend_stat_parse(s, &o.stat) != 0) {
		ret = srv_send_error(x->c, x->r, 400, "bad_parameter", "'stat' is p50, p95, max or avg");
		goto out;
	}
	o.threshold = 0.1;
	if ((s = arg(x, "threshold")) != NULL) {
		o.threshold = strtod(s, &end);
		if (end == s || *end != '\0' || !(o.threshold >= 0 && o.threshold <= 1000)) {
			ret = srv_send_error(x->c, x->r, 400, "bad_parameter",
					     "'threshold' is a share from 0 to 1000 (0.1: 10% above the median)");
			goto out;
		}
	}
	jb_init(&b);
	if ((rc = cat_trends_json(x->s->cat, f, &o, &b, err, sizeof(err))) != 0) {
		jb_fini(&b);
		ret = rc == CAT_EUNAVAILABLE ? srv_send_error(x->c, x->r, 503, "catalog_unavailable", err)
					     : srv_send_error(x->c, x->r, 500, "storage_failed", err);
		goto out;
	}
	ret = srv_send_json(x->c, x->r, 200, &b);
out:
	free(f);
	return ret;
}

/* ---- one query over many traces --------------------------------------------- */

enum {
	MANY_ROWS = 1000,       /* rows a trace gives by default ... */
	MANY_MAX_ROWS = 10000,  /* ... and at most */
	MANY_MS = 5000,         /* a trace's time bound by default ... */
	MANY_MAX_MS = 60000,    /* ... and at most */
	MANY_MAX_WORKERS = 8,
};

/*
 * POST /api/query: the body's statement on every ready trace the
 * filters select, on a worker per core; the reply streams a trace's
 * result as soon as it and every trace before it (in the library's order)
 * are done. A trace's error is its own element; the others go on.
 */
struct many {
	struct server *s;
	char *sql;
	size_t sql_len;
	int64_t max_rows, max_ms;
	struct cat_match *t;
	size_t n;
	char **out;              /* each trace's JSON element, once done */
	size_t *out_len;
	size_t next;             /* the next trace a worker takes */
	size_t sent;             /* traces whose element the reply has sent */
	size_t pos;              /* bytes of out[sent] sent */
	int stage;               /* 0: the opening; 1: elements; 2: the end; 3: done */
	int stop;                /* the client went away: workers stop taking traces */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t workers[MANY_MAX_WORKERS];
	unsigned nworkers;
	char tail[64];
	size_t tail_len;
};

/* Runs the statement on trace i; its element (without a separator). */
static char *many_one(struct many *m, size_t i, size_t *len)
{
	const struct cat_match *t = &m->t[i];
	struct qry_error e = { 0 };
	struct jbuf b, r;
	sqlite3 *db;
	int rc = QRY_EDB;

	jb_init(&r);
	if ((db = srv_trace_db_open(m->s, t->id)) == NULL) {
		snprintf(e.msg, sizeof(e.msg), "the trace's database cannot be opened");
	} else {
		int began = qry_read_begin(db);

		rc = qry_sql_limited(db, m->sql, m->sql_len, m->max_rows, m->max_ms, &r, &e);
		qry_read_end(db, began);
		sqlite3_close(db);
	}
	jb_init(&b);
	jb_obj(&b);
	JB_KEY(&b, "id");
	jb_i64(&b, t->id);
	JB_KEY(&b, "name");
	jb_str(&b, t->name);
	JB_KEY(&b, "labels");
	jb_json(&b, t->labels_json, strlen(t->labels_json));
	if (rc == QRY_OK && !r.oom) {
		/* the result's members ("columns", "rows", "truncated") join the trace's */
		jb_raw(&b, ",", 1);
		jb_raw(&b, r.p + 1, r.len - 2);
	} else {
		JB_KEY(&b, "error");
		jb_obj(&b);
		JB_KEY(&b, "code");
		jb_str(&b, rc == QRY_ELIMIT ? "query_limit" : rc == QRY_EINVAL ? "bad_query" : "query_failed");
		JB_KEY(&b, "message");
		jb_str(&b, r.oom ? "out of memory" : e.msg);
		jb_obj_end(&b);
	}
	jb_obj_end(&b);
	jb_fini(&r);
	if (b.oom) {
		jb_fini(&b);
		*len = 0;
		return NULL;
	}
	return jb_take(&b, len);
}

static void *many_worker(void *arg)
{
	struct many *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stop && m->next < m->n) {
		size_t i = m->next++, len;
		char *el;

		pthread_mutex_unlock(&m->mu);
		el = many_one(m, i, &len);
		pthread_mutex_lock(&m->mu);
		m->out[i] = el ? el : strdup("{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\"}}");
		m->out_len[i] = m->out[i] ? strlen(m->out[i]) : 0;
		pthread_cond_broadcast(&m->cv);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

static void many_free(void *cls)
{
	struct many *m = cls;
	unsigned i;
	size_t k;

	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	pthread_mutex_unlock(&m->mu);
	for (i = 0; i < m->nworkers; i++)
		pthread_join(m->workers[i], NULL);
	for (k = 0; k < m->n; k++)
		free(m->out[k]);
	free(m->out);
	free(m->out_len);
	cat_matching_free(m->t, m->n);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	free(m->sql);
	free(m);
}

static size_t many_copy(char *buf, size_t max, const char *s, size_t len, size_t *pos)
{
	size_t k = len - *pos < max ? len - *pos : max;

	memcpy(buf, s + *pos, k);
	*pos += k;
	return k;
}

static ssize_t many_read(void *cls, uint64_t off, char *buf, size_t max)
{
	static const char open[] = "{\"traces\":[";
	struct many *m = cls;
	size_t k = 0;

	(void)off;
	if (m->stage == 0) {
		m->stage = 1;
		memcpy(buf, open, sizeof(open) - 1);
		return (ssize_t)(sizeof(open) - 1);
	}
	if (m->stage == 1) {
		pthread_mutex_lock(&m->mu);
		while (m->sent < m->n && m->out[m->sent] == NULL)
			pthread_cond_wait(&m->cv, &m->mu);
		pthread_mutex_unlock(&m->mu);
		if (m->sent < m->n) {
			if (m->pos == 0 && m->sent > 0) {
				buf[k++] = ',';
				max--;
			}
			k += many_copy(buf + k, max, m->out[m->sent], m->out_len[m->sent], &m->pos);
			if (m->pos == m->out_len[m->sent]) {
				free(m->out[m->sent]);
				m->out[m->sent] = strdup(""); /* done and sent: its memory goes */
				m->sent++;
				m->pos = 0;
			}
			return (ssize_t)k;
		}
		m->stage = 2;
		m->tail_len = (size_t)snprintf(m->tail, sizeof(m->tail), "],\"count\":%zu}", m->n);
		m->pos = 0;
	}
	if (m->stage == 2) {
		k = many_copy(buf, max, m->tail, m->tail_len, &m->pos);
		if (m->pos == m->tail_len)
			m->stage = 3;
		return (ssize_t)k;
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

/* POST /api/query[?limit=N][&timeout_ms=MS] and the library's filters; the body is the statement */
enum MHD_Result srv_h_query_many(struct call *x)
{
	struct cat_filter *f = calloc(1, sizeof(*f));
	struct many *m = calloc(1, sizeof(*m));
	struct MHD_Response *resp;
	enum MHD_Result ret = MHD_YES;
	char err[256];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int rc;

	if (f == NULL || m == NULL) {
		free(f);
		free(m);
		return srv_send_error(x->c, x->r, 500, "out_of_memory", "the server ran out of memory");
	}
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	m->s = x->s;
	if (srv_library_filter(x, f) != 0 ||
	    srv_param_i64(x->c, x->r, "limit", MANY_ROWS, 1, MANY_MAX_ROWS, &m->max_rows, 0) != 0 ||
	    srv_param_i64(x->c, x->r, "timeout_ms", MANY_MS, 1, MANY_MAX_MS, &m->max_ms, 0) != 0)
		goto out;
	if (x->r->body_too_big) {
		ret = srv_send_error(x->c, x->r, 413, "body_too_large", "the SQL statement is longer than 64 KiB");
		goto out;
	}
	if (x->r->body == NULL || x->r->body_len == 0) {
		ret = srv_send_error(x->c, x->r, 400, "missing_body", "send the SQL statement as the body");
		goto out;
	}
	if ((m->sql = malloc(x->r->body_len + 1)) == NULL) {
		ret = srv_send_error(x->c, x->r, 500, "out_of_memory", "the server ran out of memory");
		goto out;
	}
	memcpy(m->sql, x->r->body, x->r->body_len);
	m->sql[m->sql_len = x->r->body_len] = '\0';
	if ((rc = cat_matching(x->s->cat, f, &m->t, &m->n, err, sizeof(err))) != 0) {
		ret = rc == CAT_EUNAVAILABLE ? srv_send_error(x->c, x->r, 503, "catalog_unavailable", err)
					     : srv_send_error(x->c, x->r, 500, "storage_failed", err);
		goto out;
	}
	if ((m->out = calloc(m->n + 1, sizeof(*m->out))) == NULL ||
	    (m->out_len = calloc(m->n + 1, sizeof(*m->out_len))) == NULL) {
		ret = srv_send_error(x->c, x->r, 500, "out_of_memory", "the server ran out of memory");
		goto out;
	}
	/* a worker per core, none more than traces */
	for (m->nworkers = 0; m->nworkers < (unsigned)(cores > 0 ? cores : 1) && m->nworkers < MANY_MAX_WORKERS &&
			      m->nworkers < m->n; m->nworkers++)
		if (pthread_create(&m->workers[m->nworkers], NULL, many_worker, m) != 0)
			break;
	if (m->nworkers == 0 && m->n > 0) {
		ret = srv_send_error(x->c, x->r, 500, "out_of_memory", "no worker thread could start");
		goto out;
	}
	free(f);
	if ((resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, many_read, m, many_free)) == NULL) {
		many_free(m);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(x->c, 200, resp);
	MHD_destroy_response(resp);
	x->r->status = 200;
	return ret;
out:
	free(f);
	many_free(m);
	return ret;
}
