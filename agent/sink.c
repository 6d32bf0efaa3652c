/* SPDX-License-Identifier: MIT */
/*
 * sink.c - the dump sent to a collector (sink.h).
 *
 * The connection is made once at the start (and once more by each forked
 * child, which sends its own dump); it is then blocking with a send
 * timeout, so the writer's one sendmsg per chunk waits for a slow
 * collector as write() waits for a slow disk, and gives up on one that
 * has stopped reading altogether.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "sink.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A non-blocking connect finished within the time left; 0 or -errno. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
	int err = 0;
	socklen_t elen = sizeof(err);

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EINTR)
		return -errno;
	for (;;) {
		struct pollfd p = {fd, POLLOUT, 0};
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r > 0)
			break;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
		return -errno;
	return err ? -err : 0;
}

/* Blocking from here on, each send bounded by TA_SINK_STALL_S. */
static int make_blocking(int fd)
{
	struct timeval tv = {TA_SINK_STALL_S, 0};
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

static int connect_unix(const struct ta_addr *a, int64_t deadline)
{
	struct sockaddr_un un;
	int fd, err;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	memcpy(un.sun_path, a->path, strlen(a->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	err = connect_within(fd, (struct sockaddr *)&un, sizeof(un), deadline);
	if (err == 0)
		err = make_blocking(fd);
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

static int connect_tcp(const struct ta_addr *a, int64_t deadline, const char **why)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, err = -ECONNREFUSED, r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	r = getaddrinfo(a->host, a->port, &hints, &res);
	if (r != 0) {
		*why = r == EAI_SYSTEM ? NULL : gai_strerror(r);
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	}
	/* Each address the name has, in order, within the one deadline. */
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		err = connect_within(fd, ai->ai_addr, ai->ai_addrlen, deadline);
		if (err == 0)
			err = make_blocking(fd);
		if (err == 0)
			break;
		close(fd);
		fd = -1;
		if (err == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

int ta_sink_connect(const char *addr, const char **why)
{
	int64_t deadline = now_ms() + TA_SINK_CONNECT_MS;
	struct ta_addr a;
	int fd, err;

	*why = NULL;
	if (ta_addr_parse(addr, 0, &a, why) < 0)
		return -EINVAL;
	fd = a.kind == TA_ADDR_UNIX ? connect_unix(&a, deadline) : connect_tcp(&a, deadline, why);
	if (fd >= 0 && (err = ta_sink_auth(fd, deadline, why)) < 0) {
		close(fd);
		return err;
	}
	return fd;
}

int ta_sink_send(int fd, struct iovec *iov, int niov, void (*stalled)(void))
{
	/* Without waiting until the collector's side is full: the caller
	 * is told before the send that waits. */
	int flags = stalled ? MSG_NOSIGNAL | MSG_DONTWAIT : MSG_NOSIGNAL;

	while (niov > 0) {
		struct msghdr m = {0};
		ssize_t w;

		m.msg_iov = iov;
		m.msg_iovlen = (size_t)niov;
		w = sendmsg(fd, &m, flags);
		if (w < 0 && errno == EAGAIN && (flags & MSG_DONTWAIT)) {
			flags = MSG_NOSIGNAL;
			stalled();
			continue;
		}
		if (w < 0) {
			/* EINTR: a signal during a send with a timeout is not
			 * restarted by the kernel; the bytes count is 0. */
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		if (w == 0)
			return -EIO;
		/* A partial send: what is left of the chunk goes next. */
		while (niov > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			niov--;
		}
		if (niov > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}
