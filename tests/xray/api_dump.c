/*
 * api_dump: the server's view of an XRay log, in tests/xray/dump's format.
 *
 * Starts the real trace-server on a free loopback port with a fresh data
 * directory, uploads the log and the instrumented binary as a multipart
 * form (fields "file" and "binary") with ?wait=1, then reads every thread
 * track's slices back through GET /api/traces/{id}/tracks and /slices and
 * prints them as dump does, so that tests/xray/check.c can compare what a
 * user sees through the API with `llvm-xray convert`:
 *
 *   api_dump SERVER_BINARY LOG BINARY
 *
 * Output: "thread PID TID N" then N lines "TS DUR DEPTH NAME" per thread,
 * calls only (not the custom-event and typed-event instants), in (start,
 * longest first, outer first)
 * order. Times are read from the reply's text, exactly. Exits 0, or 1 with a
 * message when the server, the upload or a reply fails.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../server_util.h"

struct aslice {
	long long ts, dur;
	int depth;
	char name[128];
};

static int die(const char *what)
{
	fprintf(stderr, "api_dump: %s\n", what);
	return 1;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (p = malloc((size_t)len + 1)) == NULL || fread(p, 1, (size_t)len, f) != (size_t)len) {
		free(p);
		p = NULL;
	}
	if (f)
		fclose(f);
	*n = p ? (size_t)len : 0;
	return p;
}

/* Appends a multipart part holding a file. */
static int part(struct su_buf *b, const char *field, const char *path)
{
	char head[256];
	size_t n;
	char *data = slurp(path, &n);
	int rc;

	if (data == NULL)
		return -1;
	snprintf(head, sizeof(head),
		 "--XRAYBOUNDARY\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
		 "Content-Type: application/octet-stream\r\n\r\n",
		 field, field);
	rc = su_buf_add(b, head, strlen(head)) || su_buf_add(b, data, n) || su_buf_add(b, "\r\n", 2);
	free(data);
	return rc ? -1 : 0;
}

/* GETs path; returns the parsed reply and, when raw is not NULL, its text
 * (the caller frees it). */
static cJSON *get_json(int port, const char *path, char **raw)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	cJSON *j = NULL;

	if (su_request(port, &q, &r, 120000) == 0 && r.status == 200)
		j = cJSON_ParseWithLength(r.body, r.body_len);
	if (raw)
		*raw = j ? strdup(r.body) : NULL;
	su_resp_free(&r);
	return j;
}

/* The exact integer after the k-th occurrence of key (e.g. "\"ts\":") in
 * text: cJSON keeps numbers as doubles, too coarse for nanoseconds since
 * the epoch. Items of a reply come in array order, one key each. */
static long long nth_int(const char **cursor, const char *key)
{
	const char *p = strstr(*cursor, key);

	if (p == NULL)
		return 0;
	*cursor = p + strlen(key);
	return strtoll(*cursor, NULL, 10);
}

static int slice_cmp(const void *a, const void *b)
{
	const struct aslice *x = a, *y = b;
	long long xe = x->dur < 0 ? INT64_MAX : x->ts + x->dur, ye = y->dur < 0 ? INT64_MAX : y->ts + y->dur;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (xe != ye)
		return xe > ye ? -1 : 1;
	return x->depth - y->depth;
}

/* Prints one thread's slices, fetched in one request. */
static int print_thread(int port, long long id, const cJSON *proc, const cJSON *th)
{
	char path[256];
	const cJSON *s;
	struct aslice *v;
	cJSON *j, *list;
	char *raw = NULL;
	const char *cur;
	int n, i = 0;

	snprintf(path, sizeof(path), "/api/traces/%lld/slices?track=%d&limit=1000000", id,
		 cJSON_GetObjectItem(th, "track_id")->valueint);
	if ((j = get_json(port, path, &raw)) == NULL || (list = cJSON_GetObjectItem(j, "slices")) == NULL)
		return die("GET slices failed");
	cur = raw;
	n = cJSON_GetArraySize(list);
	if ((v = calloc((size_t)n + 1, sizeof(*v))) == NULL)
		return die("out of memory");
	cJSON_ArrayForEach(s, list) {
		const char *name = cJSON_GetObjectItem(s, "name")->valuestring;
		long long ts = nth_int(&cur, "\"ts\":"), dur = nth_int(&cur, "\"dur\":");

		if (strcmp(name, "custom-event") == 0 || strcmp(name, "typed-event") == 0)
			continue; /* instants: dump lists calls only */
		v[i].ts = ts;
		v[i].dur = dur;
		v[i].depth = cJSON_GetObjectItem(s, "depth")->valueint;
		snprintf(v[i].name, sizeof(v[i].name), "%s", cJSON_GetObjectItem(s, "name")->valuestring);
		i++;
	}
	n = i;
	qsort(v, (size_t)n, sizeof(*v), slice_cmp);
	printf("thread %.0f %.0f %d\n", cJSON_GetObjectItem(proc, "pid")->valuedouble,
	       cJSON_GetObjectItem(th, "tid")->valuedouble, n);
	for (i = 0; i < n; i++)
		printf("%lld %lld %d %s\n", v[i].ts, v[i].dur, v[i].depth, v[i].name);
	free(v);
	free(raw);
	cJSON_Delete(j);
	return 0;
}

static int print_tracks(int port, long long id)
{
	char path[128];
	const cJSON *proc, *th;
	cJSON *j;
	int rc = 0;

	snprintf(path, sizeof(path), "/api/traces/%lld/tracks", id);
	if ((j = get_json(port, path, NULL)) == NULL)
		return die("GET tracks failed");
	cJSON_ArrayForEach(proc, cJSON_GetObjectItem(j, "processes"))
		cJSON_ArrayForEach(th, cJSON_GetObjectItem(proc, "threads"))
			if (rc == 0 && cJSON_IsNumber(cJSON_GetObjectItem(th, "track_id")))
				rc = print_thread(port, id, proc, th);
	cJSON_Delete(j);
	return rc;
}

static long long upload(int port, const char *log, const char *binary)
{
	struct su_buf b = { 0 };
	struct su_resp r;
	struct su_req q = { "POST", "/api/traces?name=xray&wait=1",
			    "Content-Type: multipart/form-data; boundary=XRAYBOUNDARY\r\n", NULL, 0, 0, 0 };
	long long id = -1;
	cJSON *j;

	if (part(&b, "file", log) != 0 || part(&b, "binary", binary) != 0 || su_buf_add(&b, "--XRAYBOUNDARY--\r\n", 18))
		return -1;
	q.body = b.p;
	q.body_len = b.len;
	if (su_request(port, &q, &r, 300000) == 0 && r.status == 201 &&
	    (j = cJSON_ParseWithLength(r.body, r.body_len)) != NULL) {
		id = (long long)cJSON_GetObjectItem(j, "id")->valuedouble;
		fprintf(stderr, "api_dump: trace %lld: %s\n", id, r.body);
		cJSON_Delete(j);
	} else {
		fprintf(stderr, "api_dump: upload answered %d: %.300s\n", r.status, r.body ? r.body : "");
	}
	su_resp_free(&r);
	free(b.p);
	return id;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/api_dump-XXXXXX", cmd[256];
	struct su_server srv;
	long long id;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: api_dump SERVER_BINARY LOG BINARY\n");
		return 2;
	}
	if (mkdtemp(dir) == NULL)
		return die("cannot make a data directory");
	{
		char *const args[] = { argv[1], "serve", "--port", "0", "--data", dir, NULL };

		if (su_server_start(&srv, args, "/dev/null", 30) != 0)
			return die("the server did not start");
	}
	id = upload(srv.port, argv[2], argv[3]);
	rc = id > 0 ? print_tracks(srv.port, id) : die("the upload failed");
	su_server_stop(&srv, SIGTERM);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "api_dump: could not remove %s\n", dir);
	return rc;
}
