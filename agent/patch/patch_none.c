/* SPDX-License-Identifier: MIT */
/*
 * patch_none.c - the patcher's interface (patch.h) where this build has no
 * patcher (no capstone, or an architecture without one): each entry does
 * nothing, or says in one line that TRACEAGENT_PATCH and --patch are
 * ignored, and why.
 *
 * Apart from patch.c so that neither file is two files in #if blocks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "arch.h"
#include "base.h"
#include "patch.h"
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

int ta_patch_attach_prepare(const char *spec)
{
	(void)spec;
	ta_warn(NO_PATCH_WHY "; --patch ignored");
	return -ENOSYS;
}

int ta_patch_attach_commit(const uint64_t *pcs, size_t npcs)
{
	(void)pcs;
	(void)npcs;
	return 0;
}

void ta_patch_attach_restore(void)
{
}

void ta_patch_attach_forget(void)
{
}

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

void ta_patch_dump(void)
{
}

void ta_patch_report_end(void)
{
}

void ta_patch_after_dlopen(void)
{
}

void ta_patch_after_dlclose(void)
{
}

__attribute__((constructor)) static void patch_init(void)
{
	const char *spec = secure_getenv("TRACEAGENT_PATCH");

	if (spec && *spec)
		ta_warn(NO_PATCH_WHY "; TRACEAGENT_PATCH ignored");
}

#endif
