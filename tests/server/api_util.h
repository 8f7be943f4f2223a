/*
 * JSON requests to the server under test, for cmocka tests over loopback
 * (test_live.c, test_capture.c): the caller sets api_port (and api_log, the
 * server's log named in failures) once the server runs.
 */
#ifndef TESTS_SERVER_API_UTIL_H
#define TESTS_SERVER_API_UTIL_H

#include <stdarg.h>

#include <cjson/cJSON.h>

#include "../server_util.h"

static int api_port;
static const char *api_log = "";

__attribute__((format(printf, 3, 4))) static inline void t_fmt(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	assert_true(k >= 0 && (size_t)k < n);
}

/* The body of a reply with the expected status, as text (the caller
 * frees it): for a test that reads what JSON numbers would lose. */
static inline char *t_body(const char *method, const char *path, const char *body, int status)
{
	struct su_req q = { method, path, body ? "Content-Type: application/json\r\n" : NULL, body,
			    body ? strlen(body) : 0, 0, 0 };
	struct su_resp r;
	char *out;

	if (su_request(api_port, &q, &r, 60000) != 0)
		fail_msg("%s %s: no well-formed reply (see %s)", method, path, api_log);
	if (r.status != status)
		fail_msg("%s %s: status %d, not %d: %.400s", method, path, r.status, status, r.body ? r.body : "");
	out = strndup(r.body ? r.body : "", r.body_len);
	su_resp_free(&r);
	return out;
}

/* The JSON of a reply with the expected status (an empty body is {}). */
static inline cJSON *t_call(const char *method, const char *path, const char *body, int status)
{
	char *text = t_body(method, path, body, status);
	cJSON *j = text[0] ? cJSON_Parse(text) : cJSON_CreateObject();

	if (j == NULL)
		fail_msg("%s %s: reply is not JSON: %.200s", method, path, text);
	free(text);
	return j;
}

/* Starts `exe serve --port 0 --data data extra...` (extra NULL-ended, may be
 * NULL) with its stderr in log, and points the requests below at it. */
static inline void api_start(struct su_server *s, const char *exe, const char *data, const char *log,
			     const char *const *extra)
{
	const char *base[] = { exe, "serve", "--port", "0", "--data", data };
	char *argv[16];
	size_t n = 0, i;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		argv[n++] = strdup(base[i]);
	for (i = 0; extra && extra[i] && n < 15; i++)
		argv[n++] = strdup(extra[i]);
	argv[n] = NULL;
	if (su_server_start(s, argv, log, 30) != 0)
		fail_msg("cannot start %s (see %s)", exe, log);
	api_port = s->port;
	api_log = log;
	for (i = 0; i < n; i++)
		free(argv[i]);
}

static inline cJSON *t_get(const char *path)
{
	return t_call("GET", path, NULL, 200);
}

/* A request that must fail with status and code. */
static inline void t_error(const char *method, const char *path, const char *body, int status, const char *code)
{
	cJSON *j = t_call(method, path, body, status), *e = cJSON_GetObjectItem(j, "error");
	const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(e, "code"));

	if (c == NULL || strcmp(c, code) != 0)
		fail_msg("%s %s: error code %s, not %s", method, path, c ? c : "(none)", code);
	assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(e, "message")));
	cJSON_Delete(j);
}

static inline int64_t num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("no number %s", key);
	return (int64_t)v->valuedouble;
}

static inline const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* GET path on api_port until its status is want (and its body
 * holds needle, when given), within ms; the last status seen. */
static inline int api_get_until(const char *path, int want, int ms, const char *needle)
{
	struct su_req q = { "GET", path, NULL, NULL, 0, 0, 0 };
	struct su_resp r;
	double until = su_now() + ms / 1000.0;
	int status;

	do {
		memset(&r, 0, sizeof(r));
		status = su_request(api_port, &q, &r, 10000) == 0 ? r.status : 0;
		if (status == want && needle && (r.body == NULL || strstr(r.body, needle) == NULL))
			status = -1;
		su_resp_free(&r);
		if (status != want)
			su_sleep_ms(20);
	} while (status != want && su_now() < until);
	return status;
}

/* The value of the sample whose name and labels are exactly `series`
 * (e.g. `x_total{a="b"}`) in the /metrics text, or -1 when there is none. */
static inline double api_metric_sample(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

#endif
