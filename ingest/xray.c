/*
 * The LLVM XRay Flight Data Recorder (FDR) log decoder.
 *
 * A push parser: xray_feed() takes the log in chunks of any size. The log is
 * a header and a sequence of per-thread buffers that the runtime flushes in
 * ring order, not time order, so each buffer is checked as a whole when it
 * is complete and its records are kept, as the raw bytes, in one arena (or
 * left where they lie, when the caller keeps the whole input readable).
 * xray_finish() orders each thread's buffers by the time of their first
 * record, walks them again, matches entries with exits on a per-thread stack
 * and appends model events (model.h), thread after thread (by_thread), each
 * thread's in time order: a call event "fn#<id>"
 * per call at its enter (MDL_EV_CALL: its end goes to m->ends when it
 * returns; never, for a call still open at the end of its thread, which
 * matching then reads as a begin), instants for custom and typed events, a
 * "cpu" counter per thread. The raw bytes are the
 * most compact form of the records (8 bytes a function record); per record
 * the decoder allocates nothing, and the arena is freed before returning.
 *
 * Specification: version 1 in ../shared/spec/xray-fdr-format.txt
 * (https://llvm.org/docs/XRayFDRFormat.html); versions 2-5 as LLVM's reader
 * (llvm/lib/XRay/FDRRecordProducer.cpp, RecordInitializer.cpp,
 * FDRTraceExpander.cpp) and compiler-rt's writer (xray_fdr_controller.h,
 * xray_fdr_logging.cpp) define them. All words are little-endian.
 *
 * File header (32 bytes):
 *   off size  meaning
 *    0    2   version, 1..5
 *    2    2   type, 1 = FDR
 *    4    4   bit 0 constant TSC, bit 1 non-stop TSC
 *    8    8   cycle frequency in Hz: ns = ticks * 1e9 / frequency
 *   16    8   buffer size: v1 every buffer is this long in the file;
 *             v2+ the runtime's buffer size, a bound on every extent
 *   24    8   reserved
 * Data: v1 fixed-size buffers back to back; v2+ each buffer is a
 * BufferExtents metadata record (kind 7, u64 n) and n bytes of records.
 * A buffer starts with NewBuffer, then WallTimeMarker, Pid (v3+), NewCPUId.
 *
 * Function record (8 bytes):
 *   bits 0      0 = function record
 *   bits 1..3   0 enter, 1 exit, 2 tail exit, 3 enter with arguments
 *   bits 4..31  function id
 *   bits 32..63 ticks since the previous record (added to the latest TSC)
 * Metadata record (16 bytes): byte 0 = 1 | kind << 1, then 15 data bytes:
 *   kind  name               data (offsets within the 15 bytes)
 *    0    NewBuffer          0: u32 thread id
 *    1    EndOfBuffer        v1: the rest of the fixed-size buffer is filler
 *    2    NewCPUId           0: u16 cpu, 2: u64 absolute TSC
 *    3    TSCWrap            0: u64 absolute TSC
 *    4    WallTimeMarker     0: u64 seconds, 8: u32 microseconds
 *    5    CustomEventMarker  v1-3: 0: i32 size, 4: u64 TSC
 *                            v4:   0: i32 size, 4: u64 TSC, 12: u16 cpu
 *                            v5:   0: i32 size, 4: i32 TSC delta
 *                            then size bytes of payload, unaligned
 *    6    CallArgument       0: u64 argument of the last enter-with-args
 *    7    BufferExtents      0: u64 bytes of buffer data that follow
 *    8    TypedEventMarker   0: i32 size, 4: i32 TSC delta, 8: u16 type;
 *                            then size bytes of payload
 *    9    Pid (v3+)          0: u32 process id
 * Unused data bytes are not zeroed by the runtime and are never checked.
 *
 * Where we knowingly depart from the texts, to read what real logs hold:
 * - A damaged buffer (a record that does not fit, an unknown kind, a
 *   function record before any TSC, a buffer not starting with NewBuffer)
 *   is dropped alone and counted in malformed_records; LLVM's reader
 *   rejects the whole file. A bad extents record is counted once and the
 *   reader scans for the next plausible one (kind 7, size within bounds,
 *   followed by a NewBuffer).
 * - When the input ends inside a buffer, its whole records are kept and
 *   the rest of it counts as truncated_bytes.
 * - Each thread's buffers are ordered by the TSC of their first timed
 *   record, then wall time, then file order. (LLVM's reader sorts them
 *   with a comparator, seconds < && microseconds <, that leaves buffers of
 *   the same second in file order; `llvm-xray convert` repairs that only
 *   because it sorts every record by TSC, which its --sort=false turns off.)
 * - v1: the filler after EndOfBuffer is skipped by the header's buffer
 *   size, whatever its content and length (LLVM parses it as records and
 *   rejects the file unless it is zeros and a multiple of 8 bytes).
 * - NewBuffer's thread id is read as 4 bytes in every version (the v1 text
 *   says 2), as LLVM does. The pid is 0 before v3 (LLVM uses the tid in v2).
 * - An EndOfBuffer record in a v2+ buffer ends that buffer's records.
 * - A CallArgument that does not follow an enter-with-args is ignored and
 *   counted in ignored_records. More than 255 arguments are ignored too.
 * - An exit closes the innermost open call of its function; calls above it
 *   that never exited are closed at the same time and counted in
 *   unterminated_slices (their end was never recorded). An exit whose
 *   function has no open call counts in unmatched_ends.
 * - A zero cycle frequency counts one malformed record (the header) and
 *   ticks are read as nanoseconds. v1 logs whose buffer size is out of
 *   bounds cannot be framed: one malformed record, the data is skipped.
 * - Big-endian logs are not read (no runtime writes them).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xray.h"
#include "reader.h"

#define XR_MAX_BUFFER (UINT64_C(1) << 30) /* larger buffers are damage */

enum {
	XR_HEADER_SIZE = 32,
	XR_META_SIZE = 16,
	XR_FUNC_SIZE = 8,
	XR_SYNC_WINDOW = XR_META_SIZE + 1, /* an extents record and the next byte */
	XR_MAX_ARGS = 255,
	XR_EXTENTS_BYTE = 1 | 7 << 1,
	XR_NEW_BUFFER_BYTE = 1 | 0 << 1
};

enum xr_meta_kind {
	XM_NEW_BUFFER,
	XM_END_OF_BUFFER,
	XM_NEW_CPU,
	XM_TSC_WRAP,
	XM_WALLTIME,
	XM_CUSTOM,
	XM_CALL_ARG,
	XM_EXTENTS,
	XM_TYPED,
	XM_PID
};

enum xr_fn_kind { XF_ENTER, XF_EXIT, XF_TAIL_EXIT, XF_ENTER_ARGS };

/* What a record means to the event stage. */
enum xr_rec_kind { XR_FUNC, XR_ARG, XR_ORPHAN_ARG, XR_CPU, XR_EVENT, XR_OTHER };

/* Results of the record walker. */
enum { XR_END = 0, XR_REC = 1, XR_BAD = -1, XR_CUT = -2 };

/* The push parser's place in the file. */
enum xr_state { XS_HEADER, XS_EXTENTS, XS_SYNC, XS_DATA, XS_SKIP };

/* One record as the walker reports it; only the fields of its kind are set. */
struct xr_rec {
	uint8_t kind;        /* enum xr_rec_kind */
	uint8_t fn;          /* enum xr_fn_kind (XR_FUNC) */
	uint8_t typed;       /* XR_EVENT: a typed event, else a custom one */
	uint16_t cpu;        /* XR_CPU */
	uint32_t fid;        /* XR_FUNC: function id */
	uint32_t len;        /* XR_EVENT: payload bytes */
	uint64_t tsc;        /* absolute ticks of XR_FUNC, XR_CPU, XR_EVENT */
	uint64_t value;      /* XR_ARG: the argument; typed XR_EVENT: its type */
	const uint8_t *data; /* XR_EVENT: the payload, inside the buffer */
};

/* A cursor over one buffer's records and the state their deltas need. */
struct xr_cur {
	struct rd r;           /* the buffer; r.end is its declared end */
	const uint8_t *good;   /* one past the last whole, valid record */
	uint16_t version;      /* file version: record layouts depend on it */
	int started;           /* NewBuffer has been read */
	int have_tsc;          /* NewCPUId or TSCWrap has set tsc */
	int args_ok;           /* the previous record entered with arguments, or was one */
	uint64_t tsc;          /* latest absolute ticks */
	uint32_t tid, pid;     /* from NewBuffer and the first Pid record */
	uint64_t wall_sec;     /* first WallTimeMarker, 0 when none */
	uint32_t wall_usec;
};

/* A stored buffer: its records are at off .. off + len of the arena, or of
 * the input when it is stable (xray_stable_input). 40 bytes. */
struct xr_buf {
	uint64_t first_tsc; /* ticks of the first timed record: the sort key */
	uint64_t wall_sec;  /* then the wall-clock marker */
	uint64_t off;       /* offset of the records in the arena or the input */
	uint32_t wall_usec;
	uint32_t len;       /* bytes of whole records; at most XR_MAX_BUFFER */
	uint32_t thread;    /* model thread index */
	uint32_t seq;       /* file order, the last tie-break */
};

/* An open call. Its event (MDL_EV_CALL) was appended at the enter, so
 * events reach the model in time order; its end goes to m->ends when the
 * call returns. The event's index lasts only for the walk step of the
 * enter (the model may spill its events between steps): long enough for
 * the call's arguments, which follow the enter directly. */
struct xr_frame {
	uint32_t ev;      /* index of the event in m->events, during the enter's step */
	uint32_t end;     /* index of its end in m->ends */
	uint32_t fid;     /* function id */
};

/* Open-addressing map from a 28-bit id to a 32-bit value. */
struct xr_map {
	uint32_t *keys; /* id + 1; 0 = empty slot */
	uint32_t *vals;
	size_t mask;    /* slot count - 1; 0 before the first insertion */
	size_t len;     /* keys in use; at most half the slots */
};

/*
 * One thread in the event stage: its buffers in time order, the record read
 * ahead and the matching state. The stage walks the threads one after
 * another (model.h, by_thread), so that events reach the model in the order
 * the build stage takes them and it finds them sorted.
 */
struct xr_walk {
	size_t buf, end;       /* the thread's next buffer in bufs; one past its last */
	size_t cur_buf;        /* the buffer the cursor reads, + 1; 0 before the first */
	struct xr_cur c;       /* cursor in the current buffer */
	struct xr_rec rec;     /* the record read ahead; valid while live */
	int live;
	int64_t key;           /* rec's time in ns; the thread's last time for untimed records */
	int key_exact;         /* key is rec's time, not clamped */
	uint32_t order;        /* the walk's place in thread order: the tie-break */
	int64_t start;         /* the time of its first timed record, ns: the walks' order */
	struct vec stack;      /* struct xr_frame, innermost last */
	struct xr_map open;    /* function id -> frames of it on the stack */
	uint32_t thread;       /* model thread of the buffers being walked */
	uint64_t tid;          /* its thread id: the cpu counter's id */
};

struct xray_decoder {
	struct model *m;
	enum xr_state state;
	uint16_t version;      /* header version, 1..5 */
	uint64_t freq;         /* cycle frequency in Hz; 0 = ticks are ns */
	uint64_t max_extent;   /* largest acceptable buffer */
	uint64_t pos;          /* bytes fed so far */
	uint8_t small[XR_HEADER_SIZE]; /* header, extents record or sync window */
	size_t small_len;
	uint64_t need;         /* bytes of the buffer in flight */
	uint64_t have;         /* bytes of it received, at arena[buf_start ..] (stable: at buf_pos) */
	size_t buf_start;
	uint8_t *arena;        /* records of the stored buffers, then the one in flight */
	size_t arena_len, arena_cap;
	const uint8_t *stable; /* the whole input, when the caller keeps it readable: no arena */
	size_t drop_page;      /* stable is a file mapping: the page size, by which the pages
				* of each buffer walked are given back; 0 when not */
	uint32_t *by_seq;      /* drop_page, during the walk: index in bufs of each buffer, in file order */
	uint8_t *walked;       /* drop_page, during the walk: XR_UNWALKED, XR_WALKED or
				* XR_DROPPED (its pages given back) for each buffer of bufs */
	uint64_t drop_pending; /* bytes of buffers XR_WALKED */
	uint64_t buf_pos;      /* stable: input offset of the buffer in flight */
	struct vec bufs;       /* struct xr_buf */
	int not_trace;         /* the header is not an FDR log's */
	int finished;
	/* the event stage */
	struct xr_walk *w;     /* the thread whose record is being turned into events */
	struct xr_map names;   /* function id -> string id of "fn#<id>" + 1, past the first ids */
	uint32_t *names_near;  /* the same for the first XR_NAMES_NEAR ids, indexed */
	uint32_t arg_keys[XR_MAX_ARGS]; /* "arg<i>" string id + 1, 0 until used */
	uint32_t s_cat, s_cpu, s_custom, s_typed, s_size, s_type, s_payload;
};

/* ---- small helpers --------------------------------------------------- */

static void xr_map_fini(struct xr_map *mp)
{
	free(mp->keys);
	free(mp->vals);
	memset(mp, 0, sizeof(*mp));
}

static size_t xr_map_slot(const struct xr_map *mp, uint32_t id)
{
	size_t j = (size_t)(((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & mp->mask;

	while (mp->keys[j] != 0 && mp->keys[j] != id + 1)
		j = (j + 1) & mp->mask;
	return j;
}

static int xr_map_grow(struct xr_map *mp)
{
	struct xr_map g = { 0 };
	size_t n = mp->mask ? (mp->mask + 1) * 2 : 256, i, j;

	g.keys = calloc(n, sizeof(uint32_t));
	g.vals = calloc(n, sizeof(uint32_t));
	if (g.keys == NULL || g.vals == NULL) {
		xr_map_fini(&g);
		return -1;
	}
	g.mask = n - 1;
	g.len = mp->len;
	for (i = 0; mp->mask && i <= mp->mask; i++) {
		if (mp->keys[i] == 0)
			continue;
		j = xr_map_slot(&g, mp->keys[i] - 1);
		g.keys[j] = mp->keys[i];
		g.vals[j] = mp->vals[i];
	}
	xr_map_fini(mp);
	*mp = g;
	return 0;
}

/* Returns the value slot of id, inserting 0 when absent; NULL when out of memory. */
static uint32_t *xr_map_get(struct xr_map *mp, uint32_t id)
{
	size_t j;

	if ((mp->len + 1) * 2 > (mp->mask ? mp->mask + 1 : 0) && xr_map_grow(mp) != 0)
		return NULL;
	j = xr_map_slot(mp, id);
	if (mp->keys[j] == 0) {
		mp->keys[j] = id + 1;
		mp->vals[j] = 0;
		mp->len++;
	}
	return &mp->vals[j];
}

/* Returns the value slot of id, or NULL when absent. */
static uint32_t *xr_map_find(const struct xr_map *mp, uint32_t id)
{
	size_t j;

	if (mp->mask == 0)
		return NULL;
	j = xr_map_slot(mp, id);
	return mp->keys[j] ? &mp->vals[j] : NULL;
}

/* Ticks to nanoseconds, truncated and exact for every 64-bit tick count:
 * ticks * 10^9 / freq is q * 10^9 + r * 10^9 / freq for ticks = q * freq + r,
 * two 64-bit divisions where r * 10^9 fits (every real clock) instead of
 * a 128-bit one. */
static unsigned __int128 xr_ticks_ns(const struct xray_decoder *d, uint64_t ticks)
{
	uint64_t q, r;

	if (d->freq == 0 || d->freq == 1000000000u)
		return ticks;
	if (d->freq > UINT64_MAX / 1000000000u)
		return (unsigned __int128)ticks * 1000000000u / d->freq;
	q = ticks / d->freq;
	r = ticks % d->freq;
	return (unsigned __int128)q * 1000000000u + r * 1000000000u / d->freq;
}

/* An event's time: nanoseconds clamped to INT64_MAX, counting overflows.
 * The current record's time was worked out when it was read ahead. */
static int64_t xr_ns(struct xray_decoder *d, uint64_t ticks)
{
	unsigned __int128 ns;

	if (d->w != NULL && d->w->key_exact && d->w->rec.tsc == ticks)
		return d->w->key;
	if ((ns = xr_ticks_ns(d, ticks)) > INT64_MAX) {
		d->m->diag.timestamp_overflows++;
		return INT64_MAX;
	}
	return (int64_t)ns;
}

/* Appends n bytes to the arena. Returns 0, or -1 when out of memory. */
static int xr_arena_put(struct xray_decoder *d, const uint8_t *p, size_t n)
{
	if (n > d->arena_cap - d->arena_len) {
		size_t cap = d->arena_cap ? d->arena_cap : 65536;
		uint8_t *a;

		while (cap - d->arena_len < n)
			cap += cap / 2;
		if ((a = realloc(d->arena, cap)) == NULL) {
			d->m->oom = 1;
			return -1;
		}
		d->arena = a;
		d->arena_cap = cap;
	}
	memcpy(d->arena + d->arena_len, p, n);
	d->arena_len += n;
	return 0;
}

/* ---- the record walker ------------------------------------------------- */

static void xr_cur_init(struct xr_cur *c, const uint8_t *p, size_t n, uint16_t version)
{
	memset(c, 0, sizeof(*c));
	rd_init(&c->r, p, n, 0);
	c->good = p;
	c->version = version;
}

static int xr_function(struct xr_cur *c, struct xr_rec *out)
{
	uint32_t w, delta;

	if (rd_left(&c->r) < XR_FUNC_SIZE)
		return XR_CUT;
	w = rd_u32(&c->r);
	delta = rd_u32(&c->r);
	if (!c->have_tsc || ((w >> 1) & 7) > XF_ENTER_ARGS)
		return XR_BAD;
	c->tsc += delta;
	out->kind = XR_FUNC;
	out->fn = (uint8_t)((w >> 1) & 7);
	out->fid = w >> 4;
	out->tsc = c->tsc;
	c->args_ok = out->fn == XF_ENTER_ARGS;
	return XR_REC;
}

/* A custom event marker (body b) and its payload, which follows in c. */
static int xr_custom(struct xr_cur *c, struct rd *b, struct xr_rec *out)
{
	uint32_t size = rd_u32(b);

	if (c->version >= 5) {
		int32_t delta = (int32_t)rd_u32(b);

		if (!c->have_tsc)
			return XR_BAD;
		c->tsc += (uint64_t)(int64_t)delta;
		out->tsc = c->tsc;
	} else {
		out->tsc = rd_u64(b);
	}
	if (size > INT32_MAX)
		return XR_BAD;
	if (size > rd_left(&c->r))
		return XR_CUT;
	out->kind = XR_EVENT;
	out->typed = 0;
	out->len = size;
	out->data = rd_bytes(&c->r, size);
	return XR_REC;
}

/* A typed event marker (body b) and its payload, which follows in c. */
static int xr_typed(struct xr_cur *c, struct rd *b, struct xr_rec *out)
{
	uint32_t size = rd_u32(b);
	int32_t delta = (int32_t)rd_u32(b);

	out->value = rd_u16(b);
	if (!c->have_tsc || size > INT32_MAX)
		return XR_BAD;
	if (size > rd_left(&c->r))
		return XR_CUT;
	c->tsc += (uint64_t)(int64_t)delta;
	out->kind = XR_EVENT;
	out->typed = 1;
	out->tsc = c->tsc;
	out->len = size;
	out->data = rd_bytes(&c->r, size);
	return XR_REC;
}

/* The buffer-identity records: NewBuffer, WallTimeMarker, Pid. */
static int xr_identity(struct xr_cur *c, struct rd *b, unsigned kind)
{
	if (kind == XM_NEW_BUFFER) {
		if (c->started)
			return XR_BAD;
		c->started = 1;
		c->tid = rd_u32(b);
	} else if (kind == XM_WALLTIME && c->wall_sec == 0 && c->wall_usec == 0) {
		c->wall_sec = rd_u64(b);
		c->wall_usec = rd_u32(b);
	} else if (kind == XM_PID && c->pid == 0) {
		c->pid = rd_u32(b);
	}
	return XR_REC;
}

static int xr_metadata(struct xr_cur *c, struct xr_rec *out)
{
	unsigned kind;
	int args_ok = c->args_ok;
	struct rd b;

	if (rd_left(&c->r) < XR_META_SIZE)
		return XR_CUT;
	kind = rd_u8(&c->r) >> 1;
	b = rd_sub(&c->r, XR_META_SIZE - 1);
	out->kind = XR_OTHER;
	c->args_ok = 0;
	if (!c->started && kind != XM_NEW_BUFFER)
		return XR_BAD;
	switch (kind) {
	case XM_NEW_BUFFER:
	case XM_WALLTIME:
	case XM_PID:
		return xr_identity(c, &b, kind);
	case XM_END_OF_BUFFER:
		c->r.end = c->r.p; /* v1: filler follows */
		return XR_REC;
	case XM_NEW_CPU:
		out->kind = XR_CPU;
		out->cpu = rd_u16(&b);
		out->tsc = c->tsc = rd_u64(&b);
		c->have_tsc = 1;
		return XR_REC;
	case XM_TSC_WRAP:
		c->tsc = rd_u64(&b);
		c->have_tsc = 1;
		return XR_REC;
	case XM_CUSTOM:
		return xr_custom(c, &b, out);
	case XM_CALL_ARG:
		out->kind = args_ok ? XR_ARG : XR_ORPHAN_ARG;
		out->value = rd_u64(&b);
		c->args_ok = args_ok;
		return XR_REC;
	case XM_TYPED:
		return xr_typed(c, &b, out);
	default: /* BufferExtents inside a buffer, or an unknown kind */
		return XR_BAD;
	}
}

/*
 * Reads the next record of the buffer into out. Returns XR_REC, XR_END at
 * the buffer's end (or after EndOfBuffer), XR_BAD for damage, or XR_CUT
 * when the record runs past the end (damage too, unless the input ended).
 * c->good moves past each record returned.
 */
static int xr_next(struct xr_cur *c, struct xr_rec *out)
{
	int rc;

	if (rd_left(&c->r) == 0)
		return XR_END;
	if ((c->r.p[0] & 1) == 0)
		rc = xr_function(c, out);
	else
		rc = xr_metadata(c, out);
	if (rc == XR_REC)
		c->good = c->r.p;
	return rc;
}

/* Where the stored buffers' offsets count from. */
static const uint8_t *xr_records(const struct xray_decoder *d)
{
	return d->stable ? d->stable : d->arena;
}

/* ---- buffers as they arrive ------------------------------------------- */

/* Walks a buffer to check it: returns the walker's last result; *first
 * gets the ticks of its first timed record, *timed whether there is one. */
static int xr_scan(struct xr_cur *c, uint64_t *first, int *timed)
{
	struct xr_rec rec;
	int rc;

	*timed = 0;
	while ((rc = xr_next(c, &rec)) == XR_REC)
		if (!*timed && (rec.kind == XR_FUNC || rec.kind == XR_CPU || rec.kind == XR_EVENT)) {
			*first = rec.tsc;
			*timed = 1;
		}
	return rc;
}

/* Keeps the checked buffer in flight, whose records end at c->good. */
static int xr_buffer_keep(struct xray_decoder *d, const struct xr_cur *c, const uint8_t *p, uint64_t first)
{
	uint32_t thread = model_thread(d->m, d->version >= 3 ? c->pid : 0, c->tid);
	struct xr_buf *b;

	if (thread == MDL_NONE || d->bufs.len >= UINT32_MAX || (b = vec_push(&d->bufs)) == NULL) {
		d->m->oom = 1;
		return INGEST_ENOMEM;
	}
	b->first_tsc = first;
	b->wall_sec = c->wall_sec;
	b->wall_usec = c->wall_usec;
	b->off = d->stable ? d->buf_pos : d->buf_start;
	b->len = (uint32_t)(c->good - p);
	b->thread = thread;
	b->seq = (uint32_t)d->bufs.len - 1;
	return INGEST_OK;
}

/*
 * Checks the buffer in flight (arena[buf_start .. + have)) and stores it, or
 * drops it when damaged. partial: the input ended inside it; its whole
 * records are kept and the rest counts as truncated. A whole buffer
 * without timed records only registers its thread. Returns INGEST_OK or
 * INGEST_ENOMEM.
 */
static int xr_buffer_done(struct xray_decoder *d, int partial)
{
	static const uint8_t none[1];
	const uint8_t *p = d->stable ? d->stable + d->buf_pos : d->arena ? d->arena + d->buf_start : none;
	struct xr_cur c;
	uint64_t first = 0, used;
	int rc, timed;

	xr_cur_init(&c, p, (size_t)d->have, d->version);
	rc = xr_scan(&c, &first, &timed);
	used = (uint64_t)(c.good - p);
	if (!d->stable)
		d->arena_len = d->buf_start + (size_t)used;
	if (partial) /* the extents record too, when nothing of the buffer is whole */
		d->m->diag.truncated_bytes += d->have - used + (d->version >= 2 && used == 0 ? XR_META_SIZE : 0);
	if (rc == XR_BAD || (rc == XR_CUT && !partial)) {
		d->m->diag.malformed_records++;
		d->arena_len = d->buf_start;
		return INGEST_OK;
	}
	if (timed)
		return xr_buffer_keep(d, &c, p, first);
	d->arena_len = d->buf_start;
	if (!c.started || partial) /* a cut buffer may not have reached its Pid */
		return INGEST_OK;
	return model_thread(d->m, d->version >= 3 ? c.pid : 0, c.tid) == MDL_NONE ? INGEST_ENOMEM : INGEST_OK;
}

/* Starts a buffer of n bytes; an empty one is complete at once. */
static void xr_buffer_start(struct xray_decoder *d, uint64_t n)
{
	d->state = XS_DATA;
	d->need = n;
	d->have = 0;
	d->buf_start = d->arena_len;
}

/* The state after a buffer: the next fixed-size buffer (v1) or extents. */
static void xr_buffer_next(struct xray_decoder *d)
{
	if (d->version == 1)
		xr_buffer_start(d, d->need);
	else
		d->state = XS_EXTENTS;
	d->small_len = 0;
}

static int xr_header(struct xray_decoder *d, const uint8_t *h)
{
	uint64_t bufsize = rd_load64(h + 16, 0);

	if (!xray_detect(h, XR_HEADER_SIZE)) {
		d->not_trace = 1;
		return INGEST_ENOTTRACE;
	}
	d->version = rd_load16(h, 0);
	d->freq = rd_load64(h + 8, 0);
	if (d->freq == 0)
		d->m->diag.malformed_records++;
	d->max_extent = bufsize > 0 && bufsize <= XR_MAX_BUFFER ? bufsize : XR_MAX_BUFFER;
	d->small_len = 0;
	if (d->version >= 2) {
		d->state = XS_EXTENTS;
	} else if (bufsize < XR_META_SIZE || bufsize > XR_MAX_BUFFER) {
		d->m->diag.malformed_records++;
		d->state = XS_SKIP;
	} else {
		xr_buffer_start(d, bufsize);
	}
	return INGEST_OK;
}

/* Whether w holds a plausible extents record; strict: the next byte too. */
static int xr_extents_ok(const struct xray_decoder *d, const uint8_t *w, int strict)
{
	uint64_t n = rd_load64(w + 1, 0);

	if (w[0] != XR_EXTENTS_BYTE || n > d->max_extent)
		return 0;
	return !strict || (n >= XR_META_SIZE && w[XR_META_SIZE] == XR_NEW_BUFFER_BYTE);
}

/* Collects the small record (header or extents) the state waits for;
 * returns bytes taken. */
static size_t xr_feed_small(struct xray_decoder *d, const uint8_t *p, size_t n, int *rc)
{
	size_t want = d->state == XS_HEADER ? XR_HEADER_SIZE : XR_META_SIZE;
	size_t take = want - d->small_len < n ? want - d->small_len : n;

	memcpy(d->small + d->small_len, p, take);
	d->small_len += take;
	if (d->small_len < want)
		return take;
	if (d->state == XS_HEADER) {
		*rc = xr_header(d, d->small);
	} else if (xr_extents_ok(d, d->small, 0)) {
		xr_buffer_start(d, rd_load64(d->small + 1, 0));
	} else { /* resynchronize from the next byte */
		d->m->diag.malformed_records++;
		memmove(d->small, d->small + 1, --d->small_len);
		d->state = XS_SYNC;
	}
	return take;
}

/* Scans damaged data one byte at a time for the next extents record. */
static size_t xr_feed_sync(struct xray_decoder *d, const uint8_t *p, int *rc)
{
	d->small[d->small_len++] = p[0];
	if (d->small_len < XR_SYNC_WINDOW)
		return 1;
	if (!xr_extents_ok(d, d->small, 1)) {
		memmove(d->small, d->small + 1, --d->small_len);
		return 1;
	}
	xr_buffer_start(d, rd_load64(d->small + 1, 0));
	d->small_len = 0;
	d->have = 1;
	d->buf_pos = d->pos; /* p[0], the window's last byte, is the buffer's first */
	if (!d->stable && xr_arena_put(d, p, 1) != 0)
		*rc = INGEST_ENOMEM;
	return 1;
}

/* Copies buffer data into the arena; completes the buffer when whole. */
static size_t xr_feed_data(struct xray_decoder *d, const uint8_t *p, size_t n, int *rc)
{
	size_t take = d->need - d->have < n ? (size_t)(d->need - d->have) : n;

	if (d->have == 0)
		d->buf_pos = d->pos; /* p is at d->pos of the input */
	if (!d->stable && xr_arena_put(d, p, take) != 0) {
		*rc = INGEST_ENOMEM;
		return take;
	}
	d->have += take;
	if (d->have == d->need) {
		*rc = xr_buffer_done(d, 0);
		xr_buffer_next(d);
	}
	return take;
}

void xray_stable_input(struct xray_decoder *d, const uint8_t *base)
{
	if (d->pos == 0)
		d->stable = base;
}

void xray_stable_file(struct xray_decoder *d, const uint8_t *base)
{
	long page = sysconf(_SC_PAGESIZE);

	if (d->pos != 0)
		return;
	d->stable = base;
	d->drop_page = page > 0 && (page & (page - 1)) == 0 && ((uintptr_t)base & (uintptr_t)(page - 1)) == 0 ?
			       (size_t)page : 0;
}

int xray_feed(struct xray_decoder *d, const uint8_t *buf, size_t n)
{
	int rc = INGEST_OK;
	size_t k;

	if (d->finished)
		return INGEST_OK;
	while (rc == INGEST_OK && !d->not_trace) {
		if (d->state == XS_DATA && d->have == d->need) { /* an empty buffer */
			rc = xr_buffer_done(d, 0);
			xr_buffer_next(d);
			continue;
		}
		if (n == 0)
			break;
		if (d->state == XS_HEADER || d->state == XS_EXTENTS)
			k = xr_feed_small(d, buf, n, &rc);
		else if (d->state == XS_SYNC)
			k = xr_feed_sync(d, buf, &rc);
		else if (d->state == XS_DATA)
			k = xr_feed_data(d, buf, n, &rc);
		else
			k = n; /* XS_SKIP */
		buf += k;
		n -= k;
		d->pos += k;
	}
	if (d->not_trace)
		return INGEST_ENOTTRACE;
	return d->m->oom ? INGEST_ENOMEM : rc;
}

/* ---- the event stage ---------------------------------------------------- */

enum { XR_NAMES_NEAR = 1 << 16 };

static uint32_t xr_fn_name(struct xray_decoder *d, uint32_t fid)
{
	uint32_t *slot;
	char name[32];
	int n;

	if (fid < XR_NAMES_NEAR && d->names_near == NULL)
		d->names_near = calloc(XR_NAMES_NEAR, sizeof(uint32_t));
	if (fid < XR_NAMES_NEAR && d->names_near != NULL)
		slot = &d->names_near[fid];
	else
		slot = xr_map_get(&d->names, fid);
	if (slot == NULL) {
		d->m->oom = 1;
		return MDL_NONE;
	}
	if (*slot == 0) {
		n = snprintf(name, sizeof(name), "fn#%u", (unsigned)fid);
		*slot = model_intern(d->m, name, (size_t)n) + 1; /* MDL_NONE + 1 == 0 */
	}
	return *slot - 1;
}

/* Fills e, seq aside, as an event of the current thread at ticks whose
 * arguments are the next ones appended. */
static void xr_event_set(struct xray_decoder *d, struct mdl_ev *e, uint8_t kind, uint64_t ticks, uint32_t name)
{
	e->ts = xr_ns(d, ticks);
	model_note_ts(d->m, e->ts);
	e->thread = d->w->thread;
	e->cat = d->s_cat;
	e->name = name;
	e->kind = kind;
	e->args = (uint32_t)d->m->args.len;
}

/* Appends an event of the current thread at ticks; NULL when out of memory. */
static struct mdl_ev *xr_event(struct xray_decoder *d, uint8_t kind, uint64_t ticks, uint32_t name)
{
	struct mdl_ev *e;

	if (name == MDL_NONE || (e = model_event(d->m)) == NULL)
		return NULL;
	xr_event_set(d, e, kind, ticks, name);
	return e;
}

/* Appends an argument to event e (the last event with arguments). */
static struct mdl_arg *xr_arg_push(struct xray_decoder *d, struct mdl_ev *e, uint32_t key, uint8_t type)
{
	struct mdl_arg *a;

	if (key == MDL_NONE || (a = vec_push(&d->m->args)) == NULL) {
		d->m->oom = 1;
		return NULL;
	}
	a->key = key;
	a->type = type;
	e->nargs++;
	return a;
}

/* vec_push without zeroing the new element, for a caller that sets all of
 * it: a call's end and frame (vec_push's memset of a size known only at
 * run time was a tenth of the walk). NULL when out of memory. */
static void *xr_vec_add(struct vec *v)
{
	if (v->len == v->cap && vec_reserve(v, v->len + 1) != 0)
		return NULL;
	return (char *)v->data + v->len++ * v->size;
}

/* Opens a call: its event is appended now, its end when it returns. */
static void xr_enter(struct xray_decoder *d, const struct xr_rec *r)
{
	uint32_t name = xr_fn_name(d, r->fid), *open;
	struct xr_frame *f;
	struct mdl_ev *e;
	int64_t *end;

	if (name == MDL_NONE || (open = xr_map_get(&d->w->open, r->fid)) == NULL ||
	    d->m->ends.len >= UINT32_MAX - 1 || (end = xr_vec_add(&d->m->ends)) == NULL ||
	    (e = xr_event(d, MDL_EV_CALL, r->tsc, name)) == NULL || (f = xr_vec_add(&d->w->stack)) == NULL) {
		d->m->oom = 1;
		return;
	}
	*end = INT64_MIN;
	e->extra = d->m->ends.len - 1;
	f->ev = (uint32_t)(d->m->events.len - 1);
	f->end = (uint32_t)(d->m->ends.len - 1);
	f->fid = r->fid;
	(*open)++;
}

/* A thread's walk is over: calls still open stay begins (their ends stay
 * INT64_MIN). */
static void xr_walk_close(struct xray_decoder *d, struct xr_walk *w)
{
	(void)d;
	w->stack.len = 0;
}

/* A call's end is in the time range unless it comes before its start (a
 * negative duration, which matching leaves out): then the range holds it
 * already, since it holds the start. */
static void xr_note_end(struct xray_decoder *d, int64_t end)
{
	if (end > d->m->ts_last)
		d->m->ts_last = end;
}

/* Closes the innermost open call of r's function, and any above it. */
static void xr_exit(struct xray_decoder *d, const struct xr_rec *r)
{
	struct vec *st = &d->w->stack;
	struct xr_frame *top = st->len ? VEC_AT(st, struct xr_frame, st->len - 1) : NULL;
	uint32_t *open;
	int64_t end;

	if (top != NULL && top->fid == r->fid) { /* the innermost call returns: the common case */
		*VEC_AT(&d->m->ends, int64_t, top->end) = end = xr_ns(d, r->tsc);
		xr_note_end(d, end);
		(*xr_map_find(&d->w->open, top->fid))--;
		st->len--;
		return;
	}
	open = xr_map_find(&d->w->open, r->fid);
	if (open == NULL || *open == 0) {
		d->m->diag.unmatched_ends++;
		return;
	}
	end = xr_ns(d, r->tsc);
	xr_note_end(d, end);
	while (d->w->stack.len > 0) {
		struct xr_frame *f = VEC_AT(&d->w->stack, struct xr_frame, --d->w->stack.len);

		*VEC_AT(&d->m->ends, int64_t, f->end) = end;
		(*xr_map_find(&d->w->open, f->fid))--;
		if (f->fid == r->fid)
			break;
		d->m->diag.unterminated_slices++;
	}
}

/* An argument of the call just entered: CallArgument records follow their
 * enter directly (the walker makes any other one an orphan), in the same
 * walk step, so the call is the innermost frame and its arguments are
 * contiguous in m->args. */
static void xr_call_arg(struct xray_decoder *d, const struct xr_rec *r)
{
	struct mdl_ev *e;
	struct mdl_arg *a;
	char key[8];
	int n;

	if (d->w->stack.len == 0) /* its enter ran out of memory */
		return;
	e = VEC_AT(&d->m->events, struct mdl_ev, VEC_AT(&d->w->stack, struct xr_frame, d->w->stack.len - 1)->ev);
	if (e->nargs >= XR_MAX_ARGS) {
		d->m->diag.ignored_records++;
		return;
	}
	if (d->arg_keys[e->nargs] == 0) {
		n = snprintf(key, sizeof(key), "arg%u", (unsigned)e->nargs);
		d->arg_keys[e->nargs] = model_intern(d->m, key, (size_t)n) + 1;
	}
	if ((a = xr_arg_push(d, e, d->arg_keys[e->nargs] - 1, MDL_ARG_U64)) != NULL)
		a->v.u = r->value;
}

/* A NewCPUId: a point of the thread's "cpu" counter (counter id = tid). */
static void xr_cpu(struct xray_decoder *d, const struct xr_rec *r)
{
	struct mdl_ev *e = xr_event(d, MDL_EV_COUNTER, r->tsc, d->s_cpu);
	struct mdl_arg *a;

	if (e == NULL)
		return;
	e->extra = d->w->tid;
	if ((a = xr_arg_push(d, e, d->s_cpu, MDL_ARG_U64)) != NULL)
		a->v.u = r->cpu;
}

/* A custom or typed event: an instant with its size, type and payload. */
static void xr_instant(struct xray_decoder *d, const struct xr_rec *r)
{
	struct mdl_ev *e = xr_event(d, MDL_EV_INSTANT, r->tsc, r->typed ? d->s_typed : d->s_custom);
	struct mdl_arg *a;

	if (e == NULL || (a = xr_arg_push(d, e, d->s_size, MDL_ARG_U64)) == NULL)
		return;
	a->v.u = r->len;
	if (r->typed) {
		if ((a = xr_arg_push(d, e, d->s_type, MDL_ARG_U64)) == NULL)
			return;
		a->v.u = r->value;
	}
	if ((a = xr_arg_push(d, e, d->s_payload, MDL_ARG_BLOB)) == NULL)
		return;
	a->len = r->len;
	a->v.u = model_bytes(d->m, r->data, r->len);
}

static void xr_record(struct xray_decoder *d, const struct xr_rec *r)
{
	switch (r->kind) {
	case XR_FUNC:
		if (r->fn == XF_ENTER || r->fn == XF_ENTER_ARGS)
			xr_enter(d, r);
		else
			xr_exit(d, r);
		break;
	case XR_ARG:
		xr_call_arg(d, r);
		break;
	case XR_ORPHAN_ARG:
		d->m->diag.ignored_records++;
		break;
	case XR_CPU:
		xr_cpu(d, r);
		break;
	case XR_EVENT:
		xr_instant(d, r);
		break;
	default:
		break;
	}
}

static int xr_buf_cmp(const void *a, const void *b)
{
	const struct xr_buf *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->first_tsc != y->first_tsc)
		return x->first_tsc < y->first_tsc ? -1 : 1;
	if (x->wall_sec != y->wall_sec)
		return x->wall_sec < y->wall_sec ? -1 : 1;
	if (x->wall_usec != y->wall_usec)
		return x->wall_usec < y->wall_usec ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int xr_intern_names(struct xray_decoder *d)
{
	struct model *m = d->m;

	d->s_cat = model_intern(m, "xray", 4);
	d->s_cpu = model_intern(m, "cpu", 3);
	d->s_custom = model_intern(m, "custom-event", 12);
	d->s_typed = model_intern(m, "typed-event", 11);
	d->s_size = model_intern(m, "size", 4);
	d->s_type = model_intern(m, "type", 4);
	d->s_payload = model_intern(m, "payload", 7);
	return m->oom ? INGEST_ENOMEM : INGEST_OK;
}

/* Walked buffers' bytes whose pages are given back together: each madvise
 * stops every other thread of the process for a TLB flush, so they are
 * given back a few runs at a time, not one buffer at a time. */
#define XR_DROP_BATCH ((uint64_t)4 << 20)

enum { XR_UNWALKED, XR_WALKED, XR_DROPPED }; /* d->walked[i] */

/* Gives back the pages of the buffers of file order [s, e) (all walked),
 * but for a page shared with a buffer just outside not yet walked. */
static void xr_drop_run(struct xray_decoder *d, size_t s, size_t e)
{
	const struct xr_buf *b = d->bufs.data, *x = &b[d->by_seq[s]], *y = &b[d->by_seq[e - 1]];
	uintptr_t base = (uintptr_t)d->stable, mask = (uintptr_t)d->drop_page - 1, lo, hi;
	size_t j;

	lo = (base + (uintptr_t)x->off) & ~mask;
	hi = (base + (uintptr_t)y->off + y->len + mask) & ~mask;
	if (s > 0 && d->walked[j = d->by_seq[s - 1]] == XR_UNWALKED && base + b[j].off + b[j].len > lo)
		lo += mask + 1;
	if (e < d->bufs.len && d->walked[j = d->by_seq[e]] == XR_UNWALKED && base + b[j].off < hi)
		hi -= mask + 1;
	if (lo < hi)
		madvise((void *)lo, hi - lo, MADV_DONTNEED); /* advice: a failure changes nothing */
}

/*
 * Buffer i of a file-mapped input (xray_stable_file) has been walked and
 * is not read again. Once XR_DROP_BATCH bytes of such buffers wait, the
 * pages of every run of them (adjacent in the file) are given back, so
 * that the input does not stay in memory while the walks go through it. A
 * page shared with a buffer not walked yet is kept until that one is:
 * reading a page given back would map its neighbours again (the kernel
 * maps the pages around a fault), for good.
 */
static void xr_drop_pages(struct xray_decoder *d, size_t i)
{
	size_t s, e;

	if (d->drop_page == 0 || d->walked == NULL)
		return;
	d->walked[i] = XR_WALKED;
	d->drop_pending += VEC_AT(&d->bufs, struct xr_buf, i)->len;
	if (d->drop_pending < XR_DROP_BATCH)
		return;
	d->drop_pending = 0;
	for (s = 0; s < d->bufs.len; s = e + 1) {
		for (e = s; e < d->bufs.len && d->walked[d->by_seq[e]] == XR_WALKED; e++)
			;
		if (e > s)
			xr_drop_run(d, s, e);
		while (s < e)
			d->walked[d->by_seq[s++]] = XR_DROPPED;
	}
}

/* Reads the walk's next record, moving on to the thread's next buffer at
 * the end of one (buffers were checked when they arrived); clears w->live
 * after the last. */
static void xr_walk_next(struct xray_decoder *d, struct xr_walk *w)
{
	struct xr_buf *b = d->bufs.data;
	unsigned __int128 ns;

	while (xr_next(&w->c, &w->rec) != XR_REC) {
		if (w->cur_buf != 0)
			xr_drop_pages(d, w->cur_buf - 1);
		w->cur_buf = 0;
		if (w->buf == w->end) {
			w->live = 0;
			return;
		}
		xr_cur_init(&w->c, xr_records(d) + b[w->buf].off, b[w->buf].len, d->version);
		w->cur_buf = ++w->buf;
	}
	w->key_exact = 0;
	if (w->rec.kind == XR_FUNC || w->rec.kind == XR_CPU || w->rec.kind == XR_EVENT) {
		ns = xr_ticks_ns(d, w->rec.tsc);
		w->key_exact = ns <= INT64_MAX;
		w->key = w->key_exact ? (int64_t)ns : INT64_MAX;
	}
}

/* Threads in the order of their first record's time, then thread order:
 * the order the threads' first events would take in time. */
static int xr_walk_cmp(const void *a, const void *b)
{
	const struct xr_walk *x = *(const struct xr_walk *const *)a, *y = *(const struct xr_walk *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Turns the thread's next timed record into events, with the untimed
 * records that follow it (call arguments belong to their enter). */
static void xr_walk_step(struct xray_decoder *d, struct xr_walk *w)
{
	d->w = w;
	do {
		xr_record(d, &w->rec);
		xr_walk_next(d, w);
	} while (w->live && !d->m->oom && w->rec.kind != XR_FUNC && w->rec.kind != XR_CPU &&
		 w->rec.kind != XR_EVENT);
}

/* Sets up one walk per thread over bufs (sorted by thread, then time);
 * returns the number of walks, whose records are read ahead. */
static size_t xr_walks_init(struct xray_decoder *d, struct xr_walk *walks)
{
	struct xr_buf *b = d->bufs.data;
	unsigned __int128 ns;
	size_t i, n = 0;

	for (i = 0; i < d->bufs.len; i++) {
		struct xr_walk *w = &walks[n];

		if (i + 1 < d->bufs.len && b[i + 1].thread == b[i].thread)
			continue;
		w->end = i + 1;
		for (w->buf = i; w->buf > 0 && b[w->buf - 1].thread == b[i].thread; w->buf--)
			;
		w->order = (uint32_t)n;
		ns = xr_ticks_ns(d, b[w->buf].first_tsc); /* every buffer kept has a timed record */
		w->start = ns <= INT64_MAX ? (int64_t)ns : INT64_MAX;
		w->thread = b[i].thread;
		w->tid = VEC_AT(&d->m->threads, struct mdl_thread, w->thread)->tid;
		vec_init(&w->stack, sizeof(struct xr_frame));
		w->live = 1;
		xr_walk_next(d, w);
		n++;
	}
	return n;
}

/* For xr_drop_pages: the buffers in file order (seq), none walked yet.
 * Without the memory, pages are simply not given back. */
static void xr_drop_init(struct xray_decoder *d)
{
	const struct xr_buf *b = d->bufs.data;
	size_t i;

	if (d->drop_page == 0)
		return;
	d->by_seq = malloc(d->bufs.len * sizeof(*d->by_seq));
	d->walked = calloc(d->bufs.len, 1);
	d->drop_pending = 0;
	if (d->by_seq == NULL || d->walked == NULL) {
		free(d->by_seq);
		free(d->walked);
		d->by_seq = NULL;
		d->walked = NULL;
		return;
	}
	for (i = 0; i < d->bufs.len; i++)
		d->by_seq[b[i].seq] = (uint32_t)i;
}

/* Orders each thread's buffers in time and turns them into events, thread
 * after thread (model.h, by_thread), the threads in the order of their
 * first record. Calls still open at a thread's end stay begins. */
static int xr_events(struct xray_decoder *d)
{
	struct xr_walk *walks, **by_start;
	size_t i, n;

	if (d->bufs.len == 0)
		return INGEST_OK;
	if (xr_intern_names(d) != INGEST_OK)
		return INGEST_ENOMEM;
	qsort(d->bufs.data, d->bufs.len, sizeof(struct xr_buf), xr_buf_cmp);
	walks = calloc(d->bufs.len, sizeof(*walks));
	by_start = calloc(d->bufs.len, sizeof(*by_start));
	if (walks == NULL || by_start == NULL)
		goto out_free;
	xr_drop_init(d);
	n = xr_walks_init(d, walks);
	for (i = 0; i < n; i++)
		by_start[i] = &walks[i];
	qsort(by_start, n, sizeof(*by_start), xr_walk_cmp);
	for (i = 0; i < n && !d->m->oom; i++) {
		struct xr_walk *w = by_start[i];

		while (w->live && !d->m->oom) {
			xr_walk_step(d, w);
			model_checkpoint(d->m); /* no event of the model is touched again */
		}
		xr_walk_close(d, w);
	}
	for (i = 0; i < n; i++) {
		xr_walk_close(d, &walks[i]); /* only when out of memory */
		vec_fini(&walks[i].stack);
		xr_map_fini(&walks[i].open);
	}
out_free:
	if (walks == NULL || by_start == NULL)
		d->m->oom = 1;
	d->w = NULL;
	free(walks);
	free(by_start);
	free(d->by_seq);
	free(d->walked);
	d->by_seq = NULL;
	d->walked = NULL;
	return d->m->oom ? INGEST_ENOMEM : INGEST_OK;
}

int xray_finish(struct xray_decoder *d)
{
	int rc = INGEST_OK;

	if (d->finished)
		return d->not_trace ? INGEST_ENOTTRACE : INGEST_OK;
	d->finished = 1;
	if (d->not_trace)
		return INGEST_ENOTTRACE;
	if (d->state == XS_HEADER)
		return d->small_len == 0 ? INGEST_EEMPTY : INGEST_ENOTTRACE;
	if (d->state == XS_EXTENTS)
		d->m->diag.truncated_bytes += d->small_len;
	else if (d->state == XS_DATA && (d->have > 0 || d->version >= 2))
		rc = xr_buffer_done(d, 1);
	if (rc == INGEST_OK)
		rc = xr_events(d);
	free(d->arena);
	d->arena = NULL;
	d->arena_len = d->arena_cap = 0;
	vec_fini(&d->bufs);
	return rc;
}

/* ---- lifecycle ---------------------------------------------------------- */

struct xray_decoder *xray_create(struct model *m)
{
	struct xray_decoder *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->m = m;
	d->state = XS_HEADER;
	vec_init(&d->bufs, sizeof(struct xr_buf));
	m->format = "xray-fdr";
	m->by_thread = 1;
	return d;
}

void xray_destroy(struct xray_decoder *d)
{
	if (d == NULL)
		return;
	free(d->arena);
	vec_fini(&d->bufs);
	xr_map_fini(&d->names);
	free(d->names_near);
	free(d);
}

int xray_detect(const uint8_t *buf, size_t n)
{
	unsigned version, type;

	if (n < XR_HEADER_SIZE)
		return 0;
	version = rd_load16(buf, 0);
	type = rd_load16(buf + 2, 0);
	if (version < 1 || version > 5 || type != 1)
		return 0;
	/* the first record: an extents record (v2+) or a NewBuffer (v1) */
	if (n > XR_HEADER_SIZE)
		return buf[XR_HEADER_SIZE] == (version >= 2 ? XR_EXTENTS_BYTE : XR_NEW_BUFFER_BYTE);
	return 1;
}
