/* SPDX-License-Identifier: MIT */
/*
 * pidagain.c - children given the pid of an earlier child, one after the
 * other, all appending to the parent's dump, and started in the same clock
 * tick after boot as far as /proc/self/stat's field 22 says: the case where
 * pid and boot_start together do not tell two processes apart.
 *
 * Run as the first process of a new PID namespace (unshare --pid --fork
 * --mount-proc, as root).  The parent calls work() once; child A calls it 3
 * times.  Then, up to 20 times, child B (5 calls) is given A's pid again
 * (the namespace's /proc/sys/kernel/ns_last_pid) and started in a new time
 * namespace whose boot time is set back so that its start falls in A's
 * tick; the attempts stop at the first B whose start equals A's.  Without
 * time namespaces, one B is started (its tick is then A's or a later one).
 * A B that did not get A's pid (a thread took it first) becomes the A of
 * the next try.
 *
 * Each child prints "child PID start TICKS calls N"; the parent ends with
 * "same-tick N timens T" (how many Bs started in A's tick; T 0 when the
 * kernel makes no time namespace).  Exit status 3: no B got its A's pid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

#define NOINST __attribute__((no_instrument_function))

static volatile int sink;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

/* Field 22 of /proc/self/stat: the start in clock ticks after boot, as
 * this process's time namespace shows it. */
NOINST static unsigned long long self_start(void)
{
	char st[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field = 2;
	ssize_t n = fd >= 0 ? read(fd, st, sizeof(st) - 1) : -1;
	const char *p;

	if (fd >= 0)
		close(fd);
	st[n > 0 ? n : 0] = 0;
	p = strrchr(st, ')');
	if (!p)
		return 0;
	for (p++; *p && field < 22; p++)
		field += *p == ' ';
	return field == 22 ? strtoull(p, NULL, 10) : 0;
}

/* A child that calls work() calls times; its start through the pipe. */
NOINST static pid_t child(int calls, unsigned long long *start)
{
	int p[2], st;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		unsigned long long s = self_start();

		close(p[0]);
		for (int i = 0; i < calls; i++)
			work();
		printf("child %d start %llu calls %d\n", (int)getpid(), s, calls);
		if (write(p[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
		exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], start, sizeof(*start)) != (ssize_t)sizeof(*start))
		pid = -1;
	close(p[0]);
	if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)))
		return -1;
	return pid;
}

NOINST static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(text);
	int ok = fd >= 0 && write(fd, text, (size_t)len) == len;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

/* The next child's time namespace: its boot time set back so that a start
 * now falls 1/20 of a tick into tick `tick`.  0, or -1 (none: the child
 * starts in this one). */
NOINST static int time_back_to(unsigned long long tick)
{
	long hz = sysconf(_SC_CLK_TCK);
	long long want, now, off;
	struct timespec ts;
	char line[96];

	if (hz <= 0 || unshare(CLONE_NEWTIME) < 0)
		return -1;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	now = (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
	want = (long long)tick * (1000000000 / hz) + 1000000000 / hz / 20;
	off = want - now; /* negative: seconds down, nanoseconds in [0, 1e9) */
	snprintf(line, sizeof(line), "boottime %lld %lld\n",
		 off >= 0 ? off / 1000000000 : -((-off + 999999999) / 1000000000),
		 off >= 0 ? off % 1000000000 : (1000000000 - (-off % 1000000000)) % 1000000000);
	return write_file("/proc/self/timens_offsets", line);
}

int main(void)
{
	unsigned long long sa, sb;
	char last[32];
	int same = 0, again = 0, timens = 1;
	pid_t a, b;

	work();
	a = child(3, &sa);
	if (a <= 1)
		return 1;
	snprintf(last, sizeof(last), "%d", (int)a - 1);
	for (int i = 0; i < 20 && (timens ? !same : !again); i++) {
		if (write_file("/proc/sys/kernel/ns_last_pid", last) < 0) {
			perror("pidagain: /proc/sys/kernel/ns_last_pid");
			return 2;
		}
		timens = time_back_to(sa) == 0;
		b = child(5, &sb);
		if (b < 0)
			return 1;
		again += b == a;
		same += b == a && sb == sa;
		/* A thread created meanwhile (the agent's control thread,
		 * started late) may have taken A's pid, for good: that child
		 * is one more, and the next try gives its pid, free again
		 * since it ended, to the next. */
		if (b != a) {
			a = b;
			sa = sb;
			snprintf(last, sizeof(last), "%d", (int)a - 1);
		}
	}
	printf("same-tick %d timens %d\n", same, timens);
	if (!again)
		fprintf(stderr, "pidagain: no child got the pid of the one before it\n");
	return again ? 0 : 3;
}
