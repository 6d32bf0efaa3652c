/* SPDX-License-Identifier: MIT */
/*
 * counthook.c - an independent call counter for -finstrument-functions programs.
 *
 * The reference that scripts/realprog-check holds traceagent against: it is
 * preloaded instead of libtraceagent.so and counts, per function address, how
 * often the compiler's enter and exit hooks ran. It shares no code with
 * traceagent on purpose, so a bug there cannot hide here too.
 *
 * At exit it writes one line per function to $COUNTHOOK_OUTPUT ("%p" is
 * replaced by the pid):
 *
 *	<module path> <offset hex> <enter count> <exit count>
 *
 * with offset = address - dlpi_addr of the module whose PT_LOAD segment holds
 * the address, so it equals the symbol's st_value. The main executable's
 * path is the target of /proc/self/exe. An address in no module is written
 * with the module "?" and the absolute address.
 *
 * Counting is a fixed open-addressing table of atomics: no locks, no malloc,
 * no libc call on the hot path, so it is safe in any thread and in signal
 * handlers. If the table fills up the overflow is counted and reported, and
 * the output says "#overflow N" so a checker fails rather than trusts it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default"), no_instrument_function))
#define LOCAL  static __attribute__((no_instrument_function))

/* Far more functions than any program we run; a power of two. */
#define SLOTS	   (1u << 18)
#define MAX_PROBES 4096u

struct slot {
	_Atomic uintptr_t addr; /* 0 = free */
	_Atomic uint64_t enter;
	_Atomic uint64_t exit;
};

static struct slot table[SLOTS];
static _Atomic uint64_t overflow;

LOCAL uint32_t slot_hash(uintptr_t addr)
{
	uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 40) & (SLOTS - 1);
}

/* The slot of addr, claimed if new; NULL when the table is full. */
LOCAL struct slot *slot_find(uintptr_t addr)
{
	uint32_t i = slot_hash(addr);

	for (uint32_t n = 0; n < MAX_PROBES; n++, i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &table[i];
		/* Acquire pairs with the release CAS below: nothing is read through
		 * the slot, but it keeps the reasoning simple. */
		uintptr_t cur = atomic_load_explicit(&s->addr, memory_order_acquire);

		if (cur == addr)
			return s;
		if (cur == 0) {
			uintptr_t expect = 0;
			if (atomic_compare_exchange_strong_explicit(&s->addr, &expect, addr,
								    memory_order_release,
								    memory_order_acquire))
				return s;
			/* Another thread claimed it first, maybe for this address. */
			if (expect == addr)
				return s;
		}
	}
	return NULL;
}

EXPORT void __cyg_profile_func_enter(void *fn, void *site)
{
	struct slot *s = slot_find((uintptr_t)fn);

	(void)site;
	/* Relaxed: the counts are read only at exit, after every other thread's
	 * increments are ordered before by exit()'s own synchronisation. */
	if (s)
		atomic_fetch_add_explicit(&s->enter, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
}

EXPORT void __cyg_profile_func_exit(void *fn, void *site)
{
	struct slot *s = slot_find((uintptr_t)fn);

	(void)site;
	if (s)
		atomic_fetch_add_explicit(&s->exit, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&overflow, 1, memory_order_relaxed);
}

struct lookup {
	uintptr_t addr;
	const char *name; /* out: NULL if no module holds addr */
	uintptr_t bias;
	int is_main;
};

LOCAL int lookup_module(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *lk = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (lk->addr >= start && lk->addr < start + ph->p_memsz) {
			lk->name = info->dlpi_name;
			lk->bias = info->dlpi_addr;
			/* The main program comes first and has an empty name. */
			lk->is_main = info->dlpi_name == NULL || info->dlpi_name[0] == '\0';
			return 1;
		}
	}
	return 0;
}

/* path with every "%p" replaced by the pid, into buf. */
LOCAL void output_path(const char *path, char *buf, size_t cap)
{
	size_t n = 0;

	for (const char *p = path; *p && n + 1 < cap; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			int w = snprintf(buf + n, cap - n, "%ld", (long)getpid());
			if (w < 0 || (size_t)w >= cap - n)
				break;
			n += (size_t)w;
			p++;
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
}

__attribute__((destructor, no_instrument_function)) static void counthook_write(void)
{
	int saved_errno = errno;
	const char *env = getenv("COUNTHOOK_OUTPUT");
	char path[4096], exe[4096];
	FILE *f;

	if (!env || !*env)
		goto out;
	output_path(env, path, sizeof(path));
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		len = 0;
	exe[len] = '\0';

	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "counthook: %s: %s\n", path, strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < SLOTS; i++) {
		struct slot *s = &table[i];
		uintptr_t addr = atomic_load_explicit(&s->addr, memory_order_acquire);
		struct lookup lk = {.addr = addr};

		if (!addr)
			continue;
		dl_iterate_phdr(lookup_module, &lk);
		if (!lk.name)
			fprintf(f, "? %lx", (unsigned long)addr);
		else
			fprintf(f, "%s %lx", lk.is_main ? exe : lk.name,
				(unsigned long)(addr - lk.bias));
		fprintf(f, " %llu %llu\n",
			(unsigned long long)atomic_load_explicit(&s->enter, memory_order_relaxed),
			(unsigned long long)atomic_load_explicit(&s->exit, memory_order_relaxed));
	}
	uint64_t lost = atomic_load_explicit(&overflow, memory_order_relaxed);
	if (lost) {
		fprintf(f, "#overflow %llu\n", (unsigned long long)lost);
		fprintf(stderr, "counthook: table full, %llu events not counted\n",
			(unsigned long long)lost);
	}
	if (fclose(f) != 0)
		fprintf(stderr, "counthook: %s: %s\n", path, strerror(errno));
out:
	errno = saved_errno;
}
