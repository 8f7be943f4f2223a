/*
 * Containers of the ingest module: a growable array of fixed-size items and
 * an open-addressing map from four words to a 32-bit value. Every stage
 * uses them; they depend on nothing but the C library.
 */
#ifndef INGEST_UTIL_H
#define INGEST_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* The value of an absent entry, and "none" wherever a 32-bit index may be. */
#define MDL_NONE UINT32_MAX

/* A growable array of fixed-size items; data is reallocated as it grows. */
struct vec {
	void *data;
	size_t len;  /* items in use */
	size_t cap;  /* items allocated; len <= cap */
	size_t size; /* bytes per item */
	int mapfd;   /* 0: no scratch file; else 1 + its fd (vec_map) */
	int mapped;  /* data is mapped from that file, not on the heap */
	size_t map_from; /* bytes: a smaller array stays on the heap */
};

void vec_init(struct vec *v, size_t item_size);
void vec_fini(struct vec *v);
/* Returns a pointer to a new zeroed item at the end, or NULL when out of memory. */
void *vec_push(struct vec *v);
/* Makes room for n items in all; returns 0, or -1 when out of memory (v unchanged). */
int vec_reserve(struct vec *v, size_t n);
/*
 * Keeps v's items in fd (an empty scratch file, which v then owns and
 * closes) once they need more than from bytes (at once when from is 0),
 * mapped shared: they live in the page cache, and vec_drop() takes them
 * out of the process's memory, to be read back from the cache (or the
 * disk) when next used. For items written once and read a few times much
 * later, so that they need not all stay in memory; a small array never
 * touches the disk. The file's room is allocated as v grows; when that
 * fails (a full disk), v moves back to the heap. Returns 0, or -1 (v
 * unchanged, fd not taken).
 */
int vec_map(struct vec *v, int fd, size_t from);
/* Takes a mapped v's pages out of the process's memory (nothing is lost). */
void vec_drop(struct vec *v);
#define VEC_AT(v, type, i) (&((type *)(v)->data)[i])

/* Open-addressing map from a key of four words to a 32-bit value. */
struct kmap_entry {
	uint64_t k[4];
	uint32_t val;
};
struct kmap {
	uint32_t *slots; /* entry index + 1, 0 = empty */
	size_t mask;     /* slot count - 1; slot count is a power of two */
	struct vec ents; /* struct kmap_entry, in insertion order */
};
void kmap_init(struct kmap *m);
void kmap_fini(struct kmap *m);
/* Returns the entry for the key, inserting it with val = MDL_NONE when absent.
 * NULL when out of memory. The pointer is valid until the next insertion. */
struct kmap_entry *kmap_get(struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* Returns the entry or NULL when absent. */
struct kmap_entry *kmap_find(const struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
/* Drops the entries whose val is MDL_NONE, keeping the others' order, and
 * gives their memory back (what it can: it never fails); entry pointers
 * are invalid after. */
void kmap_prune(struct kmap *m);

/*
 * The heap's trim threshold (server/main.c sets it at start, with the mmap
 * threshold): a thread's arena keeps up to this much freed memory at its
 * top for the next request, which a reply of megabytes would otherwise pay
 * in page faults every time.
 */
#define HEAP_TRIM_THRESHOLD ((size_t)32 << 20)
/*
 * Gives freed memory back to the system: the free pages inside every arena
 * (malloc_trim), and the free tops of the caller's arena and of the arenas
 * of threads that called heap_probe since the last heap_release: for the
 * end of an ingest, of each of its threads and of a trace's deletion,
 * which would otherwise keep what a big trace made them hold. glibc trims
 * the free top of a thread's arena only on a free into it past the trim
 * threshold: frees with the threshold at 0 for that moment do it.
 */
void heap_release(void);

/* heap_release, but of the arenas' tops only the caller's: for work that
 * ends often (a live snapshot, an upload), where the other threads' tops
 * are worth keeping for their next replies. */
void heap_release_own(void);

/* Lets heap_release reach the calling thread's arena, whichever thread
 * calls it: each request calls it as it ends. */
void heap_probe(void);

/*
 * Starts "exe argv[1] ..." in a child process with in_fd (or, when -1,
 * this process's standard input) as its standard input and out_fd as its
 * standard output; it keeps standard error (the server's log) and no other
 * descriptor, and is killed if this process dies. The pid, or -1 with
 * errno. For work that must give back all it held when it ends (child.h).
 */
pid_t spawn_apart(const char *exe, char *const argv[], int in_fd, int out_fd);

/*
 * Runs "exe argv[1] ..." in a child process (spawn_apart, standard input
 * this process's) to its end, with what it wrote on standard output in
 * said (n bytes, NUL-terminated, the rest dropped) and its wait status in
 * *status. stop(ctx), when stop is not NULL, is asked every quarter second:
 * when it says so the child is killed. 0 when it ran to its end, 1 when
 * stopped, -1 with errno when it could not start.
 */
int run_apart(const char *exe, char *const argv[], int (*stop)(void *), void *ctx, char *said, size_t n,
	      int *status);

/* Runs fn(arg) on a detached thread: work ingest need not wait for (a
 * scratch file's close, an upload's writing started). 0, or -1 when no
 * thread could be made and fn was not run. */
int run_detached(void *(*fn)(void *), void *arg);

/* The time ms milliseconds from now on clock, as an absolute deadline for
 * pthread_cond_timedwait or clock_nanosleep. */
void deadline_ms(clockid_t clock, int64_t ms, struct timespec *until);

/* Waits on cv (mu held, as pthread_cond_timedwait) for at most ms
 * milliseconds; what woke it is the caller's to look at. */
void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms);

#endif
