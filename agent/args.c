/* SPDX-License-Identifier: MIT */
/*
 * args.c - which arguments and return values are recorded: the settings
 * parsed into one spec per function (argregs.h's ta_args_find), when the
 * patchers patch it.  Off the hot path (args_hot.c records).
 *
 *   TRACEAGENT_ARGS='PATTERN@ITEM[,ITEM...][;PATTERN@...]'
 *       ITEM: argN (the Nth integer register: rdi, rsi, ... on x86-64,
 *       x0-x7 on aarch64), fpargN (the Nth floating-point register) or
 *       retval, each with an optional /FORMAT
 *   TRACEAGENT_RETVAL='PATTERN[/FORMAT][;PATTERN...]'
 *   TRACEAGENT_ARGS_STRLEN=N  the most bytes of a string kept (64)
 * FORMAT: a letter, d (signed, the default), u, x, s (string), c (char),
 * f (floating point, fparg's default), p (pointer), e (enum), and for
 * d, u, x, e, f an optional size in bits (d32, f32; 64 by default).
 * PATTERN: [MODULE:]GLOB, as TRACEAGENT_PATCH's.  The first entry naming
 * a function gives its arguments; the first naming it in either setting,
 * its return value.  TRACEAGENT_AUTO_ARGS is `traceagent record`'s (it
 * reads the program's DWARF and writes these two): the agent says so.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "args.h"
#include "argregs.h"
#include "base.h"
#include "fnsel.h"
#include "settings.h"

uint32_t ta_args_strmax = 64;

struct argentry {
	struct ta_patterns pat; /* one pattern */
	int has_args;
	struct ta_argspec spec;
};

static struct argentry *entries;
static size_t nentries, entries_cap;
static int parsed;

/* "d32", "s", ...: 0, or -1 when the text is no format. */
static int parse_format(const char *f, struct ta_argitem *it)
{
	static const char letters[] = "duxscfpe";
	static const uint8_t fmts[] = {TA_ARGF_INT,  TA_ARGF_UINT,  TA_ARGF_HEX, TA_ARGF_STR,
				       TA_ARGF_CHAR, TA_ARGF_FLOAT, TA_ARGF_PTR, TA_ARGF_ENUM};
	const char *l = *f ? strchr(letters, *f) : NULL;
	unsigned bits = 0;

	if (!l)
		return -1;
	it->fmt = fmts[l - letters];
	it->size = it->fmt == TA_ARGF_CHAR ? 1 : 8;
	if (!f[1])
		return 0;
	if (it->fmt == TA_ARGF_STR || it->fmt == TA_ARGF_CHAR || it->fmt == TA_ARGF_PTR)
		return -1;
	for (const char *p = f + 1; *p; p++) {
		if (*p < '0' || *p > '9' || bits > 64)
			return -1;
		bits = bits * 10 + (unsigned)(*p - '0');
	}
	if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
		return -1;
	if (it->fmt == TA_ARGF_FLOAT && bits != 32 && bits != 64)
		return -1;
	it->size = (uint8_t)(bits / 8);
	return 0;
}

/* "arg2/s", "fparg1", "retval/x": 1 an argument, 2 the return value, -1
 * bad. */
static int parse_item(char *s, struct ta_argitem *it)
{
	char *slash = strchr(s, '/');
	unsigned long n;
	char *end;
	int ret = 1;

	if (slash)
		*slash = 0;
	memset(it, 0, sizeof(*it));
	if (!strcmp(s, "retval")) {
		ret = 2;
		it->fmt = TA_ARGF_INT;
		it->size = 8;
	} else {
		if (!strncmp(s, "fparg", 5)) {
			it->fp = 1;
			s += 5;
		} else if (!strncmp(s, "arg", 3)) {
			s += 3;
		} else {
			return -1;
		}
		n = strtoul(s, &end, 10);
		if (end == s || *end || n < 1 || n > 8)
			return -1;
		it->reg = (uint8_t)n;
		it->fmt = it->fp ? TA_ARGF_FLOAT : TA_ARGF_INT;
		it->size = 8;
	}
	if (slash && parse_format(slash + 1, it) < 0)
		return -1;
	/* A floating-point register holds floating-point values; an integer
	 * one anything else. */
	if (it->fp != (it->fmt == TA_ARGF_FLOAT) && ret == 1)
		return -1;
	return ret;
}

static struct argentry *new_entry(const char *pattern, const char *what)
{
	struct argentry *e = ta_vec_reserve(entries, nentries + 1, &entries_cap, sizeof(*e), 8);

	if (!e)
		return NULL;
	entries = e;
	e = &entries[nentries];
	memset(e, 0, sizeof(*e));
	if (*pattern == '!' || strchr(pattern, ',')) {
		ta_warn("%s: \"%s\" is not one function pattern; ignored", what, pattern);
		return NULL;
	}
	if (ta_patterns_parse(&e->pat, pattern, what) < 0) {
		ta_patterns_free(&e->pat);
		return NULL;
	}
	return e;
}

/* One entry of TRACEAGENT_ARGS, "PATTERN@ITEM,..." (modified). */
static void parse_args_entry(char *tok)
{
	char *at = strrchr(tok, '@'), *save = NULL, *it;
	struct ta_argspec spec;
	struct argentry *e;

	memset(&spec, 0, sizeof(spec));
	if (!at || at == tok) {
		ta_warn("TRACEAGENT_ARGS: \"%s\" is not PATTERN@arg1,...; ignored", tok);
		return;
	}
	*at = 0;
	for (it = strtok_r(at + 1, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
		struct ta_argitem item;
		int k = parse_item(it, &item);

		if (k < 0) {
			ta_warn("TRACEAGENT_ARGS: bad item \"%s\" for %s (argN, fpargN or retval, "
				"/d /u /x /s /c /f /p /e, sizes 8 16 32 64); entry ignored",
				it, tok);
			return;
		}
		if (k == 2) {
			spec.has_ret = 1;
			spec.ret = item;
		} else if (spec.nargs < TA_ARGS_MAX_ITEMS) {
			spec.a[spec.nargs++] = item;
		}
	}
	e = new_entry(tok, "TRACEAGENT_ARGS");
	if (!e)
		return;
	e->has_args = 1;
	e->spec = spec;
	nentries++;
}

static void parse_retval_entry(char *tok)
{
	char *slash = strchr(tok, '/');
	struct ta_argitem item = {TA_ARGF_INT, 8, 0, 0};
	struct argentry *e;

	if (slash) {
		*slash = 0;
		if (parse_format(slash + 1, &item) < 0) {
			ta_warn("TRACEAGENT_RETVAL: bad format \"%s\" for %s; ignored", slash + 1,
				tok);
			return;
		}
	}
	e = new_entry(tok, "TRACEAGENT_RETVAL");
	if (!e)
		return;
	e->spec.has_ret = 1;
	e->spec.ret = item;
	nentries++;
}

static void parse_setting(const char *name, void (*one)(char *))
{
	const char *v = ta_settings_value(name);
	char *copy, *save = NULL, *tok;

	if (!v || !*v)
		return;
	copy = strdup(v);
	if (!copy)
		return;
	for (tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		if (*tok)
			one(tok);
	free(copy);
}

/* Once, at the patcher's start (one thread), and again at each attach
 * (ta_args_reload).  The settings: the environment's, or the attach's. */
static void parse(void)
{
	const char *s;

	if (parsed)
		return;
	parsed = 1;
	if (getauxval(AT_SECURE))
		return;
	s = ta_settings_value("TRACEAGENT_ARGS_STRLEN");
	if (s && *s) {
		char *end;
		unsigned long n = strtoul(s, &end, 10);

		if (*end || n < 1 || n > TA_ARGS_STR_MAX)
			ta_warn("TRACEAGENT_ARGS_STRLEN: \"%s\" is not 1 to %u; 64 kept", s,
				TA_ARGS_STR_MAX);
		else
			ta_args_strmax = (uint32_t)n;
	}
	parse_setting("TRACEAGENT_ARGS", parse_args_entry);
	/* RETVAL's entries may name functions ARGS gives arguments: a
	 * function's return value comes from the first entry asking one. */
	parse_setting("TRACEAGENT_RETVAL", parse_retval_entry);
	s = ta_settings_value("TRACEAGENT_AUTO_ARGS");
	if (s && *s && !nentries)
		ta_warn("TRACEAGENT_AUTO_ARGS is read by `traceagent record --auto-args` (it reads "
			"the program's DWARF); the agent alone records no argument");
}

void ta_args_reload(void)
{
	for (size_t i = 0; i < nentries; i++)
		ta_patterns_free(&entries[i].pat);
	nentries = 0;
	ta_args_strmax = 64;
	parsed = 0;
	parse();
}

int ta_args_wanted(void)
{
	parse();
	return nentries > 0;
}

size_t ta_args_add_patterns(struct ta_patterns *ps)
{
	size_t added = 0;

	parse();
	for (size_t i = 0; i < nentries; i++) {
		const struct ta_pattern *p = &entries[i].pat.p[0];
		struct ta_pattern *np = ta_vec_reserve(ps->p, ps->n + 1, &ps->cap, sizeof(*np), 8);

		if (!np)
			break;
		ps->p = np;
		np = &ps->p[ps->n];
		*np = *p;
		np->module = p->module ? strdup(p->module) : NULL;
		np->glob = strdup(p->glob);
		if (!np->glob || (p->module && !np->module)) {
			free(np->module);
			free(np->glob);
			break;
		}
		ps->n++;
		added++;
	}
	return added;
}

const struct ta_argspec *ta_args_find(uint64_t fn, const char *name)
{
	static uint64_t exe_base;
	struct ta_argspec spec, *out;
	const char *modbase = "";
	int is_exe = 0, found_args = 0;
	Dl_info info;

	parse();
	if (!nentries || !name)
		return NULL;
	if (!exe_base) {
		Dl_info ei;

		if (dladdr((void *)(uintptr_t)getauxval(AT_ENTRY), &ei) && ei.dli_fbase)
			exe_base = (uint64_t)(uintptr_t)ei.dli_fbase;
	}
	if (dladdr((void *)(uintptr_t)fn, &info) && info.dli_fbase) {
		is_exe = (uint64_t)(uintptr_t)info.dli_fbase == exe_base;
		modbase = info.dli_fname ? ta_base_name(info.dli_fname) : "";
	}
	memset(&spec, 0, sizeof(spec));
	for (size_t i = 0; i < nentries; i++) {
		const struct argentry *e = &entries[i];

		if (!ta_pattern_matches(&e->pat.p[0], modbase, is_exe, name))
			continue;
		if (e->has_args && !found_args) {
			found_args = 1;
			spec.nargs = e->spec.nargs;
			memcpy(spec.a, e->spec.a, sizeof(spec.a));
		}
		if (e->spec.has_ret && !spec.has_ret) {
			spec.has_ret = 1;
			spec.ret = e->spec.ret;
		}
	}
	if (!spec.nargs && !spec.has_ret)
		return NULL;
	out = malloc(sizeof(*out));
	if (out)
		*out = spec;
	return out;
}
