/* SPDX-License-Identifier: MIT */
/*
 * libreport_int.h - what libreport.c (the sums, while the dump is walked)
 * and libreport_print.c (naming and printing them) share.
 */
#ifndef TA_LIBREPORT_INT_H
#define TA_LIBREPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "apimem.h"
#include "common.h"

/* A table of sums keyed by three numbers. */
#define NV 6
struct agg_row {
	uint64_t k[3];
	uint64_t v[NV];
};

struct agg {
	struct agg_row *rows;
	size_t n, cap;
	struct ta_htab by_key;
};

struct path {
	uint32_t pid, depth;
	uint64_t *addr;		/* bottom first, the allocating function last */
	uint64_t hash;		/* of pid, depth and addr (path_of) */
	uint64_t bytes, blocks; /* live at the end */
};

struct live {
	uint64_t pid, ptr; /* ptr 0: a row free for reuse */
	uint64_t size;	   /* of a free row: the next free row's index + 1 */
	uint32_t path;
};

/* A module's data symbols (lock_name). */
struct data_syms {
	char *path;
	struct ta_symtab *tab; /* NULL when it could not be read */
};

struct ta_libstats {
	struct ta_view *v;
	struct ta_visitor inner; /* the visitor this one wraps */
	int nomem;
	const struct ta_process *proc; /* of last_pid */
	uint32_t last_pid;

	/* alloc: (pid, caller) -> allocs, bytes, frees, freed bytes */
	struct agg alloc_caller;
	uint64_t untracked_frees; /* of blocks allocated before recording */
	struct path *paths;
	size_t npaths, paths_cap;
	struct ta_htab path_index; /* paths by (pid, frames) */
	/* The live blocks: rows [0, nrows), those with a ptr indexed by
	 * (pid, ptr) in live_index (nlive of them); the rows of freed blocks
	 * chained from free_row (index + 1) for the next blocks. */
	struct live *live;
	size_t nlive, nrows, live_cap, free_row;
	struct ta_htab live_index;

	/* locks: (pid, caller, function index) and (pid, object, 0) -> calls,
	 * wait ticks, max ticks; an object's row also the live block holding
	 * it (path index + 1, 0: none found), its offset there, and how many
	 * times the block was looked for (heap_block) */
	struct agg lock_caller, lock_obj;
	/* The data symbols of the modules, read when locks are named. */
	struct data_syms *dsyms;
	size_t ndsyms, dsyms_cap;
	/* io: (pid, fd, 0) and (pid, caller, 0) -> calls, asked, done, errors,
	 * ticks */
	struct agg io_fd, io_caller;

	/* The manual API's pools (TA_ALLOC_NAMED): rows of alloc_caller and
	 * live blocks keyed by pool index + 1 (k[2]; a live block's pid above
	 * bit 32), malloc's by 0; each pool's frees of pointers it did not
	 * hold in its `unknown`.  The names TA_LOCK_NAME gave locks. */
	struct ta_pnames pools;
	struct ta_locknames locknames;
	char text[TA_TEXT_MAX + 1];
};

#endif /* TA_LIBREPORT_INT_H */
