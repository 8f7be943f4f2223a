/*
 * Options of `trace-server serve`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static const char usage_text[] =
	"usage: trace-server serve [options]\n"
	"  --port N           TCP port (default 8080; 0 picks a free one)\n"
	"  --bind ADDR        address to listen on (default 127.0.0.1)\n"
	"  --data DIR         where traces (and, without --catalog, the catalog) live (default ./data)\n"
	"  --catalog URL      keep the catalog in PostgreSQL, shared with other servers:\n"
	"                     postgres://user@host:port/db (a password comes from PGPASSWORD\n"
	"                     or ~/.pgpass, never the command line; default: DIR/catalog.db)\n"
	"  --store URL        keep the traces' files in an S3-compatible store instead of under\n"
	"                     --data: s3://bucket/prefix?endpoint=http://host:port&region=R;\n"
	"                     keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and\n"
	"                     AWS_SESSION_TOKEN), never from the command line\n"
	"  --cache-dir DIR    with --store: local copies of the files (default DATA/cache)\n"
	"  --cache-max SIZE   with --store: the cache's bound, e.g. 20G; least recently used\n"
	"                     files go first (default: no bound)\n"
	"  --store-part-size SIZE  with --store: files larger than SIZE go up as a multipart\n"
	"                     upload in parts of SIZE (default 8M; from 64K; AWS S3 wants 5M at least)\n"
	"  --token-file F     require 'Authorization: Bearer <token>' on /api, token read from F\n"
	"  --max-upload SIZE  largest upload, e.g. 512M, 4G (default 2G)\n"
	"  --static DIR       the viewer's files (default ./static or PREFIX/share/trace-server/static)\n"
	"  --threads N        HTTP worker threads (default: four per core, at least 8)\n"
	"  --demo FILE        add FILE as trace \"demo\" when the library is empty\n"
	"  --keep-failed AGE  remove failed uploads this old: 90s, 30m, 12h, 7d (default 1d)\n"
	"  --retain-days N    remove unpinned traces uploaded N days ago or more (default: keep)\n"
	"  --retain-bytes SIZE  remove the oldest unpinned traces while the library holds more,\n"
	"                     e.g. 50G (default: no bound)\n"
	"  --live-pause MS    once a live FXT stream has sent nothing for MS milliseconds, it equals\n"
	"                     a file of every byte received (default 300; 0: never)\n"
	"  --preview-min SIZE an FXT upload of SIZE or more grows in place while it is ingested,\n"
	"                     readable from its first byte meanwhile (default 64M; 0: never)\n"
	"  --live-window SIZE accepted and ignored: live traces have no window since they grow\n"
	"                     in place (kept so that older command lines still start)\n"
	"  --insecure-public  allow a non-loopback --bind without a token\n"
	"  --help             this text\n";

/* Parses 123, 64K, 512M, 4G; 0 on success. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end != '\0')
		return -1;
	if (shift && end[1] != '\0' && strcmp(end + 1, "B") != 0 && strcmp(end + 1, "iB") != 0)
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Parses an age: 90, 90s, 30m, 12h, 7d into seconds; 0 on success. */
static int parse_age(const char *s, int64_t *out)
{
	char *end;
	unsigned long long v;
	int64_t unit = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'm')
		unit = 60;
	else if (*end == 'h')
		unit = 3600;
	else if (*end == 'd')
		unit = 86400;
	else if (*end != 's' && *end != '\0')
		return -1;
	if (*end != '\0' && end[1] != '\0')
		return -1;
	if (v > (unsigned long long)(INT64_MAX / 86400) / 1000)
		return -1;
	*out = (int64_t)v * unit;
	return 0;
}

/*
 * 0 when s is a postgres:// or postgresql:// URL without a password: one
 * given on the command line would show in ps and in shell histories, and
 * libpq reads PGPASSWORD (or ~/.pgpass) by itself.
 */
int srv_catalog_url_ok(const char *s)
{
	const char *auth, *end, *at;

	if (strncmp(s, "postgres://", 11) == 0)
		auth = s + 11;
	else if (strncmp(s, "postgresql://", 13) == 0)
		auth = s + 13;
	else
		return -1;
	end = auth + strcspn(auth, "/?");
	at = memchr(auth, '@', (size_t)(end - auth));
	if (at && memchr(auth, ':', (size_t)(at - auth)))
		return -1;
	return strstr(s, "password=") ? -1 : 0;
}

static int bad(const char *what, const char *value)
{
	fprintf(stderr, "trace-server serve: bad %s '%s'\n%s", what, value ? value : "", usage_text);
	return 2;
}

int srv_parse_args(int argc, char **argv, struct srv_opts *o)
{
	int i;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->port = 8080;
	o->bind = "127.0.0.1";
	o->data_dir = "./data";
	o->max_upload = UINT64_C(2) << 30;
	o->keep_failed = 86400;
	o->preview_min = UINT64_C(64) << 20;
	o->live_pause_ms = 300;
	for (i = 2; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			return 1;
		}
		if (strcmp(a, "--insecure-public") == 0) {
			o->insecure_public = 1;
			continue;
		}
		if (val == NULL)
			return bad("option (it needs a value)", a);
		i++;
		if (strcmp(a, "--port") == 0) {
			if (parse_size(val, &v) != 0 || v > 65535 || strpbrk(val, "KkMmGg"))
				return bad("--port", val);
			o->port = (unsigned)v;
		} else if (strcmp(a, "--bind") == 0) {
			o->bind = val;
		} else if (strcmp(a, "--data") == 0) {
			o->data_dir = val;
		} else if (strcmp(a, "--catalog") == 0) {
			if (srv_catalog_url_ok(val) != 0)
				return bad("--catalog (postgres://user@host:port/db, the password in PGPASSWORD)", val);
			o->catalog = val;
		} else if (strcmp(a, "--store") == 0) {
			if (strncmp(val, "s3://", 5) != 0)
				return bad("--store (s3://bucket/prefix?endpoint=...)", val);
			o->store_url = val;
		} else if (strcmp(a, "--cache-dir") == 0) {
			o->cache_dir = val;
		} else if (strcmp(a, "--cache-max") == 0) {
			if (parse_size(val, &o->cache_max) != 0 || o->cache_max == 0)
				return bad("--cache-max", val);
		} else if (strcmp(a, "--store-part-size") == 0) {
			if (parse_size(val, &o->store_part_size) != 0 || o->store_part_size < (64 << 10) ||
			    o->store_part_size > (UINT64_C(5) << 30))
				return bad("--store-part-size (64K to 5G)", val);
		} else if (strcmp(a, "--token-file") == 0) {
			o->token_file = val;
		} else if (strcmp(a, "--static") == 0) {
			o->static_dir = val;
		} else if (strcmp(a, "--demo") == 0) {
			o->demo = val;
		} else if (strcmp(a, "--max-upload") == 0) {
			if (parse_size(val, &o->max_upload) != 0 || o->max_upload == 0)
				return bad("--max-upload", val);
		} else if (strcmp(a, "--keep-failed") == 0) {
			if (parse_age(val, &o->keep_failed) != 0)
				return bad("--keep-failed", val);
		} else if (strcmp(a, "--retain-days") == 0) {
			if (parse_size(val, &v) != 0 || v == 0 || v > 365000 || strpbrk(val, "KkMmGg"))
				return bad("--retain-days (a whole number of days from 1)", val);
			o->retain_days = (int64_t)v;
		} else if (strcmp(a, "--retain-bytes") == 0) {
			if (parse_size(val, &o->retain_bytes) != 0 || o->retain_bytes == 0)
				return bad("--retain-bytes", val);
		} else if (strcmp(a, "--live-window") == 0) { /* ignored (the help says why) */
			if (parse_size(val, &v) != 0 || v < 4096)
				return bad("--live-window (at least 4K)", val);
		} else if (strcmp(a, "--live-pause") == 0) {
			if (parse_size(val, &v) != 0 || v > 3600000 || strpbrk(val, "KkMmGg"))
				return bad("--live-pause (milliseconds, 0 to 3600000)", val);
			o->live_pause_ms = (int64_t)v;
		} else if (strcmp(a, "--preview-min") == 0) {
			if (parse_size(val, &o->preview_min) != 0)
				return bad("--preview-min", val);
		} else if (strcmp(a, "--threads") == 0) {
			if (parse_size(val, &v) != 0 || v == 0 || v > 256 || strpbrk(val, "KkMmGg"))
				return bad("--threads", val);
			o->threads = (unsigned)v;
		} else {
			return bad("option", a);
		}
	}
	if ((o->cache_dir || o->cache_max || o->store_part_size) && o->store_url == NULL)
		return bad("option (it needs --store)",
			   o->cache_dir ? "--cache-dir" : o->cache_max ? "--cache-max" : "--store-part-size");
	return 0;
}
