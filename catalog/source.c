/*
 * A trace's source, the bytes uploaded. It is kept as it came ("source")
 * while it is ingested or streamed, and compressed with zstd
 * ("source.zst") once an ingest of it ended well: after that it is read
 * only to be downloaded (GET .../file) or ingested again (a newer schema),
 * and on make bench's archive it was more than a third of what the
 * library kept of the trace.
 *
 * The file's name says which it is, never its bytes: an upload that is
 * itself a zstd file is served as uploaded, and a library written before
 * (every source raw) is read as it is. A compressed source is one zstd
 * frame that records its content size (the download's Content-Length) and
 * a checksum of the content (a damaged file fails its download rather than
 * giving other bytes).
 *
 * Compression runs once the trace is ready, on the worker, before it
 * takes the next ingest (cat_source_compress; worker.c), in a process of
 * its own as the ingest did (the server keeps none of its memory), and for ready
 * traces whose source is still as uploaded (an older server's library, a
 * compression a stop cut short) whenever the worker is idle. Not beside
 * the ingest: it would take CPU from it (on a 2-core machine shared with
 * another build, uploads were ready 35% later). Its result is put in the
 * store (synced to the disk first) before the raw file is dropped: a
 * reader that finds no "source" finds "source.zst", and one that opened
 * "source" before the drop reads it to its end (POSIX keeps the inode).
 * Ingest reads a file at a path, so a compressed source is first
 * decompressed back to "source" for it (cat_source_restore) and that
 * copy is dropped after.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "catalog_internal.h"

/* On make bench's FXT archive, of one core: level 5, about 70 MB/s, to
 * 0.384 of its size; level 3 (zstd's default), 156 MB/s, 0.41; level 6,
 * 45 MB/s, 0.382; level 1, 240 MB/s, 0.44. Level 5 saves that trace 1.1 MB
 * of its 2x budget (issue 43) for about 0.3 s more once it is ready. */
enum { SOURCE_LEVEL = 5 };
/* The most bytes a frame's header takes (zstd.h's ZSTD_FRAMEHEADERSIZE_MAX,
 * which it declares for static linking only). */
enum { FRAME_HEADER_MAX = 18 };

struct cat_source {
	int fd;             /* "source" (read as it is) or "source.zst"; -1 once taken */
	ZSTD_DCtx *dc;      /* NULL: fd is the source as uploaded */
	uint64_t size;      /* the bytes as uploaded; UINT64_MAX when a frame does not say */
	uint64_t given;     /* bytes cat_source_read gave: the end is checked against size */
	uint8_t *buf;       /* bytes read from fd, in.size of them, in.pos decompressed */
	ZSTD_inBuffer in;   /* in.src is buf */
	size_t bufmax;      /* ZSTD_DStreamInSize() */
	size_t left;        /* ZSTD_decompressStream's last hint: 0 at the end of a frame */
	int eof;            /* fd read to its end */
};

/* Writes all n bytes of p to fd; 0, or -1 with errno. */
static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, b, n)) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- compressing ------------------------------------------------------- */

/* Compresses what is in `in` (flushing and ending the frame when end is
 * set) into out; 0, or CAT_EFAIL with err. */
static int squeeze_block(ZSTD_CCtx *cc, ZSTD_inBuffer *in, int end, uint8_t *ob, size_t obmax, int out, char *err,
			 size_t errlen)
{
	size_t rem;

	do {
		ZSTD_outBuffer o = { ob, obmax, 0 };

		rem = ZSTD_compressStream2(cc, &o, in, end ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(rem)) {
			snprintf(err, errlen, "compressing: %s", ZSTD_getErrorName(rem));
			return CAT_EFAIL;
		}
		if (write_all(out, ob, o.pos) != 0) {
			snprintf(err, errlen, "writing the compressed source: %s", strerror(errno));
			return CAT_EFAIL;
		}
	} while (end ? rem != 0 : in->pos < in->size);
	return 0;
}

/*
 * Compresses the size bytes of file descriptor in into out as one zstd
 * frame. 0, or CAT_EFAIL with a sentence in err: a read or write that failed, a
 * file whose size is not size (it changed under us), or stop (when not
 * NULL) said to stop, asked before each block.
 */
static int squeeze(int in, int out, uint64_t size, int (*stop)(void *), void *ctx, char *err, size_t errlen)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t ibmax = ZSTD_CStreamInSize(), obmax = ZSTD_CStreamOutSize();
	uint8_t *ib = malloc(ibmax), *ob = malloc(obmax);
	ZSTD_inBuffer ibuf;
	int rc = CAT_EFAIL;
	ssize_t n;

	snprintf(err, errlen, "out of memory");
	if (cc == NULL || ib == NULL || ob == NULL)
		goto out_free;
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, SOURCE_LEVEL);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setPledgedSrcSize(cc, size);
	do {
		if (stop && stop(ctx)) {
			snprintf(err, errlen, "stopped");
			goto out_free;
		}
		while ((n = read(in, ib, ibmax)) < 0 && errno == EINTR)
			;
		if (n < 0) {
			snprintf(err, errlen, "reading the source: %s", strerror(errno));
			goto out_free;
		}
		ibuf = (ZSTD_inBuffer){ ib, (size_t)n, 0 };
		if (squeeze_block(cc, &ibuf, n == 0, ob, obmax, out, err, errlen) != 0)
			goto out_free;
	} while (n > 0);
	rc = 0;
out_free:
	free(ob);
	free(ib);
	ZSTD_freeCCtx(cc);
	return rc;
}

/*
 * Compresses the file at from into a new file in the spool directory
 * (named in spool, n bytes), synced to the disk. 0, or CAT_EFAIL with err (no file
 * is left then). *in_bytes and *out_bytes get the two sizes.
 */
/*
 * Compresses in, from its start, into out and syncs out: the part of a
 * compression both sides share (cat_source_compress_file in this
 * process, cat_source_child_main in a child). 0, or CAT_EFAIL with err.
 */
static int compress_fd(int in, int out, const char *out_name, int (*stop)(void *), void *ctx, uint64_t *in_bytes,
		       uint64_t *out_bytes, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(in, &st) != 0) {
		snprintf(err, errlen, "the source: %s", strerror(errno));
		return CAT_EFAIL;
	}
	posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (squeeze(in, out, (uint64_t)st.st_size, stop, ctx, err, errlen) != 0)
		return CAT_EFAIL;
	if (fdatasync(out) != 0 || fstat(out, &st) != 0) {
		snprintf(err, errlen, "%s: %s", out_name, strerror(errno));
		return CAT_EFAIL;
	}
	*in_bytes = (uint64_t)lseek(in, 0, SEEK_CUR);
	*out_bytes = (uint64_t)st.st_size;
	return 0;
}

/* Makes a new file in spool_dir, its name in spool; its descriptor, or -1
 * with err (spool then ""). */
static int spool_make(const char *spool_dir, char *spool, size_t n, char *err, size_t errlen)
{
	int fd;

	snprintf(spool, n, "%s/source-XXXXXX", spool_dir);
	if ((fd = mkostemp(spool, O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", spool, strerror(errno));
		spool[0] = '\0';
	}
	return fd;
}

int cat_source_compress_file(const char *from, const char *spool_dir, char *spool, size_t n, int (*stop)(void *),
			     void *ctx, uint64_t *in_bytes, uint64_t *out_bytes, char *err, size_t errlen)
{
	int in, out = -1, rc = CAT_EFAIL;

	spool[0] = '\0';
	if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "%s: %s", from, strerror(errno));
		goto out_close;
	}
	if ((out = spool_make(spool_dir, spool, n, err, errlen)) < 0)
		goto out_close;
	rc = compress_fd(in, out, spool, stop, ctx, in_bytes, out_bytes, err, errlen);
out_close:
	if (out >= 0 && close(out) != 0 && rc == 0) {
		snprintf(err, errlen, "%s: %s", spool, strerror(errno));
		rc = CAT_EFAIL;
	}
	if (rc != 0 && spool[0]) {
		unlink(spool);
		spool[0] = '\0';
	}
	if (in >= 0)
		close(in);
	return rc;
}

/*
 * The child's side of compress_apart: "<exe> source-child FROM SPOOL"
 * compresses FROM into the existing file SPOOL and says on standard
 * output "ok <in bytes> <out bytes>" or "error <sentence>".
 */
int cat_source_child_main(int argc, char **argv)
{
	char err[4608]; /* a path and why */
	uint64_t in_bytes = 0, out_bytes = 0;
	int in = -1, out = -1, rc = CAT_EFAIL;

	if (argc != 4) {
		fprintf(stderr, "usage: trace-server source-child FROM SPOOL (the server runs it)\n");
		return 2;
	}
	if ((in = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0)
		snprintf(err, sizeof(err), "%s: %s", argv[2], strerror(errno));
	else if ((out = open(argv[3], O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
		snprintf(err, sizeof(err), "%s: %s", argv[3], strerror(errno));
	else
		rc = compress_fd(in, out, argv[3], NULL, NULL, &in_bytes, &out_bytes, err, sizeof(err));
	if (out >= 0 && close(out) != 0 && rc == 0) {
		snprintf(err, sizeof(err), "%s: %s", argv[3], strerror(errno));
		rc = CAT_EFAIL;
	}
	if (in >= 0)
		close(in);
	err[strcspn(err, "\n")] = '\0';
	if (rc == 0)
		printf("ok %" PRIu64 " %" PRIu64 "\n", in_bytes, out_bytes);
	else
		printf("error %s\n", err);
	return fflush(stdout) == 0 && rc == 0 ? 0 : 1;
}

/*
 * cat_source_compress_file in a process of its own ("<exe> source-child",
 * exe NULL: in this one), so that the server keeps nothing of it: zstd's
 * code and its context's memory stay out of the server's resident size
 * (bench-large measures it before an upload and after). A stop kills it.
 */
static int compress_apart(const char *exe, const char *from, const char *spool_dir, char *spool, size_t n,
			  int (*stop)(void *), void *ctx, uint64_t *in_bytes, uint64_t *out_bytes, char *err,
			  size_t errlen)
{
	static char arg1[] = "source-child";
	char exe_buf[4096], from_buf[4096], said[600], *argv[] = { exe_buf, arg1, from_buf, spool, NULL };
	int fd, status = 0, rc = CAT_EFAIL, ran;

	if (exe == NULL)
		return cat_source_compress_file(from, spool_dir, spool, n, stop, ctx, in_bytes, out_bytes, err, errlen);
	if ((size_t)snprintf(exe_buf, sizeof(exe_buf), "%s", exe) >= sizeof(exe_buf) ||
	    (size_t)snprintf(from_buf, sizeof(from_buf), "%s", from) >= sizeof(from_buf)) {
		snprintf(err, errlen, "a path is too long");
		spool[0] = '\0';
		return CAT_EFAIL;
	}
	if ((fd = spool_make(spool_dir, spool, n, err, errlen)) < 0)
		return CAT_EFAIL;
	close(fd);
	ran = run_apart(exe, argv, stop, ctx, said, sizeof(said), &status);
	said[strcspn(said, "\n")] = '\0';
	if (ran < 0)
		snprintf(err, errlen, "cannot start the compression: %s", strerror(errno));
	else if (ran == 1)
		snprintf(err, errlen, "stopped");
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		 sscanf(said, "ok %" SCNu64 " %" SCNu64, in_bytes, out_bytes) == 2)
		rc = 0;
	else if (strncmp(said, "error ", 6) == 0)
		snprintf(err, errlen, "%s", said + 6);
	else if (WIFSIGNALED(status))
		snprintf(err, errlen, "the compressing process ended by signal %d", WTERMSIG(status));
	else
		snprintf(err, errlen, "the compressing process ended without a result (status %d)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	if (rc != 0) {
		unlink(spool);
		spool[0] = '\0';
	}
	return rc;
}

/* What cat_source_compress asks before each block: whether the catalog
 * stops or the trace was deleted. */
struct keep_job {
	struct catalog *c;
	int64_t id;
};

static int keep_stop(void *ctx)
{
	struct keep_job *k = ctx;
	int stop;

	pthread_mutex_lock(&k->c->mu);
	stop = k->c->stop || cat_find(k->c, k->id) == NULL;
	pthread_mutex_unlock(&k->c->mu);
	return stop;
}

/* Compresses trace id's "source" (at its local path) into the store as
 * "source.zst"; 0, or CAT_EFAIL with err (the source stays as it is). */
static int keep_compressed(struct catalog *c, int64_t id, char *err, size_t errlen)
{
	struct keep_job k = { c, id };
	char src[4096], dir[4096], spool[4200];
	uint64_t in = 0, out = 0;
	int64_t t0 = cat_now_ms();

	cat_path(c, id, "source", src, sizeof(src));
	cat_spool_dir(c, dir, sizeof(dir));
	if (compress_apart(c->o.ingest_exe, src, dir, spool, sizeof(spool), keep_stop, &k, &in, &out, err, errlen) !=
	    0)
		return CAT_EFAIL;
	if (c->store.ops->put(&c->store, id, "source.zst", spool, err, errlen) != 0) {
		unlink(spool);
		return CAT_EFAIL;
	}
	fprintf(stderr, "trace-server: trace %" PRId64 "'s source kept compressed: %.1f MB to %.1f MB (%.2f) in %.2f s\n",
		id, (double)in / 1e6, (double)out / 1e6, in ? (double)out / (double)in : 1.0,
		(double)(cat_now_ms() - t0) / 1e3);
	return 0;
}

int cat_source_compress(struct catalog *c, int64_t id, int restored)
{
	char err[4608]; /* a spool path (4200 bytes) and why */
	int zst = restored, gone;

	/* already kept compressed (a restored copy, or a put whose raw file a
	 * stop left behind); a store that cannot tell now is left alone */
	if (!zst && (zst = c->store.ops->has(&c->store, id, "source.zst")) == 0) {
		if (keep_compressed(c, id, err, sizeof(err)) == 0)
			zst = 1;
		else if (!keep_stop(&(struct keep_job){ c, id }))
			fprintf(stderr, "trace-server: trace %" PRId64 "'s source stays uncompressed: %s\n", id, err);
	}
	if (zst == 1 && c->store.ops->drop(&c->store, id, "source", err, sizeof(err)) != 0)
		fprintf(stderr, "trace-server: trace %" PRId64 "'s uncompressed source stays in the store: %s\n", id, err);
	/* deleted meanwhile: the put may have made its directory again */
	pthread_mutex_lock(&c->mu);
	gone = cat_find(c, id) == NULL;
	pthread_mutex_unlock(&c->mu);
	if (gone)
		c->store.ops->remove(&c->store, id);
	return zst == 1 && !gone;
}

void cat_source_drop_copy(struct catalog *c, int64_t id)
{
	char err[512];

	if (c->store.ops->drop(&c->store, id, "source", err, sizeof(err)) != 0)
		fprintf(stderr, "trace-server: trace %" PRId64 "'s restored source stays: %s\n", id, err);
}

/* ---- reading ------------------------------------------------------------ */

/* A reader of fd, compressed (zst) or not; NULL when out of memory or when
 * a compressed file does not start with a zstd frame (err says which). The
 * reader owns fd from here, also when NULL is returned. */
static struct cat_source *source_of(int fd, int zst, char *err, size_t errlen)
{
	struct cat_source *s = calloc(1, sizeof(*s));
	uint8_t head[FRAME_HEADER_MAX];
	unsigned long long size;
	struct stat st;
	ssize_t n;

	if (s == NULL || fstat(fd, &st) != 0)
		goto out_fail;
	s->fd = fd;
	s->size = (uint64_t)st.st_size;
	if (!zst)
		return s;
	n = pread(fd, head, sizeof(head), 0);
	size = n > 0 ? ZSTD_getFrameContentSize(head, (size_t)n) : ZSTD_CONTENTSIZE_ERROR;
	if (size == ZSTD_CONTENTSIZE_ERROR) {
		snprintf(err, errlen, "the trace's compressed source is not a zstd frame");
		goto out_fail;
	}
	s->size = size == ZSTD_CONTENTSIZE_UNKNOWN ? UINT64_MAX : (uint64_t)size;
	s->bufmax = ZSTD_DStreamInSize();
	if ((s->dc = ZSTD_createDCtx()) == NULL || (s->buf = malloc(s->bufmax)) == NULL)
		goto out_fail;
	s->in.src = s->buf;
	s->left = 1;
	return s;
out_fail:
	if (err[0] == '\0')
		snprintf(err, errlen, "out of memory");
	close(fd);
	if (s) {
		ZSTD_freeDCtx(s->dc);
		free(s);
	}
	return NULL;
}

struct cat_source *cat_source_open_file(const char *path, int zst, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	err[0] = '\0';
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	return source_of(fd, zst, err, errlen);
}

struct cat_source *cat_source_open(struct catalog *c, int64_t id, int *rc, char *err, size_t errlen)
{
	/* "source.zst" first: a ready trace's, the most read (with a shared
	 * store a miss costs a request). "source" is dropped only after
	 * "source.zst" is put, so one found missing both times was compressed
	 * in between: the third look finds it. */
	static const char *const names[] = { "source.zst", "source", "source.zst" };
	char path[4096];
	int i, f, fd, down = 0;

	for (i = 0; i < 3; i++) {
		if ((f = cat_fetch(c, id, names[i], err, errlen)) != 0) {
			down |= f == CAT_ESTOREDOWN;
			continue;
		}
		cat_path(c, id, names[i], path, sizeof(path));
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno == ENOENT)
			continue; /* dropped since the fetch */
		err[0] = '\0';
		if (fd < 0)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		*rc = CAT_EFAIL;
		return fd < 0 ? NULL : source_of(fd, i != 1, err, errlen);
	}
	*rc = down ? CAT_ESTOREDOWN : CAT_ENOFILE;
	return NULL;
}

uint64_t cat_source_size(const struct cat_source *s)
{
	return s->size;
}

int cat_source_take_fd(struct cat_source *s)
{
	int fd = s->fd;

	if (s->dc)
		return -1;
	s->fd = -1;
	return fd;
}

/* Reads more of the compressed file into buf; 0, or -1 on a read error. */
static int source_fill(struct cat_source *s)
{
	ssize_t n;

	while ((n = read(s->fd, s->buf, s->bufmax)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	s->in.size = (size_t)n;
	s->in.pos = 0;
	s->eof = n == 0;
	return 0;
}

/* Whether the bytes in o (o.pos of them) may be given now: some are there,
 * and when they are the source's last, its frame has ended well (its
 * checksum checked), so that a download never ends complete with bytes
 * that are not the source's. */
static int source_may_give(const struct cat_source *s, const ZSTD_outBuffer *o)
{
	return o->pos > 0 && (s->left == 0 || s->size == UINT64_MAX || s->given + o->pos < s->size);
}

long cat_source_read(struct cat_source *s, void *buf, size_t n)
{
	ZSTD_outBuffer o = { buf, n, 0 };
	ssize_t r;

	if (s->dc == NULL) {
		while ((r = read(s->fd, buf, n)) < 0 && errno == EINTR)
			;
		return (long)r;
	}
	if (n == 0)
		return 0;
	while (!source_may_give(s, &o)) {
		if (s->in.pos == s->in.size && !s->eof && source_fill(s) != 0)
			return -1;
		if (s->in.pos == s->in.size && s->eof) /* the end: a whole frame, and every byte it said it held */
			return o.pos == 0 && s->left == 0 && (s->size == UINT64_MAX || s->given == s->size) ? 0 : -1;
		s->left = ZSTD_decompressStream(s->dc, &o, &s->in);
		if (ZSTD_isError(s->left))
			return -1;
	}
	if (s->size != UINT64_MAX && s->given + o.pos > s->size)
		return -1; /* more than the frame said it held */
	s->given += o.pos;
	return (long)o.pos;
}

void cat_source_close(struct cat_source *s)
{
	if (s == NULL)
		return;
	if (s->fd >= 0)
		close(s->fd);
	ZSTD_freeDCtx(s->dc);
	free(s->buf);
	free(s);
}

/* ---- for ingest ---------------------------------------------------------- */

/* Decompresses src into a new file at spool, synced to the disk; 0, or
 * CAT_EFAIL with err (spool removed). */
static int unsqueeze(struct cat_source *src, const char *spool, char *err, size_t errlen)
{
	size_t bufmax = ZSTD_DStreamOutSize();
	uint8_t *buf = malloc(bufmax);
	int out = open(spool, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = CAT_EFAIL;
	long n;

	if (buf == NULL || out < 0) {
		snprintf(err, errlen, "%s: %s", spool, buf ? strerror(errno) : "out of memory");
		goto out_close;
	}
	while ((n = cat_source_read(src, buf, bufmax)) > 0)
		if (write_all(out, buf, (size_t)n) != 0)
			break;
	if (n < 0) {
		snprintf(err, errlen, "the trace's compressed source is damaged");
		goto out_close;
	}
	if (n > 0 || fdatasync(out) != 0) {
		snprintf(err, errlen, "%s: %s", spool, strerror(errno));
		goto out_close;
	}
	rc = 0;
out_close:
	if (out >= 0 && close(out) != 0)
		rc = CAT_EFAIL;
	if (rc != 0)
		unlink(spool);
	free(buf);
	return rc;
}

int cat_source_restore(struct catalog *c, int64_t id, int *restored, char *err, size_t errlen)
{
	char dir[4096], spool[4200], path[4096];
	struct cat_source *s;
	int f;

	*restored = 0;
	if ((f = cat_fetch(c, id, "source", err, errlen)) != CAT_ENOFILE ||
	    (f = cat_fetch(c, id, "source.zst", err, errlen)) != 0)
		return f;
	cat_path(c, id, "source.zst", path, sizeof(path));
	if ((s = cat_source_open_file(path, 1, err, errlen)) == NULL)
		return CAT_EFAIL;
	cat_spool_dir(c, dir, sizeof(dir));
	snprintf(spool, sizeof(spool), "%s/restore-%" PRId64, dir, id);
	f = unsqueeze(s, spool, err, errlen);
	cat_source_close(s);
	if (f != 0)
		return CAT_EFAIL;
	cat_path(c, id, "source", path, sizeof(path));
	if (rename(spool, path) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(spool);
		return CAT_EFAIL;
	}
	*restored = 1;
	return 0;
}

int cat_source_has(struct catalog *c, int64_t id)
{
	int raw = c->store.ops->has(&c->store, id, "source");

	if (raw == 1 || c->store.ops->has(&c->store, id, "source.zst") == 1)
		return 1;
	return raw == STORAGE_EDOWN ? CAT_ESTOREDOWN : 0;
}
