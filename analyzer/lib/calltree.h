/* SPDX-License-Identifier: MIT */
/*
 * calltree.h - calls aggregated by call path, shared by `graph`, folded
 * stacks (`export --format=folded`) and `flame`.
 *
 * While the session walks the events, a path recorder adds each call to
 * the node of its call path: (parent node, function address), under one
 * node per thread.  Memory grows with the number of distinct paths, never
 * with the number of events: a call found on a path seen before only adds
 * to that node's sums.  After the walk the recorded tree is named: addresses
 * become functions (module and offset, as report merges them), ticks become
 * nanoseconds, and the threads merge into one tree unless asked to stay
 * apart.
 */
#ifndef TA_CALLTREE_H
#define TA_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "srcline.h"

/* ---- sets of thread ids (--tid) ------------------------------------------------ */

struct ta_tidset {
	uint64_t *v;
	size_t n, cap;
};

/* Adds the comma-separated decimal tids of s.  Returns 0, or -1 when s is
 * not such a list (or without memory). */
int ta_tidset_parse(struct ta_tidset *ts, const char *s);
/* 1 when the set is empty (no filter) or holds tid. */
int ta_tidset_has(const struct ta_tidset *ts, uint64_t tid);
void ta_tidset_free(struct ta_tidset *ts);

/* Warns about each tid of the set that no thread of the view has. */
void ta_tidset_warn(const struct ta_tidset *ts, const struct ta_view *v);

/* ---- indentation ----------------------------------------------------------------- */

struct ta_spaces {
	char *s;
	size_t cap, at;
};

/* A string of n spaces, valid until the next call ("" without memory). */
const char *ta_spaces(struct ta_spaces *sp, size_t n);
void ta_spaces_free(struct ta_spaces *sp);

/* ---- functions by identity ------------------------------------------------------- */

/* A function of the index: its record, and what the tree adds to it. */
struct ta_ct_entry {
	struct ta_fn id; /* as ta_view_name gives it; srcline once
			    ta_fn_index_srclines ran */
	uint32_t addrs;	 /* (pid, address) pairs that name it */
	/* base is the entry's own id for a function.  Else the entry stands
	 * for a run of repeat nested calls of function base, each calling
	 * the next (a deep recursion), named "NAME [xREPEAT]"; or base is
	 * UINT32_MAX and it stands for the calls cut at TA_DEPTH_MAX
	 * (ta_calltree_collapse). */
	uint32_t repeat, base;
};

/* A (pid, address) pair the index has seen, and its function's id. */
struct ta_pidaddr {
	uint64_t addr;
	uint32_t pid;
	uint32_t id;
};

/*
 * Numbers the functions of a view: every (pid, address) pair gets the id of
 * its function, and pairs naming the same function (the same module and
 * offset, as in a forked child) share it.  Names come from ta_view_name and
 * live as long as the view.
 */
struct ta_fn_index {
	struct ta_view *v;
	struct ta_ct_entry *fn; /* by id */
	uint32_t n, cap;
	struct ta_pidaddr *addrs; /* in the order they were seen */
	size_t naddr, addrs_cap;
	struct ta_htab by_addr; /* addrs by (pid, addr) */
	struct ta_htab by_fn;	/* ids by (module, offset) */
};

void ta_fn_index_init(struct ta_fn_index *ft, struct ta_view *v);
void ta_fn_index_free(struct ta_fn_index *ft);
/* The id of the function at addr in process pid, or -1 without memory. */
int64_t ta_fn_index_id(struct ta_fn_index *ft, uint32_t pid, uint64_t addr);
/* Fills each function's srcline (--srcline). */
void ta_fn_index_srclines(struct ta_fn_index *ft, struct ta_srclines *sl);

/* ---- the tree ------------------------------------------------------------------------ */

/* Node 0 is the root; 0 as a node index means "none" elsewhere. */
struct ta_ctnode {
	uint64_t key;			      /* what tells siblings apart */
	uint32_t parent, child, next, nchild; /* first child, next sibling */
	uint64_t calls, open, total, self;    /* ticks while recording, ns once named */
	/* Of calls, neither open nor whole: begun before the dump says (an
	 * attach window began inside them: no entry, no time; a chunk's
	 * snapshot opened them: their known part in total and self). */
	uint64_t partial;
};

struct ta_ctree {
	struct ta_ctnode *n;
	uint32_t len, cap;
	/* Children of nodes with many of them, found by (parent, key). */
	struct ta_htab by_child;
	size_t nhashed;
	int nomem; /* a node could not be added: the sums are short */
};

/* An empty tree (just the root); -1 without memory. */
int ta_ctree_init(struct ta_ctree *t);
void ta_ctree_free(struct ta_ctree *t);
/* The child of parent with key, added when missing; 0 without memory (and
 * t->nomem is set). */
uint32_t ta_ctree_child(struct ta_ctree *t, uint32_t parent, uint64_t key);
/* Orders every node's children with cmp (a qsort_r comparison of two
 * struct ta_ctnode *).  -1 without memory. */
int ta_ctree_sort(struct ta_ctree *t, int (*cmp)(const void *, const void *, void *), void *ctx);
/*
 * Visits the subtree at top depth first, children in their order: open
 * when a node is reached (depth 0 for top), close when its subtree is done.
 * When open returns 0 the node's children are skipped (close still comes).
 * Iterative, so any depth is fine.
 */
void ta_ctree_walk(const struct ta_ctree *t, uint32_t top,
		   int (*open)(void *ctx, uint32_t n, uint32_t depth),
		   void (*close)(void *ctx, uint32_t n, uint32_t depth), void *ctx);

/* ---- recording during the walk ---------------------------------------------------------- */

/* Keys of the nodes under the root: threads.  Below them: addresses while
 * recording, function ids once named. */
#define TA_CT_THREAD (1ull << 63)

struct ta_pathrec_thread {
	uint32_t node; /* the thread's node; 0 = not yet, UINT32_MAX = left out */
	uint32_t hint; /* the node it entered last */
};

struct ta_pathrec {
	struct ta_ctree tree;
	struct ta_pathrec_thread *th; /* by ta_thread.index */
	uint32_t nth;
	const struct ta_tidset *tids; /* threads to record (NULL or empty: all) */
	int nomem;
	uintptr_t *map; /* a chunk's part's nodes -> the tree's (-j) */
	size_t map_cap;
};

int ta_pathrec_init(struct ta_pathrec *r, const struct ta_tidset *tids);
void ta_pathrec_free(struct ta_pathrec *r);
/* A visitor that records into r; with -j, workers record each EVENTS
 * chunk into a tree of its own, grafted onto r's in the dump's order. */
void ta_pathrec_visitor(struct ta_pathrec *r, struct ta_visitor *v);

/* ---- the named tree ------------------------------------------------------------------------ */

struct ta_calltree {
	struct ta_ctree tree; /* keys: function ids, and TA_CT_THREAD | thread index */
	struct ta_fn_index fns;
	int split;	  /* one subtree per thread under the root */
	uint64_t cut;	  /* paths cut at TA_DEPTH_MAX (ta_calltree_collapse) */
	uint32_t threads; /* threads with calls in the tree */
};

/*
 * Names what r recorded in view v: merged across threads, or with one node
 * per thread under the root when split.  Root and thread nodes get the sum
 * of their children's totals and calls.  The children are left sorted by
 * total (largest first).  r is used up: its tree is renamed in place and
 * taken over when it can be (r must still be freed).  Returns 0, or -1
 * without memory.
 */
int ta_calltree_build(struct ta_calltree *ct, struct ta_pathrec *r, struct ta_view *v, int split);
void ta_calltree_free(struct ta_calltree *ct);

/*
 * A chain of more than TA_RUN_MAX (common.h) nodes of one function, each the child of
 * the one before (a function calling itself), becomes one node "NAME
 * [xN]": its calls and self time are the sum of the chain's, its total the
 * outermost call's, its children what the chain's calls called besides
 * the function itself, merged by path.  The output of every view of the
 * tree stays linear in the events however deep the recursion; trees
 * without such a chain are left as they are.  t is ct's tree or one made
 * from it (keys are ct's function ids; parents before children in the
 * array).  The children are left unsorted when something collapsed.
 * Returns the number of chains collapsed, or -1 without memory.
 */
int64_t ta_calltree_collapse(struct ta_calltree *ct, struct ta_ctree *t);

/*
 * Deeper than this, once recursions are collapsed (a path that goes f, g,
 * f, g...), a path is cut: whatever is below is one node TA_DEEPER_NAME
 * with the sums of all of it, and ct->cut counts the nodes cut.
 */
#define TA_DEPTH_MAX   1000
#define TA_DEEPER_NAME "[deeper than 1000 levels]"

/* Children by total (largest first), then calls, then name: a
 * ta_ctree_sort comparison whose ctx is the struct ta_calltree. */
int ta_calltree_cmp(const void *a, const void *b, void *ctx);

/* The name of what a key stands for: a function, or a thread. */
const char *ta_calltree_label(const struct ta_calltree *ct, uint64_t key, char *buf, size_t len);
/* The thread a key stands for, or NULL for a function. */
const struct ta_sess_thread *ta_calltree_thread(const struct ta_calltree *ct, uint64_t key);

/* ---- the commands' common front ---------------------------------------------------------- */

/* What graph, folded and flame share: a dump read into a named call tree. */
struct ta_treeview {
	struct ta_view v;
	struct ta_pathrec rec;
	struct ta_calltree ct;
};

/*
 * Reads the dump at path, recording the threads in tids (empty: all), and
 * names the tree (split per thread or not).  Prints the errors of the dump
 * and the warnings.  Returns 0 when there is something to show (tv->v.status
 * says whether the dump was damaged), else -1 with the exit status in
 * tv->v.status.
 */
int ta_treeview_open(struct ta_treeview *tv, const char *path, const struct ta_tidset *tids,
		     int split);
/* The same, the walk visiting also too (its enter's return value is not
 * kept: the frames' user values are the recorder's).  Every chunk is then
 * walked, whatever -j says. */
int ta_treeview_open_also(struct ta_treeview *tv, const char *path, const struct ta_tidset *tids,
			  int split, const struct ta_visitor *also);
void ta_treeview_close(struct ta_treeview *tv);

/* ---- shared by calltree.c and calltree_rec.c ---- */

/* A 64-bit finalizer: well mixed low bits for the tables' masks. */
static inline uint64_t ta_ct_mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* The hash of child (parent, key) in the tables of children. */
static inline uint64_t ta_ct_child_hash(uint32_t parent, uint64_t key)
{
	return ta_ct_mix64(key * 0x9e3779b97f4a7c15ull + parent);
}

/* A child's identity, as the tables of children look it up. */
struct ta_ct_child_key {
	uint32_t parent;
	uint64_t key;
};

#endif /* TA_CALLTREE_H */
