/*
 * Unit tests for the ingest containers (ingest/util.c): the map finds what
 * was put whatever its growth, and pruning drops exactly the closed
 * entries (val MDL_NONE), keeps the others' values and order, gives memory
 * back, and leaves a map that still finds and inserts. An array kept in a
 * scratch file (vec_map) holds what was pushed through growth and dropped
 * pages, and moves to the heap, whole, when the file can grow no more.
 * A spill file's descriptor is closed by spill_fini: a small file's at
 * once, a large one's on a thread of its own, but closed all the same.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include "../../ingest/spill.h"
#include "../../ingest/util.h"

enum { N = 200000 };

/* Entry i's value: every third entry is closed. */
static uint32_t val_of(uint64_t i)
{
	return i % 3 == 0 ? MDL_NONE : (uint32_t)(i * 7);
}

static void test_kmap_prune(void **state)
{
	struct kmap m;
	struct kmap_entry *e;
	uint64_t i;
	size_t live = 0, cap;

	(void)state;
	kmap_init(&m);
	for (i = 0; i < N; i++) {
		assert_non_null(e = kmap_get(&m, i, i * 3, 5, i ^ 99));
		assert_int_equal(e->val, MDL_NONE);
		e->val = val_of(i);
		live += val_of(i) != MDL_NONE;
	}
	cap = m.ents.cap;
	kmap_prune(&m);
	assert_int_equal(m.ents.len, live);
	assert_true(m.ents.cap < cap);
	for (i = 0; i < N; i++) {
		e = kmap_find(&m, i, i * 3, 5, i ^ 99);
		if (val_of(i) == MDL_NONE) {
			assert_null(e);
		} else {
			assert_non_null(e);
			assert_int_equal(e->val, val_of(i));
		}
	}
	/* order kept: entries in insertion order */
	for (i = 1; i < m.ents.len; i++)
		assert_true(VEC_AT(&m.ents, struct kmap_entry, i - 1)->k[0] < VEC_AT(&m.ents, struct kmap_entry, i)->k[0]);
	/* a pruned key comes back as new; others grow the map again */
	assert_non_null(e = kmap_get(&m, 0, 0, 5, 99));
	assert_int_equal(e->val, MDL_NONE);
	for (i = N; i < 2 * N; i++)
		assert_non_null(kmap_get(&m, i, i * 3, 5, i ^ 99));
	assert_int_equal(kmap_find(&m, 1, 3, 5, 1 ^ 99)->val, val_of(1));
	kmap_prune(&m); /* everything new is closed */
	assert_int_equal(m.ents.len, live);
	kmap_fini(&m);
}

static void test_kmap_prune_empty(void **state)
{
	struct kmap m;

	(void)state;
	kmap_init(&m);
	kmap_prune(&m); /* never used */
	assert_null(kmap_find(&m, 1, 2, 3, 4));
	assert_non_null(kmap_get(&m, 1, 2, 3, 4));
	kmap_prune(&m); /* only a closed entry */
	assert_int_equal(m.ents.len, 0);
	assert_null(kmap_find(&m, 1, 2, 3, 4));
	kmap_fini(&m);
}

/* Whether fd is closed. */
static int fcntl_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1;
}

/* Pushes items from..to-1 (item i holds i, i * 3), dropping the pages now
 * and then, and checks every item so far. */
static void t_push_check(struct vec *v, uint64_t from, uint64_t to)
{
	uint64_t i, *p;

	for (i = from; i < to; i++) {
		assert_non_null(p = vec_push(v));
		p[0] = i;
		p[1] = i * 3;
		if (i % 5000 == 0)
			vec_drop(v);
	}
	vec_drop(v);
	assert_int_equal(v->len, to);
	for (i = 0; i < to; i++) {
		p = VEC_AT(v, uint64_t, 2 * i);
		if (p[0] != i || p[1] != i * 3)
			fail_msg("item %llu lost", (unsigned long long)i);
	}
}

static void test_vec_map(void **state)
{
	struct vec v;
	int fd = spill_tmpfile("/tmp");

	(void)state;
	assert_true(fd >= 0);
	vec_init(&v, 2 * sizeof(uint64_t));
	assert_int_equal(vec_map(&v, fd, 0), 0);
	assert_int_not_equal(vec_map(&v, fd, 0), 0); /* once */
	t_push_check(&v, 0, 100000); /* 1.6 MB: remapped again and again */
	assert_int_not_equal(v.mapfd, 0);
	assert_int_equal(v.mapped, 1);
	vec_fini(&v);
	assert_int_equal(fcntl_closed(fd), 1);
}

/* Mapped from 64 KB on: a smaller array stays on the heap and leaves the
 * file empty; past it, the items move into the file, none lost. */
static void test_vec_map_from(void **state)
{
	struct vec v;
	struct stat st;
	int fd = spill_tmpfile("/tmp");

	(void)state;
	assert_true(fd >= 0);
	vec_init(&v, 2 * sizeof(uint64_t));
	assert_int_equal(vec_map(&v, fd, 64 << 10), 0);
	t_push_check(&v, 0, 3000); /* 48 KB */
	assert_int_equal(v.mapped, 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	t_push_check(&v, 3000, 50000); /* 800 KB */
	assert_int_equal(v.mapped, 1);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true((size_t)st.st_size >= 50000 * v.size);
	vec_drop(&v);
	t_push_check(&v, 50000, 50001); /* read back after the drop */
	vec_fini(&v);
	assert_int_equal(fcntl_closed(fd), 1);
}

/* A file that cannot grow (past RLIMIT_FSIZE, like a full disk): the array
 * moves to the heap with every item, and goes on growing there. */
static void test_vec_map_full(void **state)
{
	struct rlimit old, lim;
	struct vec v;
	int fd = spill_tmpfile("/tmp");

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 256 << 10;
	signal(SIGXFSZ, SIG_IGN); /* the failed growth is an error, not a signal */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	vec_init(&v, 2 * sizeof(uint64_t));
	assert_int_equal(vec_map(&v, fd, 0), 0);
	t_push_check(&v, 0, 10000);   /* 160 KB: in the file */
	assert_int_equal(v.mapped, 1);
	t_push_check(&v, 10000, 60000); /* past 256 KB: on the heap */
	assert_int_equal(v.mapfd, 0);
	assert_int_equal(v.mapped, 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	vec_fini(&v);
}

/* Whether fd is no longer open, waiting up to 10 s for it. */
static int closed_within(int fd, int wait)
{
	int i;

	for (i = 0; i <= (wait ? 1000 : 0); i++) {
		struct timespec ms = { 0, 10 * 1000 * 1000 };

		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
			return 1;
		nanosleep(&ms, NULL);
	}
	return 0;
}

static void test_spill_close(void **state)
{
	enum { PIECE = 8 << 20 };
	struct spill sp;
	char *buf = calloc(1, PIECE);
	uint64_t off;
	int fd, i;

	(void)state;
	assert_non_null(buf);
	assert_int_equal(spill_init(&sp, "/tmp", "test data"), 0);
	assert_int_equal(spill_write(&sp, buf, 100, &off), 0);
	fd = sp.fd;
	assert_true(fd >= 0);
	spill_fini(&sp);
	assert_true(closed_within(fd, 0)); /* small: at once */
	assert_int_equal(sp.fd, -1);

	assert_int_equal(spill_init(&sp, "/tmp", "test data"), 0);
	for (i = 0; i < 9; i++) /* past 64 MiB: closed apart */
		assert_int_equal(spill_write(&sp, buf, PIECE, &off), 0);
	assert_int_equal(off, (uint64_t)8 * PIECE);
	fd = sp.fd;
	spill_fini(&sp);
	assert_int_equal(sp.fd, -1);
	assert_true(closed_within(fd, 1));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kmap_prune),
		cmocka_unit_test(test_kmap_prune_empty),
		cmocka_unit_test(test_vec_map),
		cmocka_unit_test(test_vec_map_from),
		cmocka_unit_test(test_vec_map_full),
		cmocka_unit_test(test_spill_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
