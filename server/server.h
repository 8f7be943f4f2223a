/*
 * The HTTP server: a library of traces, uploads, background ingest and the
 * query API, served with libmicrohttpd.
 */
#ifndef SERVER_H
#define SERVER_H

#include <stdint.h>

struct srv_opts {
	unsigned port;          /* 0 = any free port (printed at start) */
	const char *bind;       /* address to listen on */
	const char *data_dir;   /* catalog and traces */
	const char *catalog;    /* NULL = catalog.db under data_dir; else a PostgreSQL URL */
	const char *store_url;  /* s3://... : the traces' files there instead; NULL = under data_dir */
	const char *cache_dir;  /* with store_url: local copies; NULL = <data_dir>/cache */
	uint64_t cache_max;     /* with store_url: bytes the cache may hold; 0 = no bound */
	uint64_t store_part_size; /* with store_url: bytes of each multipart part; 0 = 8 MiB */
	const char *token_file; /* NULL = no token */
	const char *static_dir; /* NULL = find it next to the binary */
	const char *demo;       /* an archive to add when the library is empty */
	uint64_t max_upload;    /* bytes */
	unsigned threads;       /* HTTP worker threads; 0 = one per core */
	int insecure_public;    /* allow a non-loopback bind without a token */
	int64_t keep_failed;    /* seconds a failed trace stays listed (default one day) */
	int64_t retain_days;    /* remove unpinned traces older than this; 0 = never */
	uint64_t retain_bytes;  /* remove the oldest unpinned traces above this; 0 = no bound */
	int64_t live_pause_ms;  /* a live stream idle this long is snapshotted whole (live.c); 0 = never */
	uint64_t preview_min;   /* FXT uploads this large grow in place while ingested; 0 = never */
};

/* Parses argv of `trace-server serve`; returns 0, or prints why and returns 2
 * (1 with --help printed). */
int srv_parse_args(int argc, char **argv, struct srv_opts *o);

/* 0 when s is a postgres:// URL without a password (it would show in ps
 * and shell histories; libpq reads PGPASSWORD or ~/.pgpass), else -1. */
int srv_catalog_url_ok(const char *s);

/* Runs until SIGINT or SIGTERM. Returns the process exit code. */
int srv_run(const struct srv_opts *o);

#endif
