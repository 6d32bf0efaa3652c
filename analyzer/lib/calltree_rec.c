/* SPDX-License-Identifier: MIT */
/*
 * calltree_rec.c - recording the call tree while the session walks the
 * dump (ta_pathrec; see calltree.h), in one pass or per chunk (-j).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "calltree.h"

/* ---- recording -------------------------------------------------------------------------- */

/* thread_node value of a thread left out by --tid. */
#define SKIPPED UINT32_MAX

int ta_pathrec_init(struct ta_pathrec *r, const struct ta_tidset *tids)
{
	memset(r, 0, sizeof(*r));
	r->tids = tids;
	return ta_ctree_init(&r->tree);
}

void ta_pathrec_free(struct ta_pathrec *r)
{
	ta_ctree_free(&r->tree);
	free(r->th);
	free(r->map);
	memset(r, 0, sizeof(*r));
}

static __attribute__((noinline)) struct ta_pathrec_thread *
thread_root(struct ta_pathrec *r, const struct ta_sess_thread *t)
{
	struct ta_pathrec_thread *rt;

	if (t->index >= r->nth) {
		size_t cap = r->nth;

		rt = ta_vec_reserve_max(r->th, (size_t)t->index + 1, &cap, sizeof(*rt), 16,
					UINT32_MAX);
		if (!rt) {
			r->nomem = 1;
			return NULL;
		}
		memset(rt + r->nth, 0, (cap - r->nth) * sizeof(*rt));
		r->th = rt;
		r->nth = (uint32_t)cap;
	}
	rt = &r->th[t->index];
	if (!rt->node) {
		if (!ta_tidset_has(r->tids, t->tid))
			rt->node = SKIPPED;
		else if (!(rt->node = ta_ctree_child(&r->tree, 0, TA_CT_THREAD | t->index)))
			return NULL;
	}
	return rt;
}

/* A forked child's frames entered by its parent before the fork (the
 * stack's bottom `inherited` ones) have no node until the child enters a
 * function below them: then their path, with no call of the child's
 * (their calls are the parent's), so that the child's calls have a place.
 * The node of the frame at depth - 1, or 0. */
static __attribute__((noinline)) uint32_t inherited_path(struct ta_pathrec *r,
							 struct ta_pathrec_thread *rt,
							 struct ta_sess_thread *t, uint32_t depth)
{
	for (uint32_t k = 0; k < depth; k++) {
		uint32_t up = k ? (uint32_t)t->stack[k - 1].user : rt->node;

		if (t->stack[k].user)
			continue;
		if (!up || k >= t->inherited)
			return 0;
		t->stack[k].user = ta_ctree_child(&r->tree, up, t->stack[k].addr);
		if (!t->stack[k].user)
			return 0;
	}
	return (uint32_t)t->stack[depth - 1].user;
}

static uintptr_t rec_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			   uint64_t addr, unsigned flags)
{
	struct ta_pathrec *r = ctx;
	struct ta_pathrec_thread *rt;
	uint32_t parent, c;

	(void)ticks;
	(void)flags;
	if (__builtin_expect(t->index < r->nth && r->th[t->index].node, 1))
		rt = &r->th[t->index];
	else if (!(rt = thread_root(r, t)))
		return 0;
	if (rt->node == SKIPPED)
		return 0;
	/* The caller's frame is still on the stack, with its node. */
	parent = depth ? (uint32_t)t->stack[depth - 1].user : rt->node;
	if (!parent && depth && depth <= t->inherited)
		parent = inherited_path(r, rt, t, depth);
	if (!parent)
		return 0;
	/* Nodes are numbered in the order the walk first met them, so a run
	 * that repeats what it did before enters node after node: try the
	 * one after the last before searching. */
	c = rt->hint + 1;
	if (c < r->tree.len && r->tree.n[c].parent == parent && r->tree.n[c].key == addr) {
		rt->hint = c;
		return c;
	}
	c = ta_ctree_child(&r->tree, parent, addr);
	rt->hint = c;
	return c;
}

static void rec_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_pathrec *r = ctx;
	struct ta_ctnode *n;

	(void)t;
	if (!x->user)
		return;
	n = &r->tree.n[x->user];
	n->calls++;
	n->total += x->duration;
	n->self += x->self;
	if (x->flags & TA_VISIT_OPEN)
		n->open++;
	else if (x->flags & TA_VISIT_INCOMPLETE)
		n->partial++;
}

/* An exit without its entry (an attach window began inside the call): a
 * call at the top of the thread's recorded paths, partial, with no time,
 * as report counts it. */
static void rec_partial(void *ctx, struct ta_sess_thread *t, uint64_t addr)
{
	struct ta_pathrec *r = ctx;
	struct ta_pathrec_thread *rt;
	uint32_t c;

	if (__builtin_expect(t->index < r->nth && r->th[t->index].node, 1))
		rt = &r->th[t->index];
	else if (!(rt = thread_root(r, t)))
		return;
	if (rt->node == SKIPPED)
		return;
	c = ta_ctree_child(&r->tree, rt->node, addr);
	if (!c)
		return;
	r->tree.n[c].calls++;
	r->tree.n[c].partial++;
}

/* ---- recording per chunk (-j) ------------------------------------------------------ */

/*
 * A worker records one EVENTS chunk into a tree of its own, rooted at the
 * thread's node with the chunk's snapshot as its first path (nodes 1 to
 * the snapshot's depth), as rec_enter and rec_exit would: nodes in the
 * order the chunk first meets them, each with the calls that began and
 * ended in the chunk.  The exits of the snapshot's frames and the frames
 * still open at the end are left to the session (ta_session_part_take),
 * which knows their enter times.  The reader grafts the nodes in their
 * order onto the real tree, below the nodes of the thread's real frames,
 * so the real tree gets its new nodes in the order the walk would have
 * made them: the same tree, node for node.
 */
struct ct_pnode {
	uint64_t key;
	uint32_t parent;
	uint64_t calls, total, self, partial;
};

struct ct_part {
	int ok;
	struct ta_decoder dec;
	struct ct_pnode *n;
	uint32_t len, cap;
	struct ta_htab by_child; /* nodes [1, len) by (parent, key) */
	struct ta_part_open *stack;
	uint32_t depth, scap, nph, used;
	struct ta_part_edge *edges;
	size_t nedges, edges_cap;
	uint64_t enters, events, unmatched, lost, last_ticks;
	int have_ticks;
};

static void *part_make(void *ctx)
{
	struct ct_part *cp = calloc(1, sizeof(*cp));

	(void)ctx;
	if (cp)
		ta_decoder_init(&cp->dec);
	return cp;
}

static void part_drop(void *part)
{
	struct ct_part *cp = part;

	if (!cp)
		return;
	ta_decoder_free(&cp->dec);
	free(cp->n);
	ta_htab_free(&cp->by_child);
	free(cp->stack);
	free(cp->edges);
	free(cp);
}

static uint64_t pnode_hash(const void *ctx, size_t i)
{
	const struct ct_pnode *c = &((const struct ct_part *)ctx)->n[i];

	return ta_ct_child_hash(c->parent, c->key);
}

static inline int pnode_is(const void *ctx, size_t i, const void *key)
{
	const struct ct_pnode *c = &((const struct ct_part *)ctx)->n[i];
	const struct ta_ct_child_key *k = key;

	return c->key == k->key && c->parent == k->parent;
}

/* The node (parent, key), added when new: its index, 0 without memory. */
static __attribute__((noinline)) uint32_t pnode(struct ct_part *cp, uint32_t parent, uint64_t key)
{
	struct ta_ct_child_key ck = {parent, key};
	uint64_t h = ta_ct_child_hash(parent, key);
	size_t k;

	/* The root (node 0) is no one's child: the table holds the len - 1
	 * others. */
	if (ta_htab_reserve_held(&cp->by_child, (size_t)cp->len - 1, 1024, pnode_hash, cp) < 0)
		return 0;
	k = ta_htab_find(&cp->by_child, h, pnode_is, cp, &ck);
	if (ta_htab_at(&cp->by_child, k))
		return ta_htab_at(&cp->by_child, k) - 1;
	if (cp->len == cp->cap) {
		/* node ids are uint32_t, 0 none: at most 2^31 */
		size_t cap = cp->cap;
		struct ct_pnode *v = ta_vec_reserve_max(cp->n, (size_t)cp->len + 1, &cap,
							sizeof(*v), 256, (size_t)1 << 31);

		if (!v)
			return 0;
		cp->n = v;
		cp->cap = (uint32_t)cap;
	}
	memset(&cp->n[cp->len], 0, sizeof(cp->n[cp->len]));
	cp->n[cp->len].key = key;
	cp->n[cp->len].parent = parent;
	ta_htab_put(&cp->by_child, k, cp->len);
	return cp->len++;
}

static __attribute__((noinline)) int part_grow(struct ct_part *cp)
{
	size_t cap = cp->scap;
	/* Past the session's limit the walk counts frames as overflow: such
	 * a chunk is walked. */
	struct ta_part_open *st = ta_vec_reserve_max(cp->stack, (size_t)cp->scap + 1, &cap,
						     sizeof(*st), 64, TA_SESSION_FRAMES_MAX);

	if (!st)
		return -1;
	memset(st + cp->scap, 0, (cap - cp->scap) * sizeof(*st));
	cp->stack = st;
	cp->scap = (uint32_t)cap;
	return 0;
}

static int part_push(struct ct_part *cp, uint64_t ticks, uint64_t addr)
{
	struct ta_part_open *f;
	uint32_t parent, u;

	if (cp->depth == cp->scap && part_grow(cp) < 0)
		return -1;
	f = &cp->stack[cp->depth];
	parent = cp->depth ? cp->stack[cp->depth - 1].user : 0;
	/* The slot's last frame is the same path again, as in rec_enter. */
	u = f->user;
	if (!u || cp->n[u].key != addr || cp->n[u].parent != parent) {
		u = pnode(cp, parent, addr);
		if (!u)
			return -1;
		f->user = u;
	}
	f->addr = addr;
	f->enter = ticks;
	f->child = 0;
	if (++cp->depth > cp->used)
		cp->used = cp->depth;
	return 0;
}

/* Ends the top frame at ticks, as frame_pop_w and rec_exit would. */
static int part_pop(struct ct_part *cp, uint64_t ticks, unsigned flags)
{
	struct ta_part_open *f = &cp->stack[--cp->depth];
	struct ct_pnode *n;
	uint64_t dur;

	if (cp->depth < cp->nph) {
		/* Opened before the chunk: the session ends it. */
		if (ta_part_edge_add(&cp->edges, &cp->nedges, &cp->edges_cap, ticks, f->child,
				     flags) < 0)
			return -1;
		cp->nph = cp->depth;
		return 0;
	}
	dur = ticks > f->enter ? ticks - f->enter : 0;
	if (cp->depth)
		cp->stack[cp->depth - 1].child += dur;
	n = &cp->n[f->user];
	n->calls++;
	n->total += dur;
	n->self += dur > f->child ? dur - f->child : 0;
	return 0;
}

static int part_pops(struct ct_part *cp, uint64_t n, uint64_t ticks, unsigned flags)
{
	while (n-- && cp->depth)
		if (part_pop(cp, ticks, flags) < 0)
			return -1;
	return 0;
}

static int part_events(struct ct_part *cp, const struct ta_event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct ta_event *ev = &evs[i];

		switch (ev->kind) {
		case TA_EV_ENTER:
			cp->enters++;
			if (part_push(cp, ev->ticks, ev->addr) < 0)
				return -1;
			break;
		case TA_EV_EXIT:
			if (ev->popped) {
				if (part_pops(cp, ev->popped, ev->ticks, 0) < 0)
					return -1;
			} else {
				cp->unmatched++;
				/* As the walk's rec_partial: the stack holds the
				 * snapshot's frames too, so nothing open is the
				 * walk's nothing open. */
				if (!cp->depth) {
					uint32_t u = pnode(cp, 0, ev->addr);

					if (!u)
						return -1;
					cp->n[u].calls++;
					cp->n[u].partial++;
				}
			}
			break;
		default:
			cp->events--; /* not a function event */
			if (ev->popped &&
			    part_pops(cp, ev->popped, ev->ticks, TA_VISIT_UNWOUND) < 0)
				return -1;
			if (ev->ext == TA_EXT_LOST)
				cp->lost += ev->value;
			else if (ev->ext == TA_EXT_WAIT)
				return -1; /* a frame of the session's walk: walked */
			break;
		}
	}
	return 0;
}

static void part_build(void *part, const uint8_t *payload, size_t len)
{
	struct ct_part *cp = part;
	struct ta_decoder *d = &cp->dec;
	int rc;

	/* Slots left by the chunk before name its nodes: forget them. */
	for (uint32_t i = 0; i < cp->used && i < cp->scap; i++)
		cp->stack[i].user = 0;
	ta_htab_clear(&cp->by_child);
	cp->ok = 0;
	cp->len = 1; /* the root: the thread's node */
	if (!cp->cap && !(cp->n = calloc(cp->cap = 256, sizeof(*cp->n)))) {
		cp->cap = 0;
		return;
	}
	memset(&cp->n[0], 0, sizeof(cp->n[0]));
	cp->used = cp->depth = cp->nph = 0;
	cp->nedges = 0;
	cp->enters = cp->events = cp->unmatched = cp->lost = cp->last_ticks = 0;
	cp->have_ticks = 0;
	if (ta_decoder_begin(d, payload, len) < 0 || d->stack.overflow)
		return;
	/* The snapshot's path: nodes 1 to its depth. */
	for (uint32_t i = 0; i < d->snapshot_depth; i++)
		if (part_push(cp, 0, d->snapshot[i]) < 0)
			return;
	cp->nph = cp->depth;
	do {
		struct ta_event evs[256];
		size_t n = ta_decoder_batch(d, evs, 256, &rc);

		cp->events += n;
		if (part_events(cp, evs, n) < 0)
			return;
		if (n) {
			cp->last_ticks = evs[n - 1].ticks;
			cp->have_ticks = 1;
		}
	} while (rc == 0);
	/* A malformed chunk is walked again, which reports it. */
	cp->ok = rc > 0;
}

static int part_apply(void *ctx, struct ta_session *s, const struct ta_chunk *c,
		      struct ta_process *p, void *part)
{
	struct ta_pathrec *r = ctx;
	struct ct_part *cp = part;
	struct ta_sess_thread *t;
	struct ta_part_walk w;
	uintptr_t *map;
	int nomem, skipped;

	if (!cp->ok)
		return 0;
	t = ta_session_part_thread(s, c, p, &cp->dec, &nomem);
	if (!t)
		return nomem ? -TA_E_NOMEM : 0;
	skipped = !ta_tidset_has(r->tids, t->tid);
	/* Every frame of a recorded thread has its node (not so after a
	 * node could not be added: then the walk does what it does). */
	for (uint32_t k = 0; k < t->depth && !skipped; k++)
		if (!t->stack[k].user)
			return 0;
	if (cp->len > r->map_cap) {
		map = ta_vec_reserve(r->map, cp->len, &r->map_cap, sizeof(*map), 1024);
		if (!map)
			return -TA_E_NOMEM;
		r->map = map;
	}
	map = r->map;
	if (skipped) {
		memset(map, 0, cp->len * sizeof(*map));
	} else {
		/* The walk's first enter of the thread makes its node. */
		if ((cp->enters || cp->len > cp->dec.snapshot_depth + 1) &&
		    !(t->index < r->nth && r->th[t->index].node) && !thread_root(r, t))
			return 0; /* without memory: the walk records that */
		map[0] =
		    t->index < r->nth && r->th[t->index].node != SKIPPED ? r->th[t->index].node : 0;
		for (uint32_t k = 1; k <= cp->dec.snapshot_depth; k++)
			map[k] = t->stack[k - 1].user;
		/* New nodes in the order the walk would have added them. */
		for (uint32_t i = cp->dec.snapshot_depth + 1; i < cp->len; i++)
			map[i] = map[cp->n[i].parent]
				     ? ta_ctree_child(&r->tree, (uint32_t)map[cp->n[i].parent],
						      cp->n[i].key)
				     : 0;
		for (uint32_t i = 1; i < cp->len; i++) {
			struct ta_ctnode *n;

			if (!map[i] || !cp->n[i].calls)
				continue;
			n = &r->tree.n[map[i]];
			n->calls += cp->n[i].calls;
			n->partial += cp->n[i].partial;
			n->total += cp->n[i].total;
			n->self += cp->n[i].self;
		}
	}
	memset(&w, 0, sizeof(w));
	w.dec = &cp->dec;
	w.edges = cp->edges;
	w.nedges = cp->nedges;
	w.stack = cp->stack;
	w.nph = cp->nph;
	w.depth = cp->depth;
	w.events = cp->events;
	w.unmatched = cp->unmatched;
	w.lost = cp->lost;
	w.last_ticks = cp->last_ticks;
	w.have_ticks = cp->have_ticks;
	return ta_session_part_take(s, t, p, &w, map) < 0 ? -TA_E_NOMEM : 1;
}

static const struct ta_chunk_ops part_ops = {
    .make = part_make,
    .drop = part_drop,
    .build = part_build,
    .apply = part_apply,
};

void ta_pathrec_visitor(struct ta_pathrec *r, struct ta_visitor *v)
{
	memset(v, 0, sizeof(*v));
	v->ctx = r;
	v->enter = rec_enter;
	v->exit = rec_exit;
	v->partial = rec_partial;
	v->chunks = &part_ops;
}
