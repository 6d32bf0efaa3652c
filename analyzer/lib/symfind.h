/* SPDX-License-Identifier: MIT */
/*
 * symfind.h - the files that hold a module's names and source lines.
 *
 * A dump names each module by the path it had and its GNU build-id.  The
 * file at that path may since have been rebuilt, moved or deleted, so a
 * file is used only when its build-id is the dump's.  The places looked
 * in, in order (docs/traceagent-symbols.md):
 *
 *   1. the module's file at its recorded path;
 *   2. with --symfs DIR, DIR/recorded/path;
 *   3. for each --debug-dir DIR: DIR/.build-id/xx/rest.debug,
 *      DIR/recorded/path.debug and DIR/recorded/dir/DEBUGLINK;
 *   4. /usr/lib/debug/.build-id/xx/rest.debug;
 *   5. the file's .gnu_debuglink name: next to the file, in its .debug
 *      folder, and under /usr/lib/debug/recorded/dir/;
 *   6. debuginfod (libdebuginfod, loaded at run time) when DEBUGINFOD_URLS
 *      is set.
 *
 * Each consumer (symbols.c for .symtab, srcline.c for DWARF) walks them
 * with ta_symfind_next and takes the first that has what it needs.  A
 * dump without a build-id for the module takes the file as it is.
 */
#ifndef TA_SYMFIND_H
#define TA_SYMFIND_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

/* The longest build-id kept (GNU ld writes 20 bytes; --build-id=0x... up
 * to this many). */
#define TA_BUILD_ID_MAX 64
#define TA_BUILD_ID_HEX (2 * TA_BUILD_ID_MAX + 1)

/* ---- where to look (the commands' --symfs and --debug-dir) ------------------ */

/* --symfs DIR (NULL: none).  The string must outlive the lookups. */
void ta_symfind_set_symfs(const char *dir);
/* --debug-dir DIR, in the order given: 0, or -1 without memory.  The
 * string must outlive the lookups. */
int ta_symfind_add_debug_dir(const char *dir);
/* Forgets both (tests). */
void ta_symfind_reset(void);

/* ---- the build-ids the dump gave ------------------------------------------- */

/* Remembers id as the build-id of the module at path, as the resolver
 * first saw it, so source lines (asked by path alone) check the same. */
void ta_symfind_note(const char *path, const uint8_t *id, size_t len);
/* The build-id noted for path: its length (0: none noted), *id set. */
size_t ta_symfind_noted(const char *path, const uint8_t **id);

/* ---- the places, as paths --------------------------------------------------- */

enum ta_cand_kind {
	TA_CAND_FILE,	   /* the module's own file (recorded path or under --symfs) */
	TA_CAND_DEBUG,	   /* a separate debug file */
	TA_CAND_DEBUGINFOD /* ask debuginfod (no path) */
};

struct ta_cand {
	char *path; /* malloc'd; NULL for TA_CAND_DEBUGINFOD */
	enum ta_cand_kind kind;
};

/*
 * The places to look for the module recorded at path with build-id hex
 * (lower-case hex, "" for none) and debug link name link (NULL for none),
 * in the order above; debuginfod is listed when with_debuginfod.  Returns
 * their number (*out malloc'd, free with ta_cands_free), or -1 without
 * memory.
 */
long ta_symfind_cands(const char *path, const char *hex, const char *link, int with_debuginfod,
		      struct ta_cand **out);
void ta_cands_free(struct ta_cand *c, long n);

/* Lower-case hex of len bytes into buf (TA_BUILD_ID_HEX bytes; longer ids
 * are cut). */
void ta_build_id_hex(char *buf, const uint8_t *id, size_t len);

/* ---- the walk ---------------------------------------------------------------- */

/* What became of the module's own file (recorded path or under --symfs). */
enum ta_file_state {
	TA_FILE_ABSENT,	  /* none could be opened */
	TA_FILE_NOT_ELF,  /* not an ELF file */
	TA_FILE_OTHER,	  /* an ELF file with another build-id, or none */
	TA_FILE_MATCH,	  /* its build-id is the dump's */
	TA_FILE_UNCHECKED /* the dump has no build-id: taken as it is */
};

struct ta_symfind {
	const char *path;
	char want[TA_BUILD_ID_HEX]; /* the dump's build-id, hex; "" none */
	int dump_has_id;
	enum ta_file_state state;      /* of the file at the recorded path */
	int errnum;		       /* errno of opening it, for TA_FILE_ABSENT */
	char file_id[TA_BUILD_ID_HEX]; /* its build-id, hex; "" none */
	int symfs_match;	       /* --symfs gave a file with the dump's build-id */
	struct ta_cand *c;
	long n, next;
};

/* One file found. */
struct ta_symfile {
	int fd;
	char *path;		   /* malloc'd */
	enum ta_sym_source source; /* TA_SYMS_FILE, _DEBUG_FILE or _DEBUGINFOD */
};

/* Looks at the module's own file and lists the places: 0, or -1 without
 * memory. */
int ta_symfind_begin(struct ta_symfind *f, const char *path, const uint8_t *id, size_t len);
/* The next place with a file whose build-id is the one looked for: 1 and
 * *out (close with ta_symfile_close), or 0 when there are no more. */
int ta_symfind_next(struct ta_symfind *f, struct ta_symfile *out);
void ta_symfile_close(struct ta_symfile *sf);
void ta_symfind_end(struct ta_symfind *f);

/* Whether the module's own file matched (1), differed or had no build-id
 * (0), or there was nothing to compare (-1: no build-id in the dump, or no
 * file), as `traceagent info` says it. */
int ta_symfind_match(const struct ta_symfind *f);

#endif /* TA_SYMFIND_H */
