/* SPDX-License-Identifier: MIT */
/*
 * top_source.c - where `traceagent top` gets its bytes: a dump file
 * followed like `tail -f`, a program it runs itself with the agent
 * (loader/launch.h), a stream from a traced process that connects to
 * --serve's socket, or one asked of a process over its control socket;
 * and the pump that feeds what arrives to live.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "ctlsock.h"
#include "launch.h"
#include "top_int.h"

/* ---- sources ------------------------------------------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

int ta_top_open_dump(struct source *s, const char *path)
{
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		fprintf(stderr, "traceagent top: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int ta_top_start_prog(struct source *s, const struct options *o, int screen)
{
	char agent[PATH_MAX];
	pid_t pid;

	if (ta_record_find_agent(agent) < 0)
		return -1;
	if (o->keep) {
		snprintf(s->path, sizeof(s->path), "%s", o->keep);
		if (unlink(o->keep) < 0 && errno != ENOENT) {
			fprintf(stderr, "traceagent top: %s: %s\n", o->keep, strerror(errno));
			return -1;
		}
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(s->dir, sizeof(s->dir), "%s/traceagent-top.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(s->dir)) {
			fprintf(stderr, "traceagent top: %s: %s\n", s->dir, strerror(errno));
			s->dir[0] = '\0';
			return -1;
		}
		snprintf(s->path, sizeof(s->path), "%s/top.trace", s->dir);
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "traceagent top: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int err;

		signal(SIGPIPE, SIG_DFL);
		if (ta_record_set_preload(agent) < 0 || setenv("TRACEAGENT_OUTPUT", s->path, 1) < 0)
			_exit(127);
		/* The keys are top's: a program whose input is the terminal
		 * gets /dev/null; one whose input is redirected keeps it. */
		if (screen) {
			int null = isatty(STDIN_FILENO) ? open("/dev/null", O_RDONLY) : -1;

			if (null >= 0)
				dup2(null, STDIN_FILENO);
			/* Its output would scribble over the screen. */
			null = open("/dev/null", O_WRONLY);
			if (null >= 0) {
				dup2(null, STDOUT_FILENO);
				dup2(null, STDERR_FILENO);
			}
		} else if (!isatty(STDOUT_FILENO)) {
			/* --batch: top's snapshots are stdout; the program's
			 * output goes to stderr. */
			dup2(STDERR_FILENO, STDOUT_FILENO);
		}
		execvp(o->argv[0], o->argv);
		err = errno;
		fprintf(stderr, "traceagent top: %s: %s\n", o->argv[0], strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	s->child = pid;
	return 0;
}

/* tcp://HOST:PORT, HOST:PORT or unix:PATH: a listening socket, or -1
 * after printing why. */
int ta_top_listen_on(struct source *s, const char *addr)
{
	int fd = -1, one = 1;

	snprintf(s->path, sizeof(s->path), "%s", addr); /* what messages name */
	if (!strncmp(addr, "unix:", 5)) {
		struct sockaddr_un un = {.sun_family = AF_UNIX};
		struct stat st;

		if (strlen(addr + 5) >= sizeof(un.sun_path) || !addr[5]) {
			fprintf(stderr, "traceagent top: --serve=%s: not a socket path\n", addr);
			return -1;
		}
		strcpy(un.sun_path, addr + 5);
		/* A socket left by an earlier run is taken over; any other
		 * file is not. */
		if (lstat(un.sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(un.sun_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0 ||
		    listen(fd, 4) < 0) {
			fprintf(stderr, "traceagent top: --serve=%s: %s\n", addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		strcpy(s->unix_path, un.sun_path);
	} else {
		char host[256];
		const char *hp = strncmp(addr, "tcp://", 6) ? addr : addr + 6;
		const char *colon = strrchr(hp, ':');
		struct addrinfo hints = {.ai_family = AF_UNSPEC,
					 .ai_socktype = SOCK_STREAM,
					 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
		struct addrinfo *ai = NULL;
		int rc;

		if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof(host) || !colon[1]) {
			fprintf(stderr,
				"traceagent top: --serve=%s: not tcp://HOST:PORT or unix:PATH\n",
				addr);
			return -1;
		}
		memcpy(host, hp, (size_t)(colon - hp));
		host[colon - hp] = '\0';
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = '\0';
		}
		rc = getaddrinfo(host, colon + 1, &hints, &ai);
		if (rc) {
			fprintf(stderr, "traceagent top: --serve=%s: %s\n", addr, gai_strerror(rc));
			return -1;
		}
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4) < 0) {
			fprintf(stderr, "traceagent top: --serve=%s: %s\n", addr, strerror(errno));
			if (fd >= 0)
				close(fd);
			freeaddrinfo(ai);
			return -1;
		}
		freeaddrinfo(ai);
	}
	set_nonblock(fd);
	s->lfd = fd;
	return 0;
}

/* Asks process pid for a stream on its control socket: the socket, past
 * the "ok stream" line, or -1 after printing why. */
int ta_top_ask_stream(struct source *s, long pid)
{
	static const char req[] = "stream\n";
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char dir[PATH_MAX], line[TA_CTL_LINE_MAX + 1];
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	int fd = -1, err = ENOENT;
	size_t n = 0;

	/* Where the agent put it: under XDG_RUNTIME_DIR when the program had
	 * it, else in /tmp; top's environment may differ, so both. */
	for (int pass = 0; pass < 2 && fd < 0; pass++) {
		if ((pass == 0 && !xdg) ||
		    ta_ctl_dir(dir, sizeof(dir), pass ? NULL : xdg, getuid()) < 0 ||
		    ta_ctl_path(un.sun_path, sizeof(un.sun_path), dir, pid) < 0)
			continue;
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&un, sizeof(un)) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fprintf(stderr, "traceagent top: process %ld: no control socket (%s): %s\n", pid,
			un.sun_path, strerror(err));
		return -1;
	}
	snprintf(s->path, sizeof(s->path), "%s", un.sun_path);
	(void)ta_write_all(fd, req, sizeof(req) - 1);
	/* The answer's line, a byte at a time so that no byte of the dump
	 * after it is taken. */
	while (n < TA_CTL_LINE_MAX) {
		ssize_t r = read(fd, line + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (line[n++] == '\n')
			break;
	}
	line[n] = '\0';
	if (n && line[n - 1] == '\n')
		line[--n] = '\0';
	if (strcmp(line, "ok stream")) {
		fprintf(stderr, "traceagent top: process %ld: %s\n", pid,
			n ? line : "the control socket closed without an answer");
		close(fd);
		return -1;
	}
	set_nonblock(fd);
	s->fd = fd;
	return 0;
}

void ta_top_source_close(struct source *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->lfd >= 0)
		close(s->lfd);
	s->fd = s->lfd = -1;
	if (s->unix_path[0])
		unlink(s->unix_path);
	s->unix_path[0] = '\0';
	if (s->dir[0]) {
		unlink(s->path);
		rmdir(s->dir);
		s->dir[0] = '\0';
	}
}

/* Reads what there is now into L: 1 when bytes came, 0 when none, -1
 * when the stream went bad (said in s->why). */
int ta_top_source_pump(struct source *s, struct ta_live *L, uint8_t *buf)
{
	size_t total = 0;

	if (s->kind == SRC_SERVE && s->fd < 0 && s->lfd >= 0) {
		int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (c < 0)
			return 0;
		s->fd = c;
		/* The first traced process only: the next ones find nobody
		 * listening and run on untraced, or with their fallback. */
		close(s->lfd);
		s->lfd = -1;
	}
	if (s->kind == SRC_PROG && s->fd < 0) {
		s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0)
			return 0; /* the agent has not opened it yet */
	}
	if (s->fd < 0 || s->bad || s->eof)
		return 0;
	while (total < READ_PASS_MAX) {
		ssize_t n = read(s->fd, buf, READ_SIZE);
		uint64_t off = 0;
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			snprintf(s->why, sizeof(s->why), "%s: %s", s->path, strerror(errno));
			s->bad = 1;
			return -1;
		}
		if (n == 0) {
			/* A file may grow; a socket is done. */
			if (s->kind == SRC_SERVE || s->kind == SRC_PID)
				s->eof = 1;
			break;
		}
		s->offset += (uint64_t)n;
		total += (size_t)n;
		rc = ta_live_feed(L, buf, (size_t)n, &off);
		if (rc < 0) {
			snprintf(s->why, sizeof(s->why), "%s: offset %" PRIu64 ": %s", s->path, off,
				 ta_strerror(rc));
			s->bad = 1;
			return -1;
		}
	}
	return total > 0;
}
