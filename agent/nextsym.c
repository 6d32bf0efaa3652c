/* SPDX-License-Identifier: MIT */
/*
 * nextsym.c - RTLD_NEXT's answer without dlsym (nextsym.h says why).
 *
 * For the agent loaded at start-up (LD_PRELOAD), glibc's RTLD_NEXT
 * searches the global scope from the object after the agent: the other
 * preloaded libraries after it, then the program's libraries breadth
 * first, then their dependencies.  The loader's list of objects (what
 * dl_iterate_phdr walks) has the start-up objects in that same order, the
 * dynamic loader among them at its place in the search, and whatever
 * dlopen loads later after them (the dynamic loader comes after libc,
 * which needs it).  So the objects from the agent's successor to the
 * dynamic loader are a prefix of RTLD_NEXT's search: a name found there
 * is the answer dlsym would give, and a name not found there (or anything
 * this cannot vouch for: an object without a GNU hash table, an IFUNC, an
 * agent found after the loader) is left to dlsym.
 *
 * The objects kept are never unloaded (start-up objects cannot be
 * dlclosed), so a lookup reads them without the loader's lock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/auxv.h>

#include "compiler.h"
#include "nextsym.h"
#include "walk.h"

#define NS_MAX 32

struct ns_obj {
	uintptr_t base;
	const ElfW(Sym) * sym;
	const char *str;
	const uint32_t *gnu;	/* DT_GNU_HASH */
	const ElfW(Half) * ver; /* DT_VERSYM, or NULL */
};

static struct ns_obj ns_objs[NS_MAX] TA_STARTUP_DATA;
static unsigned ns_n TA_STARTUP_DATA;

enum { NS_UNBUILT, NS_BUILDING, NS_BUILT };
/* Set to BUILT with release once ns_objs/ns_n are written; lookups
 * acquire it (pairs with the store in ns_build). */
static uint32_t ns_state TA_STARTUP_DATA;

struct ns_walk {
	uintptr_t self; /* an address inside the agent */
	uintptr_t ldso; /* AT_BASE: the dynamic loader's load address */
	uintptr_t vdso; /* AT_SYSINFO_EHDR */
	int seen_self;
	int done;    /* the loader reached and kept */
	int stopped; /* gave up before the loader */
	unsigned n;
};

/* A dynamic entry's address: glibc relocates them in place, other loaders
 * (and read-only dynamic sections) may not. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
	return p < base ? base + p : p;
}

static int keep(const struct dl_phdr_info *info, struct ns_obj *o)
{
	const ElfW(Dyn) *dyn = NULL;

	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return -1;
	*o = (struct ns_obj){.base = info->dlpi_addr};
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);

		switch (dyn->d_tag) {
		case DT_SYMTAB:
			o->sym = (const ElfW(Sym) *)p;
			break;
		case DT_STRTAB:
			o->str = (const char *)p;
			break;
		case DT_GNU_HASH:
			o->gnu = (const uint32_t *)p;
			break;
		case DT_VERSYM:
			o->ver = (const ElfW(Half) *)p;
			break;
		}
	}
	return o->sym && o->str && o->gnu ? 0 : -1;
}

static int contains(const struct dl_phdr_info *info, uintptr_t a)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
			return 1;
	}
	return 0;
}

static int walk(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ns_walk *w = arg;
	int ldso = info->dlpi_addr == w->ldso;

	(void)size;
	if (!w->seen_self) {
		w->seen_self = contains(info, w->self);
		/* The loader before the agent: the agent came later, with
		 * dlopen, and what follows it may be outside the search. */
		return ldso;
	}
	/* The vDSO is in the list but not in the search. */
	if (w->vdso && contains(info, w->vdso))
		return 0;
	if (w->n == NS_MAX || keep(info, &ns_objs[w->n]) < 0) {
		w->stopped = 1; /* what follows is dlsym's */
		return 1;
	}
	w->n++;
	w->done = ldso;
	return ldso;
}

static void ns_build(void)
{
	int saved = errno; /* getauxval sets it for an entry missing */
	struct ns_walk w = {.self = (uintptr_t)&ns_objs,
			    .ldso = getauxval(AT_BASE),
			    .vdso = getauxval(AT_SYSINFO_EHDR)};

	ta_walk_objects(walk, &w);
	errno = saved;
	/* The objects kept are a prefix of the search when the walk reached
	 * the loader or stopped before it; reaching the end of the list
	 * without it means the agent came with dlopen: nothing is known. */
	ns_n = w.done || w.stopped ? w.n : 0;
	/* Release: the objects before the state (pairs with the acquire in
	 * ta_next_ready). */
	__atomic_store_n(&ns_state, NS_BUILT, __ATOMIC_RELEASE);
}

int ta_next_ready(void)
{
	uint32_t s = __atomic_load_n(&ns_state, __ATOMIC_ACQUIRE);

	if (s == NS_UNBUILT) {
		/* Relaxed CAS: one builder; the others (or a signal handler
		 * interrupting it) go to dlsym until it is done. */
		if (__atomic_compare_exchange_n(&ns_state, &s, NS_BUILDING, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			ns_build();
		s = __atomic_load_n(&ns_state, __ATOMIC_ACQUIRE);
	}
	return s == NS_BUILT && ns_n > 0;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (uint8_t)*s;
	return h;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* 1: found (*out), 0: not defined here, -1: defined here but not ours to
 * resolve (an IFUNC: its resolver's arguments are the loader's business). */
static int lookup(const struct ns_obj *o, const char *name, uint32_t h, void **out)
{
	const uint32_t nb = o->gnu[0], off = o->gnu[1], nbloom = o->gnu[2], shift = o->gnu[3];
	const ElfW(Addr) *bloom = (const ElfW(Addr) *)(o->gnu + 4);
	const uint32_t *bucket = (const uint32_t *)(bloom + nbloom), *chain = bucket + nb;
	const unsigned bits = sizeof(ElfW(Addr)) * 8;
	ElfW(Addr) word, mask;
	uint32_t i;

	if (!nb || !nbloom)
		return 0;
	word = bloom[(h / bits) & (nbloom - 1)];
	mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> shift) % bits));
	if ((word & mask) != mask)
		return 0;
	i = bucket[h % nb];
	if (i < off)
		return 0;
	for (;; i++) {
		uint32_t h2 = chain[i - off];
		const ElfW(Sym) *s = &o->sym[i];

		if ((h2 | 1) == (h | 1) && same(name, o->str + s->st_name) &&
		    s->st_shndx != SHN_UNDEF && s->st_value != 0) {
			/* dlsym's rule without a version: an unversioned
			 * definition, or the default (not hidden) version. */
			ElfW(Half) v = o->ver ? o->ver[i] : 0;
			unsigned type = ELF64_ST_TYPE(s->st_info);

			if ((v & 0x7fff) < 2 || !(v & 0x8000)) {
				if (type == STT_GNU_IFUNC)
					return -1;
				if (type != STT_FUNC && type != STT_NOTYPE)
					return -1;
				*out = (void *)(o->base + s->st_value);
				return 1;
			}
		}
		if (h2 & 1)
			return 0;
	}
}

void *ta_next_sym(const char *name)
{
	uint32_t h;

	if (!ta_next_ready())
		return NULL;
	h = gnu_hash(name);
	for (unsigned k = 0; k < ns_n; k++) {
		void *f = NULL;
		int r = lookup(&ns_objs[k], name, h, &f);

		if (r)
			return r > 0 ? f : NULL;
	}
	return NULL;
}

void *ta_next_fn(const char *name)
{
	void *f = ta_next_sym(name);

	return f ? f : dlsym(RTLD_NEXT, name);
}

int ta_real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

	if (!real) {
		/* The next definition after ours: libc's (ours is an
		 * interposer when the agent is preloaded). */
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				void *))ta_next_fn("pthread_create");
		if (!real)
			real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
					void *))dlsym(RTLD_DEFAULT, "pthread_create");
		if (!real)
			return EAGAIN;
	}
	return real(t, attr, fn, arg);
}
