/*
 * The command line's one HTTP client: every request `trace-server stream`
 * and `trace-server record` make goes through here, over libcurl, and
 * replies are kept whole (up to CL_REPLY_MAX) and parsed with cJSON. A
 * streamed body (a growing file) is read from a callback that may say
 * "nothing yet"; the transfer then pauses and asks again within POLL_MS,
 * so that the request's headers reach the server (which makes a live trace
 * when they arrive) whether or not the file has bytes yet.
 *
 * Not here: the provider connection of provide.c, an HTTP Upgrade after
 * which the socket speaks docs/PROVIDER-PROTOCOL.md (libcurl does not hand
 * over an upgraded connection), and the provider library (provider/),
 * which links nothing but libc and pthreads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "client_internal.h"

enum { POLL_MS = 100, UPLOAD_BUFFER = 256 * 1024 };

/* One transfer's state, shared with libcurl's callbacks. */
struct cl_xfer {
	struct cl_reply *r; /* filled by on_body; r->body grows up to CL_REPLY_MAX */
	size_t cap;         /* bytes allocated for r->body */
	cl_read_fn read;    /* the streamed body's source, or NULL */
	void *arg;          /* read's argument */
	int paused;         /* read said CL_READ_AGAIN: unpause after the next poll */
	int read_failed;    /* read said CL_READ_FAIL */
};

int cl_parse_url(const char *url, struct cl_server *s, char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, full[2048];
	CURLUcode rc = CURLUE_OUT_OF_MEMORY;
	long p = 0;
	int ok = 0;

	/* "host:port" is http://host:port (libcurl would take "host:" for a scheme) */
	snprintf(full, sizeof(full), "%s%s", strstr(url, "://") ? "" : "http://", url);
	if (u != NULL && (rc = curl_url_set(u, CURLUPART_URL, full, CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK &&
	    (rc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0)) == CURLUE_OK &&
	    (rc = curl_url_get(u, CURLUPART_HOST, &host, 0)) == CURLUE_OK)
		rc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
	if (rc == CURLUE_OK && strcmp(scheme, "http") != 0)
		snprintf(err, errlen, "%s: only http:// servers are supported", url);
	else if (rc == CURLUE_NO_HOST || (rc == CURLUE_OK && (host[0] == '\0' || strlen(host) >= sizeof(s->host))))
		snprintf(err, errlen, "%s: no host", url);
	else if (rc == CURLUE_BAD_PORT_NUMBER || (rc == CURLUE_OK && ((p = strtol(port, NULL, 10)) < 1 || p > 65535)))
		snprintf(err, errlen, "%s: bad port", url);
	else if (rc != CURLUE_OK)
		snprintf(err, errlen, "%s: %s", url, curl_url_strerror(rc));
	else {
		snprintf(s->host, sizeof(s->host), "%s", host);
		s->port = (int)p;
		ok = 1;
	}
	curl_free(port);
	curl_free(host);
	curl_free(scheme);
	curl_url_cleanup(u);
	return ok ? 0 : -1;
}

int cl_read_token(const char *path, struct cl_server *s, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");

	if (f == NULL || fgets(s->token, sizeof(s->token), f) == NULL) {
		snprintf(err, errlen, "cannot read the token from %s: %s", path, f ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	s->token[strcspn(s->token, "\r\n")] = '\0';
	return 0;
}

int cl_query_escape(char *out, size_t n, const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0); /* all but A-Z a-z 0-9 - . _ ~ */
	size_t len = strlen(out);
	int rc = -1;

	if (e != NULL && len + strlen(e) < n) {
		memcpy(out + len, e, strlen(e) + 1);
		rc = 0;
	}
	curl_free(e);
	return rc;
}

/* Keeps the reply's body, up to CL_REPLY_MAX; the rest is read and dropped. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct cl_xfer *x = arg;
	struct cl_reply *r = x->r;
	size_t k = size * n, keep = k < CL_REPLY_MAX - r->len ? k : CL_REPLY_MAX - r->len;

	if (r->len + keep + 1 > x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16384;
		char *b;

		while (cap < r->len + keep + 1)
			cap *= 2;
		if ((b = realloc(r->body, cap)) == NULL)
			return 0; /* libcurl ends the transfer: CURLE_WRITE_ERROR */
		r->body = b;
		x->cap = cap;
	}
	memcpy(r->body + r->len, p, keep);
	r->len += keep;
	r->body[r->len] = '\0';
	return k;
}

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct cl_xfer *x = arg;
	long k = x->read(x->arg, buf, size * n);

	if (k == CL_READ_AGAIN) {
		x->paused = 1;
		return CURL_READFUNC_PAUSE;
	}
	if (k < 0) {
		x->read_failed = 1;
		return CURL_READFUNC_ABORT;
	}
	return (size_t)k;
}

/* Runs h to its end, unpausing a paused upload every POLL_MS; its result. */
static CURLcode cl_run(CURL *h, struct cl_xfer *x)
{
	CURLM *m = curl_multi_init();
	CURLcode rc = CURLE_OUT_OF_MEMORY;
	CURLMsg *msg;
	int running = 1, left;

	if (m == NULL || curl_multi_add_handle(m, h) != CURLM_OK)
		goto out_cleanup;
	while (curl_multi_perform(m, &running) == CURLM_OK && running) {
		curl_multi_poll(m, NULL, 0, POLL_MS, NULL);
		if (x->paused) {
			x->paused = 0;
			curl_easy_pause(h, CURLPAUSE_CONT);
		}
	}
	while ((msg = curl_multi_info_read(m, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE)
			rc = msg->data.result;
	curl_multi_remove_handle(m, h);
out_cleanup:
	curl_multi_cleanup(m);
	return rc;
}

/* Says in r why the transfer that ended with rc failed (when it did). */
static void cl_say_why(CURL *h, CURLcode rc, const char *errbuf, struct cl_reply *r)
{
	long code = 0, oserr = 0;

	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	r->status = code > 0 ? (int)code : -1;
	if (rc == CURLE_OK)
		return;
	curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
	if (rc == CURLE_COULDNT_CONNECT && oserr != 0)
		snprintf(r->why, sizeof(r->why), "%s", strerror((int)oserr));
	else
		snprintf(r->why, sizeof(r->why), "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
	r->unreachable = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

/* One transfer to s: method on path, the headers extra (may be NULL) and
 * the bearer token; the body as h's options say. Returns r->status, or -1
 * when the transfer failed (r->why says why; r->status may still hold an
 * early reply's status). */
static int cl_perform(CURL *h, const struct cl_server *s, const char *method, const char *path,
		      struct curl_slist *extra, struct cl_xfer *x)
{
	char url[2048], auth[1100], errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = curl_slist_append(extra, "Expect:"); /* send the body at once */
	CURLcode rc;

	snprintf(url, sizeof(url), "http://%s:%d%s", s->host, s->port, path);
	if (s->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", s->token);
		hdrs = curl_slist_append(hdrs, auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	rc = hdrs == NULL ? CURLE_OUT_OF_MEMORY : cl_run(h, x);
	cl_say_why(h, rc, errbuf, x->r);
	if (x->read_failed)
		snprintf(x->r->why, sizeof(x->r->why), "the body could not be read");
	if (x->r->body == NULL)
		x->r->body = calloc(1, 1);
	if (x->r->len > 0)
		x->r->json = cJSON_ParseWithLength(x->r->body, x->r->len);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	return rc == CURLE_OK ? x->r->status : -1;
}

/* Clears r for a new request; a new handle, or NULL with r saying why. */
static CURL *cl_begin(struct cl_reply *r)
{
	CURL *h = curl_easy_init();

	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (h == NULL)
		snprintf(r->why, sizeof(r->why), "out of memory");
	return h;
}

int cl_request(const struct cl_server *s, const char *method, const char *path, const char *json,
	       struct cl_reply *r)
{
	struct cl_xfer x = { r, 0, NULL, NULL, 0, 0 };
	struct curl_slist *hdrs = NULL;
	CURL *h = cl_begin(r);

	if (h == NULL)
		return -1;
	if (json != NULL) {
		hdrs = curl_slist_append(NULL, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
	}
	return cl_perform(h, s, method, path, hdrs, &x);
}

int cl_upload(const struct cl_server *s, const char *path, const char *content_type, cl_read_fn read, void *arg,
	      struct cl_reply *r)
{
	struct cl_xfer x = { r, 0, read, arg, 0, 0 };
	struct curl_slist *hdrs;
	char type[256];
	CURL *h = cl_begin(r);

	if (h == NULL)
		return -1;
	snprintf(type, sizeof(type), "Content-Type: %s", content_type);
	hdrs = curl_slist_append(NULL, type);
	hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(h, CURLOPT_READDATA, &x);
	curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, (long)UPLOAD_BUFFER);
	return cl_perform(h, s, "POST", path, hdrs, &x);
}

void cl_reply_fini(struct cl_reply *r)
{
	cJSON_Delete(r->json);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

int cl_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

void cl_global_fini(void)
{
	curl_global_cleanup();
}
