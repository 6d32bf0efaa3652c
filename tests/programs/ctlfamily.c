/* SPDX-License-Identifier: MIT */
/*
 * ctlfamily.c - ctlphases' line protocol for a family of processes, for
 * `traceagent ctl` and `top -p` on forked children and exec'ed images
 * (tests/e2e/test_ctl.py, test_top.py).  Each process reads lines on its
 * standard input and answers each on standard output (one write a line:
 * a family shares the pipe), so the test knows where every process is.
 *   N          calls its role's work function N times (in phase()),
 *              answers "ROLE PID done N"
 *   hot N      calls hot() N times, a few microseconds of its own work
 *              each, answers "ROLE PID hot N"
 *   fork FIFO  forks; the child calls forked() (its first hook restarts the
 *              agent there: it listens from then on), reads its lines from
 *              FIFO and answers "child PID ready"; the parent answers
 *              "forked PID"
 *   exec       replaces the image with this program (role exec), which
 *              answers "exec PID ready"
 *   (end)      answers "ROLE PID bye" and exits 0 (the parent once its
 *              children have, 1 if one did not exit 0)
 * ROLE is parent, child or exec; each calls its own work function
 * (work, child_work, exec_work), so a dump's counts say who called.
 * The first answer, "ROLE PID ready", comes once main is entered (the
 * agent runs then, and listens on its control socket).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;
static const char *role = "parent";

__attribute__((noinline)) void work(int i);
__attribute__((noinline)) void child_work(int i);
__attribute__((noinline)) void exec_work(int i);
__attribute__((noinline)) void phase(int n);
__attribute__((noinline)) void hot(void);
__attribute__((noinline)) void forked(void);

void work(int i)
{
	sink += (unsigned long)i;
}

void child_work(int i)
{
	sink += 2 * (unsigned long)i;
}

void exec_work(int i)
{
	sink += 3 * (unsigned long)i;
}

void phase(int n)
{
	for (int i = 0; i < n; i++) {
		if (role[0] == 'p')
			work(i);
		else if (role[0] == 'c')
			child_work(i);
		else
			exec_work(i);
	}
}

void forked(void)
{
	sink++;
}

void hot(void)
{
	unsigned long x = sink;

	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

/* One line, one write: the family's answers never mix.  Not traced: the
 * events of a process are its work's and phase's and main's enter. */
__attribute__((no_instrument_function)) static void answer(const char *what)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "%s %d %s\n", role, (int)getpid(), what);

	if (n > 0 && write(1, buf, (size_t)n) < 0)
		exit(3);
}

int main(int argc, char **argv)
{
	char line[256], what[64];
	int status, bad = 0;

	if (argc > 1)
		role = argv[1];
	answer("ready");
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "fork ", 5)) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("ctlfamily: fork");
				return 1;
			}
			if (pid == 0) {
				int fd = open(line + 5, O_RDONLY);

				if (fd < 0 || dup2(fd, 0) < 0) {
					perror("ctlfamily: the child's FIFO");
					return 1;
				}
				close(fd);
				clearerr(stdin);
				forked();
				role = "child";
				answer("ready");
				continue;
			}
			snprintf(what, sizeof(what), "%d", (int)pid);
			role = "forked";
			answer(what);
			role = "parent";
		} else if (!strcmp(line, "exec")) {
			execl("/proc/self/exe", "ctlfamily", "exec", (char *)NULL);
			perror("ctlfamily: exec");
			return 1;
		} else if (!strncmp(line, "hot ", 4)) {
			int n = atoi(line + 4);

			for (int i = 0; i < n; i++)
				hot();
			snprintf(what, sizeof(what), "hot %d", n);
			answer(what);
		} else {
			int n = atoi(line);

			phase(n);
			snprintf(what, sizeof(what), "done %d", n);
			answer(what);
		}
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad = 1;
	answer("bye");
	return bad;
}
