/* SPDX-License-Identifier: MIT */
/*
 * control.c - the control socket: a thread of the agent that answers
 * `traceagent ctl PID COMMAND` (format/ctlsock.h says where the socket is
 * and what is said on it).
 *
 * The thread is the agent's: never traced (inside the guard), every signal
 * blocked, and it holds no lock the program's threads need for long (the
 * registry's spin lock for a pause, the drain lock for a flush, as the
 * flusher does).  Everything that comes in is hostile: only the socket's
 * own user is answered (SO_PEERCRED), a request is one line of at most
 * TA_CTL_LINE_MAX bytes read within CLIENT_MS, one client at a time, and
 * nothing it says can make the thread wait without bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "attach.h"
#include "api.h"
#include "ctlsock.h"
#include "ctl.h"
#include "dump.h"
#include "flusher.h"
#include "nextsym.h"
#include "ring.h"
#include "settings.h"
#include "tap.h"

/* How long a client has to send its line. */
#define CLIENT_MS 2000

static int listen_fd = -1;
static int wake_fd = -1; /* eventfd: stop, or chunks for the tap */
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pid_t sock_pid; /* the process that made sock_path (unlinks it) */
static pthread_t ctl_thread;
/* The thread runs (atomic, relaxed: read by the flusher for
 * ta_control_detach_soon, which the window's own thread would see). */
static int ctl_running;
/* Held while the thread is started (by the flusher) or stopped (exit). */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t ctl_stop; /* atomic */
/* ta_control_detach_soon asked the thread to end the attach window. */
static uint32_t ctl_detach; /* atomic */

static void say(int fd, const char *s, size_t n)
{
	/* Never waits: an answer fits in the socket's buffer, and a client
	 * that does not read loses it. */
	if (send(fd, s, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* The client went away. */
	}
}

static void says(int fd, const char *s)
{
	say(fd, s, strlen(s));
}

static int stopping(void)
{
	/* Acquire: pairs with the release in ta_control_stop. */
	return (int)__atomic_load_n(&ctl_stop, __ATOMIC_ACQUIRE);
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Reads the client's line into line (NUL-terminated, without its '\n');
 * its length, or -1 (answered or dropped: the caller closes). */
static int read_line(int c, char line[TA_CTL_LINE_MAX + 1])
{
	struct timespec t0;
	size_t len = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf[2] = {{c, POLLIN, 0}, {wake_fd, POLLIN, 0}};
		long left = CLIENT_MS - ms_since(&t0);
		char *nl;
		ssize_t r;

		if (left <= 0 || stopping())
			return -1; /* said nothing in time: dropped */
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
			return -1;
		if (pf[1].revents) {
			/* Chunks for a stream's reader wait a moment; a stop
			 * is seen above. */
			uint64_t v;
			if (read(wake_fd, &v, sizeof(v)) < 0) {
				/* Nothing to clear. */
			}
			ta_tap_pump(0);
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = recv(c, line + len, TA_CTL_LINE_MAX - len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			if (r == 0 && len)
				says(c, "error: the line has no end ('\\n')\n");
			return -1;
		}
		nl = memchr(line + len, '\n', (size_t)r);
		len += (size_t)r;
		if (nl) {
			*nl = 0;
			len = (size_t)(nl - line);
			if (len && line[len - 1] == '\r')
				line[--len] = 0;
			return (int)len;
		}
		if (len >= TA_CTL_LINE_MAX) {
			says(c, "error: the line is longer than 1024 bytes\n");
			return -1;
		}
	}
}

/* The word for an answer: printable, at most 40 bytes. */
static void clean(char *out, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < max; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = 0;
}

static void status(int c)
{
	static const char *const modes[] = {"lossless", "drop", "flight"};
	char buf[8192], chans[4096];
	uint64_t events, lost, threads, dropped, sent;
	int n;

	ta_flusher_totals(&events, &lost, &threads);
	ta_tap_stats(&dropped, &sent);
	ta_api_channels_text(chans, sizeof(chans));
	n = snprintf(buf, sizeof(buf),
		     "events %" PRIu64 "\nlost %" PRIu64 "\nthreads %" PRIu64 "\nmemory %" PRIu64
		     "/%" PRIu64 "\noutput %s\nmode %s\npaused %s\n"
		     "channels %s\nstream %s %" PRIu64 "\nok\n",
		     events, lost, threads, ta_pool_used_bytes(), ta_cfg.memory_cap, ta_cfg.output,
		     ta_cfg.mode <= TA_MODE_FLIGHT ? modes[ta_cfg.mode] : "?",
		     ta_api_paused() ? "yes" : "no", chans,
		     ta_tap_fd(&(int){0}) >= 0 ? "on" : "off", dropped);
	if (n > 0)
		say(c, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Runs the client's request; returns 1 when c became a stream's reader
 * (the tap keeps it), else 0 (the caller closes it). */
static int serve(int c)
{
	char line[TA_CTL_LINE_MAX + 1], word[48], *args;
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	int len;

	/* Only the socket's own user; the directory is theirs already, this
	 * is the second door. */
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || crl != sizeof(cr) ||
	    cr.uid != geteuid()) {
		says(c, "error: permission denied\n");
		return 0;
	}
	len = read_line(c, line);
	if (len < 0)
		return 0;
	args = strchr(line, ' ');
	if (args) {
		*args++ = 0;
		while (*args == ' ')
			args++;
		if (!*args)
			args = NULL;
	}
	if (!strcmp(line, "pause") || !strcmp(line, "resume")) {
		if (args)
			says(c, "error: pause and resume take no arguments\n");
		else if (ta_api_pause(line[0] == 'p') < 0)
			says(c, "error: the agent is not recording (it is stopping)\n");
		else
			says(c, "ok\n");
	} else if (!strcmp(line, "channels")) {
		if (!args)
			says(c, "error: channels needs a list, as TRACEAGENT_CHANNELS takes "
				"(like functions,-io)\n");
		else if (ta_api_channels_set(args) < 0)
			says(c, "error: the agent is not recording (it is stopping)\n");
		else
			says(c, "ok\n");
	} else if (!strcmp(line, "flush") || !strcmp(line, "dump")) {
		/* Every mode writes what the rings hold now, as the flight
		 * signal does: answered once it is in the dump. */
		if (args) {
			says(c, "error: flush and dump take no arguments\n");
		} else if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING) {
			says(c, "error: the agent is not recording (it is stopping)\n");
		} else {
			/* An injected agent's look for dlopen'ed modules too,
			 * as the flusher's next pass would: answered once
			 * they are traced (attach.c). */
			ta_attach_poll();
			ta_flusher_drain(0);
			ta_dump_clock();
			says(c, "ok\n");
		}
	} else if (!strcmp(line, "attach") || !strcmp(line, "detach")) {
		const char *why = NULL;

		if (args) {
			says(c, "error: attach and detach take no arguments\n");
		} else if (ta_attach_command(line[0] == 'a', &why) < 0) {
			char msg[160];

			snprintf(msg, sizeof(msg), "error: %s\n", why);
			says(c, msg);
		} else {
			says(c, "ok\n");
		}
	} else if (!strcmp(line, "status")) {
		if (args)
			says(c, "error: status takes no arguments\n");
		else
			status(c);
	} else if (!strcmp(line, "stream")) {
		int want;

		if (args)
			says(c, "error: stream takes no arguments\n");
		else if (ta_tap_fd(&want) >= 0)
			says(c, "error: a stream is being sent already (one reader at a time)\n");
		else {
			says(c, "ok stream\n");
			return ta_tap_open(c, wake_fd) == 0;
		}
	} else {
		char msg[160];

		clean(word, line, 33);
		snprintf(msg, sizeof(msg),
			 "error: unknown command '%s' (pause, resume, channels, flush, dump, "
			 "status, stream, attach, detach)\n",
			 word);
		says(c, msg);
	}
	return 0;
}

static void *control_main(void *arg)
{
	(void)arg;
	/* Everything this thread does is the agent's. */
	TA_GUARD_ENTER();
	syscall(SYS_prctl, 15 /* PR_SET_NAME */, "traceagent-ctl", 0, 0, 0);
	while (!stopping()) {
		struct pollfd pf[3] = {{wake_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}, {-1, 0, 0}};
		int want, tfd = ta_tap_fd(&want);

		if (tfd >= 0) {
			pf[2].fd = tfd;
			pf[2].events = (short)(POLLIN | (want ? POLLOUT : 0));
		}
		if (poll(pf, 3, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			uint64_t v;
			if (read(wake_fd, &v, sizeof(v)) < 0) {
				/* Nothing to clear. */
			}
		}
		if (stopping())
			break;
		/* Acquire: pairs with the release in ta_control_detach_soon. */
		if (__atomic_exchange_n(&ctl_detach, 0, __ATOMIC_ACQUIRE)) {
			const char *why;

			(void)ta_attach_command(0, &why);
		}
		if (tfd >= 0 && pf[2].revents)
			ta_tap_pump(pf[2].revents & (POLLIN | POLLHUP | POLLERR));
		if (pf[1].revents & POLLIN) {
			int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0 && !serve(c))
				close(c);
		}
	}
	TA_GUARD_LEAVE();
	return NULL;
}

/* The socket's directory, made if need be: 0 when it is a directory of
 * this user's own that nobody else may enter. */
static int private_dir(const char *dir)
{
	struct stat st;
	int there;

	/* Looked at first: it is there but at a user's first traced run,
	 * and a mkdir that finds it costs a system call more. */
	there = lstat(dir, &st) == 0;
	if (!there && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		ta_warn("cannot create the control directory %s: %s; no control socket", dir,
			strerror(errno));
		return -1;
	}
	if (!there && lstat(dir, &st) < 0) {
		ta_warn("cannot look at the control directory %s: %s; no control socket", dir,
			strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		ta_warn(
		    "the control directory %s is not a directory of uid %u's own with mode 0700 "
		    "(owner %u, mode %o); no control socket",
		    dir, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/* The eventfd and the thread, for the socket bound already; the caller
 * holds ctl_lock.  On failure no socket is left, except when the process
 * is replacing itself (-EAGAIN: tried again if the exec fails). */
static int start_thread(void)
{
	sigset_t all, old;
	int err;

	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0) {
		ta_warn("cannot make the control socket's eventfd: %s; no control socket",
			strerror(errno));
		goto fail;
	}
	/* Created with every signal blocked: the program's handlers never
	 * run on it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = ta_real_pthread_create(&ctl_thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(wake_fd);
		wake_fd = -1;
		/* Under qemu-user a thread made while another one execs
		 * fails so; the process is going, its socket with it. */
		if (err == EAGAIN && ta_dump_sealed())
			return -EAGAIN;
		ta_warn("cannot start the control thread: %s; no control socket", strerror(err));
		goto fail;
	}
	__atomic_store_n(&ctl_running, 1, __ATOMIC_RELAXED);
	return 0;
fail:
	close(listen_fd);
	listen_fd = -1;
	unlink(sock_path);
	return -1;
}

void ta_control_start(int thread_now)
{
	struct sockaddr_un sun;
	char dir[sizeof(sun.sun_path)];
	int fd, err;

	if (!ta_cfg.control || listen_fd >= 0)
		return;
	if (ta_ctl_dir(dir, sizeof(dir), secure_getenv("XDG_RUNTIME_DIR"), geteuid()) < 0 ||
	    ta_ctl_path(sock_path, sizeof(sock_path), dir, (long)getpid()) < 0) {
		ta_warn("the control socket's path (in %.200s) is too long; no control socket",
			secure_getenv("XDG_RUNTIME_DIR") ? secure_getenv("XDG_RUNTIME_DIR")
							 : "/tmp");
		return;
	}
	if (private_dir(dir) < 0)
		return;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ta_warn("cannot make the control socket %s: %s; no control socket", sock_path,
			strerror(errno));
		return;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sock_path, strlen(sock_path) + 1);
	/* A socket left by a process of this pid that is gone (or by this
	 * process's previous image, before an exec) is unlinked, then bound
	 * again; only then: most starts find none, and a lookup on the
	 * directory costs as much as the bind. */
	err = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	if (err < 0 && errno == EADDRINUSE) {
		unlink(sock_path);
		err = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	}
	if (err < 0 || listen(fd, 16) < 0) {
		ta_warn("cannot listen on the control socket %s: %s; no control socket", sock_path,
			strerror(errno));
		close(fd);
		return;
	}
	/* Under the lock: the flusher, which reads them, runs already. */
	pthread_mutex_lock(&ctl_lock);
	listen_fd = fd;
	sock_pid = getpid();
	__atomic_store_n(&ctl_stop, 0, __ATOMIC_RELAXED);
	if (thread_now)
		(void)start_thread();
	pthread_mutex_unlock(&ctl_lock);
}

int ta_control_start_thread(void)
{
	int err = 0;

	/* Tried, not waited for: the exit may hold the lock while it joins
	 * a control thread that is detaching, which waits for the flusher. */
	if (pthread_mutex_trylock(&ctl_lock) != 0)
		return -1;
	if (listen_fd >= 0 && !__atomic_load_n(&ctl_running, __ATOMIC_RELAXED) && !stopping())
		err = start_thread();
	pthread_mutex_unlock(&ctl_lock);
	return err == -EAGAIN ? -1 : 0;
}

void ta_control_stop(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ctl_lock);
	if (listen_fd < 0) {
		pthread_mutex_unlock(&ctl_lock);
		return;
	}
	/* Release: pairs with the acquire in stopping(). */
	__atomic_store_n(&ctl_stop, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&ctl_running, __ATOMIC_RELAXED)) {
		if (write(wake_fd, &one, sizeof(one)) < 0) {
			/* Readable already: the thread wakes all the same. */
		}
		if (!pthread_equal(pthread_self(), ctl_thread))
			pthread_join(ctl_thread, NULL);
		__atomic_store_n(&ctl_running, 0, __ATOMIC_RELAXED);
	}
	close(listen_fd);
	listen_fd = -1;
	if (sock_pid == getpid())
		unlink(sock_path);
	pthread_mutex_unlock(&ctl_lock);
}

void ta_control_finish(void)
{
	/* The reader's last chunks (the END among them), for at most a
	 * second: the process is exiting and must not wait for long. */
	ta_tap_finish(1000);
	if (wake_fd >= 0 && !__atomic_load_n(&ctl_running, __ATOMIC_RELAXED)) {
		close(wake_fd);
		wake_fd = -1;
	}
}

void ta_control_detach_soon(void)
{
	uint64_t one = 1;

	if (!__atomic_load_n(&ctl_running, __ATOMIC_RELAXED))
		return;
	/* Release: pairs with the acquire in control_main. */
	__atomic_store_n(&ctl_detach, 1, __ATOMIC_RELEASE);
	if (write(wake_fd, &one, sizeof(one)) < 0) {
		/* Readable already: the thread wakes all the same. */
	}
}

void ta_control_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* The thread does not exist here; the descriptors are copies of the
	 * parent's, whose socket file stays.  The lock may have been held by
	 * the parent's flusher, which does not exist here either. */
	memcpy(&ctl_lock, &fresh, sizeof(fresh));
	__atomic_store_n(&ctl_running, 0, __ATOMIC_RELAXED);
	if (listen_fd >= 0)
		close(listen_fd);
	if (wake_fd >= 0)
		close(wake_fd);
	listen_fd = wake_fd = -1;
	ta_tap_fork_child();
}
