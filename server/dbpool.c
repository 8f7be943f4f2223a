/*
 * Trace databases, opened read-only, one connection per trace per worker
 * thread, cached in the thread (a few slots), reopened when the file was
 * replaced (a trace ingested again, or named by new symbols), and closed
 * in every thread when the trace is deleted.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server_internal.h"

/* ---- trace databases, one read-only connection per worker thread -------- */

/*
 * A slot is its thread's, but for one moment: when a trace is deleted, the
 * deleting thread closes every thread's connection to it (srv_trace_db_forget),
 * so that a deleted trace's pages and caches go at once rather than when
 * each thread happens to need its slot again. `busy` says who holds a slot:
 * 0 nobody, 1 its thread (from srv_trace_db to srv_trace_db_done), 2
 * another thread closing it; a slot busy with a request when its trace is
 * deleted is marked `doomed`, and its thread closes it when done.
 */
struct db_slot {
	int64_t id;
	sqlite3 *db;
	ino_t ino;    /* of trace.db when opened: a re-ingested trace is a new file */
	time_t mtime;
	int busy;     /* atomic */
	int doomed;   /* atomic */
};

enum { DB_SLOTS = 8 };

/* Every thread's slots, for srv_trace_db_forget. */
struct db_slots {
	struct db_slot slot[DB_SLOTS];
	struct db_slots *next;
};

static pthread_key_t g_db_key;
static pthread_once_t g_db_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_db_mu = PTHREAD_MUTEX_INITIALIZER; /* g_db_all */
static struct db_slots *g_db_all;

/* Closes a worker thread's connections when the thread ends. */
static void db_slots_free(void *p)
{
	struct db_slots *slots = p, **at;
	int i;

	pthread_mutex_lock(&g_db_mu);
	for (at = &g_db_all; *at; at = &(*at)->next)
		if (*at == slots) {
			*at = slots->next;
			break;
		}
	pthread_mutex_unlock(&g_db_mu);
	for (i = 0; i < DB_SLOTS; i++)
		if (slots->slot[i].db)
			sqlite3_close(slots->slot[i].db);
	free(slots);
}

static void db_key_init(void)
{
	pthread_key_create(&g_db_key, db_slots_free);
}

static struct db_slots *db_slots(void)
{
	struct db_slots *slots;

	pthread_once(&g_db_once, db_key_init);
	if ((slots = pthread_getspecific(g_db_key)) == NULL && (slots = calloc(1, sizeof(*slots))) != NULL) {
		pthread_setspecific(g_db_key, slots);
		pthread_mutex_lock(&g_db_mu);
		slots->next = g_db_all;
		g_db_all = slots;
		pthread_mutex_unlock(&g_db_mu);
	}
	return slots;
}

static void slot_close(struct db_slot *slot)
{
	if (slot->db)
		sqlite3_close(slot->db);
	slot->db = NULL;
	slot->id = 0;
}

/* Takes the thread's own slot, waiting out another thread closing it. */
static void slot_take(struct db_slot *slot)
{
	int idle = 0;

	while (!__atomic_compare_exchange_n(&slot->busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		idle = 0;
		sched_yield();
	}
}

/* Through tracedb's door: the schema version checked, pages mapped. */
static sqlite3 *db_open(const char *path)
{
	const char *why;

	return tracedb_open_readonly(path, &why);
}

/* How long a trace's database may be missing from its name while it is
 * replaced: an ingest that started again at its end removes the database
 * it grew (and WAL mode's files beside it, which the new one must not
 * take for its own) and then renames the new one into place. The
 * ingest's process is niced: between the two, it may wait for a core. */
enum { REPLACED_WAIT_MS = 2, REPLACED_TRIES = 250 };

/* Waits a moment before the tries-th look again at trace id's database
 * at path, which failed to open: 0 when it is missing for good, the trace
 * was deleted, or the file that failed (ino, 0: none was there) is still
 * in place, a database that does not open rather than one replaced. */
static int replaced_wait(struct server *s, int64_t id, int tries, const char *path, ino_t ino)
{
	struct timespec d = { 0, REPLACED_WAIT_MS * 1000000L };
	struct stat st;

	if (tries >= REPLACED_TRIES || cat_status(s->cat, id) < 0 ||
	    (ino != 0 && stat(path, &st) == 0 && st.st_ino == ino))
		return 0;
	nanosleep(&d, NULL);
	return 1;
}

sqlite3 *srv_trace_db(struct server *s, int64_t id, int *store_down)
{
	struct db_slots *slots = db_slots();
	struct db_slot *slot;
	char path[4096], err[512] = "";
	struct stat st;
	int tries;

	*store_down = 0;
	if (slots == NULL)
		return NULL;
	slot = &slots->slot[(uint64_t)id % DB_SLOTS];
	slot_take(slot);
	/* a database may be replaced between its name and the stat (renamed
	 * over it), or be missing a moment while it is (above): named again,
	 * the file is the new one */
	for (tries = 0;; tries++) {
		cat_path(s->cat, id, "trace.db", path, sizeof(path));
		if ((*store_down = cat_fetch(s->cat, id, "trace.db", err, sizeof(err)) == CAT_ESTOREDOWN)) {
			fprintf(stderr, "trace-server: trace %" PRId64 ": %s\n", id, err);
			__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
			return NULL;
		}
		if (stat(path, &st) != 0) {
			st.st_ino = 0;
		} else {
			if (slot->db && slot->id == id && slot->ino == st.st_ino && slot->mtime == st.st_mtime)
				return slot->db;
			slot_close(slot);
			if ((slot->db = db_open(path)) != NULL)
				break;
		}
		if (!replaced_wait(s, id, tries, path, st.st_ino)) {
			__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
			return NULL;
		}
	}
	slot->id = id;
	slot->ino = st.st_ino;
	slot->mtime = st.st_mtime;
	return slot->db;
}

void srv_trace_db_done(sqlite3 *db)
{
	struct db_slots *slots = pthread_getspecific(g_db_key);
	int i;

	for (i = 0; slots && i < DB_SLOTS; i++) {
		struct db_slot *slot = &slots->slot[i];

		if (slot->db != db || __atomic_load_n(&slot->busy, __ATOMIC_RELAXED) != 1)
			continue;
		if (__atomic_exchange_n(&slot->doomed, 0, __ATOMIC_ACQ_REL))
			slot_close(slot);
		__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
		return;
	}
}

void srv_trace_db_forget(int64_t id)
{
	struct db_slots *t;

	pthread_mutex_lock(&g_db_mu);
	for (t = g_db_all; t; t = t->next) {
		struct db_slot *slot = &t->slot[(uint64_t)id % DB_SLOTS];
		int idle = 0;

		if (__atomic_compare_exchange_n(&slot->busy, &idle, 2, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			if (slot->id == id && slot->db)
				slot_close(slot);
			__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
		} else {
			/* its thread is answering with it: a request for this very
			 * trace (it closes it when done) or another (then the mark
			 * only closes a connection that is opened again at need) */
			__atomic_store_n(&slot->doomed, 1, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&g_db_mu);
	/* their mapped pages went with them; their caches go back to the
	 * system with the caller's heap_release */
}


sqlite3 *srv_trace_db_open(struct server *s, int64_t id)
{
	char path[4096], err[512];
	sqlite3 *db = NULL;
	struct stat st;
	int tries;

	for (tries = 0;; tries++) {
		cat_path(s->cat, id, "trace.db", path, sizeof(path));
		if (cat_fetch(s->cat, id, "trace.db", err, sizeof(err)) != 0)
			break;
		if (stat(path, &st) != 0)
			st.st_ino = 0;
		else if (access(path, R_OK) == 0 && (db = db_open(path)) != NULL)
			break;
		if (!replaced_wait(s, id, tries, path, st.st_ino))
			break;
	}
	return db;
}
