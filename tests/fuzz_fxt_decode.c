/*
 * libFuzzer target for the FXT decoder alone: bytes into the model
 * (ingest/fxt.c, ingest/model.c), no build and no SQLite, so that it runs
 * at decoder speed (about 11k inputs a second under ASan+UBSan here, 10x
 * the whole-pipeline target, each input decoded three times) and a night of
 * fuzzing covers the decoder deeply. It asserts the properties P1-P3 of
 * tests/fuzz_fxt_check.h: three decodes (whole, in chunks, record by
 * record) agree, framing matches an independent walk of the record headers,
 * and every record is accounted for exactly once. tests/fuzz_fxt.c runs the
 * same checks and then the build.
 *
 * Build with libFuzzer (clang), as `make fuzz` does:
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined
 *     tests/fuzz_fxt_decode.c ingest/fxt.c ingest/model.c ingest/util.c
 * or replay a corpus without it: link tests/fuzz_replay.c instead of
 * -fsanitize=fuzzer and run it on tests/corpus/fxt_decode.
 */
#include <stddef.h>
#include <stdint.h>

#define FZ_NAME "fuzz_fxt_decode"
#include "fuzz_util.h"
#include "fuzz_fxt_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_decode a;

	fz_fxt_check(data, size, &a);
	model_fini(&a.m);
	return 0;
}
