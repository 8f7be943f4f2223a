/*
 * Captures and providers over HTTP: the controller's session
 * (fuchsia-trace-controller.txt) mapped onto /api/captures, and the
 * providers' upgraded connections (docs/PROVIDER-PROTOCOL.md). The manager
 * itself is capture/ (capture.h); this file parses, waits and answers.
 *
 * A request that waits (start, stop, alerts, state) suspends its
 * connection through cap_wait and runs again when resumed: its first run
 * acts and sets r->wait_deadline, the later ones only look.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "server_internal.h"
#include "../provider/utf8.h"

enum { STOP_TIMEOUT_MS = 5000, MAX_POLL_S = 60 };

static const char *arg(const struct call *x, const char *key)
{
	return MHD_lookup_connection_value(x->c, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result send_cap_error(struct call *x, int rc, const char *err)
{
	switch (rc) {
	case CAP_ENOENT:
		return srv_send_error(x->c, x->r, 404, "not_found", "there is no capture with this id");
	case CAP_EEXISTS:
		return srv_send_error(x->c, x->r, 409, "session_exists", err);
	case CAP_ENOT_INIT:
		return srv_send_error(x->c, x->r, 409, "not_initialized", err);
	case CAP_EALREADY:
		return srv_send_error(x->c, x->r, 409, "already_started", err);
	case CAP_ESTOPPING:
		return srv_send_error(x->c, x->r, 409, "stopping", err);
	case CAP_ETERMINATING:
		return srv_send_error(x->c, x->r, 409, "terminating", err);
	case CAP_ENOT_STARTED:
		return srv_send_error(x->c, x->r, 409, "not_started", err);
	default:
		return srv_send_error(x->c, x->r, 507, "storage_failed", err[0] ? err : "the capture's trace cannot be made");
	}
}

static enum MHD_Result send_capture(struct call *x, unsigned status)
{
	struct jbuf b;

	jb_init(&b);
	if (cap_json(x->s->cap, x->ids[0], &b) != CAP_OK) {
		jb_fini(&b);
		return send_cap_error(x, CAP_ENOENT, "");
	}
	return srv_send_json(x->c, x->r, status, &b);
}

/* ---- the JSON of requests ----------------------------------------------------- */

/* A JSON array of category names into a comma-separated list. 0, or -1
 * with err set. More than CAP_MAX_CATEGORIES names is an error, unless
 * discard_extra: then the ones past the limit are left out (the spec's
 * rule for additional_categories). */
static int categories_of(const cJSON *a, const char *what, char *out, size_t n, char *err, size_t errlen,
			 int discard_extra)
{
	const cJSON *it;
	size_t len = 0, count = 0;

	out[0] = '\0';
	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a)) {
		snprintf(err, errlen, "'%s' must be an array of category names", what);
		return -1;
	}
	cJSON_ArrayForEach(it, a) {
		size_t k;

		if (!cJSON_IsString(it) || (k = strlen(it->valuestring)) == 0 || k > 100 ||
		    strpbrk(it->valuestring, ",\n\r\t ") != NULL) {
			snprintf(err, errlen, "'%s' holds a name that is not 1 to 100 bytes without commas or spaces",
				 what);
			return -1;
		}
		if (++count > CAP_MAX_CATEGORIES && discard_extra)
			continue;
		if (count > CAP_MAX_CATEGORIES || len + k + 2 > n) {
			snprintf(err, errlen, "'%s' has more than %d categories", what, CAP_MAX_CATEGORIES);
			return -1;
		}
		len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", it->valuestring);
	}
	return 0;
}

static int mb_of(const cJSON *v, uint32_t *out, char *err, size_t errlen)
{
	if (v == NULL)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 64 ||
	    v->valuedouble != (double)(int)v->valuedouble) {
		snprintf(err, errlen, "'buffer_size_megabytes_hint' must be an integer from 1 to 64");
		return -1;
	}
	*out = (uint32_t)v->valuedouble;
	return 0;
}

static int known_members(const cJSON *o, const char *const *known, size_t n, char *err, size_t errlen)
{
	const cJSON *it;
	size_t i;

	cJSON_ArrayForEach(it, o) {
		for (i = 0; i < n && strcmp(it->string, known[i]) != 0; i++)
			;
		if (i == n) {
			snprintf(err, errlen, "'%.*s' is not a member of this request (see docs/API.md, Captures)",
				 (int)utf8_cut(it->string, strlen(it->string), 64), it->string);
			return -1;
		}
	}
	return 0;
}

static int specs_of(const cJSON *a, struct cap_config *cfg, char *err, size_t errlen)
{
	static const char *const known[] = { "name", "buffer_size_megabytes_hint", "categories" };
	const cJSON *it;
	size_t n = 0;

	if (a == NULL)
		return 0;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > CAP_MAX_SPECS) {
		snprintf(err, errlen, "'provider_specs' must be an array of at most %d objects", CAP_MAX_SPECS);
		return -1;
	}
	if ((cfg->specs = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*cfg->specs))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cJSON_ArrayForEach(it, a) {
		struct cap_spec *sp = &cfg->specs[n++];
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
		const cJSON *cats = cJSON_GetObjectItemCaseSensitive(it, "categories");

		if (!cJSON_IsObject(it) || known_members(it, known, 3, err, errlen) != 0)
			return err[0] ? -1 : (snprintf(err, errlen, "'provider_specs' holds a non-object"), -1);
		if (!cJSON_IsString(name) || name->valuestring[0] == '\0' || strlen(name->valuestring) > CAP_MAX_NAME) {
			snprintf(err, errlen, "a provider spec needs a 'name' of 1 to %d bytes", CAP_MAX_NAME);
			return -1;
		}
		snprintf(sp->name, sizeof(sp->name), "%s", name->valuestring);
		if (mb_of(cJSON_GetObjectItemCaseSensitive(it, "buffer_size_megabytes_hint"),
			  &sp->buffer_size_megabytes_hint, err, errlen) != 0 ||
		    categories_of(cats, "categories", sp->categories, sizeof(sp->categories), err, errlen, 0) != 0)
			return -1;
		sp->has_categories = cats != NULL;
	}
	cfg->nspecs = n;
	return 0;
}

static int mode_of(const cJSON *v, int *mode, char *err, size_t errlen)
{
	if (v == NULL)
		return 0;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "oneshot") == 0)
		*mode = FIFO_MODE_ONESHOT;
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "circular") == 0)
		*mode = FIFO_MODE_CIRCULAR;
	else if (cJSON_IsString(v) && strcmp(v->valuestring, "streaming") == 0)
		*mode = FIFO_MODE_STREAMING;
	else {
		snprintf(err, errlen, "'buffering_mode' must be oneshot, circular or streaming");
		return -1;
	}
	return 0;
}

static int labels_of(const cJSON *o, struct cat_label *labels, size_t *n, char *err, size_t errlen)
{
	const cJSON *it;
	char kv[CAT_MAX_KEY + CAT_MAX_VALUE + 8];

	*n = 0;
	if (o == NULL)
		return 0;
	if (!cJSON_IsObject(o)) {
		snprintf(err, errlen, "'labels' must be an object of key: value strings");
		return -1;
	}
	cJSON_ArrayForEach(it, o) {
		if (!cJSON_IsString(it) || *n == CAT_MAX_LABELS) {
			snprintf(err, errlen, "'labels' must hold at most %d string values", CAT_MAX_LABELS);
			return -1;
		}
		snprintf(kv, sizeof(kv), "%.*s=%.*s", CAT_MAX_KEY + 1, it->string, CAT_MAX_VALUE + 1, it->valuestring);
		if (cat_label_parse(kv, 0, &labels[*n], err, errlen) != 0)
			return -1;
		(*n)++;
	}
	return 0;
}

/* The JSON body, an object (an empty body is {} when allowed). */
static cJSON *body_object(struct call *x, int empty_ok)
{
	if ((x->r->body == NULL || x->r->body_len == 0) && empty_ok)
		return cJSON_CreateObject();
	if (x->r->body == NULL)
		return NULL;
	{
		cJSON *root = cJSON_ParseWithLength(x->r->body, x->r->body_len);

		if (root && !cJSON_IsObject(root)) {
			cJSON_Delete(root);
			return NULL;
		}
		return root;
	}
}

/* ---- the routes ------------------------------------------------------------------ */

/* POST /api/captures: InitializeTracing with a TraceConfig. */
enum MHD_Result srv_h_capture_new(struct call *x)
{
	static const char *const known[] = { "categories", "buffer_size_megabytes_hint", "start_timeout_milliseconds",
					     "buffering_mode", "provider_specs", "name", "labels", "description",
					     "version", "defer_transfer" };
	struct cap_config cfg = { 0 };
	struct cat_label *labels = calloc(CAT_MAX_LABELS, sizeof(*labels));
	char err[256] = "";
	const cJSON *v;
	cJSON *root = body_object(x, 1);
	int64_t id;

	cfg.buffer_size_megabytes_hint = 4;
	cfg.start_timeout_milliseconds = 5000;
	cfg.buffering_mode = FIFO_MODE_STREAMING;
	cfg.labels = labels;
	if (labels == NULL || root == NULL) {
		free(labels);
		return srv_send_error(x->c, x->r, 400, "bad_json",
				      "send a TraceConfig as a JSON object, e.g. {\"buffering_mode\": \"streaming\"}");
	}
	if (known_members(root, known, sizeof(known) / sizeof(known[0]), err, sizeof(err)) != 0 ||
	    categories_of(cJSON_GetObjectItemCaseSensitive(root, "categories"), "categories", cfg.categories,
			  sizeof(cfg.categories), err, sizeof(err), 0) != 0 ||
	    mb_of(cJSON_GetObjectItemCaseSensitive(root, "buffer_size_megabytes_hint"), &cfg.buffer_size_megabytes_hint,
		  err, sizeof(err)) != 0 ||
	    mode_of(cJSON_GetObjectItemCaseSensitive(root, "buffering_mode"), &cfg.buffering_mode, err, sizeof(err)) != 0 ||
	    specs_of(cJSON_GetObjectItemCaseSensitive(root, "provider_specs"), &cfg, err, sizeof(err)) != 0 ||
	    labels_of(cJSON_GetObjectItemCaseSensitive(root, "labels"), labels, &cfg.nlabels, err, sizeof(err)) != 0)
		goto bad;
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "start_timeout_milliseconds")) != NULL) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 60000 ||
		    v->valuedouble != (double)(int)v->valuedouble) {
			snprintf(err, sizeof(err), "'start_timeout_milliseconds' must be an integer from 0 to 60000");
			goto bad;
		}
		cfg.start_timeout_milliseconds = (uint64_t)v->valuedouble;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "name")) != NULL) {
		if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) > CAT_MAX_NAME) {
			snprintf(err, sizeof(err), "'name' must be a string of 1 to %d bytes", CAT_MAX_NAME);
			goto bad;
		}
		cfg.name = v->valuestring;
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(root, "description")) != NULL &&
	    (!cJSON_IsString(v) ||
	     cat_text_check("description", v->valuestring, CAT_MAX_DESCRIPTION, 1, err, sizeof(err)) != 0)) {
		if (!err[0])
			snprintf(err, sizeof(err), "'description' must be a string");
		goto bad;
	}
	cfg.description = v ? v->valuestring : NULL;
	id = cap_initialize(x->s->cap, &cfg, err, sizeof(err));
	free(cfg.specs);
	free(labels);
	cJSON_Delete(root);
	if (id < 0)
		return send_cap_error(x, (int)id, err);
	x->ids[0] = id;
	return send_capture(x, 201);
bad:
	free(cfg.specs);
	free(labels);
	cJSON_Delete(root);
	return srv_send_error(x->c, x->r, 400, "bad_config", err);
}

enum MHD_Result srv_h_capture_list(struct call *x)
{
	struct jbuf b;

	jb_init(&b);
	cap_list_json(x->s->cap, &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

enum MHD_Result srv_h_capture(struct call *x)
{
	return send_capture(x, 200);
}

/* Waits (suspended) until done() says so or the deadline passes; then
 * finish() and answer. Returns 1 when the caller should answer now. */
static int wait_more(struct call *x, int done)
{
	if (done)
		return 1;
	if (cap_now_ms() >= x->r->wait_deadline)
		return 1;
	return cap_wait(x->s->cap, x->c, x->r->wait_deadline) != 0;
}

/* POST /api/captures/{id}/start: StartTracing with StartOptions; answered
 * when every provider has started or after start_timeout_milliseconds. */
enum MHD_Result srv_h_capture_start(struct call *x)
{
	static const char *const known[] = { "buffer_disposition", "additional_categories" };
	char err[256] = "", extra[CAP_CATEGORIES_SIZE] = "";
	int rc, disposition = FIFO_CLEAR_ENTIRE;

	if (x->r->wait_deadline == 0) {
		cJSON *root = body_object(x, 1);
		const cJSON *d;

		if (root == NULL)
			return srv_send_error(x->c, x->r, 400, "bad_json", "send StartOptions as a JSON object (or nothing)");
		d = cJSON_GetObjectItemCaseSensitive(root, "buffer_disposition");
		if (known_members(root, known, 2, err, sizeof(err)) != 0 ||
		    categories_of(cJSON_GetObjectItemCaseSensitive(root, "additional_categories"),
				  "additional_categories", extra, sizeof(extra), err, sizeof(err), 1) != 0) {
			cJSON_Delete(root);
			return srv_send_error(x->c, x->r, 400, "bad_parameter", err);
		}
		if (d && cJSON_IsString(d) && strcmp(d->valuestring, "clear_entire") == 0)
			disposition = FIFO_CLEAR_ENTIRE;
		else if (d && cJSON_IsString(d) && strcmp(d->valuestring, "clear_nondurable") == 0)
			disposition = FIFO_CLEAR_NONDURABLE;
		else if (d && cJSON_IsString(d) && strcmp(d->valuestring, "retain") == 0)
			disposition = FIFO_RETAIN;
		else if (d) {
			cJSON_Delete(root);
			return srv_send_error(x->c, x->r, 400, "bad_parameter",
					      "'buffer_disposition' must be clear_entire, clear_nondurable or retain");
		}
		cJSON_Delete(root);
		if ((rc = cap_start(x->s->cap, x->ids[0], disposition, extra, err, sizeof(err))) != CAP_OK)
			return send_cap_error(x, rc, err);
		x->r->wait_deadline = cap_now_ms() + (int64_t)cap_start_timeout(x->s->cap, x->ids[0]);
	}
	rc = cap_start_done(x->s->cap, x->ids[0]);
	if (rc < 0)
		return send_cap_error(x, rc, "");
	if (!wait_more(x, rc == 1))
		return MHD_YES;
	cap_start_finish(x->s->cap, x->ids[0]);
	return send_capture(x, 200);
}

/* The wait for the providers' STOPPED after a STOP, as a long poll: 1 once
 * it is over (cap_stop_finish done), else 0 with *res the handler's answer
 * (the request parked for more waiting, or an error sent). */
static int stop_waited(struct call *x, enum MHD_Result *res)
{
	int rc = cap_stop_done(x->s->cap, x->ids[0]);

	if (rc < 0) {
		*res = send_cap_error(x, rc, "");
		return 0;
	}
	if (!wait_more(x, rc == 1)) {
		*res = MHD_YES;
		return 0;
	}
	cap_stop_finish(x->s->cap, x->ids[0]);
	return 1;
}

/* POST /api/captures/{id}/stop: StopTracing with StopOptions; answers the
 * StopResult when every provider has stopped (or after 5 s). */
enum MHD_Result srv_h_capture_stop(struct call *x)
{
	static const char *const known[] = { "write_results" };
	enum MHD_Result res;
	char err[256] = "";
	struct jbuf b;
	int rc;

	if (x->r->wait_deadline == 0) {
		cJSON *root = body_object(x, 1);
		const cJSON *w;
		int write_results = 1;

		if (root == NULL)
			return srv_send_error(x->c, x->r, 400, "bad_json", "send StopOptions as a JSON object (or nothing)");
		w = cJSON_GetObjectItemCaseSensitive(root, "write_results");
		if (known_members(root, known, 1, err, sizeof(err)) != 0 || (w && !cJSON_IsBool(w))) {
			cJSON_Delete(root);
			return srv_send_error(x->c, x->r, 400, "bad_parameter",
					      err[0] ? err : "'write_results' must be true or false");
		}
		write_results = w ? cJSON_IsTrue(w) : 1;
		cJSON_Delete(root);
		if ((rc = cap_stop(x->s->cap, x->ids[0], write_results, err, sizeof(err))) != CAP_OK)
			return send_cap_error(x, rc, err);
		x->r->wait_deadline = cap_now_ms() + STOP_TIMEOUT_MS;
	}
	if (!stop_waited(x, &res))
		return res;
	jb_init(&b);
	cap_stats_json(x->s->cap, x->ids[0], &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

/* DELETE /api/captures/{id}: terminate; the trace becomes ready. A capture
 * still started is stopped first as StopTracing stops it: the providers'
 * last buffers (all of a oneshot or circular one) are in flight after STOP,
 * so the terminate waits for their STOPPED (or 5 s) before it ends the
 * trace, else the trace would be complete without them. */
enum MHD_Result srv_h_capture_delete(struct call *x)
{
	enum MHD_Result res;
	char err[256] = "";
	struct jbuf b;
	int rc;

	if (x->r->wait_deadline == 0) {
		rc = cap_stop(x->s->cap, x->ids[0], 1, err, sizeof(err));
		if (rc == CAP_OK)
			x->r->wait_deadline = cap_now_ms() + STOP_TIMEOUT_MS;
		else if (rc != CAP_ENOT_STARTED)
			return send_cap_error(x, rc, err);
		err[0] = '\0';
	}
	if (x->r->wait_deadline != 0 && !stop_waited(x, &res))
		return res;
	rc = cap_terminate(x->s->cap, x->ids[0], err, sizeof(err));
	if (rc != CAP_OK)
		return send_cap_error(x, rc, err);
	jb_init(&b);
	cap_stats_json(x->s->cap, x->ids[0], &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

/* The long poll's deadline from ?timeout= (seconds, default 30). */
static int poll_deadline(struct call *x)
{
	int64_t t;

	if (x->r->wait_deadline)
		return 0;
	if (srv_param_i64(x->c, x->r, "timeout", 30, 0, MAX_POLL_S, &t, 0) != 0)
		return -1;
	x->r->wait_deadline = cap_now_ms() + t * 1000;
	return 0;
}

/* GET /api/captures/{id}/alerts: WatchAlert, a long poll. */
enum MHD_Result srv_h_capture_alerts(struct call *x)
{
	char name[FIFO_ALERT_MAX + 1];
	struct jbuf b;
	int rc;

	if (poll_deadline(x) != 0)
		return MHD_YES;
	if ((rc = cap_alert_take(x->s->cap, x->ids[0], name)) < 0)
		return send_cap_error(x, rc, "");
	if (!wait_more(x, rc == 1))
		return MHD_YES;
	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "alert");
	if (rc == 1)
		jb_str(&b, name);
	else
		jb_null(&b);
	jb_obj_end(&b);
	return srv_send_json(x->c, x->r, 200, &b);
}

/* GET /api/captures/{id}/state?after=V: OnSessionStateChange, a long poll. */
enum MHD_Result srv_h_capture_state(struct call *x)
{
	int64_t after;
	uint64_t version;
	struct jbuf b;
	int rc, state;

	if (srv_param_i64(x->c, x->r, "after", 0, 0, INT64_MAX, &after, 0) != 0 || poll_deadline(x) != 0)
		return MHD_YES;
	if ((rc = cap_state(x->s->cap, x->ids[0], &state, &version)) != CAP_OK)
		return send_cap_error(x, rc, "");
	if (!wait_more(x, version > (uint64_t)after))
		return MHD_YES;
	jb_init(&b);
	jb_obj(&b);
	jb_key(&b, "state");
	jb_str(&b, cap_state_name(state));
	jb_key(&b, "state_version");
	jb_u64(&b, version);
	jb_obj_end(&b);
	return srv_send_json(x->c, x->r, 200, &b);
}

enum MHD_Result srv_h_providers(struct call *x)
{
	struct jbuf b;

	jb_init(&b);
	cap_providers_json(x->s->cap, &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

enum MHD_Result srv_h_categories(struct call *x)
{
	struct jbuf b;

	jb_init(&b);
	cap_categories_json(x->s->cap, &b);
	return srv_send_json(x->c, x->r, 200, &b);
}

/* ---- provider connections ----------------------------------------------------------- */

/* A provider's pid: "a decimal 64-bit unsigned integer"
 * (docs/PROVIDER-PROTOCOL.md). 0, or -1. */
static int parse_pid(const char *s, uint64_t *out)
{
	return s == NULL || strlen(s) > 20 ? -1 : srv_parse_u64(s, out);
}

void srv_close_upgraded(void *handle)
{
	MHD_upgrade_action(handle, MHD_UPGRADE_ACTION_CLOSE);
}

static void on_upgraded(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra, size_t extra_len,
			MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	struct server *s = cls;
	const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	const char *cats = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "categories");
	uint64_t p = 0;
	int fl = fcntl(sock, F_GETFL);

	(void)con_cls;
	if (fl >= 0)
		fcntl(sock, F_SETFL, fl & ~O_NONBLOCK); /* its reader thread blocks on it */
	parse_pid(pid, &p);
	if (cap_provider_add(s->cap, name ? name : "provider", p, cats, sock, urh, extra, extra_len) < 0)
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* GET /api/providers/connect: a provider registers (docs/PROVIDER-PROTOCOL.md). */
enum MHD_Result srv_h_provider_connect(struct call *x)
{
	const char *up = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Upgrade");
	const char *conn = MHD_lookup_connection_value(x->c, MHD_HEADER_KIND, "Connection");
	const char *name = arg(x, "name"), *pid = arg(x, "pid"), *cats = arg(x, "categories");
	struct MHD_Response *resp;
	enum MHD_Result ret;
	uint64_t p;

	if (up == NULL || strcasecmp(up, "fxt-provider/1") != 0 || conn == NULL || strcasestr(conn, "upgrade") == NULL)
		return srv_send_error(x->c, x->r, 400, "bad_upgrade",
				      "a provider connects with 'Connection: Upgrade' and 'Upgrade: fxt-provider/1' "
				      "(docs/PROVIDER-PROTOCOL.md)");
	if (name == NULL || name[0] == '\0' || strlen(name) > CAP_MAX_NAME || !utf8_valid(name, strlen(name)))
		return srv_send_error(x->c, x->r, 400, "bad_parameter", "'name' must be 1 to 100 bytes of UTF-8");
	if (parse_pid(pid, &p) != 0)
		return srv_send_error(x->c, x->r, 400, "bad_parameter",
				      "'pid' must be a process id: a decimal 64-bit unsigned integer");
	if (cats && strlen(cats) > 4000)
		return srv_send_error(x->c, x->r, 400, "bad_parameter", "'categories' is longer than 4000 bytes");
	if (cap_provider_count(x->s->cap) >= CAP_MAX_PROVIDERS)
		return srv_send_error(x->c, x->r, 503, "too_many_providers",
				      "this server has as many providers connected as it takes (100)");
	if ((resp = MHD_create_response_for_upgrade(on_upgraded, x->s)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "fxt-provider/1");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	ret = MHD_queue_response(x->c, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
	MHD_destroy_response(resp);
	x->r->status = 101;
	return ret;
}
