/* SPDX-License-Identifier: MIT */
/*
 * fnsel.h - choosing functions by name (fnsel.c): the "[!][MODULE:]GLOB"
 * patterns TRACEAGENT_PATCH and TRACEAGENT_FILTER/EXCLUDE share, the
 * modules loaded now, and the functions of a module's symbol table.  Used
 * by the patcher (patch/patch.c) and the filters (filter.c); not the hot
 * path: it opens files, maps them and allocates.
 */
#ifndef TA_FNSEL_H
#define TA_FNSEL_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

struct ta_syms_raw;

/* ---- patterns --------------------------------------------------------------- */

struct ta_pattern {
	char *module; /* basename glob, or NULL: the executable */
	char *glob;
	int exclude; /* "!...": functions it matches are left out */
	int literal; /* glob has no *, ?, [ or \: matched by strcmp */
};

struct ta_patterns {
	struct ta_pattern *p;
	size_t n, cap;
};

/* Adds the patterns of "[!][MODULE:]GLOB[,...]" to ps; an empty one is
 * said on stderr, naming `what` (the setting).  0, or -1 if ps is still
 * empty. */
int ta_patterns_parse(struct ta_patterns *ps, const char *spec, const char *what) TA_HIDDEN;
void ta_patterns_free(struct ta_patterns *ps) TA_HIDDEN;
/* Whether one pattern's MODULE part names this module (none: the executable). */
int ta_pattern_names_module(const struct ta_pattern *p, const char *modbase, int is_exe) TA_HIDDEN;
/* Whether one pattern names function `name` of the module (the '!' aside). */
int ta_pattern_matches(const struct ta_pattern *p, const char *modbase, int is_exe,
		       const char *name) TA_HIDDEN;
/* Whether function `name` of the module (its file's base name; is_exe: the
 * executable) matches an inclusion (*in) and an exclusion (*out). */
void ta_patterns_match(const struct ta_patterns *ps, const char *modbase, int is_exe,
		       const char *name, int *in, int *out) TA_HIDDEN;
/* Whether any inclusion names this module at all. */
int ta_patterns_name_module(const struct ta_patterns *ps, const char *modbase,
			    int is_exe) TA_HIDDEN;
/* The part of a path after its last '/'. */
const char *ta_base_name(const char *path) TA_HIDDEN;

/* ---- modules ---------------------------------------------------------------- */

struct ta_module {
	char path[4096];
	uint64_t bias;
	int is_exe;
	uint64_t lo, hi; /* span of the executable segments */
	struct {
		uint64_t start, end;
		int prot;
	} seg[16];
	int nseg;
};

/* The modules loaded now with an executable segment and a path (the
 * executable first, the vdso left out): a malloc'd array (*n of them), or
 * NULL. */
struct ta_module *ta_modules_collect(size_t *n) TA_HIDDEN;

/* ---- a module's functions ---------------------------------------------------- */

struct ta_fn_cand {
	uint64_t addr, size; /* runtime entry address and st_size */
	const char *name;    /* in the module's file mapping */
	int entry;	     /* the ELF entry point (_start) */
};

/* Decides whether a function is kept: nonzero keeps it. */
typedef int (*ta_fn_want)(void *arg, const char *modbase, int is_exe, const char *name);

/* The functions of the module's symbol table (.symtab, else .dynsym) that
 * want keeps, sorted by address, aliases removed: a malloc'd array of *n,
 * or NULL.  *map and *maplen: the file's mapping, which the names point
 * into (munmap it when done with the names; *map NULL when none). */
struct ta_fn_cand *ta_module_functions(const struct ta_module *m, ta_fn_want want, void *arg,
				       size_t *n, void **map, size_t *maplen) TA_HIDDEN;

/* The function symbols a reader of the module's file names its functions
 * with (analyzer/lib/symbols.c's choice): of its .symtab, else of the
 * debug file /usr/lib/debug/.build-id/xx/rest.debug its build-id names,
 * else of its .dynsym; *source says which (TA_SYMS_*; 0: none).  A
 * malloc'd array of *n, names in *map (munmap *maplen when done; *map
 * NULL when none), not yet sorted, aliases kept (ta_syms_pick). */
struct ta_syms_raw *ta_module_symbols(const char *path, const uint8_t *id, size_t idlen, size_t *n,
				      unsigned *source, void **map, size_t *maplen) TA_HIDDEN;

/* ---- functions refused ------------------------------------------------------ */

/* The functions a patcher refused, for the PATCH chunk (format.h). */
struct ta_refusal {
	char *module, *name;
	uint64_t addr;
	unsigned reason;
};

struct ta_refusals {
	struct ta_refusal *v;
	size_t n, cap;
};

struct ta_buf;

/* Adds one; without memory, none (the PATCH chunk then lists fewer). */
void ta_refusals_add(struct ta_refusals *l, const char *module, const char *name, uint64_t addr,
		     unsigned reason) TA_HIDDEN;
void ta_refusals_clear(struct ta_refusals *l) TA_HIDDEN;
/* The first count, as the PATCH chunk lists them: module, name, address,
 * reason and text(reason); those forgotten since they were counted (an
 * attach's) as "?" with reason none. */
void ta_refusals_put(const struct ta_refusals *l, uint64_t count, unsigned none,
		     const char *(*text)(unsigned), struct ta_buf *b) TA_HIDDEN;

#endif
