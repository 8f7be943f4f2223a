/*
 * The S3 client (s3.h). Every call goes through one function, s3_call,
 * which signs the request, sends it with libcurl and sorts the answer into
 * an enum s3_error plus a sentence; the calls themselves only say what to
 * send and what to read back. Bodies are sent from a file region (pread)
 * or a small buffer, and received into a file descriptor (a download) or
 * a capped buffer (S3's XML replies): memory stays bounded by the cap
 * whatever the object's size.
 *
 * The payload is always hashed (x-amz-content-sha256 is the body's real
 * SHA-256, never UNSIGNED-PAYLOAD): a part is read once to hash it and
 * once to send it, which costs a second read of a file the page cache
 * still holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "s3.h"
#include "sigv4.h"

#define REPLY_MAX ((size_t)8 << 20) /* S3's XML replies; a list page of 1000 keys is far less */
#define MAX_PARTS 10000             /* S3's own limit */

struct s3 {
	struct s3_config c;
	char host[512];      /* the endpoint's authority, signed as the host header */
	char access_key[128];
	char secret_key[128];
	char *token;         /* AWS_SESSION_TOKEN, or NULL */
};

/* One request and its reply. */
struct call {
	const char *method;
	const char *key;       /* NULL: the bucket itself */
	const char *query;     /* canonical (sorted, encoded); "" if none */
	const char *mem;       /* body from memory (mem_len bytes), or NULL */
	size_t mem_len;
	int in_fd;             /* else body from in_fd at in_off, in_len bytes; -1 = no body */
	uint64_t in_off, in_len;
	char payload_hash[SIGV4_HASH_HEX];
	int out_fd;            /* a 2xx reply's body goes here; -1 = into buf */
	CURL *h;
	char *buf;             /* the reply's body otherwise, at most REPLY_MAX bytes */
	size_t len, cap;
	int write_failed;      /* errno of a failed write to out_fd, 0 if none */
	long status;
	char etag[256];
	uint64_t length;       /* the reply's Content-Length */
};

const char *s3_strerror(int e)
{
	switch (e) {
	case S3_OK:
		return "ok";
	case S3_ENOTFOUND:
		return "no such object";
	case S3_EUNAVAILABLE:
		return "the object store is unavailable";
	case S3_EREFUSED:
		return "the object store refused the request";
	case S3_EIO:
		return "a local file cannot be read or written";
	case S3_ENOMEM:
		return "out of memory";
	case S3_EBADURL:
		return "not an s3:// URL this server takes";
	}
	return "unknown error";
}

/* ---- the store's URL ---------------------------------------------------- */

/* Copies the value of name in "a=b&c=d" into out; 0, or -1 when absent or too long. */
static int query_value(const char *q, const char *name, char *out, size_t n)
{
	size_t l = strlen(name);

	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (len > l && strncmp(q, name, l) == 0 && q[l] == '=') {
			if (len - l - 1 >= n)
				return -1;
			memcpy(out, q + l + 1, len - l - 1);
			out[len - l - 1] = '\0';
			return 0;
		}
		q = end ? end + 1 : NULL;
	}
	return -1;
}

static int bucket_ok(const char *b)
{
	size_t n = strlen(b), i;

	if (n < 3 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-' || b[i] == '.'))
			return 0;
	return 1;
}

int s3_parse_url(const char *url, struct s3_config *c, char *err, size_t errlen)
{
	const char *p, *slash, *q;
	size_t n;

	memset(c, 0, sizeof(*c));
	c->part_size = S3_DEFAULT_PART_SIZE;
	c->timeout = 30;
	if (strncmp(url, "s3://", 5) != 0)
		goto bad;
	p = url + 5;
	q = strchr(p, '?');
	slash = strchr(p, '/');
	if (slash && q && slash > q)
		slash = NULL;
	n = slash ? (size_t)(slash - p) : q ? (size_t)(q - p) : strlen(p);
	if (n >= sizeof(c->bucket))
		goto bad;
	memcpy(c->bucket, p, n);
	if (!bucket_ok(c->bucket))
		goto bad;
	if (slash) {
		size_t pl = q ? (size_t)(q - slash - 1) : strlen(slash + 1);

		if (pl >= sizeof(c->prefix))
			goto bad;
		memcpy(c->prefix, slash + 1, pl);
		while (pl > 0 && c->prefix[pl - 1] == '/')
			c->prefix[--pl] = '\0';
	}
	if (!q || query_value(q + 1, "endpoint", c->endpoint, sizeof(c->endpoint)) != 0 ||
	    (strncmp(c->endpoint, "http://", 7) != 0 && strncmp(c->endpoint, "https://", 8) != 0))
		goto bad;
	n = strlen(c->endpoint);
	while (n > 0 && c->endpoint[n - 1] == '/')
		c->endpoint[--n] = '\0';
	if (query_value(q + 1, "region", c->region, sizeof(c->region)) != 0)
		snprintf(c->region, sizeof(c->region), "us-east-1");
	return S3_OK;
bad:
	snprintf(err, errlen,
		 "--store takes s3://bucket[/prefix]?endpoint=http://host:port[&region=R] "
		 "(bucket 3 to 63 bytes of a-z 0-9 . -), not '%.200s'",
		 url);
	return S3_EBADURL;
}

struct s3 *s3_create(const struct s3_config *c, char *err, size_t errlen)
{
	const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
	const char *tok = getenv("AWS_SESSION_TOKEN"), *h;
	struct s3 *s;

	if (!ak || !sk || !*ak || !*sk || strlen(ak) >= 128 || strlen(sk) >= 128) {
		snprintf(err, errlen, "the object store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
				      "in the environment");
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL || (tok && *tok && (s->token = strdup(tok)) == NULL)) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->c = *c;
	snprintf(s->access_key, sizeof(s->access_key), "%s", ak);
	snprintf(s->secret_key, sizeof(s->secret_key), "%s", sk);
	h = strstr(c->endpoint, "://") + 3;
	snprintf(s->host, sizeof(s->host), "%.*s", (int)strcspn(h, "/"), h);
	curl_global_init(CURL_GLOBAL_DEFAULT); /* counted: each create has its cleanup */
	return s;
}

void s3_destroy(struct s3 *s)
{
	if (s == NULL)
		return;
	free(s->token);
	memset(s->secret_key, 0, sizeof(s->secret_key));
	free(s);
	curl_global_cleanup();
}

const struct s3_config *s3_config_of(const struct s3 *s)
{
	return &s->c;
}

/* ---- one request -------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call *x = arg;
	size_t n = size * nmemb, done = 0;

	if (x->status == 0)
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->out_fd >= 0 && x->status >= 200 && x->status < 300) {
		while (done < n) {
			ssize_t w = write(x->out_fd, p + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				x->write_failed = w < 0 ? errno : EIO;
				return 0;
			}
			done += (size_t)w;
		}
		return n;
	}
	if (x->len + n + 1 > x->cap) {
		size_t cap = x->cap ? x->cap : 4096;
		char *b;

		while (cap < x->len + n + 1)
			cap *= 2;
		if (cap > REPLY_MAX + 1 || (b = realloc(x->buf, cap)) == NULL)
			return n; /* the rest is dropped: an error's Code comes first */
		x->buf = b;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, p, n);
	x->len += n;
	x->buf[x->len] = '\0';
	return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call *x = arg;
	size_t n = size * nmemb, l;

	if (n > 5 && strncasecmp(p, "ETag:", 5) == 0) {
		const char *v = p + 5;

		while (*v == ' ')
			v++;
		l = strcspn(v, "\r\n");
		if (l < sizeof(x->etag)) {
			memcpy(x->etag, v, l);
			x->etag[l] = '\0';
		}
	} else if (n > 15 && strncasecmp(p, "Content-Length:", 15) == 0) {
		x->length = strtoull(p + 15, NULL, 10);
	}
	return n;
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct call *x = arg;
	size_t n = size * nmemb;
	ssize_t r;

	if (x->mem) {
		n = n < x->mem_len ? n : x->mem_len;
		memcpy(p, x->mem, n);
		x->mem += n;
		x->mem_len -= n;
		return n;
	}
	if ((uint64_t)n > x->in_len)
		n = (size_t)x->in_len;
	if (n == 0)
		return 0;
	do
		r = pread(x->in_fd, p, n, (off_t)x->in_off);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return CURL_READFUNC_ABORT; /* the file shrank or failed: never send a short body as whole */
	x->in_off += (uint64_t)r;
	x->in_len -= (uint64_t)r;
	return (size_t)r;
}

/* The text of XML element tag in the reply, entities decoded, into out;
 * 0, or -1 when absent. from: where to start looking; *next: after it. */
static int xml_text(const char *from, const char *tag, char *out, size_t n, const char **next)
{
	char open[64], close[64];
	const char *a, *b;
	size_t w = 0;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if (from == NULL || (a = strstr(from, open)) == NULL || (b = strstr(a, close)) == NULL)
		return -1;
	for (a += strlen(open); a < b && w + 1 < n; a++) {
		static const struct { const char *e; char c; } ent[] = {
			{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
		};
		size_t i;

		for (i = 0; i < sizeof(ent) / sizeof(ent[0]); i++)
			if (strncmp(a, ent[i].e, strlen(ent[i].e)) == 0)
				break;
		if (i < sizeof(ent) / sizeof(ent[0])) {
			out[w++] = ent[i].c;
			a += strlen(ent[i].e) - 1;
		} else {
			out[w++] = *a;
		}
	}
	out[w] = '\0';
	if (next)
		*next = b + strlen(close);
	return a == b ? 0 : -1;
}

/* Sorts a finished call into an error; the sentence names what failed. */
static int call_result(const struct s3 *s, const struct call *x, CURLcode cc, char *err, size_t errlen)
{
	char code[128] = "", msg[256] = "";
	const char *what = x->key ? x->key : s->c.bucket;

	if (x->write_failed) {
		snprintf(err, errlen, "%s %s: writing the download: %s", x->method, what, strerror(x->write_failed));
		return S3_EIO;
	}
	if (cc != CURLE_OK) {
		snprintf(err, errlen, "%s %s: the object store at %s cannot be reached: %s", x->method, what,
			 s->c.endpoint, curl_easy_strerror(cc));
		return cc == CURLE_ABORTED_BY_CALLBACK || cc == CURLE_READ_ERROR ? S3_EIO : S3_EUNAVAILABLE;
	}
	/* S3 may answer 200 and put an error in the body (CompleteMultipartUpload) */
	if (x->status >= 200 && x->status < 300 && (x->buf == NULL || strstr(x->buf, "<Error>") == NULL))
		return S3_OK;
	xml_text(x->buf, "Code", code, sizeof(code), NULL);
	xml_text(x->buf, "Message", msg, sizeof(msg), NULL);
	snprintf(err, errlen, "%s %s: the object store answered HTTP %ld%s%s%s%s", x->method, what, x->status,
		 code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
	if (x->status == 404)
		return S3_ENOTFOUND;
	return x->status >= 500 || x->status == 429 || x->status < 200 ? S3_EUNAVAILABLE : S3_EREFUSED;
}

/* Signs x and adds its headers to *hl; 0, or -1 when the request does not
 * fit the signer's buffers. */
static int sign(const struct s3 *s, const struct call *x, const char *path, struct curl_slist **hl)
{
	struct sigv4_key k = { s->access_key, s->secret_key, s->c.region };
	struct sigv4_header h[4];
	struct sigv4_request r = { x->method, path, x->query, h, 3, x->payload_hash, NULL };
	char date[32], auth[1024], line[2048];
	struct tm tm;
	time_t now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	r.amz_date = date;
	h[0] = (struct sigv4_header){ "host", s->host };
	h[1] = (struct sigv4_header){ "x-amz-content-sha256", x->payload_hash };
	h[2] = (struct sigv4_header){ "x-amz-date", date };
	if (s->token)
		h[r.nheaders++] = (struct sigv4_header){ "x-amz-security-token", s->token };
	if (sigv4_authorization(&k, &r, auth, sizeof(auth), NULL, 0) != 0)
		return -1;
	snprintf(line, sizeof(line), "Authorization: %s", auth);
	*hl = curl_slist_append(*hl, line);
	/* sent as signed, whatever curl would make of a default port */
	snprintf(line, sizeof(line), "Host: %s", s->host);
	*hl = curl_slist_append(*hl, line);
	snprintf(line, sizeof(line), "x-amz-date: %s", date);
	*hl = curl_slist_append(*hl, line);
	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", x->payload_hash);
	*hl = curl_slist_append(*hl, line);
	if (s->token) {
		snprintf(line, sizeof(line), "x-amz-security-token: %s", s->token);
		*hl = curl_slist_append(*hl, line);
	}
	*hl = curl_slist_append(*hl, "Expect:"); /* no 100-continue round trip per part */
	*hl = curl_slist_append(*hl, "Content-Type: application/octet-stream");
	return *hl ? 0 : -1;
}

static void set_method(CURL *h, struct call *x)
{
	uint64_t n = x->mem ? x->mem_len : x->in_len;

	if (strcmp(x->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(x->method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)n);
	} else if (strcmp(x->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
	} else if (strcmp(x->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->method);
	}
	curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(h, CURLOPT_READDATA, x);
}

/* Sends x (its payload_hash already set) and reads the reply: S3_OK or an
 * error with err set. x->buf is the caller's to free. */
static int s3_call(struct s3 *s, struct call *x, char *err, size_t errlen)
{
	char path[2048], url[4096], *p;
	struct curl_slist *hl = NULL;
	CURLcode cc;
	int rc;

	/* path-style: /bucket/key, the key encoded as it is signed */
	p = path + snprintf(path, sizeof(path), "/%s/", s->c.bucket);
	if (x->key == NULL)
		p[-1] = '\0';
	else if (sigv4_uri_encode(x->key, 1, p, sizeof(path) - (size_t)(p - path)) == (size_t)-1) {
		snprintf(err, errlen, "%s: the key is too long", x->key);
		return S3_EREFUSED;
	}
	snprintf(url, sizeof(url), "%s%s%s%s", s->c.endpoint, path, x->query[0] ? "?" : "", x->query);
	if ((x->h = curl_easy_init()) == NULL || sign(s, x, path, &hl) != 0) {
		snprintf(err, errlen, "%s %s: out of memory or a request too long to sign", x->method, path);
		rc = x->h ? S3_EREFUSED : S3_ENOMEM;
		goto out;
	}
	curl_easy_setopt(x->h, CURLOPT_URL, url);
	curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(x->h, CURLOPT_NOSIGNAL, 1L); /* called from several threads */
	curl_easy_setopt(x->h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(x->h, CURLOPT_LOW_SPEED_TIME, s->c.timeout);
	curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
	set_method(x->h, x);
	cc = curl_easy_perform(x->h);
	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
	rc = call_result(s, x, cc, err, errlen);
out:
	curl_slist_free_all(hl);
	curl_easy_cleanup(x->h);
	x->h = NULL;
	return rc;
}

static void call_init(struct call *x, const char *method, const char *key, const char *query)
{
	memset(x, 0, sizeof(*x));
	x->method = method;
	x->key = key;
	x->query = query ? query : "";
	x->in_fd = -1;
	x->out_fd = -1;
	snprintf(x->payload_hash, sizeof(x->payload_hash), "%s", SIGV4_EMPTY_SHA256);
}

/* ---- the calls ---------------------------------------------------------- */

/* SHA-256 of n bytes of fd at off; 0, or -1 on a read error or short file. */
static int hash_region(int fd, uint64_t off, uint64_t n, char out[SIGV4_HASH_HEX])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE], buf[65536];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int len = 0, i;
	int rc = -1;

	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while (n > 0) {
		ssize_t r = pread(fd, buf, n < sizeof(buf) ? (size_t)n : sizeof(buf), (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			goto out;
		EVP_DigestUpdate(ctx, buf, (size_t)r);
		off += (uint64_t)r;
		n -= (uint64_t)r;
	}
	EVP_DigestFinal_ex(ctx, md, &len);
	for (i = 0; i < len; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 15];
	}
	out[2 * len] = '\0';
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Sends n bytes of fd at off as the body of x. */
static int call_with_file(struct s3 *s, struct call *x, int fd, uint64_t off, uint64_t n, char *err, size_t errlen)
{
	x->in_fd = fd;
	x->in_off = off;
	x->in_len = n;
	if (hash_region(fd, off, n, x->payload_hash) != 0) {
		snprintf(err, errlen, "%s %s: the file cannot be read: %s", x->method, x->key, strerror(errno));
		return S3_EIO;
	}
	return s3_call(s, x, err, errlen);
}

static int put_single(struct s3 *s, const char *key, int fd, uint64_t size, char *err, size_t errlen)
{
	struct call x;
	int rc;

	call_init(&x, "PUT", key, NULL);
	rc = call_with_file(s, &x, fd, 0, size, err, errlen);
	free(x.buf);
	return rc;
}

/* The multipart upload's parts, for CompleteMultipartUpload. */
struct parts {
	char (*etag)[256];
	size_t n;
};

/* UploadPart: n bytes of fd at off as part p->n + 1 (id_enc: the upload id, encoded). */
static int part_put(struct s3 *s, const char *key, const char *id_enc, int fd, struct parts *p, uint64_t off,
		    uint64_t n, char *err, size_t errlen)
{
	char query[1200];
	struct call x;
	int rc;

	snprintf(query, sizeof(query), "partNumber=%zu&uploadId=%s", p->n + 1, id_enc);
	call_init(&x, "PUT", key, query);
	rc = call_with_file(s, &x, fd, off, n, err, errlen);
	if (rc == S3_OK && x.etag[0] == '\0') {
		snprintf(err, errlen, "PUT %s part %zu: the object store gave no ETag", key, p->n + 1);
		rc = S3_EREFUSED;
	}
	if (rc == S3_OK)
		memcpy(p->etag[p->n++], x.etag, sizeof(x.etag));
	free(x.buf);
	return rc;
}

/* <CompleteMultipartUpload> with every part's number and ETag; NULL when out of memory. */
static char *complete_xml(const struct parts *p, size_t *len)
{
	size_t cap = 64 + p->n * 320, w, i;
	char *b = malloc(cap);

	if (b == NULL)
		return NULL;
	w = (size_t)snprintf(b, cap, "<CompleteMultipartUpload>");
	for (i = 0; i < p->n; i++)
		w += (size_t)snprintf(b + w, cap - w, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
				      p->etag[i]);
	w += (size_t)snprintf(b + w, cap - w, "</CompleteMultipartUpload>");
	*len = w;
	return b;
}

static int multipart_finish(struct s3 *s, const char *key, const char *id_enc, const struct parts *p, char *err,
			    size_t errlen)
{
	char query[1200];
	struct call x;
	size_t len;
	char *xml = complete_xml(p, &len);
	int rc;

	if (xml == NULL) {
		snprintf(err, errlen, "out of memory");
		return S3_ENOMEM;
	}
	snprintf(query, sizeof(query), "uploadId=%s", id_enc);
	call_init(&x, "POST", key, query);
	x.mem = xml;
	x.mem_len = len;
	sigv4_sha256_hex(xml, len, x.payload_hash);
	rc = s3_call(s, &x, err, errlen);
	free(x.buf);
	free(xml);
	return rc;
}

static void multipart_abort(struct s3 *s, const char *key, const char *id_enc)
{
	char query[1200], err[512];
	struct call x;

	snprintf(query, sizeof(query), "uploadId=%s", id_enc);
	call_init(&x, "DELETE", key, query);
	if (s3_call(s, &x, err, sizeof(err)) != S3_OK)
		fprintf(stderr, "trace-server: aborting a multipart upload: %s\n", err);
	free(x.buf);
}

/* CreateMultipartUpload; the upload id, URI-encoded, into id_enc. */
static int multipart_create(struct s3 *s, const char *key, char *id_enc, size_t n, char *err, size_t errlen)
{
	char id[600];
	struct call x;
	int rc;

	call_init(&x, "POST", key, "uploads=");
	x.mem = "";
	rc = s3_call(s, &x, err, errlen);
	if (rc == S3_OK && (xml_text(x.buf, "UploadId", id, sizeof(id), NULL) != 0 || id[0] == '\0' ||
			    sigv4_uri_encode(id, 0, id_enc, n) == (size_t)-1)) {
		snprintf(err, errlen, "POST %s?uploads: no usable UploadId in the reply", key);
		rc = S3_EREFUSED;
	}
	free(x.buf);
	return rc;
}

static int put_multipart(struct s3 *s, const char *key, int fd, uint64_t size, char *err, size_t errlen)
{
	uint64_t psz = s->c.part_size, off;
	struct parts p = { NULL, 0 };
	char id_enc[1024];
	int rc;

	if ((size + psz - 1) / psz > MAX_PARTS) {
		snprintf(err, errlen, "PUT %s: %" PRIu64 " bytes need more than %d parts", key, size, MAX_PARTS);
		return S3_EREFUSED;
	}
	if ((p.etag = calloc((size_t)((size + psz - 1) / psz), sizeof(*p.etag))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return S3_ENOMEM;
	}
	if ((rc = multipart_create(s, key, id_enc, sizeof(id_enc), err, errlen)) != S3_OK)
		goto out_free;
	for (off = 0; off < size && rc == S3_OK; off += psz) {
		uint64_t n = size - off < psz ? size - off : psz;

		rc = part_put(s, key, id_enc, fd, &p, off, n, err, errlen);
	}
	if (rc == S3_OK)
		rc = multipart_finish(s, key, id_enc, &p, err, errlen);
	if (rc != S3_OK)
		multipart_abort(s, key, id_enc);
out_free:
	free(p.etag);
	return rc;
}

int s3_put_file(struct s3 *s, const char *key, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
		snprintf(err, errlen, "PUT %s: cannot read %s: %s", key, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return S3_EIO;
	}
	if ((uint64_t)st.st_size <= s->c.part_size)
		rc = put_single(s, key, fd, (uint64_t)st.st_size, err, errlen);
	else
		rc = put_multipart(s, key, fd, (uint64_t)st.st_size, err, errlen);
	close(fd);
	return rc;
}

int s3_get_file(struct s3 *s, const char *key, const char *path, char *err, size_t errlen)
{
	char tmp[4200];
	struct call x;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s.part-XXXXXX", path);
	call_init(&x, "GET", key, NULL);
	if ((x.out_fd = mkstemp(tmp)) < 0) {
		snprintf(err, errlen, "GET %s: cannot create %s: %s", key, tmp, strerror(errno));
		return S3_EIO;
	}
	rc = s3_call(s, &x, err, errlen);
	if (rc == S3_OK && (fsync(x.out_fd) != 0 || rename(tmp, path) != 0)) {
		snprintf(err, errlen, "GET %s: cannot keep it as %s: %s", key, path, strerror(errno));
		rc = S3_EIO;
	}
	close(x.out_fd);
	if (rc != S3_OK)
		unlink(tmp);
	free(x.buf);
	return rc;
}

int s3_head(struct s3 *s, const char *key, uint64_t *size, char *err, size_t errlen)
{
	struct call x;
	int rc;

	call_init(&x, "HEAD", key, NULL);
	rc = s3_call(s, &x, err, errlen);
	if (rc == S3_OK && size)
		*size = x.length;
	free(x.buf);
	return rc;
}

int s3_head_bucket(struct s3 *s, char *err, size_t errlen)
{
	struct call x;
	int rc;

	call_init(&x, "HEAD", NULL, NULL);
	rc = s3_call(s, &x, err, errlen);
	free(x.buf);
	return rc;
}

int s3_delete(struct s3 *s, const char *key, char *err, size_t errlen)
{
	struct call x;
	int rc;

	call_init(&x, "DELETE", key, NULL);
	rc = s3_call(s, &x, err, errlen);
	free(x.buf);
	return rc == S3_ENOTFOUND ? S3_OK : rc;
}

/* Deletes every key of one ListObjectsV2 page; the next page's token into
 * next ("" when this was the last). */
static int delete_page(struct s3 *s, const char *xml, const char *keep, char *next, size_t n, char *err,
		       size_t errlen)
{
	char key[1100], trunc[16];
	const char *p = xml;
	int rc = S3_OK;

	while (rc == S3_OK && xml_text(p, "Key", key, sizeof(key), &p) == 0)
		if (keep == NULL || strcmp(key, keep) != 0)
			rc = s3_delete(s, key, err, errlen);
	next[0] = '\0';
	if (rc == S3_OK && xml_text(xml, "IsTruncated", trunc, sizeof(trunc), NULL) == 0 &&
	    strcmp(trunc, "true") == 0 && xml_text(xml, "NextContinuationToken", next, n, NULL) != 0) {
		snprintf(err, errlen, "GET %s?list-type=2: a truncated list without a continuation token", s->c.bucket);
		rc = S3_EREFUSED;
	}
	return rc;
}

int s3_delete_prefix(struct s3 *s, const char *prefix, const char *keep, char *err, size_t errlen)
{
	char token[1024] = "", tok_enc[3100], pre_enc[3100], query[6400];
	struct call x;
	int rc;

	if (sigv4_uri_encode(prefix, 0, pre_enc, sizeof(pre_enc)) == (size_t)-1) {
		snprintf(err, errlen, "the prefix %.100s is too long", prefix);
		return S3_EREFUSED;
	}
	do {
		/* the canonical query is sorted: continuation-token < list-type < prefix */
		if (token[0]) {
			sigv4_uri_encode(token, 0, tok_enc, sizeof(tok_enc));
			snprintf(query, sizeof(query), "continuation-token=%s&list-type=2&prefix=%s", tok_enc, pre_enc);
		} else {
			snprintf(query, sizeof(query), "list-type=2&prefix=%s", pre_enc);
		}
		call_init(&x, "GET", NULL, query);
		rc = s3_call(s, &x, err, errlen);
		if (rc == S3_OK)
			rc = delete_page(s, x.buf ? x.buf : "", keep, token, sizeof(token), err, errlen);
		free(x.buf);
	} while (rc == S3_OK && token[0]);
	return rc;
}
