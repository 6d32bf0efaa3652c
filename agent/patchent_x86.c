/* SPDX-License-Identifier: MIT */
/*
 * patchent_x86.c - patchable entries on variable-length code (x86-64):
 * which no-ops the compiler left, and the jump written over them.
 *
 * GCC leaves N one-byte nops, clang one multi-byte nop (or several); both
 * after an endbr64 where there is one, and M of the N bytes before the
 * symbol, where __patchable_function_entries points.  The entry gets a
 * 5-byte jmp to the function's stub when the no-ops after the symbol cover
 * 5 bytes; else, with 2 there and 5 before (the "hot-patching" layout), a
 * short jmp back to a 5-byte jmp written before the symbol.  The stub goes
 * back after the whole no-ops the jmp covered (never into the middle of a
 * multi-byte one).
 *
 * The stub (after the slot's descriptor, common entry and spec):
 *   24  push %r11
 *   26  movabs $slot, %r11
 *   36  call *-34(%rip)       the common entry, at slot + 8
 *   42  pop %r11
 *   44  jmp resume
 * as patch.c's return-stub slots, so that ta_patch_enter_common serves both.
 */
#define _GNU_SOURCE
#include <string.h>

#include "arch.h"
#include "patchent.h"

#if TA_HAVE_PATCH_HOT && !TA_ARCH_CODE_FIXED_WORDS

const uint64_t ta_pe_arch_reach = (1ull << 31) - (1ull << 20);

/* The length of the no-op instruction at p (avail bytes readable), or 0:
 * 0x90, 0x66/0x2e prefixes, and 0f 1f /0 with any addressing form. */
static unsigned nop_len(const uint8_t *p, size_t avail)
{
	size_t i = 0, len;
	unsigned mod, rm;

	while (i < avail && i < 8 && (p[i] == 0x66 || p[i] == 0x2e))
		i++;
	if (i >= avail)
		return 0;
	if (p[i] == 0x90)
		return (unsigned)i + 1;
	if (i + 3 > avail || p[i] != 0x0f || p[i + 1] != 0x1f || ((p[i + 2] >> 3) & 7) != 0)
		return 0;
	mod = p[i + 2] >> 6;
	rm = p[i + 2] & 7;
	len = i + 3;
	if (mod != 3 && rm == 4) {
		if (len + 1 > avail)
			return 0;
		if (mod == 0 && (p[len] & 7) == 5)
			len += 4; /* SIB without a base: disp32 */
		len++;
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		len += 4;
	return len <= avail ? (unsigned)len : 0;
}

/* How many bytes of whole no-ops start at p, stopping once want are
 * covered (or at the first other instruction, or at avail). */
static unsigned nops_covering(const uint8_t *p, size_t avail, unsigned want)
{
	unsigned n = 0, l;

	while (n < want && (l = nop_len(p + n, avail - n)) != 0)
		n += l;
	return n;
}

static void site(struct ta_pe_plan *pl, uint64_t at, unsigned len)
{
	struct ta_pe_site *s = &pl->site[pl->nsite++];

	s->at = at;
	s->len = len;
	memcpy(s->orig, (const void *)(uintptr_t)at, len);
	/* Bytes a jump covers are never run: they trap if they were. */
	memset(s->repl, 0xcc, len);
}

unsigned ta_pe_arch_plan(uint64_t area, uint64_t fn, uint64_t size, struct ta_pe_plan *pl)
{
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	uint64_t post = fn;
	unsigned pre = 0, after, before = 0;

	memset(pl, 0, sizeof(*pl));
	pl->fn = fn;
	if (size >= 4 && memcmp((const void *)(uintptr_t)fn, endbr64, 4) == 0)
		post = fn + 4;
	if (area > post || (area < fn && fn - area > 64))
		return TA_PE_NONE;
	if (area < fn) {
		pre = (unsigned)(fn - area);
		before = nops_covering((const uint8_t *)(uintptr_t)area, pre, pre);
		if (before != pre)
			return TA_PE_NOT_NOPS;
	}
	if (post >= fn + size)
		return TA_PE_ROOM;
	after = nops_covering((const uint8_t *)(uintptr_t)post, fn + size - post, 5);
	if (after >= 5) {
		site(pl, post, after);
		pl->from = post;
		pl->resume = post + after;
		return 0;
	}
	if (after >= 2 && pre >= 5) {
		/* The 5-byte jmp first in the sites: written before the short
		 * jmp that leads to it, put back after. */
		site(pl, area, 5);
		site(pl, post, 2);
		pl->site[1].repl[0] = 0xeb;
		pl->site[1].repl[1] = (uint8_t)(int8_t)(int64_t)(area - (post + 2));
		pl->from = area;
		pl->resume = post + 2;
		return 0;
	}
	return after == 0 && pre == 0 ? TA_PE_NOT_NOPS : TA_PE_ROOM;
}

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put32(uint8_t *p, int64_t v)
{
	int32_t w = (int32_t)v;

	memcpy(p, &w, 4);
}

unsigned ta_pe_arch_emit(struct ta_pe_plan *pl, uint8_t *slot)
{
	uint64_t self = (uint64_t)(uintptr_t)slot;
	uint64_t stub = self + 24;

	if (!fits32((int64_t)(stub - (pl->from + 5))) ||
	    !fits32((int64_t)(pl->resume - (self + 49))))
		return TA_PE_NO_MEMORY;
	slot[24] = 0x41; /* push %r11 */
	slot[25] = 0x53;
	slot[26] = 0x49; /* movabs $slot, %r11 */
	slot[27] = 0xbb;
	memcpy(slot + 28, &self, 8);
	slot[36] = 0xff; /* call *-34(%rip): the common entry at 8 */
	slot[37] = 0x15;
	put32(slot + 38, 8 - 42);
	slot[42] = 0x41; /* pop %r11 */
	slot[43] = 0x5b;
	slot[44] = 0xe9; /* jmp resume */
	put32(slot + 45, (int64_t)(pl->resume - (self + 49)));
	pl->site[0].repl[0] = 0xe9;
	put32(pl->site[0].repl + 1, (int64_t)(stub - (pl->from + 5)));
	return 0;
}

void ta_pe_arch_flush(uint64_t at, size_t len)
{
	/* x86 keeps the instruction cache coherent with stores. */
	(void)at;
	(void)len;
}

#endif
