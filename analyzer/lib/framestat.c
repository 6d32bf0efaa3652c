/* SPDX-License-Identifier: MIT */
/*
 * framestat.c - per-frame numbers of the functions and zones (framestat.h).
 */
#define _GNU_SOURCE
#include "grow.h"
#include "framestat.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apiev.h"
#include "section.h"

/* ---- pass 1: the marks ------------------------------------------------------------- */

struct fs_mark {
	uint32_t pid, thread; /* thread: ta_thread.index */
	uint64_t tid, ticks, site;
	const char *name; /* set after the pass */
	int kind;	  /* MARK_*: a TA_FRAME_MARK's, a TA_FRAME_BEGIN's or END's */
};

enum { MARK_MARK, MARK_BEGIN, MARK_END };

struct pass1 {
	struct fs_mark *marks;
	size_t n, cap;
	uint64_t *first; /* per thread index: its first event's ticks + 1, 0 before */
	size_t nfirst;
	int nomem;
};

static void seen(struct pass1 *p1, const struct ta_sess_thread *t, uint64_t ticks)
{
	if (t->index >= p1->nfirst) {
		size_t n = p1->nfirst;
		uint64_t *f = ta_vec_reserve(p1->first, (size_t)t->index + 1, &n, sizeof(*f), 16);

		if (!f) {
			p1->nomem = 1;
			return;
		}
		memset(f + p1->nfirst, 0, (n - p1->nfirst) * sizeof(*f));
		p1->first = f;
		p1->nfirst = n;
	}
	if (!p1->first[t->index])
		p1->first[t->index] = ticks + 1;
}

static uintptr_t p1_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			  uint64_t addr, unsigned flags)
{
	(void)depth, (void)addr, (void)flags;
	seen(ctx, t, ticks);
	return 0;
}

static void p1_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		   const uint64_t *values, uint32_t n)
{
	struct pass1 *p1 = ctx;

	seen(p1, t, ticks);
	/* A mark without its site is damage: there is no set to put it in. */
	if ((kind != TA_EXT_FRAME && kind != TA_EXT_FRAME_BEGIN && kind != TA_EXT_FRAME_END) ||
	    n < 1)
		return;
	if (p1->n == p1->cap) {
		struct fs_mark *m = ta_vec_reserve(p1->marks, p1->n + 1, &p1->cap, sizeof(*m), 256);

		if (!m) {
			p1->nomem = 1;
			return;
		}
		p1->marks = m;
	}
	p1->marks[p1->n++] = (struct fs_mark){t->pid,
					      t->index,
					      t->tid,
					      ticks,
					      values[0],
					      NULL,
					      kind == TA_EXT_FRAME	   ? MARK_MARK
					      : kind == TA_EXT_FRAME_BEGIN ? MARK_BEGIN
									   : MARK_END};
}

static int mark_cmp(const void *a, const void *b)
{
	const struct fs_mark *x = a, *y = b;
	int c;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	/* Frames with gaps are a set of their own beside the marks'. */
	if ((x->kind != MARK_MARK) != (y->kind != MARK_MARK))
		return x->kind == MARK_MARK ? -1 : 1;
	return x->ticks < y->ticks ? -1 : x->ticks > y->ticks;
}

/* A set of frames with gaps from its BEGINs and ENDs m[0..n), in time
 * order: each frame from a BEGIN to the next END; a BEGIN while a frame
 * is open ends it there, an END without one and a frame still open at
 * the end are left out (counted in unmatched). */
static int gap_set(struct ta_framestat *fs, const struct fs_mark *m, size_t n)
{
	struct ta_fset *set, *sets;
	size_t k = 0;
	int open = 0;

	if (!(sets = ta_vec_reserve(fs->sets, fs->nsets + 1, &fs->sets_cap, sizeof(*sets), 8)))
		return -1;
	fs->sets = sets;
	set = &fs->sets[fs->nsets++];
	memset(set, 0, sizeof(*set));
	set->pid = m[0].pid;
	set->name = strdup(m[0].name);
	set->bounds = malloc((n + 1) * sizeof(*set->bounds));
	set->ends = malloc((n + 1) * sizeof(*set->ends));
	set->tid = malloc((n + 1) * sizeof(*set->tid));
	if (!set->name || !set->bounds || !set->ends || !set->tid)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (m[i].kind == MARK_BEGIN) {
			if (open) {
				set->ends[k] = m[i].ticks;
				set->tid[k++] = m[i].tid;
			}
			set->bounds[k] = m[i].ticks;
			open = 1;
		} else if (open) {
			set->ends[k] = m[i].ticks;
			set->tid[k++] = m[i].tid;
			open = 0;
		} else {
			set->unmatched++;
		}
	}
	set->unmatched += (uint64_t)open;
	set->nframes = k;
	if (!k) {
		/* No frame to show: ENDs alone. */
		free(set->name);
		free(set->bounds);
		free(set->ends);
		free(set->tid);
		fs->nsets--;
		return 0;
	}
	/* frame_at's search: the last frame's end closes the bounds. */
	set->bounds[k] = k ? set->ends[k - 1] : 0;
	return 0;
}

/* The end of frame i of set: the next frame's start, or its own end in a
 * set with gaps. */
static uint64_t frame_end(const struct ta_fset *set, size_t i)
{
	return set->ends ? set->ends[i] : set->bounds[i + 1];
}

/* The sets from the marks of p1 (named from s's sites). */
static int make_sets(struct ta_framestat *fs, struct pass1 *p1, struct ta_session *s,
		     const char *only)
{
	char(*addrname)[32] = calloc(p1->n ? p1->n : 1, sizeof(*addrname));

	if (!addrname)
		return -1;
	for (size_t i = 0; i < p1->n; i++) {
		struct fs_mark *m = &p1->marks[i];
		struct ta_process *p = ta_session_process(s, m->pid);
		const struct ta_site *site = p ? ta_process_site(p, m->site) : NULL;

		/* A site no SITES chunk described (a damaged dump) is still a
		 * set of its own, named by its address. */
		if (site && site->name)
			m->name = site->name;
		else {
			snprintf(addrname[i], sizeof(addrname[i]), "0x%" PRIx64, m->site);
			m->name = addrname[i];
		}
	}
	if (p1->n)
		qsort(p1->marks, p1->n, sizeof(*p1->marks), mark_cmp);
	for (size_t i = 0, j; i < p1->n; i = j) {
		const struct fs_mark *m = &p1->marks[i];
		struct ta_fset *set, *sets;
		uint64_t first;

		for (j = i + 1; j < p1->n && p1->marks[j].pid == m->pid &&
				!strcmp(p1->marks[j].name, m->name) &&
				(p1->marks[j].kind != MARK_MARK) == (m->kind != MARK_MARK);
		     j++)
			;
		if (only && strcmp(only, m->name))
			continue;
		if (m->kind != MARK_MARK) {
			if (gap_set(fs, p1->marks + i, j - i) < 0)
				goto nomem;
			continue;
		}
		if (!(sets =
			  ta_vec_reserve(fs->sets, fs->nsets + 1, &fs->sets_cap, sizeof(*sets), 8)))
			goto nomem;
		fs->sets = sets;
		set = &fs->sets[fs->nsets];
		memset(set, 0, sizeof(*set));
		set->pid = m->pid;
		set->nframes = j - i;
		set->name = strdup(m->name);
		set->bounds = malloc((set->nframes + 1) * sizeof(*set->bounds));
		set->tid = malloc(set->nframes * sizeof(*set->tid));
		fs->nsets++;
		if (!set->name || !set->bounds || !set->tid)
			goto nomem;
		first = m->thread < p1->nfirst && p1->first[m->thread] ? p1->first[m->thread] - 1
								       : m->ticks;
		set->bounds[0] = first < m->ticks ? first : m->ticks;
		for (size_t k = i; k < j; k++) {
			set->bounds[k - i + 1] = p1->marks[k].ticks;
			set->tid[k - i] = p1->marks[k].tid;
		}
	}
	free(addrname);
	return 0;
nomem:
	free(addrname);
	return -1;
}

/* Returns 0, or -1 when the file cannot be read at all (the view's pass
 * says why). */
static int read_marks(struct ta_framestat *fs, const char *path, const char *only)
{
	struct pass1 p1 = {0};
	/* Both note the thread's first event, and p1_ext its marks: a
	 * chunk's first enter and its EXT events are all they need, which the
	 * workers decode (-j). */
	struct ta_visitor vis = {
	    .ctx = &p1, .enter = p1_enter, .ext = p1_ext, .chunks = &ta_session_ext_chunks};
	struct ta_visitor clipped;
	struct ta_section *sec = NULL;
	struct ta_session *s;
	int rc = -1, status = 0;

	/* --section: the marks inside it only. */
	if (ta_section_wrap(&path, 1, &vis, &clipped, &sec, &status) < 0)
		return -1;
	s = ta_session_new(sec ? &clipped : &vis);
	if (s && sec)
		ta_section_session(sec, s);
	if (!s) {
		fs->nomem = 1;
		return -1;
	}
	/* Damage is told by the second pass, which reads the same bytes. */
	if (ta_session_read(s, path, NULL) < 0 && !s->chunks)
		goto out;
	ta_session_finish(s);
	if (p1.nomem || make_sets(fs, &p1, s, only) < 0)
		fs->nomem = 1;
	else
		rc = 0;
out:
	free(p1.marks);
	free(p1.first);
	ta_session_free(s);
	ta_section_free(sec);
	return rc;
}

/* ---- pass 2: the calls split over the frames ----------------------------------------- */

struct ta_fs_cell {
	uint64_t addr;
	uint32_t frame;
	uint32_t fn; /* after the pass: the merged function */
	uint64_t ticks, calls;
	uint64_t own; /* the part of ticks on the frame's thread */
};

struct fs_slot {
	uint64_t addr, seg; /* seg: where its current stretch of self time began */
	int live;
};

struct ta_fs_stack {
	struct fs_slot *slot;
	uint32_t cap;
};

static uint64_t cell_key_hash(uint64_t addr, uint32_t frame)
{
	return ((addr ^ ((uint64_t)frame << 40 | frame)) * 0x9e3779b97f4a7c15ull) >> 20;
}

static uint64_t cell_hash(const void *ctx, size_t i)
{
	const struct ta_fset *set = ctx;

	return cell_key_hash(set->cells[i].addr, set->cells[i].frame);
}

static int cell_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_fset *set = ctx;
	const struct ta_fs_cell *k = key;

	return set->cells[i].addr == k->addr && set->cells[i].frame == k->frame;
}

static void cell_add(struct ta_framestat *fs, struct ta_fset *set, uint64_t addr, size_t frame,
		     uint64_t ticks, uint64_t own, uint64_t calls)
{
	struct ta_fs_cell key = {.addr = addr, .frame = (uint32_t)frame};
	size_t k;
	uint32_t at;

	if (ta_htab_reserve(&set->by_cell, set->ncells, 256, cell_hash, set) < 0) {
		fs->nomem = 1;
		return;
	}
	k = ta_htab_find(&set->by_cell, cell_key_hash(addr, key.frame), cell_is, set, &key);
	if (!(at = ta_htab_at(&set->by_cell, k))) {
		if (set->ncells == set->cells_cap) {
			struct ta_fs_cell *c = ta_vec_reserve(set->cells, set->ncells + 1,
							      &set->cells_cap, sizeof(*c), 256);

			if (!c) {
				fs->nomem = 1;
				return;
			}
			set->cells = c;
		}
		set->cells[set->ncells] = key;
		ta_htab_put(&set->by_cell, k, set->ncells);
		at = (uint32_t)++set->ncells;
	}
	set->cells[at - 1].ticks += ticks;
	set->cells[at - 1].own += own;
	set->cells[at - 1].calls += calls;
}

/* The frame holding ticks: the last i with bounds[i] <= ticks (0 before
 * the first frame, nframes after the last). */
static size_t frame_at(const struct ta_fset *set, uint64_t ticks)
{
	size_t lo = 0, hi = set->nframes + 1;

	if (ticks < set->bounds[0])
		return SIZE_MAX;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (set->bounds[mid] <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Self time [a, b) of addr on thread t, split over the frames of its
 * process's sets (and its own part: in the frames t marked). */
static void self_time(struct ta_framestat *fs, const struct ta_sess_thread *t, uint64_t addr,
		      uint64_t a, uint64_t b)
{
	uint32_t pid = t->pid;

	if (b <= a)
		return;
	for (size_t k = 0; k < fs->nsets; k++) {
		struct ta_fset *set = &fs->sets[k];
		size_t i = frame_at(set, a);

		if (set->pid != pid)
			continue;
		if (i == SIZE_MAX)
			i = 0;
		for (; i < set->nframes && set->bounds[i] < b; i++) {
			uint64_t lo = a > set->bounds[i] ? a : set->bounds[i];
			uint64_t hi = b < frame_end(set, i) ? b : frame_end(set, i);

			if (hi > lo)
				cell_add(fs, set, addr, i, hi - lo,
					 set->tid[i] == t->tid ? hi - lo : 0, 0);
		}
	}
}

static struct fs_slot *slot_at(struct ta_framestat *fs, const struct ta_sess_thread *t,
			       uint32_t depth)
{
	struct ta_fs_stack *st;

	if (t->index >= fs->nstacks) {
		size_t n = fs->nstacks;
		struct ta_fs_stack *s =
		    ta_vec_reserve(fs->stacks, (size_t)t->index + 1, &n, sizeof(*s), 16);

		if (!s)
			return NULL;
		memset(s + fs->nstacks, 0, (n - fs->nstacks) * sizeof(*s));
		fs->stacks = s;
		fs->nstacks = n;
	}
	st = &fs->stacks[t->index];
	if (depth >= st->cap) {
		size_t cap = st->cap;
		struct fs_slot *s = ta_vec_reserve_max(st->slot, (size_t)depth + 1, &cap,
						       sizeof(*s), 64, UINT32_MAX);

		if (!s)
			return NULL;
		memset(s + st->cap, 0, (cap - st->cap) * sizeof(*s));
		st->slot = s;
		st->cap = (uint32_t)cap;
	}
	return &st->slot[depth];
}

static uintptr_t p2_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			  uint64_t addr, unsigned flags)
{
	struct ta_framestat *fs = ctx;
	struct fs_slot *s = slot_at(fs, t, depth), *parent;

	(void)flags;
	if (!s) {
		fs->nomem = 1;
		return 0;
	}
	/* The caller's self time stops here (s - 1 is there: slot_at made
	 * room up to depth). */
	parent = depth ? s - 1 : NULL;
	if (parent && parent->live)
		self_time(fs, t, parent->addr, parent->seg, ticks);
	*s = (struct fs_slot){addr, ticks, 1};
	for (size_t k = 0; k < fs->nsets; k++) {
		struct ta_fset *set = &fs->sets[k];
		size_t i;

		if (set->pid == t->pid && (i = frame_at(set, ticks)) < set->nframes &&
		    ticks < frame_end(set, i))
			cell_add(fs, set, addr, i, 0, 0, 1);
	}
	return 0;
}

static void p2_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_framestat *fs = ctx;
	struct ta_fs_stack *st = t->index < fs->nstacks ? &fs->stacks[t->index] : NULL;
	struct fs_slot *s;

	/* Frames entered before a fork were never visited here. */
	if (!st || x->depth >= st->cap)
		return;
	s = &st->slot[x->depth];
	if (s->live && s->addr == x->addr)
		self_time(fs, t, x->addr, s->seg, x->exit);
	s->live = 0;
	/* The caller's self time goes on from here. */
	if (x->depth && s[-1].live)
		s[-1].seg = x->exit;
}

/* ---- after the passes: per function, in ns ------------------------------------------ */

uint64_t ta_fs_rank(const uint64_t *sorted, size_t nsorted, size_t nzero, unsigned q)
{
	size_t n = nsorted + nzero, r;

	if (!n)
		return 0;
	r = (n * q + 99) / 100;
	if (r < 1)
		r = 1;
	return r <= nzero ? 0 : sorted[r - nzero - 1];
}

int ta_fs_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cell_cmp(const void *a, const void *b)
{
	const struct ta_fs_cell *x = a, *y = b;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static uint64_t name_hash(const struct ta_fn *id)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = id->name; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	for (const char *p = id->module; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return (h * 0x9e3779b97f4a7c15ull) >> 20;
}

static uint64_t fn_hash(const void *ctx, size_t i)
{
	const struct ta_fset *set = ctx;

	return name_hash(&set->fns[i].id);
}

static int fn_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_fset *set = ctx;
	const struct ta_fn *k = key;

	return !strcmp(set->fns[i].id.name, k->name) && !strcmp(set->fns[i].id.module, k->module);
}

/* A keep dump's cells: those of the frames kept, renumbered by map (frame
 * as marked -> kept frame, UINT32_MAX: let go). */
static void keep_cells(struct ta_fset *set, const uint32_t *map)
{
	size_t k = 0;

	for (size_t c = 0; c < set->ncells; c++) {
		uint32_t f = set->cells[c].frame;

		if (f < set->nmarked && map[f] != UINT32_MAX) {
			set->cells[k] = set->cells[c];
			set->cells[k++].frame = map[f];
		}
	}
	set->ncells = k;
}

/* Names the cells' functions, merges them by name and module, and turns
 * them into each function's frames in ns. */
static int finish_set(struct ta_fset *set, struct ta_view *v, int64_t dump_start)
{
	struct ta_process *p = ta_session_process(v->s, set->pid);
	struct ta_htab by_fn = {0};
	uint64_t *tmp = NULL;
	uint32_t *map = NULL;
	int rc = -1;

	set->start_ns = malloc((set->nframes ? set->nframes : 1) * sizeof(*set->start_ns));
	set->dur_ns = malloc((set->nframes ? set->nframes : 1) * sizeof(*set->dur_ns));
	if (!set->start_ns || !set->dur_ns)
		return -1;
	set->nmarked = set->nframes;
	/* A keep dump: every set's frames are those inside a window, the
	 * judged set's (marks' or with gaps) and the others' alike. */
	set->keep = p && p->keep;
	if (set->keep && !(map = malloc((set->nmarked ? set->nmarked : 1) * sizeof(*map))))
		return -1;
	for (size_t i = 0, n = 0; i < set->nmarked; i++) {
		uint64_t a = set->bounds[i], b = frame_end(set, i);

		/* A keep dump: a frame with a gap in it was let go. */
		if (map && !ta_keep_kept(p->keep, a, b)) {
			map[i] = UINT32_MAX;
			set->nframes = n;
			continue;
		}
		if (map)
			map[i] = (uint32_t)n;
		set->tid[n] = set->tid[i];
		set->start_ns[n] = p ? ta_process_ticks_ns(p, a) - dump_start : (int64_t)a;
		set->dur_ns[n] = p ? ta_process_dur_ns(p, b - a) : b - a;
		set->nframes = ++n;
	}
	if (map) {
		keep_cells(set, map);
		free(map);
	}
	if (set->ncells && !(set->fns = calloc(set->ncells, sizeof(*set->fns))))
		return -1;
	for (size_t i = 0; i < set->ncells; i++) {
		struct ta_fs_cell *c = &set->cells[i];
		struct ta_fn id;
		size_t k;
		uint32_t at;

		ta_view_name(v, set->pid, c->addr, &id);
		if (ta_htab_reserve(&by_fn, set->nfns, 256, fn_hash, set) < 0)
			goto out;
		k = ta_htab_find(&by_fn, name_hash(&id), fn_is, set, &id);
		if (!(at = ta_htab_at(&by_fn, k))) {
			set->fns[set->nfns].id = id;
			ta_htab_put(&by_fn, k, set->nfns);
			at = (uint32_t)++set->nfns;
		}
		c->fn = at - 1;
		c->ticks = p ? ta_process_dur_ns(p, c->ticks) : c->ticks;
		c->own = p ? ta_process_dur_ns(p, c->own) : c->own;
	}
	if (set->ncells)
		qsort(set->cells, set->ncells, sizeof(*set->cells), cell_cmp);
	if (set->ncells && (!(set->vals = malloc(set->ncells * sizeof(*set->vals))) ||
			    !(tmp = malloc(set->ncells * sizeof(*tmp)))))
		goto out;
	for (size_t i = 0, nv = 0; i < set->ncells;) {
		struct ta_fs_row *f = &set->fns[set->cells[i].fn];

		f->v = &set->vals[nv];
		for (; i < set->ncells && &set->fns[set->cells[i].fn] == f; i++) {
			const struct ta_fs_cell *c = &set->cells[i];

			/* Addresses merged by name: one value per frame. */
			if (f->n && f->v[f->n - 1].frame == c->frame) {
				f->v[f->n - 1].self_ns += c->ticks;
				f->v[f->n - 1].own_ns += c->own;
				f->v[f->n - 1].calls += c->calls;
			} else {
				f->v[f->n++] =
				    (struct ta_fs_val){c->frame, c->ticks, c->calls, c->own};
				nv++;
			}
		}
		for (size_t k = 0; k < f->n; k++) {
			tmp[k] = f->v[k].self_ns;
			f->calls += f->v[k].calls;
			f->self_sum_ns += f->v[k].self_ns;
			if (f->v[k].calls > f->calls_max)
				f->calls_max = f->v[k].calls;
		}
		qsort(tmp, f->n, sizeof(*tmp), ta_fs_u64_cmp);
		f->self_p50_ns = ta_fs_rank(tmp, f->n, set->nframes - f->n, 50);
		f->self_p99_ns = ta_fs_rank(tmp, f->n, set->nframes - f->n, 99);
		f->self_max_ns = f->n ? tmp[f->n - 1] : 0;
		for (size_t k = 0; k < f->n; k++)
			tmp[k] = f->v[k].own_ns;
		qsort(tmp, f->n, sizeof(*tmp), ta_fs_u64_cmp);
		f->own_p50_ns = ta_fs_rank(tmp, f->n, set->nframes - f->n, 50);
	}
	rc = 0;
out:
	free(tmp);
	ta_htab_free(&by_fn);
	return rc;
}

int ta_framestat_read(struct ta_framestat *fs, struct ta_view *v, const char *path,
		      const char *only)
{
	struct ta_visitor vis = {.ctx = fs, .enter = p2_enter, .exit = p2_exit};
	struct stat st;
	int64_t start;

	memset(fs, 0, sizeof(*fs));
	/* A pipe could not be read a second time. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr,
			"traceagent: %s: not a regular file (frames are read in two passes)\n",
			path);
		v->status = 2;
		return -1;
	}
	if (read_marks(fs, path, only) < 0 && fs->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		v->status = 1;
		return -1;
	}
	if (ta_view_open(v, path, &vis) < 0)
		return -1;
	start = ta_session_start_ns(v->s);
	for (size_t k = 0; k < fs->nsets && !fs->nomem; k++)
		if (finish_set(&fs->sets[k], v, start) < 0)
			fs->nomem = 1;
	if (fs->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		v->status = 1;
		return -1;
	}
	return 0;
}

void ta_framestat_free(struct ta_framestat *fs)
{
	for (size_t k = 0; k < fs->nsets; k++) {
		struct ta_fset *set = &fs->sets[k];

		free(set->name);
		free(set->bounds);
		free(set->ends);
		free(set->tid);
		free(set->start_ns);
		free(set->dur_ns);
		free(set->fns);
		free(set->vals);
		free(set->cells);
		ta_htab_free(&set->by_cell);
	}
	free(fs->sets);
	for (size_t i = 0; i < fs->nstacks; i++)
		free(fs->stacks[i].slot);
	free(fs->stacks);
	memset(fs, 0, sizeof(*fs));
}

const struct ta_fset *ta_framestat_default(const struct ta_framestat *fs)
{
	for (size_t k = 0; k < fs->nsets; k++)
		if (!strcmp(fs->sets[k].name, "frame"))
			return &fs->sets[k];
	return fs->nsets ? &fs->sets[0] : NULL;
}
