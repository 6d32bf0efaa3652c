/* SPDX-License-Identifier: MIT */
/*
 * cmdopts.c - the subcommands' option parser and the values they share;
 * see cmdopts.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdopts.h"
#include "section.h"
#include "session.h"
#include "srcline.h"
#include "symfind.h"

#define JOBS_MAX 1024u

/* The CPUs this process may run on (taskset, a container's cpuset). */
static unsigned cpus_usable(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

void ta_opts_init(struct ta_opts *p, const char *cmd, const struct ta_opt *table,
		  void (*usage)(FILE *f), int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->table = table;
	p->usage = usage;
	p->argc = argc;
	p->argv = argv;
	p->i = 1;
	/* -j's default: a worker per CPU (the dump reader's; see session.h). */
	ta_session_jobs = cpus_usable();
	if (ta_session_jobs > 64)
		ta_session_jobs = 64;
}

/* -j N, -jN, --jobs N, --jobs=N (every analysis command takes it): 1 if a
 * was it (taken, with its value), 0 if not, or TA_OPT_EXIT. */
static int jobs_option(struct ta_opts *p, const char *a)
{
	static const struct ta_opt jobs = {"--jobs", TA_ARG_EITHER, 0};
	uint64_t n;

	if (!strncmp(a, "-j", 2) && a[2] != '-')
		p->val = a[2] ? a + 2 : NULL;
	else if (!strcmp(a, "--jobs"))
		p->val = NULL;
	else if (!strncmp(a, "--jobs=", 7))
		p->val = a + 7;
	else
		return 0;
	p->opt = &jobs;
	if (!p->val) {
		if (p->i >= p->argc) {
			p->status = ta_usage_error(p->cmd, "option '%s' needs a value", a);
			return TA_OPT_EXIT;
		}
		p->val = p->argv[p->i++];
	}
	if (ta_opts_u64(p, "is not a number of jobs from 1 to 1024", &n) ||
	    (!n || n > JOBS_MAX ? ta_opts_bad(p, "is not a number of jobs from 1 to 1024") : 0)) {
		p->status = 2;
		return TA_OPT_EXIT;
	}
	ta_session_jobs = (unsigned)n;
	return 1;
}

/* The entry that takes word a (its value in *val), or NULL.  As
 * getopt_long: a long option's value is "--name=VALUE" or the next word, a
 * short one's "-oVALUE" or the next word; a flag takes no value, so
 * "--json=1" is unknown and "--json x" leaves x alone.  A missing separate
 * value is the caller's to see: *val is then NULL. */
static const struct ta_opt *lookup(const struct ta_opt *t, const char *a, const char **val)
{
	for (; t->name; t++) {
		size_t n = strlen(t->name);
		int is_short = t->name[1] != '-';

		if (strncmp(a, t->name, n))
			continue;
		if (!a[n]) {
			*val = NULL;
			return t;
		}
		if (t->arg == TA_ARG_NONE)
			continue;
		if (is_short) {
			*val = a + n;
			return t;
		}
		if (a[n] == '=') {
			*val = a + n + 1;
			return t;
		}
	}
	return NULL;
}

int ta_opts_next(struct ta_opts *p)
{
	int leading = !!(p->flags & TA_OPTS_LEADING);
	const char *a;

	for (;;) {
		int j;

		p->opt = NULL;
		p->val = NULL;
		if (p->i >= p->argc)
			return TA_OPT_END;
		a = p->arg = p->argv[p->i];
		/* A lone "-" names a file to the analysis commands (as to most
		 * tools), but the loader always took it for an option. */
		if (p->only_args || a[0] != '-' || (!a[1] && !leading)) {
			if (leading)
				return TA_OPT_END;
			p->i++;
			p->val = a;
			return TA_OPT_ARG;
		}
		p->i++;
		if (!leading && (j = jobs_option(p, a)) != 0) {
			if (j < 0)
				return j;
			continue;
		}
		if (strcmp(a, "--"))
			break;
		if (leading)
			return TA_OPT_END;
		p->only_args = 1;
	}
	/* Every command takes these, so no table lists them. */
	if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		p->usage(stdout);
		p->status = 0;
		return TA_OPT_EXIT;
	}
	p->opt = lookup(p->table, a, &p->val);
	if (!p->opt) {
		p->status = ta_usage_error(p->cmd, "unknown option '%s'", a);
		return TA_OPT_EXIT;
	}
	if (p->opt->arg != TA_ARG_NONE && !p->val) {
		if (p->i >= p->argc) {
			p->status = ta_usage_error(p->cmd, "option '%s' needs a value", a);
			return TA_OPT_EXIT;
		}
		p->val = p->argv[p->i++];
	}
	return p->opt->id;
}

int ta_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "traceagent %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; try 'traceagent %s --help'\n", cmd);
	return 2;
}

/* ---- the shared values --------------------------------------------------------------- */

int ta_opts_bad(const struct ta_opts *p, const char *why)
{
	fprintf(stderr, "traceagent %s: %s: '%s' %s\n", p->cmd, p->opt->name, p->val, why);
	return 2;
}

int ta_opts_u64(const struct ta_opts *p, const char *why, uint64_t *n)
{
	const char *s = p->val;
	char *end;

	/* strtoull would take a sign or leading blanks. */
	if (*s < '0' || *s > '9')
		return ta_opts_bad(p, why);
	errno = 0;
	*n = strtoull(s, &end, 10);
	return errno || *end ? ta_opts_bad(p, why) : 0;
}

int ta_opts_top(const struct ta_opts *p, uint64_t *n)
{
	const char *why = "is not a positive number";

	if (ta_opts_u64(p, why, n))
		return 2;
	return *n ? 0 : ta_opts_bad(p, why);
}

int ta_opts_sort(const struct ta_opts *p, enum ta_sort_key *key)
{
	/* In the order of enum ta_sort_key. */
	static const char *const keys[] = {"total", "self", "calls", "name", NULL};
	int k;

	if (ta_opts_choice(p, keys, &k))
		return 2;
	*key = (enum ta_sort_key)k;
	return 0;
}

int ta_opts_demangle(const struct ta_opts *p, int *mode)
{
	/* In the order of symbols.h's enum ta_demangle. */
	static const char *const keys[] = {"simple", "full", "no", NULL};

	return ta_opts_choice(p, keys, mode);
}

int ta_opts_symfind(const struct ta_opts *p)
{
	if (!*p->val)
		return ta_opts_bad(p, "is not a folder");
	if (p->opt->id == TA_OPT_SYMFS) {
		ta_symfind_set_symfs(p->val);
		return 0;
	}
	if (ta_symfind_add_debug_dir(p->val) < 0) {
		fprintf(stderr, "traceagent %s: out of memory\n", p->cmd);
		return 2;
	}
	return 0;
}

int ta_opts_choice(const struct ta_opts *p, const char *const *keys, int *k)
{
	char why[128] = "is not ";
	size_t len = strlen(why);
	int n;

	for (n = 0; keys[n]; n++)
		if (!strcmp(p->val, keys[n])) {
			*k = n;
			return 0;
		}
	/* "is not A, B or C": the tables' few short keys fit. */
	for (int j = 0; j < n && len < sizeof(why); j++)
		len += (size_t)snprintf(why + len, sizeof(why) - len, "%s%s",
					j == 0	     ? ""
					: j == n - 1 ? " or "
						     : ", ",
					keys[j]);
	return ta_opts_bad(p, why);
}

int ta_opts_dump(const struct ta_opts *p, const char **path)
{
	if (*path) {
		fprintf(stderr, "traceagent %s: one dump at a time ('%s' and '%s')\n", p->cmd,
			*path, p->val);
		return 2;
	}
	*path = p->val;
	return 0;
}

int ta_opts_need_dump(const struct ta_opts *p, const char *path)
{
	if (path)
		return 0;
	return ta_usage_error(p->cmd, "no dump given");
}

/* 1 when the option is into's and was taken, 0 when it is the command's,
 * or 2 when its value was refused. */
static int take_into(struct ta_opts *p, int id, const struct ta_opts_into *into)
{
	switch (id) {
	case TA_OPT_SECTION:
		/* Every view the command opens (section.h). */
		if (!*p->val) {
			(void)ta_opts_bad(p, "is not a section name");
			return 2;
		}
		ta_section_set(p->val);
		return 1;
	case TA_OPT_DEMANGLE:
		if (!into->demangle)
			return 0;
		return ta_opts_demangle(p, into->demangle) ? 2 : 1;
	case TA_OPT_ARG:
		if (!into->dump)
			return 0;
		return ta_opts_dump(p, into->dump) ? 2 : 1;
	case TA_OPT_JSON:
		return into->json ? (*into->json = 1) : 0;
	case TA_OPT_CSV:
		return into->csv ? (*into->csv = 1) : 0;
	case TA_OPT_THREADS:
		return into->threads ? (*into->threads = 1) : 0;
	case TA_OPT_SRCLINE:
		if (!into->srcline)
			return 0;
		if (!ta_srcline_built(p->cmd))
			return 2;
		return *into->srcline = 1;
	case TA_OPT_OUTPUT:
		if (!into->output)
			return 0;
		*into->output = p->val;
		return 1;
	case TA_OPT_FUNCTION:
		if (!into->function)
			return 0;
		*into->function = p->val;
		return 1;
	case TA_OPT_TOP:
		if (!into->top)
			return 0;
		return ta_opts_top(p, into->top) ? 2 : 1;
	case TA_OPT_SORT:
		if (!into->sort)
			return 0;
		return ta_opts_sort(p, into->sort) ? 2 : 1;
	case TA_OPT_SYMFS:
	case TA_OPT_DEBUG_DIR:
		/* Where every command that names functions looks for files. */
		return ta_opts_symfind(p) ? 2 : 1;
	}
	return 0;
}

int ta_opts_next_into(struct ta_opts *p, const struct ta_opts_into *into)
{
	int id;

	while ((id = ta_opts_next(p)) != TA_OPT_END && id != TA_OPT_EXIT) {
		int r = take_into(p, id, into);

		if (r == 2) {
			p->status = 2;
			return TA_OPT_EXIT;
		}
		if (!r)
			return id;
	}
	return id;
}
