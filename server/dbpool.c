/*
 * Trace databases, opened read-only, one connection per trace per worker
 * thread, cached in the thread (a few slots), reopened when the file was
 * replaced (a trace ingested again, or named by new symbols).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_internal.h"

/* ---- trace databases, one read-only connection per worker thread -------- */

struct db_slot {
	int64_t id;
	sqlite3 *db;
	ino_t ino;    /* of trace.db when opened: a re-ingested trace is a new file */
	time_t mtime;
};

enum { DB_SLOTS = 8 };
static pthread_key_t g_db_key;
static pthread_once_t g_db_once = PTHREAD_ONCE_INIT;

/* Closes a worker thread's connections when the thread ends. */
static void db_slots_free(void *p)
{
	struct db_slot *slots = p;
	int i;

	for (i = 0; i < DB_SLOTS; i++)
		if (slots[i].db)
			sqlite3_close(slots[i].db);
	free(slots);
}

static void db_key_init(void)
{
	pthread_key_create(&g_db_key, db_slots_free);
}

static struct db_slot *db_slots(void)
{
	struct db_slot *slots;

	pthread_once(&g_db_once, db_key_init);
	if ((slots = pthread_getspecific(g_db_key)) == NULL && (slots = calloc(DB_SLOTS, sizeof(*slots))) != NULL)
		pthread_setspecific(g_db_key, slots);
	return slots;
}

/* Through tracedb's door: the schema version checked, pages mapped. */
static sqlite3 *db_open(const char *path)
{
	const char *why;

	return tracedb_open_readonly(path, &why);
}

sqlite3 *srv_trace_db(struct server *s, int64_t id, int *store_down)
{
	struct db_slot *slots = db_slots(), *slot;
	char path[4096], err[512] = "";
	struct stat st;
	int tries;

	*store_down = 0;
	if (slots == NULL)
		return NULL;
	slot = &slots[(uint64_t)id % DB_SLOTS];
	/* an ingest's preview goes as the ingest ends, maybe between its name
	 * and the stat: named again, the file is then the trace's database */
	for (tries = 0;; tries++) {
		cat_path(s->cat, id, "trace.db", path, sizeof(path));
		if ((*store_down = cat_fetch(s->cat, id, "trace.db", err, sizeof(err)) == -2)) {
			fprintf(stderr, "trace-server: trace %" PRId64 ": %s\n", id, err);
			return NULL;
		}
		if (stat(path, &st) == 0)
			break;
		if (tries == 1)
			return NULL;
	}
	if (slot->db && slot->id == id && slot->ino == st.st_ino && slot->mtime == st.st_mtime)
		return slot->db;
	if (slot->db)
		sqlite3_close(slot->db);
	if ((slot->db = db_open(path)) == NULL)
		return NULL;
	slot->id = id;
	slot->ino = st.st_ino;
	slot->mtime = st.st_mtime;
	return slot->db;
}


sqlite3 *srv_trace_db_open(struct server *s, int64_t id)
{
	char path[4096], err[512];

	cat_path(s->cat, id, "trace.db", path, sizeof(path));
	return cat_fetch(s->cat, id, "trace.db", err, sizeof(err)) == 0 && access(path, R_OK) == 0 ? db_open(path)
												    : NULL;
}
