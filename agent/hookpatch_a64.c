/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_a64.c - hookpatch's decoder and writer for code of fixed
 * 32-bit words (aarch64): the few instructions that matter decoded by
 * hand, the first argument (x0) followed through them, and a call
 * rewritten with one single-copy-atomic store and the instruction cache
 * cleaned.
 *
 * Apart from the driver (hookpatch.c), which calls ta_hp_scan,
 * ta_hp_writable_site and ta_hp_write_site whatever the machine, and from
 * the x86-64 one (hookpatch_x86.c); compiled empty where there is no such
 * decoder (HP_A64 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "hookpatch_int.h"

#if HP_A64

#define A64_NOP	  0xd503201fu
#define A64_RET	  0xd65f03c0u
#define A64_BTI_C 0xd503245fu

static uint32_t insn_at(uintptr_t a)
{
	uint32_t w;

	memcpy(&w, (const void *)a, 4);
	return w;
}

static int64_t sext(uint64_t v, unsigned bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* adrp's target page. */
static uintptr_t adrp_target(uintptr_t pc, uint32_t w)
{
	uint64_t imm = ((uint64_t)((w >> 5) & 0x7ffff) << 2) | ((w >> 29) & 3);
	return (pc & ~(uintptr_t)0xfff) + (uintptr_t)(sext(imm, 21) * 4096);
}

static uintptr_t plt_slot(const struct mod *m, uintptr_t t)
{
	uint32_t w;
	uintptr_t page;

	(void)m;
	/* [bti c]; adrp x16, GOT page; ldr x17, [x16, #off]; ... br x17 */
	if (insn_at(t) == A64_BTI_C)
		t += 4;
	w = insn_at(t);
	if ((w & 0x9f00001fu) != 0x90000010u)
		return 0;
	page = adrp_target(t, w);
	w = insn_at(t + 4);
	if ((w & 0xffc003ffu) != 0xf9400211u)
		return 0;
	return page + ((w >> 10) & 0xfff) * 8;
}

/* 0 enter, 1 exit, -1: t is not a hook nor the module's PLT entry of one. */
static int hook_kind(const struct mod *m, uintptr_t t)
{
	return ta_hp_hook_kind(m, t, plt_slot);
}

/* Loads and stores (the class with op0 = x1x0): the general registers
 * they write.  An encoding not recognised below forgets every register it
 * names: forgetting too many only refuses more. */
static void track_ldst(struct regs *r, uint32_t w)
{
	int rt = (int)(w & 31), rn = (int)((w >> 5) & 31), rt2 = (int)((w >> 10) & 31);
	int simd = (w >> 26) & 1, load = (w >> 22) & 1;

	if ((w & 0x3a000000u) == 0x28000000u) { /* ldp, stp (and no-allocate) */
		if (load && !simd) {
			reg_forget(r, rt);
			reg_forget(r, rt2);
		}
		if (((w >> 23) & 3) == 1 || ((w >> 23) & 3) == 3)
			reg_forget(r, rn); /* post- or pre-index */
		return;
	}
	if ((w & 0x3b000000u) == 0x39000000u) { /* ldr, str (unsigned offset) */
		if (((w >> 22) & 3) != 0 && !simd)
			reg_forget(r, rt);
		return;
	}
	if ((w & 0x3b200000u) == 0x38000000u) { /* 9-bit offset, maybe writeback */
		if (((w >> 22) & 3) != 0 && !simd)
			reg_forget(r, rt);
		if (((w >> 10) & 1) == 1)
			reg_forget(r, rn); /* post- or pre-index */
		return;
	}
	if ((w & 0x3b200c00u) == 0x38200800u) { /* register offset */
		if (((w >> 22) & 3) != 0 && !simd)
			reg_forget(r, rt);
		return;
	}
	if ((w & 0x3b000000u) == 0x18000000u) { /* ldr (literal) */
		if (!simd)
			reg_forget(r, rt);
		return;
	}
	/* Exclusives, atomics, the rest: everything named. */
	reg_forget(r, rt);
	reg_forget(r, rn);
	reg_forget(r, rt2);
	reg_forget(r, (int)((w >> 16) & 31));
}

/* What the instruction w at pc does to the registers followed. */
static void track(const struct mod *m, struct regs *r, uintptr_t pc, uint32_t w)
{
	int rd = (int)(w & 31), rn = (int)((w >> 5) & 31);
	uintptr_t v;

	if ((w & 0x9f000000u) == 0x90000000u) { /* adrp */
		reg_set(r, rd == 31 ? -1 : rd, adrp_target(pc, w));
		return;
	}
	if ((w & 0xff800000u) == 0x91000000u && rd != 31) { /* add xd, xn, #imm */
		if (rn != 31 && reg_get(r, rn, &v))
			reg_set(r, rd, v + (((w >> 10) & 0xfff) << (((w >> 22) & 1) ? 12 : 0)));
		else
			reg_forget(r, rd);
		return;
	}
	if ((w & 0xffc00000u) == 0xf9400000u && rd != 31) { /* ldr xt, [xn, #imm] */
		if (rn != 31 && reg_get(r, rn, &v) &&
		    ta_hp_readable(m, v + ((w >> 10) & 0xfff) * 8))
			reg_set(r, rd, ta_hp_read(v + ((w >> 10) & 0xfff) * 8));
		else
			reg_forget(r, rd);
		return;
	}
	if ((w & 0xffe0ffe0u) == 0xaa0003e0u && rd != 31) { /* mov xd, xm */
		if (reg_get(r, (int)((w >> 16) & 31), &v) && (int)((w >> 16) & 31) != 31)
			reg_set(r, rd, v);
		else
			reg_forget(r, rd);
		return;
	}
	if ((w & 0x0a000000u) == 0x08000000u) {
		track_ldst(r, w);
		return;
	}
	/* Everything else writes at most the register in bits 0-4. */
	reg_forget(r, rd);
}

/* A branch's target, with *how: 1 bl, 2 b, 3 conditional; 0 not a branch
 * with an immediate. */
static uintptr_t branch(uintptr_t pc, uint32_t w, int *how)
{
	*how = 0;
	if ((w & 0x7c000000u) == 0x14000000u) { /* b, bl */
		*how = (w & 0x80000000u) ? 1 : 2;
		return pc + (uintptr_t)(sext(w & 0x3ffffff, 26) * 4);
	}
	if ((w & 0xff000010u) == 0x54000000u || (w & 0x7e000000u) == 0x34000000u) {
		*how = 3; /* b.cond, cbz, cbnz */
		return pc + (uintptr_t)(sext((w >> 5) & 0x7ffff, 19) * 4);
	}
	if ((w & 0x7e000000u) == 0x36000000u) {
		*how = 3; /* tbz, tbnz */
		return pc + (uintptr_t)(sext((w >> 5) & 0x3fff, 14) * 4);
	}
	return 0;
}

int ta_hp_scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out, int max,
	       uintptr_t *ret_at)
{
	struct regs r = {0};
	int n = 0;

	*ret_at = 0;
	if (fn & 3)
		return -EINVAL;
	for (uintptr_t pc = fn; pc + 4 <= end; pc += 4) {
		uint32_t w = insn_at(pc);
		int how, kind = -1;
		uintptr_t t = branch(pc, w, &how), v;

		if (how) {
			kind = hook_kind(m, t);
			if (how != 1 && kind < 0 && (t < fn || t >= end))
				return -ENOTSUP; /* into a part of its own elsewhere (.cold) */
		} else if (((w & 0xfffffc1fu) == 0xd63f0000u || (w & 0xfffffc1fu) == 0xd61f0000u) &&
			   reg_get(&r, (int)((w >> 5) & 31), &v) && (kind = hook_kind(m, v)) >= 0)
			how =
			    (w & 0x00200000u) ? 1 : 2; /* blr, br through a GOT entry (-fno-plt) */
		if (kind >= 0) {
			struct site *s = &out[n];
			uint32_t repl = how == 1 ? A64_NOP : A64_RET;
			int k;

			if (how == 3 || (how == 2 && kind != 1) || n >= max)
				return -ENOTSUP;
			s->at = pc;
			s->len = 4;
			s->kind = how == 2 ? K_TAIL : kind ? K_EXIT : K_ENTER;
			memcpy(s->repl, &repl, 4);
			k = ta_hp_found_call(&r, 0, fn, s);
			if (k < 0)
				return k;
			if (k == 0)
				n++;
		}
		if (how == 1 || (w & 0xfffffc1fu) == 0xd63f0000u) {
			/* bl, blr: x0-x18 and the link register are the callee's. */
			for (int i = 0; i <= 18; i++)
				reg_forget(&r, i);
			reg_forget(&r, 30);
		} else if (!how)
			track(m, &r, pc, w);
	}
	return n;
}

int ta_hp_writable_site(struct site *s, uintptr_t ret_at)
{
	(void)ret_at;
	return (s->at & 3) ? -ENOTSUP : 0;
}

void ta_hp_write_site(const struct site *s, const uint8_t *to)
{
	uint32_t w;

	memcpy(&w, to, 4);
	/* Relaxed: one single-copy-atomic word; the cache maintenance below
	 * makes it visible to instruction fetches. */
	__atomic_store_n((uint32_t *)s->at, w, __ATOMIC_RELAXED);
	__builtin___clear_cache((char *)s->at, (char *)s->at + 4);
}

#endif
