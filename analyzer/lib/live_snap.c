/* SPDX-License-Identifier: MIT */
/*
 * live_snap.c - a snapshot of the aggregator (ta_live_snap): each row
 * named once (its function, or a name made up for an address outside
 * every module), the rows of one name and module merged into a function,
 * per thread and over all, with the interval's rates and frame times, and
 * the caps hit said in one line.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "framestat.h"
#include "live_int.h"
#include "storedsyms.h"

static uint64_t str_hash(const char *name, const char *module)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (const char *p = module; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return mix(h);
}

static uint64_t fn_hash_at(const void *ctx, size_t i)
{
	return ((const uint64_t *)ctx)[i];
}

struct fn_key {
	const struct ta_live *L;
	const char *name, *module;
};

static int fn_eq(const void *ctx, size_t i, const void *key)
{
	const struct fn_key *k = key;
	const struct ta_live_row *f = &k->L->fns[i];

	(void)ctx;
	return !strcmp(f->id.name, k->name) && !strcmp(f->id.module, k->module);
}

/* ---- naming ------------------------------------------------------------------------ */

/* s kept with the aggregator, freed with it; NULL (s freed) without memory. */
static char *own_keep(struct ta_live *L, char *s)
{
	if (s && L->nown == L->own_cap) {
		char **o = ta_vec_reserve(L->own, L->nown + 1, &L->own_cap, sizeof(*o), 16);

		if (!o) {
			free(s);
			return NULL;
		}
		L->own = o;
	}
	if (s)
		L->own[L->nown++] = s;
	return s;
}

/* A name made up for addr: "module+0xOFFSET" with a module's path, else
 * "0xADDR". */
static const char *own_name(struct ta_live *L, const char *path, uint64_t addr)
{
	char *s;
	int n;

	if (path) {
		const char *base = strrchr(path, '/');

		n = asprintf(&s, "%s+0x%" PRIx64, base ? base + 1 : path, addr);
	} else {
		n = asprintf(&s, "0x%" PRIx64, addr);
	}
	if (n < 0 || !own_keep(L, s))
		return "?";
	return s;
}

/* The module of process p whose ranges hold addr: the last loaded one
 * still mapped, else the last one. */
static const struct ta_sess_module *module_at(const struct ta_process *p, uint64_t addr)
{
	const struct ta_sess_module *found = NULL;

	for (size_t i = 0; i < p->nmodules; i++) {
		const struct ta_sess_module *m = &p->modules[i];

		for (size_t k = 0; k < m->nranges; k++)
			if (addr >= m->ranges[k].start && addr < m->ranges[k].end) {
				if (!found || m->unload_ticks == UINT64_MAX ||
				    found->unload_ticks != UINT64_MAX)
					found = m;
				break;
			}
	}
	return found;
}

/* Names addr of process pid as the views do (ta_view_name): a zone by its
 * site, a library call by the LIBCALLS chunk, a function by its module's
 * symbols. */
static void name_addr(struct ta_live *L, uint32_t pid, uint64_t addr, const char **name,
		      const char **module)
{
	struct ta_process *p = ta_session_process(L->s, pid);
	const struct ta_site *site = p && p->nsites ? ta_process_site(p, addr) : NULL;
	const struct ta_libcall *lc =
	    p && p->nlibcalls && !site ? ta_process_libcall(p, addr) : NULL;
	const struct ta_sess_module *m = p && !site && !lc ? module_at(p, addr) : NULL;

	if (addr == TA_WAIT_KEY) {
		*name = TA_WAIT_NAME;
		*module = TA_AGENT_MODULE;
	} else if (site) {
		*name = site->name[0] ? site->name : "(zone)";
		*module = TA_ZONE_MODULE;
	} else if (lc) {
		*name = lc->name;
		*module = TA_LIBCALL_MODULE;
	} else if (m && L->no_files &&
		   !ta_symstore_has(L->s->stored, m->path, m->build_id, m->build_id_len)) {
		*name = own_name(L, m->path, addr - m->bias);
		*module = m->path;
	} else if (m) {
		const struct ta_resolved *rv =
		    ta_resolve(L->res, m->path, m->build_id, m->build_id_len, addr - m->bias);

		/* A short name is its file's function's alone (ta_resolver_shorten):
		 * merging by name never merges two functions. */
		*name = L->demangle == TA_DEMANGLE_SIMPLE ? rv->short_name
			: L->demangle == TA_DEMANGLE_NO	  ? rv->raw
							  : rv->name;
		*module = m->path;
	} else {
		*name = own_name(L, NULL, addr);
		*module = "";
	}
}

/* The merged function of (name, module): its index, or -1 without memory. */
static int32_t fn_get(struct ta_live *L, const char *name, const char *module)
{
	struct fn_key key = {L, name, module};
	uint64_t h = str_hash(name, module);
	size_t k;

	if (ta_htab_reserve(&L->fn_by_name, L->nfns, 64, fn_hash_at, L->fn_hash) < 0)
		return -1;
	k = ta_htab_find(&L->fn_by_name, h, fn_eq, NULL, &key);
	if (ta_htab_at(&L->fn_by_name, k))
		return (int32_t)(ta_htab_at(&L->fn_by_name, k) - 1);
	if (L->nfns == L->fns_cap) {
		/* Two arrays of one capacity: fns_cap set once both have it. */
		size_t cap = L->fns_cap;
		struct ta_live_row *n = ta_vec_reserve(L->fns, L->nfns + 1, &cap, sizeof(*n), 64);
		uint64_t *nh;

		if (!n)
			return -1;
		L->fns = n;
		cap = L->fns_cap;
		nh = ta_vec_reserve(L->fn_hash, L->nfns + 1, &cap, sizeof(*nh), 64);
		if (!nh)
			return -1;
		L->fn_hash = nh;
		L->fns_cap = cap;
	}
	/* The row's own copies: a site's or a library call's name is the
	 * session's, which a later description of the address replaces (and
	 * frees) while the row lives on. */
	name = own_keep(L, strdup(name));
	module = name ? own_keep(L, strdup(module)) : NULL;
	if (!name || !module)
		return -1;
	L->fns[L->nfns] = (struct ta_live_row){.id = {.name = name, .module = module}};
	L->fn_hash[L->nfns] = h;
	ta_htab_put(&L->fn_by_name, k, L->nfns);
	return (int32_t)L->nfns++;
}

/* ---- snapshots ------------------------------------------------------------------------ */

/* The line naming the caps hit (live.h). */
static const char *cap_text(struct ta_live *L)
{
	char *o = L->capmsg, *end = L->capmsg + sizeof(L->capmsg);
	const char *sep = " ";

	if (!L->capped)
		return NULL;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		int n_ = snprintf(o, (size_t)(end - o), __VA_ARGS__);                              \
		if (n_ > 0)                                                                        \
			o += n_ < end - o ? n_ : end - o - 1;                                      \
		sep = "; ";                                                                        \
	} while (0)
	ADD("limits reached:");
	sep = " ";
	if (L->capped & CAP_THREADS)
		ADD("%s%u threads (the rest counted as " TA_LIVE_OTHER_THREADS ")", sep,
		    TA_LIVE_THREADS_MAX);
	if (L->capped & CAP_ROWS)
		ADD("%s%u functions over the threads (the rest counted as " TA_LIVE_OTHER_FNS ")",
		    sep, TA_LIVE_ROWS_MAX);
	if (L->capped & CAP_PROCS)
		ADD("%s%u processes (the rest unnamed)", sep, TA_LIVE_PROCS_MAX);
	if (L->capped & CAP_STACK)
		ADD("%s%u stack frames (deeper calls counted, their time charged below)", sep,
		    TA_LIVE_STACK_MAX);
	if (L->capped & CAP_META)
		ADD("%s%u MiB of metadata (the rest left out)", sep, TA_LIVE_META_MAX >> 20);
#undef ADD
	return L->capmsg;
}

int ta_live_snap(struct ta_live *L, uint64_t interval_ns, struct ta_live_snap *snap)
{
	memset(snap, 0, sizeof(*snap));
	snap->seq = ++L->snap_seq;
	snap->interval_ns = interval_ns;
	for (size_t i = 0; i < L->nprocs; i++)
		ta_live_proc_rate(L, L->procs[i]);
	for (size_t i = 0; i < L->nfns; i++) {
		L->fns[i].icalls = L->fns[i].calls = 0;
		L->fns[i].iself_ns = L->fns[i].self_ns = 0;
	}
	size_t nthr = L->nthr + (L->other_thr != NULL);

	if (nthr > L->snap_thr_cap) {
		struct ta_live_thr *n =
		    ta_vec_reserve(L->snap_thr, nthr, &L->snap_thr_cap, sizeof(*n), 16);

		if (!n)
			return -TA_E_NOMEM;
		L->snap_thr = n;
	}
	for (size_t i = 0; i < nthr; i++) {
		struct thr *t = i < L->nthr ? L->thr[i] : L->other_thr;
		struct ta_live_thr *o = &L->snap_thr[i];
		const long double rate = t->proc->ns_per_tick;
		uint64_t hot = 0;

		if (!t->sth && t != L->other_thr)
			t->sth = ta_session_thread(L->s, t->pid, t->tid);
		*o = (struct ta_live_thr){.pid = t->pid,
					  .tid = t->tid,
					  .name = t == L->other_thr	   ? TA_LIVE_OTHER_THREADS
						  : t->sth && t->sth->name ? t->sth->name
									   : "",
					  .ievents = t->events - t->pevents,
					  .events = t->events,
					  .lost = t->lost,
					  .hot = "",
					  .ended = t->sth && t->sth->has_end};
		t->pevents = t->events;
		for (size_t k = 0; k < t->nrows; k++) {
			struct row *r = &t->rows[k];
			struct ta_live_row *f;

			if (r->fn < 0) {
				const char *name = TA_LIVE_OTHER_FNS, *module = "";

				if (!r->other)
					name_addr(L, t->pid, r->addr, &name, &module);
				r->fn = fn_get(L, name, module);
				if (r->fn < 0)
					return -TA_E_NOMEM;
			}
			f = &L->fns[r->fn];
			f->calls += r->calls;
			f->icalls += r->calls - r->pcalls;
			f->self_ns += to_ns(r->self, rate);
			f->iself_ns += to_ns(r->iself, rate);
			if (r->iself > hot) {
				hot = r->iself;
				o->hot = f->id.name;
				o->hot_self_ns = to_ns(hot, rate);
			}
			r->pcalls = r->calls;
			r->pself = r->self;
			r->iself = 0;
		}
	}
	snap->thr = L->snap_thr;
	snap->nthr = nthr;
	/* The stream time the interval covered: the longest of the processes'
	 * (a thread's self time in the interval is within its process's). */
	for (size_t i = 0; i < L->nprocs; i++) {
		struct proc *p = L->procs[i];
		uint64_t from = p->have_cut ? p->cut_ticks : p->first_ticks, span;

		if (!p->have_ticks)
			continue;
		span = to_ns(p->max_ticks > from ? p->max_ticks - from : 0, p->ns_per_tick);
		if (span > snap->span_ns)
			snap->span_ns = span;
		p->cut_ticks = p->max_ticks;
		p->have_cut = 1;
	}
	snap->capped = cap_text(L);
	snap->capped_new = L->capped != L->pcapped;
	L->pcapped = L->capped;
	snap->fns = L->fns;
	snap->nfns = L->nfns;
	snap->events = L->events;
	snap->ievents = L->events - L->pevents;
	L->pevents = L->events;

	snap->ended = L->s->nprocs > 0;
	snap->nprocs = L->s->nprocs;
	for (size_t i = 0; i < L->s->nprocs; i++) {
		const struct ta_process *p = L->s->procs[i];
		const struct proc *lp = NULL;

		for (size_t k = 0; k < L->nprocs; k++)
			if (L->procs[k]->pid == p->pid)
				lp = L->procs[k];
		if (p->has_end) {
			snap->lost += p->end_lost;
			for (unsigned c = 0; c <= TA_LOST_NCAUSES; c++)
				snap->lost_by[c] += p->end_lost_by[c];
		} else {
			snap->ended = 0;
			snap->lost += lp ? lp->lost : 0;
		}
	}
	for (size_t i = 0; i < L->s->nthreads; i++)
		snap->nthreads_live += !L->s->threads[i]->has_end && !L->s->threads[i]->over;

	if (L->fset) {
		struct ta_live_frames *fr = &snap->fr;

		fr->set = L->fset;
		fr->frames = L->frames;
		fr->iframes = L->frames - L->pframes;
		L->pframes = L->frames;
		if (L->nftimes) {
			uint64_t *d = L->ftimes;
			size_t n = L->nftimes;

			qsort(d, n, sizeof(*d), ta_fs_u64_cmp);
			fr->p50_ns = ta_fs_rank(d, n, 0, 50);
			fr->p99_ns = ta_fs_rank(d, n, 0, 99);
			fr->max_ns = d[n - 1];
			for (size_t i = 0; i < n; i++)
				fr->hitches += d[i] > 2 * fr->p50_ns;
		}
		L->nftimes = 0;
	}
	return 0;
}
