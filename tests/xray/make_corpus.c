/*
 * make_corpus: writes the seed corpus of the XRay fuzz target
 * (tests/fuzz_xray.c) into a directory, one small file per version, record
 * family or kind of damage.
 *
 * The seeds give libFuzzer a start on every branch of ingest/xray.c and
 * ingest/symbols.c: each version 1-5 with every record kind, buffers in
 * ring order, a thread starting mid-stack, lost and damaged buffers, a cut
 * log, odd headers, and for the symbol tables a small ELF and a YAML map.
 * The output is deterministic, so the committed files in tests/corpus/xray
 * can be regenerated and compared. Every file stays under 4 KB.
 *
 * Regenerate (no Makefile needed), from the repository root:
 *   cc -std=c11 -O1 -o /tmp/make_corpus tests/xray/make_corpus.c tests/xray_writer.c
 *   /tmp/make_corpus tests/corpus/xray
 *
 * Exits 0, 1 when a file cannot be written, 2 on usage.
 */
#include "../xray_writer.h"

#include <stdio.h>
#include <string.h>

enum { FREQ = 2000000000u, PID = 4242 };

static const uint64_t args3[3] = { 1, 0xffffffffffffffffu, 42 };

/* One buffer of thread tid with nested calls, an argument call, events. */
static void calls(struct xrw *w, uint32_t tid, uint64_t t)
{
	xrw_buffer_begin(w, tid, PID, 100, (uint32_t)(t / 1000), 1, t);
	xrw_enter(w, 1, t + 1);
	xrw_enter_args(w, 2, t + 5, args3, 3);
	xrw_custom(w, t + 6, 1, "custom", 6);
	xrw_exit(w, 2, t + 9);
	xrw_new_cpu(w, 2, t + 20);
	xrw_typed(w, t + 21, 7, "typed", 5);
	xrw_enter(w, 3, t + 22);
	xrw_tail_exit(w, 3, t + 30);
	xrw_enter(w, 4, t + 31 + (UINT64_C(1) << 32)); /* a TSCWrap */
	xrw_exit(w, 4, t + 40 + (UINT64_C(1) << 32));
	xrw_exit(w, 1, t + 50 + (UINT64_C(1) << 32));
	xrw_buffer_end(w);
}

static void c_version(struct xrw *w, uint16_t v)
{
	xrw_init(w, v, 400);
	w->junk = 0x5a;
	xrw_header(w, FREQ);
	calls(w, 1, 1000);
	calls(w, 2, 2000);
}

static void c_v1(struct xrw *w) { c_version(w, 1); }
static void c_v2(struct xrw *w) { c_version(w, 2); }
static void c_v3(struct xrw *w) { c_version(w, 3); }
static void c_v4(struct xrw *w) { c_version(w, 4); }
static void c_v5(struct xrw *w) { c_version(w, 5); }

static void c_header_only(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
}

static void c_freq_zero(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, 0);
	calls(w, 1, 1000);
}

/* Each thread's buffers latest first, as the ring flushes them. */
static void c_ring_order(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	calls(w, 1, 9000);
	calls(w, 2, 8000);
	calls(w, 1, 3000);
	xrw_buffer_begin(w, 2, PID, 0, 0, 0, 7000);
	xrw_enter(w, 9, 7001);
	xrw_buffer_end(w);
	calls(w, 1, 1000);
}

/* A thread starting mid-stack, and a buffer lost in the middle. */
static void c_mid_stack(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	xrw_buffer_begin(w, 1, PID, 0, 0, 0, 100);
	xrw_exit(w, 5, 101);
	xrw_exit(w, 6, 102);
	xrw_enter(w, 7, 103);
	xrw_enter(w, 8, 104);
	xrw_buffer_end(w);
	xrw_buffer_begin(w, 1, PID, 0, 0, 0, 500);
	xrw_exit(w, 9, 501);
	xrw_exit(w, 7, 502);
	xrw_buffer_end(w);
}

/* Three buffers, the middle one damaged. */
static void damaged(struct xrw *w, unsigned at, const uint8_t *patch, size_t n)
{
	size_t mid;

	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	calls(w, 1, 1000);
	mid = xrw_mark(w);
	calls(w, 1, 2000);
	calls(w, 1, 3000);
	memcpy(w->buf + mid + at, patch, n);
}

static void c_bad_kind(struct xrw *w) { damaged(w, 64, (const uint8_t *)"\x65", 1); }
static void c_bad_function(struct xrw *w) { damaged(w, 80, (const uint8_t *)"\x1a", 1); }
static void c_bad_extents(struct xrw *w) { damaged(w, 1, (const uint8_t *)"\xff\xff\xff\x7f", 4); }
static void c_not_extents(struct xrw *w) { damaged(w, 0, (const uint8_t *)"\x55", 1); }
static void c_short_extents(struct xrw *w) { damaged(w, 1, (const uint8_t *)"\x44", 1); }
static void c_no_new_buffer(struct xrw *w) { damaged(w, 16, (const uint8_t *)"\x09", 1); }

static void c_big_custom(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	xrw_buffer_begin(w, 1, PID, 0, 0, 0, 100);
	xrw_custom(w, 101, 0, "abc", 3);
	w->buf[w->len - 3 - 15] = 0xf0;
	xrw_buffer_end(w);
	calls(w, 1, 1000);
}

static void c_truncated(struct xrw *w)
{
	c_version(w, 5);
	w->len -= 37;
}

static void c_v1_truncated(struct xrw *w)
{
	c_version(w, 1);
	w->len -= 300;
}

static void c_v5_eob_and_empty(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	xrw_extents(w, 0);
	xrw_buffer_begin(w, 3, PID, 0, 0, 0, 100);
	xrw_enter(w, 1, 101);
	xrw_end_of_buffer(w);
	xrw_bytes(w, "filler", 6);
	xrw_buffer_end(w);
	xrw_call_arg(w, 7); /* outside any buffer: framing damage */
	calls(w, 3, 1000);
}

static void c_orphan_args(struct xrw *w)
{
	xrw_init(w, 5, 4096);
	xrw_header(w, FREQ);
	xrw_buffer_begin(w, 1, PID, 0, 0, 0, 100);
	xrw_call_arg(w, 1);
	xrw_enter(w, 1, 101);
	xrw_call_arg(w, 2);
	xrw_exit(w, 1, 102);
	xrw_buffer_end(w);
}

static void c_v1_bad_size(struct xrw *w)
{
	xrw_init(w, 1, 0);
	xrw_header(w, FREQ);
	xrw_new_buffer(w, 1);
}

static void c_yaml(struct xrw *w)
{
	static const char y[] =
		"---\n"
		"- { id: 1, address: 0x1000, function: 0x1000, kind: function-enter, always-instrument: false, "
		"function-name: main, version: 2 }\n"
		"- { id: 2, address: 0x1100, function: 0x1100, kind: function-enter, always-instrument: true, "
		"function-name: 'ns::f(int, char)', version: 2 }\n"
		"- { id: 3, address: 0x1200, function: 0x1200, kind: log-args-enter, always-instrument: false, "
		"function-name: \"q\\\"x\", version: 2 }\n"
		"...\n";

	xrw_init(w, 5, 0);
	xrw_bytes(w, y, sizeof(y) - 1);
}

static void le(uint8_t *q, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		q[i] = (uint8_t)(v >> (8 * i));
}

/* An ELF64 with xray_instr_map (three sleds, two functions), .symtab,
 * .strtab and .shstrtab; section headers at 0x200. */
static void c_elf(struct xrw *w)
{
	static const char shstr[] = "\0xray_instr_map\0.symtab\0.strtab\0.shstrtab";
	static const char str[] = "\0main\0_ZN2ns1fEic";
	uint8_t f[0x200 + 5 * 64];
	uint8_t *sh = f + 0x200;

	memset(f, 0, sizeof(f));
	memcpy(f, "\x7f" "ELF\x02\x01\x01", 7);
	le(f + 16, 3, 2);
	le(f + 18, 62, 2);
	le(f + 40, 0x200, 8);
	le(f + 58, 64, 2);
	le(f + 60, 5, 2);
	le(f + 62, 4, 2);
	/* sleds at 0x40, section address 0x4000 */
	le(f + 0x40 + 8, 0x1000 - (0x4000 + 8), 8);
	f[0x40 + 18] = 2;
	le(f + 0x60 + 8, 0x1000 - (0x4000 + 32 + 8), 8);
	f[0x60 + 16] = 1;
	f[0x60 + 18] = 2;
	le(f + 0x80 + 8, 0x1100, 8);
	/* symbols at 0x100 */
	le(f + 0x118, 1, 4);
	f[0x118 + 4] = 0x12;
	le(f + 0x118 + 8, 0x1000, 8);
	le(f + 0x118 + 16, 0x80, 8);
	le(f + 0x130, 6, 4);
	f[0x130 + 4] = 0x12;
	le(f + 0x130 + 8, 0x1100, 8);
	memcpy(f + 0x160, str, sizeof(str));
	memcpy(f + 0x180, shstr, sizeof(shstr));
	le(sh + 64, 1, 4), le(sh + 64 + 4, 1, 4), le(sh + 64 + 16, 0x4000, 8), le(sh + 64 + 24, 0x40, 8);
	le(sh + 64 + 32, 96, 8);
	le(sh + 128, 16, 4), le(sh + 128 + 4, 2, 4), le(sh + 128 + 24, 0x100, 8), le(sh + 128 + 32, 72, 8);
	le(sh + 128 + 40, 3, 4), le(sh + 128 + 56, 24, 8);
	le(sh + 192, 24, 4), le(sh + 192 + 4, 3, 4), le(sh + 192 + 24, 0x160, 8), le(sh + 192 + 32, sizeof(str), 8);
	le(sh + 256, 32, 4), le(sh + 256 + 4, 3, 4), le(sh + 256 + 24, 0x180, 8), le(sh + 256 + 32, sizeof(shstr), 8);
	xrw_init(w, 5, 0);
	xrw_bytes(w, f, sizeof(f));
}

struct seed {
	const char *name;
	void (*make)(struct xrw *w);
};

static const struct seed seeds[] = {
	{ "v1.xray", c_v1 },
	{ "v2.xray", c_v2 },
	{ "v3.xray", c_v3 },
	{ "v4.xray", c_v4 },
	{ "v5.xray", c_v5 },
	{ "header_only.xray", c_header_only },
	{ "freq_zero.xray", c_freq_zero },
	{ "ring_order.xray", c_ring_order },
	{ "mid_stack.xray", c_mid_stack },
	{ "bad_kind.xray", c_bad_kind },
	{ "bad_function.xray", c_bad_function },
	{ "bad_extents.xray", c_bad_extents },
	{ "not_extents.xray", c_not_extents },
	{ "short_extents.xray", c_short_extents },
	{ "no_new_buffer.xray", c_no_new_buffer },
	{ "big_custom.xray", c_big_custom },
	{ "truncated.xray", c_truncated },
	{ "v1_truncated.xray", c_v1_truncated },
	{ "v5_eob_and_empty.xray", c_v5_eob_and_empty },
	{ "orphan_args.xray", c_orphan_args },
	{ "v1_bad_size.xray", c_v1_bad_size },
	{ "instr_map.yaml", c_yaml },
	{ "instr_map.elf", c_elf },
};

int main(int argc, char **argv)
{
	char path[4096];
	size_t i;
	int status = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: make_corpus DIR\n");
		return 2;
	}
	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		struct xrw w;

		seeds[i].make(&w);
		snprintf(path, sizeof(path), "%s/%s", argv[1], seeds[i].name);
		if (xrw_save(&w, path) != 0) {
			perror(path);
			status = 1;
		}
		xrw_fini(&w);
	}
	return status;
}
