/* SPDX-License-Identifier: MIT */
/*
 * patch.c - tracing code that was never compiled with -finstrument-functions
 * (x86-64): TRACEAGENT_PATCH names functions by glob, and their entries are
 * patched when the agent's library is initialised (before main, while only
 * one thread runs) and when a library is dlopen'ed.
 *
 * For each function: capstone decodes the whole body (to find jumps into
 * its first bytes) and the first instructions that cover a 5-byte jmp,
 * whose place the entry's jmp takes (after an endbr64, which stays).
 * Where it is safe the whole body is then copied into the pool and the jmp
 * goes to its entry stub ("relocating a whole function" below: rets and
 * tail calls rewritten to record the exit, the return address untouched);
 * else the first instructions are copied into a trampoline, their
 * RIP-relative operands and relative branches rewritten for the new place,
 * followed by a jmp back, and the jmp goes to the function's stub, which
 * calls ta_patch_enter_common (patch_stub.S) and falls into the
 * trampoline; exits then go through the return stub and the per-thread
 * return stack of patch_hot.c.  Stubs, copies and trampolines live in
 * memory mapped within 2 GiB of the module, so rel32 jumps reach them both
 * ways.
 *
 * Refusals rather than corruption: too short, a jump into the bytes the jmp
 * replaces, an instruction that cannot be moved, a body capstone cannot
 * decode, ret N, a function reading its own return address, a .cold part,
 * the entry point, the agent's own dependencies, no memory near the module,
 * a breakpoint in the bytes the jmp replaces.  Each is listed in the
 * dump's PATCH chunk (traceagent info) and counted on stderr; a breakpoint
 * is also named there, as it may be set by someone debugging the process.
 *
 * Breakpoints (an int3 written over an instruction's first byte by a
 * debugger, a uprobe or `perf probe`): copied into a trampoline or a
 * relocated body, one would trap where nobody set it, and the process
 * would die of SIGTRAP.  One in the bytes the jmp replaces refuses the
 * function; one further in keeps the body in place (the return stub's
 * way), so that it traps where it was set.
 *
 * Safe points: at start nothing else runs yet; after a dlopen, the new
 * module's functions are patched before dlopen returns (docs/limits.md says
 * what remains).
 *
 * This file chooses, patches and undoes functions module by module and
 * writes the PATCH chunk; a function's analysis and relocation are
 * reloc.c's, capstone's opening disasm.c's, the patched functions' hot
 * path patch_hot.c's; patch_none.c stands in where there is no patcher.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argregs.h"
#include "args.h"
#include "base.h"
#include "dump.h"
#include "fnsel.h"
#include "format.h"
#include "hookpatch.h"
#include "lazylib.h"
#include "patch.h"
#include "patchent.h"
#include "ring.h"
#include "symstore.h"
#include "ta_config.h"

#if TA_HAVE_PATCH
#include "disasm.h"
#include "patch_int.h"

/* ---- patterns --------------------------------------------------------------- */

static struct ta_patterns patterns;
/* For each pattern (under patch_lock): the functions it named, and
 * whether its naming none was said; NULL when out of memory. */
static uint64_t *pattern_hits;
static uint8_t *pattern_said;
static int patterns_from_attach; /* set by a `traceagent attach --patch` */

/* Whether function `name` of the module is asked for: an inclusion
 * matches it and no exclusion does. */
static int wanted(void *arg, const char *modbase, int is_exe, const char *name)
{
	int in, out;

	(void)arg;
	ta_patterns_match(&patterns, modbase, is_exe, name, &in, &out);
	if (pattern_hits)
		for (size_t p = 0; p < patterns.n; p++)
			pattern_hits[p] +=
			    !patterns.p[p].exclude &&
			    ta_pattern_matches(&patterns.p[p], modbase, is_exe, name);
	return in && !out;
}

/* Room to count each pattern's functions (after a parse). */
static void pattern_hits_alloc(void)
{
	free(pattern_hits);
	free(pattern_said);
	pattern_hits = calloc(patterns.n ? patterns.n : 1, sizeof(*pattern_hits));
	pattern_said = calloc(patterns.n ? patterns.n : 1, 1);
	if (!pattern_hits || !pattern_said) {
		free(pattern_hits);
		free(pattern_said);
		pattern_hits = NULL;
		pattern_said = NULL;
	}
}

/* One line for each inclusion that named no function (under patch_lock):
 * at the start those of the executable (no MODULE:), at the end the
 * others (a library may come by dlopen). */
static void say_unmatched(int at_end)
{
	if (!pattern_hits)
		return;
	for (size_t p = 0; p < patterns.n; p++) {
		const struct ta_pattern *pt = &patterns.p[p];

		if (pt->exclude || pattern_hits[p] || pattern_said[p] || (!at_end && pt->module))
			continue;
		pattern_said[p] = 1;
		ta_warn("TRACEAGENT_PATCH: '%s%s%s' names no function%s; it patches nothing",
			pt->module ? pt->module : "", pt->module ? ":" : "", pt->glob,
			pt->module ? "" : " of the executable");
	}
}

/* The agent's own dependencies: patching them would have the agent trace
 * (and re-enter) itself, and the loader runs before anything is safe. */
static const char *const untouchable[] = {
    "libc.so*",	 "ld-linux*",	   "libtraceagent*", "liblz4.so*",   "libunwind*",  "liblzma.so*",
    "libgcc_s*", "libpthread.so*", "libdl.so*",	     "libcapstone*", "linux-vdso*",
};

static int is_untouchable(const char *modbase)
{
	for (size_t i = 0; i < sizeof(untouchable) / sizeof(untouchable[0]); i++)
		if (fnmatch(untouchable[i], modbase, 0) == 0)
			return 1;
	return 0;
}

/* ---- results ---------------------------------------------------------------- */

static const char *refusal_text(unsigned code)
{
	switch (code) {
#define TA_X(name, code, text)                                                                     \
	case code:                                                                                 \
		return text;
		REFUSALS(TA_X)
#undef TA_X
	}
	return "unknown";
}

static const char *fallback_text(unsigned code)
{
	switch (code) {
#define TA_X(name, code, text)                                                                     \
	case code:                                                                                 \
		return text;
		FALLBACKS(TA_X)
#undef TA_X
	}
	return "unknown";
}

static struct ta_refusals refused;
static uint64_t npatched;
/* Of npatched, those relocated whole; the others' reasons, by code. */
static uint64_t nrelocated, nfallback[F_N];
static int patch_on; /* patterns were given and parsed */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

static void refuse(const char *module, const char *name, uint64_t addr, unsigned reason)
{
	ta_refusals_add(&refused, module, name, addr, reason);
}

/* ---- memory near a module ------------------------------------------------------ */

#define POOL_SIZE (256u << 10)
#define NEAR	  (1ll << 31)

struct pool {
	uint8_t *base;
	size_t used;
};

static int near_enough(uint64_t a, uint64_t b)
{
	int64_t d = (int64_t)(a - b);
	return d > -NEAR + (1 << 20) && d < NEAR - (1 << 20);
}

/* Maps POOL_SIZE bytes within reach of [lo, hi); NULL if none is free. */
static uint8_t *map_near(uint64_t lo, uint64_t hi)
{
	const uint64_t step = 1u << 20;

	for (int dir = 0; dir < 2; dir++) {
		for (uint64_t k = 1; k < 1024; k++) {
			uint64_t hint = dir == 0 ? ((hi + step - 1) & ~(step - 1)) + k * step
						 : (lo & ~(step - 1)) - k * step - POOL_SIZE;
			void *p;
			if (dir == 1 && hint > lo)
				break;
			if (!near_enough(hint, lo) || !near_enough(hint + POOL_SIZE, hi))
				break;
			p = mmap((void *)(uintptr_t)hint, POOL_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)(uintptr_t)p != hint) {
				/* An old kernel took the flag as a hint. */
				munmap(p, POOL_SIZE);
				continue;
			}
			return p;
		}
	}
	return NULL;
}

/* Patching at `traceagent attach` (ta_patch_attach_*): the threads run
 * while the patches are planned, so the entries are not written then but
 * kept (pending), written by ta_patch_attach_commit while the loader has
 * every thread stopped, and put back by ta_patch_attach_restore. */
int ta_patch_attach_mode;
int ta_patch_hooks_nopped;

/* ---- one module ------------------------------------------------------------------ */

/* GCC's foo.cold (or foo.cold.N): the unlikely part of foo, split out
 * and jumped to from it; what its entry finds on the stack is foo's, not
 * a return address. */
int ta_patch_is_cold_part(const char *name)
{
	const char *c = strstr(name, ".cold");

	return c && (c[5] == 0 || c[5] == '.');
}

static int seg_of(const struct ta_module *m, uint64_t a, uint64_t len)
{
	for (int i = 0; i < m->nseg; i++)
		if (a >= m->seg[i].start && a + len <= m->seg[i].end)
			return i;
	return -1;
}

/* Makes the executable segments writable (1) or gives them back their
 * protections (0); 0 or -errno. */
static int segments_writable(const struct ta_module *m, int on)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < m->nseg; i++) {
		uint64_t s = m->seg[i].start & ~(uint64_t)(pg - 1);
		int prot = on ? m->seg[i].prot | PROT_WRITE : m->seg[i].prot;
		if (mprotect((void *)(uintptr_t)s, m->seg[i].end - s, prot) < 0)
			return -errno;
	}
	return 0;
}

struct job {
	struct plan pl;
	uint8_t *slot;		       /* stub, desc, trampoline (or copy) in the pool */
	uint64_t entry;		       /* where the function's entry jumps: its stub */
	unsigned fb;		       /* 0: relocated whole; else why not (enum fallback) */
	const struct ta_argspec *spec; /* arguments recorded (argregs.h), or NULL */
};

_Static_assert(TA_PATCH_SPEC_AT == SLOT_SIZE, "a spec follows its slot");

/* The count of a function patched by job j. */
static void count_patched(unsigned fb)
{
	npatched++;
	if (fb)
		nfallback[fb]++;
	else
		nrelocated++;
}

/* An entry planned at attach: its bytes as they are and as they will be. */
struct pending {
	size_t mod;	/* in pend_mods */
	uint64_t start; /* the entry (after an endbr64) */
	unsigned len;	/* bytes replaced: the jmp, then int3s */
	int applied;	/* 1 written, 2 given up (its bytes changed since the plan) */
	unsigned fb;	/* as in struct job */
	uint8_t orig[32], repl[32];
};
static struct pending *pend;
static size_t npend, pend_cap;
static struct ta_module *pend_mods;
static size_t npend_mods, pend_mods_cap;

/* The jobs of module m, planned: kept for ta_patch_attach_commit. */
static void keep_pending(const struct ta_module *m, const struct job *jobs, size_t njobs)
{
	struct ta_module *nm =
	    ta_vec_reserve(pend_mods, npend_mods + 1, &pend_mods_cap, sizeof(*nm), 8);

	if (!nm)
		return;
	pend_mods = nm;
	pend_mods[npend_mods] = *m;
	for (size_t i = 0; i < njobs; i++) {
		struct pending *np = ta_vec_reserve(pend, npend + 1, &pend_cap, sizeof(*np), 64);
		struct pending *e;

		if (!np)
			break;
		pend = np;
		e = &pend[npend];
		if (jobs[i].pl.len > sizeof(e->orig))
			continue;
		e->mod = npend_mods;
		e->start = jobs[i].pl.start;
		e->len = jobs[i].pl.len;
		e->applied = 0;
		e->fb = jobs[i].fb;
		memcpy(e->orig, (const void *)(uintptr_t)e->start, e->len);
		e->repl[0] = 0xe9;
		put32(e->repl + 1, (int32_t)((int64_t)(jobs[i].entry - (e->start + 5))));
		memset(e->repl + 5, 0xcc, e->len - 5);
		npend++;
	}
	npend_mods++;
}

/* Capstone, opened for the first module that needs it (never for one
 * built with patchable entries); said once when it cannot be. */
static __thread int opening_capstone;

static int capstone_ready(void)
{
	static int state; /* 0 not tried, 1 open, -1 not (under patch_lock) */

	if (state == 0) {
		/* Its dlopen is the agent's own, under patch_lock and inside
		 * the loader's walk: no module of its is to be patched. */
		opening_capstone = 1;
		state = ta_capstone_open() < 0 ? -1 : 1;
		opening_capstone = 0;
		if (state < 0)
			ta_warn("cannot open " TA_CS_SONAME
				" (capstone, to decode x86-64); only functions built with "
				"-fpatchable-function-entry are patched");
	}
	return state > 0;
}

static void patch_module(const struct ta_module *m)
{
	const char *modbase = ta_base_name(m->path);
	void *map;
	size_t maplen = 0, n;
	struct ta_fn_cand *c;
	struct job *jobs;
	size_t njobs = 0;
	struct pool pools[64];
	int npools = 0;
	int err;
	struct modfacts facts = {0};

	if (!ta_patterns_name_module(&patterns, modbase, m->is_exe))
		return;
	/* Built with -fpatchable-function-entry: patchent.c's, without
	 * capstone (the names are matched here too, for say_unmatched). */
	if (ta_patchent_owns(m)) {
		free(ta_module_functions(m, wanted, NULL, &n, &map, &maplen));
		if (map)
			munmap(map, maplen);
		return;
	}
	if (!capstone_ready())
		return;
	c = ta_module_functions(m, wanted, NULL, &n, &map, &maplen);
	if (!c || n == 0) {
		free(c);
		if (map)
			munmap(map, maplen);
		return;
	}
	if (!m->is_exe && is_untouchable(modbase)) {
		for (size_t i = 0; i < n; i++)
			refuse(m->path, c[i].name, c[i].addr, R_AGENT_DEP);
		goto done;
	}
	jobs = calloc(n, sizeof(*jobs));
	if (!jobs)
		goto done;
	ta_patch_module_facts(m, map, maplen, &facts);
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[njobs];
		struct whole w;
		unsigned why;
		size_t need = SLOT_SIZE;
		if (seg_of(m, c[i].addr, c[i].size) < 0) {
			refuse(m->path, c[i].name, c[i].addr, R_NOT_CODE);
			continue;
		}
		if (c[i].entry) {
			refuse(m->path, c[i].name, c[i].addr, R_ENTRY_POINT);
			continue;
		}
		if (ta_patch_is_cold_part(c[i].name)) {
			refuse(m->path, c[i].name, c[i].addr, R_COLD_PART);
			continue;
		}
		j->spec = ta_args_find(c[i].addr, c[i].name);
		/* An instrumented function's events come from the patch
		 * instead of its hooks, with its arguments: its hook calls
		 * become no-ops so that it is counted once (hookpatch.h).
		 * Not at attach: the no-ops would be written with the threads
		 * running, before the entry is, and a call running then
		 * would lose its exit hook; the function reads its return
		 * address for the hooks, and the analysis refuses it. */
		ta_patch_hooks_nopped = 0;
		if (j->spec && !ta_patch_attach_mode) {
			int hp = ta_hookpatch_nop(c[i].addr, c[i].addr + c[i].size);

			if (hp < 0 && hp != -ENOENT && hp != -ENOSYS) {
				refuse(m->path, c[i].name, c[i].addr, R_HOOKS);
				continue;
			}
			ta_patch_hooks_nopped = hp == 0;
		}
		why = ta_patch_analyse(c[i].addr, c[i].size, &j->pl);
		ta_patch_hooks_nopped = 0;
		memset(&w, 0, sizeof(w));
		if (!why) {
			struct pool *pool = npools ? &pools[npools - 1] : NULL;
			/* The arguments are taken by the return stub's entry. */
			j->fb = j->spec
				    ? F_ARGS
				    : ta_patch_plan_whole(c[i].addr, c[i].size, &j->pl, &facts, &w);
			if (j->spec)
				need = SLOT_SIZE + 16;
			if (!j->fb) {
				/* 16-byte aligned, and room for the return stub's
				 * slot should the copy fail. */
				need = (REL_BODY_AT + w.len + 15) & ~(size_t)15;
				if (need > POOL_SIZE) {
					j->fb = F_NO_ROOM;
					need = SLOT_SIZE;
				} else if (need < SLOT_SIZE)
					need = SLOT_SIZE;
			}
			if ((!pool || pool->used + need > POOL_SIZE) &&
			    npools < (int)(sizeof(pools) / sizeof(pools[0]))) {
				uint8_t *b = map_near(m->lo, m->hi);
				if (b) {
					pools[npools].base = b;
					pools[npools].used = 0;
					pool = &pools[npools++];
				}
			}
			if (!pool || pool->used + need > POOL_SIZE)
				why = R_NO_MEMORY;
			else {
				j->slot = pool->base + pool->used;
				if (!j->fb &&
				    (j->fb = ta_patch_emit_whole(&w, c[i].addr, j->slot)) == 0) {
					j->entry = (uint64_t)(uintptr_t)j->slot + REL_STUB_AT;
					ta_patch_keep_relmap(&w, &j->pl, j->slot);
				} else {
					j->entry = (uint64_t)(uintptr_t)j->slot + STUB_AT;
					why = ta_patch_relocate(
					    &j->pl, (uint64_t)(uintptr_t)j->slot + TRAMP_AT);
				}
				if (!why && !fits32((int64_t)(j->entry - (j->pl.start + 5))))
					why = R_NO_MEMORY;
				if (!why)
					pool->used += need;
			}
		}
		free(w.ins);
		if (why) {
			refuse(m->path, c[i].name, c[i].addr, why);
			/* Someone is debugging or probing the process: told
			 * which function is not traced, and why, at once. */
			if (why == R_BREAKPOINT)
				ta_warn("not patching %s (%s, %#llx): %s; it is not traced",
					c[i].name, m->path, (unsigned long long)c[i].addr,
					refusal_text(why));
			continue;
		}
		/* The return stub's way: the descriptor, the stub and the
		 * trampoline. */
		if (j->fb) {
			uint8_t *s = j->slot;
			uint64_t self = (uint64_t)(uintptr_t)s;
			uint64_t common = (uint64_t)(uintptr_t)(j->spec ? ta_patch_enter_args
									: ta_patch_enter_common);
			memcpy(s, &c[i].addr, 8);
			if (j->spec)
				memcpy(s + TA_PATCH_SPEC_AT, &j->spec, sizeof(j->spec));
			memcpy(s + 8, &common, 8);
			s[16] = 0x41; /* push %r11 */
			s[17] = 0x53;
			s[18] = 0x49; /* movabs $slot, %r11 */
			s[19] = 0xbb;
			memcpy(s + 20, &self, 8);
			s[28] = 0xff; /* call *-26(%rip): the pointer at 8 */
			s[29] = 0x15;
			put32(s + 30, 8 - 34);
			s[34] = 0x41; /* pop %r11 */
			s[35] = 0x5b;
			memcpy(s + TRAMP_AT, j->pl.code, j->pl.code_len);
		}
		njobs++;
	}
	for (int i = 0; i < npools; i++)
		if (mprotect(pools[i].base, POOL_SIZE, PROT_READ | PROT_EXEC) < 0) {
			err = -errno;
			goto fail;
		}
	if (njobs == 0)
		goto out;
	/* Its functions' events are in the dump: so are their names. */
	ta_symstore_patched(m->bias);
	if (ta_patch_attach_mode) {
		keep_pending(m, jobs, njobs);
		goto out;
	}
	/* Other threads may run this module's other functions (a dlopen'ed
	 * library's constructor started one): keep the pages executable while
	 * they are written. */
	err = segments_writable(m, 1);
	if (err < 0) {
	fail:
		ta_warn("cannot patch %s: mprotect: %s; its functions are not traced", m->path,
			strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < njobs; i++) {
		uint8_t *e = (uint8_t *)(uintptr_t)jobs[i].pl.start;
		uint8_t jmp[5];
		jmp[0] = 0xe9;
		put32(jmp + 1, (int32_t)((int64_t)(jobs[i].entry - (jobs[i].pl.start + 5))));
		/* The bytes past the jmp are never run: trap if they were. */
		memset(e + 5, 0xcc, jobs[i].pl.len - 5);
		memcpy(e, jmp, 5);
		count_patched(jobs[i].fb);
	}
	segments_writable(m, 0);
out:
	free(jobs);
	free(facts.fns);
done:
	free(c);
	munmap(map, maplen);
}

/* ---- modules ----------------------------------------------------------------------- */

/* The modules already looked at, by load bias and name. */
struct seen {
	uint64_t bias;
	char *name;
};
static struct seen *seen;
static size_t nseen, seen_cap;

static int seen_before(uint64_t bias, const char *name)
{
	struct seen *s;

	for (size_t i = 0; i < nseen; i++)
		if (seen[i].bias == bias && strcmp(seen[i].name, name) == 0)
			return 1;
	s = ta_vec_reserve(seen, nseen + 1, &seen_cap, sizeof(*s), 16);
	if (!s)
		return 0;
	seen = s;
	seen[nseen].name = strdup(name);
	if (seen[nseen].name)
		seen[nseen++].bias = bias;
	return 0;
}

/* Forgets the modules no longer loaded: one loaded again, even at the
 * same place, is new code to patch. */
static void forget_unloaded(void)
{
	size_t nmods, kept = 0;
	struct ta_module *mods = ta_modules_collect(&nmods);

	/* An attach's planned or written entries in a module gone: its pages
	 * are unmapped or another module's, never to be written or put back. */
	for (size_t k = 0; k < npend_mods; k++) {
		int present = 0;
		for (size_t i = 0; i < nmods && !present; i++)
			present = mods[i].bias == pend_mods[k].bias &&
				  strcmp(mods[i].path, pend_mods[k].path) == 0;
		if (!present)
			pend_mods[k].nseg = -1;
	}
	for (size_t i = 0; i < npend; i++)
		if (pend_mods[pend[i].mod].nseg >= 0)
			pend[kept++] = pend[i];
	npend = kept;
	for (size_t k = 0; k < nseen;) {
		int present = 0;
		for (size_t i = 0; i < nmods && !present; i++)
			present =
			    mods[i].bias == seen[k].bias && strcmp(mods[i].path, seen[k].name) == 0;
		if (present) {
			k++;
			continue;
		}
		free(seen[k].name);
		seen[k] = seen[--nseen];
	}
	free(mods);
}

void ta_patch_after_dlclose(void)
{
	int saved = errno;

	ta_patchent_after_dlclose();
	/* Acquire: pairs with the release in patch_init (the patterns and
	 * the thread key are set up). */
	if (!__atomic_load_n(&patch_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&patch_lock);
	forget_unloaded();
	pthread_mutex_unlock(&patch_lock);
	errno = saved;
}

/* Patches what the patterns name in the modules not looked at before;
 * returns how many functions were patched or refused by this call. */
static uint64_t patch_new_modules(void)
{
	size_t nmods;
	struct ta_module *mods = ta_modules_collect(&nmods);
	uint64_t before = npatched + refused.n;
	Dl_info self;

	if (!dladdr((void *)(uintptr_t)ta_patch_ret_stub, &self))
		self.dli_fbase = NULL;
	for (size_t i = 0; i < nmods; i++) {
		struct ta_module *m = &mods[i];
		if (seen_before(m->bias, m->path))
			continue;
		if ((uint64_t)(uintptr_t)self.dli_fbase == m->bias && !m->is_exe)
			continue; /* the agent */
		patch_module(m);
	}
	free(mods);
	return npatched + refused.n - before;
}

/* ---- the PATCH chunk and the summary ----------------------------------------------------- */

void ta_patch_dump(void)
{
	struct ta_buf b = {0};
	uint64_t pe_patched, pe_refused;

	ta_patchent_counts(&pe_patched, &pe_refused);
	if (!patch_on || (npatched == 0 && refused.n == 0 && pe_patched == 0 && pe_refused == 0))
		return;
	pthread_mutex_lock(&patch_lock);
	ta_buf_u(&b, npatched + pe_patched);
	ta_buf_u(&b, refused.n + pe_refused);
	/* Relaxed: a count, read for the record (patch_hot.c adds to it). */
	ta_buf_u(&b, __atomic_load_n(&ta_patch_frames_without_exit, __ATOMIC_RELAXED));
	ta_refusals_put(&refused, refused.n, 0, refusal_text, &b);
	ta_patchent_put_refusals(&b, pe_refused);
	/* Since 1.8: how many were relocated whole, and why the others
	 * were not. */
	{
		unsigned nr = 0;
		ta_buf_u(&b, nrelocated);
		for (unsigned k = 1; k < F_N; k++)
			nr += nfallback[k] > 0;
		ta_buf_u(&b, nr);
		for (unsigned k = 1; k < F_N; k++) {
			const char *text = fallback_text(k);
			if (!nfallback[k])
				continue;
			ta_buf_u(&b, k);
			ta_buf_u(&b, nfallback[k]);
			ta_buf_str(&b, text, strlen(text));
		}
	}
	/* Since 1.10: how many were patched at their patchable entries
	 * (patchent.c: with the return stub, no reason counted above). */
	ta_buf_u(&b, pe_patched);
	pthread_mutex_unlock(&patch_lock);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_PATCH, b.p, b.len);
	ta_buf_free(&b);
}

void ta_patch_report_end(void)
{
	/* Relaxed: a count; the threads that add to it are done or do not
	 * matter any more at the end. */
	uint64_t deep = __atomic_load_n(&ta_patch_frames_without_exit, __ATOMIC_RELAXED);

	if (deep)
		ta_warn("%llu calls of patched functions nested deeper than %d patched frames: "
			"entered, their exits not recorded",
			(unsigned long long)deep, TA_PATCH_RSTACK_DEPTH);
	/* Acquire: pairs with the release in patch_init. */
	if (!__atomic_load_n(&patch_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&patch_lock);
	say_unmatched(1);
	pthread_mutex_unlock(&patch_lock);
}

static void summary(void)
{
	ta_warn("patched %llu functions, refused %llu%s", (unsigned long long)npatched,
		(unsigned long long)refused.n, refused.n ? " (see traceagent info)" : "");
}

void ta_patch_after_dlopen(void)
{
	int saved = errno;

	if (opening_capstone)
		return;
	ta_patchent_after_dlopen();
	/* Acquire: pairs with the release in patch_init. */
	if (!__atomic_load_n(&patch_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&patch_lock);
	if (patch_new_modules() > 0) {
		pthread_mutex_unlock(&patch_lock);
		summary();
		if (ta_ring_up.ensure_started()) {
			ta_patch_dump();
			/* The dlopen's scan came before its patching. */
			ta_symstore_scan();
		}
	} else
		pthread_mutex_unlock(&patch_lock);
	errno = saved;
}

/* Runs when the agent's library is initialised: after the libraries it and
 * the program need, before the program's own constructors and main, and
 * while the process has one thread. */
__attribute__((constructor)) static void patch_init(void)
{
	const char *spec = secure_getenv("TRACEAGENT_PATCH");
	int saved = errno;
	uint64_t pe;

	if (getauxval(AT_SECURE))
		return;
	if (spec && *spec)
		ta_patterns_parse(&patterns, spec, "TRACEAGENT_PATCH");
	/* The functions whose arguments are asked are patched too. */
	if (ta_args_wanted())
		ta_args_add_patterns(&patterns);
	if (!patterns.n)
		return;
	pattern_hits_alloc();
	if (ta_patch_hot_init() != 0) {
		ta_warn("cannot create a thread key; TRACEAGENT_PATCH ignored");
		return;
	}
	/* Release: a thread that sees patching on (after a dlopen) sees the
	 * patterns and the key; pairs with the acquires in the dl wrappers. */
	__atomic_store_n(&patch_on, 1, __ATOMIC_RELEASE);
	pe = ta_patchent_start(spec);
	pthread_mutex_lock(&patch_lock);
	patch_new_modules();
	pthread_mutex_unlock(&patch_lock);
	/* A process in which nothing matches (a shell started on the way)
	 * says nothing and writes no dump, as without patching. */
	if (npatched + refused.n > 0 || pe > 0) {
		if (npatched + refused.n > 0)
			summary();
		pthread_mutex_lock(&patch_lock);
		say_unmatched(0);
		pthread_mutex_unlock(&patch_lock);
		if (ta_ring_up.ensure_started())
			ta_patch_dump();
	}
	errno = saved;
}

/* The counts and refusals of a window's patching, forgotten (under
 * patch_lock): each window's PATCH chunk and summary are its own. */
static void forget_counts(void)
{
	npatched = 0;
	nrelocated = 0;
	memset(nfallback, 0, sizeof(nfallback));
	ta_refusals_clear(&refused);
}

/* ---- at attach ------------------------------------------------------------------- */

int ta_patch_attach_prepare(const char *spec)
{
	size_t before;
	int pe;

	/* Mid-load (a dlopen in another thread): the module list may hold
	 * one not relocated yet; the loader asks again. */
	if (_r_debug.r_state != RT_CONSISTENT)
		return -EAGAIN;
	pthread_mutex_lock(&patch_lock);
	/* A window's first plan patches what this attach asks for, not what
	 * an earlier window did (the patterns of a preloaded agent's
	 * TRACEAGENT_PATCH stay). */
	if (!npend && (!patterns.n || patterns_from_attach)) {
		struct ta_patterns ps = {0};

		if (ta_patterns_parse(&ps, spec, "TRACEAGENT_PATCH") < 0) {
			pthread_mutex_unlock(&patch_lock);
			return -EINVAL;
		}
		ta_patterns_free(&patterns);
		patterns = ps;
		patterns_from_attach = 1;
		/* `attach` says what matched nothing itself: nothing is said
		 * on the program's stderr. */
		free(pattern_hits);
		free(pattern_said);
		pattern_hits = NULL;
		pattern_said = NULL;
	}
	pthread_mutex_unlock(&patch_lock);
	if (!patch_on && ta_patch_hot_init() != 0) {
		ta_warn("cannot create a thread key; --patch ignored");
		return -EAGAIN;
	}
	/* Release: pairs with the acquires in the dl wrappers (unused here:
	 * no interposer runs in an injected agent). */
	__atomic_store_n(&patch_on, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&patch_lock);
	ta_patch_attach_mode = 1;
	if (!npend)
		forget_counts(); /* a window's first plan */
	/* Later in the window: the modules dlopen'ed since the last plan
	 * (and none of those dlclose'd meanwhile). */
	forget_unloaded();
	before = npend;
	patch_new_modules();
	ta_patch_attach_mode = 0;
	before = npend - before;
	pthread_mutex_unlock(&patch_lock);
	pe = ta_patchent_attach_prepare(spec);
	return pe < 0 ? pe : (int)before + pe;
}

/* No lock, no allocation: every other thread is stopped (one may hold
 * any lock).  mprotect and stores only. */
int ta_patch_attach_commit(const uint64_t *pcs, size_t npcs)
{
	int applied = 0, busy = 0;

	for (size_t k = 0; k < npend_mods; k++) {
		int any = 0;

		for (size_t i = 0; i < npend; i++)
			any |= pend[i].mod == k && !pend[i].applied;
		if (!any || segments_writable(&pend_mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < npend; i++) {
			struct pending *e = &pend[i];
			int inside = 0;

			if (e->mod != k || e->applied)
				continue;
			/* A thread stopped inside the bytes replaced (not at
			 * their start) would resume in the middle of the jmp. */
			for (size_t j = 0; j < npcs && !inside; j++)
				inside = pcs[j] > e->start && pcs[j] < e->start + e->len;
			if (inside) {
				busy++;
				continue;
			}
			/* Changed since the plan (a breakpoint set meanwhile):
			 * the trampoline holds the bytes planned, not these.
			 * Left alone for good. */
			if (memcmp((const void *)(uintptr_t)e->start, e->orig, e->len) != 0) {
				e->applied = 2;
				continue;
			}
			memcpy((void *)(uintptr_t)e->start, e->repl, e->len);
			e->applied = 1;
			applied++;
			count_patched(e->fb);
		}
		segments_writable(&pend_mods[k], 0);
	}
	(void)busy;
	return applied + ta_patchent_attach_commit(pcs, npcs);
}

void ta_patch_attach_restore(void)
{
	for (size_t k = 0; k < npend_mods; k++) {
		if (segments_writable(&pend_mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < npend; i++)
			if (pend[i].mod == k && pend[i].applied == 1)
				memcpy((void *)(uintptr_t)pend[i].start, pend[i].orig, pend[i].len);
		segments_writable(&pend_mods[k], 0);
	}
	/* The stubs and trampolines stay: a thread may be in one, or return
	 * through the return stub. */
	npend = 0;
	npend_mods = 0;
	ta_patchent_attach_restore();
}

/* The modules are patched anew at the next attach (the stubs of this one
 * are not reused). */
void ta_patch_attach_forget(void)
{
	pthread_mutex_lock(&patch_lock);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i].name);
	nseen = 0;
	/* The window's dump is written: a later window without --patch
	 * patched nothing, and its dump says so. */
	forget_counts();
	pthread_mutex_unlock(&patch_lock);
	ta_patchent_attach_forget();
}

#endif
