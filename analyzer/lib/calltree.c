/* SPDX-License-Identifier: MIT */
/*
 * calltree.c - calls aggregated by call path; see calltree.h.
 *
 * The recorder runs for every call of the dump, so its lookup is the hot
 * path of graph, folded and flame.  Nodes are numbered in the order the
 * walk first meets them, depth first, so a program that repeats itself
 * enters node after node: the node after the thread's last one is tried
 * first.  Otherwise a node's children are a short linked list (most nodes
 * have a few), scanned; only the children of wide nodes go into a hash
 * table.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "calltree.h"

/* Children scanned in a list; more than this and they are hashed. */
#define SCAN_MAX 8

/* ---- thread id sets ----------------------------------------------------------- */

int ta_tidset_parse(struct ta_tidset *ts, const char *s)
{
	for (;;) {
		uint64_t tid = 0;
		const char *p = s;
		uint64_t *v;

		while (*p >= '0' && *p <= '9') {
			uint64_t d = (uint64_t)(*p++ - '0');

			if (tid > (UINT64_MAX - d) / 10)
				return -1;
			tid = tid * 10 + d;
		}
		if (p == s || (*p && *p != ','))
			return -1;
		v = ta_vec_reserve(ts->v, ts->n + 1, &ts->cap, sizeof(*v), 4);
		if (!v)
			return -1;
		ts->v = v;
		ts->v[ts->n++] = tid;
		if (!*p)
			return 0;
		s = p + 1;
	}
}

int ta_tidset_has(const struct ta_tidset *ts, uint64_t tid)
{
	if (!ts || !ts->n)
		return 1;
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i] == tid)
			return 1;
	return 0;
}

void ta_tidset_free(struct ta_tidset *ts)
{
	free(ts->v);
	ts->v = NULL;
	ts->n = ts->cap = 0;
}

/* ---- indentation ------------------------------------------------------------------ */

const char *ta_spaces(struct ta_spaces *sp, size_t n)
{
	if (n >= sp->cap) {
		/* cap counts the spaces; one byte more holds the terminator. */
		size_t room = sp->cap ? sp->cap + 1 : 0;
		char *s = ta_vec_reserve(sp->s, n + 2, &room, 1, 65);

		if (!s)
			return "";
		memset(s, ' ', room);
		sp->s = s;
		sp->cap = room - 1;
	}
	/* One run of spaces, cut where this call needs it. */
	sp->s[sp->at] = ' ';
	sp->s[n] = 0;
	sp->at = n;
	return sp->s;
}

void ta_spaces_free(struct ta_spaces *sp)
{
	free(sp->s);
	memset(sp, 0, sizeof(*sp));
}

/* ---- functions by identity --------------------------------------------------------- */

static uint64_t fn_hash(const char *module, const char *name, uint64_t offset)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)module; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	/* Without a module, the address is all there is, and it is the name. */
	if (!module[0])
		for (const unsigned char *p = (const unsigned char *)name; *p; p++)
			h = (h ^ *p) * 0x100000001b3ull;
	return ta_ct_mix64(h ^ offset);
}

static uint64_t fn_hash_of(const void *ctx, size_t i)
{
	const struct ta_fn *f = &((const struct ta_fn_index *)ctx)->fn[i].id;

	return fn_hash(f->module, f->name, f->offset);
}

static int fn_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_ct_entry *a = &((const struct ta_fn_index *)ctx)->fn[i];
	const struct ta_fn *b = key;

	/* A collapsed run shares its function's module and offset. */
	if (a->base != i)
		return 0;
	return a->id.offset == b->offset && !strcmp(a->id.module, b->module) &&
	       (a->id.module[0] || !strcmp(a->id.name, b->name));
}

void ta_fn_index_init(struct ta_fn_index *ft, struct ta_view *v)
{
	memset(ft, 0, sizeof(*ft));
	ft->v = v;
}

void ta_fn_index_free(struct ta_fn_index *ft)
{
	for (uint32_t i = 0; i < ft->n; i++)
		if (ft->fn[i].repeat)
			free((void *)(uintptr_t)ft->fn[i].id.name);
	free(ft->fn);
	free(ft->addrs);
	ta_htab_free(&ft->by_addr);
	ta_htab_free(&ft->by_fn);
	memset(ft, 0, sizeof(*ft));
}

/* Room for one more function; -1 without memory. */
static int fn_room(struct ta_fn_index *ft)
{
	if (ft->n == ft->cap) {
		/* ids are uint32_t: at most 2^30 functions */
		size_t cap = ft->cap;
		struct ta_ct_entry *v = ta_vec_reserve_max(ft->fn, (size_t)ft->n + 1, &cap,
							   sizeof(*v), 256, (size_t)1 << 30);

		if (!v)
			return -1;
		ft->fn = v;
		ft->cap = (uint32_t)cap;
	}
	return 0;
}

/* The id of the function named nm, added when new; -1 without memory. */
static int64_t fn_intern(struct ta_fn_index *ft, const struct ta_fn *nm)
{
	uint64_t h = fn_hash(nm->module, nm->name, nm->offset);
	size_t k;

	if (ta_htab_reserve(&ft->by_fn, ft->n, 256, fn_hash_of, ft) < 0)
		return -1;
	k = ta_htab_find(&ft->by_fn, h, fn_is, ft, nm);
	if (ta_htab_at(&ft->by_fn, k))
		return ta_htab_at(&ft->by_fn, k) - 1;
	if (fn_room(ft) < 0)
		return -1;
	memset(&ft->fn[ft->n], 0, sizeof(ft->fn[ft->n]));
	ft->fn[ft->n].id = *nm;
	ft->fn[ft->n].base = ft->n;
	ta_htab_put(&ft->by_fn, k, ft->n);
	return ft->n++;
}

static uint64_t pidaddr_hash(uint32_t pid, uint64_t addr)
{
	return ta_ct_mix64(addr ^ ((uint64_t)pid << 48) ^ pid);
}

static uint64_t pidaddr_hash_of(const void *ctx, size_t i)
{
	const struct ta_pidaddr *a = &((const struct ta_fn_index *)ctx)->addrs[i];

	return pidaddr_hash(a->pid, a->addr);
}

static inline int pidaddr_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_pidaddr *a = &((const struct ta_fn_index *)ctx)->addrs[i];
	const struct ta_pidaddr *k = key;

	return a->addr == k->addr && a->pid == k->pid;
}

int64_t ta_fn_index_id(struct ta_fn_index *ft, uint32_t pid, uint64_t addr)
{
	struct ta_pidaddr key = {addr, pid, 0}, *v;
	struct ta_fn nm;
	int64_t id;
	size_t k;

	if (ta_htab_reserve(&ft->by_addr, ft->naddr, 1024, pidaddr_hash_of, ft) < 0)
		return -1;
	k = ta_htab_find(&ft->by_addr, pidaddr_hash(pid, addr), pidaddr_is, ft, &key);
	if (ta_htab_at(&ft->by_addr, k))
		return ft->addrs[ta_htab_at(&ft->by_addr, k) - 1].id;
	v = ta_vec_reserve(ft->addrs, ft->naddr + 1, &ft->addrs_cap, sizeof(*v), 1024);
	if (!v)
		return -1;
	ft->addrs = v;
	ta_view_name(ft->v, pid, addr, &nm);
	id = fn_intern(ft, &nm);
	if (id < 0)
		return -1;
	key.id = (uint32_t)id;
	ft->addrs[ft->naddr] = key;
	ta_htab_put(&ft->by_addr, k, ft->naddr);
	ft->naddr++;
	ft->fn[id].addrs++;
	return id;
}

void ta_fn_index_srclines(struct ta_fn_index *ft, struct ta_srclines *sl)
{
	for (uint32_t i = 0; i < ft->n; i++)
		if (ft->fn[i].id.module[0])
			ft->fn[i].id.srcline =
			    ta_srcline(sl, ft->fn[i].id.module, ft->fn[i].id.offset);
}

/* ---- the tree ----------------------------------------------------------------------- */

/*
 * The node array of a large tree is written all over at first touch:
 * mapped directly with huge pages where the kernel allows (madvise mode),
 * it costs one fault per 2 MiB instead of one per 4 KiB, and grows with
 * mremap without copying.
 */
#define NODES_CHUNK (2u << 20)

static size_t nodes_bytes(uint32_t cap)
{
	size_t b = (size_t)cap * sizeof(struct ta_ctnode);

	return (b + NODES_CHUNK - 1) / NODES_CHUNK * NODES_CHUNK;
}

static struct ta_ctnode *nodes_resize(struct ta_ctnode *old, uint32_t old_cap, uint32_t cap)
{
	void *p;

	if (old)
		p = mremap(old, nodes_bytes(old_cap), nodes_bytes(cap), MREMAP_MAYMOVE);
	else
		p = mmap(NULL, nodes_bytes(cap), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, nodes_bytes(cap), MADV_HUGEPAGE);
#endif
	return p;
}

int ta_ctree_init(struct ta_ctree *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = NODES_CHUNK / sizeof(struct ta_ctnode);
	t->n = nodes_resize(NULL, 0, t->cap);
	if (!t->n)
		return -1;
	t->len = 1; /* the root, zeroed by the mapping */
	return 0;
}

void ta_ctree_free(struct ta_ctree *t)
{
	if (t->n)
		munmap(t->n, nodes_bytes(t->cap));
	ta_htab_free(&t->by_child);
	memset(t, 0, sizeof(*t));
}

static uint64_t child_hash(const void *ctx, size_t i)
{
	const struct ta_ctnode *c = &((const struct ta_ctree *)ctx)->n[i];

	return ta_ct_child_hash(c->parent, c->key);
}

static inline int child_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_ctnode *c = &((const struct ta_ctree *)ctx)->n[i];
	const struct ta_ct_child_key *k = key;

	return c->key == k->key && c->parent == k->parent;
}

static int never(const void *ctx, size_t i, const void *key)
{
	(void)ctx, (void)i, (void)key;
	return 0;
}

/* Puts node in the table of children at the end of its probe run, with
 * room made for it; -1 without memory. */
static int slot_put(struct ta_ctree *t, uint32_t node)
{
	const struct ta_ctnode *c = &t->n[node];

	if (ta_htab_reserve_held(&t->by_child, t->nhashed, 1024, child_hash, t) < 0)
		return -1;
	ta_htab_put(
	    &t->by_child,
	    ta_htab_find(&t->by_child, ta_ct_child_hash(c->parent, c->key), never, NULL, NULL),
	    node);
	t->nhashed++;
	return 0;
}

/* Rebuilds the table with every child of a wide node in it, in node order. */
static int slots_rebuild(struct ta_ctree *t)
{
	ta_htab_free(&t->by_child);
	t->nhashed = 0;
	for (uint32_t i = 1; i < t->len; i++)
		if (t->n[t->n[i].parent].nchild > SCAN_MAX && slot_put(t, i) < 0)
			return -1;
	return 0;
}

static __attribute__((noinline)) uint32_t node_add(struct ta_ctree *t, uint32_t parent,
						   uint64_t key)
{
	struct ta_ctnode *n, *p;
	uint32_t i;

	if (t->len == t->cap) {
		uint32_t cap = t->cap * 2;
		struct ta_ctnode *v;

		if (t->cap >= UINT32_MAX / 2) {
			t->nomem = 1;
			return 0;
		}
		v = nodes_resize(t->n, t->cap, cap);
		if (!v) {
			t->nomem = 1;
			return 0;
		}
		t->n = v;
		t->cap = cap;
	}
	i = t->len++;
	n = &t->n[i];
	p = &t->n[parent];
	memset(n, 0, sizeof(*n));
	n->key = key;
	n->parent = parent;
	n->next = p->child;
	p->child = i;
	p->nchild++;
	if (p->nchild <= SCAN_MAX)
		return i;
	/* A parent that just became wide brings all its children along. */
	if (p->nchild > SCAN_MAX + 1) {
		if (slot_put(t, i) < 0)
			t->nomem = 1; /* lookups may now miss: the sums are void */
	} else {
		for (uint32_t c = p->child; c; c = t->n[c].next)
			if (slot_put(t, c) < 0)
				t->nomem = 1;
	}
	return i;
}

uint32_t ta_ctree_child(struct ta_ctree *t, uint32_t parent, uint64_t key)
{
	const struct ta_ctnode *p = &t->n[parent];

	if (__builtin_expect(p->nchild <= SCAN_MAX, 1)) {
		for (uint32_t c = p->child; c; c = t->n[c].next)
			if (t->n[c].key == key)
				return c;
	} else if (t->by_child.nslots) {
		struct ta_ct_child_key k = {parent, key};
		uint32_t at = ta_htab_at(
		    &t->by_child,
		    ta_htab_find(&t->by_child, ta_ct_child_hash(parent, key), child_is, t, &k));

		if (at)
			return at - 1;
	}
	return node_add(t, parent, key);
}

struct sort_ctx {
	const struct ta_ctree *t;
	int (*cmp)(const void *, const void *, void *);
	void *ctx;
};

static int index_cmp(const void *a, const void *b, void *ctx)
{
	const struct sort_ctx *sc = ctx;

	return sc->cmp(&sc->t->n[*(const uint32_t *)a], &sc->t->n[*(const uint32_t *)b], sc->ctx);
}

int ta_ctree_sort(struct ta_ctree *t, int (*cmp)(const void *, const void *, void *), void *ctx)
{
	struct sort_ctx sc = {t, cmp, ctx};
	uint32_t *v = NULL;
	size_t cap = 0;

	for (uint32_t i = 0; i < t->len; i++) {
		struct ta_ctnode *p = &t->n[i];
		uint32_t k = 0;

		if (p->nchild < 2)
			continue;
		if (p->nchild > cap) {
			uint32_t *nv = ta_vec_reserve(v, p->nchild, &cap, sizeof(*v), 64);

			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
		}
		for (uint32_t c = p->child; c; c = t->n[c].next)
			v[k++] = c;
		qsort_r(v, k, sizeof(*v), index_cmp, &sc);
		p->child = v[0];
		for (uint32_t j = 0; j + 1 < k; j++)
			t->n[v[j]].next = v[j + 1];
		t->n[v[k - 1]].next = 0;
	}
	free(v);
	return 0;
}

void ta_ctree_walk(const struct ta_ctree *t, uint32_t top,
		   int (*open)(void *ctx, uint32_t n, uint32_t depth),
		   void (*close)(void *ctx, uint32_t n, uint32_t depth), void *ctx)
{
	uint32_t n = top, depth = 0;
	int descend = open(ctx, n, 0);

	for (;;) {
		if (descend && t->n[n].child) {
			n = t->n[n].child;
			descend = open(ctx, n, ++depth);
			continue;
		}
		/* Done with n: close it and whatever it ends, up to a node with
		 * a next sibling. */
		for (;;) {
			if (close)
				close(ctx, n, depth);
			if (n == top)
				return;
			if (t->n[n].next) {
				n = t->n[n].next;
				descend = open(ctx, n, depth);
				break;
			}
			n = t->n[n].parent;
			depth--;
		}
	}
}

/* ---- naming ----------------------------------------------------------------------------- */

static int is_thread(const struct ta_ctnode *n)
{
	return (n->key & TA_CT_THREAD) != 0;
}

const char *ta_calltree_label(const struct ta_calltree *ct, uint64_t key, char *buf, size_t len)
{
	const struct ta_sess_thread *t = ta_calltree_thread(ct, key);

	if (!t)
		return ct->fns.fn[key].id.name;
	if (t->name && t->name[0])
		snprintf(buf, len, "thread %" PRIu64 " (%s)", t->tid, t->name);
	else
		snprintf(buf, len, "thread %" PRIu64, t->tid);
	return buf;
}

const struct ta_sess_thread *ta_calltree_thread(const struct ta_calltree *ct, uint64_t key)
{
	uint64_t idx = key & ~TA_CT_THREAD;

	if (!(key & TA_CT_THREAD) || idx >= ct->fns.v->s->nthreads)
		return NULL;
	return ct->fns.v->s->threads[idx];
}

int ta_calltree_cmp(const void *a, const void *b, void *ctx)
{
	const struct ta_ctnode *x = a, *y = b;
	const struct ta_calltree *ct = ctx;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	if (is_thread(x) || is_thread(y))
		return x->key < y->key ? -1 : x->key > y->key;
	return strcmp(ct->fns.fn[x->key].id.name, ct->fns.fn[y->key].id.name);
}

/* ---- collapsing deep recursion ----------------------------------------------------------- */

/* The functions standing for runs, made by one collapse: rows are ids from
 * first on. */
struct runs {
	struct ta_fn_index *ft;
	uint32_t first;
	struct ta_htab h;
};

struct run_key {
	uint32_t base, repeat;
};

static uint64_t run_hash(uint32_t base, uint32_t repeat)
{
	return ta_ct_mix64((uint64_t)base * 0x9e3779b97f4a7c15ull + repeat);
}

static uint64_t run_hash_of(const void *ctx, size_t i)
{
	const struct runs *r = ctx;
	const struct ta_ct_entry *f = &r->ft->fn[r->first + i];

	return run_hash(f->base, f->repeat);
}

static int run_is(const void *ctx, size_t i, const void *key)
{
	const struct runs *r = ctx;
	const struct ta_ct_entry *f = &r->ft->fn[r->first + i];
	const struct run_key *k = key;

	return f->base == k->base && f->repeat == k->repeat;
}

/* The id of the function standing for repeat nested calls of base; -1
 * without memory. */
static int64_t run_fn(struct runs *r, uint32_t base, uint32_t repeat)
{
	struct ta_fn_index *ft = r->ft;
	struct run_key key = {base, repeat};
	const struct ta_ct_entry *b;
	struct ta_ct_entry *f;
	size_t k;
	char *name;

	if (ta_htab_reserve(&r->h, ft->n - r->first, 64, run_hash_of, r) < 0)
		return -1;
	k = ta_htab_find(&r->h, run_hash(base, repeat), run_is, r, &key);
	if (ta_htab_at(&r->h, k))
		return r->first + ta_htab_at(&r->h, k) - 1;
	if (fn_room(ft) < 0)
		return -1;
	b = &ft->fn[base];
	if (asprintf(&name, "%s [x%" PRIu32 "]", b->id.name, repeat) < 0)
		return -1;
	f = &ft->fn[ft->n];
	*f = *b;
	f->id.name = name;
	f->addrs = 0;
	f->repeat = repeat;
	f->base = base;
	ta_htab_put(&r->h, k, ft->n - r->first);
	return ft->n++;
}

struct collapse {
	const struct ta_ctree *t;
	struct ta_ctree nt;
	struct runs runs;
	uint32_t *run, *map;
	uint8_t *in;	 /* IN_RUN, IN_CUT: the node went into the node above */
	uint32_t *depth; /* of the new tree's nodes */
	int64_t deeper;	 /* the function of the cut node, -1 before it is made */
	uint64_t cut;	 /* nodes that went into a cut node */
	uint32_t max_depth;
	int fail;
};

#define IN_RUN 1
#define IN_CUT 2

/* The function that stands for what is deeper than TA_DEPTH_MAX: one of
 * its own, without a module; -1 without memory. */
static int64_t deeper_fn(struct collapse *c)
{
	struct ta_fn_index *ft = c->runs.ft;

	if (c->deeper >= 0)
		return c->deeper;
	if (fn_room(ft) < 0)
		return -1;
	memset(&ft->fn[ft->n], 0, sizeof(ft->fn[ft->n]));
	ft->fn[ft->n].id.name = TA_DEEPER_NAME;
	ft->fn[ft->n].id.module = "";
	ft->fn[ft->n].base = UINT32_MAX;
	c->deeper = ft->n++;
	return c->deeper;
}

static int depth_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct collapse *c = ctx;

	if (depth > c->max_depth)
		c->max_depth = depth;
	return 1;
}

static int collapse_open(void *ctx, uint32_t i, uint32_t depth)
{
	struct collapse *c = ctx;
	const struct ta_ctnode *n = &c->t->n[i];
	struct ta_ctnode *m;
	uint64_t key = n->key;

	if (!depth)
		return 1;
	/* Deeper in a collapsed run: its sums go to the run's node, its
	 * other children under it.  Under a cut: everything goes into the
	 * cut node. */
	if ((c->in[n->parent] & IN_RUN && c->t->n[n->parent].key == key) ||
	    c->in[n->parent] & IN_CUT) {
		m = &c->nt.n[c->map[n->parent]];
		m->calls += n->calls;
		m->open += n->open;
		m->partial += n->partial;
		m->self += n->self;
		c->map[i] = c->map[n->parent];
		c->in[i] = c->in[n->parent] & IN_CUT ? IN_CUT : IN_RUN;
		c->cut += c->in[i] == IN_CUT;
		return 1;
	}
	if (c->depth[c->map[n->parent]] >= TA_DEPTH_MAX) {
		int64_t id = deeper_fn(c);

		if (id < 0) {
			c->fail = 1;
			return 0;
		}
		key = (uint64_t)id;
		c->in[i] = IN_CUT;
		c->cut++;
	} else if (c->run[i] > TA_RUN_MAX && !is_thread(n)) {
		int64_t id = run_fn(&c->runs, (uint32_t)key, c->run[i]);

		if (id < 0) {
			c->fail = 1;
			return 0;
		}
		key = (uint64_t)id;
		c->in[i] = IN_RUN;
	}
	c->map[i] = ta_ctree_child(&c->nt, c->map[n->parent], key);
	if (!c->map[i]) {
		c->fail = 1;
		return 0;
	}
	c->depth[c->map[i]] = c->depth[c->map[n->parent]] + 1;
	m = &c->nt.n[c->map[i]];
	m->calls += n->calls;
	m->open += n->open;
	m->partial += n->partial;
	m->total += n->total;
	m->self += n->self;
	return 1;
}

int64_t ta_calltree_collapse(struct ta_calltree *ct, struct ta_ctree *t)
{
	struct collapse c = {.t = t, .runs = {&ct->fns, ct->fns.n, {NULL, 0}}, .deeper = -1};
	int64_t found = 0;

	/* run[i]: how many nodes of i's function the chain from i down holds.
	 * A node has at most one child of its own function, and comes after
	 * its parent in the array. */
	c.run = malloc((size_t)t->len * sizeof(*c.run));
	if (!c.run)
		return -1;
	for (uint32_t i = 0; i < t->len; i++)
		c.run[i] = 1;
	for (uint32_t i = t->len; i-- > 1;) {
		const struct ta_ctnode *n = &t->n[i];

		if (n->parent && !is_thread(n) && t->n[n->parent].key == n->key)
			c.run[n->parent] = c.run[i] + 1;
	}
	for (uint32_t i = 1; i < t->len; i++)
		found += c.run[i] > TA_RUN_MAX &&
			 (!t->n[i].parent || t->n[t->n[i].parent].key != t->n[i].key);
	if (!found) {
		/* Deep without a recursion of one function (f, g, f, g...):
		 * the cut alone bounds the paths. */
		ta_ctree_walk(t, 0, depth_open, NULL, &c);
		if (c.max_depth <= TA_DEPTH_MAX) {
			free(c.run);
			return 0;
		}
	}
	c.map = malloc((size_t)t->len * sizeof(*c.map));
	c.depth = malloc((size_t)t->len * sizeof(*c.depth));
	c.in = calloc(t->len, 1);
	if (!c.map || !c.depth || !c.in || ta_ctree_init(&c.nt) < 0) {
		c.fail = 1;
	} else {
		c.map[0] = 0;
		c.depth[0] = 0;
		c.nt.n[0] = t->n[0];
		c.nt.n[0].child = c.nt.n[0].next = c.nt.n[0].nchild = 0;
		/* The walk reaches only what is in the tree (a thread merged
		 * away stays in the array). */
		ta_ctree_walk(t, 0, collapse_open, NULL, &c);
		c.fail |= c.nt.nomem;
	}
	if (c.fail) {
		ta_ctree_free(&c.nt);
	} else {
		ta_ctree_free(t);
		*t = c.nt;
	}
	free(c.run);
	free(c.map);
	free(c.depth);
	free(c.in);
	ta_htab_free(&c.runs.h);
	if (c.fail)
		return -1;
	ct->cut += c.cut;
	return found;
}

static uint64_t to_ns(const struct ta_process *p, uint64_t ticks)
{
	return p ? ta_process_dur_ns(p, ticks) : ticks;
}

/* The process of recorded node i: the dump's only one, or its thread's
 * (thr gives the thread of each node when there are several). */
static const struct ta_process *node_process(const struct ta_session *s, const uint32_t *thr,
					     uint32_t i)
{
	if (!thr)
		return s->nprocs ? s->procs[0] : NULL;
	return ta_session_process(s, s->threads[thr[i]]->pid);
}

/*
 * The recorded tree becomes the named one where it can: one thread merged,
 * or threads split, and no two addresses naming the same function (then no
 * two siblings merge).  Times change in place, and a merged thread's node
 * gives its children to the root.  Saves a second tree as large as the
 * first.
 */
static int name_in_place(struct ta_calltree *ct, struct ta_pathrec *r, const uint32_t *thr,
			 int split)
{
	struct ta_ctree *t = &r->tree;
	const struct ta_session *s = ct->fns.v->s;

	for (uint32_t i = 0; i < ct->fns.n; i++)
		if (ct->fns.fn[i].addrs > 1)
			return 0;
	if (!split && t->n[0].nchild > 1)
		return 0;
	for (uint32_t i = 1; i < t->len; i++) {
		struct ta_ctnode *n = &t->n[i];
		const struct ta_process *p;

		if (!n->parent)
			continue;
		p = node_process(s, thr, i);
		n->total = to_ns(p, n->total);
		n->self = to_ns(p, n->self);
	}
	if (!split && t->n[0].child) {
		uint32_t th = t->n[0].child;

		t->n[0].child = t->n[th].child;
		t->n[0].nchild = t->n[th].nchild;
		for (uint32_t c = t->n[th].child; c; c = t->n[c].next)
			t->n[c].parent = 0;
		/* Left out of the tree, and empty. */
		memset(&t->n[th], 0, sizeof(t->n[th]));
		t->n[th].key = TA_CT_THREAD;
	}
	/* The hashed children's keys changed. */
	if (t->nhashed && slots_rebuild(t) < 0)
		return -1;
	ct->tree = *t;
	memset(t, 0, sizeof(*t));
	return 1;
}

/* Merges the named recording into a new tree. */
static int name_by_merging(struct ta_calltree *ct, const struct ta_ctree *raw, const uint32_t *thr,
			   int split)
{
	const struct ta_session *s = ct->fns.v->s;
	uint32_t *map;
	int rc = -1;

	if (ta_ctree_init(&ct->tree) < 0)
		return -1;
	map = malloc((size_t)raw->len * sizeof(*map));
	if (!map)
		return -1;
	map[0] = 0;
	for (uint32_t i = 1; i < raw->len; i++) {
		const struct ta_ctnode *n = &raw->n[i];
		const struct ta_process *p;
		struct ta_ctnode *m;

		if (!n->parent) {
			map[i] = split ? ta_ctree_child(&ct->tree, 0, n->key) : 0;
			if (split && !map[i])
				goto out;
			continue;
		}
		p = node_process(s, thr, i);
		map[i] = ta_ctree_child(&ct->tree, map[n->parent], n->key);
		if (!map[i])
			goto out;
		m = &ct->tree.n[map[i]];
		m->calls += n->calls;
		m->open += n->open;
		m->partial += n->partial;
		m->total += to_ns(p, n->total);
		m->self += to_ns(p, n->self);
	}
	rc = 0;
out:
	free(map);
	return rc;
}

int ta_calltree_build(struct ta_calltree *ct, struct ta_pathrec *r, struct ta_view *v, int split)
{
	struct ta_ctree *raw = &r->tree;
	const struct ta_session *s = v->s;
	uint32_t *thr = NULL;
	int rc = -1, done;

	memset(ct, 0, sizeof(*ct));
	ta_fn_index_init(&ct->fns, v);
	ct->split = split;
	/* Threads of several processes: each node's thread gives its pid. */
	if (s->nprocs > 1) {
		thr = malloc((size_t)raw->len * sizeof(*thr));
		if (!thr)
			goto out;
		thr[0] = 0;
	}
	/* Addresses become function ids.  A parent always comes before its
	 * children in the array. */
	for (uint32_t i = 1; i < raw->len; i++) {
		struct ta_ctnode *n = &raw->n[i];
		uint32_t pid;
		int64_t id;

		if (!n->parent) {
			if (thr)
				thr[i] = (uint32_t)(n->key & ~TA_CT_THREAD);
			ct->threads += n->child != 0;
			continue;
		}
		if (thr)
			thr[i] = thr[n->parent];
		pid = thr ? s->threads[thr[i]]->pid : s->procs[0]->pid;
		id = ta_fn_index_id(&ct->fns, pid, n->key);
		if (id < 0)
			goto out;
		n->key = (uint64_t)id;
	}
	done = name_in_place(ct, r, thr, split);
	if (done < 0 || (!done && name_by_merging(ct, raw, thr, split) < 0))
		goto out;
	/* The root and the threads hold what their children hold; children
	 * come later in the array, so a backward pass sums the threads
	 * before they are added to the root. */
	for (uint32_t i = ct->tree.len; i-- > 1;) {
		struct ta_ctnode *n = &ct->tree.n[i], *p = &ct->tree.n[n->parent];

		if (n->parent && !is_thread(p))
			continue;
		p->total += n->total;
		p->calls += n->calls;
	}
	if (ta_calltree_collapse(ct, &ct->tree) < 0 ||
	    ta_ctree_sort(&ct->tree, ta_calltree_cmp, ct) < 0)
		goto out;
	rc = 0;
out:
	free(thr);
	return rc;
}

void ta_calltree_free(struct ta_calltree *ct)
{
	ta_ctree_free(&ct->tree);
	ta_fn_index_free(&ct->fns);
}

/* ---- the front -------------------------------------------------------------------------- */

void ta_tidset_warn(const struct ta_tidset *ts, const struct ta_view *v)
{
	for (size_t i = 0; ts && i < ts->n; i++) {
		size_t k;

		for (k = 0; k < v->s->nthreads; k++)
			if (v->s->threads[k]->tid == ts->v[i])
				break;
		if (k == v->s->nthreads)
			ta_view_warn(v, "no thread %" PRIu64 " in the dump", ts->v[i]);
	}
}

/* The path recorder and another visitor in one walk. */
struct both {
	struct ta_visitor rec, also;
};

static uintptr_t both_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			    uint64_t addr, unsigned flags)
{
	struct both *b = ctx;

	if (b->also.enter)
		b->also.enter(b->also.ctx, t, ticks, depth, addr, flags);
	return b->rec.enter(b->rec.ctx, t, ticks, depth, addr, flags);
}

static void both_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct both *b = ctx;

	b->rec.exit(b->rec.ctx, t, x);
	if (b->also.exit)
		b->also.exit(b->also.ctx, t, x);
}

static void both_lost(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count)
{
	struct both *b = ctx;

	if (b->also.lost)
		b->also.lost(b->also.ctx, t, ticks, count);
}

static void both_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		     const uint64_t *values, uint32_t n)
{
	struct both *b = ctx;

	if (b->also.ext)
		b->also.ext(b->also.ctx, t, ticks, kind, values, n);
}

static void both_partial(void *ctx, struct ta_sess_thread *t, uint64_t addr)
{
	struct both *b = ctx;

	b->rec.partial(b->rec.ctx, t, addr);
	if (b->also.partial)
		b->also.partial(b->also.ctx, t, addr);
}

int ta_treeview_open(struct ta_treeview *tv, const char *path, const struct ta_tidset *tids,
		     int split)
{
	return ta_treeview_open_also(tv, path, tids, split, NULL);
}

int ta_treeview_open_also(struct ta_treeview *tv, const char *path, const struct ta_tidset *tids,
			  int split, const struct ta_visitor *also)
{
	struct ta_visitor vis;
	struct both b;

	memset(tv, 0, sizeof(*tv));
	if (ta_pathrec_init(&tv->rec, tids) < 0) {
		fprintf(stderr, "traceagent: out of memory\n");
		tv->v.status = 1;
		return -1;
	}
	ta_pathrec_visitor(&tv->rec, &vis);
	if (also) {
		/* Every chunk walked: the recorder's parts (-j) would take
		 * chunks past the other visitor. */
		b.rec = vis;
		b.also = *also;
		memset(&vis, 0, sizeof(vis));
		vis.ctx = &b;
		vis.enter = both_enter;
		vis.exit = both_exit;
		vis.lost = both_lost;
		vis.ext = both_ext;
		vis.partial = both_partial;
	}
	if (ta_view_open(&tv->v, path, &vis) < 0)
		return -1;
	if (tv->rec.nomem || tv->rec.tree.nomem ||
	    ta_calltree_build(&tv->ct, &tv->rec, &tv->v, split) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		tv->v.status = 1;
		return -1;
	}
	/* The recording is named; its memory can go before the output. */
	ta_pathrec_free(&tv->rec);
	/* rec_partial counted the exits without an entry. */
	tv->v.partial_counted = 1;
	ta_view_warnings(&tv->v);
	if (tv->ct.cut)
		ta_view_warn(&tv->v,
			     "call paths deeper than %d levels are cut there: %" PRIu64
			     " deeper paths are one \"%s\"",
			     TA_DEPTH_MAX, tv->ct.cut, TA_DEEPER_NAME);
	ta_tidset_warn(tids, &tv->v);
	return 0;
}

void ta_treeview_close(struct ta_treeview *tv)
{
	ta_calltree_free(&tv->ct);
	ta_pathrec_free(&tv->rec);
	ta_view_close(&tv->v);
}
