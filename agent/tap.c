/* SPDX-License-Identifier: MIT */
/*
 * tap.c - a control-socket stream's reader: a whole dump on a socket, for
 * `traceagent ctl PID stream` and `traceagent top -p PID`.
 *
 * The reader gets the file header, then the process's state as chunks made
 * for it alone (PROCESS, CLOCK, every MODULE loaded now, LIBCALLS, a
 * THREAD_START for each thread running, every SITE and CHANNEL so far, a
 * PAUSE mark when paused), then a copy of every
 * chunk the dump gets from then on.  EVENTS chunks carry their thread's
 * stack snapshot, so starting in the middle loses nothing a reader needs.
 *
 * The program never waits for the reader: dump.c copies each chunk into a
 * bounded queue (TA_TAP_QUEUE) under its lock, and the control thread
 * sends from the queue with non-blocking sends when the socket takes them.
 * A chunk that does not fit is dropped for the reader alone, whole, and
 * counted; the reader's chunks are numbered afresh (seq from 0) with the
 * dropped ones as gaps, so its reader sees how many it missed.  A reader
 * that goes away is forgotten quietly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "api.h"
#include "clock.h"
#include "describe.h"
#include "dump.h"
#include "flusher.h"
#include "format.h"
#include "libcalls.h"
#include "modules.h"
#include "settings.h"
#include "tap.h"

/* tap_on: a reader is there (acquire/release: pairs the queue's setup in
 * ta_tap_open with dump.c's copies).  Everything else under tap_lock,
 * which is taken inside dump.c's lock, never around it. */
static uint32_t tap_on;
static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static int tap_fd = -1, tap_wake = -1;
static uint8_t *q;
static size_t q_head, q_len; /* a ring of TA_TAP_QUEUE bytes */
static uint32_t tap_seq;
static uint64_t tap_dropped, tap_sent;
/* The control thread is building the reader's state: its chunks go to the
 * reader alone. */
static __thread int tap_capture __attribute__((tls_model("initial-exec")));

static void q_put(const void *p, size_t n)
{
	size_t tail = (q_head + q_len) % TA_TAP_QUEUE, first = TA_TAP_QUEUE - tail;

	if (first > n)
		first = n;
	memcpy(q + tail, p, first);
	memcpy(q, (const uint8_t *)p + first, n - first);
	q_len += n;
}

int ta_tap_chunk(const uint8_t *hdr, const void *stored, size_t stored_len)
{
	int capture = tap_capture;
	uint8_t h[TA_CHUNK_HEADER_SIZE];
	uint32_t crc;
	int queued = 0;

	/* Acquire: pairs with the release in ta_tap_open (the queue). */
	if (!__atomic_load_n(&tap_on, __ATOMIC_ACQUIRE))
		return capture;
	pthread_mutex_lock(&tap_lock);
	if (!q || tap_fd < 0)
		goto out;
	if (TA_CHUNK_HEADER_SIZE + stored_len > TA_TAP_QUEUE - q_len) {
		tap_dropped++;
		tap_seq++; /* a gap the reader counts */
		goto out;
	}
	/* The reader's own numbering: its CRC covers the header. */
	memcpy(h, hdr, TA_CHUNK_HEADER_SIZE);
	ta_put_le32(h + 20, tap_seq++);
	crc = ta_crc32c(0, h, 28);
	crc = ta_crc32c(crc, stored, stored_len);
	ta_put_le32(h + 28, crc);
	q_put(h, sizeof(h));
	q_put(stored, stored_len);
	queued = 1;
out:
	pthread_mutex_unlock(&tap_lock);
	if (queued && !capture && tap_wake >= 0) {
		uint64_t one = 1;

		/* The control thread sends it (an eventfd: never blocks). */
		if (write(tap_wake, &one, sizeof(one)) < 0) {
			/* Already readable: it is awake. */
		}
	}
	return capture;
}

int ta_tap_open(int fd, int wake_fd)
{
	uint8_t fh[TA_FILE_HEADER_SIZE];
	uint8_t *buf;
	uint64_t now = ta_ticks();

	if (__atomic_load_n(&tap_on, __ATOMIC_ACQUIRE))
		return -1;
	buf = malloc(TA_TAP_QUEUE);
	if (!buf)
		return -1;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_lock(&tap_lock);
	q = buf;
	q_head = q_len = 0;
	tap_seq = 0;
	tap_dropped = tap_sent = 0;
	tap_fd = fd;
	tap_wake = wake_fd;
	ta_file_header_encode(fh, ta_pid);
	q_put(fh, sizeof(fh));
	pthread_mutex_unlock(&tap_lock);
	/* Release: the queue before the copies.  From here the dump's chunks
	 * are copied too, interleaved with the state below (a reader may see
	 * a thread's events before the module they are in: a dump is read
	 * whole before names are given). */
	__atomic_store_n(&tap_on, 1, __ATOMIC_RELEASE);
	tap_capture = 1;
	/* Loaded before the stream began: stamped with its start. */
	ta_describe_process(TA_DESCRIBE_CLOCK | TA_DESCRIBE_EVERY_MODULE, now, NULL);
	/* The threads running: their THREAD_START went out before. */
	ta_flusher_describe_threads();
	ta_api_write_tap();
	if (ta_api_paused())
		ta_api_mark(TA_MARK_PAUSE, ta_api_pause_ticks(), NULL, 0);
	tap_capture = 0;
	return 0;
}

int ta_tap_fd(int *want_out)
{
	int fd;

	pthread_mutex_lock(&tap_lock);
	fd = tap_fd;
	*want_out = q_len != 0;
	pthread_mutex_unlock(&tap_lock);
	return fd;
}

/* Under tap_lock. */
static void tap_end_locked(void)
{
	__atomic_store_n(&tap_on, 0, __ATOMIC_RELAXED);
	if (tap_fd >= 0)
		close(tap_fd);
	tap_fd = -1;
	free(q);
	q = NULL;
	q_head = q_len = 0;
}

void ta_tap_pump(int readable)
{
	pthread_mutex_lock(&tap_lock);
	if (tap_fd < 0)
		goto out;
	if (readable) {
		char junk[256];
		ssize_t r = recv(tap_fd, junk, sizeof(junk), MSG_DONTWAIT);

		/* The reader says nothing: anything is ignored, its end ends
		 * the tap. */
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			tap_end_locked();
			goto out;
		}
	}
	while (q_len) {
		size_t n = TA_TAP_QUEUE - q_head;
		ssize_t w;

		if (n > q_len)
			n = q_len;
		w = send(tap_fd, q + q_head, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				tap_end_locked(); /* gone: quietly */
			break;
		}
		q_head = (q_head + (size_t)w) % TA_TAP_QUEUE;
		q_len -= (size_t)w;
		tap_sent += (uint64_t)w;
		if ((size_t)w < n)
			break;
	}
out:
	pthread_mutex_unlock(&tap_lock);
}

void ta_tap_finish(int max_ms)
{
	struct timespec t0, t;
	int fd, want;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((fd = ta_tap_fd(&want)) >= 0 && want) {
		struct pollfd pf = {fd, POLLOUT, 0};
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left =
		    max_ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			break;
		ta_tap_pump(0);
	}
	pthread_mutex_lock(&tap_lock);
	tap_end_locked();
	pthread_mutex_unlock(&tap_lock);
}

void ta_tap_stats(uint64_t *dropped, uint64_t *sent)
{
	pthread_mutex_lock(&tap_lock);
	*dropped = tap_dropped;
	*sent = tap_sent;
	pthread_mutex_unlock(&tap_lock);
}

void ta_tap_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* One thread here: the lock may have been held at the fork. */
	memcpy(&tap_lock, &fresh, sizeof(fresh));
	__atomic_store_n(&tap_on, 0, __ATOMIC_RELAXED);
	if (tap_fd >= 0)
		close(tap_fd); /* the parent's reader stays the parent's */
	tap_fd = -1;
	tap_wake = -1;
	free(q);
	q = NULL;
	q_head = q_len = 0;
}
