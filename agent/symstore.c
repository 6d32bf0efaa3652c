/* SPDX-License-Identifier: MIT */
/*
 * symstore.c - each traced module's function symbols in the dump (SYMBOLS
 * chunks, format/FORMAT.md "19 SYMBOLS"), so that a dump read elsewhere,
 * streamed to a collector, or whose binaries were rebuilt or deleted still
 * names its functions.
 *
 * Which modules: those whose functions can appear in the dump, not every
 * library of the process.  A module that imports __cyg_profile_func_enter
 * or _exit (built with -finstrument-functions: the hooks' GOT entries, the
 * same that the start binds and an attach redirects), and a module whose
 * functions the patcher patched (TRACEAGENT_PATCH, `attach --patch`).  The
 * library calls and the manual API's zones are named by their own chunks
 * (LIBCALLS, SITES).  Each module once per process, keyed by build-id (by
 * path without one); a forked child appending to its parent's file leaves
 * them to the parent's chunks.  TRACEAGENT_SYMBOLS=off writes none.
 *
 * Found where the modules are found (the start's description, dlopen, an
 * attach's poll, the patcher), read and written by the flusher thread at
 * the start of its next pass, before the events it drains then, compressed
 * (or by the thread that writes the END, for what it had not done yet):
 * never from a hook, and not on the program's start-up path.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base.h"
#include "dump.h"
#include "fnsel.h"
#include "format.h"
#include "lazylib.h"
#include "modules.h"
#include "settings.h"
#include "symstore.h"
#include "walk.h"

/* The modules whose symbols are in the dump, by key (build-id, or path). */
struct written {
	size_t len;
	uint8_t *key;
};
static struct written *written;
static size_t nwritten, written_cap;
/* The modules found whose symbols the flusher has yet to write. */
struct pending {
	char *path;
	uint64_t bias;
	uint8_t *id;
	size_t idlen;
};
static struct pending *pending;
static size_t npending, pending_cap;
/* Load biases of modules the patcher patched. */
static uint64_t *patched;
static size_t npatched, patched_cap;
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

static int any_slot(void *arg, uintptr_t *at, int is_exit, int relro)
{
	(void)arg;
	(void)at;
	(void)is_exit;
	(void)relro;
	return 1;
}

/* Whether the module's functions can be in the dump.  Under store_lock. */
static int traced(const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < npatched; i++)
		if (patched[i] == (uint64_t)info->dlpi_addr)
			return 1;
	return ta_module_hook_slots(info, any_slot, NULL) != 0;
}

/* 1 if key was written before, else 0 (and it is then known).  Under
 * store_lock. */
static int seen(const uint8_t *key, size_t len)
{
	struct written *w;

	for (size_t i = 0; i < nwritten; i++)
		if (written[i].len == len && !memcmp(written[i].key, key, len))
			return 1;
	w = ta_vec_reserve(written, nwritten + 1, &written_cap, sizeof(*w), 16);
	if (!w)
		return 0; /* written again later rather than never */
	written = w;
	written[nwritten].key = malloc(len ? len : 1);
	if (!written[nwritten].key)
		return 0;
	memcpy(written[nwritten].key, key, len);
	written[nwritten++].len = len;
	return 0;
}

static int emit(void *arg, const void *payload, size_t len)
{
	struct ta_zbuf *z = arg;

	ta_dump_chunk_z(TA_CHUNK_SYMBOLS, payload, len, z);
	return 0;
}

/* Reads the module's table and writes it. */
static void store(const char *path, uint64_t bias, const uint8_t *id, size_t idlen)
{
	struct ta_syms_entry *e;
	struct ta_syms_raw *r;
	struct ta_zbuf z = {0};
	unsigned source;
	void *map;
	size_t maplen = 0, n;

	r = ta_module_symbols(path, id, idlen, &n, &source, &map, &maplen);
	n = ta_syms_pick(r, r ? n : 0);
	/* No table the agent can read (the file gone since, or not
	 * readable here): none stored, so that a reader still tries the
	 * file it may have. */
	e = n ? malloc(n * sizeof(*e)) : NULL;
	if (e) {
		for (size_t i = 0; i < n; i++) {
			e[i].value = r[i].value;
			e[i].size = r[i].size;
			e[i].name = r[i].name;
		}
		ta_syms_encode(id, idlen, bias, path, source, e, n, emit, &z);
	}
	free(e);
	free(r);
	ta_zbuf_free(&z);
	if (map)
		munmap(map, maplen);
}

/* Queues a module for the flusher.  Under store_lock. */
static void queue(const char *path, uint64_t bias, const uint8_t *id, size_t idlen)
{
	struct pending *p = ta_vec_reserve(pending, npending + 1, &pending_cap, sizeof(*p), 8);

	if (!p)
		return;
	pending = p;
	p = &pending[npending];
	p->path = strdup(path);
	p->id = malloc(idlen ? idlen : 1);
	if (!p->path || !p->id) {
		free(p->path);
		free(p->id);
		return;
	}
	memcpy(p->id, id, idlen);
	p->idlen = idlen;
	p->bias = bias;
	npending++;
}

void ta_symstore_module(const struct dl_phdr_info *info, const char *path, const uint8_t *id,
			size_t idlen, int again)
{
	if (!ta_cfg.symbols || !path[0])
		return;
	pthread_mutex_lock(&store_lock);
	if (!traced(info)) {
		pthread_mutex_unlock(&store_lock);
		return;
	}
	/* A control-socket stream's description goes out now, to it alone. */
	if (again) {
		pthread_mutex_unlock(&store_lock);
		store(path, (uint64_t)info->dlpi_addr, id, idlen);
		return;
	}
	if (!(idlen ? seen(id, idlen) : seen((const uint8_t *)path, strlen(path))))
		queue(path, (uint64_t)info->dlpi_addr, id, idlen);
	pthread_mutex_unlock(&store_lock);
}

void ta_symstore_flush(int flusher)
{
	struct pending *p;
	size_t n;

	pthread_mutex_lock(&store_lock);
	p = pending;
	n = npending;
	pending = NULL;
	npending = pending_cap = 0;
	pthread_mutex_unlock(&store_lock);
	if (!n) {
		free(p);
		return;
	}
	TA_GUARD_ENTER();
	/* The flusher compresses them (the start's chunks are written
	 * before liblz4 is open): names are most of a table's bytes. */
	if (flusher)
		ta_lazy_open_lz4();
	for (size_t i = 0; i < n; i++) {
		store(p[i].path, p[i].bias, p[i].id, p[i].idlen);
		free(p[i].path);
		free(p[i].id);
	}
	free(p);
	TA_GUARD_LEAVE();
}

void ta_symstore_patched(uint64_t bias)
{
	uint64_t *p;

	pthread_mutex_lock(&store_lock);
	for (size_t i = 0; i < npatched; i++)
		if (patched[i] == bias)
			goto out;
	p = ta_vec_reserve(patched, npatched + 1, &patched_cap, sizeof(*p), 8);
	if (p) {
		patched = p;
		patched[npatched++] = bias;
	}
out:
	pthread_mutex_unlock(&store_lock);
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	const uint8_t *id = NULL;
	size_t idlen = ta_module_build_id(info, &id);
	int *first = arg;
	char exe[4096];
	const char *path = info->dlpi_name ? info->dlpi_name : "";

	(void)size;
	if (*first) {
		ta_exe_path(exe, sizeof(exe));
		path = exe;
		*first = 0;
	}
	ta_symstore_module(info, path, id, idlen, 0);
	return 0;
}

void ta_symstore_scan(void)
{
	int first = 1;

	if (!ta_cfg.symbols)
		return;
	TA_GUARD_ENTER();
	ta_walk_objects(scan_one, &first);
	TA_GUARD_LEAVE();
}

static void forget(void)
{
	for (size_t i = 0; i < nwritten; i++)
		free(written[i].key);
	nwritten = 0;
}

static void drop_pending(void)
{
	for (size_t i = 0; i < npending; i++) {
		free(pending[i].path);
		free(pending[i].id);
	}
	npending = 0;
}

void ta_symstore_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&store_lock, &fresh, sizeof(fresh));
	/* The parent's flusher writes what it had queued. */
	drop_pending();
	if (ta_dump_is_stream())
		forget();
}

void ta_symstore_forget(void)
{
	pthread_mutex_lock(&store_lock);
	forget();
	drop_pending();
	pthread_mutex_unlock(&store_lock);
}
