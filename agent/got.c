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

#include "agent.h"
#include "got.h"
#include "modules.h"

/* Whether an object with load bias base is loaded now and has a writable
 * segment holding at (its GOT). */
struct alive {
	uintptr_t base, at;
	int yes;
};

static int find_alive(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct alive *a = arg;

	(void)size;
	if (info->dlpi_addr != a->base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a->at >= lo && a->at < lo + ph->p_memsz) {
			a->yes = 1;
			return 1;
		}
	}
	return 0;
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
static int known_slot(struct ta_got *g, uintptr_t *at, uintptr_t hook, uintptr_t base)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->slots[i].at != at || g->slots[i].base != base)
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

	if (known_slot(g, at, hook, sc->base))
		return 0;
	ns = ta_grow(g->slots, g->n, &g->cap, sizeof(*ns), 16);
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
	return ta_module_hook_slots(info, redirect_slot, sc);
}

int ta_got_redirect(struct ta_got *g)
{
	struct scan sc = {g, 0, 0, 0};
	Dl_info di;

	if (dladdr((void *)&ta_got_redirect, &di) && di.dli_fbase) {
		/* dlpi_addr is the load bias; for a shared library that is
		 * its base. */
		sc.self_base = (uintptr_t)di.dli_fbase;
	}
	dl_iterate_phdr(scan_module, &sc);
	return sc.err;
}

void ta_got_prune(struct ta_got *g)
{
	size_t k = 0;

	for (size_t i = 0; i < g->n; i++) {
		struct alive al = {g->slots[i].base, (uintptr_t)g->slots[i].at, 0};

		dl_iterate_phdr(find_alive, &al);
		if (al.yes)
			g->slots[k++] = g->slots[i];
	}
	g->n = k;
}

void ta_got_restore(struct ta_got *g)
{
	ta_got_prune(g); /* not into a module dlclose'd since the last look */
	for (size_t i = g->n; i-- > 0;)
		(void)got_write(g->slots[i].at, g->slots[i].old, g->slots[i].relro);
	g->n = 0;
}
