/* SPDX-License-Identifier: MIT */
/*
 * testdir.h - what the in-process Check tests share: a fresh directory of
 * their own for the files they make (never a fixed name in /tmp, where a
 * file an earlier run left behind makes the agent refuse to trace), and
 * the agent's stderr caught while it starts, so that a test whose agent
 * refuses to trace fails at once with the agent's own words instead of
 * waiting for events that will never come.
 */
#ifndef TA_TESTDIR_H
#define TA_TESTDIR_H

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char ta_test_dir_path[PATH_MAX];

/* Removes the directory and the files in it (the tests make no
 * subdirectories).  At exit: each test is a process of its own. */
static inline void ta_test_dir_remove(void)
{
	DIR *d;
	struct dirent *e;
	char p[PATH_MAX + 256];

	if (!ta_test_dir_path[0] || !(d = opendir(ta_test_dir_path)))
		return;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", ta_test_dir_path, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(ta_test_dir_path);
	ta_test_dir_path[0] = 0;
}

/* A new directory "$TMPDIR/ta-NAME-XXXXXX" (or under /tmp), removed with
 * what it holds when the process exits; its path.  One a process: a
 * second call returns the same one. */
static inline const char *ta_test_dir(const char *name)
{
	const char *tmp = getenv("TMPDIR");

	if (ta_test_dir_path[0])
		return ta_test_dir_path;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	ck_assert_int_lt(
	    snprintf(ta_test_dir_path, sizeof(ta_test_dir_path), "%s/ta-%s-XXXXXX", tmp, name),
	    (int)sizeof(ta_test_dir_path) - 64);
	ck_assert_msg(mkdtemp(ta_test_dir_path) != NULL, "mkdtemp %s: %m", ta_test_dir_path);
	atexit(ta_test_dir_remove);
	return ta_test_dir_path;
}

/* The path of file NAME in the test's directory, in out. */
static inline void ta_test_path(char *out, size_t size, const char *dirname, const char *name)
{
	ck_assert_int_lt(snprintf(out, size, "%s/%s", ta_test_dir(dirname), name), (int)size);
}

/* stderr into a file of the test's directory until ta_stderr_end, which
 * puts it back, copies what was said to the real stderr (it stays in the
 * test's log) and returns it, the last line's newline dropped. */
struct ta_stderr_catch {
	int saved;
	char path[PATH_MAX + 32];
};

static inline void ta_stderr_begin(struct ta_stderr_catch *c, const char *dirname)
{
	int fd;

	ta_test_path(c->path, sizeof(c->path), dirname, "stderr");
	fflush(stderr);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved, 0);
	fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "open %s: %m", c->path);
	ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

static inline const char *ta_stderr_end(struct ta_stderr_catch *c, char *msg, size_t size)
{
	FILE *f;
	size_t n = 0;

	fflush(stderr);
	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	msg[0] = 0;
	if ((f = fopen(c->path, "r")) != NULL) {
		n = fread(msg, 1, size - 1, f);
		fclose(f);
	}
	msg[n] = 0;
	unlink(c->path);
	if (n) {
		fputs(msg, stderr);
		if (msg[n - 1] == '\n')
			msg[n - 1] = 0;
	}
	return msg;
}

#endif
