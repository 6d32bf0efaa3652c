/* SPDX-License-Identifier: MIT */
/*
 * floor.c - the least any tracer must do per hook, for scripts/bench.
 *
 * Each hook reads the cycle counter and stores 16 bytes (time, address)
 * into a thread-local array that wraps around.  Nothing is flushed, nothing
 * is counted: what a run costs over the untraced binary is the floor that
 * traceagent's per-call overhead is measured against.
 *
 * Build: cc -O2 -fPIC -shared -o libfloor.so floor.c; run with LD_PRELOAD.
 */
#include <stdint.h>

#define FLOOR_SLOTS 4096 /* 64 KiB a thread, traceagent's default block size */
#define FLOOR_EXIT  (1ull << 63)

#define HOOK __attribute__((visibility("default"), no_instrument_function))
#define TLS  __thread __attribute__((tls_model("initial-exec")))

struct floor_rec {
	uint64_t ticks;
	uint64_t addr;
};

/* Preloaded, so initial-exec TLS: one %fs-relative access, no call.  Not
 * static: nothing reads the array, and the compiler would drop the stores
 * into a static one. */
#define HIDDEN __attribute__((visibility("hidden")))
HIDDEN TLS struct floor_rec floor_ring[FLOOR_SLOTS];
HIDDEN TLS uint32_t floor_next;

static inline __attribute__((always_inline)) uint64_t floor_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
#error "floor.c: no cycle counter for this architecture"
#endif
}

static inline __attribute__((always_inline)) void floor_store(uint64_t addr)
{
	uint32_t i = floor_next;

	floor_ring[i].ticks = floor_ticks();
	floor_ring[i].addr = addr;
	floor_next = (i + 1) & (FLOOR_SLOTS - 1);
}

HOOK void __cyg_profile_func_enter(void *fn, void *call_site);
HOOK void __cyg_profile_func_exit(void *fn, void *call_site);

void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	floor_store((uint64_t)(uintptr_t)fn);
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	floor_store((uint64_t)(uintptr_t)fn | FLOOR_EXIT);
}
