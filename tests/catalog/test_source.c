/*
 * Unit tests of catalog/source.c's files, without a catalog: a source
 * compressed and read back gives its bytes exactly, whatever its size
 * against zstd's blocks and whatever the reads' sizes; a source kept as
 * uploaded is handed over as its descriptor; a damaged or cut compressed
 * file fails its read instead of giving other bytes; a frame that does not
 * record its size is still read; a compression told to stop leaves no
 * file. The server's side (kept compressed once ready, downloaded,
 * restored for a new ingest) is tests/server/test_disk.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>

#include "../../catalog/source.c"
#include "../xorshift.h"

static char dir[64];

/* size bytes of a source, half text that repeats, half noise, as a trace is. */
static uint8_t *pattern(size_t size, uint64_t seed)
{
	uint8_t *p = malloc(size ? size : 1);
	size_t i;

	assert_non_null(p);
	for (i = 0; i < size; i++)
		p[i] = (i / 4096) % 2 ? (uint8_t)xorshift64(&seed) : (uint8_t)"thread-state:running "[i % 21];
	return p;
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, p, n), 0);
	assert_int_equal(close(fd), 0);
}

/* Reads s to its end in reads of step bytes; what it gave (caller frees),
 * *n its length; the last read's result in *last (0 at a clean end). */
static uint8_t *read_all(struct cat_source *s, size_t step, size_t *n, long *last)
{
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	long k;

	*n = 0;
	for (;;) {
		while (*n + step > cap)
			assert_non_null(out = realloc(out, cap *= 2));
		if ((k = cat_source_read(s, out + *n, step)) <= 0)
			break;
		assert_true((size_t)k <= step);
		*n += (size_t)k;
	}
	*last = k;
	return out;
}

/* Compresses p (size bytes) through a file; the compressed file's path in zst. */
static void squeeze_to(const uint8_t *p, size_t size, char *zst, size_t n)
{
	char src[128], err[256];
	uint64_t in = 0, out = 0;

	snprintf(src, sizeof(src), "%s/source", dir);
	write_file(src, p, size);
	assert_int_equal(cat_source_compress_file(src, dir, zst, n, NULL, NULL, &in, &out, err, sizeof(err)), 0);
	assert_int_equal(in, size);
	assert_true(out > 0);
	unlink(src);
}

/* Every size around zstd's block of input (ZSTD_CStreamInSize, 128 KiB),
 * read back in reads of 1, 7 and 64 KiB bytes: the same bytes, then 0. */
static void test_round_trip(void **state)
{
	const size_t block = ZSTD_CStreamInSize();
	const size_t sizes[] = { 0, 1, 4095, block - 1, block, block + 1, 3 * block, 5u << 20 };
	const size_t steps[] = { 1, 7, 65536 };
	char zst[4200], err[256];
	size_t i, k, n;
	long last;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = pattern(sizes[i], i + 1);

		squeeze_to(p, sizes[i], zst, sizeof(zst));
		for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
			struct cat_source *s;
			uint8_t *got;

			if (steps[k] == 1 && sizes[i] > block + 1)
				continue; /* a byte at a time: long enough on the small ones */
			assert_non_null(s = cat_source_open_file(zst, 1, err, sizeof(err)));
			assert_int_equal(cat_source_size(s), sizes[i]);
			assert_int_equal(cat_source_take_fd(s), -1); /* compressed: read through */
			got = read_all(s, steps[k], &n, &last);
			if (last != 0 || n != sizes[i] || (n && memcmp(got, p, n) != 0))
				fail_msg("size %zu in reads of %zu: %zu bytes, last read %ld", sizes[i], steps[k], n,
					 last);
			assert_int_equal(cat_source_read(s, got, 1), 0); /* the end stays the end */
			free(got);
			cat_source_close(s);
		}
		unlink(zst);
		free(p);
	}
}

/* A source kept as uploaded is its descriptor, at offset 0, with its size;
 * a missing one says so. */
static void test_raw(void **state)
{
	uint8_t *p = pattern(10000, 3), buf[10001];
	char path[128], err[256];
	struct cat_source *s;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/raw", dir);
	write_file(path, p, 10000);
	assert_non_null(s = cat_source_open_file(path, 0, err, sizeof(err)));
	assert_int_equal(cat_source_size(s), 10000);
	fd = cat_source_take_fd(s);
	assert_true(fd >= 0);
	cat_source_close(s); /* the descriptor is the caller's now */
	assert_int_equal(read(fd, buf, sizeof(buf)), 10000);
	assert_memory_equal(buf, p, 10000);
	close(fd);
	unlink(path);
	assert_null(cat_source_open_file(path, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "No such file"));
	free(p);
}

/* A byte changed in the middle, the last bytes cut, a file that is no
 * zstd frame: never the whole source followed by a clean end. */
static void test_damaged(void **state)
{
	const size_t size = 1u << 20;
	uint8_t *p = pattern(size, 5), *z, *got;
	char zst[4200], err[256];
	struct cat_source *s;
	struct stat st;
	size_t n, zn;
	long last;
	int fd, k;

	(void)state;
	squeeze_to(p, size, zst, sizeof(zst));
	assert_int_equal(stat(zst, &st), 0);
	zn = (size_t)st.st_size;
	assert_non_null(z = malloc(zn));
	fd = open(zst, O_RDONLY);
	assert_int_equal(read(fd, z, zn), (ssize_t)zn);
	close(fd);
	for (k = 0; k < 2; k++) {
		if (k == 0) {
			z[zn / 2] ^= 0x40;
			write_file(zst, z, zn);
			z[zn / 2] ^= 0x40;
		} else {
			write_file(zst, z, zn - 10);
		}
		assert_non_null(s = cat_source_open_file(zst, 1, err, sizeof(err)));
		got = read_all(s, 65536, &n, &last);
		/* and the source's last bytes are never given: a download of it
		 * cannot end with the length it announced */
		if (last != -1 || n >= size)
			fail_msg("%s: the read ended with %ld after %zu bytes", k ? "cut" : "changed", last, n);
		free(got);
		cat_source_close(s);
	}
	write_file(zst, "FXT? no: plain text", 19);
	assert_null(cat_source_open_file(zst, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "not a zstd frame"));
	unlink(zst);
	free(z);
	free(p);
}

/* A frame written without its size (as another tool may write one): the
 * size is unknown, the bytes are read all the same. */
static void test_unknown_size(void **state)
{
	uint8_t *p = pattern(300000, 9), *z, *got;
	size_t zn = ZSTD_compressBound(300000) + 64, n;
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_inBuffer in = { p, 300000, 0 };
	ZSTD_outBuffer out;
	char path[128], err[256];
	struct cat_source *s;
	long last;

	(void)state;
	assert_non_null(z = malloc(zn));
	out = (ZSTD_outBuffer){ z, zn, 0 };
	/* given in pieces, the frame cannot know the whole size at its start */
	while (in.pos < in.size) {
		ZSTD_inBuffer piece = { p + in.pos, in.size - in.pos < 1000 ? in.size - in.pos : 1000, 0 };

		assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &out, &piece, ZSTD_e_continue)));
		in.pos += piece.pos;
	}
	assert_int_equal(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
	ZSTD_freeCCtx(cc);
	snprintf(path, sizeof(path), "%s/unknown.zst", dir);
	write_file(path, z, out.pos);
	assert_non_null(s = cat_source_open_file(path, 1, err, sizeof(err)));
	assert_int_equal(cat_source_size(s), UINT64_MAX);
	got = read_all(s, 4096, &n, &last);
	assert_int_equal(last, 0);
	assert_int_equal(n, 300000);
	assert_memory_equal(got, p, n);
	free(got);
	cat_source_close(s);
	unlink(path);
	free(z);
	free(p);
}

/* Says to stop at its second question: after the first block. */
static int stop_second(void *ctx)
{
	int *asked = ctx;

	return ++*asked >= 2;
}

/* Told to stop, compression fails and leaves nothing in the spool. */
static void test_stop(void **state)
{
	uint8_t *p = pattern(1u << 20, 11);
	char src[128], spool[4200], err[256];
	uint64_t in = 0, out = 0;
	int asked = 0;
	DIR *d;
	struct dirent *e;
	int files = 0;

	(void)state;
	snprintf(src, sizeof(src), "%s/source", dir);
	write_file(src, p, 1u << 20);
	assert_int_equal(cat_source_compress_file(src, dir, spool, sizeof(spool), stop_second, &asked, &in, &out, err,
						  sizeof(err)),
			 -1);
	assert_int_equal(asked, 2);
	assert_string_equal(spool, "");
	unlink(src);
	assert_non_null(d = opendir(dir));
	while ((e = readdir(d)) != NULL)
		files += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(files, 0);
	free(p);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ts-source-test-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip), cmocka_unit_test(test_raw),	 cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_unknown_size), cmocka_unit_test(test_stop),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
