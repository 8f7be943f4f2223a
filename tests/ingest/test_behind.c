/*
 * Unit tests for write-behind (ingest/behind.c) through the scratch file
 * that uses it (ingest/spill.c): what was written comes back byte for byte
 * whether its pages stayed in the page cache or not; pages two windows
 * behind the end of what was written have left the cache, the last window's
 * have not; a range read back once leaves the cache; a file under one window
 * is never touched. Residency is asked of the kernel (mincore on a mapping
 * of the file), the only witness of what write-behind does. Settling
 * without waiting works on a descriptor of its own, which it closes, and
 * the file's pages are written all the same.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <time.h>

#include "../../ingest/behind.h"
#include "../../ingest/spill.h"

enum { PIECE = 1 << 20 };

/* The byte at offset off of the test's data. */
static uint8_t byte_at(uint64_t off)
{
	return (uint8_t)(off * 2654435761u >> 13);
}

static void fill(uint8_t *p, uint64_t off, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = byte_at(off + i);
}

/* Pages of [from, to) of fd's file in the page cache, and pages in all. */
static size_t resident(int fd, uint64_t from, uint64_t to, size_t *pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = (size_t)(to - from) / (size_t)pg, i, in = 0;
	unsigned char *vec = malloc(n);
	void *map = mmap(NULL, (size_t)(to - from), PROT_READ, MAP_SHARED, fd, (off_t)from);

	assert_non_null(vec);
	assert_true(map != MAP_FAILED);
	assert_int_equal(mincore(map, (size_t)(to - from), vec), 0);
	for (i = 0; i < n; i++)
		in += vec[i] & 1;
	munmap(map, (size_t)(to - from));
	free(vec);
	*pages = n;
	return in;
}

/* Whether this directory's filesystem drops a file's clean pages when told
 * to (tmpfs keeps them: its pages are the file). Where it does not, the
 * tests still check every byte, and skip what the cache holds. */
static int drops_pages(void)
{
	const size_t n = 8 << 20;
	uint8_t *buf = calloc(1, n);
	int fd = spill_tmpfile(".");
	size_t pages, in = 1;

	assert_non_null(buf);
	assert_true(fd >= 0);
	if (pwrite(fd, buf, n, 0) == (ssize_t)n) {
		behind_settle(fd, 1);
		behind_forget(fd, 0, n);
		in = resident(fd, 0, n, &pages);
	}
	close(fd);
	free(buf);
	if (in != 0)
		print_message("this filesystem keeps dropped pages: residency not checked\n");
	return in == 0;
}

/* Appends n bytes of the test's data to sp, a piece at a time. */
static void append(struct spill *sp, uint64_t n)
{
	uint8_t *buf = malloc(PIECE);
	uint64_t done = 0, off;

	assert_non_null(buf);
	while (done < n) {
		size_t k = n - done < PIECE ? (size_t)(n - done) : PIECE;

		fill(buf, sp->len, k);
		assert_int_equal(spill_write(sp, buf, k, &off), 0);
		done += k;
	}
	free(buf);
}

/* Reads [from, from + n) back and compares it with the test's data. */
static void read_back(struct spill *sp, uint64_t from, uint64_t n)
{
	uint8_t *buf = malloc(PIECE), *want = malloc(PIECE);
	uint64_t at;

	assert_non_null(buf);
	assert_non_null(want);
	for (at = from; at < from + n; at += PIECE) {
		size_t k = from + n - at < PIECE ? (size_t)(from + n - at) : PIECE;

		assert_int_equal(spill_read(sp, buf, k, at), 0);
		fill(want, at, k);
		if (memcmp(buf, want, k) != 0)
			fail_msg("bytes at %llu came back different", (unsigned long long)at);
	}
	free(buf);
	free(want);
}

static void test_windows_leave_the_cache(void **state)
{
	const uint64_t w = BEHIND_WINDOW, total = 5 * w;
	struct spill sp;
	size_t pages, in;

	(void)state;
	assert_int_equal(spill_init(&sp, ".", "test data"), 0);
	append(&sp, total);
	assert_true(sp.fd >= 0);
	assert_int_equal(sp.behind.dropped, 3 * w);
	if (!drops_pages()) {
		read_back(&sp, 0, total);
		spill_fini(&sp);
		return;
	}
	/* the first two windows were written and dropped; the last one was
	 * only just written: it stays */
	in = resident(sp.fd, 0, 2 * w, &pages);
	if (in > pages / 16)
		fail_msg("%zu of the first %zu pages still cached", in, pages);
	in = resident(sp.fd, total - w, total, &pages);
	if (in < pages / 2)
		fail_msg("only %zu of the last window's %zu pages cached", in, pages);
	/* every byte comes back, from the disk or the cache */
	read_back(&sp, 0, total);
	/* and what was read once has left the cache (the last windows may
	 * still be on their way to the disk, and stay until they are) */
	in = resident(sp.fd, 2 * w, 3 * w, &pages);
	if (in > pages / 16)
		fail_msg("%zu of the third window's %zu pages still cached after reading", in, pages);
	spill_fini(&sp);
}

static void test_small_file_untouched(void **state)
{
	struct spill sp;
	size_t pages, in;
	uint64_t n = BEHIND_WINDOW / 2;

	(void)state;
	assert_int_equal(spill_init(&sp, ".", "test data"), 0);
	append(&sp, n);
	assert_int_equal(sp.behind.started, 0);
	assert_int_equal(sp.behind.dropped, 0);
	in = resident(sp.fd, 0, n, &pages);
	if (in < pages / 2)
		fail_msg("only %zu of %zu pages cached: a file under a window was dropped", in, pages);
	read_back(&sp, 0, n);
	spill_fini(&sp);
}

static void test_forget_and_settle(void **state)
{
	const uint64_t n = 8 << 20;
	uint8_t *buf = malloc(n);
	int fd = spill_tmpfile(".");
	size_t pages, in;

	(void)state;
	assert_non_null(buf);
	assert_true(fd >= 0);
	fill(buf, 0, n);
	assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
	behind_settle(fd, 1); /* written out: its pages are clean now, and may go */
	behind_forget(fd, 0, n / 2);
	if (drops_pages()) {
		in = resident(fd, 0, n / 2, &pages);
		if (in > pages / 16)
			fail_msg("%zu of %zu forgotten pages still cached", in, pages);
		in = resident(fd, n / 2, n, &pages);
		if (in < pages / 2)
			fail_msg("only %zu of %zu pages not forgotten still cached", in, pages);
	}
	memset(buf, 0, n);
	assert_int_equal(pread(fd, buf, n, 0), (ssize_t)n);
	for (uint64_t i = 0; i < n; i++)
		if (buf[i] != byte_at(i))
			fail_msg("byte %llu came back different", (unsigned long long)i);
	behind_forget(-1, 0, n); /* no file: nothing happens */
	behind_settle(-1, 0);
	close(fd);
	free(buf);
}

/* Descriptors this process has open. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Settling without waiting: the descriptor the writing was started from
 * is closed within seconds, and the file reads back whole. */
static void test_settle_apart(void **state)
{
	char path[] = "/tmp/test_behind_XXXXXX";
	uint64_t n = 8 * PIECE;
	uint8_t *buf = malloc(n);
	int fd = mkstemp(path), before, i;

	(void)state;
	assert_true(fd >= 0 && buf != NULL);
	unlink(path);
	fill(buf, 0, n);
	assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
	before = open_fds();
	behind_settle(fd, 0);
	for (i = 0; i < 1000 && open_fds() > before; i++) {
		struct timespec ms = { 0, 10 * 1000 * 1000 };

		nanosleep(&ms, NULL);
	}
	assert_int_equal(open_fds(), before);
	memset(buf, 0, n);
	assert_int_equal(pread(fd, buf, n, 0), (ssize_t)n);
	for (uint64_t k = 0; k < n; k++)
		if (buf[k] != byte_at(k))
			fail_msg("byte %llu came back different", (unsigned long long)k);
	close(fd);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_leave_the_cache),
		cmocka_unit_test(test_small_file_untouched),
		cmocka_unit_test(test_forget_and_settle),
		cmocka_unit_test(test_settle_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
