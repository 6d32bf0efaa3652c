/* SPDX-License-Identifier: MIT */
/*
 * argsdwarf.c - `record --auto-args`: the arguments and return values of a
 * program's functions from its DWARF (libdw), written as the agent's
 * TRACEAGENT_ARGS and TRACEAGENT_RETVAL entries; and an enum value's name
 * for the views.
 *
 * Why here and not in the agent: libdw and the DWARF walk cost the traced
 * process nothing this way (no library to load, no debug sections to read
 * at its start), the agent's settings stay plain text it already parses,
 * and what was asked is visible in the environment.  The price: only the
 * program's own functions (not its libraries'), and only under `record`.
 *
 * A parameter's register follows the SysV (x86-64) and AAPCS64 rules for
 * scalars: integers, enums and pointers take the next integer register,
 * float and double the next floating-point one.  A parameter passed in a
 * way these rules do not say (a struct by value, long double, __int128)
 * ends the list: the registers of the ones after it are not known.
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argsdwarf.h"
#include "grow.h"
#include "ta_config.h"

#if TA_HAVE_SRCLINE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

/* The type under typedefs and qualifiers; 0 with none (void). */
static int peel(Dwarf_Die *type, Dwarf_Die *out)
{
	Dwarf_Die cur = *type;

	for (int guard = 0; guard < 64; guard++) {
		Dwarf_Attribute at;
		int tag = dwarf_tag(&cur);

		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type &&
		    tag != DW_TAG_atomic_type) {
			*out = cur;
			return 1;
		}
		if (!dwarf_attr_integrate(&cur, DW_AT_type, &at) || !dwarf_formref_die(&at, &cur))
			return 0;
	}
	return 0;
}

/* The type of die (DW_AT_type), peeled: 0 when none (void). */
static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute at;
	Dwarf_Die t;

	if (!dwarf_attr_integrate(die, DW_AT_type, &at) || !dwarf_formref_die(&at, &t))
		return 0;
	return peel(&t, out);
}

static int encoding(Dwarf_Die *t)
{
	Dwarf_Attribute at;
	Dwarf_Word w;

	if (!dwarf_attr_integrate(t, DW_AT_encoding, &at) || dwarf_formudata(&at, &w) != 0)
		return -1;
	return (int)w;
}

/* A type's format ("d32", "s", "f"...) into fmt and whether it goes in a
 * floating-point register: 0, or -1 for a type passed otherwise. */
static int classify(Dwarf_Die *t, char *fmt, size_t size, int *fp)
{
	int tag = dwarf_tag(t), bytes = dwarf_bytesize(t), enc;
	Dwarf_Die p;

	*fp = 0;
	switch (tag) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		/* char *: the string. */
		if (tag == DW_TAG_pointer_type && type_of(t, &p) &&
		    dwarf_tag(&p) == DW_TAG_base_type && dwarf_bytesize(&p) == 1 &&
		    ((enc = encoding(&p)) == DW_ATE_signed_char || enc == DW_ATE_unsigned_char)) {
			snprintf(fmt, size, "s");
			return 0;
		}
		snprintf(fmt, size, "p");
		return 0;
	case DW_TAG_enumeration_type:
		if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
			return -1;
		snprintf(fmt, size, "e%d", 8 * bytes);
		return 0;
	case DW_TAG_base_type:
		enc = encoding(t);
		if (enc == DW_ATE_float) {
			if (bytes != 4 && bytes != 8)
				return -1;
			*fp = 1;
			snprintf(fmt, size, "f%d", 8 * bytes);
			return 0;
		}
		if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
			return -1;
		if ((enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char) && bytes == 1)
			snprintf(fmt, size, "c");
		else if (enc == DW_ATE_signed)
			snprintf(fmt, size, "d%d", 8 * bytes);
		else if (enc == DW_ATE_unsigned || enc == DW_ATE_boolean || enc == DW_ATE_UTF)
			snprintf(fmt, size, "u%d", 8 * bytes);
		else
			return -1;
		return 0;
	}
	return -1;
}

struct specbuf {
	char *buf;
	size_t len, cap;
	int oom;
};

static void put(struct specbuf *o, const char *s)
{
	size_t n = strlen(s);
	char *b;

	if (o->oom)
		return;
	b = ta_vec_reserve(o->buf, o->len + n + 1, &o->cap, 1, 4096);
	if (!b) {
		o->oom = 1;
		return;
	}
	o->buf = b;
	memcpy(o->buf + o->len, s, n + 1);
	o->len += n;
}

static int name_matches(const char *patterns, const char *name)
{
	const char *p = patterns;

	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char glob[512];

		if (n && n < sizeof(glob)) {
			memcpy(glob, p, n);
			glob[n] = 0;
			if (fnmatch(glob, name, 0) == 0)
				return 1;
		}
		p += n + (e != NULL);
	}
	return 0;
}

/* One function's entries. */
static void one_function(Dwarf_Die *fn, const char *name, struct specbuf *args, struct specbuf *ret)
{
	char item[64], fmt[16];
	unsigned ngp = 0, nfp = 0, nitems = 0;
	Dwarf_Die child, t;
	int fp;

	if (dwarf_child(fn, &child) == 0) {
		do {
			if (dwarf_tag(&child) != DW_TAG_formal_parameter)
				continue;
			if (!type_of(&child, &t) || classify(&t, fmt, sizeof(fmt), &fp) < 0)
				break;
			if (fp ? nfp >= 8 : ngp >= 8)
				break;
			snprintf(item, sizeof(item), "%s%s%u/%s", nitems ? "," : "",
				 fp ? "fparg" : "arg", fp ? ++nfp : ++ngp, fmt);
			if (!nitems) {
				if (args->len)
					put(args, ";");
				put(args, name);
				put(args, "@");
			}
			put(args, item);
			nitems++;
		} while (dwarf_siblingof(&child, &child) == 0);
	}
	if (type_of(fn, &t) && classify(&t, fmt, sizeof(fmt), &fp) == 0) {
		if (ret->len)
			put(ret, ";");
		put(ret, name);
		put(ret, "/");
		put(ret, fmt);
	}
}

/* The functions defined under die (a CU, a namespace). */
static int walk(Dwarf_Die *die, const char *patterns, struct specbuf *args, struct specbuf *ret,
		int level)
{
	Dwarf_Die child;
	int found = 0;

	if (level > 16 || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		const char *name;
		Dwarf_Attribute at;

		if (tag == DW_TAG_namespace) {
			found += walk(&child, patterns, args, ret, level + 1);
			continue;
		}
		if (tag != DW_TAG_subprogram || !dwarf_hasattr(&child, DW_AT_low_pc))
			continue;
		name = dwarf_formstring(dwarf_attr_integrate(&child, DW_AT_linkage_name, &at));
		if (!name)
			name = dwarf_diename(&child);
		if (!name || !name_matches(patterns, name))
			continue;
		/* A name the agent's settings could not carry. */
		if (strpbrk(name, ";@,/: "))
			continue;
		one_function(&child, name, args, ret);
		found++;
	} while (dwarf_siblingof(&child, &child) == 0);
	return found;
}

int ta_autoargs(const char *path, const char *patterns, char **args, char **ret)
{
	struct specbuf a = {0}, r = {0};
	Dwarf_Off off = 0, next;
	size_t hsize;
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	Dwarf *dw;

	*args = *ret = NULL;
	if (fd < 0) {
		fprintf(stderr, "traceagent record: --auto-args: cannot open %s\n", path);
		return -1;
	}
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		fprintf(stderr,
			"traceagent record: --auto-args: %s has no DWARF (build it with -g): %s\n",
			path, dwarf_errmsg(-1));
		close(fd);
		return -1;
	}
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu))
			found += walk(&cu, patterns, &a, &r, 0);
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	if (a.oom || r.oom) {
		free(a.buf);
		free(r.buf);
		fprintf(stderr, "traceagent record: out of memory\n");
		return -1;
	}
	*args = a.buf;
	*ret = r.buf;
	return found;
}

/* ---- enum names for the views ---- */

struct enumval {
	int64_t value;
	char *name;
};

/* The enum tables of one function's integer registers (0: its return). */
struct fnenums {
	char *path;
	uint64_t offset;
	struct enumval *v[9];
	size_t n[9], cap[9];
};

struct modfile {
	char *path;
	int fd;
	Dwarf *dw; /* NULL: none */
};

struct ta_enumcache {
	struct fnenums *f;
	size_t nf, fcap;
	struct modfile *m;
	size_t nm, mcap;
};

static Dwarf *module_dwarf(struct ta_enumcache *c, const char *path)
{
	struct modfile *m;

	for (size_t i = 0; i < c->nm; i++)
		if (!strcmp(c->m[i].path, path))
			return c->m[i].dw;
	m = ta_vec_reserve(c->m, c->nm + 1, &c->mcap, sizeof(*m), 4);
	if (!m)
		return NULL;
	c->m = m;
	m = &c->m[c->nm];
	m->path = strdup(path);
	if (!m->path)
		return NULL;
	m->fd = open(path, O_RDONLY | O_CLOEXEC);
	m->dw = m->fd >= 0 ? dwarf_begin(m->fd, DWARF_C_READ) : NULL;
	c->nm++;
	return m->dw;
}

/* The enumerators of type t (an enumeration) into *v. */
static void enumerators(Dwarf_Die *t, struct enumval **v, size_t *n, size_t *cap)
{
	Dwarf_Die e;

	if (dwarf_tag(t) != DW_TAG_enumeration_type || dwarf_child(t, &e) != 0)
		return;
	do {
		Dwarf_Attribute at;
		Dwarf_Sword sv;
		const char *name = dwarf_diename(&e);
		struct enumval *nv;

		if (dwarf_tag(&e) != DW_TAG_enumerator || !name ||
		    !dwarf_attr(&e, DW_AT_const_value, &at) || dwarf_formsdata(&at, &sv) != 0)
			continue;
		nv = ta_vec_reserve(*v, *n + 1, cap, sizeof(*nv), 8);
		if (!nv)
			return;
		*v = nv;
		nv[*n].value = (int64_t)sv;
		nv[*n].name = strdup(name);
		if (nv[*n].name)
			(*n)++;
	} while (dwarf_siblingof(&e, &e) == 0);
}

/* The subprogram whose low_pc is offset, under die. */
static int find_fn(Dwarf_Die *die, uint64_t offset, Dwarf_Die *out, int level)
{
	Dwarf_Die child;

	if (level > 16 || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		Dwarf_Addr lo;

		if (tag == DW_TAG_namespace && find_fn(&child, offset, out, level + 1))
			return 1;
		if (tag == DW_TAG_subprogram && dwarf_lowpc(&child, &lo) == 0 && lo == offset) {
			*out = child;
			return 1;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static void read_fn(Dwarf *dw, struct fnenums *f)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	Dwarf_Die fn, child, t;
	unsigned ngp = 0;
	char fmt[16];
	int fp;

	for (;;) {
		Dwarf_Die cu;

		if (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) != 0)
			return;
		if (dwarf_offdie(dw, off + hsize, &cu) && find_fn(&cu, f->offset, &fn, 0))
			break;
		off = next;
	}
	if (type_of(&fn, &t))
		enumerators(&t, &f->v[0], &f->n[0], &f->cap[0]);
	if (dwarf_child(&fn, &child) != 0)
		return;
	do {
		if (dwarf_tag(&child) != DW_TAG_formal_parameter)
			continue;
		if (!type_of(&child, &t) || classify(&t, fmt, sizeof(fmt), &fp) < 0)
			return;
		if (fp)
			continue;
		if (++ngp > 8)
			return;
		enumerators(&t, &f->v[ngp], &f->n[ngp], &f->cap[ngp]);
	} while (dwarf_siblingof(&child, &child) == 0);
}

const char *ta_enum_name(struct ta_enumcache **cp, const char *path, uint64_t offset, unsigned reg,
			 int64_t value)
{
	struct ta_enumcache *c = *cp;
	struct fnenums *f = NULL;
	Dwarf *dw;

	if (reg > 8 || !path || !*path)
		return NULL;
	if (!c && !(c = *cp = calloc(1, sizeof(*c))))
		return NULL;
	for (size_t i = 0; i < c->nf && !f; i++)
		if (c->f[i].offset == offset && !strcmp(c->f[i].path, path))
			f = &c->f[i];
	if (!f) {
		struct fnenums *nf = ta_vec_reserve(c->f, c->nf + 1, &c->fcap, sizeof(*nf), 8);

		if (!nf)
			return NULL;
		c->f = nf;
		f = &c->f[c->nf];
		memset(f, 0, sizeof(*f));
		f->path = strdup(path);
		if (!f->path)
			return NULL;
		f->offset = offset;
		c->nf++;
		dw = module_dwarf(c, path);
		if (dw)
			read_fn(dw, f);
	}
	for (size_t k = 0; k < f->n[reg]; k++)
		if (f->v[reg][k].value == value)
			return f->v[reg][k].name;
	return NULL;
}

void ta_enumcache_free(struct ta_enumcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nf; i++) {
		for (int r = 0; r < 9; r++) {
			for (size_t k = 0; k < c->f[i].n[r]; k++)
				free(c->f[i].v[r][k].name);
			free(c->f[i].v[r]);
		}
		free(c->f[i].path);
	}
	for (size_t i = 0; i < c->nm; i++) {
		if (c->m[i].dw)
			dwarf_end(c->m[i].dw);
		if (c->m[i].fd >= 0)
			close(c->m[i].fd);
		free(c->m[i].path);
	}
	free(c->f);
	free(c->m);
	free(c);
}

#else /* !TA_HAVE_SRCLINE */

int ta_autoargs(const char *path, const char *patterns, char **args, char **ret)
{
	(void)path;
	(void)patterns;
	*args = *ret = NULL;
	fprintf(stderr, "traceagent record: --auto-args: built without libdw\n");
	return -1;
}

const char *ta_enum_name(struct ta_enumcache **c, const char *path, uint64_t offset, unsigned reg,
			 int64_t value)
{
	(void)c;
	(void)path;
	(void)offset;
	(void)reg;
	(void)value;
	return NULL;
}

void ta_enumcache_free(struct ta_enumcache *c)
{
	(void)c;
}

#endif
