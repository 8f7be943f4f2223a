/*
 * Inside capture/: the providers connected to the trace manager, each with
 * a reader thread that reads its packets from the upgraded socket and
 * hands them to the session (reader.c).
 */
#ifndef CAPTURE_READER_H
#define CAPTURE_READER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

struct captures;

struct provider {
	int64_t id;
	char name[CAP_MAX_NAME + 1];
	uint64_t pid;
	char *categories;
	int sock;
	void *handle;
	uint8_t *extra;                     /* bytes read before the upgrade */
	size_t extra_len, extra_off;
	pthread_t reader;
	struct provider *next;
};

/* Sends a packet (and its payload) to p without blocking; a provider that
 * does not read what it is sent is disconnected. 0, or -1. */
int cap_provider_send(struct provider *p, const struct fifo_packet *pk, const void *payload, size_t n);
/* Sends the categories p is to record (DATA kind 1). */
void cap_provider_send_categories(struct provider *p, const char *cats);
/* The connected provider with this id; NULL. Under the lock. */
struct provider *cap_provider_find(struct captures *m, int64_t id);

#endif
