/* SPDX-License-Identifier: MIT */
/*
 * srcline.c - source file and line of functions, from DWARF (elfutils libdw).
 *
 * The first question about a module reads its DWARF once: every subprogram
 * with code becomes one entry per address range, sorted by address, with
 * the file and line of its declaration (what a user looks for; an
 * out-of-line copy of an inline function or a member function defined
 * outside its class gets it through DW_AT_abstract_origin or
 * DW_AT_specification).  Later questions are a binary search.  The DWARF
 * is read from the first file symfind.h finds with the build-id the dump
 * gave the module (the resolver notes it): the module's own, or a separate
 * debug file; failing that the module has no lines.
 */
#define _GNU_SOURCE
#include "grow.h"
#include "srcline.h"

#include <stdio.h>

#include "ta_config.h"

#include <string.h>

/*
 * Removes "." and "dir/.." components: the line table joins the
 * compilation directory to names like "../src/x.c", and a user wants to see
 * where the file is.  (Lexical, as a debugger shows it; a symlinked
 * directory followed by ".." could differ, which is rare in source trees.)
 * A plain string function, outside TA_HAVE_SRCLINE's part: tested in
 * every build.
 */
void ta_path_normalise(char *p)
{
	int abs = *p == '/';
	char *base = p + abs, *out = base, *in = base;
	/* The input's end, found before anything is written: the '/' after
	 * the last component lands on the terminating NUL, so the NUL cannot
	 * be what ends the loop. */
	const char *end = base + strlen(base);
	unsigned real = 0; /* components written that a ".." can take back */

	/* The output never runs ahead of the input by more than the '/' it
	 * writes after a component, so one buffer does (that '/' is at most
	 * the terminating NUL's byte). */
	while (in < end) {
		size_t len = strcspn(in, "/");

		if (len == 0 || (len == 1 && in[0] == '.')) {
			/* nothing to keep */
		} else if (len == 2 && in[0] == '.' && in[1] == '.') {
			if (real) {
				out--; /* the '/' after the last component */
				while (out > base && out[-1] != '/')
					out--;
				real--;
			} else if (!abs) {
				memcpy(out, "../", 3);
				out += 3;
			} /* "/.." is "/" */
		} else {
			memmove(out, in, len);
			out += len;
			*out++ = '/';
			real++;
		}
		in += len;
		if (in < end)
			in++; /* the '/' that ended the component */
	}
	if (out > base)
		out--; /* the last '/' written */
	else if (!abs && end > base)
		*out++ = '.'; /* "a/.." is "."; "" has no room for it and stays "" */
	*out = 0;
}

#if TA_HAVE_SRCLINE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "symfind.h"

/* One address range of a function with a known declaration. */
struct fn_range {
	uint64_t lo, hi;  /* [lo, hi), link-time addresses */
	const char *file; /* normalised, owned by the module's file table */
	int line;
	char *text; /* "file:line", made on first use */
};

struct module {
	char *path;
	int fd;
	Elf *elf; /* NULL when the module could not be read */
	Dwarf *dw;
	struct fn_range *fn;
	size_t nfn, fn_cap;
	/* Normalised file names, one copy per (libdw name, compilation
	 * directory) seen. */
	const char **raw, **dir;
	char **files;
	size_t nfiles, files_cap;
};

struct ta_srclines {
	struct module *mods;
	size_t nmods, cap;
};

struct ta_srclines *ta_srclines_new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return calloc(1, sizeof(struct ta_srclines));
}

static void module_free(struct module *m)
{
	for (size_t i = 0; i < m->nfn; i++)
		free(m->fn[i].text);
	free(m->fn);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i]);
	free(m->files);
	free(m->raw);
	free(m->dir);
	if (m->dw)
		dwarf_end(m->dw);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	free(m->path);
}

void ta_srclines_free(struct ta_srclines *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++)
		module_free(&s->mods[i]);
	free(s->mods);
	free(s);
}

/* ---- file names -------------------------------------------------------------- */

/*
 * The normalised full path of a name libdw gave, relative names taken from
 * the compilation directory dir (may be NULL).  Pointers stay valid while
 * the Dwarf is open, so the same pair of pointers means the same file.
 */
static const char *file_name(struct module *m, const char *raw, const char *dir)
{
	char *c;

	for (size_t i = m->nfiles; i-- > 0;)
		if (m->raw[i] == raw && m->dir[i] == dir)
			return m->files[i];
	if (m->nfiles == m->files_cap) {
		/* Three arrays of one capacity: files_cap set once all have it. */
		size_t cap = m->files_cap;
		const char **r = ta_vec_reserve(m->raw, m->nfiles + 1, &cap, sizeof(*r), 64);
		char **f;

		if (!r)
			return NULL;
		m->raw = r;
		cap = m->files_cap;
		r = ta_vec_reserve(m->dir, m->nfiles + 1, &cap, sizeof(*r), 64);
		if (!r)
			return NULL;
		m->dir = r;
		cap = m->files_cap;
		f = ta_vec_reserve(m->files, m->nfiles + 1, &cap, sizeof(*f), 64);
		if (!f)
			return NULL;
		m->files = f;
		m->files_cap = cap;
	}
	if (raw[0] != '/' && dir && dir[0] == '/') {
		if (asprintf(&c, "%s/%s", dir, raw) < 0)
			return NULL;
	} else if (!(c = strdup(raw))) {
		return NULL;
	}
	ta_path_normalise(c);
	m->raw[m->nfiles] = raw;
	m->dir[m->nfiles] = dir;
	m->files[m->nfiles++] = c;
	return c;
}

/* ---- reading a module's functions --------------------------------------------- */

static void add_range(struct module *m, uint64_t lo, uint64_t hi, const char *file, int line)
{
	struct fn_range *f;

	if (hi <= lo)
		return;
	if (m->nfn == m->fn_cap) {
		struct fn_range *v = ta_vec_reserve(m->fn, m->nfn + 1, &m->fn_cap, sizeof(*v), 256);

		if (!v)
			return; /* fewer lines, not a failure */
		m->fn = v;
	}
	f = &m->fn[m->nfn++];
	f->lo = lo;
	f->hi = hi;
	f->file = file;
	f->line = line;
	f->text = NULL;
}

static void add_function(struct module *m, Dwarf_Die *die, const char *dir)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	const char *raw, *file;
	int line;

	/* Declarations and inlined-only functions have no code of their own. */
	if (!dwarf_hasattr(die, DW_AT_low_pc) && !dwarf_hasattr(die, DW_AT_ranges))
		return;
	raw = dwarf_decl_file(die);
	if (!raw || dwarf_decl_line(die, &line) != 0 || line <= 0)
		return;
	file = file_name(m, raw, dir);
	if (!file)
		return;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0)
		add_range(m, lo, hi, file, line);
}

/* Walks the DIEs that can hold functions with code: namespaces, classes
 * (member functions), and functions themselves (GNU C nested functions). */
static void walk(struct module *m, Dwarf_Die *parent, const char *dir, int depth)
{
	Dwarf_Die die;

	if (depth > 64 || dwarf_child(parent, &die) != 0)
		return;
	do {
		switch (dwarf_tag(&die)) {
		case DW_TAG_subprogram:
			add_function(m, &die, dir);
			walk(m, &die, dir, depth + 1);
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_lexical_block:
		case DW_TAG_module:
			walk(m, &die, dir, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&die, &die) == 0);
}

static int range_cmp(const void *a, const void *b)
{
	const struct fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* The tighter range first: a nested function inside its parent. */
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The first file with the module's build-id and DWARF, opened as
 * libdw reads it: 1 with *fd, *elf and *dw set (*sf then has its path
 * and source), or 0. */
static int open_dwarf(struct ta_symfind *f, struct ta_symfile *sf, int *fd, Elf **elf, Dwarf **dw)
{
	while (ta_symfind_next(f, sf)) {
		Elf *e = elf_begin(sf->fd, ELF_C_READ_MMAP, NULL);
		Dwarf *d = e ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;

		if (d) {
			*fd = sf->fd;
			sf->fd = -1;
			*elf = e;
			*dw = d;
			return 1;
		}
		if (e)
			elf_end(e);
		ta_symfile_close(sf);
	}
	return 0;
}

/* The DWARF of the first file symfind.h finds with the module's build-id
 * (the module's own, a separate debug file, debuginfod's): a file with
 * another build-id would give another program's lines. */
static void module_load(struct module *m)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct ta_symfind f;
	struct ta_symfile sf;
	const uint8_t *id = NULL;
	size_t id_len = ta_symfind_noted(m->path, &id);

	if (ta_symfind_begin(&f, m->path, id, id_len) < 0)
		return;
	if (open_dwarf(&f, &sf, &m->fd, &m->elf, &m->dw))
		ta_symfile_close(&sf);
	ta_symfind_end(&f);
	if (!m->dw)
		return;
	while (dwarf_nextcu(m->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		Dwarf_Attribute at;

		if (dwarf_offdie(m->dw, off + hsize, &cu))
			walk(m, &cu, dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &at)), 0);
		off = next;
	}
	if (m->nfn)
		qsort(m->fn, m->nfn, sizeof(*m->fn), range_cmp);
}

static struct module *module_get(struct ta_srclines *s, const char *path)
{
	struct module *m;

	for (size_t i = 0; i < s->nmods; i++)
		if (!strcmp(s->mods[i].path, path))
			return &s->mods[i];
	if (s->nmods == s->cap) {
		struct module *v = ta_vec_reserve(s->mods, s->nmods + 1, &s->cap, sizeof(*v), 16);

		if (!v)
			return NULL;
		s->mods = v;
	}
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->path = strdup(path);
	if (!m->path)
		return NULL;
	s->nmods++;
	module_load(m);
	return m;
}

const char *ta_srcline(struct ta_srclines *s, const char *path, uint64_t offset)
{
	struct module *m;
	struct fn_range *best = NULL;
	size_t lo = 0, hi;

	if (!s || !path || path[0] != '/' || !(m = module_get(s, path)) || !m->nfn)
		return NULL;
	/* The last range starting at or below offset ... */
	hi = m->nfn;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->fn[mid].lo <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ... or an earlier one that still holds it (an enclosing
	 * function's range starts before a nested one's). */
	for (size_t i = lo; i-- > 0 && lo - i <= 16;) {
		if (offset < m->fn[i].hi) {
			best = &m->fn[i];
			break;
		}
	}
	if (!best)
		return NULL;
	if (!best->text && asprintf(&best->text, "%s:%d", best->file, best->line) < 0)
		best->text = NULL;
	return best->text;
}

/* Whether e has a .debug_info with contents: what dwarf_begin_elf needs,
 * told from the section headers alone (libdw would decompress and index
 * the sections, a quarter of a second for libc's debug file). */
static int has_debug_info(Elf *e)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstr) != 0)
		return 0;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return 1;
	}
	return 0;
}

enum ta_sym_source ta_srcline_origin(const char *path, const uint8_t *id, size_t len, char **from)
{
	struct ta_symfind f;
	struct ta_symfile sf;
	enum ta_sym_source src = TA_SYMS_NONE;

	*from = NULL;
	/* As ta_srcline: a module without a file (the vDSO) has no lines. */
	if (path[0] != '/' || elf_version(EV_CURRENT) == EV_NONE ||
	    ta_symfind_begin(&f, path, id, len) < 0)
		return TA_SYMS_NONE;
	while (src == TA_SYMS_NONE && ta_symfind_next(&f, &sf)) {
		Elf *e = elf_begin(sf.fd, ELF_C_READ, NULL);

		if (e && has_debug_info(e)) {
			src = sf.source;
			*from = sf.path;
			sf.path = NULL;
		}
		if (e)
			elf_end(e);
		ta_symfile_close(&sf);
	}
	ta_symfind_end(&f);
	return src;
}

int ta_srcline_built(const char *cmd)
{
	(void)cmd;
	return 1;
}

#else /* !TA_HAVE_SRCLINE */

/* Built without libdw (meson -Dsrcline=disabled): the commands refuse
 * --srcline through ta_srcline_built, so the rest is never reached. */
struct ta_srclines *ta_srclines_new(void)
{
	return NULL;
}

void ta_srclines_free(struct ta_srclines *s)
{
	(void)s;
}

const char *ta_srcline(struct ta_srclines *s, const char *path, uint64_t offset)
{
	(void)s;
	(void)path;
	(void)offset;
	return NULL;
}

enum ta_sym_source ta_srcline_origin(const char *path, const uint8_t *id, size_t len, char **from)
{
	(void)path;
	(void)id;
	(void)len;
	*from = NULL;
	return TA_SYMS_NONE;
}

int ta_srcline_built(const char *cmd)
{
	fprintf(stderr,
		"traceagent %s: --srcline: this build has no source lines "
		"(built without libdw: meson -Dsrcline)\n",
		cmd);
	return 0;
}

#endif
