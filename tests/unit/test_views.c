/* SPDX-License-Identifier: MIT */
/*
 * test_views.c - the call-path tree under graph, folded and flame
 * (analyzer/lib/calltree.c): the tree against a naive model under random
 * insertions (wide nodes included), its walk and sort, and trees named
 * from synthetic dumps, merged, split per thread, by one thread, with two
 * addresses of one function and with a node of many children.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "dumpgen.h"
#include "testutil.h"

__attribute__((noinline, noclone, used)) static int views_fn_a(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline, noclone, used)) static int views_fn_b(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

__attribute__((noinline, noclone, used)) static int views_fn_c(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 3;
}

static char self_path[4096];
static uint64_t bias, fa, fb, fc;

static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bias = info->dlpi_addr;
	return 1;
}

static void setup(void)
{
	int (*volatile f)(int);
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	ck_assert_int_gt(n, 0);
	self_path[n] = 0;
	dl_iterate_phdr(bias_cb, NULL);
	f = views_fn_a;
	fa = (uint64_t)(uintptr_t)f;
	f = views_fn_b;
	fb = (uint64_t)(uintptr_t)f;
	f = views_fn_c;
	fc = (uint64_t)(uintptr_t)f;
}

/* ---- the tree itself ------------------------------------------------------------ */

struct walk_log {
	const struct ta_ctree *t;
	uint32_t *seen; /* visits per node */
	uint32_t *depth;
	uint32_t n, closes;
	int bad;
};

static int log_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct walk_log *w = ctx;

	w->seen[n]++;
	w->depth[n] = depth;
	w->n++;
	/* Preorder: the parent is open, one level up. */
	if (n && w->depth[w->t->n[n].parent] + 1 != depth)
		w->bad = 1;
	return 1;
}

static void log_close(void *ctx, uint32_t n, uint32_t depth)
{
	struct walk_log *w = ctx;

	if (w->depth[n] != depth)
		w->bad = 1;
	w->closes++;
}

static int key_cmp(const void *a, const void *b, void *ctx)
{
	const struct ta_ctnode *x = a, *y = b;

	(void)ctx;
	return x->key < y->key ? -1 : x->key > y->key;
}

START_TEST(tree_against_model)
{
	struct rng r = {test_seed("tree_against_model")};
	enum { N = 6000 };
	struct ta_ctree t;
	/* The model: (parent, key) of each node, found by a linear search. */
	uint32_t *mp = calloc(N + 1, sizeof(*mp));
	uint64_t *mk = calloc(N + 1, sizeof(*mk));
	uint32_t len = 1;
	struct walk_log w;

	ck_assert_int_eq(ta_ctree_init(&t), 0);
	for (int i = 0; i < 3 * N && len <= N - 1; i++) {
		/* A few parents get most children, so some are wide. */
		uint32_t parent = rng_below(&r, 4) ? (uint32_t)rng_below(&r, len < 8 ? len : 8)
						   : (uint32_t)rng_below(&r, len);
		uint64_t key = rng_below(&r, 3) ? rng_below(&r, 40) : rng_next(&r);
		uint32_t want = 0, got = ta_ctree_child(&t, parent, key);

		for (uint32_t k = 1; k < len; k++)
			if (mp[k] == parent && mk[k] == key)
				want = k;
		if (!want) {
			want = len++;
			mp[want] = parent;
			mk[want] = key;
		}
		REQUIRE(got == want, "child %llu of %u: node %u, want %u", (unsigned long long)key,
			parent, got, want);
	}
	ck_assert_uint_eq(t.len, len);
	ck_assert_int_eq(t.nomem, 0);
	ck_assert_uint_gt(t.nhashed, 0); /* wide nodes were hashed */

	memset(&w, 0, sizeof(w));
	w.t = &t;
	w.seen = calloc(len, sizeof(*w.seen));
	w.depth = calloc(len, sizeof(*w.depth));
	ta_ctree_walk(&t, 0, log_open, log_close, &w);
	ck_assert_uint_eq(w.n, len);
	ck_assert_uint_eq(w.closes, len);
	ck_assert_int_eq(w.bad, 0);
	for (uint32_t k = 0; k < len; k++)
		REQUIRE(w.seen[k] == 1, "node %u seen %u times", k, w.seen[k]);

	/* Sorted, every node's children come in key order, and lookups still
	 * find them. */
	ck_assert_int_eq(ta_ctree_sort(&t, key_cmp, NULL), 0);
	for (uint32_t k = 0; k < len; k++) {
		uint32_t c = t.n[k].child, count = 0;

		for (; c; c = t.n[c].next, count++)
			REQUIRE(!t.n[c].next || t.n[t.n[c].next].key > t.n[c].key, "order under %u",
				k);
		REQUIRE(count == t.n[k].nchild, "children of %u", k);
	}
	for (uint32_t k = 1; k < len; k++)
		REQUIRE(ta_ctree_child(&t, mp[k], mk[k]) == k, "lookup of %u after sorting", k);
	ck_assert_uint_eq(t.len, len);
	free(w.seen);
	free(w.depth);
	free(mp);
	free(mk);
	ta_ctree_free(&t);
}
END_TEST

static int skip_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct walk_log *w = ctx;

	w->seen[n]++;
	return depth < 1; /* below the first level: nothing */
}

START_TEST(walk_skips_and_subtrees)
{
	struct ta_ctree t;
	struct walk_log w;
	uint32_t a, b, c, d;
	uint32_t seen[8] = {0}, depth[8] = {0};

	ck_assert_int_eq(ta_ctree_init(&t), 0);
	a = ta_ctree_child(&t, 0, 1);
	b = ta_ctree_child(&t, a, 2);
	c = ta_ctree_child(&t, b, 3);
	d = ta_ctree_child(&t, 0, 4);
	ck_assert_uint_eq(ta_ctree_child(&t, a, 2), b);
	memset(&w, 0, sizeof(w));
	w.t = &t;
	w.seen = seen;
	w.depth = depth;
	ta_ctree_walk(&t, 0, skip_open, NULL, &w);
	ck_assert_uint_eq(seen[0], 1);
	ck_assert_uint_eq(seen[a], 1);
	ck_assert_uint_eq(seen[d], 1);
	ck_assert_uint_eq(seen[b] + seen[c], 0);
	/* A subtree alone: its top at depth 0, nothing beside it. */
	memset(seen, 0, sizeof(seen));
	ta_ctree_walk(&t, b, log_open, log_close, &w);
	ck_assert_uint_eq(seen[b] + seen[c], 2);
	ck_assert_uint_eq(seen[0] + seen[a] + seen[d], 0);
	ck_assert_uint_eq(depth[c], 1);
	ta_ctree_free(&t);
}
END_TEST

START_TEST(tidsets_and_spaces)
{
	struct ta_tidset ts = {0};
	struct ta_spaces sp = {0};

	ck_assert(ta_tidset_has(&ts, 5));
	ck_assert_int_eq(ta_tidset_parse(&ts, "12,7"), 0);
	ck_assert_int_eq(ta_tidset_parse(&ts, "99"), 0);
	ck_assert_uint_eq(ts.n, 3);
	ck_assert(ta_tidset_has(&ts, 7) && ta_tidset_has(&ts, 12) && ta_tidset_has(&ts, 99));
	ck_assert(!ta_tidset_has(&ts, 1));
	ta_tidset_free(&ts);
	for (const char *bad = "", **p = (const char *[]){"", ",", "1,", ",1", "1,,2", "x", "-1",
							  "1 ", "99999999999999999999", NULL};
	     (bad = *p); p++) {
		ck_assert_msg(ta_tidset_parse(&ts, bad) < 0, "'%s' taken", bad);
		ta_tidset_free(&ts);
	}
	ck_assert_str_eq(ta_spaces(&sp, 3), "   ");
	ck_assert_str_eq(ta_spaces(&sp, 0), "");
	ck_assert_uint_eq(strlen(ta_spaces(&sp, 300)), 300);
	ck_assert_str_eq(ta_spaces(&sp, 1), " ");
	ck_assert_uint_eq(strlen(ta_spaces(&sp, 299)), 299);
	ta_spaces_free(&sp);
}
END_TEST

/* ---- trees of dumps ----------------------------------------------------------------- */

static void ev(struct ta_encoder *e, uint64_t t, uint64_t addr, int is_exit)
{
	REQUIRE(ta_encoder_event(e, t, addr, is_exit) == 0, "event");
}

/* Events of thread tid, from a compact script: "a(" enters, ")" exits,
 * one tick apart, addresses by letter. */
static void thread_events(struct dumpgen *g, uint64_t tid, uint64_t t0, const char *script,
			  const uint64_t *addr)
{
	struct ta_encoder e;
	uint64_t t = t0;
	uint64_t stack[64];
	int depth = 0;

	ta_encoder_init(&e, tid);
	ta_encoder_begin(&e, t0);
	for (const char *p = script; *p; p++) {
		if (*p >= 'a' && *p <= 'z') {
			stack[depth++] = addr[*p - 'a'];
			ev(&e, t, addr[*p - 'a'], 0);
			t += 10;
		} else if (*p == ')') {
			ev(&e, t, stack[--depth], 1);
			t += 10;
		} else if (*p == '|') {
			/* A new chunk, whose snapshot is the stack here. */
			dg_events(g, &e);
			ta_encoder_begin(&e, t);
		}
	}
	dg_events(g, &e);
	ta_encoder_free(&e);
}

/* A dump of this executable's functions, times in ns. */
static void dump_of(char *path, const char *main_script, const char *worker_script,
		    const uint64_t *addr)
{
	struct dumpgen g;

	dg_init(&g, 300);
	dg_process(&g, 50, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(&g, 30, 60, "main");
	thread_events(&g, 30, 100, main_script, addr);
	if (worker_script) {
		dg_thread_start(&g, 31, 60, "worker");
		thread_events(&g, 31, 1000, worker_script, addr);
	}
	dg_write_tmp(&g, path);
	dg_free(&g);
}

/* The tree as text: "name:calls:total:self" in preorder, children in
 * brackets. */
struct show {
	const struct ta_calltree *ct;
	char buf[4096];
	size_t len;
};

static int show_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct show *s = ctx;
	const struct ta_ctnode *node = &s->ct->tree.n[n];
	char lb[64];

	if (!depth)
		return 1;
	s->len += (size_t)snprintf(s->buf + s->len, sizeof(s->buf) - s->len, "%s%s:%llu:%llu:%llu",
				   s->ct->tree.n[node->parent].child == n ? "" : " ",
				   ta_calltree_label(s->ct, node->key, lb, sizeof(lb)),
				   (unsigned long long)node->calls, (unsigned long long)node->total,
				   (unsigned long long)node->self);
	if (node->child)
		s->len += (size_t)snprintf(s->buf + s->len, sizeof(s->buf) - s->len, "[");
	return 1;
}

static void show_close(void *ctx, uint32_t n, uint32_t depth)
{
	struct show *s = ctx;

	if (depth && s->ct->tree.n[n].child)
		s->len += (size_t)snprintf(s->buf + s->len, sizeof(s->buf) - s->len, "]");
}

/* EVENTS chunks the last tree_text took from the workers (-j). */
static uint64_t parts_taken;

static const char *tree_text(const char *path, const char *tids, int split)
{
	static struct show s;
	struct ta_treeview tv;
	struct ta_tidset ts = {0};

	if (tids)
		ck_assert_int_eq(ta_tidset_parse(&ts, tids), 0);
	ck_assert_int_eq(ta_treeview_open(&tv, path, &ts, split), 0);
	parts_taken = tv.v.s->parts_taken;
	memset(&s, 0, sizeof(s));
	s.ct = &tv.ct;
	ta_ctree_walk(&tv.ct.tree, 0, show_open, show_close, &s);
	ta_treeview_close(&tv);
	ta_tidset_free(&ts);
	return s.buf;
}

START_TEST(named_trees)
{
	char path[64];
	uint64_t addr[3];

	setup();
	addr[0] = fa;
	addr[1] = fb;
	addr[2] = fc;
	/* main: a(100..) { b { c } b { c } c }; worker: a { c } c. */
	dump_of(path, "a(b(c))b(c))c))", "a(c))c)", addr);
	/* Merged by path: a's two calls, b's under a, c under b and under a. */
	ck_assert_str_eq(tree_text(path, NULL, 0),
			 "views_fn_a:2:140:60[views_fn_b:2:60:40[views_fn_c:2:20:20] "
			 "views_fn_c:2:20:20] views_fn_c:1:10:10");
	ck_assert_str_eq(tree_text(path, NULL, 1),
			 "thread 30 (main):1:110:0[views_fn_a:1:110:40[views_fn_b:2:60:40["
			 "views_fn_c:2:20:20] views_fn_c:1:10:10]] "
			 "thread 31 (worker):2:40:0[views_fn_a:1:30:20[views_fn_c:1:10:10] "
			 "views_fn_c:1:10:10]");
	/* One thread: named in place, the same numbers. */
	ck_assert_str_eq(tree_text(path, "31", 0),
			 "views_fn_a:1:30:20[views_fn_c:1:10:10] views_fn_c:1:10:10");
	ck_assert_str_eq(tree_text(path, "30", 0),
			 "views_fn_a:1:110:40[views_fn_b:2:60:40[views_fn_c:2:20:20] "
			 "views_fn_c:1:10:10]");
	unlink(path);
}
END_TEST

START_TEST(two_addresses_one_function)
{
	char path[64];
	uint64_t addr[3];

	setup();
	/* Two addresses inside views_fn_b: siblings that must merge. */
	addr[0] = fa;
	addr[1] = fb;
	addr[2] = fb + 1;
	dump_of(path, "a(b)c)b))", NULL, addr);
	ck_assert_str_eq(tree_text(path, NULL, 0), "views_fn_a:1:70:40[views_fn_b:3:30:30]");
	ck_assert_str_eq(tree_text(path, NULL, 1),
			 "thread 30 (main):1:70:0[views_fn_a:1:70:40[views_fn_b:3:30:30]]");
	unlink(path);
}
END_TEST

START_TEST(wide_node)
{
	char path[64], script[512], want[4096];
	uint64_t addr[26];
	size_t n = 0, w = 0;

	setup();
	/* a calls 25 functions outside every module (named by address),
	 * three rounds: one wide node, found by hash and by the hint. */
	addr[0] = fa;
	for (int i = 1; i < 26; i++)
		addr[i] = 0x1000 + (uint64_t)i * 16;
	script[n++] = 'a';
	script[n++] = '(';
	for (int round = 0; round < 3; round++)
		for (int i = 1; i < 26; i++) {
			script[n++] = (char)('a' + i);
			script[n++] = '(';
			script[n++] = ')';
		}
	script[n++] = ')';
	script[n] = 0;
	dump_of(path, script, NULL, addr);
	w += (size_t)snprintf(want, sizeof(want), "views_fn_a:1:1510:760[");
	/* Equal totals: children by name. */
	for (int i = 1; i < 26; i++)
		w += (size_t)snprintf(want + w, sizeof(want) - w, "%s0x%x:3:30:30",
				      i > 1 ? " " : "", 0x1000 + i * 16);
	snprintf(want + w, sizeof(want) - w, "]");
	ck_assert_str_eq(tree_text(path, NULL, 0), want);
	unlink(path);
}
END_TEST

START_TEST(two_processes)
{
	struct dumpgen g;
	char path[64];
	uint64_t addr[3];

	setup();
	addr[0] = fa;
	addr[1] = fb;
	addr[2] = fc;
	/* A parent and its forked child in one dump: the same functions at
	 * the same addresses, in two address spaces. */
	dg_init(&g, 300);
	dg_process(&g, 50, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(&g, 30, 60, "parent");
	thread_events(&g, 30, 100, "a(b))", addr);
	g.pid = 301;
	dg_process(&g, 70, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(&g, 40, 80, "child");
	thread_events(&g, 40, 200, "a(c)c))", addr);
	dg_write_tmp(&g, path);
	dg_free(&g);
	ck_assert_str_eq(tree_text(path, NULL, 0),
			 "views_fn_a:2:80:50[views_fn_c:2:20:20 views_fn_b:1:10:10]");
	ck_assert_str_eq(tree_text(path, NULL, 1),
			 "thread 40 (child):1:50:0[views_fn_a:1:50:30[views_fn_c:2:20:20]] "
			 "thread 30 (parent):1:30:0[views_fn_a:1:30:20[views_fn_b:1:10:10]]");
	ck_assert_str_eq(tree_text(path, "40", 0), "views_fn_a:1:50:30[views_fn_c:2:20:20]");
	unlink(path);
}
END_TEST

START_TEST(chunks_in_workers)
{
	/* Chunks cut inside calls, with a worker (-j2): each chunk recorded
	 * on its own from its snapshot and grafted in order gives the tree of
	 * one thread's walk, node for node and sum for sum, with the thread
	 * left out by --tid too; and the workers' parts were taken. */
	static const char *const mains[] = {"a(b(c)|c)|)b(|c(|)|)a(b(c))", "|a(|b(c(|)c)|)|)a()"};
	static const char *const workers[] = {"b(a(|c)c(|))|b(a)", "c(|c(|c(|)|)|)"};
	static const struct {
		const char *tids;
		int split;
	} views[] = {{NULL, 0}, {NULL, 1}, {"31", 0}, {"30", 1}};
	uint64_t addr[3];
	char path[64];

	setup();
	addr[0] = fa;
	addr[1] = fb;
	addr[2] = fc;
	for (size_t d = 0; d < 2; d++) {
		dump_of(path, mains[d], workers[d], addr);
		for (size_t v = 0; v < sizeof(views) / sizeof(views[0]); v++) {
			char one[4096];

			ta_session_jobs = 1;
			snprintf(one, sizeof(one), "%s",
				 tree_text(path, views[v].tids, views[v].split));
			ck_assert_uint_eq(parts_taken, 0);
			ck_assert_str_ne(one, "");
			for (unsigned j = 2; j <= 4; j += 2) {
				ta_session_jobs = j;
				ck_assert_str_eq(tree_text(path, views[v].tids, views[v].split),
						 one);
				/* Every EVENTS chunk: none is walked again here. */
				ck_assert_uint_eq(parts_taken, d == 0 ? 10 : 12);
			}
		}
		unlink(path);
	}
	ta_session_jobs = 1;
}
END_TEST

/* An enter that notes each thread's first event, as frames' first pass. */
static uintptr_t first_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			     uint64_t addr, unsigned flags)
{
	uint64_t *first = ctx;

	(void)depth, (void)addr, (void)flags;
	if (t->index < 4 && !first[t->index])
		first[t->index] = ticks + 1;
	return 0;
}

START_TEST(ext_chunks_in_workers)
{
	/* ta_session_ext_chunks: the chunks are taken from the workers, the
	 * threads' stacks and counts are the walk's, the first enter is seen. */
	uint64_t addr[3], first[2][4], events[2], depth[2];
	char path[64];

	setup();
	addr[0] = fa;
	addr[1] = fb;
	addr[2] = fc;
	dump_of(path, "a(b(c)|c)|)b(|c(|)|)a(b(c", "|b(a(|c)c(|))|b(a)", addr);
	for (unsigned j = 1; j <= 2; j++) {
		struct ta_visitor vis = {
		    .ctx = first[j - 1], .enter = first_enter, .chunks = &ta_session_ext_chunks};
		struct ta_session *s = ta_session_new(&vis);

		memset(first[j - 1], 0, sizeof(first[j - 1]));
		ta_session_jobs = j;
		ck_assert_ptr_nonnull(s);
		ck_assert_int_eq(ta_session_read(s, path, NULL), 0);
		ck_assert_uint_eq(s->parts_taken, j == 1 ? 0 : 11);
		ck_assert_uint_eq(s->nthreads, 2);
		events[j - 1] = s->threads[0]->events + s->threads[1]->events;
		depth[j - 1] = s->threads[0]->depth * 100 + s->threads[1]->depth;
		ta_session_free(s);
	}
	ta_session_jobs = 1;
	ck_assert_uint_eq(events[0], events[1]);
	ck_assert_uint_eq(depth[0], 402); /* 4 frames left open on main, 2 on the worker */
	ck_assert_uint_eq(depth[1], 402);
	ck_assert_mem_eq(first[0], first[1], sizeof(first[0]));
	ck_assert_uint_eq(first[0][0], 101);
	ck_assert_uint_eq(first[0][1], 1001);
	unlink(path);
}
END_TEST

static Suite *views_suite(void)
{
	Suite *s = suite_create("views");
	TCase *tc = tcase_create("calltree");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tree_against_model);
	tcase_add_test(tc, walk_skips_and_subtrees);
	tcase_add_test(tc, tidsets_and_spaces);
	tcase_add_test(tc, named_trees);
	tcase_add_test(tc, two_addresses_one_function);
	tcase_add_test(tc, wide_node);
	tcase_add_test(tc, two_processes);
	tcase_add_test(tc, chunks_in_workers);
	tcase_add_test(tc, ext_chunks_in_workers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(views_suite());
}
