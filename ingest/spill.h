/*
 * A scratch file for what would not fit in memory: the sorter's runs of
 * events (sorter.h) and the slice store's packed slices (slicestore.h).
 *
 * The file is made on the first write, in the directory given (next to the
 * database being written, so on the disk that has room for it), and
 * unlinked at once: it lives only as long as the process, whatever happens
 * to it. Writes append, and what is written leaves the page cache a few
 * windows behind (behind.h). Reads are positioned, come mostly from the
 * disk, and each range is read once: its pages leave the cache after it. The first failure sticks,
 * with a sentence for the user.
 */
#ifndef INGEST_SPILL_H
#define INGEST_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "behind.h"

struct spill {
	int fd;          /* -1 until the first write */
	uint64_t len;    /* bytes written: the next write goes here */
	int failed;      /* sticky */
	char why[320];   /* the first failure, a sentence */
	char *dir;
	const char *what;/* what the file holds, for the sentence */
	struct behind behind; /* written pages leave the cache (behind.h) */
};

/* Prepares a spill file in dir holding `what` ("sorted events"); 0, or -1
 * when out of memory. Nothing is created yet. */
int spill_init(struct spill *sp, const char *dir, const char *what);
/* Appends n bytes and gives their offset; 0, or -1 (sp->why says why). */
int spill_write(struct spill *sp, const void *p, size_t n, uint64_t *off);
/* Reads n bytes at off into p; 0, or -1 on a failed or short read. */
int spill_read(struct spill *sp, void *p, size_t n, uint64_t off);
/* The same for a thread reading while another writes (the sorter's merge
 * beside the slice store): sp is left as it is, even its failure; -1 comes
 * with the sentence in why. Only bytes already written may be read. */
int spill_read_apart(const struct spill *sp, void *p, size_t n, uint64_t off, char *why, size_t whylen);
/* A failure a thread met reading apart, noted once that thread is done
 * (the first failure sticks). */
void spill_fail_apart(struct spill *sp, const char *why);
/* Closes (and so removes) the file. */
void spill_fini(struct spill *sp);
/* A new empty file in dir, unlinked at once, like the spill file: its
 * descriptor, or -1 (errno says why). */
int spill_tmpfile(const char *dir);

#endif
