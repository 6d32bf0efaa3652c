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

struct out {
	char *buf;
	size_t len, cap;
	int oom;
};

static void put(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		char *b;

		while (cap < o->len + n + 1)
			cap *= 2;
		b = malloc(cap);
		if (!b) {
			o->oom = 1;
			return;
		}
		if (o->len)
			memcpy(b, o->buf, o->len);
		free(o->buf);
		o->buf = b;
		o->cap = cap;
	}
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
static void one_function(Dwarf_Die *fn, const char *name, struct out *args, struct out *ret)
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
static int walk(Dwarf_Die *die, const char *patterns, struct out *args, struct out *ret, int level)
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
	struct out a = {0}, r = {0};
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

#else /* !TA_HAVE_SRCLINE */

int ta_autoargs(const char *path, const char *patterns, char **args, char **ret)
{
	(void)path;
	(void)patterns;
	*args = *ret = NULL;
	fprintf(stderr, "traceagent record: --auto-args: built without libdw\n");
	return -1;
}

#endif
