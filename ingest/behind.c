/*
 * Write-behind (behind.h): sync_file_range to start and then wait for the
 * writing of a window, posix_fadvise to drop it.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "behind.h"
#include "util.h"

void behind_init(struct behind *b, int fd)
{
	b->fd = fd;
	b->started = b->dropped = 0;
}

void behind_wrote(struct behind *b, uint64_t end)
{
	if (b->fd < 0)
		return;
	if (end >= b->started + BEHIND_WINDOW) {
		sync_file_range(b->fd, (off_t)b->started, (off_t)(end - b->started), SYNC_FILE_RANGE_WRITE);
		b->started = end;
	}
	if (b->started >= b->dropped + 3 * (uint64_t)BEHIND_WINDOW) {
		uint64_t to = b->started - 2 * (uint64_t)BEHIND_WINDOW;

		sync_file_range(b->fd, (off_t)b->dropped, (off_t)(to - b->dropped),
				SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
		posix_fadvise(b->fd, (off_t)b->dropped, (off_t)(to - b->dropped), POSIX_FADV_DONTNEED);
		b->dropped = to;
	}
}

void behind_forget(int fd, uint64_t from, uint64_t to)
{
	if (fd >= 0 && to > from)
		posix_fadvise(fd, (off_t)from, (off_t)(to - from), POSIX_FADV_DONTNEED);
}

static void *settle_main(void *arg)
{
	int fd = (int)(intptr_t)arg;

	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	close(fd);
	return NULL;
}

void behind_settle(int fd, int wait)
{
	int copy;

	if (fd < 0)
		return;
	/* the writing is started from a thread holding a descriptor of its
	 * own, which it closes: the caller may close its own at once */
	if (!wait && (copy = dup(fd)) >= 0) {
		if (run_detached(settle_main, (void *)(intptr_t)copy) == 0)
			return;
		close(copy);
	}
	sync_file_range(fd, 0, 0,
			wait ? SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
			     : SYNC_FILE_RANGE_WRITE);
}

void behind_forget_read(int fd, uint64_t from, uint64_t to)
{
	behind_forget(fd, from & ~(uint64_t)(BEHIND_FOLIO - 1), to);
}
