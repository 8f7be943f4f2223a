/*
 * The trace manager's JSON (docs/API.md, Captures): a capture object and
 * its providers' statistics (ProviderStats), rendered from a session that
 * session.c holds under the manager's lock while this runs.
 */
#include <string.h>

#include "session.h"

static const char *mode_name(int mode)
{
	return mode == FIFO_MODE_ONESHOT ? "oneshot" : mode == FIFO_MODE_CIRCULAR ? "circular" : "streaming";
}

static void pstat_json(const struct pstat *ps, struct jbuf *b)
{
	jb_obj(b);
	jb_key(b, "provider_id");
	jb_i64(b, ps->provider);
	jb_key(b, "name");
	jb_str(b, ps->name);
	jb_key(b, "pid");
	jb_u64(b, ps->pid);
	jb_key(b, "buffering_mode");
	jb_str(b, mode_name(ps->mode));
	jb_key(b, "started");
	jb_bool(b, ps->started);
	jb_key(b, "stopped");
	jb_bool(b, ps->stopped);
	jb_key(b, "connected");
	jb_bool(b, !ps->gone);
	jb_key(b, "buffer_wrapped_count");
	jb_u64(b, ps->mode == FIFO_MODE_CIRCULAR ? ps->wrapped + ps->ring.wraps : ps->wrapped);
	jb_key(b, "records_dropped");
	jb_u64(b, ps->dropped + ps->refused);
	jb_key(b, "records_dropped_by_server");
	jb_u64(b, ps->refused);
	jb_key(b, "records_overwritten");
	jb_u64(b, ps->overwritten + ps->ring.evicted);
	jb_key(b, "durable_bytes_written");
	jb_u64(b, ps->durable_bytes);
	jb_key(b, "non_durable_bytes_written");
	jb_u64(b, ps->rolling_bytes);
	jb_key(b, "error");
	if (ps->failed)
		jb_str(b, ps->why[0] ? ps->why
				     : "the provider sent records whose framing is broken; the rest of its data was refused");
	else
		jb_null(b);
	jb_obj_end(b);
}

void cap_stats_json_of(const struct session *s, struct jbuf *b)
{
	size_t i;

	jb_key(b, "provider_stats");
	jb_arr(b);
	for (i = 0; i < s->nps; i++)
		pstat_json(s->ps[i], b);
	jb_arr_end(b);
}

/* A comma-separated list as a JSON array of its names, as TraceConfig
 * takes them ("" is []). */
static void list_json(struct jbuf *b, const char *list)
{
	jb_arr(b);
	while (*list) {
		size_t n = strcspn(list, ",");

		if (n)
			jb_strn(b, list, n);
		list += n + (list[n] == ',');
	}
	jb_arr_end(b);
}

void cap_session_json(const struct session *s, struct jbuf *b)
{
	jb_obj(b);
	jb_key(b, "id");
	jb_i64(b, s->id);
	jb_key(b, "name");
	jb_str(b, s->name);
	jb_key(b, "state");
	jb_str(b, cap_state_name(s->state));
	jb_key(b, "state_version");
	jb_u64(b, s->version);
	jb_key(b, "trace_id");
	if (s->trace > 0)
		jb_i64(b, s->trace);
	else
		jb_null(b);
	jb_key(b, "config");
	jb_obj(b);
	jb_key(b, "categories");
	list_json(b, s->categories);
	jb_key(b, "buffer_size_megabytes_hint");
	jb_u64(b, s->cfg.buffer_size_megabytes_hint);
	jb_key(b, "start_timeout_milliseconds");
	jb_u64(b, s->cfg.start_timeout_milliseconds);
	jb_key(b, "buffering_mode");
	jb_str(b, mode_name(s->cfg.buffering_mode));
	jb_obj_end(b);
	cap_stats_json_of(s, b);
	jb_key(b, "alerts_pending");
	jb_u64(b, s->nalerts);
	jb_key(b, "error");
	if (s->error[0])
		jb_str(b, s->error);
	else
		jb_null(b);
	jb_obj_end(b);
}
