/* SPDX-License-Identifier: MIT */
/*
 * auth.c - the token file both sides of the handshake read (auth.h).
 * open/read/close only: the agent reads it at its start, before any
 * thread of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "auth.h"

int ta_auth_read_token(const char *path, uint8_t *buf, size_t *len)
{
	uint8_t extra;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), err = 0;

	if (fd < 0)
		return -errno;
	while (n < TA_AUTH_TOKEN_MAX) {
		ssize_t r = read(fd, buf + n, TA_AUTH_TOKEN_MAX - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (!err && n == TA_AUTH_TOKEN_MAX) {
		ssize_t r;

		while ((r = read(fd, &extra, 1)) < 0 && errno == EINTR)
			;
		if (r > 0)
			err = -EFBIG;
	}
	close(fd);
	if (err)
		return err;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (!n)
		return -EINVAL;
	*len = n;
	return 0;
}
