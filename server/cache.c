/*
 * A cache of rendered query replies.
 *
 * A ready trace never changes (until its functions are renamed or it is
 * deleted, which drop its entries), and viewers ask the same windows again
 * and again: panning back, a colleague opening a shared link, many tabs on
 * one trace. The cache keeps the libmicrohttpd response objects themselves,
 * which MHD reference-counts and can queue on many connections at once, so
 * a hit costs a hash lookup and no copy. Least recently used entries go
 * first once the bytes held pass the budget.
 */
#include <stdlib.h>
#include <string.h>

#include "server_internal.h"

struct rc_entry {
	char *key;
	int64_t trace;
	size_t bytes;
	struct MHD_Response *resp;
	struct rc_entry *prev, *next; /* LRU list: head is the most recent */
	struct rc_entry *chain;       /* hash bucket */
};

static uint64_t rc_hash(const char *s)
{
	uint64_t h = UINT64_C(1469598103934665603);

	while (*s)
		h = (h ^ (uint8_t)*s++) * UINT64_C(1099511628211);
	return h;
}

int rc_init(struct rcache *c, size_t budget)
{
	memset(c, 0, sizeof(*c));
	c->budget = budget;
	c->nbuckets = 4096;
	if ((c->buckets = calloc(c->nbuckets, sizeof(*c->buckets))) == NULL)
		return -1;
	pthread_mutex_init(&c->mu, NULL);
	return 0;
}

static void lru_unlink(struct rcache *c, struct rc_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct rcache *c, struct rc_entry *e)
{
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (c->tail == NULL)
		c->tail = e;
}

/* Unlinks e everywhere and frees it; called with mu held. */
static void rc_remove(struct rcache *c, struct rc_entry *e)
{
	struct rc_entry **p = &c->buckets[rc_hash(e->key) % c->nbuckets];

	while (*p && *p != e)
		p = &(*p)->chain;
	if (*p)
		*p = e->chain;
	lru_unlink(c, e);
	c->bytes -= e->bytes;
	MHD_destroy_response(e->resp);
	free(e->key);
	free(e);
}

/* Queues the cached reply under the lock, so that an eviction cannot free
 * the response between the lookup and MHD taking its own reference. */
int rc_serve(struct rcache *c, const char *key, struct MHD_Connection *conn, size_t *bytes)
{
	struct rc_entry *e;
	int served = 0;

	if (c->buckets == NULL)
		return 0;
	pthread_mutex_lock(&c->mu);
	for (e = c->buckets[rc_hash(key) % c->nbuckets]; e; e = e->chain) {
		if (strcmp(e->key, key) == 0) {
			lru_unlink(c, e);
			lru_push(c, e);
			served = MHD_queue_response(conn, 200, e->resp) == MHD_YES ? 1 : -1;
			*bytes = e->bytes;
			c->hits++;
			break;
		}
	}
	if (served == 0)
		c->misses++;
	pthread_mutex_unlock(&c->mu);
	return served;
}

void rc_put(struct rcache *c, const char *key, int64_t trace, struct MHD_Response *resp, size_t bytes)
{
	struct rc_entry *e = NULL;
	size_t h;

	if (c->buckets == NULL || bytes > c->budget / 8 || (e = calloc(1, sizeof(*e))) == NULL ||
	    (e->key = strdup(key)) == NULL) {
		free(e);
		MHD_destroy_response(resp); /* not kept: our reference goes */
		return;
	}
	e->trace = trace;
	e->bytes = bytes + strlen(key) + sizeof(*e);
	e->resp = resp;
	h = rc_hash(key) % c->nbuckets;
	pthread_mutex_lock(&c->mu);
	e->chain = c->buckets[h];
	c->buckets[h] = e;
	lru_push(c, e);
	c->bytes += e->bytes;
	while (c->bytes > c->budget && c->tail && c->tail != e)
		rc_remove(c, c->tail);
	pthread_mutex_unlock(&c->mu);
}

void rc_drop_trace(struct rcache *c, int64_t trace)
{
	struct rc_entry *e, *next;

	if (c->buckets == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	for (e = c->head; e; e = next) {
		next = e->next;
		if (e->trace == trace)
			rc_remove(c, e);
	}
	pthread_mutex_unlock(&c->mu);
}

void rc_fini(struct rcache *c)
{
	if (c->buckets == NULL)
		return;
	while (c->head)
		rc_remove(c, c->head);
	free(c->buckets);
	c->buckets = NULL;
	pthread_mutex_destroy(&c->mu);
}
