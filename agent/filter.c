/* SPDX-License-Identifier: MIT */
/*
 * filter.c - recording less: TRACEAGENT_FILTER, TRACEAGENT_EXCLUDE and
 * TRACEAGENT_DEPTH at run time.
 *
 * When one of them is set, the agent's constructor (before the program's
 * code runs; under `traceagent attach`, the attach's start) looks the
 * patterns up in every module's symbol table (fnsel.c, as the patcher does),
 * keeps the functions they name in a small open-addressing table keyed by
 * entry address, and points every module's GOT entries for
 * __cyg_profile_func_enter/exit at the filtering hooks below (got.c).  The
 * plain hooks (hooks.c) stay as they are: an unfiltered run runs the same
 * code as before filters existed.
 *
 * Each filtering hook looks its function up (a multiply, a shift, one or
 * two loads), keeps the thread's filter stack (one frame each: the
 * function and what it did: opened a FILTER match, a `!` exclusion, was
 * recorded), and records through ta_record or returns.  An exit is
 * recorded iff its entry was: whatever the filters decided at the entry is
 * in the frame.  The stack is mapped at the thread's first hook (not TLS:
 * the agent's static TLS must stay small for dlopen, see api.c's zstack);
 * a forked child has a copy of its parent's, as of its frames.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "base.h"
#include "api.h"
#include "dump.h"
#include "filter.h"
#include "fnsel.h"
#include "format.h"
#include "got.h"
#include "hookpatch.h"
#include "ring.h"
#include "settings.h"

uint32_t ta_filter_on;

/* What a function is to the filters (the table's flags, a frame's flags). */
#define F_INC  1u /* matches an inclusion of TRACEAGENT_FILTER */
#define F_NOT  2u /* matches a `!` exclusion of TRACEAGENT_FILTER */
#define F_EXCL 4u /* matches TRACEAGENT_EXCLUDE */
/* A frame's own flags besides F_INC and F_NOT: */
#define F_KEPT 8u  /* passed the filters: counts towards DEPTH */
#define F_REC  16u /* its entry was written */

/* ---- the table: entry address -> flags ----------------------------------------- */

struct fent {
	uint64_t addr; /* 0: empty */
	uint64_t flags;
};

struct ftab {
	uint32_t shift; /* 64 - log2(size) */
	uint32_t mask;	/* size - 1 */
	struct fent e[];
};

/* An empty table (one empty slot), so that the hooks never test for none. */
static struct {
	struct ftab t;
	struct fent e[1];
} empty_tab = {{63, 0}, {{0, 0}}};

/* The table in use: replaced whole after a dlopen or dlclose (release,
 * pairs with the hooks' acquire), the old one never freed (a hook may be
 * reading it). */
static struct ftab *ftab = &empty_tab.t;

/* Read by the hooks (relaxed), written before ta_filter_on is set. */
static uint32_t need_inc; /* TRACEAGENT_FILTER has an inclusion */
static uint32_t depth_limit = UINT32_MAX;

static inline __attribute__((always_inline)) uint32_t lookup(uint64_t a)
{
	const struct ftab *t = __atomic_load_n(&ftab, __ATOMIC_ACQUIRE);
	/* Fibonacci hashing: entry addresses differ in their middle bits. */
	uint64_t i = (a * 0x9e3779b97f4a7c15ull) >> t->shift;

	for (;;) {
		uint64_t x = t->e[i].addr;

		if (x == a)
			return (uint32_t)t->e[i].flags;
		if (!x)
			return 0;
		i = (i + 1) & t->mask;
	}
}

/* ---- the thread's filter stack ------------------------------------------------- */

/* Frames a thread keeps; deeper ones are not recorded (their exits
 * neither), and their count keeps the stack right. */
#define FSTACK_MAX 4096
/* How far down an exit looks for its frame when the top is another
 * function's (frames a longjmp or a throw left without exits). */
#define FSTACK_SEARCH 256

struct fframe {
	uint64_t fn;
	uint32_t flags;
	uint32_t pad;
};

struct fstate {
	uint32_t sp;   /* frames entered and not exited, FSTACK_MAX and beyond counted */
	uint32_t kept; /* frames with F_KEPT: the recorded depth */
	uint32_t incs; /* frames inside a FILTER match */
	uint32_t nots; /* frames inside a `!` exclusion */
	uint32_t gen;  /* the filters' generation its frames belong to (fgen) */
	uint32_t pad;
	struct fframe f[FSTACK_MAX];
};

#define FSTATE_BYTES ((sizeof(struct fstate) + 4095) & ~(size_t)4095)

static __thread struct fstate *fst __attribute__((tls_model("initial-exec")));

/* Bumped when an attach window's filters are forgotten (forget_setup): a
 * thread's frames of an earlier window (left on its stack when their
 * exits went to glibc's hooks between windows, with what they opened:
 * a FILTER match, a `!`, depth) are dropped at its next entry.  Written
 * under filter_lock before the next window's hooks are pointed at;
 * read relaxed (a hook that misses it sees it at its next call). */
static uint32_t fgen;

/* A stack of an earlier window's frames, emptied (cold: once a thread
 * and window). */
static __attribute__((noinline, cold)) void fstate_renew(struct fstate *st)
{
	st->sp = st->kept = st->incs = st->nots = 0;
	st->gen = __atomic_load_n(&fgen, __ATOMIC_RELAXED);
}

/* The thread's stack, mapped at its first hook; NULL when it cannot be.
 * A handler that maps it first wins (relaxed: this thread and its
 * handlers only), as api.c's zstack_get. */
static __attribute__((noinline, cold)) struct fstate *fstate_get(void)
{
	struct fstate *none = NULL;
	void *p =
	    mmap(NULL, FSTATE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	((struct fstate *)p)->gen = __atomic_load_n(&fgen, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&fst, &none, (struct fstate *)p, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		munmap(p, FSTATE_BYTES);
		return none;
	}
	return p;
}

void ta_filter_thread_exit(void)
{
	struct fstate *st = __atomic_exchange_n(&fst, NULL, __ATOMIC_RELAXED);

	if (st)
		munmap(st, FSTATE_BYTES);
}

static inline __attribute__((always_inline)) int kept_here(const struct fstate *st)
{
	return (st->incs || !__atomic_load_n(&need_inc, __ATOMIC_RELAXED)) && !st->nots &&
	       st->kept < __atomic_load_n(&depth_limit, __ATOMIC_RELAXED);
}

int ta_filter_allows_here(void)
{
	const struct fstate *st = fst;

	if (!st)
		return !__atomic_load_n(&need_inc, __ATOMIC_RELAXED);
	return st->sp <= FSTACK_MAX && kept_here(st);
}

/* A frame the filters keep: counted, recorded, pushed.  Out of line (a
 * tail call), so that the path that filters a call out saves one register,
 * not five (callgrind, fib 20 with TRACEAGENT_EXCLUDE=fib filtered at run time,
 * before the rewrite: 45 instructions an entry with it inline, 42 without). */
static __attribute__((noinline)) void enter_kept(struct fstate *st, uint32_t sp, uint64_t fn,
						 uint32_t fl)
{
	st->kept++;
	fl |= F_KEPT;
	if (ta_fn_on()) {
		fl |= F_REC;
		ta_record(fn);
	}
	st->f[sp].fn = fn;
	st->f[sp].flags = fl;
}

static __attribute__((noinline)) void exit_record(uint64_t fn)
{
	if (ta_fn_on())
		ta_record(fn | TA_REC_EXIT);
}

void ta_filter_hook_enter(void *fnp, void *call_site)
{
	uint64_t fn = (uint64_t)(uintptr_t)fnp;
	struct fstate *st = fst;
	uint32_t sp, f, fl;

	(void)call_site;
	/* As in the plain hook, the first call starts the agent, even when
	 * the filters record nothing (a dump that says so, and the settings'
	 * complaints).  Relaxed, as ta_fn_on. */
	if (TA_UNLIKELY(__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED) == 2))
		(void)ta_fn_gate_start();
	if (TA_UNLIKELY(!st) && !(st = fstate_get()))
		return;
	/* Only the entry looks: an exit before it pops an earlier window's
	 * frame, at worst writing the exit of a call open when this window
	 * began (as the plain hooks do after an attach), and the counts it
	 * leaves are emptied here. */
	if (TA_UNLIKELY(st->gen != __atomic_load_n(&fgen, __ATOMIC_RELAXED)))
		fstate_renew(st);
	/* Taken before it is filled: a handler's frames go above it, and a
	 * handler's hooks leave sp and the counts as they found them. */
	sp = st->sp;
	st->sp = sp + 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (TA_UNLIKELY(sp >= FSTACK_MAX))
		return;
	f = lookup(fn);
	fl = f & (F_INC | F_NOT);
	/* Most functions are in no pattern: the counts stay as they are. */
	if (TA_UNLIKELY(fl)) {
		st->incs += f & F_INC;
		st->nots += (f & F_NOT) >> 1;
	}
	if (!(f & F_EXCL) && kept_here(st)) {
		enter_kept(st, sp, fn, fl);
		return;
	}
	st->f[sp].fn = fn;
	st->f[sp].flags = fl;
}

/* Undoes what frame fr did to the counts. */
static inline __attribute__((always_inline)) void frame_undo(struct fstate *st,
							     const struct fframe *fr)
{
	st->incs -= fr->flags & F_INC;
	st->nots -= (fr->flags & F_NOT) >> 1;
	st->kept -= (fr->flags & F_KEPT) >> 3;
}

/* The exit of fn, whose frame is not on top: the frames above it were
 * left without their exits (longjmp, a throw): dropped, as the program
 * dropped them.  0 when fn has no frame near the top (entered before the
 * filters, or before an attach): its exit is not recorded either. */
static __attribute__((noinline)) int unwind_to(struct fstate *st, uint64_t fn)
{
	uint32_t sp = st->sp, lo = sp > FSTACK_SEARCH ? sp - FSTACK_SEARCH : 0;

	for (uint32_t k = sp - 1; k-- > lo;) {
		if (st->f[k].fn != fn)
			continue;
		for (uint32_t j = sp - 1; j > k; j--)
			frame_undo(st, &st->f[j]);
		st->sp = k + 1;
		return 1;
	}
	return 0;
}

void ta_filter_hook_exit(void *fnp, void *call_site)
{
	uint64_t fn = (uint64_t)(uintptr_t)fnp;
	struct fstate *st = fst;
	struct fframe *fr;
	uint32_t sp, fl;

	(void)call_site;
	if (TA_UNLIKELY(!st))
		return;
	sp = st->sp;
	if (TA_UNLIKELY(sp == 0))
		return;
	if (TA_UNLIKELY(sp > FSTACK_MAX)) {
		st->sp = sp - 1;
		return;
	}
	fr = &st->f[sp - 1];
	if (TA_UNLIKELY(fr->fn != fn)) {
		if (!unwind_to(st, fn))
			return;
		sp = st->sp;
		fr = &st->f[sp - 1];
	}
	fl = fr->flags;
	if (TA_UNLIKELY(fl & (F_INC | F_NOT | F_KEPT)))
		frame_undo(st, fr);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	st->sp = sp - 1;
	if (fl & F_REC)
		exit_record(fn);
}

/* ---- setting up: the functions the patterns name ------------------------------- */

/* A function the patterns name, for the table and the FILTER chunk. */
struct ffn {
	uint64_t addr, size;
	uint64_t bias;	/* its module's, to forget it when the module goes */
	uint32_t flags; /* F_INC | F_NOT | F_EXCL */
	uint32_t how;	/* TA_FILTER_HOW_* */
};

static pthread_mutex_t filter_lock = PTHREAD_MUTEX_INITIALIZER;
static int set_up;  /* the patterns are parsed, the modules looked at */
static int own_got; /* this file points the entries (not attach.c) */
static struct ta_got fgot;
static struct ta_patterns filter_ps, exclude_ps;
/* Per pattern (filter_ps's then exclude_ps's): functions it named so far,
 * whether a module its MODULE part names was looked at, whether its naming
 * nothing was said. */
static uint64_t *hits;
static uint8_t *mod_seen, *said;
static struct ffn *fns;
static size_t nfns, fns_cap;
/* The modules looked at, by load bias and path. */
static struct seenmod {
	uint64_t bias;
	char *path;
} * mods_seen;
static size_t nmods_seen, mods_seen_cap;
/* What was asked (the FILTER chunk's strings). */
static char filter_text[1024], exclude_text[1024];
static uint32_t depth_asked;

static uint32_t flags_of(const char *modbase, int is_exe, const char *name)
{
	uint32_t f = 0;
	int in, out;

	ta_patterns_match(&filter_ps, modbase, is_exe, name, &in, &out);
	f |= (in ? F_INC : 0) | (out ? F_NOT : 0);
	ta_patterns_match(&exclude_ps, modbase, is_exe, name, &in, &out);
	if (in && !out)
		f |= F_EXCL;
	return f;
}

static int want(void *arg, const char *modbase, int is_exe, const char *name)
{
	(void)arg;
	return flags_of(modbase, is_exe, name) != 0;
}

/*
 * An excluded function whose own hooks can be taken out of its code (it
 * matches TRACEAGENT_EXCLUDE only: no FILTER pattern, whose frames the
 * stack must see) has its calls to them rewritten into no-ops
 * (hookpatch.c); 0 when done (how = patched out), else it is filtered at
 * run time.  Never inside dl_iterate_phdr (hookpatch.h): the modules
 * were collected before.
 */
static int patch_out(const struct ffn *f)
{
	int rc;

	TA_GUARD_ENTER();
	rc = ta_hookpatch_nop((uintptr_t)f->addr, (uintptr_t)(f->addr + f->size));
	TA_GUARD_LEAVE();
	return rc;
}

/* The functions the patterns name in module m, added (under filter_lock). */
static void resolve_module(const struct ta_module *m)
{
	const char *modbase = ta_base_name(m->path);
	void *map = NULL;
	size_t maplen = 0, n = 0, j = 0;
	struct ta_fn_cand *c = NULL;
	int excl = 0, named = 0;

	for (size_t p = 0; p < filter_ps.n; p++, j++) {
		int k = ta_pattern_names_module(&filter_ps.p[p], modbase, m->is_exe);

		mod_seen[j] |= k;
		named |= k;
	}
	for (size_t p = 0; p < exclude_ps.n; p++, j++) {
		int k = ta_pattern_names_module(&exclude_ps.p[p], modbase, m->is_exe);

		mod_seen[j] |= k;
		named |= k;
	}
	/* A module no pattern names has no function they match: its symbol
	 * table is not read (the libraries, for patterns without MODULE:). */
	if (named)
		c = ta_module_functions(m, want, NULL, &n, &map, &maplen);

	/* The cache of the analyses only where a function is to be patched out. */
	for (size_t i = 0; c && i < n && !excl; i++)
		excl = flags_of(modbase, m->is_exe, c[i].name) == F_EXCL;
	if (excl)
		ta_hookpatch_cache_begin(m->path, (uintptr_t)m->lo);
	for (size_t i = 0; c && i < n; i++) {
		struct ffn *x = ta_vec_reserve(fns, nfns + 1, &fns_cap, sizeof(*x), 64);
		size_t k = 0;

		if (!x)
			break;
		fns = x;
		x = &fns[nfns];
		x->addr = c[i].addr;
		x->size = c[i].size;
		x->bias = m->bias;
		x->flags = flags_of(modbase, m->is_exe, c[i].name);
		x->how = TA_FILTER_HOW_RUNTIME;
		if (x->flags == F_EXCL && patch_out(x) == 0)
			x->how = TA_FILTER_HOW_PATCHED;
		for (size_t p = 0; p < filter_ps.n; p++, k++)
			hits[k] +=
			    ta_pattern_matches(&filter_ps.p[p], modbase, m->is_exe, c[i].name);
		for (size_t p = 0; p < exclude_ps.n; p++, k++)
			hits[k] +=
			    !exclude_ps.p[p].exclude &&
			    ta_pattern_matches(&exclude_ps.p[p], modbase, m->is_exe, c[i].name);
		nfns++;
	}
	if (excl)
		ta_hookpatch_cache_end();
	free(c);
	if (map)
		munmap(map, maplen);
}

/* Looks at the modules not looked at before; 1 if there was one. */
static int resolve_new_modules(void)
{
	size_t n;
	struct ta_module *mods = ta_modules_collect(&n);
	Dl_info self;
	int added = 0;

	if (!dladdr((void *)(uintptr_t)ta_filter_hook_enter, &self))
		self.dli_fbase = NULL;
	for (size_t i = 0; mods && i < n; i++) {
		struct seenmod *s;
		size_t k;

		for (k = 0; k < nmods_seen; k++)
			if (mods_seen[k].bias == mods[i].bias &&
			    !strcmp(mods_seen[k].path, mods[i].path))
				break;
		if (k < nmods_seen)
			continue;
		s = ta_vec_reserve(mods_seen, nmods_seen + 1, &mods_seen_cap, sizeof(*s), 16);
		if (!s)
			break;
		mods_seen = s;
		mods_seen[nmods_seen].bias = mods[i].bias;
		mods_seen[nmods_seen].path = strdup(mods[i].path);
		if (!mods_seen[nmods_seen].path)
			break;
		nmods_seen++;
		added = 1;
		if ((uint64_t)(uintptr_t)self.dli_fbase == mods[i].bias && !mods[i].is_exe)
			continue; /* the agent */
		resolve_module(&mods[i]);
	}
	free(mods);
	return added;
}

/* A new table from fns, published (under filter_lock).  The old one is left
 * to the hooks that may be reading it. */
static void table_rebuild(void)
{
	size_t size = 16;
	struct ftab *t;

	while (size < 2 * nfns)
		size *= 2;
	t = calloc(1, sizeof(*t) + size * sizeof(t->e[0]));
	if (!t)
		return; /* the old table stays: new functions are not filtered */
	t->mask = (uint32_t)(size - 1);
	t->shift = (uint32_t)(64 - __builtin_ctzll(size));
	for (size_t i = 0; i < nfns; i++) {
		uint64_t k = (fns[i].addr * 0x9e3779b97f4a7c15ull) >> t->shift;

		while (t->e[k].addr && t->e[k].addr != fns[i].addr)
			k = (k + 1) & t->mask;
		t->e[k].addr = fns[i].addr;
		t->e[k].flags |= fns[i].flags;
	}
	/* Release: a hook that sees the table sees its entries; pairs with
	 * lookup's acquire. */
	__atomic_store_n(&ftab, t, __ATOMIC_RELEASE);
}

/* Sets the filters up from s (under filter_lock): patterns parsed, modules
 * looked at, the table built, and (redirect) the entries pointed at the
 * filtering hooks.  0, or -1 when there is nothing to filter. */
static int setup(const struct ta_settings *s, int redirect)
{
	size_t np;

	if (set_up)
		return 0;
	if (!s->filter[0] && !s->exclude[0] && !s->depth)
		return -1;
	if (s->filter[0])
		(void)ta_patterns_parse(&filter_ps, s->filter, "TRACEAGENT_FILTER");
	if (s->exclude[0])
		(void)ta_patterns_parse(&exclude_ps, s->exclude, "TRACEAGENT_EXCLUDE");
	np = filter_ps.n + exclude_ps.n;
	hits = calloc(np ? np : 1, sizeof(*hits));
	mod_seen = calloc(np ? np : 1, 1);
	said = calloc(np ? np : 1, 1);
	if (!hits || !mod_seen || !said)
		return -1;
	for (size_t i = 0; i < filter_ps.n; i++)
		if (!filter_ps.p[i].exclude)
			need_inc = 1;
	depth_limit = s->depth ? s->depth : UINT32_MAX;
	depth_asked = s->depth;
	memcpy(filter_text, s->filter, sizeof(filter_text));
	memcpy(exclude_text, s->exclude, sizeof(exclude_text));
	filter_text[sizeof(filter_text) - 1] = exclude_text[sizeof(exclude_text) - 1] = 0;
	if (filter_ps.n + exclude_ps.n)
		resolve_new_modules();
	table_rebuild();
	set_up = 1;
	/* Release: a thread that sees filters on sees the table and limits
	 * above (zones and library calls read it relaxed: one call recorded
	 * as without filters at worst, before the program's code runs). */
	__atomic_store_n(&ta_filter_on, 1, __ATOMIC_RELEASE);
	if (redirect) {
		own_got = 1;
		fgot.enter = (uintptr_t)ta_filter_hook_enter;
		fgot.exit = (uintptr_t)ta_filter_hook_exit;
		if (ta_got_redirect(&fgot) < 0)
			ta_warn("out of memory pointing the hooks at the filters; some modules "
				"are not filtered");
	}
	return 0;
}

static int env_set(const char *name)
{
	const char *v = secure_getenv(name);

	return v && *v;
}

/* Before the program's code (and its constructors), while it has one
 * thread: the entries point at the filtering hooks before the first
 * instrumented call, so that every frame the agent sees was filtered
 * from its entry.  Quiet: the agent's start says what is wrong with the
 * settings, if it ever starts. */
__attribute__((constructor)) static void filter_init(void)
{
	static struct ta_settings s;
	int saved = errno;

	if (getauxval(AT_SECURE))
		return;
	/* Most processes set none of them: s (8 KiB, three pages of bss
	 * first written here) is then never touched. */
	if (!env_set("TRACEAGENT_FILTER") && !env_set("TRACEAGENT_EXCLUDE") &&
	    !env_set("TRACEAGENT_DEPTH"))
		return;
	ta_settings_filters(&s, 0);
	if (!s.filter[0] && !s.exclude[0] && !s.depth)
		return;
	/* The agent's own lock and allocations: not the program's library
	 * calls (which would start the agent, TRACEAGENT_LIBCALLS=lock). */
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	(void)setup(&s, 1);
	pthread_mutex_unlock(&filter_lock);
	TA_GUARD_LEAVE();
	errno = saved;
}

/* ---- the FILTER chunk and the agent's events ----------------------------------------- */

void ta_filter_dump(void)
{
	struct ta_buf b = {0};
	uint64_t n = 0;

	if (!set_up && !ta_cfg.min_duration_ns)
		return;
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	ta_buf_str(&b, filter_text, strlen(filter_text));
	ta_buf_str(&b, exclude_text, strlen(exclude_text));
	ta_buf_u(&b, depth_asked);
	ta_buf_u(&b, ta_cfg.min_duration_ns);
	for (size_t i = 0; i < nfns; i++)
		n += fns[i].flags != 0;
	ta_buf_u(&b, n);
	for (size_t i = 0; i < nfns; i++) {
		uint32_t kind = (fns[i].flags & F_INC ? TA_FILTER_KIND_FILTER : 0) |
				(fns[i].flags & F_NOT ? TA_FILTER_KIND_NOT : 0) |
				(fns[i].flags & F_EXCL ? TA_FILTER_KIND_EXCLUDE : 0);

		if (!fns[i].flags)
			continue;
		ta_buf_u(&b, fns[i].addr);
		ta_buf_u(&b, fns[i].how);
		ta_buf_u(&b, kind);
	}
	pthread_mutex_unlock(&filter_lock);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_FILTER, b.p, b.len);
	ta_buf_free(&b);
	TA_GUARD_LEAVE();
}

/* What a pattern that names no function does (under filter_lock): an
 * inclusion adds nothing to the others' functions, or, when no inclusion
 * names a function, leaves nothing to record. */
static const char *unmatched_effect(int in_filter, const struct ta_pattern *pt, int at_end)
{
	int any_in = 0;

	if (!in_filter)
		return "it excludes nothing";
	if (pt->exclude)
		return "it leaves nothing out";
	for (size_t p = 0; p < filter_ps.n; p++)
		any_in |= !filter_ps.p[p].exclude && hits[p];
	if (any_in)
		return "the functions the other patterns name are recorded";
	return at_end ? "no pattern of it named a function: nothing was recorded"
		      : "no pattern of it names a function: nothing is recorded until a "
			"function it names is called (in a library loaded later)";
}

/* One line for each pattern that named no function (under filter_lock):
 * at the start those whose module was there (the executable's, for a
 * pattern without MODULE:), at the end the others (a library the program
 * was to dlopen). */
static void say_unmatched(int at_end)
{
	size_t k = 0;

	for (size_t p = 0; p < filter_ps.n + exclude_ps.n; p++, k++) {
		int in_filter = p < filter_ps.n;
		const struct ta_pattern *pt =
		    in_filter ? &filter_ps.p[p] : &exclude_ps.p[p - filter_ps.n];

		if (hits[k] || said[k] || (!at_end && !mod_seen[k]) || (!in_filter && pt->exclude))
			continue;
		said[k] = 1;
		ta_warn(
		    "%s: '%s%s%s%s' names no function%s; %s",
		    in_filter ? "TRACEAGENT_FILTER" : "TRACEAGENT_EXCLUDE", pt->exclude ? "!" : "",
		    pt->module ? pt->module : "", pt->module ? ":" : "", pt->glob,
		    mod_seen[k] ? "" : (pt->module ? " (no module of that name was loaded)" : ""),
		    unmatched_effect(in_filter, pt, at_end));
	}
}

void ta_filter_start(void)
{
	if (!set_up && !ta_cfg.filter[0] && !ta_cfg.exclude[0] && !ta_cfg.depth &&
	    !ta_cfg.min_duration_ns)
		return;
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	/* Under `traceagent attach` the constructor found no settings in the
	 * program's environment: the attach's are in ta_cfg, and attach.c
	 * points the entries (at the filtering hooks, ta_filter_on set). */
	if (!set_up)
		(void)setup(&ta_cfg, ta_settings_attach == NULL);
	if (set_up)
		say_unmatched(0);
	pthread_mutex_unlock(&filter_lock);
	ta_filter_dump();
	TA_GUARD_LEAVE();
}

void ta_filter_report_end(void)
{
	if (!set_up)
		return;
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	say_unmatched(1);
	pthread_mutex_unlock(&filter_lock);
	TA_GUARD_LEAVE();
}

void ta_filter_after_dlopen(void)
{
	int saved = errno, added = 0;

	/* Acquire: pairs with the release in setup. */
	if (!__atomic_load_n(&ta_filter_on, __ATOMIC_ACQUIRE))
		return;
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	if (filter_ps.n + exclude_ps.n) {
		size_t before = nfns;

		added = resolve_new_modules();
		if (nfns != before)
			table_rebuild();
	}
	/* The table first: the new module's calls go through the filters
	 * with its functions known. */
	if (own_got)
		(void)ta_got_redirect(&fgot);
	pthread_mutex_unlock(&filter_lock);
	if (added && __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING)
		ta_filter_dump();
	TA_GUARD_LEAVE();
	errno = saved;
}

void ta_filter_after_dlclose(void)
{
	int saved = errno;
	size_t n, k = 0;
	struct ta_module *mods;

	if (!__atomic_load_n(&ta_filter_on, __ATOMIC_ACQUIRE))
		return;
	TA_GUARD_ENTER();
	ta_hookpatch_forget_unloaded();
	pthread_mutex_lock(&filter_lock);
	mods = ta_modules_collect(&n);
	if (mods) {
		/* A module gone: its functions leave the table (another may be
		 * mapped at their addresses), and it is looked at again if it
		 * comes back. */
		for (size_t i = 0; i < nmods_seen;) {
			int present = 0;

			for (size_t j = 0; j < n && !present; j++)
				present = mods[j].bias == mods_seen[i].bias &&
					  !strcmp(mods[j].path, mods_seen[i].path);
			if (present) {
				i++;
				continue;
			}
			for (size_t f = 0; f < nfns; f++)
				if (fns[f].bias == mods_seen[i].bias)
					fns[f].flags = 0;
			free(mods_seen[i].path);
			mods_seen[i] = mods_seen[--nmods_seen];
		}
		for (size_t f = 0; f < nfns; f++)
			if (fns[f].flags)
				fns[k++] = fns[f];
		if (k != nfns) {
			nfns = k;
			table_rebuild();
		}
		if (own_got)
			ta_got_prune(&fgot);
	}
	free(mods);
	pthread_mutex_unlock(&filter_lock);
	TA_GUARD_LEAVE();
	errno = saved;
}

/* Everything setup() set, as before it (under filter_lock), so that the
 * next window sets its own filters up.  The tables stay allocated (a hook
 * that read the entry just before the detach may still be reading one). */
static void forget_setup(void)
{
	/* Release: pairs with ta_filter_after_dlopen's acquire; the hooks
	 * read the limits relaxed (at worst one call decided with the old). */
	__atomic_store_n(&ta_filter_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&need_inc, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&depth_limit, UINT32_MAX, __ATOMIC_RELAXED);
	/* Release: pairs with lookup's acquire. */
	__atomic_store_n(&ftab, &empty_tab.t, __ATOMIC_RELEASE);
	if (own_got) {
		ta_got_restore(&fgot);
		own_got = 0;
	}
	ta_patterns_free(&filter_ps);
	ta_patterns_free(&exclude_ps);
	free(hits);
	free(mod_seen);
	free(said);
	hits = NULL;
	mod_seen = said = NULL;
	nfns = 0;
	for (size_t i = 0; i < nmods_seen; i++)
		free(mods_seen[i].path);
	nmods_seen = 0;
	filter_text[0] = exclude_text[0] = 0;
	depth_asked = 0;
	/* Relaxed: the hooks read it relaxed; the next window's are pointed
	 * at after its set-up (attach.c, under its lock). */
	__atomic_store_n(&fgen, fgen + 1, __ATOMIC_RELAXED);
	set_up = 0;
}

void ta_filter_unpatch(void)
{
	int n;

	if (!__atomic_load_n(&ta_filter_on, __ATOMIC_ACQUIRE))
		return;
	TA_GUARD_ENTER();
	pthread_mutex_lock(&filter_lock);
	/* How many calls were put back, or an errno: those that could not
	 * be stay no-ops (the others were put back all the same). */
	n = ta_hookpatch_restore_all();
	if (n < 0)
		ta_warn("detach: cannot put back some hook calls of the excluded functions (%s); "
			"those functions stay unrecorded",
			strerror(-n));
	/* This window's patterns naming a library never loaded: said now, as
	 * at the end of a process. */
	say_unmatched(1);
	forget_setup();
	pthread_mutex_unlock(&filter_lock);
	TA_GUARD_LEAVE();
}
