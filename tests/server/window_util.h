/*
 * What a trace's database must hold, for tests over loopback that compare
 * what the server made of a stream or an upload as it grew (test_live.c,
 * test_preview.c) with the CLI's ingest of the same bytes: every table
 * compared (ingest_util.h), and FXT records read independently of the
 * server's decoder, to build streams of several providers.
 */
#ifndef TESTS_SERVER_WINDOW_UTIL_H
#define TESTS_SERVER_WINDOW_UTIL_H

#include <sqlite3.h>

#include "../../ingest/fxtrec.h"
#include "../ingest_util.h" /* same_tables */
#include "api_util.h"

/* ---- FXT records, read independently ----------------------------------- */

/* The bytes of the FXT record at p: its size word in 8-byte words (bits
 * 4..15; 4..35 for a large record, type 15). */
static inline size_t rec_bytes(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	return (size_t)((h & 15) == 15 ? (h >> 4) & 0xffffffffu : (h >> 4) & 0xfff) * 8;
}

/* A provider info (1) or provider section (2) metadata record: its
 * provider id, else -1. */
static inline int64_t rec_provider(const uint8_t *p)
{
	uint64_t h = fxt_ld64(p);

	if ((h & 15) != 0 || (((h >> 16) & 15) != 1 && ((h >> 16) & 15) != 2))
		return -1;
	return (int64_t)((h >> 20) & 0xffffffffu);
}

static inline size_t put_section(uint8_t *out, int64_t provider)
{
	uint64_t h = (uint64_t)1 << 4 | (uint64_t)2 << 16 | (uint64_t)provider << 20;
	int i;

	for (i = 0; i < 8; i++, h >>= 8)
		out[i] = (uint8_t)h;
	return 8;
}


#endif
