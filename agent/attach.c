/* SPDX-License-Identifier: MIT */
/*
 * attach.c - the agent brought into a running process by `traceagent
 * attach` (loader/attach.c): started explicitly, its hooks put in place of
 * glibc's empty ones in every module's GOT, and taken out again at detach.
 *
 * The loader calls ta_attach_start() in the target (on a thread it
 * interrupted with ptrace) after dlopen'ing the agent; from then on it talks
 * to the agent through the control socket: `detach` ends a window, `attach`
 * begins another (format/control.h).  A window of an injected agent ends
 * with the dump finished and closed, the flusher gone and the rings'
 * memory returned (agent.c's ta_agent_detach); the next `traceagent
 * attach` calls ta_attach_start again (dlopen finds the agent loaded) with
 * its own settings, and a new dump starts.  A preloaded agent's window
 * ends with a pause and a flush: its dump stays open until the process
 * ends.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"
#include "attach.h"
#include "clock.h"
#include "dump.h"
#include "flusher.h"
#include "modules.h"
#include "patch.h"
#include "ring.h"
#include "settings.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

TA_PUBLIC int ta_attach_start(const char *settings);
TA_PUBLIC int ta_attach_patch_prepare(const char *spec);
TA_PUBLIC int ta_attach_patch_commit(const uint64_t *pcs, uint64_t npcs);
TA_PUBLIC void ta_attach_patch_restore(void);
/* The agent's own hooks (hooks.c's hidden aliases): __cyg_profile_func_*
 * by name would be the first definition in the process, glibc's empty
 * ones, for a library loaded by dlopen.  Weak: the unit tests link the
 * agent's core without hooks.c. */
extern void ta_hook_enter(void *fn, void *call_site) __attribute__((weak)) TA_HIDDEN;
extern void ta_hook_exit(void *fn, void *call_site) __attribute__((weak)) TA_HIDDEN;

/* A GOT entry pointed at our hook, and what it held. */
struct got_slot {
	uintptr_t *at;
	uintptr_t old;
	int relro; /* read-only but while we write */
	uintptr_t base; /* its module's load bias: gone when dladdr says otherwise */
};

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct got_slot *slots;
static size_t nslots, cap_slots;
static int attached;   /* a `traceagent attach` holds the process (under attach_lock) */
static int redirected; /* the GOT entries point at our hooks (under attach_lock) */
static char config[4096];
int ta_attach_injected;
static int patch_forget; /* the patches were taken out: forget the modules at detach */

/* dl_iterate_phdr's counts of objects loaded and unloaded so far: a
 * change means a dlopen or dlclose since the last look (ta_attach_poll). */
static unsigned long long seen_adds, seen_subs;

static int count_loads(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *v = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		v[0] = info->dlpi_adds;
		v[1] = info->dlpi_subs;
	}
	return 1; /* the first object has them */
}

static void loads_seen(unsigned long long *adds, unsigned long long *subs)
{
	unsigned long long v[2] = {0, 0};

	dl_iterate_phdr(count_loads, v);
	*adds = v[0];
	*subs = v[1];
}

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
static int known_slot(uintptr_t *at, uintptr_t hook, uintptr_t base)
{
	for (size_t i = 0; i < nslots; i++) {
		if (slots[i].at != at || slots[i].base != base)
			continue;
		if (__atomic_load_n(at, __ATOMIC_RELAXED) != hook)
			(void)got_write(at, hook, slots[i].relro);
		return 1;
	}
	return 0;
}

struct scan {
	uintptr_t self_base;
	uintptr_t base; /* the module being scanned: its load bias */
	int err;
};

/* One GOT entry of a module for a hook (ta_module_hook_slots): pointed
 * at ours, what it held kept. */
static int redirect_slot(void *arg, uintptr_t *at, int is_exit, int relro)
{
	struct scan *sc = arg;
	uintptr_t hook = is_exit ? (uintptr_t)&ta_hook_exit : (uintptr_t)&ta_hook_enter;
	struct got_slot *ns;

	if (known_slot(at, hook, sc->base))
		return 0;
	ns = ta_grow(slots, nslots, &cap_slots, sizeof(*slots), 16);
	if (!ns) {
		sc->err = -ENOMEM;
		return 1;
	}
	slots = ns;
	slots[nslots].at = at;
	slots[nslots].old = __atomic_load_n(at, __ATOMIC_RELAXED);
	slots[nslots].relro = relro;
	slots[nslots].base = sc->base;
	if (got_write(at, hook, relro) < 0)
		return 0;
	nslots++;
	return 0;
}

/* One module: its relocations against the two hooks, JUMP_SLOT (the PLT's
 * entries) and GLOB_DAT (-fno-plt, or an address taken). */
static int scan_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;

	(void)size;
	if (info->dlpi_addr == sc->self_base)
		return 0; /* ourselves */
	sc->base = info->dlpi_addr;
	return ta_module_hook_slots(info, redirect_slot, sc);
}

/* Under attach_lock. */
static int redirect(void)
{
	struct scan sc = {0, 0, 0};
	Dl_info di;

	if (redirected)
		return 0;
	if (!&ta_hook_enter || !&ta_hook_exit)
		return -ENOSYS;
	if (dladdr((void *)&redirect, &di) && di.dli_fbase) {
		/* dlpi_addr is the load bias; for a shared library that is
		 * its base. */
		sc.self_base = (uintptr_t)di.dli_fbase;
	}
	nslots = 0;
	dl_iterate_phdr(scan_module, &sc);
	redirected = 1;
	loads_seen(&seen_adds, &seen_subs);
	return sc.err;
}

/* Under attach_lock: a slot whose module was dlclose'd is forgotten (its
 * page may be gone, or another module's). */
static void prune(void)
{
	size_t k = 0;

	for (size_t i = 0; i < nslots; i++) {
		struct alive al = {slots[i].base, (uintptr_t)slots[i].at, 0};

		dl_iterate_phdr(find_alive, &al);
		if (al.yes)
			slots[k++] = slots[i];
	}
	nslots = k;
}

void ta_attach_poll(void)
{
	unsigned long long adds = 0, subs = 0;
	struct scan sc = {0, 0, 0};
	Dl_info di;
	uint64_t now;

	if (!__atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED))
		return;
	loads_seen(&adds, &subs);
	/* Mid-load (r_state RT_ADD): its relocation may not be done; the
	 * next pass sees it. */
	if ((adds == seen_adds && subs == seen_subs) || _r_debug.r_state != RT_CONSISTENT)
		return;
	/* A detach holds the lock while it stops this thread: never wait. */
	if (pthread_mutex_trylock(&attach_lock) != 0)
		return;
	if (redirected) {
		if (dladdr((void *)&redirect, &di) && di.dli_fbase)
			sc.self_base = (uintptr_t)di.dli_fbase;
		/* The new modules into the dump first, so that their events,
		 * from the redirect on, have them. */
		now = ta_ticks();
		ta_dump_modules(now, now);
		if (subs != seen_subs)
			prune();
		dl_iterate_phdr(scan_module, &sc);
		seen_adds = adds;
		seen_subs = subs;
	}
	pthread_mutex_unlock(&attach_lock);
}

/* Under attach_lock: every entry as it was.  A thread that read our hook's
 * address just before finishes that call in our hook, which stays loaded. */
static void restore(void)
{
	prune(); /* not into a module dlclose'd since the last look */
	for (size_t i = nslots; i-- > 0;)
		(void)got_write(slots[i].at, slots[i].old, slots[i].relro);
	nslots = 0;
	redirected = 0;
}

/* The settings of an attach: "NAME=VALUE" lines, read in place of the
 * environment.  Returns 0 when the agent runs and this attach holds it,
 * -EBUSY when another attach does, another negative errno when the agent
 * cannot start (said on stderr of the target). */
TA_PUBLIC int ta_attach_start(const char *settings)
{
	int err = 0;

	TA_GUARD_ENTER();
	pthread_mutex_lock(&attach_lock);
	if (attached) {
		err = -EBUSY;
		goto out;
	}
	if (settings) {
		size_t n = strlen(settings);

		if (n >= sizeof(config))
			n = sizeof(config) - 1;
		memcpy(config, settings, n);
		config[n] = 0;
		ta_settings_attach = config;
	}
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_DETACHED) {
		/* A window before this one ended: a new dump, the same
		 * agent. */
		err = ta_agent_reattach();
		ta_settings_attach = NULL;
		if (err < 0)
			goto out;
	} else if (!ta_agent_ensure_started()) {
		ta_settings_attach = NULL;
		err = -ENOTRECOVERABLE;
		goto out;
	}
	ta_settings_attach = NULL;
	ta_attach_injected = 1;
	err = redirect();
	if (err < 0) {
		restore();
		goto out;
	}
	ta_api_pause(0);
	attached = 1;
out:
	pthread_mutex_unlock(&attach_lock);
	TA_GUARD_LEAVE();
	return err;
}

int ta_attach_command(int on, const char **why)
{
	int err = 0;

	pthread_mutex_lock(&attach_lock);
	if (on) {
		if (attached) {
			*why = "the process is being traced by another attach already";
			err = -EBUSY;
		} else if (ta_attach_injected &&
			   __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_DETACHED) {
			/* Its settings (the output above all) come with
			 * ta_attach_start: the loader calls it again. */
			*why = TA_ATTACH_IDLE;
			err = -EAGAIN;
		} else if (ta_api_pause(0) < 0) {
			*why = "the agent is not recording (it is stopping)";
			err = -ESRCH;
		} else {
			/* An agent that was injected has its hooks taken out
			 * between windows; a preloaded one never had to. */
			if (nslots || ta_attach_injected)
				err = redirect();
			attached = 1;
		}
	} else if (!attached) {
		*why = "the process is not being attached to";
		err = -ENOENT;
	} else if (ta_attach_injected) {
		/* The hooks out first; a thread that read an entry just
		 * before finishes that hook, which finds the agent detached
		 * (or records one more event, which the final drain may
		 * miss: ring.c's ta_ring_detach keeps its block safe). */
		restore();
		(void)ta_agent_detach();
		if (__atomic_exchange_n(&patch_forget, 0, __ATOMIC_RELAXED))
			ta_patch_attach_forget();
		attached = 0;
	} else {
		/* A preloaded agent: paused, everything written, the dump
		 * open for the rest of the process's life. */
		ta_api_pause(1);
		ta_flusher_drain(0);
		ta_dump_clock();
		attached = 0;
	}
	pthread_mutex_unlock(&attach_lock);
	return err;
}

/* `--patch` (loader/attach.c's patch_in and patch_out, by ptrace): the
 * plan with the threads running, the writes and the restore with all of
 * them stopped.  Only while this attach holds the process. */
TA_PUBLIC int ta_attach_patch_prepare(const char *spec)
{
	int n;

	if (!__atomic_load_n(&attached, __ATOMIC_RELAXED))
		return -ENOENT;
	TA_GUARD_ENTER();
	n = ta_patch_attach_prepare(spec);
	TA_GUARD_LEAVE();
	return n;
}

TA_PUBLIC int ta_attach_patch_commit(const uint64_t *pcs, uint64_t npcs)
{
	/* No lock: the thread that holds attach_lock may be stopped. */
	return ta_patch_attach_commit(pcs, (size_t)npcs);
}

TA_PUBLIC void ta_attach_patch_restore(void)
{
	ta_patch_attach_restore();
	/* A later attach patches the modules again (the forgetting takes the
	 * patcher's lock: done when the agent detaches, threads running). */
	__atomic_store_n(&patch_forget, 1, __ATOMIC_RELAXED);
}
