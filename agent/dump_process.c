/* SPDX-License-Identifier: MIT */
/*
 * dump_process.c - the PROCESS chunk (pid, clock, executable, arguments,
 * settings, the process's start) and the CLOCK chunks.
 *
 * Apart from the writer (dump.c), which it calls to write them: what they
 * say is read from /proc and the clock, nothing of the writer's state.
 * The process's start is kept here, as read or as handed over across exec
 * (dump_share.c), so that every image of a process names it alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "clock.h"
#include "dump.h"
#include "dump_int.h"
#include "format.h"
#include "settings.h"

/* ---- process and clock chunks ---------------------------------------------- */

static void dump_clock_pairs(unsigned n, const uint64_t *ticks, const uint64_t *ns)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, n);
	for (unsigned i = 0; i < n; i++) {
		ta_buf_u(&b, ticks[i]);
		ta_buf_u(&b, ns[i]);
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_CLOCK, b.p, b.len);
	ta_buf_free(&b);
}

void ta_dump_clock(void)
{
	uint64_t ticks, ns;

	ta_clock_pair(&ticks, &ns);
	dump_clock_pairs(1, &ticks, &ns);
}

void ta_dump_clock_since(uint64_t ticks0, uint64_t ns0)
{
	uint64_t ticks[2] = {ticks0}, ns[2] = {ns0};

	ta_clock_pair(&ticks[1], &ns[1]);
	dump_clock_pairs(2, ticks, ns);
}

/* The boot_start the image before an exec wrote, and the pid it wrote it
 * for (0: none handed over).  The kernel keeps /proc/self/stat's start
 * across exec, but qemu-user, which emulates that file, restarts with the
 * new image and gives its own start: the value is handed over with the
 * dump so that every image of a process names it alike. */
static uint64_t handed_boot_start;
static pid_t handed_pid;

/* The process's start as CLOCK_BOOTTIME's nanoseconds, and the pid it is
 * for: boot_start's clock ticks (10 ms) cannot tell apart two processes of
 * one pid started in the same tick, while no two processes given one pid
 * live at once, so a clock read while each lives differs.  Read when the
 * agent first writes for the process (a forked child's restart, a new
 * process's start) and handed over across exec with the dump. */
static uint64_t start_ns;
static pid_t start_pid;

/* Whether this process's start was handed over to it. */
static int handed_here(void)
{
	return handed_pid && handed_pid == getpid();
}

void ta_dump_handed_boot_start(pid_t pid, uint64_t boot_start)
{
	handed_boot_start = boot_start;
	handed_pid = pid;
}

void ta_dump_handed_start_ns(pid_t pid, uint64_t ns)
{
	start_ns = ns;
	start_pid = pid;
}

static uint64_t boot_start_of(int nf, const uint64_t f[3]);
static int self_stat(uint64_t f[3]);

/* Reads a small /proc file whole (our own, no stdio). */
static size_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return 0;
	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return n;
}

/*
 * The process's start time in clock ticks after boot, /proc/self/stat's
 * field 22 (0: not known).  The kernel keeps it across exec, so it names the
 * process in the dump beyond its pid, which a long run reuses (FORMAT.md,
 * PROCESS's boot_start).  The fields after the command's name, which may
 * hold spaces and parentheses, follow its last ')': state is field 3.
 */
uint64_t ta_dump_boot_start(void)
{
	uint64_t f[3];

	return boot_start_of(handed_here() ? 0 : self_stat(f), f);
}

uint64_t ta_dump_start_ns(void)
{
	struct timespec ts;

	if (start_pid != getpid()) {
		if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0 &&
		    clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
			return 0;
		start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		start_pid = getpid();
	}
	return start_ns;
}

/* The start handed over by the image before an exec, else field 22 of the
 * nf fields self_stat read into f. */
static uint64_t boot_start_of(int nf, const uint64_t f[3])
{
	if (handed_here())
		return handed_boot_start;
	return nf >= 1 ? f[0] : 0;
}

/* Fields 22 (the start), 48 and 49 (where the arguments are) of
 * /proc/self/stat, in f; how many were there (qemu-user's has 44). */
static int self_stat(uint64_t f[3])
{
	static const int want[3] = {22, 48, 49};
	char st[1024];
	const char *p;
	size_t n;
	int field = 2, k = 0;

	n = read_file("/proc/self/stat", st, sizeof(st) - 1);
	st[n] = 0;
	p = strrchr(st, ')');
	if (!p)
		return 0;
	for (p++; *p && k < 3; p++) {
		if (*p != ' ')
			continue;
		if (++field != want[k])
			continue;
		f[k] = 0;
		for (; p[1] >= '0' && p[1] <= '9'; p++)
			f[k] = f[k] * 10 + (uint64_t)(p[1] - '0');
		k++;
	}
	return k;
}

/*
 * /proc/self/cmdline's bytes, read from the arguments' memory ([start,
 * end), /proc/self/stat's fields 48 and 49) in one system call rather
 * than three on /proc.  The same bytes the kernel gives when the area
 * still ends with its NUL; when it does not (a program that overwrote its
 * arguments, setproctitle), or the fields are not known (0 under
 * qemu-user), or the area is larger than out, 0: read the file.
 */
static size_t cmdline_at(uint64_t start, uint64_t end, char *out, size_t size)
{
	struct iovec here = {out, (size_t)(end - start)};
	struct iovec there = {(void *)(uintptr_t)start, (size_t)(end - start)};

	if (!start || end <= start || end - start > size)
		return 0;
	/* process_vm_readv, not a plain copy: a page of it gone (unmapped
	 * by the program) is an error, not a crash. */
	if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) != (ssize_t)(end - start) ||
	    out[end - start - 1] != 0)
		return 0;
	return (size_t)(end - start);
}

void ta_dump_process(void)
{
	struct ta_buf b = {0};
	char exe[4096];
	static char cmd[65536];
	size_t n, clen, argc = 0;
	uint64_t ticks, ns, f[3], boot;
	int nf = self_stat(f);

	n = ta_exe_path(exe, sizeof(exe));
	clen = nf == 3 ? cmdline_at(f[1], f[2], cmd, sizeof(cmd)) : 0;
	if (!clen)
		clen = read_file("/proc/self/cmdline", cmd, sizeof(cmd));
	boot = boot_start_of(nf, f);
	for (size_t i = 0; i < clen; i++)
		argc += cmd[i] == 0;
	if (clen && cmd[clen - 1] != 0)
		argc++; /* cut short: the last argument has no NUL */
	ta_clock_pair(&ticks, &ns);
	ta_buf_u(&b, (uint64_t)getpid());
	ta_buf_u(&b, (uint64_t)getppid());
	ta_buf_u(&b, ta_clock_realtime_ns());
	ta_buf_u(&b, ticks);
	ta_buf_u(&b, TA_CLOCK_SOURCE);
	ta_buf_u(&b, ta_clock_nominal_hz());
	ta_buf_str(&b, TA_ARCH_NAME, strlen(TA_ARCH_NAME));
	ta_buf_str(&b, exe, n);
	ta_buf_u(&b, argc);
	for (size_t i = 0; i < clen;) {
		size_t len = strnlen(cmd + i, clen - i);
		ta_buf_str(&b, cmd + i, len);
		i += len + 1;
	}
	ta_buf_u(&b, ta_cfg.block_bytes);
	ta_buf_u(&b, ta_cfg.memory_cap);
	ta_buf_u(&b, ta_cfg.flush_ms);
	ta_buf_u(&b, ta_cfg.mode);
	ta_buf_u(&b, boot);		  /* 1.7 */
	ta_buf_u(&b, ta_dump_start_ns()); /* 1.8 */
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_PROCESS, b.p, b.len);
	ta_buf_free(&b);
}
