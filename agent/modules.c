/* SPDX-License-Identifier: MIT */
/*
 * modules.c - the module map: every loaded ELF object with its load bias,
 * build-id and executable ranges, so the analyzer can resolve addresses in
 * PIE executables and shared libraries.  Each scan (start, dlopen, dlclose)
 * writes the objects that appeared since the last one, stamped with when,
 * and a MODULE_UNLOAD for each that went away: an address a closed library
 * had and a later one reuses resolves to the right one by time.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch.h"
#include "base.h"
#include "dump.h"
#include "format.h"
#include "modules.h"
#include "symstore.h"
#include "walk.h"

#define NOTE_ALIGN(x) (((x) + 3u) & ~3u)

/* The objects already in the dump, by load bias and name, so a later scan
 * (after dlopen) writes only the new ones.  Under modules_lock. */
struct known {
	uint64_t bias;
	char *name;
	int seen; /* in the current scan */
};
static struct known *known;
static size_t nknown, known_cap;
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

struct scan {
	int first;
	uint64_t load_ticks;
	int all; /* every object, the known ones left as they are (the tap's) */
};

/* Forgets known[i], writing that it is gone. */
static void unload(size_t i, uint64_t ticks)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, ticks);
	ta_buf_u(&b, known[i].bias);
	ta_buf_str(&b, known[i].name, strlen(known[i].name));
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_MODULE_UNLOAD, b.p, b.len);
	ta_buf_free(&b);
	free(known[i].name);
	known[i] = known[--nknown];
}

/* 1 if the object is new (and now known), 0 if it was written before. */
static int learn(uint64_t bias, const char *name)
{
	struct known *k;

	for (size_t i = 0; i < nknown; i++)
		if (known[i].bias == bias && strcmp(known[i].name, name) == 0) {
			known[i].seen = 1;
			return 0;
		}
	k = ta_vec_reserve(known, nknown + 1, &known_cap, sizeof(*k), 32);
	if (!k)
		return 1; /* write it again later rather than never */
	known = k;
	known[nknown].name = strdup(name);
	if (!known[nknown].name)
		return 1;
	known[nknown].seen = 1;
	known[nknown++].bias = bias;
	return 1;
}

size_t ta_module_build_id(const struct dl_phdr_info *info, const uint8_t **id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + NOTE_ALIGN(n->n_namesz);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				*id = desc;
				return n->n_descsz;
			}
			p = desc + NOTE_ALIGN(n->n_descsz);
		}
	}
	return 0;
}

static int one_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ta_buf b = {0};
	const uint8_t *id = NULL;
	size_t idlen = ta_module_build_id(info, &id);
	const char *path = info->dlpi_name;
	char exe[4096];
	struct scan *sc = arg;
	uint64_t nranges = 0;
	uint64_t flags = 0;

	(void)size;
	if (sc->first) {
		/* The first object is the executable, named "" here. */
		ta_exe_path(exe, sizeof(exe));
		path = exe;
		flags |= 1;
		sc->first = 0;
	}
	if (!path)
		path = "";
	if (!sc->all && !learn(info->dlpi_addr, path))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		nranges +=
		    info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X);
	ta_buf_u(&b, sc->load_ticks);
	ta_buf_u(&b, (uint64_t)info->dlpi_addr);
	ta_buf_str(&b, path, strlen(path));
	ta_buf_str(&b, (const char *)id, idlen);
	ta_buf_u(&b, flags);
	ta_buf_u(&b, nranges);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			ta_buf_u(&b, info->dlpi_addr + ph->p_vaddr);
			ta_buf_u(&b, info->dlpi_addr + ph->p_vaddr + ph->p_memsz);
		}
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_MODULE, b.p, b.len);
	ta_buf_free(&b);
	/* Its names after it (the executable's under its own path, the
	 * vDSO's not at all: its functions are never traced). */
	if (path[0])
		ta_symstore_module(info, path, id, idlen, sc->all);
	return 0;
}

void ta_modules_forget(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	for (size_t i = 0; i < nknown; i++)
		free(known[i].name);
	nknown = 0;
	memcpy(&modules_lock, &fresh, sizeof(fresh));
}

void ta_dump_modules(uint64_t load_ticks, uint64_t unload_ticks)
{
	struct scan sc = {1, load_ticks, 0};

	pthread_mutex_lock(&modules_lock);
	for (size_t i = 0; i < nknown; i++)
		known[i].seen = 0;
	ta_walk_objects(one_module, &sc);
	/* Objects no longer there were unloaded (dlclose) since the last
	 * scan; on the first scan, or one whose memory ran short, every
	 * object is seen or new. */
	for (size_t i = nknown; i-- > 0;)
		if (!known[i].seen)
			unload(i, unload_ticks);
	pthread_mutex_unlock(&modules_lock);
}

void ta_dump_modules_all(uint64_t load_ticks)
{
	struct scan sc = {1, load_ticks, 1};

	pthread_mutex_lock(&modules_lock);
	ta_walk_objects(one_module, &sc);
	pthread_mutex_unlock(&modules_lock);
}

#define R_JUMP_SLOT TA_ARCH_R_JUMP_SLOT
#define R_GLOB_DAT  TA_ARCH_R_GLOB_DAT

int ta_module_got_slots(const struct dl_phdr_info *info, ta_got_slot_fn *fn, void *arg)
{
	const ElfW(Phdr) *dynph = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) * rels[2] = {NULL, NULL};
	size_t relsz[2] = {0, 0};

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			dynph = ph;
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = info->dlpi_addr + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dynph)
		return 0;
	for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + dynph->p_vaddr);
	     d->d_tag != DT_NULL; d++) {
		/* glibc relocates these tags to addresses already (but the
		 * vDSO's, which imports nothing). */
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
			break;
		case DT_STRTAB:
			strtab = (const char *)d->d_un.d_ptr;
			break;
		case DT_JMPREL:
			rels[0] = (const ElfW(Rela) *)d->d_un.d_ptr;
			break;
		case DT_PLTRELSZ:
			relsz[0] = d->d_un.d_val;
			break;
		case DT_RELA:
			rels[1] = (const ElfW(Rela) *)d->d_un.d_ptr;
			break;
		case DT_RELASZ:
			relsz[1] = d->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab || (uintptr_t)symtab < info->dlpi_addr)
		return 0;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; rels[k] && i < relsz[k] / sizeof(ElfW(Rela)); i++) {
			const ElfW(Rela) *r = &rels[k][i];
			unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
			uintptr_t *at;
			int stop;

			if (type != R_JUMP_SLOT && type != R_GLOB_DAT)
				continue;
			at = (uintptr_t *)(info->dlpi_addr + r->r_offset);
			stop = fn(arg, strtab + symtab[ELF64_R_SYM(r->r_info)].st_name, at,
				  type == R_JUMP_SLOT,
				  (uintptr_t)at >= relro_lo && (uintptr_t)at < relro_hi);
			if (stop)
				return stop;
		}
	}
	return 0;
}

struct hook_walk {
	ta_hook_slot_fn *fn;
	void *arg;
};

static int hook_slot(void *arg, const char *name, uintptr_t *at, int jump_slot, int relro)
{
	struct hook_walk *w = arg;

	(void)jump_slot;
	if (!strcmp(name, "__cyg_profile_func_enter"))
		return w->fn(w->arg, at, 0, relro);
	if (!strcmp(name, "__cyg_profile_func_exit"))
		return w->fn(w->arg, at, 1, relro);
	return 0;
}

int ta_module_hook_slots(const struct dl_phdr_info *info, ta_hook_slot_fn *fn, void *arg)
{
	struct hook_walk w = {fn, arg};

	return ta_module_got_slots(info, hook_slot, &w);
}
