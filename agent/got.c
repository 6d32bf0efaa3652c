/* SPDX-License-Identifier: MIT */
/*
 * got.c - the modules' GOT entries for the two hooks, pointed where the
 * agent wants (got.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base.h"
#include "got.h"
#include "modules.h"
#include "walk.h"

/* Whether v lies in one of the module's loaded segments (an unbound
 * JUMP_SLOT points at its own PLT). */
static int in_module(const struct dl_phdr_info *info, uintptr_t v)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && v >= lo && v < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* FNV-1a of a module's path, to tell it from another mapped at its base
 * after it was dlclose'd. */
static uint32_t name_hash(const struct dl_phdr_info *info)
{
	uint32_t h = 2166136261u;

	for (const char *c = info->dlpi_name ? info->dlpi_name : ""; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	return h;
}

/* Whether slot s is an entry of the loaded module info (the one it was
 * taken in, still mapped). */
static int slot_of(const struct ta_got_slot *s, const struct dl_phdr_info *info)
{
	return s->base == info->dlpi_addr && s->name == name_hash(info) &&
	       in_module(info, (uintptr_t)s->at);
}

struct alive {
	const struct ta_got_slot *slot;
	int yes;
};

static int find_alive(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct alive *a = arg;

	(void)size;
	if (!slot_of(a->slot, info))
		return 0;
	a->yes = 1;
	return 1;
}

/* Writes v at *at, with the page made writable for the write if it is not
 * (full RELRO: read-only after relocation); its protection is put back. */
static int got_write(uintptr_t *at, uintptr_t v, int relro)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = (uintptr_t)at & ~(uintptr_t)(pg - 1);

	if (relro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) < 0)
		return -errno;
	/* Relaxed but atomic: a thread calling through the entry reads the
	 * old hook or the new one, both complete functions. */
	__atomic_store_n(at, v, __ATOMIC_RELAXED);
	if (relro)
		mprotect((void *)page, (size_t)pg, PROT_READ);
	return 0;
}

/* A slot seen before (a rescan after a dlopen): pointed at our hook again
 * if the loader's relocation wrote over it meanwhile (a module being
 * loaded while we scanned), its first old value kept.  Linear: two slots a
 * module. */
static int known_slot(struct ta_got *g, uintptr_t *at, uintptr_t hook, uintptr_t base,
		      uint32_t name)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->slots[i].at != at || g->slots[i].base != base || g->slots[i].name != name)
			continue;
		if (__atomic_load_n(at, __ATOMIC_RELAXED) != hook)
			(void)got_write(at, hook, g->slots[i].relro);
		return 1;
	}
	return 0;
}

struct scan {
	struct ta_got *g;
	uintptr_t self_base;
	uintptr_t base; /* the module being scanned: its load bias */
	uint32_t name;	/* and its name_hash */
	int err;
};

/* One GOT entry of a module for a hook (modules.c's walk): pointed where
 * g says, what it held kept. */
static int redirect_slot(void *arg, uintptr_t *at, int is_exit, int relro)
{
	struct scan *sc = arg;
	struct ta_got *g = sc->g;
	uintptr_t hook = is_exit ? g->exit : g->enter;
	struct ta_got_slot *ns;

	if (known_slot(g, at, hook, sc->base, sc->name))
		return 0;
	ns = ta_vec_reserve(g->slots, g->n + 1, &g->cap, sizeof(*ns), 16);
	if (!ns) {
		sc->err = -ENOMEM;
		return 1;
	}
	g->slots = ns;
	ns = &g->slots[g->n];
	ns->at = at;
	ns->old = __atomic_load_n(at, __ATOMIC_RELAXED);
	ns->relro = relro;
	ns->base = sc->base;
	ns->name = sc->name;
	if (got_write(at, hook, relro) < 0)
		return 0;
	g->n++;
	return 0;
}

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;

	(void)size;
	if (info->dlpi_addr == sc->self_base)
		return 0; /* ourselves */
	sc->base = info->dlpi_addr;
	sc->name = name_hash(info);
	return ta_module_hook_slots(info, redirect_slot, sc);
}

int ta_got_redirect(struct ta_got *g)
{
	struct scan sc = {g, 0, 0, 0, 0};
	Dl_info di;

	if (dladdr((void *)&ta_got_redirect, &di) && di.dli_fbase) {
		/* dlpi_addr is the load bias; for a shared library that is
		 * its base. */
		sc.self_base = (uintptr_t)di.dli_fbase;
	}
	ta_walk_objects(scan_module, &sc);
	return sc.err;
}

void ta_got_prune(struct ta_got *g)
{
	size_t k = 0;

	for (size_t i = 0; i < g->n; i++) {
		struct alive al = {&g->slots[i], 0};

		ta_walk_objects(find_alive, &al);
		if (al.yes)
			g->slots[k++] = g->slots[i];
	}
	g->n = k;
}

/* The entries of one loaded module put back.  dl_iterate_phdr holds the
 * loader's write lock through its callbacks, and dlclose unmaps under it:
 * a module seen here stays mapped until we return, where a look first and
 * a write after (ta_got_prune, then the writes) raced a dlclose in another
 * thread and wrote into a GOT that was gone, or into what was mapped there
 * since. */
static int restore_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ta_got *g = arg;

	(void)size;
	for (size_t i = 0; i < g->n; i++)
		if (slot_of(&g->slots[i], info))
			(void)got_write(g->slots[i].at, g->slots[i].old, g->slots[i].relro);
	return 0;
}

void ta_got_restore(struct ta_got *g)
{
	/* An entry of a module dlclose'd since the last look is in no
	 * module's segments: left alone. */
	if (g->n)
		ta_walk_objects(restore_module, g);
	g->n = 0;
}

/* ---- other imported functions (ta_gotset) ------------------------------------ */

#define SET_LAZY_MAX 128

struct setscan {
	struct ta_gotset *s;
	const struct dl_phdr_info *info;
	uintptr_t self_base;
	/* Per sym: the global scope binds its name to `real`.  Looked up
	 * before the walk: dlsym and dladdr take the loader's lock, which a
	 * dlopen holds while it waits for dl_iterate_phdr's. */
	uint8_t global_real[SET_LAZY_MAX];
	int err;
};

static int set_slot(void *arg, const char *name, uintptr_t *at, int jump_slot, int relro)
{
	struct setscan *sc = arg;
	struct ta_gotset *s = sc->s;
	const struct ta_got_sym *sym = NULL;
	struct ta_got_slot *ns;
	uintptr_t v;

	size_t k;

	for (k = 0; k < s->nsyms; k++)
		if (s->syms[k].name[0] == name[0] && !strcmp(s->syms[k].name, name)) {
			sym = &s->syms[k];
			break;
		}
	if (!sym)
		return 0;
	v = __atomic_load_n(at, __ATOMIC_RELAXED);
	if (v == sym->to)
		return 0; /* ours already (taken before, or kept from a window) */
	if (v != sym->real) {
		/* Unbound: taken if the loader would bind it to real. */
		if (!jump_slot || !sym->lazy || !in_module(sc->info, v) || k >= SET_LAZY_MAX ||
		    !sc->global_real[k])
			return 0;
	}
	ns = ta_vec_reserve(s->got.slots, s->got.n + 1, &s->got.cap, sizeof(*ns), 64);
	if (!ns) {
		sc->err = -ENOMEM;
		return 1;
	}
	s->got.slots = ns;
	ns = &s->got.slots[s->got.n];
	ns->at = at;
	ns->old = v;
	ns->relro = relro;
	ns->base = sc->info->dlpi_addr;
	ns->name = name_hash(sc->info);
	if (got_write(at, sym->to, relro) < 0)
		return 0;
	s->got.n++;
	return 0;
}

/* libc and the dynamic loader: their calls to each other are their own
 * (a preloaded agent does not see them either, but for libc's calls
 * through its PLT). */
static int is_system(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "ld-linux", 8) ||
	       !strncmp(b, "linux-vdso", 10);
}

static int set_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct setscan *sc = arg;

	(void)size;
	if (info->dlpi_addr == sc->self_base)
		return 0; /* ourselves */
	if (sc->s->skip_system && info->dlpi_name && is_system(info->dlpi_name))
		return 0;
	sc->info = info;
	return ta_module_got_slots(info, set_slot, sc);
}

int ta_gotset_redirect(struct ta_gotset *s)
{
	struct setscan sc = {s, NULL, 0, {0}, 0};
	/* The main program's handle: the global scope (RTLD_DEFAULT would
	 * search our own scope too, and find the agent's definitions).
	 * dlsym answers the default version, which an unversioned reference
	 * gets (lazy is unset for the functions of two versions). */
	void *global = dlopen(NULL, RTLD_LAZY);
	Dl_info di;

	if (dladdr((void *)&ta_gotset_redirect, &di) && di.dli_fbase)
		sc.self_base = (uintptr_t)di.dli_fbase;
	for (size_t k = 0; global && k < s->nsyms && k < SET_LAZY_MAX; k++)
		sc.global_real[k] =
		    s->syms[k].lazy && (uintptr_t)dlsym(global, s->syms[k].name) == s->syms[k].real;
	if (global)
		dlclose(global);
	ta_walk_objects(set_module, &sc);
	return sc.err;
}

void ta_gotset_restore(struct ta_gotset *s)
{
	ta_got_restore(&s->got);
}

/* ---- the hooks' entries bound at the start ------------------------------------ */

struct bindscan {
	const struct dl_phdr_info *info;
	uintptr_t self_base;
	uintptr_t to[2]; /* what the global scope binds enter and exit to */
};

static int bind_slot(void *arg, const char *name, uintptr_t *at, int jump_slot, int relro)
{
	struct bindscan *b = arg;
	int is_exit;

	/* A GLOB_DAT entry was bound at load; a JUMP_SLOT that holds
	 * anything but its own module's PLT was bound since (or pointed
	 * elsewhere on purpose: the filters' hooks). */
	if (!jump_slot || strncmp(name, "__cyg_profile_func_", 19))
		return 0;
	if (!strcmp(name + 19, "enter"))
		is_exit = 0;
	else if (!strcmp(name + 19, "exit"))
		is_exit = 1;
	else
		return 0;
	if (b->to[is_exit] && in_module(b->info, __atomic_load_n(at, __ATOMIC_RELAXED)))
		(void)got_write(at, b->to[is_exit], relro);
	return 0;
}

static int bind_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bindscan *b = arg;

	(void)size;
	if (info->dlpi_addr == b->self_base || (info->dlpi_name && is_system(info->dlpi_name)))
		return 0; /* ourselves, and modules that make no hook calls */
	b->info = info;
	return ta_module_got_slots(info, bind_slot, b);
}

void ta_got_bind_hooks(void)
{
	struct bindscan b = {NULL, 0, {0, 0}};
	Dl_info di;

	if (dladdr((void *)&ta_got_bind_hooks, &di) && di.dli_fbase)
		b.self_base = (uintptr_t)di.dli_fbase;
	/* Before the walk: dlsym takes the loader's lock, which a dlopen
	 * holds while it waits for dl_iterate_phdr's.  The default search
	 * order: the global scope first, as the lazy binder's. */
	b.to[0] = (uintptr_t)dlsym(RTLD_DEFAULT, "__cyg_profile_func_enter");
	b.to[1] = (uintptr_t)dlsym(RTLD_DEFAULT, "__cyg_profile_func_exit");
	ta_walk_objects(bind_module, &b);
}
