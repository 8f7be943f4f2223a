/*
 * What the catalog tells operations (catalog.h, cat_stats and cat_health):
 * the library by status, the ingest work done since the start, and whether
 * the catalog's database and the trace store can be used.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "catalog_internal.h"

const double cat_seconds_bounds[CAT_SECONDS_BUCKETS] = { 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800 };

int64_t cat_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void cat_seconds_note(struct cat_seconds *h, double s)
{
	int i;

	for (i = 0; i < CAT_SECONDS_BUCKETS && s > cat_seconds_bounds[i]; i++)
		;
	h->count++;
	h->sum += s;
	if (i < CAT_SECONDS_BUCKETS)
		h->le[i]++;
}

void cat_stats(struct catalog *c, struct cat_stats *out)
{
	struct storage_stats ss;
	size_t i;

	pthread_mutex_lock(&c->mu);
	*out = c->stats;
	memset(out->traces, 0, sizeof(out->traces));
	out->stored_bytes = 0;
	for (i = 0; i < c->n; i++) {
		out->traces[c->v[i]->state.status]++;
		out->stored_bytes += c->v[i]->state.stored;
	}
	pthread_mutex_unlock(&c->mu);
	c->store.ops->stats(&c->store, &ss);
	out->store_hits = ss.fetch_hits;
	out->store_misses = ss.fetch_misses;
	out->store_fetched_bytes = ss.fetched_bytes;
	out->store_errors = ss.errors;
	out->store_cache_bytes = ss.cache_bytes;
}

int cat_health(struct catalog *c, char *cat_err, size_t cat_errlen, char *store_err, size_t store_errlen)
{
	struct statvfs vfs;
	char spool[2048];
	int rc = 0;

	cat_err[0] = store_err[0] = '\0';
	if (c->db->ops->ping(c->db, cat_err, cat_errlen) != CATDB_OK)
		rc = CAT_EFAIL;
	cat_spool_dir(c, spool, sizeof(spool));
	if (access(spool, W_OK) != 0) {
		snprintf(store_err, store_errlen, "the trace store cannot be written: %s", strerror(errno));
		rc = CAT_EFAIL;
	} else if (statvfs(spool, &vfs) == 0 && vfs.f_bavail == 0) {
		snprintf(store_err, store_errlen, "the trace store's disk is full");
		rc = CAT_EFAIL;
	} else if (c->store.ops->check(&c->store, store_err, store_errlen) != 0) {
		rc = CAT_EFAIL;
	}
	return rc;
}
