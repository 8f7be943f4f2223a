/*
 * Event order with bounded memory: the stage between the decoders and the
 * build's matching.
 *
 * Matching walks every event in (ts, seq) order (docs/API.md, Meaning 3),
 * or thread after thread, each in (ts, seq) order, for a model whose events
 * come so (model.h, by_thread).
 * A decoder appends events to the model (model.h); at a checkpoint between
 * records, once the model holds `budget` events, the sorter sorts them (they
 * come almost in order: linear time plus the sort of the few out of place)
 * and writes them as one run to a spill file, on a thread of its own while
 * the model fills a second array. After decoding, sorter_next() merges the runs (and the
 * events still in memory) and hands them on in order, a batch at a time.
 * A trace that fits the budget is never written out: its events are sorted
 * in place and handed on from the model's own array.
 *
 * Memory is twice the budget plus a read buffer per run, whatever the
 * trace's size. The model's arguments go to a scratch file of their own
 * once they pass 4 MB, mapped (util.h, vec_map): their pages leave memory
 * at every spill and every budget of events handed on, and come back from
 * the page cache when matching reads them. The spill file is created next
 * to the database being written and unlinked at once, so that nothing is
 * left behind by a crash.
 *
 * Streaming (ingest.h, ingest_stream_*): matching runs while the input
 * still arrives, so there is no full merge. The driver gives the window B
 * (sorter_window) and marks how far the input is decoded (sorter_mark);
 * sorter_release then hands on, through sorter_next, every event decoded
 * so far whose ts is below the watermark W:
 *
 *   W = the lowest ts among the events whose records end in the last B
 *       bytes of input (exactly: in the current slot of B / 16 bytes and
 *       the 16 slots before it, so B to B + B / 16 bytes; the driver cuts
 *       the input it feeds at slot boundaries, so that each event is
 *       noted in the slot where its record ends). When no event ends
 *       there, W = the highest ts decoded.
 *
 * The events below W are handed on in (ts, sub, seq) order, exactly the
 * full merge's, in batches that end at a change of ts: all the events of
 * a ts below W have been decoded when they go, so the ties matching
 * reorders (match.c, order_complete_ties) are whole in one batch. An
 * event at W or above waits, sorted, in memory (or in its spilled run
 * when the model spilled it before the release) for a later release.
 *
 * LATE: an event decoded after the release that handed on an event of ts
 * t, with ts <= t. (An equal ts counts, although it sorts after by seq:
 * the run of its ts was matched whole.) Matching has moved past where it
 * belongs, so it cannot be placed by this sorter. sorter_release finds
 * late events before it hands anything on, counts them and returns 1:
 * the driver then starts again from the input's first byte with a wider
 * B (ingest.c, order_restarts). A late event is never dropped nor
 * matched out of place. The last release (final) hands on everything.
 *
 * How wide: the sorter keeps, for every B / 16 bytes of the input since
 * byte 0 (coarser once that would pass a million of them), the lowest ts
 * of the events whose records end there. With the earliest late ts t,
 * the window that would have held them is the bytes from the last such
 * part of the input with an event at or before t (before the last
 * release) up to now: with it, W stays at or below t until the late
 * records are decoded (sorter_late_window; ingest.c widens B to it, with
 * a quarter more). So a trace whose scopes are written at their end
 * (complete events, as a program's scope macros write them) starts again
 * once for its widest scope so far, not once per doubling of B up to it.
 * A disorder wider than SORTER_WIDEN_MAX (a scope open since far back,
 * most likely once) only doubles B, so that the view does not lag by that
 * much for the rest of the stream.
 *
 * Memory while streaming: the events not yet handed on (those of about
 * the last B bytes, plus the disorder that reaches past them), and a read
 * buffer per spilled run with events left; the runs used up are freed at
 * the next release. Without a release, the sorter is the batch's above.
 */
#ifndef INGEST_SORTER_H
#define INGEST_SORTER_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "spill.h"

struct sorter;

/* The widest window late events call for (LATE, above). */
#define SORTER_WIDEN_MAX ((uint64_t)64 << 20)

/* Events the model holds before a spill, by default: 20 MiB of them (and as
 * many again being spilled). */
#define SORTER_BUDGET ((size_t)1 << 19)

/*
 * Attaches a new sorter to m (m->spill): from now on, at each checkpoint
 * where m holds at least budget events, they are sorted and spilled to a
 * temporary file in dir. NULL when out of memory.
 */
struct sorter *sorter_attach(struct model *m, const char *dir, size_t budget);

/* Whether a spill failed (the file could not be created, written or read,
 * by the sorter or a stage sharing its scratch file); the reason, a
 * sentence, is in *why. Waits for a spill in progress, and ends the merge:
 * ask it when decoding or matching is over. Matching must not start after
 * a failure. */
int sorter_failed(struct sorter *so, const char **why);

/* After decoding: sorts what the model holds and prepares the merge.
 * Returns 0, or -1 (out of memory, or a spill failed). */
int sorter_finish(struct sorter *so);

/*
 * The next events in (ts, seq) order (by_thread: (thread, ts, seq)): *ev points at them, valid (and
 * writable: matching reorders ties in place) until the next call. A batch
 * ends at a change of ts, so events of one ts come in one batch. Returns
 * their number, 0 after the last, -1 on a read error or out of memory.
 */
long sorter_next(struct sorter *so, struct mdl_ev **ev);

/* After the last batch: gives back the merge's read buffers (256 KB a
 * spilled run: 80 MB on a 4 GB archive) and batches, which later stages
 * would otherwise carry; the scratch file stays. */
void sorter_done(struct sorter *so);

/* The sorter's scratch file (spill.h), which later stages of the same
 * ingest append to (the slice store) once decoding is over, and the memory
 * budget they should keep to: what the sorter held while decoding, in
 * bytes. */
struct spill *sorter_scratch(struct sorter *so);
size_t sorter_budget_bytes(const struct sorter *so);
/* The buffer, in bytes, of each stage that puts records of its own in
 * order in runs (runsort.h): the model's context switches (in a scratch
 * file of their own, set up here), and the build's counter points and
 * flows (in the sorter's). An eighth of the sorter's budget: three such
 * buffers stay small beside it. */
size_t sorter_run_bytes(const struct sorter *so);

/* Streaming (above): the window B, in bytes, before the first event is
 * decoded. Without it, or when out of memory, no event is handed on before
 * the last release. */
void sorter_window(struct sorter *so, uint64_t bytes);
/* The grain of the window, in bytes (B / 16): the driver feeds the decoder
 * pieces that end at multiples of it; 0 without a window. */
uint64_t sorter_slot_bytes(const struct sorter *so);
/* The input's first end bytes are decoded: the events appended since the
 * last mark came from records ending in the slot of byte end - 1. */
void sorter_mark(struct sorter *so, uint64_t end);
/*
 * Makes every event decoded so far below the watermark (final: every
 * event) available to sorter_next, which returns 0 once they are handed
 * on, until the next release. Returns 0; 1 when late events were decoded
 * (their number in *late; nothing is handed on, and the sorter is to be
 * thrown away); -1 when out of memory or a spill failed (sorter_failed).
 * After the final release, call it no more. Not after sorter_finish.
 */
int sorter_release(struct sorter *so, int final, uint64_t *late);
/* After sorter_release returned 1: the window B that would have kept its
 * late events in place (LATE, above); 0 when not known or wider than
 * SORTER_WIDEN_MAX. */
uint64_t sorter_late_window(const struct sorter *so);
/* Whether sorter_release was called: then sorter_finish is not. */
int sorter_streaming(const struct sorter *so);
/* Streaming: the events handed on so far. */
uint64_t sorter_handed(const struct sorter *so);
/* Tests only: hand on events up to W + sorter_test_skew, and (when
 * sorter_test_no_late) hand on late events as if they were not: breaks the
 * order on purpose, to see the comparison with a batch fail. */
extern int64_t sorter_test_skew;
extern int sorter_test_no_late;
/* Tests only: when not 0, the history of LATE (above) is made coarser
 * whenever it would pass this many entries, not a million. */
extern size_t sorter_test_hist_max;
/* Tests only: when not 0, SORTER_WIDEN_MAX is this. */
extern uint64_t sorter_test_widen_max;

/* Detaches from the model, closes the spill file and frees everything. */
void sorter_free(struct sorter *so);

#endif
