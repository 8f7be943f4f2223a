/*
 * The scratch file of spill.h: made lazily with mkstemp, unlinked at once,
 * written in large pieces.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spill.h"
#include "util.h"

enum { SPILL_IO = 8 << 20 }; /* bytes a system call moves at most */

int spill_init(struct spill *sp, const char *dir, const char *what)
{
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	sp->what = what;
	return (sp->dir = strdup(dir)) != NULL ? 0 : -1;
}

/* The sentence for a failure to do something with the file. */
static void spill_sentence(const struct spill *sp, const char *doing, int err, char *out, size_t n)
{
	snprintf(out, n, "cannot %s the temporary file of %s in %s: %s", doing, sp->what, sp->dir,
		 err ? strerror(err) : "the file ended early");
}

/* Records the first failure, in a sentence; later ones keep it. */
static int spill_fail(struct spill *sp, const char *doing, int err)
{
	if (!sp->failed)
		spill_sentence(sp, doing, err, sp->why, sizeof(sp->why));
	sp->failed = 1;
	return -1;
}

int spill_tmpfile(const char *dir)
{
	char path[4096];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/.trace-spill-XXXXXX", dir) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = mkstemp(path)) >= 0)
		unlink(path); /* gone with the process, whatever happens to it */
	return fd;
}

static int spill_open(struct spill *sp)
{
	if ((sp->fd = spill_tmpfile(sp->dir)) < 0)
		return spill_fail(sp, "create", errno);
	behind_init(&sp->behind, sp->fd);
	return 0;
}

int spill_write(struct spill *sp, const void *p, size_t n, uint64_t *off)
{
	const char *q = p;
	uint64_t at = sp->len;
	ssize_t k;

	if (sp->failed || (sp->fd < 0 && spill_open(sp) != 0))
		return -1;
	while (n > 0) {
		k = pwrite(sp->fd, q, n < SPILL_IO ? n : SPILL_IO, (off_t)at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return spill_fail(sp, "write", k < 0 ? errno : ENOSPC);
		q += k;
		n -= (size_t)k;
		at += (uint64_t)k;
	}
	*off = sp->len;
	sp->len = at;
	behind_wrote(&sp->behind, at);
	return 0;
}

/* Reads n bytes at off: 0, or an errno (0 standing for the file's end
 * coming first is given as -1). */
static int read_all(int fd, char *q, size_t n, uint64_t off)
{
	ssize_t k;

	while (n > 0) {
		k = pread(fd, q, n < SPILL_IO ? n : SPILL_IO, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? errno : -1;
		q += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int spill_read(struct spill *sp, void *p, size_t n, uint64_t off)
{
	int err;

	if (sp->failed)
		return -1;
	if ((err = read_all(sp->fd, p, n, off)) != 0)
		return spill_fail(sp, "read back", err > 0 ? err : 0);
	behind_forget_read(sp->fd, off, off + n); /* read once: its pages are done with */
	return 0;
}

int spill_read_apart(const struct spill *sp, void *p, size_t n, uint64_t off, char *why, size_t whylen)
{
	int err = read_all(sp->fd, p, n, off);

	if (err != 0)
		spill_sentence(sp, "read back", err > 0 ? err : 0, why, whylen);
	else
		behind_forget_read(sp->fd, off, off + n);
	return err != 0 ? -1 : 0;
}

void spill_fail_apart(struct spill *sp, const char *why)
{
	if (sp->failed)
		return;
	sp->failed = 1;
	snprintf(sp->why, sizeof(sp->why), "%s", why);
}

/*
 * Closing the last descriptor of the unlinked file frees its blocks, which
 * the file system does there and then: 0.74 s for the 1.2 GB of scratch a
 * 1 GB archive makes, after the ingest's work is done and before its
 * database is renamed into place. A large file is closed on a detached
 * thread instead (the process's exit closes it at the latest); a small one,
 * or when no thread can be made, at once.
 */
enum { SPILL_CLOSE_APART = 64 << 20 };

static void *close_main(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

static void close_scratch(int fd, uint64_t len)
{
	if (len < SPILL_CLOSE_APART || run_detached(close_main, (void *)(intptr_t)fd) != 0)
		close(fd);
}

void spill_fini(struct spill *sp)
{
	if (sp->fd >= 0)
		close_scratch(sp->fd, sp->len);
	free(sp->dir);
	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
}
