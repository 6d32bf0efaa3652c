/* SPDX-License-Identifier: MIT */
/*
 * ctlclient.c - `traceagent ctl PID COMMAND [ARGS]`: one request on a traced
 * process's control socket (format/ctlsock.h), its answer printed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "ctlsock.h"

/* How long the agent has to answer a command (a flush writes first). */
#define ANSWER_MS 30000

static void usage(FILE *f)
{
	fprintf(f,
		"usage: traceagent ctl PID COMMAND [ARGS]\n\n"
		"Talks to a process traced by the agent, on its control socket\n"
		"($XDG_RUNTIME_DIR/traceagent/PID.sock, else /tmp/traceagent-UID/PID.sock).\n\n"
		"commands:\n"
		"  pause            stop recording\n"
		"  resume           record again\n"
		"  channels LIST    switch channels as TRACEAGENT_CHANNELS says (functions,-io)\n"
		"  flush            write what is buffered now\n"
		"  dump             flight mode: write the rings now\n"
		"  status           events, lost, threads, memory, output, mode, paused, channels\n"
		"  stream           the dump from now on, to standard output (not a terminal)\n\n"
		"Exit status: 0 when the agent answers ok, 1 on an error, 2 on bad usage.\n");
}

/* Connects to pid's socket in the XDG_RUNTIME_DIR place, then the /tmp
 * one; the descriptor, or -1 with path the first place tried. */
static int connect_to(long pid, char *path, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *places[2] = {xdg && xdg[0] == '/' ? xdg : NULL, NULL};

	snprintf(path, size, "(a path too long)");
	for (int i = places[0] ? 0 : 1, first = 1; i < 2; i++) {
		struct sockaddr_un sun;
		char dir[sizeof(sun.sun_path)], p[sizeof(sun.sun_path)];
		int fd;

		if (ta_ctl_dir(dir, sizeof(dir), places[i], getuid()) < 0 ||
		    ta_ctl_path(p, sizeof(p), dir, pid) < 0)
			continue;
		if (first)
			snprintf(path, size, "%s", p);
		first = 0;
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, p, strlen(p) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			snprintf(path, size, "%s", p);
			return fd;
		}
		/* Not there, or stale (ECONNREFUSED): the next place. */
		close(fd);
	}
	return -1;
}

/* Copies the stream after "ok stream\n" to standard output until the agent
 * closes it; already holds the bytes after that line (have). */
static int copy_stream(int fd, const char *have, size_t n, long pid)
{
	static char buf[1 << 16];

	if (n && ta_write_all(STDOUT_FILENO, have, n) < 0)
		goto out_err;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "traceagent ctl: reading the stream of process %ld: %s\n",
				pid, strerror(errno));
			return 1;
		}
		if (r == 0)
			return 0;
		if (ta_write_all(STDOUT_FILENO, buf, (size_t)r) < 0)
			goto out_err;
	}
out_err:
	if (errno == EPIPE)
		return 0; /* the reader had enough */
	fprintf(stderr, "traceagent ctl: writing the stream of process %ld: %s\n", pid,
		strerror(errno));
	return 1;
}

int ta_cmd_ctl(int argc, char **argv)
{
	char path[256], line[TA_CTL_LINE_MAX + 1], ans[16384];
	size_t len = 0, got = 0;
	char *end;
	long pid;
	int fd, stream;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	/* ctl takes no option but --help: its words after PID are the request. */
	if (argc >= 2 && argv[1][0] == '-' && argv[1][1])
		return ta_usage_error("ctl", "unknown option '%s'", argv[1]);
	if (argc < 3)
		return ta_usage_error("ctl", argc < 2 ? "no process id given" : "no request given");
	errno = 0;
	pid = strtol(argv[1], &end, 10);
	if (errno || *end || end == argv[1] || pid <= 0) {
		fprintf(stderr, "traceagent ctl: '%s' is not a process id\n", argv[1]);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		size_t l = strlen(argv[i]);
		if (strchr(argv[i], '\n') || len + l + 2 > sizeof(line) - 1) {
			fprintf(stderr,
				"traceagent ctl: the command is longer than %d bytes or has a "
				"newline\n",
				TA_CTL_LINE_MAX - 1);
			return 2;
		}
		memcpy(line + len, argv[i], l);
		len += l;
		line[len++] = i + 1 < argc ? ' ' : '\n';
	}
	stream = !strcmp(argv[2], "stream");
	if (stream && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"traceagent ctl: the stream is a binary dump: send it to a file or a "
			"pipe, not a terminal\n");
		return 2;
	}
	fd = connect_to(pid, path, sizeof(path));
	if (fd < 0) {
		fprintf(stderr, "traceagent ctl: no traced process %ld listening at %s\n", pid,
			path);
		return 1;
	}
	if (ta_write_all(fd, line, len) < 0) {
		fprintf(stderr, "traceagent ctl: cannot send to process %ld at %s: %s\n", pid, path,
			strerror(errno));
		close(fd);
		return 1;
	}
	/* The answer: lines, the last "ok..." or "error: ...". */
	for (;;) {
		struct pollfd pf = {fd, POLLIN, 0};
		char *nl, *last;
		ssize_t r;

		if (poll(&pf, 1, ANSWER_MS) == 0) {
			fprintf(stderr, "traceagent ctl: process %ld did not answer at %s\n", pid,
				path);
			close(fd);
			return 1;
		}
		r = read(fd, ans + got, sizeof(ans) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		ans[got] = 0;
		/* Done at the first line that is "ok..." or "error: ...". */
		for (last = ans; (nl = memchr(last, '\n', got - (size_t)(last - ans)));
		     last = nl + 1) {
			if (!strncmp(last, "ok", 2) && (last[2] == '\n' || last[2] == ' ')) {
				if (stream) {
					int rc = copy_stream(fd, nl + 1,
							     got - (size_t)(nl + 1 - ans), pid);
					close(fd);
					return rc;
				}
				fwrite(ans, 1, (size_t)(nl + 1 - ans), stdout);
				close(fd);
				return 0;
			}
			if (!strncmp(last, "error: ", 7)) {
				*nl = 0;
				fwrite(ans, 1, (size_t)(last - ans), stdout);
				fprintf(stderr, "traceagent ctl: process %ld (%s): %s\n", pid, path,
					last + 7);
				close(fd);
				return 1;
			}
		}
		if (got == sizeof(ans) - 1)
			break;
	}
	close(fd);
	fprintf(stderr, "traceagent ctl: process %ld closed %s without an answer\n", pid, path);
	return 1;
}
