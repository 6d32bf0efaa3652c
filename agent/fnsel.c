/* SPDX-License-Identifier: MIT */
/*
 * fnsel.c - choosing functions by name: patterns, modules, symbol tables
 * (fnsel.h).  Shared by the patcher and the filters, so that both read a
 * pattern and a symbol table the same way.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "fnsel.h"
#include "format.h"
#include "walk.h"

/* ---- patterns --------------------------------------------------------------- */

int ta_patterns_parse(struct ta_patterns *ps, const char *spec, const char *what)
{
	char *copy = strdup(spec), *save = NULL, *tok;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':');
		struct ta_pattern *p = ta_vec_reserve(ps->p, ps->n + 1, &ps->cap, sizeof(*p), 8);
		if (!p)
			break;
		ps->p = p;
		p = &ps->p[ps->n];
		p->exclude = tok[0] == '!';
		tok += p->exclude;
		if (colon) {
			*colon = 0;
			p->module = strdup(tok);
			p->glob = strdup(colon + 1);
		} else {
			p->module = NULL;
			p->glob = strdup(tok);
		}
		/* fnmatch without flags matches such a glob to itself only,
		 * and is tried on every symbol of a module: strcmp instead. */
		p->literal = p->glob && !strpbrk(p->glob, "*?[\\");
		if (!p->glob || !*p->glob || (colon && (!p->module || !*p->module))) {
			ta_warn("%s: empty pattern in \"%s\" ignored", what, spec);
			free(p->module);
			free(p->glob);
			continue;
		}
		ps->n++;
	}
	free(copy);
	return ps->n ? 0 : -1;
}

void ta_patterns_free(struct ta_patterns *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->p[i].module);
		free(ps->p[i].glob);
	}
	free(ps->p);
	ps->p = NULL;
	ps->n = ps->cap = 0;
}

const char *ta_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int ta_pattern_names_module(const struct ta_pattern *p, const char *modbase, int is_exe)
{
	return p->module ? fnmatch(p->module, modbase, 0) == 0 : is_exe;
}

int ta_pattern_matches(const struct ta_pattern *p, const char *modbase, int is_exe,
		       const char *name)
{
	if (!ta_pattern_names_module(p, modbase, is_exe))
		return 0;
	if (p->literal)
		return strcmp(p->glob, name) == 0;
	return fnmatch(p->glob, name, 0) == 0;
}

void ta_patterns_match(const struct ta_patterns *ps, const char *modbase, int is_exe,
		       const char *name, int *in, int *out)
{
	*in = *out = 0;
	for (size_t i = 0; i < ps->n; i++) {
		const struct ta_pattern *p = &ps->p[i];
		if (ta_pattern_matches(p, modbase, is_exe, name)) {
			if (p->exclude)
				*out = 1;
			else
				*in = 1;
		}
	}
}

int ta_patterns_name_module(const struct ta_patterns *ps, const char *modbase, int is_exe)
{
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->p[i].exclude &&
		    (ps->p[i].module ? fnmatch(ps->p[i].module, modbase, 0) == 0 : is_exe))
			return 1;
	return 0;
}

/* ---- modules ---------------------------------------------------------------- */

static int prot_of(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

struct collect {
	struct ta_module *mods;
	size_t n, cap;
	int first;
};

static int collect_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct collect *cl = arg;
	struct ta_module *m, *x;
	int first = cl->first;

	(void)size;
	cl->first = 0;
	if (!first && (!info->dlpi_name || !*info->dlpi_name))
		return 0; /* the vdso */
	x = ta_vec_reserve(cl->mods, cl->n + 1, &cl->cap, sizeof(*x), 16);
	if (!x)
		return 1;
	cl->mods = x;
	m = &cl->mods[cl->n];
	memset(m, 0, sizeof(*m));
	if (first) {
		ta_exe_path(m->path, sizeof(m->path));
		m->is_exe = 1;
	} else {
		size_t len = strlen(info->dlpi_name);
		if (len >= sizeof(m->path))
			return 0;
		memcpy(m->path, info->dlpi_name, len + 1);
	}
	m->bias = info->dlpi_addr;
	m->lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum && m->nseg < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		m->seg[m->nseg].start = m->bias + ph->p_vaddr;
		m->seg[m->nseg].end = m->bias + ph->p_vaddr + ph->p_memsz;
		m->seg[m->nseg].prot = prot_of(ph->p_flags);
		if (m->seg[m->nseg].start < m->lo)
			m->lo = m->seg[m->nseg].start;
		if (m->seg[m->nseg].end > m->hi)
			m->hi = m->seg[m->nseg].end;
		m->nseg++;
	}
	if (m->nseg && m->path[0])
		cl->n++;
	return 0;
}

struct ta_module *ta_modules_collect(size_t *n)
{
	struct collect cl = {NULL, 0, 0, 1};

	ta_walk_objects(collect_one, &cl);
	*n = cl.n;
	return cl.mods;
}

/* ---- a module's functions ---------------------------------------------------- */

static int cand_cmp(const void *a, const void *b)
{
	const struct ta_fn_cand *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The ELF file at path mapped, checked as far as its section headers:
 * its header, or NULL (*map NULL too unless it is mapped). */
static const ElfW(Ehdr) * map_elf(const char *path, void **map, size_t *maplen)
{
	const ElfW(Ehdr) * eh;
	struct stat st;
	int fd;

	*map = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(*eh)) {
		close(fd);
		return NULL;
	}
	*maplen = (size_t)st.st_size;
	*map = mmap(NULL, *maplen, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (*map == MAP_FAILED) {
		*map = NULL;
		return NULL;
	}
	eh = *map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff == 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > *maplen)
		return NULL;
	return eh;
}

/* A symbol table of the mapped file: the first section of that type (with
 * entries, when nonempty), its symbols and strings inside the file. */
struct symsec {
	const ElfW(Sym) * sym;
	size_t nsym;
	const char *str;
	size_t strsize;
};

static int find_symsec(const ElfW(Ehdr) * eh, size_t maplen, unsigned type, int nonempty,
		       struct symsec *out)
{
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)((const char *)eh + eh->e_shoff), *s = NULL;

	for (unsigned i = 0; i < eh->e_shnum && !s; i++)
		if (sh[i].sh_type == type && (!nonempty || (sh[i].sh_size && sh[i].sh_entsize)))
			s = &sh[i];
	if (!s || s->sh_link >= eh->e_shnum || s->sh_offset + s->sh_size > maplen ||
	    sh[s->sh_link].sh_offset + sh[s->sh_link].sh_size > maplen)
		return -1;
	out->sym = (const ElfW(Sym) *)((const char *)eh + s->sh_offset);
	out->nsym = s->sh_size / sizeof(ElfW(Sym));
	out->str = (const char *)eh + sh[s->sh_link].sh_offset;
	out->strsize = sh[s->sh_link].sh_size;
	return 0;
}

/* Symbol i's name, or NULL when it does not lie inside the strings. */
static const char *sym_name(const struct symsec *t, size_t i)
{
	const char *name;

	if (t->sym[i].st_name >= t->strsize)
		return NULL;
	name = t->str + t->sym[i].st_name;
	return memchr(name, 0, t->strsize - t->sym[i].st_name) ? name : NULL;
}

struct ta_fn_cand *ta_module_functions(const struct ta_module *m, ta_fn_want want, void *arg,
				       size_t *n, void **map, size_t *maplen)
{
	const ElfW(Ehdr) * eh;
	struct ta_fn_cand *c = NULL;
	size_t nc = 0, cap = 0;
	struct symsec t;

	*n = 0;
	eh = map_elf(m->path, map, maplen);
	if (!eh || (find_symsec(eh, *maplen, SHT_SYMTAB, 0, &t) < 0 &&
		    find_symsec(eh, *maplen, SHT_DYNSYM, 0, &t) < 0))
		return NULL;
	{
		const char *modbase = ta_base_name(m->path);

		for (size_t i = 0; i < t.nsym; i++) {
			const ElfW(Sym) *sym = &t.sym[i];
			const char *name;
			if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_shndx == SHN_UNDEF ||
			    sym->st_size == 0 || !(name = sym_name(&t, i)) ||
			    !want(arg, modbase, m->is_exe, name))
				continue;
			struct ta_fn_cand *x = ta_vec_reserve(c, nc + 1, &cap, sizeof(*x), 64);

			if (!x)
				break;
			c = x;
			c[nc].addr = m->bias + sym->st_value;
			c[nc].size = sym->st_size;
			c[nc].name = name;
			c[nc].entry = m->is_exe && sym->st_value == eh->e_entry;
			nc++;
		}
	}
	if (nc > 1) {
		size_t k = 1;
		qsort(c, nc, sizeof(*c), cand_cmp);
		for (size_t i = 1; i < nc; i++)
			if (c[i].addr != c[k - 1].addr)
				c[k++] = c[i];
		nc = k;
	}
	*n = nc;
	return c;
}

/* ---- a module's symbol table, as the analyzer reads it --------------------------- */

/* The function symbols of t the analyzer's table takes (symbols.c's
 * read_syms): STT_FUNC and STT_GNU_IFUNC, defined, at a nonzero value,
 * named. */
static struct ta_syms_raw *table_functions(const struct symsec *t, size_t *n)
{
	struct ta_syms_raw *r = NULL;
	size_t cap = 0;

	*n = 0;
	for (size_t i = 0; i < t->nsym; i++) {
		const ElfW(Sym) *sym = &t->sym[i];
		unsigned type = ELF64_ST_TYPE(sym->st_info);
		const char *name;
		struct ta_syms_raw *x;

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF ||
		    !sym->st_value || !(name = sym_name(t, i)) || !*name)
			continue;
		x = ta_vec_reserve(r, *n + 1, &cap, sizeof(*x), 256);
		if (!x)
			break;
		r = x;
		r[*n].value = sym->st_value;
		r[*n].size = sym->st_size;
		r[*n].name = name;
		r[*n].order = i;
		r[*n].rank = ta_syms_rank(ELF64_ST_BIND(sym->st_info));
		(*n)++;
	}
	return r;
}

struct ta_syms_raw *ta_module_symbols(const char *path, const uint8_t *id, size_t idlen, size_t *n,
				      unsigned *source, void **map, size_t *maplen)
{
	const ElfW(Ehdr) *eh = map_elf(path, map, maplen), *dh;
	struct symsec t;
	char dpath[64 + 2 * 64];
	void *dmap = NULL;
	size_t dlen = 0, k;

	*n = 0;
	*source = 0;
	if (!eh)
		return NULL;
	if (find_symsec(eh, *maplen, SHT_SYMTAB, 1, &t) == 0) {
		*source = TA_SYMS_SYMTAB;
		return table_functions(&t, n);
	}
	/* A stripped file: its debug file, in the distributions' layout. */
	if (id && idlen >= 2 && idlen <= 64) {
		k = (size_t)snprintf(dpath, sizeof(dpath), "/usr/lib/debug/.build-id/%02x/", id[0]);
		for (size_t i = 1; i < idlen; i++)
			k += (size_t)snprintf(dpath + k, sizeof(dpath) - k, "%02x", id[i]);
		snprintf(dpath + k, sizeof(dpath) - k, ".debug");
		dh = map_elf(dpath, &dmap, &dlen);
		if (dh && find_symsec(dh, dlen, SHT_SYMTAB, 1, &t) == 0) {
			munmap(*map, *maplen);
			*map = dmap;
			*maplen = dlen;
			*source = TA_SYMS_DEBUG;
			return table_functions(&t, n);
		}
		if (dmap)
			munmap(dmap, dlen);
	}
	if (find_symsec(eh, *maplen, SHT_DYNSYM, 1, &t) == 0) {
		*source = TA_SYMS_DYNSYM;
		return table_functions(&t, n);
	}
	return NULL;
}

/* ---- functions refused ------------------------------------------------------ */

void ta_refusals_add(struct ta_refusals *l, const char *module, const char *name, uint64_t addr,
		     unsigned reason)
{
	struct ta_refusal *v = ta_vec_reserve(l->v, l->n + 1, &l->cap, sizeof(*v), 64);
	struct ta_refusal r = {NULL, NULL, addr, reason};

	if (!v)
		return;
	l->v = v;
	r.module = strdup(module);
	r.name = strdup(name);
	if (!r.module || !r.name) {
		free(r.module);
		free(r.name);
		return;
	}
	l->v[l->n++] = r;
}

void ta_refusals_clear(struct ta_refusals *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].module);
		free(l->v[i].name);
	}
	l->n = 0;
}

void ta_refusals_put(const struct ta_refusals *l, uint64_t count, unsigned none,
		     const char *(*text)(unsigned), struct ta_buf *b)
{
	static const char unknown[] = "?";

	for (uint64_t i = 0; i < count; i++) {
		const struct ta_refusal *r = i < l->n ? &l->v[i] : NULL;
		const char *module = r ? r->module : unknown, *name = r ? r->name : unknown;
		unsigned reason = r ? r->reason : none;
		const char *t = text(reason);

		ta_buf_str(b, module, strlen(module));
		ta_buf_str(b, name, strlen(name));
		ta_buf_u(b, r ? r->addr : 0);
		ta_buf_u(b, reason);
		ta_buf_str(b, t, strlen(t));
	}
}
