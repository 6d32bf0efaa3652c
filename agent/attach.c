/* SPDX-License-Identifier: MIT */
/*
 * attach.c - the agent brought into a running process by `traceagent
 * attach` (loader/attach.c): started explicitly, its hooks put in place of
 * glibc's empty ones in every module's GOT, and taken out again at detach.
 *
 * The loader calls ta_attach_start() in the target (on a thread it
 * interrupted with ptrace) after dlopen'ing the agent; from then on it talks
 * to the agent through the control socket: `detach` ends a window, `attach`
 * begins another (format/ctlsock.h).  A window of an injected agent ends
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
#include "args.h"
#include "attach.h"
#include "clock.h"
#include "ctl.h"
#include "dump.h"
#include "filter.h"
#include "flusher.h"
#include "got.h"
#include "libcalls.h"
#include "modules.h"
#include "patch.h"
#include "ring.h"
#include "settings.h"
#include "symstore.h"
#include "walk.h"

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

static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
/* The GOT entries pointed at the hooks (under attach_lock). */
static struct ta_got got;
static int attached;   /* a `traceagent attach` holds the process (under attach_lock) */
static int redirected; /* the GOT entries point at our hooks (under attach_lock) */
static char config[4096];
int ta_attach_injected;
static int patch_forget; /* the patches were taken out: forget the modules at detach */

static void restore(void);

/*
 * A child forked inside a window (its agent restarts at its first hook,
 * agent.c) ends its tracing when the window ends, as the parent's does:
 * its user attached to the parent for that long.  The window's word is in
 * a page of its own, MAP_SHARED, which every process forked in the window
 * shares (not a copy): 1 while the window is open, 0 from the detach on.
 * The child's flusher looks at it every pass (ta_attach_poll) and has its
 * control thread detach the child as the loader detaches the parent: the
 * GOT entries back, the child's part of the dump finished (its END), the
 * flusher gone, the agent idle (`traceagent attach CHILD` opens a window
 * there again).  A child that had not restarted by then (no hook called)
 * never does (ta_attach_child_closed).
 */
static uint32_t *window; /* this window's word (attach_lock); NULL: none */
static int window_child; /* forked inside a window: ends with it */

/* Under attach_lock: a word for a new window; none if it cannot be mapped
 * (then a child forked in the window traces until it ends). */
static void window_open(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	window = p == MAP_FAILED ? NULL : p;
	if (window)
		/* Release: pairs with the acquire in window_closed. */
		__atomic_store_n(window, 1, __ATOMIC_RELEASE);
}

/* Under attach_lock: the window ends here and in the children forked in
 * it (their mapping stays theirs). */
static void window_close(void)
{
	if (!window)
		return;
	/* Release: pairs with the acquire in window_closed. */
	__atomic_store_n(window, 0, __ATOMIC_RELEASE);
	munmap(window, 4096);
	window = NULL;
}

/* A child forked in a window whose window has ended (or had none left:
 * forked while the parent was detaching). */
static int window_closed(void)
{
	/* Acquire: pairs with the releases in window_open and window_close. */
	return window_child && (!window || !__atomic_load_n(window, __ATOMIC_ACQUIRE));
}

void ta_attach_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* Another thread of the parent may have held the lock (a flusher's
	 * look); it does not exist here. */
	memcpy(&attach_lock, &fresh, sizeof(fresh));
	if (__atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED) && attached)
		window_child = 1;
}

int ta_attach_child_closed(void)
{
	if (!window_closed())
		return 0;
	/* It never records: glibc's empty hooks again. */
	pthread_mutex_lock(&attach_lock);
	if (redirected)
		restore();
	attached = 0;
	pthread_mutex_unlock(&attach_lock);
	return 1;
}

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

	ta_walk_objects(count_loads, v);
	*adds = v[0];
	*subs = v[1];
}

/*
 * The manual API (include/traceagent.h): its macros call through weak
 * references that the loader left null, the agent not being in the global
 * scope.  They are pointed at the agent's functions (ta_zone_exit_'s
 * first: a zone entered through a new entry leaves through that one) and
 * left there at the detach: compiled code keeps such an address in a
 * register across a loop (it reads the GOT once before it), so a null put
 * back could be called, and a zone open at the detach calls its exit
 * after it.  Once detached, each site's gate reads off (ta_api_stop), so
 * a macro costs its loads and branches and calls nothing, as a preloaded
 * agent's with its channel off.  Under attach_lock.
 */
static struct ta_gotset api_exit_set, api_set;

static void api_redirect(void)
{
	size_t n;
	const struct ta_got_sym *syms = ta_api_got_syms(&n);

	api_exit_set.syms = syms;
	api_exit_set.nsyms = 1;
	api_set.syms = syms + 1;
	api_set.nsyms = n - 1;
	if (ta_gotset_redirect(&api_exit_set) < 0 || ta_gotset_redirect(&api_set) < 0)
		ta_warn("attach: out of memory pointing the manual API at the agent: some of its "
			"calls are not recorded");
}

/*
 * Library calls (TRACEAGENT_LIBCALLS): a dlopen'ed agent interposes
 * nothing, so the classes' entries in every module but libc and the
 * dynamic loader are pointed at its interposers, and put back at the
 * detach (what they held is a function; a thread that read our address
 * just before finds recording off and calls the real one).  Under
 * attach_lock.
 */
#define LC_SYMS_MAX 96
static struct ta_got_sym lc_syms[LC_SYMS_MAX];
static struct ta_gotset lc_set = {lc_syms, 0, 1, {0, 0, NULL, 0, 0}};

static void libcalls_redirect(void)
{
	if (!ta_libcalls_got_syms || !ta_cfg.libcalls)
		return;
	if (!lc_set.nsyms)
		lc_set.nsyms = ta_libcalls_got_syms(ta_cfg.libcalls, lc_syms, LC_SYMS_MAX);
	if (ta_gotset_redirect(&lc_set) < 0)
		ta_warn("attach: out of memory pointing library calls at the agent: some are not "
			"recorded");
}

static void libcalls_restore(void)
{
	ta_gotset_restore(&lc_set);
	lc_set.nsyms = 0; /* the next window's classes may differ */
}

/* Under attach_lock. */
static int redirect(void)
{
	int err;

	if (redirected)
		return 0;
	if (!&ta_hook_enter || !&ta_hook_exit)
		return -ENOSYS;
	/* With filters in force (the attach's settings: filter.c set them up
	 * at the start), the filtering hooks. */
	if (__atomic_load_n(&ta_filter_on, __ATOMIC_ACQUIRE)) {
		got.enter = (uintptr_t)&ta_filter_hook_enter;
		got.exit = (uintptr_t)&ta_filter_hook_exit;
	} else {
		got.enter = (uintptr_t)&ta_hook_enter;
		got.exit = (uintptr_t)&ta_hook_exit;
	}
	got.n = 0;
	/* At the window's start the zone's entry would record a while before
	 * the counter's, and the functions before either: the API's entries
	 * first, held (a call through one waits), then the hooks', then all
	 * of the API let go at once.  A module loaded during the window
	 * (ta_attach_poll) is pointed without a hold: its entries were null,
	 * and the others' calls need not wait. */
	if (__atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED)) {
		ta_api_hold(1);
		api_redirect();
	}
	err = ta_got_redirect(&got);
	if (__atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED)) {
		libcalls_redirect();
		ta_api_hold(0);
	}
	redirected = 1;
	loads_seen(&seen_adds, &seen_subs);
	return err;
}

void ta_attach_poll(void)
{
	unsigned long long adds = 0, subs = 0;
	uint64_t now;

	if (!__atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED))
		return;
	if (window_closed()) {
		/* Once: the detach forgets that this was a window's child. */
		ta_control_detach_soon();
		return;
	}
	loads_seen(&adds, &subs);
	/* Mid-load (r_state RT_ADD): its relocation may not be done; the
	 * next pass sees it. */
	if ((adds == seen_adds && subs == seen_subs) || _r_debug.r_state != RT_CONSISTENT)
		return;
	/* A detach holds the lock while it stops this thread: never wait. */
	if (pthread_mutex_trylock(&attach_lock) != 0)
		return;
	if (redirected) {
		/* The new modules into the dump first, so that their events,
		 * from the redirect on, have them. */
		now = ta_ticks();
		ta_dump_modules(now, now);
		if (subs != seen_subs) {
			ta_got_prune(&got);
			ta_filter_after_dlclose();
		}
		ta_filter_after_dlopen(); /* the new functions known first */
		(void)ta_got_redirect(&got);
		api_redirect();
		libcalls_redirect();
		seen_adds = adds;
		seen_subs = subs;
	}
	pthread_mutex_unlock(&attach_lock);
}

/* Under attach_lock: every entry as it was.  A thread that read our hook's
 * address just before finishes that call in our hook, which stays loaded. */
static void restore(void)
{
	ta_got_restore(&got);
	libcalls_restore();
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
	/* This window's --args and --retval (its plans patch the functions
	 * they name; an injected agent has no other patching). */
	if (settings)
		ta_args_reload();
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
	/* The loader's next words (detach, attach) come on the control
	 * socket: answered at once, not once the flusher starts the thread. */
	(void)ta_control_start_thread();
	err = redirect();
	if (err < 0) {
		restore();
		goto out;
	}
	ta_api_pause(0);
	attached = 1;
	window_open();
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
			if (got.n || ta_attach_injected)
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
		 * miss: ring_pool.c's ta_ring_detach keeps its block safe). */
		restore();
		window_close();
		window_child = 0;
		ta_filter_unpatch();
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
	/* The planned modules' names, before any of their events. */
	if (n > 0)
		ta_symstore_scan();
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
