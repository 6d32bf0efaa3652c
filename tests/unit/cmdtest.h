/* SPDX-License-Identifier: MIT */
/*
 * cmdtest.h - running the real traceagent command from the unit tests, and
 * three functions of the test executable for synthetic dumps to name.
 *
 * The command is the one meson built (TRACEAGENT in the environment); its
 * output and status are captured whole.  The dumps place the test
 * executable as their module at its real load bias, so the analyzer
 * resolves report_fn_a/b/c from this executable's own symbols.
 */
#ifndef TA_CMDTEST_H
#define TA_CMDTEST_H

#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpgen.h"
#include "testutil.h"

/* The line of each function's name, as DWARF records it (srcline tests). */
enum { REPORT_FN_A_LINE = __LINE__ + 1 };
__attribute__((noinline, noclone, used)) static int report_fn_a(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

enum { REPORT_FN_B_LINE = __LINE__ + 1 };
__attribute__((noinline, noclone, used)) static int report_fn_b(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

enum { REPORT_FN_C_LINE = __LINE__ + 1 };
__attribute__((noinline, noclone, used)) static int report_fn_c(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 3;
}

static char self_path[4096];
static uint64_t bias, fa, fb, fc; /* runtime addresses */

static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bias = info->dlpi_addr;
	return 1;
}

__attribute__((unused)) static void setup(void)
{
	int (*volatile f)(int);
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	ck_assert_int_gt(n, 0);
	self_path[n] = 0;
	dl_iterate_phdr(bias_cb, NULL);
	f = report_fn_a;
	fa = (uint64_t)(uintptr_t)f;
	f = report_fn_b;
	fb = (uint64_t)(uintptr_t)f;
	f = report_fn_c;
	fc = (uint64_t)(uintptr_t)f;
}

struct out {
	int status;
	char out[65536];
	char err[65536];
};

static void slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	size_t len = 0;

	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(fd);
	unlink(path);
}

/* Runs traceagent with the arguments (NULL-terminated, at most 14). */
__attribute__((unused, sentinel)) static void run(struct out *o, const char *arg, ...)
{
	const char *exe = getenv("TRACEAGENT");
	const char *argv[16];
	char out_path[64], err_path[64];
	int n = 0, fo, fe, status;
	va_list ap;
	pid_t pid;

	ck_assert_msg(exe != NULL, "TRACEAGENT is not set");
	argv[n++] = exe;
	va_start(ap, arg);
	for (const char *a = arg; a && n < 15; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	dg_write_bytes_tmp("", 0, out_path);
	dg_write_bytes_tmp("", 0, err_path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fo = open(out_path, O_WRONLY);
		fe = open(err_path, O_WRONLY);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(exe, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	o->status = WEXITSTATUS(status);
	slurp(out_path, o->out, sizeof(o->out));
	slurp(err_path, o->err, sizeof(o->err));
}

__attribute__((unused)) static void ev(struct ta_encoder *e, uint64_t t, uint64_t addr, int is_exit)
{
	REQUIRE(ta_encoder_event(e, t, addr, is_exit) == 0, "event");
}

#endif
