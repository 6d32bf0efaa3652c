/* SPDX-License-Identifier: MIT */
/*
 * apimem.c - pools, lock names and fibers as the views keep them
 * (apimem.h).  Every name comes from the dump (hostile): it is a text the
 * decoder bounded (TA_TEXT_MAX bytes), copied here.
 */
#define _GNU_SOURCE
#include "apimem.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a + 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;

	h = (h ^ (h >> 31) ^ b) * 0x94d049bb133111ebull;
	return h ^ (h >> 29);
}

static uint64_t str_hash(uint32_t pid, const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return mix(pid, h);
}

/* ---- names per process -------------------------------------------------------------- */

struct pkey {
	uint32_t pid;
	const char *name;
};

static uint64_t pname_hash(const void *ctx, size_t i)
{
	return ((const struct ta_pnames *)ctx)->r[i].hash;
}

static int pname_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_pname *r = &((const struct ta_pnames *)ctx)->r[i];
	const struct pkey *k = key;

	return r->pid == k->pid && !strcmp(r->name, k->name);
}

long ta_pnames_get(struct ta_pnames *t, uint32_t pid, const char *name)
{
	struct pkey key = {pid, name};
	uint64_t h = str_hash(pid, name);
	struct ta_pname *r;
	size_t k;

	if (ta_htab_reserve(&t->idx, t->n, 16, pname_hash, t) < 0)
		return -1;
	k = ta_htab_find(&t->idx, h, pname_is, t, &key);
	if (ta_htab_at(&t->idx, k))
		return (long)ta_htab_at(&t->idx, k) - 1;
	r = ta_vec_reserve(t->r, t->n + 1, &t->cap, sizeof(*r), 16);
	if (!r)
		return -1;
	t->r = r;
	r = &t->r[t->n];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->hash = h;
	if (!(r->name = strdup(name)))
		return -1;
	ta_htab_put(&t->idx, k, t->n);
	return (long)t->n++;
}

void ta_pnames_free(struct ta_pnames *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->r[i].name);
	free(t->r);
	ta_htab_free(&t->idx);
	memset(t, 0, sizeof(*t));
}

/* ---- pools ------------------------------------------------------------------------------ */

static uint64_t block_hash(const void *ctx, size_t i)
{
	const struct ta_pblock *b = &((const struct ta_pools *)ctx)->b[i];

	return mix(b->pid_pool, b->ptr);
}

static int block_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_pblock *b = &((const struct ta_pools *)ctx)->b[i];
	const uint64_t *k = key;

	return b->pid_pool == k[0] && b->ptr == k[1];
}

long ta_pools_take(struct ta_pools *ps, uint32_t pid, const struct ta_apiev *e)
{
	struct ta_pname *pool;
	uint64_t key[2];
	long id;
	size_t k, i;

	if (e->kind != TA_EXT_POOL_ALLOC && e->kind != TA_EXT_POOL_FREE)
		return -1;
	id = ta_pnames_get(&ps->names, pid, e->name);
	if (id < 0 || ta_htab_reserve_held(&ps->idx, ps->held, 64, block_hash, ps) < 0) {
		ps->nomem = 1;
		return -1;
	}
	pool = &ps->names.r[id];
	key[0] = (uint64_t)pid | ((uint64_t)id + 1) << 32;
	key[1] = e->ptr;
	k = ta_htab_find(&ps->idx, mix(key[0], key[1]), block_is, ps, key);
	if (ta_htab_at(&ps->idx, k)) {
		/* Held: a free gives it back; an allocation of it again (its
		 * free not recorded) replaces it. */
		i = ta_htab_at(&ps->idx, k) - 1;
		pool->live -= ps->b[i].size;
		pool->blocks--;
		ta_htab_del(&ps->idx, k, block_hash, ps);
		ps->held--;
		ps->b[i].pid_pool = 0;
		ps->b[i].size = ps->free_row;
		ps->free_row = i + 1;
		if (e->kind == TA_EXT_POOL_FREE)
			return id;
		k = ta_htab_find(&ps->idx, mix(key[0], key[1]), block_is, ps, key);
	} else if (e->kind == TA_EXT_POOL_FREE) {
		/* free(NULL) is no free at all. */
		pool->unknown += e->ptr != 0;
		return id;
	}
	if (ps->free_row) {
		i = ps->free_row - 1;
		ps->free_row = ps->b[i].size;
	} else {
		struct ta_pblock *b = ta_vec_reserve(ps->b, ps->nb + 1, &ps->cap, sizeof(*b), 64);

		if (!b) {
			ps->nomem = 1;
			return -1;
		}
		ps->b = b;
		i = ps->nb++;
	}
	ps->b[i] = (struct ta_pblock){key[0], key[1], e->size};
	ta_htab_put(&ps->idx, k, i);
	ps->held++;
	pool->live += e->size;
	pool->blocks++;
	return id;
}

void ta_pools_free(struct ta_pools *ps)
{
	ta_pnames_free(&ps->names);
	free(ps->b);
	ta_htab_free(&ps->idx);
	memset(ps, 0, sizeof(*ps));
}

/* ---- lock names ------------------------------------------------------------------------- */

static uint64_t lock_hash(const void *ctx, size_t i)
{
	const struct ta_lockname *r = &((const struct ta_locknames *)ctx)->r[i];

	return mix(r->pid, r->addr);
}

static int lock_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_lockname *r = &((const struct ta_locknames *)ctx)->r[i];
	const uint64_t *k = key;

	return r->pid == k[0] && r->addr == k[1];
}

int ta_locknames_set(struct ta_locknames *ln, uint64_t pid, uint64_t addr, const char *name)
{
	uint64_t key[2] = {pid, addr};
	struct ta_lockname *r;
	char *s = strdup(name);
	size_t k;

	if (!s || ta_htab_reserve(&ln->idx, ln->n, 16, lock_hash, ln) < 0) {
		free(s);
		return -1;
	}
	k = ta_htab_find(&ln->idx, mix(pid, addr), lock_is, ln, key);
	if (ta_htab_at(&ln->idx, k)) {
		r = &ln->r[ta_htab_at(&ln->idx, k) - 1];
		free(r->name);
		r->name = s;
		return 0;
	}
	r = ta_vec_reserve(ln->r, ln->n + 1, &ln->cap, sizeof(*r), 16);
	if (!r) {
		free(s);
		return -1;
	}
	ln->r = r;
	ln->r[ln->n] = (struct ta_lockname){pid, addr, s};
	ta_htab_put(&ln->idx, k, ln->n++);
	return 0;
}

long ta_locknames_index(const struct ta_locknames *ln, uint64_t pid, uint64_t addr)
{
	uint64_t key[2] = {pid, addr};
	size_t k;

	if (!ln->n)
		return -1;
	k = ta_htab_find(&ln->idx, mix(pid, addr), lock_is, ln, key);
	return (long)ta_htab_at(&ln->idx, k) - 1;
}

const char *ta_locknames_get(const struct ta_locknames *ln, uint64_t pid, uint64_t addr)
{
	long i = ta_locknames_index(ln, pid, addr);

	return i < 0 ? NULL : ln->r[i].name;
}

void ta_locknames_free(struct ta_locknames *ln)
{
	for (size_t i = 0; i < ln->n; i++)
		free(ln->r[i].name);
	free(ln->r);
	ta_htab_free(&ln->idx);
	memset(ln, 0, sizeof(*ln));
}

int ta_locknames_wanted(struct ta_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];

		if (!(p->libcall_classes & TA_LC_LOCK))
			continue;
		for (size_t k = 0; k < p->nsites; k++)
			if (p->sites[k].kind == TA_SITE_LOCK_NAME)
				return 1;
	}
	return 0;
}

struct lockname_pass {
	struct ta_locknames *ln;
	int nomem;
	char text[TA_TEXT_MAX + 1];
};

static void lockname_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
			 const uint64_t *val, uint32_t n)
{
	struct lockname_pass *lp = ctx;
	struct ta_apiev e;

	/* A lock's name needs no site: no process to decode it with. */
	if (kind != TA_EXT_LOCK_NAME ||
	    ta_apiev_decode(NULL, ticks, kind, val, n, &e, lp->text) <= 0)
		return;
	if (ta_locknames_set(lp->ln, t->pid, e.ptr, e.text) < 0)
		lp->nomem = 1;
}

int ta_locknames_read(struct ta_locknames *ln, const char *path)
{
	struct lockname_pass lp = {.ln = ln};
	struct ta_visitor vis;
	struct ta_session *s;

	memset(&vis, 0, sizeof(vis));
	vis.ctx = &lp;
	vis.ext = lockname_ext;
	vis.chunks = &ta_session_ext_chunks;
	if (!(s = ta_session_new(&vis)))
		return -1;
	(void)ta_session_read(s, path, NULL);
	ta_session_finish(s);
	ta_session_free(s);
	return lp.nomem ? -1 : 0;
}

/* ---- fibers ----------------------------------------------------------------------------- */

int ta_fibers_take(struct ta_fibers *fs, const struct ta_sess_thread *t, const struct ta_apiev *e)
{
	long id = -1;

	if (e->kind != TA_EXT_FIBER_ENTER && e->kind != TA_EXT_FIBER_LEAVE)
		return 0;
	if (t->index >= fs->nth) {
		size_t cap = fs->nth, old = fs->nth;
		void *th = ta_vec_reserve(fs->th, (size_t)t->index + 1, &cap, sizeof(*fs->th), 16);

		if (!th) {
			fs->nomem = 1;
			return -1;
		}
		fs->th = th;
		fs->nth = cap;
		for (size_t i = old; i < cap; i++)
			fs->th[i].fiber = -1;
	}
	if (e->kind == TA_EXT_FIBER_ENTER) {
		id = ta_pnames_get(&fs->names, t->pid, e->text ? e->text : "");
		if (id < 0) {
			fs->nomem = 1;
			return -1;
		}
		fs->names.r[id].runs++;
	}
	fs->th[t->index].fiber = id;
	fs->th[t->index].since = e->ticks;
	return 1;
}

long ta_fibers_now(const struct ta_fibers *fs, const struct ta_sess_thread *t)
{
	return t->index < fs->nth ? fs->th[t->index].fiber : -1;
}

long ta_fibers_owner(const struct ta_fibers *fs, const struct ta_sess_thread *t, uint64_t enter)
{
	if (t->index >= fs->nth || fs->th[t->index].fiber < 0 || fs->th[t->index].since > enter)
		return -1;
	return fs->th[t->index].fiber;
}

void ta_fibers_free(struct ta_fibers *fs)
{
	ta_pnames_free(&fs->names);
	free(fs->th);
	memset(fs, 0, sizeof(*fs));
}
