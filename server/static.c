/*
 * The viewer's static files, served from --static through plain names
 * only, with ETags.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_internal.h"

/* ---- static files ---------------------------------------------------------- */

static const char *mime_type(const char *path)
{
	static const char *const map[][2] = {
		{ ".html", "text/html; charset=utf-8" },  { ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },    { ".svg", "image/svg+xml" },
		{ ".png", "image/png" },                  { ".ico", "image/x-icon" },
		{ ".json", "application/json" },          { ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(path, '.');
	size_t i;

	for (i = 0; dot && i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(dot, map[i][0]) == 0)
			return map[i][1];
	return "application/octet-stream";
}

/* A request path is served only if it names a regular file inside the
 * static directory through plain names: letters, digits, '-', '_', '.', one
 * '/' between names, and no name starting with '.'. */
static int static_path_ok(const char *p)
{
	const char *q;

	if (*p == '\0' || strlen(p) > 200)
		return 0;
	for (q = p; *q; q++) {
		int ok = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '-' ||
			 *q == '_' || *q == '.' || *q == '/';

		if (!ok || (*q == '/' && q[1] == '/') || ((q == p || q[-1] == '/') && (*q == '.' || *q == '/')))
			return 0;
	}
	return q[-1] != '/';
}

/* Opens rel (a path static_path_ok accepted) inside dir, following no
 * symbolic link on the way: a link anywhere in rel is "not found". */
static int open_beneath(const char *dir, const char *rel)
{
	char part[256];
	const char *p = rel, *slash;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), next;

	while (fd >= 0 && (slash = strchr(p, '/')) != NULL) {
		snprintf(part, sizeof(part), "%.*s", (int)(slash - p), p);
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		p = slash + 1;
	}
	if (fd < 0)
		return -1;
	next = openat(fd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	return next;
}

enum MHD_Result srv_static(struct server *s, struct MHD_Connection *c, struct req *r, const char *url,
				    const char *method)
{
	const char *rel = strcmp(url, "/") == 0 ? "index.html" : url + 1;
	const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	char path[4700], etag[64];
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct stat st;
	int fd;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return srv_method_not_allowed(c, r, method);
	snprintf(path, sizeof(path), "%s/%s", s->static_dir, rel);
	if (!static_path_ok(rel) || (fd = open_beneath(s->static_dir, rel)) < 0)
		return srv_send_error(c, r, 404, "not_found", "there is no such page");
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return srv_send_error(c, r, 404, "not_found", "there is no such page");
	}
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_mtime,
		 (unsigned long long)st.st_size);
	if (inm && strcmp(inm, etag) == 0) {
		close(fd);
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		r->status = 304;
	} else {
		resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
		r->status = 200;
		r->bytes = (size_t)st.st_size;
	}
	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", mime_type(rel));
	MHD_add_response_header(resp, "ETag", etag);
	MHD_add_response_header(resp, "Cache-Control", "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'");
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

