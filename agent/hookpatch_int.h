/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_int.h - what hookpatch's files share, and nothing outside
 * them includes: which decoder this machine has, the module a function is
 * in, a call found, the registers a decoder follows, and the calls between
 * the driver (hookpatch.c), the decoders (hookpatch_x86.c,
 * hookpatch_a64.c) and what they know beside the code (hookpatch_mod.c).
 */
#ifndef TA_HOOKPATCH_INT_H
#define TA_HOOKPATCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "ta_config.h"

/* Variable-length code is decoded with capstone (built with patching);
 * fixed 32-bit words by hand. */
#if TA_ARCH_HAS_HOOKPATCH && !TA_ARCH_CODE_FIXED_WORDS && TA_HAVE_PATCH
#include "disasm.h"
#define HP_X86 1
#else
#define HP_X86 0
#endif
#if TA_ARCH_HAS_HOOKPATCH && TA_ARCH_CODE_FIXED_WORDS
#define HP_A64 1
#else
#define HP_A64 0
#endif
#define HP_DECODER (HP_X86 || HP_A64)

/* ---- the module of a function (hookpatch_mod.c) ---- */

#define MAX_SLOTS 16
#define MAX_LOADS 16

struct mod {
	uintptr_t want;	  /* the address looked for */
	uintptr_t bias;	  /* load bias */
	uintptr_t lo, hi; /* its executable segment */
	int prot;
	uintptr_t ld_lo[MAX_LOADS], ld_hi[MAX_LOADS]; /* its segments: where a load may read */
	int nld;
	uintptr_t *slot[MAX_SLOTS]; /* GOT entries relocated against a hook */
	int slot_exit[MAX_SLOTS];
	int nslots;
	int found;
	uint8_t build_id[32];  /* its GNU build-id (the first 32 bytes) */
	uint32_t build_id_len; /* 0: none */
};

/* The module whose executable segment holds addr, in m: 0, or -1. */
int ta_hp_mod_of(uintptr_t addr, struct mod *m);
/* Whether the 8 bytes at a are in the module's file-backed segments. */
int ta_hp_readable(const struct mod *m, uintptr_t a);
/* 0 enter, 1 exit, -1 not a GOT entry of a hook. */
int ta_hp_slot_kind(const struct mod *m, uintptr_t at);
/* 0 enter, 1 exit, -1: t is not a hook nor the module's PLT entry of one
 * (plt_slot: the decoder's reading of a PLT stub at t, its GOT entry or
 * 0). */
int ta_hp_hook_kind(const struct mod *m, uintptr_t t,
		    uintptr_t (*plt_slot)(const struct mod *m, uintptr_t t));

/* The values a decoder read from the module's data as it is now (GOT
 * entries, which another module loaded first may interpose), on which what
 * it found depends beside the code: kept on disk with the analysis
 * (hookpatch_cache.h), which is used only where they are the same.  Under
 * hookpatch's lock; n past HP_MAX_READS: too many to keep. */
#define HP_MAX_READS 8
struct hp_reads {
	int n;
	uintptr_t at[HP_MAX_READS], val[HP_MAX_READS];
};
extern struct hp_reads ta_hp_reads;

/* The word at `at` as the code will find it, noted in ta_hp_reads. */
uintptr_t ta_hp_read(uintptr_t at);

/* ---- the calls found ---- */

enum { K_ENTER, K_EXIT, K_TAIL };

struct site {
	uintptr_t fn; /* the function: its calls are rewritten together */
	uintptr_t at; /* the instruction */
	uintptr_t bias;
	uintptr_t lo, hi; /* its segment, and the segment's protections */
	int prot;
	uint8_t len, kind;
	uint8_t
	    rest_only; /* x86-64: only the bytes after the first written (ta_hp_writable_site) */
	uint8_t orig[8], repl[8];
};

#define MAX_FN_SITES 64

/* Registers whose value is known at a point of the linear walk. */
#define NREGS 32
struct regs {
	uint32_t known; /* bit per register */
	uintptr_t v[NREGS];
};

static inline void reg_set(struct regs *r, int i, uintptr_t v)
{
	if (i < 0 || i >= NREGS)
		return;
	r->known |= 1u << i;
	r->v[i] = v;
}

static inline void reg_forget(struct regs *r, int i)
{
	if (i >= 0 && i < NREGS)
		r->known &= ~(1u << i);
}

static inline int reg_get(const struct regs *r, int i, uintptr_t *v)
{
	if (i < 0 || i >= NREGS || !(r->known & (1u << i)))
		return 0;
	*v = r->v[i];
	return 1;
}

/* A hook call found at `at` (kind), whose first argument register is arg:
 * kept in out when it is the function's own; 0, 1 when it is another's
 * (an inlined callee's, left), or -ENOTSUP when the argument is not known. */
int ta_hp_found_call(const struct regs *r, int arg, uintptr_t fn, struct site *s);

/* ---- the decoder of this machine (hookpatch_x86.c or hookpatch_a64.c) ---- */

/* The hook calls of [fn, end) in out (at most max): how many, or -errno
 * (a call that cannot be rewritten); *ret_at where the function returns,
 * if the decoder needs it. */
int ta_hp_scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out, int max,
	       uintptr_t *ret_at);
/* Whether s can be rewritten while other threads run it: 0, or -ENOTSUP;
 * the decoder's choice of how (s->rest_only) is set. */
int ta_hp_writable_site(struct site *s, uintptr_t ret_at);
/* Writes s's bytes `to` (its repl or its orig) over the instruction. */
void ta_hp_write_site(const struct site *s, const uint8_t *to);

#endif
