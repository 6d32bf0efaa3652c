/* SPDX-License-Identifier: MIT */
/*
 * patch_none.c - the patcher's interface (patch.h) where this build has no
 * patcher (no capstone, or an architecture without one): each entry hands
 * the modules built with -fpatchable-function-entry to patchent.c (where
 * the return stub's hot path is built), and for the others does nothing,
 * or says in one line that TRACEAGENT_PATCH and --patch are ignored, and
 * why.
 *
 * Apart from patch.c so that neither file is two files in #if blocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "arch.h"
#include "base.h"
#include "patch.h"
#include "patchent.h"
#include "ring.h"
#include "ta_config.h"

#if !TA_HAVE_PATCH

/* Why nothing is patched, in the one line that says so: an x86-64 build
 * configured without capstone, or an architecture without a patcher. */
#if TA_PATCH_ARCH
#define NO_PATCH_WHY "this build has no dynamic patching (built without capstone: meson -Dpatching)"
#else
#define NO_PATCH_WHY "dynamic patching is not supported on " TA_ARCH_NAME
#endif

uint64_t ta_patch_orig_pc(uint64_t pc, int first)
{
	(void)pc;
	(void)first;
	return 0;
}

#if TA_HAVE_PATCH_HOT
/* The return stub's thread key, created once (0 when it cannot be). */
static pthread_once_t hot_once = PTHREAD_ONCE_INIT;
static int hot_ok;

static void hot_make(void)
{
	hot_ok = ta_patch_hot_init() == 0;
}

static int hot_ready(void)
{
	pthread_once(&hot_once, hot_make);
	return hot_ok;
}
#endif

/* This window planned patchable entries: a later call (modules loaded
 * during the window) that finds none new is not a refusal. */
static int window_planned;

int ta_patch_attach_prepare(const char *spec)
{
	int n = 0;

#if TA_HAVE_PATCH_HOT
	if (hot_ready())
		n = ta_patchent_attach_prepare(spec);
#endif
	if (n > 0)
		window_planned = 1;
	if (n != 0 || window_planned)
		return n;
	ta_warn(NO_PATCH_WHY "; --patch ignored");
	return -ENOSYS;
}

int ta_patch_attach_commit(const uint64_t *pcs, size_t npcs)
{
	return ta_patchent_attach_commit(pcs, npcs);
}

void ta_patch_attach_restore(void)
{
	ta_patchent_attach_restore();
}

void ta_patch_attach_forget(void)
{
	window_planned = 0;
	ta_patchent_attach_forget();
}

/* The return stub's own (patch_hot.c) where it is built. */
#if !TA_HAVE_PATCH_HOT
void ta_patch_restore(int record_exits)
{
	(void)record_exits;
}

void ta_patch_unwind_begin(void)
{
}

void ta_patch_unwind_caught(uint64_t limit)
{
	(void)limit;
}
#endif

void ta_patch_dump(void)
{
	ta_patchent_dump();
}

void ta_patch_report_end(void)
{
}

void ta_patch_after_dlopen(void)
{
	int saved = errno;

	ta_patchent_after_dlopen();
	errno = saved;
}

void ta_patch_after_dlclose(void)
{
	int saved = errno;

	ta_patchent_after_dlclose();
	errno = saved;
}

/* As patch.c's: before the program's constructors, one thread running.
 * A process with nothing built with patchable entries is told that the
 * rest is not patched, as before there was any. */
__attribute__((constructor)) static void patch_init(void)
{
	const char *spec = secure_getenv("TRACEAGENT_PATCH");
	int saved = errno;

	if (!spec || !*spec)
		return;
#if TA_HAVE_PATCH_HOT
	if (getauxval(AT_SECURE) == 0 && hot_ready() && ta_patchent_start(spec) > 0) {
		if (ta_ring_up.ensure_started())
			ta_patch_dump();
		errno = saved;
		return;
	}
#endif
	ta_warn(NO_PATCH_WHY "; TRACEAGENT_PATCH ignored");
	errno = saved;
}

#endif
