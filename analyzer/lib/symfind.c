/* SPDX-License-Identifier: MIT */
/*
 * symfind.c - the files that hold a module's names and source lines, found
 * by build-id; see symfind.h.
 */
#define _GNU_SOURCE
#include "symfind.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"

#define SYSTEM_DEBUG "/usr/lib/debug"

/* ---- where to look ------------------------------------------------------------ */

/* Set once by the command's options, before any lookup. */
static const char *symfs;
static const char **debug_dirs;
static size_t ndebug_dirs, debug_dirs_cap;

void ta_symfind_set_symfs(const char *dir)
{
	symfs = dir && *dir ? dir : NULL;
}

int ta_symfind_add_debug_dir(const char *dir)
{
	const char **v =
	    ta_vec_reserve(debug_dirs, ndebug_dirs + 1, &debug_dirs_cap, sizeof(*v), 4);

	if (!v)
		return -1;
	debug_dirs = v;
	debug_dirs[ndebug_dirs++] = dir;
	return 0;
}

void ta_symfind_reset(void)
{
	symfs = NULL;
	free(debug_dirs);
	debug_dirs = NULL;
	ndebug_dirs = debug_dirs_cap = 0;
}

/* ---- the build-ids the dump gave ------------------------------------------------ */

struct noted {
	char *path;
	uint8_t id[TA_BUILD_ID_MAX];
	size_t len;
};

static struct noted *notes;
static size_t nnotes, notes_cap;

void ta_symfind_note(const char *path, const uint8_t *id, size_t len)
{
	struct noted *v;
	const uint8_t *old;

	/* The first wins, as the resolver keeps the first module of a path. */
	if (!len || ta_symfind_noted(path, &old))
		return;
	v = ta_vec_reserve(notes, nnotes + 1, &notes_cap, sizeof(*v), 16);
	if (!v)
		return;
	notes = v;
	v = &notes[nnotes];
	if (len > TA_BUILD_ID_MAX)
		len = TA_BUILD_ID_MAX;
	if (!(v->path = strdup(path)))
		return;
	memcpy(v->id, id, len);
	v->len = len;
	nnotes++;
}

size_t ta_symfind_noted(const char *path, const uint8_t **id)
{
	for (size_t i = 0; i < nnotes; i++)
		if (!strcmp(notes[i].path, path)) {
			*id = notes[i].id;
			return notes[i].len;
		}
	return 0;
}

/* ---- the places, as paths ---------------------------------------------------------- */

void ta_build_id_hex(char *buf, const uint8_t *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	size_t k = 0;

	for (size_t i = 0; i < len && k + 2 < TA_BUILD_ID_HEX; i++) {
		buf[k++] = digits[id[i] >> 4];
		buf[k++] = digits[id[i] & 15];
	}
	buf[k] = 0;
}

struct cands {
	struct ta_cand *c;
	size_t n, cap;
	int nomem;
};

static void add(struct cands *l, enum ta_cand_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(struct cands *l, enum ta_cand_kind kind, const char *fmt, ...)
{
	struct ta_cand *v = ta_vec_reserve(l->c, l->n + 1, &l->cap, sizeof(*v), 16);
	va_list ap;
	char *p = NULL;
	int rc = 0;

	if (!v) {
		l->nomem = 1;
		return;
	}
	l->c = v;
	if (fmt) {
		va_start(ap, fmt);
		rc = vasprintf(&p, fmt, ap);
		va_end(ap);
	}
	if (rc < 0) {
		l->nomem = 1;
		return;
	}
	/* The same file twice (a debug link named as the .debug path) is
	 * read once. */
	for (size_t i = 0; p && i < l->n; i++)
		if (l->c[i].path && !strcmp(l->c[i].path, p)) {
			free(p);
			return;
		}
	l->c[l->n].path = p;
	l->c[l->n].kind = kind;
	l->n++;
}

long ta_symfind_cands(const char *path, const char *hex, const char *link, int with_debuginfod,
		      struct ta_cand **out)
{
	struct cands l = {0};
	const char *slash = strrchr(path, '/');
	int dir = slash ? (int)(slash - path) : 0;
	int abs = path[0] == '/';
	/* The .build-id layout: the first byte's two digits name a folder. */
	int by_id = strlen(hex) > 2;

	/* A link with a folder in it would reach outside the places. */
	if (link && (!*link || strchr(link, '/')))
		link = NULL;
	if (abs)
		add(&l, TA_CAND_FILE, "%s", path);
	if (abs && symfs)
		add(&l, TA_CAND_FILE, "%s%s", symfs, path);
	for (size_t i = 0; i < ndebug_dirs; i++) {
		if (by_id)
			add(&l, TA_CAND_DEBUG, "%s/.build-id/%.2s/%s.debug", debug_dirs[i], hex,
			    hex + 2);
		if (abs)
			add(&l, TA_CAND_DEBUG, "%s%s.debug", debug_dirs[i], path);
		if (abs && link)
			add(&l, TA_CAND_DEBUG, "%s%.*s/%s", debug_dirs[i], dir, path, link);
	}
	if (by_id)
		add(&l, TA_CAND_DEBUG, SYSTEM_DEBUG "/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (abs && link) {
		add(&l, TA_CAND_DEBUG, "%.*s/%s", dir, path, link);
		add(&l, TA_CAND_DEBUG, "%.*s/.debug/%s", dir, path, link);
		add(&l, TA_CAND_DEBUG, SYSTEM_DEBUG "%.*s/%s", dir, path, link);
	}
	if (with_debuginfod && by_id)
		add(&l, TA_CAND_DEBUGINFOD, NULL);
	if (l.nomem) {
		ta_cands_free(l.c, (long)l.n);
		return -1;
	}
	*out = l.c;
	return (long)l.n;
}

void ta_cands_free(struct ta_cand *c, long n)
{
	for (long i = 0; i < n; i++)
		free(c[i].path);
	free(c);
}

/* ---- reading a file's build-id and debug link ------------------------------------------ */

/* The GNU build-id note of e, in hex into hex ("" when it has none). */
static void elf_build_id(Elf *e, char *hex)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	hex[0] = 0;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz) {
				ta_build_id_hex(hex, (const uint8_t *)d->d_buf + desc_off,
						nh.n_descsz);
				return;
			}
		}
	}
}

/* The name in e's .gnu_debuglink section (malloc'd), or NULL. */
static char *elf_debuglink(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstr;

	if (elf_getshdrstrndx(e, &shstr) != 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (!name || strcmp(name, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_size || !memchr(d->d_buf, 0, d->d_size))
			return NULL;
		return strdup(d->d_buf);
	}
	return NULL;
}

/* Opens path and reads its build-id (hex) and, when link is not NULL and
 * *link is, its debug link.  Returns the fd, or -1 (errno set; 0 for a
 * file that is not ELF). */
static int open_elf(const char *path, char *hex, char **link)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	hex[0] = 0;
	if (fd < 0)
		return -1;
	/* libelf reads nothing before its version is set (once is enough;
	 * again costs nothing). */
	e = elf_version(EV_CURRENT) != EV_NONE ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		errno = 0;
		return -1;
	}
	elf_build_id(e, hex);
	if (link && !*link)
		*link = elf_debuglink(e);
	elf_end(e);
	return fd;
}

/* ---- debuginfod ------------------------------------------------------------------------ */

/* libdebuginfod's interface (elfutils debuginfod.h), loaded at run time
 * so that the build needs neither it nor its header. */
typedef struct debuginfod_client debuginfod_client;
typedef debuginfod_client *(*dbgd_begin_fn)(void);
typedef int (*dbgd_find_fn)(debuginfod_client *c, const unsigned char *build_id, int len,
			    char **path);
typedef void (*dbgd_end_fn)(debuginfod_client *c);

static struct {
	int tried;
	dbgd_begin_fn begin;
	dbgd_find_fn find;
	dbgd_end_fn end;
} dbgd;

static int debuginfod_wanted(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && *urls;
}

static int debuginfod_load(void)
{
	void *h, *b, *f, *e;

	if (dbgd.tried)
		return dbgd.find != NULL;
	dbgd.tried = 1;
	h = dlopen("libdebuginfod.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (!h)
		return 0;
	b = dlsym(h, "debuginfod_begin");
	f = dlsym(h, "debuginfod_find_debuginfo");
	e = dlsym(h, "debuginfod_end");
	if (!b || !f || !e) {
		dlclose(h);
		return 0;
	}
	/* POSIX guarantees a data pointer from dlsym converts to a function
	 * pointer. */
	memcpy(&dbgd.begin, &b, sizeof(b));
	memcpy(&dbgd.find, &f, sizeof(f));
	memcpy(&dbgd.end, &e, sizeof(e));
	return 1;
}

/* The debug file of build-id hex from debuginfod (its cache): the fd and
 * *path (malloc'd), or -1. */
static int debuginfod_fetch(const char *hex, char **path)
{
	debuginfod_client *c;
	int fd;

	*path = NULL;
	if (!debuginfod_load() || !(c = dbgd.begin()))
		return -1;
	/* Length 0: the id is given as a hex string. */
	fd = dbgd.find(c, (const unsigned char *)hex, 0, path);
	dbgd.end(c);
	if (fd < 0) {
		free(*path);
		*path = NULL;
		return -1;
	}
	return fd;
}

/* ---- the walk ------------------------------------------------------------------------------ */

int ta_symfind_begin(struct ta_symfind *f, const char *path, const uint8_t *id, size_t len)
{
	char *link = NULL;
	char hex[TA_BUILD_ID_HEX];
	int fd;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->dump_has_id = len > 0;
	ta_build_id_hex(f->want, id, len);
	f->state = TA_FILE_ABSENT;
	f->errnum = ENOENT;
	if (path[0] == '/') {
		fd = open_elf(path, f->file_id, &link);
		if (fd >= 0) {
			close(fd);
			f->state = !f->dump_has_id		 ? TA_FILE_UNCHECKED
				   : strcmp(f->file_id, f->want) ? TA_FILE_OTHER
								 : TA_FILE_MATCH;
			/* Without the dump's, the file's own build-id finds its
			 * debug file. */
			if (!f->dump_has_id)
				memcpy(f->want, f->file_id, sizeof(f->want));
		} else {
			f->state = errno ? TA_FILE_ABSENT : TA_FILE_NOT_ELF;
			f->errnum = errno;
		}
	}
	/* The link of a file with another build-id still names the
	 * module's debug file the same way; the file found is checked. */
	if (symfs && path[0] == '/') {
		char *p;

		if (asprintf(&p, "%s%s", symfs, path) < 0) {
			free(link);
			return -1;
		}
		fd = open_elf(p, hex, &link);
		free(p);
		if (fd >= 0) {
			close(fd);
			f->symfs_match = f->want[0] ? !strcmp(hex, f->want) : 1;
		}
	}
	f->n = ta_symfind_cands(path, f->want, link, debuginfod_wanted(), &f->c);
	free(link);
	if (f->n < 0) {
		f->n = 0;
		f->c = NULL;
		return -1;
	}
	return 0;
}

int ta_symfind_next(struct ta_symfind *f, struct ta_symfile *out)
{
	char hex[TA_BUILD_ID_HEX];

	while (f->next < f->n) {
		const struct ta_cand *c = &f->c[f->next++];
		int fd;

		out->path = NULL;
		if (c->kind == TA_CAND_DEBUGINFOD) {
			fd = debuginfod_fetch(f->want, &out->path);
			if (fd < 0)
				continue;
			out->fd = fd;
			out->source = TA_SYMS_DEBUGINFOD;
			return 1;
		}
		if (c->kind == TA_CAND_FILE && !strcmp(c->path, f->path) &&
		    (f->state == TA_FILE_OTHER || f->state == TA_FILE_ABSENT ||
		     f->state == TA_FILE_NOT_ELF))
			continue;
		fd = open_elf(c->path, hex, NULL);
		if (fd < 0)
			continue;
		/* Every file is the module's only with the module's build-id;
		 * with none known (neither the dump nor the file says), a
		 * file found by its name is taken. */
		if (f->want[0] && strcmp(hex, f->want)) {
			close(fd);
			continue;
		}
		if (!(out->path = strdup(c->path))) {
			close(fd);
			return 0;
		}
		out->fd = fd;
		out->source = c->kind == TA_CAND_FILE ? TA_SYMS_FILE : TA_SYMS_DEBUG_FILE;
		return 1;
	}
	return 0;
}

void ta_symfile_close(struct ta_symfile *sf)
{
	if (sf->fd >= 0)
		close(sf->fd);
	sf->fd = -1;
	free(sf->path);
	sf->path = NULL;
}

void ta_symfind_end(struct ta_symfind *f)
{
	ta_cands_free(f->c, f->n);
	f->c = NULL;
	f->n = f->next = 0;
}

int ta_symfind_match(const struct ta_symfind *f)
{
	if (!f->dump_has_id)
		return -1;
	if (f->state == TA_FILE_MATCH || f->symfs_match)
		return 1;
	if (f->state == TA_FILE_OTHER || f->state == TA_FILE_NOT_ELF)
		return 0;
	return -1;
}
