/* SPDX-License-Identifier: MIT */
/*
 * patchent_a64.c - patchable entries on code of fixed 32-bit words
 * (aarch64): the no-op at the entry (after a `bti c` where there is one)
 * becomes a branch to the function's stub, one aligned 4-byte store; the
 * stub (arch/aarch64/patch_stub.S says what it keeps) goes back to the
 * instruction after it.  Nothing clobbers a register on the way (not x9,
 * as Linux's `mov x9, x30; bl` does: a per-function stub needs no link
 * register to know its function).  The no-ops before the symbol (M) are
 * not needed: one after it is enough.
 *
 * The stub (after the slot's descriptor, common entry and spec):
 *   24  stp x16, x17, [sp, #-32]!
 *   28  str x30, [sp, #16]
 *   32  adr x16, slot
 *   36  ldr x17, [x16, #8]
 *   40  blr x17
 *   44  ldr x30, [sp, #16]
 *   48  ldp x16, x17, [sp], #32
 *   52  b resume
 */
#define _GNU_SOURCE
#include <string.h>

#include "arch.h"
#include "patchent.h"

#if TA_HAVE_PATCH_HOT && TA_ARCH_CODE_FIXED_WORDS

#define A64_NOP	  0xd503201fu
#define A64_BTI_C 0xd503245fu

/* b's reach is +-128 MiB. */
const uint64_t ta_pe_arch_reach = (1ull << 27) - (1ull << 20);

static uint32_t insn_at(uint64_t a)
{
	uint32_t w;

	memcpy(&w, (const void *)(uintptr_t)a, 4);
	return w;
}

unsigned ta_pe_arch_plan(uint64_t area, uint64_t fn, uint64_t size, struct ta_pe_plan *pl)
{
	uint64_t post = fn;

	memset(pl, 0, sizeof(*pl));
	pl->fn = fn;
	if (area % 4 || fn % 4 || size < 8)
		return TA_PE_ROOM;
	if (insn_at(fn) == A64_BTI_C)
		post = fn + 4;
	if (area > post || (area < fn && fn - area > 64))
		return TA_PE_NONE;
	for (uint64_t a = area; a < fn; a += 4)
		if (insn_at(a) != A64_NOP)
			return TA_PE_NOT_NOPS;
	if (post + 4 > fn + size)
		return TA_PE_ROOM;
	if (insn_at(post) != A64_NOP)
		return area < fn && post == fn ? TA_PE_ROOM : TA_PE_NOT_NOPS;
	pl->nsite = 1;
	pl->site[0].at = post;
	pl->site[0].len = 4;
	memcpy(pl->site[0].orig, (const void *)(uintptr_t)post, 4);
	pl->from = post;
	pl->resume = post + 4;
	return 0;
}

static int branch(uint64_t from, uint64_t to, uint32_t *w)
{
	int64_t d = (int64_t)(to - from);

	if (d < -(1ll << 27) || d >= (1ll << 27) || d % 4)
		return -1;
	*w = 0x14000000u | ((uint32_t)(d >> 2) & 0x03ffffffu);
	return 0;
}

static void put(uint8_t *slot, unsigned at, uint32_t w)
{
	memcpy(slot + at, &w, 4);
}

unsigned ta_pe_arch_emit(struct ta_pe_plan *pl, uint8_t *slot)
{
	uint64_t self = (uint64_t)(uintptr_t)slot;
	uint32_t back, to;

	if (branch(self + 52, pl->resume, &back) < 0 || branch(pl->from, self + 24, &to) < 0)
		return TA_PE_NO_MEMORY;
	put(slot, 24, 0xa9be47f0u); /* stp x16, x17, [sp, #-32]! */
	put(slot, 28, 0xf9000bfeu); /* str x30, [sp, #16] */
	put(slot, 32, 0x10ffff10u); /* adr x16, .-32 */
	put(slot, 36, 0xf9400611u); /* ldr x17, [x16, #8] */
	put(slot, 40, 0xd63f0220u); /* blr x17 */
	put(slot, 44, 0xf9400bfeu); /* ldr x30, [sp, #16] */
	put(slot, 48, 0xa8c247f0u); /* ldp x16, x17, [sp], #32 */
	put(slot, 52, back);
	memcpy(pl->site[0].repl, &to, 4);
	return 0;
}

void ta_pe_arch_flush(uint64_t at, size_t len)
{
	__builtin___clear_cache((char *)(uintptr_t)at, (char *)(uintptr_t)(at + len));
}

#endif
