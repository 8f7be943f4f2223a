/*
 * Write-behind for the big files ingest writes front to back (the scratch
 * file, the database): as the bytes written pass a window, they are sent
 * to the disk, and once there they leave the page cache. The cache then
 * holds a few windows of each file instead of gigabytes.
 *
 * Why: a page-cache page the kernel must take from free memory costs far
 * more to fill than one it reuses, above all in a virtual machine whose host
 * backs the guest's memory lazily. On this project's machines, writing 12 GB
 * through write() took 27 s of CPU, and 3.6 s with a 256 MB window. The
 * disk gets the same bytes either way, only sooner; a file that stays under
 * the window (every small trace) is never touched.
 *
 * Everything here is advice: a call that fails changes nothing but the
 * cache. Pages written again after they left (a database's interior pages)
 * come back like any other, and reads of them go to the disk.
 */
#ifndef INGEST_BEHIND_H
#define INGEST_BEHIND_H

#include <stdint.h>

struct behind {
	int fd;            /* any descriptor of the file; -1: nothing to do */
	uint64_t started;  /* bytes [0, started) were sent to the disk */
	uint64_t dropped;  /* bytes [0, dropped) were taken out of the cache */
};

enum { BEHIND_WINDOW = 32 << 20, BEHIND_FOLIO = 4 << 20 };

void behind_init(struct behind *b, int fd);
/* The file has been written up to end, about in order. Sends each window
 * to the disk as it fills, and drops what is two windows behind end
 * (waiting for its writing first, which the disk has mostly done by
 * then). */
void behind_wrote(struct behind *b, uint64_t end);
/* Starts writing every dirty page of a file about to be read (an upload
 * just received) and, when wait, waits for them. The kernel throttles a
 * process's writes while the machine's dirty pages pass a limit, and an
 * upload's gigabytes left to the kernel's own pace held ingest there: a
 * 4 GB archive just copied took 125 s to ingest, 94 s once its writing
 * was started at once. Without wait the writing is started on a thread of
 * its own (with a descriptor of its own): even starting it blocks while
 * the disk's queue is full, 2 s for the 4 GB bench archive's upload, and
 * ingest, its preview first, waited for that. */
void behind_settle(int fd, int wait);
/* Drops bytes [from, to) of a file only read, which the disk already has
 * (an input consumed), from the cache. */
void behind_forget(int fd, uint64_t from, uint64_t to);
/* The same after reading [from, to) of a file read front to back in
 * pieces (a run of the scratch file): the kernel keeps a file's pages in
 * folios of up to BEHIND_FOLIO bytes and drops only whole ones, which a
 * small piece never covers, so what goes is from the folio boundary before
 * from: bytes read a piece or two before. */
void behind_forget_read(int fd, uint64_t from, uint64_t to);

#endif
