/*
 * libFuzzer target for the XRay function-name tables (ingest/symbols.c):
 * xray_symbols_load() reads an instrumented ELF binary or the YAML of
 * `llvm-xray extract --symbolize`, both uploaded by users. It asserts
 * properties, not only "no crash".
 *
 * Each input is loaded twice, from two separate exact-size copies (so a
 * read past the end shows under ASan and nothing may depend on where the
 * bytes are), with an error buffer of exactly errlen bytes, errlen taken
 * from the input's hash (1 to 256).
 * These properties must hold, or the target abort()s with a message:
 *   S1 The two loads agree: the same return code, the same error text, the
 *      same largest id and the same name for every id checked.
 *   S2 A load returns INGEST_OK with a table, or INGEST_ENOTTRACE /
 *      INGEST_ENOMEM with no table and a non-empty error that fits errlen.
 *   S3 The largest id is at most 2^28 - 1 (ids are 28 bits in the log);
 *      no id above it has a name; ids 0..min(max, 4096) and a sample above
 *      are looked up.
 *   S4 Every name is a NUL-terminated string (strlen runs under ASan) of at
 *      most FZ_NAME_MAX bytes: a YAML name is at most its line, a symbol
 *      name at most the file, and a demangled one at most FZ_DEMANGLE_X
 *      times the 4 KiB a mangled name may have.
 *   S5 An input that does not start with "\x7f" "ELF" and whose first line
 *      that is not blank does not start with "---" or "- {" is refused.
 *
 * Build with libFuzzer (clang):
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_symbols.c ingest/symbols.c ingest/model.c ingest/util.c -lstdc++
 * or replay a corpus without it: link tests/fuzz_replay.c instead of
 * -fsanitize=fuzzer and run it on tests/corpus/symbols.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ingest/ingest.h"
#include "../ingest/symbols.h"
#define FZ_NAME "fuzz_symbols"
#include "fuzz_util.h"

enum {
	FZ_MAX_ID = 0x0fffffff,
	FZ_IDS_CHECKED = 4096,
	FZ_DEMANGLE_X = 64 /* a demangled name may be this many times 4 KiB */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_load {
	uint8_t *copy; /* the input, exactly size bytes */
	char *err;     /* exactly errlen bytes */
	struct xray_symbols *s;
	int rc;
};

static void fz_load(struct fz_load *l, const uint8_t *data, size_t size, size_t errlen)
{
	l->copy = malloc(size ? size : 1);
	l->err = malloc(errlen);
	if (l->copy == NULL || l->err == NULL)
		abort();
	memcpy(l->copy, data, size);
	memset(l->err, 0, errlen);
	l->rc = xray_symbols_load(l->copy, size, &l->s, l->err, errlen);
}

static void fz_unload(struct fz_load *l)
{
	xray_symbols_free(l->s);
	free(l->copy);
	free(l->err);
}

/* Whether the bytes may be taken for a map at all (S5). */
static int fz_looks_like_map(const uint8_t *p, size_t n)
{
	size_t i = 0;

	if (n >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0)
		return 1;
	while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
		i++;
	return n - i >= 3 && (memcmp(p + i, "---", 3) == 0 || memcmp(p + i, "- {", 3) == 0);
}

/* S4 for one name; returns its length. */
static size_t fz_check_name(const char *name, uint32_t id, size_t size)
{
	size_t len = strlen(name), max = size > 4096 ? size : 4096;

	if (len > max && len > (size_t)FZ_DEMANGLE_X * 4096)
		fz_fail("the name of id %u is %zu bytes long, from %zu bytes of input", id, len, size);
	return len;
}

/* S1, S3 and S4 over the ids checked. */
static void fz_check_names(const struct fz_load *a, const struct fz_load *b, size_t size)
{
	uint32_t max = xray_symbols_max_id(a->s), id;
	const uint32_t above[] = { max + 1, max + 2, max + 1000, FZ_MAX_ID, FZ_MAX_ID + 1u, UINT32_MAX };
	size_t i;

	if (max != xray_symbols_max_id(b->s))
		fz_fail("two loads give largest ids %u and %u", max, xray_symbols_max_id(b->s));
	if (max > FZ_MAX_ID)
		fz_fail("largest id %u is above 2^28 - 1", max);
	for (id = 0; id <= max && id <= FZ_IDS_CHECKED; id++) {
		const char *x = xray_symbols_name(a->s, id), *y = xray_symbols_name(b->s, id);

		if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
			fz_fail("two loads name id %u differently: \"%.60s\" and \"%.60s\"", id, x ? x : "(none)",
				y ? y : "(none)");
		if (x)
			fz_check_name(x, id, size);
	}
	if (max > FZ_IDS_CHECKED && xray_symbols_name(a->s, max) != NULL)
		fz_check_name(xray_symbols_name(a->s, max), max, size);
	for (i = 0; i < sizeof(above) / sizeof(above[0]); i++)
		if (above[i] > max && xray_symbols_name(a->s, above[i]) != NULL)
			fz_fail("id %u above the largest id %u has a name", above[i], max);
}

static void fz_check_error(const struct fz_load *l, size_t errlen)
{
	if (l->rc != INGEST_ENOTTRACE && l->rc != INGEST_ENOMEM)
		fz_fail("error code %d is neither ENOTTRACE nor ENOMEM", l->rc);
	if (l->s != NULL)
		fz_fail("error %d with a table", l->rc);
	if (memchr(l->err, '\0', errlen) == NULL)
		fz_fail("the error text is not terminated within %zu bytes", errlen);
	if (errlen > 1 && l->err[0] == '\0')
		fz_fail("error %d without a message", l->rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t errlen = 1 + fz_hash(data, size) % 256;
	struct fz_load a, b;

	if (size > (1u << 22))
		return 0;
	fz_load(&a, data, size, errlen);
	fz_load(&b, data, size, errlen);
	if (a.rc != b.rc || (a.s == NULL) != (b.s == NULL) || strcmp(a.err, b.err) != 0)
		fz_fail("two loads differ: %d \"%s\" and %d \"%s\"", a.rc, a.err, b.rc, b.err);
	if (a.rc != INGEST_OK) {
		fz_check_error(&a, errlen);
	} else {
		if (a.s == NULL)
			fz_fail("INGEST_OK without a table");
		if (!fz_looks_like_map(data, size))
			fz_fail("bytes that are neither ELF nor llvm-xray YAML were taken for a map");
		fz_check_names(&a, &b, size);
	}
	fz_unload(&a);
	fz_unload(&b);
	return 0;
}
