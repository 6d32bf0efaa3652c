/* SPDX-License-Identifier: MIT */
/*
 * peprog.c - a program built with -fpatchable-function-entry (no
 * -finstrument-functions), traced at its patchable entries
 * (agent/patchent.c).  It counts its own calls:
 *
 *   peprog fib N     fib(N) (2*F(N+1)-1 calls of fib), then twice(i) and
 *                    half(i * 0.5) for i < N; prints
 *                    "fib(N) = R calls C twice T half H"
 *   peprog stdin     runs until "quit" on stdin: "fib N" as above (for
 *                    traceagent attach --patch), "text" compares its own
 *                    code in memory with its file's bytes and prints "text
 *                    same" or "text differs at OFFSET"
 *   peprog maps      fib(10), then "capstone yes" or "capstone no": whether
 *                    a libcapstone is mapped in the process
 *
 * untraced() is built without an entry (the attribute) to be refused.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Global, so that the symbol table names them (the patterns do). */
long fib(int n);
long twice(long x);
double half(double x);
int untraced(int x);

static long fib_calls, twice_calls, half_calls;

__attribute__((noinline)) long fib(int n)
{
	long r;

	fib_calls++;
	if (n < 2)
		return n;
	r = fib(n - 1) + fib(n - 2);
	/* Opaque: no compiler turns the second call into a loop. */
	__asm__ volatile("" : "+r"(r));
	return r;
}

__attribute__((noinline)) long twice(long x)
{
	twice_calls++;
	__asm__ volatile("" ::: "memory");
	return 2 * x;
}

__attribute__((noinline)) double half(double x)
{
	half_calls++;
	__asm__ volatile("" ::: "memory");
	return x / 2;
}

__attribute__((noinline, patchable_function_entry(0, 0))) int untraced(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void run_fib(int n)
{
	long r, t = 0;
	double h = 0;

	fib_calls = twice_calls = half_calls = 0;
	r = fib(n);
	for (int i = 0; i < n; i++) {
		t += twice(i);
		h += half(i * 0.5);
	}
	printf("fib(%d) = %ld calls %ld twice %ld half %g untraced %d\n", n, r, fib_calls, t, h,
	       untraced(n));
	fflush(stdout);
}

/* The executable's code in memory against its file: the first byte that
 * differs, as an offset in the file, or -1. */
static int text_seg(struct dl_phdr_info *info, size_t size, void *arg)
{
	long *diff = arg;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	(void)size;
	*diff = -2;
	if (fd < 0)
		return 1;
	*diff = -1;
	for (int i = 0; i < info->dlpi_phnum && *diff == -1; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *mem = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		unsigned char buf[4096];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (size_t off = 0; off < ph->p_filesz && *diff == -1; off += sizeof(buf)) {
			size_t n =
			    ph->p_filesz - off < sizeof(buf) ? ph->p_filesz - off : sizeof(buf);
			if (pread(fd, buf, n, (off_t)(ph->p_offset + off)) != (ssize_t)n) {
				*diff = -2;
				break;
			}
			for (size_t k = 0; k < n; k++)
				if (buf[k] != mem[off + k]) {
					*diff = (long)(ph->p_offset + off + k);
					break;
				}
		}
	}
	close(fd);
	return 1; /* the executable only */
}

int main(int argc, char **argv)
{
	char line[256];

	if (argc == 3 && strcmp(argv[1], "fib") == 0) {
		run_fib(atoi(argv[2]));
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "maps") == 0) {
		FILE *f = fopen("/proc/self/maps", "re");
		int yes = 0;

		run_fib(10);
		while (f && fgets(line, sizeof(line), f))
			yes |= strstr(line, "libcapstone") != NULL;
		if (f)
			fclose(f);
		printf("capstone %s\n", yes ? "yes" : "no");
		return 0;
	}
	if (argc != 2 || strcmp(argv[1], "stdin") != 0) {
		fprintf(stderr, "usage: peprog fib N | stdin\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int n;
		long diff = -2;

		if (sscanf(line, "fib %d", &n) == 1)
			run_fib(n);
		else if (strcmp(line, "text\n") == 0) {
			dl_iterate_phdr(text_seg, &diff);
			if (diff == -1)
				printf("text same\n");
			else
				printf("text differs at %ld\n", diff);
			fflush(stdout);
		} else if (strcmp(line, "quit\n") == 0)
			break;
	}
	printf("done\n");
	return 0;
}
