/*
 * fuzz_replay: runs a libFuzzer target over saved inputs, without libFuzzer.
 *
 *   fuzz_replay PATH...
 *
 * Each PATH is a file or a directory; a directory's files are run in name
 * order, and so are those of its subdirectories (one level down). Hidden
 * entries are skipped. Linked with a target (tests/fuzz_fxt.c) it turns the
 * committed corpus into a regression test for `make unit`: a property the
 * target asserts aborts the run, naming the input first.
 *
 * Prints "replayed N inputs" and exits 0; exits 1 when a path is missing or
 * unreadable (after running the rest), 2 without arguments.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { REPLAY_MAX_INPUT = 64 << 20 }; /* larger files are not fuzz inputs */

/* Reads the whole file into an exact-size buffer (so that a read past the
 * end shows under ASan). Returns the buffer, or NULL with errno set; the
 * caller frees it. */
static uint8_t *replay_read(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint8_t *buf = NULL;

	if (f == NULL)
		return NULL;
	if (fstat(fileno(f), &st) != 0)
		goto out_close;
	if (st.st_size > REPLAY_MAX_INPUT) {
		errno = EFBIG;
		goto out_close;
	}
	*size = (size_t)st.st_size;
	if ((buf = malloc(*size ? *size : 1)) == NULL)
		goto out_close;
	if (fread(buf, 1, *size, f) != *size) {
		free(buf);
		buf = NULL;
		errno = EIO;
	}
out_close:
	fclose(f);
	return buf;
}

/* Runs one file; returns 0, or -1 when it cannot be read. */
static int replay_file(const char *path, unsigned long *count)
{
	size_t size = 0;
	uint8_t *buf = replay_read(path, &size);

	if (buf == NULL) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, size);
	LLVMFuzzerTestOneInput(buf, size);
	free(buf);
	(*count)++;
	return 0;
}

static int replay_path(const char *path, int depth, unsigned long *count);

/* Runs the entries of a directory in name order. */
static int replay_dir(const char *dir, int depth, unsigned long *count)
{
	struct dirent **ents;
	char path[4096];
	int n, i, rc = 0;

	if ((n = scandir(dir, &ents, NULL, alphasort)) < 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.' &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name) < sizeof(path))
			rc |= replay_path(path, depth + 1, count);
		free(ents[i]);
	}
	free(ents);
	return rc;
}

/* A file runs; a directory is entered down to one level below the command
 * line's; anything else is skipped. */
static int replay_path(const char *path, int depth, unsigned long *count)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz_replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode))
		return depth <= 1 ? replay_dir(path, depth, count) : 0;
	if (S_ISREG(st.st_mode))
		return replay_file(path, count);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long count = 0;
	int i, rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fuzz_replay FILE|DIR...\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		rc |= replay_path(argv[i], 0, &count);
	printf("replayed %lu inputs\n", count);
	return rc ? 1 : 0;
}
