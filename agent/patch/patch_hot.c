/* SPDX-License-Identifier: MIT */
/*
 * patch_hot.c - the hot path of patched functions (x86-64): the entry and
 * exit of a function relocated whole (patch.c), and for the others the
 * per-thread return stack that lets their exit be recorded, and what puts
 * the real return addresses back before the stack is unwound.
 *
 * Built with -mgeneral-regs-only: the stubs (patch_stub.S) save only the
 * general-purpose registers around ta_patch_on_enter and
 * ta_patch_on_return, so nothing here may touch a vector register; the
 * calls out (the ring's slow path, mapping a return stack) go through
 * ta_patch_vcall, which keeps them.
 *
 * The return stack: ta_patch_on_enter replaces the caller's return address
 * with ta_patch_ret_stub and keeps the real one with the address of the
 * slot it came from.  The slot address identifies the frame: when the ret
 * stub runs, the entry whose slot was just popped is found from the top,
 * and entries above it are frames left without returning (longjmp).  A
 * call also drops the entries at or below its own slot whose slot no
 * longer holds the ret stub (they can only be dead).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

/* The hot path's out-of-line part keeps the vector registers
 * (patch_stub.S; declared again in patch.h). */
#include <stdint.h>

#include "arch.h"
void ta_patch_record_slow(uint64_t addr, uint64_t ticks)
    __attribute__((visibility("hidden"))) TA_ARCH_KEEPS_REGS;
#define TA_RECORD_SLOW ta_patch_record_slow
#include "base.h"
#include "api.h"
#include "compiler.h"
#include "patch.h"
#include "ring.h"

struct rframe {
	uint64_t slot;		       /* address of the return-address slot */
	uint64_t orig;		       /* the real return address */
	uint64_t fn;		       /* the function's entry address (the event's) */
	const struct ta_argspec *spec; /* its arguments' spec (argregs.h), or NULL */
};

struct rstack {
	uint32_t depth;
	uint32_t unwinding; /* a throw restored the return addresses */
	struct rframe f[TA_PATCH_RSTACK_DEPTH];
};

/* Mapped at a thread's first patched call rather than in static TLS: 24
 * KiB more of static TLS in every thread would make pthread_create refuse
 * the small stacks some programs ask for (node does). */
static __thread struct rstack *rs_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t rs_key;

static void rstack_free(void *p)
{
	rs_tls = NULL;
	munmap(p, sizeof(struct rstack));
}

/* The calling thread's return stack, mapped now; NULL if it cannot be.
 * Called through ta_patch_vcall (libc may use the vector registers). */
__attribute__((noinline, cold)) static void *rstack_new(void *unused1, void *unused2)
{
	void *p = mmap(NULL, sizeof(struct rstack), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* A signal handler's patched call may have mapped one meanwhile. */
	if (rs_tls) {
		munmap(p, sizeof(struct rstack));
		return rs_tls;
	}
	rs_tls = p;
	/* Unmapped when the thread exits (a later patched call in another
	 * key's destructor maps it again, and the destructors' next round
	 * unmaps it). */
	pthread_setspecific(rs_key, p);
	return p;
}

/* Frames deeper than the return stack: entered (recorded) but their exit
 * is not, since their return address is left alone.  Relaxed: a
 * statistic. */
uint64_t ta_patch_frames_without_exit;

static inline __attribute__((always_inline)) int
on_enter(const struct ta_patch_desc *d, uint64_t *slot, const struct ta_argspec *spec)
{
	const uint64_t stub = (uint64_t)(uintptr_t)ta_patch_ret_stub;
	struct rstack *r = rs_tls;
	uint64_t ret = *slot;
	uint32_t n;

	/* The `functions` channel off: no record and no return stub.  (2,
	 * not started, cannot be: patching starts the agent.) */
	if (!__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED))
		return 0;
	if (TA_UNLIKELY(!r) && !(r = ta_patch_vcall(rstack_new, NULL, NULL))) {
		/* Relaxed: a count, read at the end (patch.c). */
		__atomic_add_fetch(&ta_patch_frames_without_exit, 1, __ATOMIC_RELAXED);
		ta_record(d->fn);
		return 1;
	}
	n = r->depth;

	/* Entries at or below this call's slot whose slot no longer holds the
	 * ret stub are frames left by longjmp: a live frame's slot is above
	 * the current one, or holds the stub (a tail call from a patched
	 * function reuses its caller's slot, which keeps the stub). */
	while (n > 0 && r->f[n - 1].slot <= (uint64_t)(uintptr_t)slot &&
	       *(const uint64_t *)(uintptr_t)r->f[n - 1].slot != stub)
		n--;
	if (TA_UNLIKELY(n >= TA_PATCH_RSTACK_DEPTH)) {
		r->depth = n;
		__atomic_add_fetch(&ta_patch_frames_without_exit, 1, __ATOMIC_RELAXED);
		ta_record(d->fn);
		return 1;
	}
	/* Reserve the entry before filling it: a signal handler's patched
	 * calls then push above it, never over it. */
	r->depth = n + 1;
	/* Compiler barriers only: the return stack is this thread's, shared
	 * with its signal handlers alone (the depth before the entry, the
	 * entry before the slot is replaced). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r->f[n].slot = (uint64_t)(uintptr_t)slot;
	r->f[n].orig = ret;
	r->f[n].fn = d->fn;
	r->f[n].spec = spec;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (ret != stub)
		*slot = stub;
	ta_record(d->fn);
	return 1;
}

void ta_patch_on_enter(const struct ta_patch_desc *d, uint64_t *slot)
{
	on_enter(d, slot, NULL);
}

int ta_patch_on_enter_args(const struct ta_patch_desc *d, uint64_t *slot,
			   const struct ta_argspec *spec)
{
	return on_enter(d, slot, spec);
}

uint64_t ta_patch_on_return(uint64_t slot, uint64_t gp, uint64_t fp)
{
	struct rstack *r = rs_tls;
	uint32_t n = r ? r->depth : 0;
	struct rframe e;

	/* Entries above the one whose slot was popped are frames that were
	 * left without returning. */
	while (n > 0 && r->f[n - 1].slot != slot)
		n--;
	if (TA_UNLIKELY(n == 0)) {
		/* Cannot happen while the stack discipline holds; there is no
		 * address to return to (the vector registers matter no more). */
		ta_warn("patched function returned through slot %#llx with no saved return "
			"address; aborting",
			(unsigned long long)slot);
		abort();
	}
	e = r->f[n - 1];
	/* The entry is read before it is given up: a signal handler may
	 * reuse it as soon as the depth says so. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r->depth = n - 1;
	if (__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED)) {
		/* Its return value before its exit, the registers kept
		 * (patch_stub.S). */
		if (TA_UNLIKELY(e.spec != NULL))
			ta_patch_args_return(e.spec, gp, fp);
		ta_record(e.fn | TA_REC_EXIT);
	}
	return e.orig;
}

/* A function relocated whole (patch.c): its entry and its exits (each
 * ret, and each jump out to another function, a tail call, whose exit is
 * recorded before the jump as -finstrument-functions code records it).
 * Its return address is never touched: nothing to keep.  Called straight
 * from the function's stubs, which keep only rdi: no_caller_saved_registers
 * has these two save the registers they use themselves (6 on the fast
 * path rather than the 9 scratch registers), and their slow path,
 * ta_patch_record_slow, keeps every one. */
void ta_patch_rel_on_enter(uint64_t fn)
{
	if (__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED))
		ta_record(fn);
}

void ta_patch_rel_on_exit(uint64_t fn)
{
	if (__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED))
		ta_record(fn | TA_REC_EXIT);
}

/* Puts a frame's real return address back in its slot.  Top down: of a
 * tail-call chain sharing a slot, only the bottom entry holds the real
 * address.  A slot that no longer holds the stub belongs to a dead frame
 * and may be someone's variable now. */
static void put_back(const struct rframe *e, uint64_t stub)
{
	uint64_t *s = (uint64_t *)(uintptr_t)e->slot;

	if (e->orig != stub && *s == stub)
		*s = e->orig;
}

void ta_patch_restore(int record_exits)
{
	const uint64_t stub = (uint64_t)(uintptr_t)ta_patch_ret_stub;
	struct rstack *rs = rs_tls;

	if (!rs)
		return;
	/* Top down (put_back). */
	for (uint32_t n = rs->depth; n > 0; n--) {
		struct rframe *e = &rs->f[n - 1];

		put_back(e, stub);
		rs->depth = n - 1;
		if (record_exits)
			ta_record(e->fn | TA_REC_EXIT);
	}
}

int ta_patch_hot_init(void)
{
	return pthread_key_create(&rs_key, rstack_free) == 0 ? 0 : -1;
}

void ta_patch_unwind_begin(void)
{
	const uint64_t stub = (uint64_t)(uintptr_t)ta_patch_ret_stub;
	struct rstack *rs = rs_tls;

	if (!rs)
		return;
	/* The unwinder finds each frame's caller by its return address: it
	 * must see the real ones.  The entries stay, for the catch. */
	for (uint32_t n = rs->depth; n > 0; n--)
		put_back(&rs->f[n - 1], stub);
	rs->unwinding = rs->depth > 0;
}

void ta_patch_unwind_caught(uint64_t limit)
{
	const uint64_t stub = (uint64_t)(uintptr_t)ta_patch_ret_stub;
	struct rstack *rs = rs_tls;
	uint32_t n;

	if (!rs || !rs->unwinding)
		return;
	n = rs->depth;
	rs->unwinding = 0;
	/* Frames whose slot is at or below the catcher's callee's were
	 * unwound: their exits happen now, as the exit hooks of
	 * -finstrument-functions code run from its cleanups. */
	while (n > 0 && rs->f[n - 1].slot <= limit) {
		uint64_t fn = rs->f[n - 1].fn;
		rs->depth = --n;
		ta_record(fn | TA_REC_EXIT);
	}
	/* The frames still alive return through the stub again. */
	for (uint32_t i = n; i > 0; i--) {
		struct rframe *e = &rs->f[i - 1];
		uint64_t *s = (uint64_t *)(uintptr_t)e->slot;
		if (e->orig != stub && *s == e->orig)
			*s = stub;
	}
}
