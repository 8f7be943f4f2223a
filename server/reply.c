/*
 * Replies and parameters: JSON bodies (gzip-compressed when the client
 * takes it), the error object of docs/API.md, bounded integer parameters
 * and the reply cache glue. Every handler answers through these.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gzip.h"
#include "server_internal.h"

/* ---- responses ---------------------------------------------------------- */

static int wants_gzip(struct MHD_Connection *c)
{
	return srv_gzip_accepted(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
}

/*
 * A response for body (ownership passes to it), gzip-compressed when the
 * client takes gzip and the body is large enough to gain from it.
 */
static struct MHD_Response *make_response(struct MHD_Connection *c, char *body, size_t *len)
{
	struct MHD_Response *resp;
	char *z;
	size_t zn;
	int gz = *len >= SRV_GZIP_MIN && wants_gzip(c) && srv_gzip(body, *len, &z, &zn) == 0;

	if (gz) {
		free(body);
		body = z;
		*len = zn;
	}
	if ((resp = MHD_create_response_from_buffer(*len, body, MHD_RESPMEM_MUST_FREE)) == NULL) {
		free(body);
		return NULL;
	}
	if (gz)
		MHD_add_response_header(resp, "Content-Encoding", "gzip");
	MHD_add_response_header(resp, "Vary", "Accept-Encoding");
	return resp;
}

enum MHD_Result srv_send_body(struct MHD_Connection *c, struct req *r, unsigned status, char *body, size_t len,
				 const char *type)
{
	struct MHD_Response *resp = make_response(c, body, &len);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	if (status == 503) /* what is down now comes back by itself: say when to ask again */
		MHD_add_response_header(resp, "Retry-After", "1");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	r->status = status;
	r->bytes = len;
	return ret;
}

/* {"error": {"code", "message"}}: small and nested, so cJSON builds it.
 * The caller frees; NULL when out of memory. */
static char *error_json(const char *code, const char *msg)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char *body;

	cJSON_AddItemToObject(root, "error", e);
	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	body = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return body;
}

enum MHD_Result srv_send_error(struct MHD_Connection *c, struct req *r, unsigned status, const char *code,
				  const char *msg)
{
	char *body = error_json(code, msg);

	if (body == NULL)
		return MHD_NO;
	return srv_send_body(c, r, status, body, strlen(body), "application/json");
}

enum MHD_Result srv_send_trace_error(struct MHD_Connection *c, struct req *r, int rc, const char *gone)
{
	return rc == CAT_EUNAVAILABLE ? srv_send_error(c, r, 503, "catalog_unavailable", CATALOG_DOWN)
	       : rc == CAT_EFAIL ? srv_send_error(c, r, 500, "storage_failed", "the catalog could not be read")
				 : srv_send_error(c, r, 404, "not_found", gone);
}

enum MHD_Result srv_send_retry(struct MHD_Connection *c, struct req *r, const char *code, const char *msg)
{
	char *body = error_json(code, msg);
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len;

	if (body == NULL)
		return MHD_NO;
	len = strlen(body);
	if ((resp = make_response(c, body, &len)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "Retry-After", SRV_RETRY_AFTER);
	ret = MHD_queue_response(c, 503, resp);
	MHD_destroy_response(resp);
	r->status = 503;
	r->bytes = len;
	return ret;
}

enum MHD_Result srv_send_json(struct MHD_Connection *c, struct req *r, unsigned status, struct jbuf *b)
{
	size_t len;
	char *body = jb_take(b, &len);

	if (body == NULL)
		return srv_send_error(c, r, 500, "out_of_memory", "the server ran out of memory building the reply");
	return srv_send_body(c, r, status, body, len, "application/json");
}

enum MHD_Result srv_send_qry_error(struct MHD_Connection *c, struct req *r, const struct qry_error *e)
{
	static const unsigned status[] = { 200, 404, 400, 500, 422, 500 };

	return srv_send_error(c, r, e->code >= 0 && e->code <= QRY_ENOMEM ? status[e->code] : 500, qry_strerror(e->code),
			  e->msg);
}

/* ---- parameters ---------------------------------------------------------- */

/* Reads an optional integer query parameter; answers 400 itself on error. */
int srv_param_i64(struct MHD_Connection *c, struct req *r, const char *key, int64_t def, int64_t min,
		     int64_t max, int64_t *out, int required)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char msg[256];

	if (s == NULL && !required) {
		*out = def;
		return 0;
	}
	if (s == NULL) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' is required", key);
		srv_send_error(c, r, 400, "missing_parameter", msg);
		return -1;
	}
	if (srv_parse_i64(s, min, max, out) != 0) {
		snprintf(msg, sizeof(msg), "the query parameter '%s' must be an integer from %" PRId64 " to %" PRId64,
			 key, min, max);
		srv_send_error(c, r, 400, "bad_parameter", msg);
		return -1;
	}
	return 0;
}

int srv_param_window(struct MHD_Connection *c, struct req *r, struct qry_window *w)
{
	int64_t v;

	if (srv_param_i64(c, r, "start", INT64_MIN, INT64_MIN, INT64_MAX, &w->start, 0) != 0 ||
	    srv_param_i64(c, r, "end", INT64_MAX, INT64_MIN, INT64_MAX, &w->end, 0) != 0 ||
	    srv_param_i64(c, r, "resolution", 0, 0, INT64_C(1) << 62, &w->resolution, 0) != 0 ||
	    srv_param_i64(c, r, "limit", QRY_DEFAULT_LIMIT, 1, QRY_MAX_LIMIT, &v, 0) != 0)
		return -1;
	w->limit = (uint32_t)v;
	w->start_given = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "start") != NULL;
	w->end_given = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "end") != NULL;
	if (w->end < w->start) {
		srv_send_error(c, r, 400, "bad_parameter", "'end' must not be before 'start'");
		return -1;
	}
	return 0;
}

/* The required "tracks=1,2,3" list (at most 4096 ids) into a new array;
 * answers 400 itself on error. */
int64_t *srv_param_tracks(struct MHD_Connection *c, struct req *r, size_t *n)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tracks");
	int64_t *ids = NULL;
	char item[32];

	*n = 0;
	if (s == NULL || *s == '\0') {
		srv_send_error(c, r, 400, "missing_parameter", "the query parameter 'tracks' is required (ids, comma-separated)");
		return NULL;
	}
	if ((ids = malloc(4096 * sizeof(*ids))) == NULL) {
		srv_send_error(c, r, 500, "out_of_memory", "the server ran out of memory");
		return NULL;
	}
	while (*s != '\0') {
		size_t len = strcspn(s, ",");

		/* an empty id is malformed wherever it is: "1,,2", ",1" and "1," */
		if (*n == 4096 || len == 0 || len >= sizeof(item) || (s[len] == ',' && s[len + 1] == '\0') ||
		    (memcpy(item, s, len), item[len] = '\0', srv_parse_i64(item, 1, INT64_MAX, &ids[*n]) != 0)) {
			srv_send_error(c, r, 400, "bad_parameter", "'tracks' must be 1 to 4096 track ids, comma-separated");
			free(ids);
			return NULL;
		}
		(*n)++;
		s += len + (s[len] == ',');
	}
	return ids;
}
/* ---- the reply cache ---------------------------------------------------- */

enum MHD_Result srv_method_not_allowed(struct MHD_Connection *c, struct req *r, const char *method)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "this path does not accept %s", method);
	return srv_send_error(c, r, 405, "method_not_allowed", msg);
}

static enum MHD_Result key_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	struct cache_key *key = cls;
	/* lengths first: "&" or "=" inside a value cannot make two requests look alike */
	int n = snprintf(key->buf + key->len, sizeof(key->buf) - key->len, "&%zu:%s=%zu:%s", strlen(k), k,
			 v ? strlen(v) : 0, v ? v : "");

	(void)kind;
	if (n < 0 || (size_t)n >= sizeof(key->buf) - key->len)
		key->overflow = 1;
	else
		key->len += (size_t)n;
	return key->overflow ? MHD_NO : MHD_YES;
}

/* The cache key of a GET: its path and arguments in the order sent, and
 * whether the reply is gzip-compressed. */
int srv_cache_key(struct MHD_Connection *c, const char *path, struct cache_key *key)
{
	int n = snprintf(key->buf, sizeof(key->buf), "%s%s?", wants_gzip(c) ? "gz:" : "", path);

	key->overflow = n < 0 || (size_t)n >= sizeof(key->buf);
	key->len = key->overflow ? 0 : (size_t)n;
	if (!key->overflow)
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, key_arg, key);
	return key->overflow ? -1 : 0;
}

/* Answers 200 with the JSON and keeps the reply for the same request again. */
enum MHD_Result srv_send_cached_json(struct server *s, struct MHD_Connection *c, struct req *r, int64_t trace,
					const struct cache_key *key, struct jbuf *b)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t len;
	char *body = jb_take(b, &len);

	if (body == NULL)
		return srv_send_error(c, r, 500, "out_of_memory", "the server ran out of memory building the reply");
	if ((resp = make_response(c, body, &len)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, 200, resp);
	r->status = 200;
	r->bytes = len;
	if (key)
		rc_put(&s->cache, key->buf, trace, resp, len);
	else
		MHD_destroy_response(resp);
	return ret;
}

/* Runs a query endpoint on a ready trace. */
