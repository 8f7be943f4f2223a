/*
 * The trace manager: the controller's session (fuchsia-trace-controller.txt)
 * and the providers that record for it (docs/PROVIDER-PROTOCOL.md).
 *
 * Providers connect over an upgraded HTTP connection and stay registered
 * while it lasts; each has a reader thread here. A capture is one session:
 * initialized with a TraceConfig, started and stopped any number of times,
 * terminated once. Every provider in it records into the capture's trace,
 * a live trace of the catalog (catalog.h, cat_live_open): the manager
 * writes the FXT magic record, then each provider's records in a provider
 * section of their own, a DATA frame at a time, and enforces the buffering
 * mode on what it receives (oneshot: the first buffer's worth; circular:
 * the newest buffer's worth plus every durable record; streaming: all).
 * When the capture is terminated its trace is complete and becomes ready.
 *
 * Requests that wait (StartTracing until the providers have started,
 * StopTracing until they have stopped, WatchAlert, state changes) do not
 * hold a thread: the caller suspends its connection with cap_wait and is
 * resumed on any change, or at its deadline, to look again.
 */
#ifndef CAPTURE_CAPTURE_H
#define CAPTURE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "../catalog/catalog.h"
#include "../json/jbuf.h"
#include "fifo.h"

struct captures;

/* SessionState (fuchsia.tracing.controller), by value. */
enum cap_state {
	CAP_READY = 1,
	CAP_INITIALIZED,
	CAP_STARTING,
	CAP_STARTED,
	CAP_STOPPING,
	CAP_STOPPED,
	CAP_TERMINATING,
};
/* "ready", "initialized", ... */
const char *cap_state_name(int state);

struct cap_hooks {
	void (*suspend)(void *conn); /* called under the manager's lock */
	void (*resume)(void *conn);
	/* closes a provider's upgraded connection (its socket is then gone) */
	void (*close)(void *handle);
};

/* dir is the data directory: the last capture id given out is kept in
 * dir/capture-id, so that no id is given out twice (docs/API.md). */
struct captures *cap_open(struct catalog *cat, const char *dir, const struct cap_hooks *h, char *err, size_t errlen);
/* Ends every capture (its trace kept as received) and disconnects every
 * provider; requests may still call in (waits then answer at once) until
 * cap_free, once the HTTP server has stopped. */
void cap_close(struct captures *m);
void cap_free(struct captures *m);

/* ---- providers ---- */

enum { CAP_MAX_PROVIDERS = 100, CAP_MAX_NAME = 100 };

/*
 * Registers a provider whose connection was upgraded: sock is its socket
 * (handle closes it through hooks->close, which the manager calls once,
 * when the provider is gone); extra holds bytes already read from it.
 * Returns the provider id, or -1 when too many providers are connected
 * (the caller closes it).
 */
int64_t cap_provider_add(struct captures *m, const char *name, uint64_t pid, const char *categories, int sock,
			 void *handle, const void *extra, size_t extra_len);
/* {"providers": [{"id", "name", "pid", "categories"}]} (GetProviders) */
void cap_providers_json(struct captures *m, struct jbuf *out);
/* {"categories": [{"name", "providers"}]} (GetKnownCategories) */
void cap_categories_json(struct captures *m, struct jbuf *out);
size_t cap_provider_count(struct captures *m);

/* ---- captures ---- */

enum { CAP_MAX_CATEGORIES = 100, CAP_MAX_SPECS = 100 };
/* A list of CAP_MAX_CATEGORIES names of 100 bytes, comma-separated, fits. */
enum { CAP_CATEGORIES_SIZE = 10240 };

struct cap_spec { /* ProviderSpec */
	char name[CAP_MAX_NAME + 1];
	uint32_t buffer_size_megabytes_hint; /* 0 = the config's */
	char categories[CAP_CATEGORIES_SIZE]; /* comma-separated; "" = the config's */
	int has_categories;
};

struct cap_config { /* TraceConfig, plus the trace's metadata */
	char categories[CAP_CATEGORIES_SIZE]; /* comma-separated; "" = every category */
	uint32_t buffer_size_megabytes_hint; /* per provider, 1 to 64 */
	uint64_t start_timeout_milliseconds;
	int buffering_mode;                  /* FIFO_MODE_* */
	struct cap_spec *specs;
	size_t nspecs;
	const char *name;
	const char *description;
	const struct cat_label *labels;
	size_t nlabels;
};

/* Errors of the controller's protocol, as the API answers them. */
enum cap_err {
	CAP_OK = 0,
	CAP_ENOENT = -1,        /* no such capture */
	CAP_EEXISTS = -2,       /* a session is already initialized */
	CAP_ENOT_INIT = -3,     /* StartError/StopError NOT_INITIALIZED */
	CAP_EALREADY = -4,      /* StartError ALREADY_STARTED */
	CAP_ESTOPPING = -5,     /* StartError STOPPING */
	CAP_ETERMINATING = -6,  /* StartError TERMINATING */
	CAP_ENOT_STARTED = -7,  /* StopError NOT_STARTED */
	CAP_ESTORAGE = -8,      /* the trace could not be made */
};

/* InitializeTracing: the capture's id, or an error (err says why). */
int64_t cap_initialize(struct captures *m, const struct cap_config *cfg, char *err, size_t errlen);
/* StartTracing: sends START to the capture's providers; then wait with
 * cap_start_done. additional: comma-separated categories or NULL. */
int cap_start(struct captures *m, int64_t id, int disposition, const char *additional, char *err, size_t errlen);
/* StopTracing: sends STOP; then wait with cap_stop_done. */
int cap_stop(struct captures *m, int64_t id, int write_results, char *err, size_t errlen);
/* Terminate: stops if needed, ends the trace (it becomes ready). */
int cap_terminate(struct captures *m, int64_t id, char *err, size_t errlen);
/* 1 when every provider of the capture has answered (STARTED, STOPPED),
 * or none is left to wait for; 0 while waiting; CAP_ENOENT. After a stop
 * is done, the manager has written what circular buffers held. */
int cap_start_done(struct captures *m, int64_t id);
int cap_stop_done(struct captures *m, int64_t id);
/* Marks the start or stop finished when the caller stops waiting (its
 * deadline passed): the state moves on without the late providers. */
void cap_start_finish(struct captures *m, int64_t id);
void cap_stop_finish(struct captures *m, int64_t id);

/* The capture object; 0, or CAP_ENOENT. */
int cap_json(struct captures *m, int64_t id, struct jbuf *out);
/* {"captures": [...]}: the current one and the last ones ended. */
void cap_list_json(struct captures *m, struct jbuf *out);
/* StopResult: {"provider_stats": [...]}. */
int cap_stats_json(struct captures *m, int64_t id, struct jbuf *out);
/* The next queued alert (WatchAlert) into name: 1, 0 when none, CAP_ENOENT. */
int cap_alert_take(struct captures *m, int64_t id, char name[FIFO_ALERT_MAX + 1]);
/* The state and its version (bumped at every change); CAP_ENOENT. */
int cap_state(struct captures *m, int64_t id, int *state, uint64_t *version);
/* The capture's timeout for StartTracing, in milliseconds. */
uint64_t cap_start_timeout(struct captures *m, int64_t id);

/* Suspends conn until the manager changes or deadline_ms (CLOCK_MONOTONIC
 * milliseconds) passes; the caller then looks again. 0, or -1 (answer at
 * once). */
int cap_wait(struct captures *m, void *conn, int64_t deadline_ms);
int64_t cap_now_ms(void);

#endif
