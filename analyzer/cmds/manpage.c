/* SPDX-License-Identifier: MIT */
/*
 * manpage.c - `traceagent help`: finds a man page built from docs/ and
 * shows it with `man -l`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "manpage.h"
#include "ta_config.h"

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * The page's file: the installed one first (bindir to mandir as
 * configured, applied to where the command is, so a tree staged with
 * DESTDIR or moved whole finds its own pages), then the one built in the
 * build tree next to a command run from there.  No path of the build is
 * compiled in.  0 with the path in out; -1 with why.
 */
static int find_page(const char *page, const char *section, char *out, size_t size, char *why,
		     size_t wsize)
{
	char exe[PATH_MAX], installed[PATH_MAX + 256], built[PATH_MAX + 256];
	char *slash;

	if (!realpath("/proc/self/exe", exe)) {
		snprintf(why, wsize, "cannot find the man page %s(%s): /proc/self/exe: %s", page,
			 section, strerror(errno));
		return -1;
	}
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(installed, sizeof(installed), "%s/%s/man%s/%s.%s", exe, TA_MAN_FROM_BINDIR,
		 section, page, section);
	snprintf(built, sizeof(built), "%s/../docs/%s.%s", exe, page, section);
	if (is_file(installed) && (size_t)snprintf(out, size, "%s", installed) < size)
		return 0;
	if (is_file(built) && (size_t)snprintf(out, size, "%s", built) < size)
		return 0;
	snprintf(why, wsize,
		 "no man page %s(%s) (looked at %s, where it is installed, and at %s; "
		 "pages are built with pandoc: meson -Dman)",
		 page, section, installed, built);
	return -1;
}

int ta_man_show(const char *page, const char *section, char *why, size_t size)
{
	char path[PATH_MAX + 256];
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
	int p[2], err = 0, status;
	pid_t pid;
	ssize_t n;

	if (find_page(page, section, path, sizeof(path), why, size) < 0)
		return -1;
	/* The child's exec failing is told through this pipe, closed on a
	 * successful exec: the difference between "no man" and man's own
	 * failure, which man has said itself. */
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, size, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	/* As system() does: Ctrl-C and Ctrl-\ are man's (its pager's), not
	 * this process's, while it runs. */
	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	pid = fork();
	if (pid == 0) {
		char man[] = "man", local[] = "-l";
		char *argv[] = {man, local, path, NULL};

		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		close(p[0]);
		execvp("man", argv);
		err = errno;
		(void)!write(p[1], &err, sizeof(err));
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		snprintf(why, size, "fork: %s", strerror(errno));
		close(p[0]);
		status = -1;
		goto out;
	}
	do
		n = read(p[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(err)) {
		snprintf(why, size, "cannot run man to show %s: %s%s", path, strerror(err),
			 err == ENOENT ? " (install man-db)" : "");
		status = -1;
	} else if (WIFEXITED(status)) {
		status = WEXITSTATUS(status);
	} else {
		status = 128 + WTERMSIG(status);
	}
out:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	return status;
}
