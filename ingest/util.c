/*
 * The ingest module's containers (util.h): growable arrays and a small
 * open-addressing hash map, so that memory stays proportional to the items
 * and no item costs an allocation of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void vec_init(struct vec *v, size_t item_size)
{
	memset(v, 0, sizeof(*v));
	v->size = item_size;
}

/* Closes v's scratch file; its items, if they were mapped, must have
 * moved to the heap or be unmapped already. */
static void vec_close_file(struct vec *v)
{
	close(v->mapfd - 1);
	v->mapfd = 0;
	v->mapped = 0;
}

void vec_fini(struct vec *v)
{
	if (v->mapped) {
		if (v->data != NULL)
			munmap(v->data, v->cap * v->size);
	} else {
		free(v->data);
	}
	if (v->mapfd)
		vec_close_file(v);
	v->data = NULL;
	v->len = v->cap = 0;
}

/* A mapped v moves to the heap, its items copied, and gives its file up:
 * 0, or -1 (v unchanged). */
static int vec_unmap(struct vec *v)
{
	void *p = NULL;

	if (v->cap > 0 && (p = malloc(v->cap * v->size)) == NULL)
		return -1;
	if (v->cap > 0) {
		memcpy(p, v->data, v->len * v->size);
		munmap(v->data, v->cap * v->size);
	}
	vec_close_file(v);
	v->data = p;
	return 0;
}

/* Grows v to cap items in its file, moving them there from the heap when
 * they are not yet: the file's room first, so that a full disk is an error
 * here rather than a fault on a later write. 0, or -1 (v unchanged). */
static int vec_remap(struct vec *v, size_t cap)
{
	int fd = v->mapfd - 1;
	size_t have = v->mapped ? v->cap : 0;
	void *p;

	if (posix_fallocate(fd, (off_t)(have * v->size), (off_t)((cap - have) * v->size)) != 0)
		return -1;
	if (v->mapped && v->data != NULL)
		p = mremap(v->data, v->cap * v->size, cap * v->size, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, cap * v->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	if (!v->mapped) {
		if (v->len > 0)
			memcpy(p, v->data, v->len * v->size);
		free(v->data);
		v->mapped = 1;
	}
	v->data = p;
	v->cap = cap;
	return 0;
}

int vec_reserve(struct vec *v, size_t n)
{
	size_t cap = v->cap ? v->cap : 64;
	void *p;

	if (n <= v->cap)
		return 0;
	while (cap < n)
		cap += cap / 2 + 64;
	if (cap > SIZE_MAX / v->size)
		return -1;
	if (v->mapfd && (v->mapped || cap * v->size > v->map_from)) {
		if (vec_remap(v, cap) == 0)
			return 0;
		if (!v->mapped)
			vec_close_file(v); /* no room on the disk: memory then */
		else if (vec_unmap(v) != 0)
			return -1;
	}
	if ((p = realloc(v->data, cap * v->size)) == NULL)
		return -1;
	v->data = p;
	v->cap = cap;
	return 0;
}

int vec_map(struct vec *v, int fd, size_t from)
{
	if (v->mapfd || v->cap > 0 || fd < 0)
		return -1;
	free(v->data);
	v->data = NULL;
	v->mapfd = fd + 1;
	v->map_from = from;
	return 0;
}

void vec_drop(struct vec *v)
{
	if (v->mapped && v->data != NULL)
		madvise(v->data, v->cap * v->size, MADV_DONTNEED);
}

void *vec_push(struct vec *v)
{
	void *p;

	if (v->len == v->cap && vec_reserve(v, v->len + 1) != 0)
		return NULL;
	p = (char *)v->data + v->len * v->size;
	memset(p, 0, v->size);
	v->len++;
	return p;
}

static uint64_t hash_words(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t h = a * UINT64_C(0x9E3779B97F4A7C15);

	h = (h ^ (h >> 29) ^ b) * UINT64_C(0xBF58476D1CE4E5B9);
	h = (h ^ (h >> 31) ^ c) * UINT64_C(0x94D049BB133111EB);
	h = (h ^ (h >> 29) ^ d) * UINT64_C(0x9E3779B97F4A7C15);
	return h ^ (h >> 32);
}

void kmap_init(struct kmap *m)
{
	m->slots = NULL;
	m->mask = 0;
	vec_init(&m->ents, sizeof(struct kmap_entry));
}

void kmap_fini(struct kmap *m)
{
	free(m->slots);
	m->slots = NULL;
	vec_fini(&m->ents);
}

/* Indexes every entry in slots, n of them (zeroed; a power of two, more
 * than twice the entries), which replace the map's. */
static void kmap_fill(struct kmap *m, uint32_t *slots, size_t n)
{
	size_t i, j;

	for (i = 0; i < m->ents.len; i++) {
		struct kmap_entry *e = VEC_AT(&m->ents, struct kmap_entry, i);

		j = hash_words(e->k[0], e->k[1], e->k[2], e->k[3]) & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)i + 1;
	}
	if (m->slots != slots)
		free(m->slots);
	m->slots = slots;
	m->mask = n - 1;
}

static int kmap_grow(struct kmap *m)
{
	size_t n = m->mask ? (m->mask + 1) * 2 : 1024;
	uint32_t *slots = calloc(n, sizeof(uint32_t));

	if (slots == NULL)
		return -1;
	kmap_fill(m, slots, n);
	return 0;
}

void kmap_prune(struct kmap *m)
{
	struct kmap_entry *e = m->ents.data, *shrunk;
	size_t i, k = 0, n = 1024;
	uint32_t *slots;

	if (m->slots == NULL)
		return;
	for (i = 0; i < m->ents.len; i++)
		if (e[i].val != MDL_NONE)
			e[k++] = e[i];
	m->ents.len = k;
	while (n < 2 * (k + 1))
		n *= 2;
	if (n > m->mask + 1 || (slots = calloc(n, sizeof(uint32_t))) == NULL) {
		/* no memory for fewer slots: the ones there serve, emptied */
		n = m->mask + 1;
		slots = m->slots;
		memset(slots, 0, n * sizeof(uint32_t));
	}
	kmap_fill(m, slots, n);
	/* give the room of the entries dropped back */
	if (m->ents.cap > 2 * k + 64 && (shrunk = realloc(m->ents.data, (k + 64) * sizeof(*e))) != NULL) {
		m->ents.data = shrunk;
		m->ents.cap = k + 64;
	}
}

static size_t kmap_slot(const struct kmap *m, const uint64_t k[4])
{
	size_t j = hash_words(k[0], k[1], k[2], k[3]) & m->mask;

	while (m->slots[j]) {
		const struct kmap_entry *e = VEC_AT(&m->ents, struct kmap_entry, m->slots[j] - 1);

		if (memcmp(e->k, k, sizeof(e->k)) == 0)
			break;
		j = (j + 1) & m->mask;
	}
	return j;
}

struct kmap_entry *kmap_find(const struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t k[4] = { a, b, c, d };
	size_t j;

	if (m->slots == NULL)
		return NULL;
	j = kmap_slot(m, k);
	return m->slots[j] ? VEC_AT(&m->ents, struct kmap_entry, m->slots[j] - 1) : NULL;
}

struct kmap_entry *kmap_get(struct kmap *m, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t k[4] = { a, b, c, d };
	struct kmap_entry *e;
	size_t j;

	if ((m->ents.len + 1) * 2 > m->mask + 1 && kmap_grow(m) != 0)
		return NULL;
	j = kmap_slot(m, k);
	if (m->slots[j])
		return VEC_AT(&m->ents, struct kmap_entry, m->slots[j] - 1);
	if (m->ents.len >= UINT32_MAX - 1 || (e = vec_push(&m->ents)) == NULL)
		return NULL;
	memcpy(e->k, k, sizeof(k));
	e->val = MDL_NONE;
	m->slots[j] = (uint32_t)m->ents.len;
	return e;
}

void deadline_ms(clockid_t clock, int64_t ms, struct timespec *until)
{
	clock_gettime(clock, until);
	until->tv_sec += ms / 1000;
	until->tv_nsec += (long)(ms % 1000) * 1000000L;
	until->tv_sec += until->tv_nsec / 1000000000L;
	until->tv_nsec %= 1000000000L;
}

void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms)
{
	struct timespec until;

	deadline_ms(CLOCK_REALTIME, ms, &until);
	pthread_cond_timedwait(cv, mu, &until);
}

/*
 * Arena probes: glibc trims the free top of a thread's arena only on a
 * free into that arena while the trim threshold allows it, and a thread
 * cannot free into another's arena but what that arena gave. So each
 * thread that may hold much (heap_probe: a request's, the worker's) keeps
 * one block of its own arena here, and heap_release frees them all with
 * the threshold at 0: every arena's top is trimmed, not only the caller's.
 */
enum { PROBES = 64, PROBE_BYTES = 128 << 10 };
static pthread_mutex_t heap_mu = PTHREAD_MUTEX_INITIALIZER;
static void *probes[PROBES];
static unsigned nprobes;
static __thread int probe_slot = -1;

void heap_probe(void)
{
	/* each request ends here: no lock once this thread's probe is in
	 * place (heap_release takes it back under heap_mu) */
	if (probe_slot >= 0 && __atomic_load_n(&probes[probe_slot], __ATOMIC_ACQUIRE) != NULL)
		return;
	pthread_mutex_lock(&heap_mu);
	if (probe_slot < 0 && nprobes < PROBES)
		probe_slot = (int)nprobes++;
	if (probe_slot >= 0 && probes[probe_slot] == NULL) /* from this thread's arena; NULL: none this time */
		__atomic_store_n(&probes[probe_slot], malloc(PROBE_BYTES), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&heap_mu);
}

/* heap_release and heap_release_own: all, whether the probed arenas'
 * tops are trimmed too. The caller's own arena's top is trimmed by a free
 * past the threshold, with the threshold at 0 for that moment. */
static void release(int all)
{
	unsigned i;
	void *p;

	pthread_mutex_lock(&heap_mu);
	mallopt(M_TRIM_THRESHOLD, 0);
	for (i = 0; all && i < nprobes; i++) {
		free(probes[i]); /* into its arena, which trims its top now */
		__atomic_store_n(&probes[i], NULL, __ATOMIC_RELEASE);
	}
	if ((p = malloc(256 << 10)) != NULL) {
		((volatile char *)p)[0] = 0;
		free(p);
	}
	mallopt(M_TRIM_THRESHOLD, (int)HEAP_TRIM_THRESHOLD);
	malloc_trim(0); /* and the free pages inside every arena */
	pthread_mutex_unlock(&heap_mu);
}

void heap_release(void)
{
	release(1);
}

void heap_release_own(void)
{
	release(0);
}

pid_t spawn_apart(const char *exe, char *const argv[], int in_fd, int out_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	/* the child: only async-signal-safe calls until exec */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if ((in_fd >= 0 && dup2(in_fd, 0) < 0) || dup2(out_fd, 1) < 0)
		_exit(127);
	syscall(SYS_close_range, 3U, ~0U, 0U); /* nothing of the parent's but its log (2) */
	execv(exe, argv);
	_exit(127);
}

int run_apart(const char *exe, char *const argv[], int (*stop)(void *), void *ctx, char *said, size_t n,
	      int *status)
{
	int p[2], stopped = 0, e;
	size_t got = 0;
	char drop[256];
	pid_t pid;
	ssize_t k;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = spawn_apart(exe, argv, -1, p[1]);
	e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		errno = e;
		return -1;
	}
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };

		if (stop && stop(ctx)) {
			stopped = 1;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pf, 1, 250) <= 0)
			continue;
		if (got < n - 1)
			k = read(p[0], said + got, n - 1 - got);
		else
			k = read(p[0], drop, sizeof(drop));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (got < n - 1)
			got += (size_t)k;
	}
	said[got] = '\0';
	close(p[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return stopped;
}

int run_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	int rc = -1;

	if (pthread_attr_init(&a) != 0)
		return -1;
	if (pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 && pthread_create(&t, &a, fn, arg) == 0)
		rc = 0;
	pthread_attr_destroy(&a);
	return rc;
}
