/* SPDX-License-Identifier: MIT */
/*
 * hookpatch_x86.c - hookpatch's decoder and writer for variable-length
 * code (x86-64): the body decoded with capstone, the first argument
 * (%rdi) followed through it, and a call rewritten with one atomic store
 * when it lies in an aligned 8- or 16-byte block, else in the three steps
 * hookpatch.c describes, with membarrier's SYNC_CORE between them.
 *
 * Apart from the driver (hookpatch.c), which calls ta_hp_scan,
 * ta_hp_writable_site and ta_hp_write_site whatever the machine, and from
 * the aarch64 one (hookpatch_a64.c); compiled empty where there is no
 * such decoder (HP_X86 0).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hookpatch_int.h"

#if HP_X86
#include <cpuid.h>

#ifdef __NR_membarrier
#include <linux/membarrier.h>
#endif

/* Capstone's names of the 16 registers, by width. */
static const uint16_t gprs[16][5] = {
    {X86_REG_RAX, X86_REG_EAX, X86_REG_AX, X86_REG_AL, X86_REG_AH},
    {X86_REG_RCX, X86_REG_ECX, X86_REG_CX, X86_REG_CL, X86_REG_CH},
    {X86_REG_RDX, X86_REG_EDX, X86_REG_DX, X86_REG_DL, X86_REG_DH},
    {X86_REG_RBX, X86_REG_EBX, X86_REG_BX, X86_REG_BL, X86_REG_BH},
    {X86_REG_RSP, X86_REG_ESP, X86_REG_SP, X86_REG_SPL, X86_REG_SPL},
    {X86_REG_RBP, X86_REG_EBP, X86_REG_BP, X86_REG_BPL, X86_REG_BPL},
    {X86_REG_RSI, X86_REG_ESI, X86_REG_SI, X86_REG_SIL, X86_REG_SIL},
    {X86_REG_RDI, X86_REG_EDI, X86_REG_DI, X86_REG_DIL, X86_REG_DIL},
    {X86_REG_R8, X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_R8B},
    {X86_REG_R9, X86_REG_R9D, X86_REG_R9W, X86_REG_R9B, X86_REG_R9B},
    {X86_REG_R10, X86_REG_R10D, X86_REG_R10W, X86_REG_R10B, X86_REG_R10B},
    {X86_REG_R11, X86_REG_R11D, X86_REG_R11W, X86_REG_R11B, X86_REG_R11B},
    {X86_REG_R12, X86_REG_R12D, X86_REG_R12W, X86_REG_R12B, X86_REG_R12B},
    {X86_REG_R13, X86_REG_R13D, X86_REG_R13W, X86_REG_R13B, X86_REG_R13B},
    {X86_REG_R14, X86_REG_R14D, X86_REG_R14W, X86_REG_R14B, X86_REG_R14B},
    {X86_REG_R15, X86_REG_R15D, X86_REG_R15W, X86_REG_R15B, X86_REG_R15B},
};
#define X_RDI 7

/* The register's index, and its width in *w (0: 64 bits, 1: 32, 2+: less). */
static int gpr(unsigned reg, int *w)
{
	for (int i = 0; i < 16; i++)
		for (int k = 0; k < 5; k++)
			if (gprs[i][k] == reg) {
				*w = k;
				return i;
			}
	return -1;
}

static uintptr_t plt_slot(const struct mod *m, uintptr_t t)
{
	const uint8_t *p = (const uint8_t *)t;
	size_t left = 16;
	uint64_t a = t;
	uintptr_t slot = 0;
	cs_insn *in = ta_csf.malloc(ta_cs);

	(void)m;
	if (!in)
		return 0;
	/* endbr64 (IBT's .plt.sec), then jmp *GOT(%rip), with bnd or not. */
	for (int k = 0; k < 2 && ta_csf.disasm_iter(ta_cs, &p, &left, &a, in); k++) {
		const cs_x86 *x = &in->detail->x86;

		if (in->id == X86_INS_ENDBR64 && k == 0)
			continue;
		if (in->id == X86_INS_JMP && x->op_count == 1 &&
		    x->operands[0].type == X86_OP_MEM && x->operands[0].mem.base == X86_REG_RIP &&
		    x->operands[0].mem.index == X86_REG_INVALID)
			slot =
			    (uintptr_t)(in->address + in->size + (uint64_t)x->operands[0].mem.disp);
		break;
	}
	ta_csf.free(in, 1);
	return slot;
}

/* 0 enter, 1 exit, -1: t is not a hook nor the module's PLT entry of one. */
static int hook_kind(const struct mod *m, uintptr_t t)
{
	return ta_hp_hook_kind(m, t, plt_slot);
}

/* What the instruction does to the registers followed. */
static void track(const struct mod *m, struct regs *r, const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *d = x->op_count == 2 ? &x->operands[0] : NULL;
	const cs_x86_op *s = x->op_count == 2 ? &x->operands[1] : NULL;
	uintptr_t next = (uintptr_t)(in->address + in->size);
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	int dw = -1, di = d && d->type == X86_OP_REG ? gpr(d->reg, &dw) : -1;

	if (di >= 0 && (dw == 0 || dw == 1)) {
		uintptr_t v;
		int sw = -1, si;

		if (in->id == X86_INS_LEA && dw == 0 && s->type == X86_OP_MEM &&
		    s->mem.base == X86_REG_RIP && s->mem.index == X86_REG_INVALID) {
			reg_set(r, di, next + (uintptr_t)s->mem.disp);
			return;
		}
		if (in->id == X86_INS_MOV && s->type == X86_OP_IMM) {
			reg_set(r, di, dw == 1 ? (uintptr_t)(uint32_t)s->imm : (uintptr_t)s->imm);
			return;
		}
		if (in->id == X86_INS_MOV && s->type == X86_OP_REG) {
			si = gpr(s->reg, &sw);
			if (si >= 0 && sw == dw && reg_get(r, si, &v) &&
			    (dw == 0 || v <= UINT32_MAX))
				reg_set(r, di, v);
			else
				reg_forget(r, di);
			return;
		}
		/* A load from the module (its GOT, relocated by now): the
		 * address the code will find there. */
		if (in->id == X86_INS_MOV && dw == 0 && s->type == X86_OP_MEM &&
		    s->mem.base == X86_REG_RIP && s->mem.index == X86_REG_INVALID &&
		    ta_hp_readable(m, next + (uintptr_t)s->mem.disp)) {
			reg_set(r, di, ta_hp_read(next + (uintptr_t)s->mem.disp));
			return;
		}
	}
	if (ta_csf.regs_access(ta_cs, in, rd, &nrd, wr, &nwr) != CS_ERR_OK) {
		r->known = 0;
		return;
	}
	for (int i = 0; i < nwr; i++) {
		int w;
		reg_forget(r, gpr(wr[i], &w));
	}
}

/* The no-ops of each length (Intel's recommended forms). */
static const uint8_t nops[9][8] = {
    {0},
    {0x90},
    {0x66, 0x90},
    {0x0f, 0x1f, 0x00},
    {0x0f, 0x1f, 0x40, 0x00},
    {0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
    {0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
    {0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

/* Finds the function's hook calls into out (at most max); how many, or a
 * negative errno. */
int ta_hp_scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out, int max,
	       uintptr_t *ret_at)
{
	const uint8_t *p = (const uint8_t *)fn;
	size_t left = end - fn;
	uint64_t a = fn;
	struct regs r = {0};
	cs_insn *in;
	int n = 0, err = 0;

	if (ta_capstone_open() < 0)
		return -ENOSYS;
	in = ta_csf.malloc(ta_cs);
	if (!in)
		return -ENOMEM;
	while (left > 0 && !err) {
		const cs_x86 *x;
		const cs_x86_op *o;
		int call, jump, kind = -1, w;
		uintptr_t v;

		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			err = -EILSEQ;
			break;
		}
		x = &in->detail->x86;
		if (in->id == X86_INS_RET && in->size == 1 && !*ret_at)
			*ret_at = (uintptr_t)in->address;
		call = ta_cs_in_group(in, X86_GRP_CALL);
		jump = ta_cs_in_group(in, X86_GRP_JUMP);
		if (!call && !jump) {
			track(m, &r, in);
			continue;
		}
		o = x->op_count == 1 ? &x->operands[0] : NULL;
		if (o && o->type == X86_OP_IMM) {
			kind = hook_kind(m, (uintptr_t)o->imm);
			if (jump && kind < 0 &&
			    ((uintptr_t)o->imm < fn || (uintptr_t)o->imm >= end))
				err = -ENOTSUP; /* into a part of its own elsewhere (.cold) */
		} else if (o && o->type == X86_OP_MEM && o->mem.base == X86_REG_RIP &&
			   o->mem.index == X86_REG_INVALID)
			kind = ta_hp_slot_kind(
			    m, (uintptr_t)(in->address + in->size + (uint64_t)o->mem.disp));
		else if (o && o->type == X86_OP_REG && reg_get(&r, gpr(o->reg, &w), &v) &&
			 hook_kind(m, v) >= 0)
			err = -ENOTSUP; /* through a register */
		if (kind >= 0 && !err) {
			struct site *s = &out[n];
			int tail = jump && in->id == X86_INS_JMP;
			int k;

			if ((jump && !tail) || (tail && kind != 1) || in->size > 8 || n >= max) {
				err = -ENOTSUP; /* conditional, or a tail jump to the enter hook */
				break;
			}
			s->at = (uintptr_t)in->address;
			s->len = in->size;
			s->kind = tail ? K_TAIL : kind ? K_EXIT : K_ENTER;
			if (tail) {
				s->repl[0] = 0xc3;
				memcpy(s->repl + 1, nops[s->len - 1], s->len - 1u);
			} else
				memcpy(s->repl, nops[s->len], s->len);
			k = ta_hp_found_call(&r, X_RDI, fn, s);
			if (k < 0)
				err = k;
			else if (k == 0)
				n++;
		}
		if (call) {
			/* The callee may change the caller-saved registers. */
			static const int clobbered[] = {0, 1, 2, 6, 7, 8, 9, 10, 11};
			for (size_t i = 0; i < sizeof(clobbered) / sizeof(clobbered[0]); i++)
				reg_forget(&r, clobbered[i]);
		}
	}
	ta_csf.free(in, 1);
	return err ? err : n;
}

/* membarrier's SYNC_CORE, registered: 1 yes, -1 no, 0 not asked yet.
 * Under hp_lock. */
static int sync_core;

static int have_sync_core(void)
{
#ifdef __NR_membarrier
	if (sync_core == 0) {
		long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

		sync_core =
		    cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
			    syscall(__NR_membarrier,
				    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0
			? 1
			: -1;
	}
	return sync_core > 0;
#else
	return 0;
#endif
}

static void serialise_all(void)
{
#ifdef __NR_membarrier
	syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
#endif
}

/* Bytes of the first step: what alone does what the new instruction does. */
static unsigned head_len(const struct site *s)
{
	return s->kind == K_TAIL ? 1 : 2;
}

/* cmpxchg16b (CPUID.1:ECX.CX16): 1 yes, -1 no, 0 not asked yet.  Under
 * hp_lock. */
static int cx16;

static int have_cx16(void)
{
	if (cx16 == 0) {
		unsigned a, b, c, d;
		cx16 = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_CMPXCHG16B) ? 1 : -1;
	}
	return cx16 > 0;
}

/* Whether [at, at + n) can be written with one atomic store: within an
 * aligned 8-byte word (a plain store), or within an aligned 16-byte block
 * (lock cmpxchg16b). */
static int one_store(uintptr_t at, unsigned n)
{
	return (at & 7) + n <= 8 || ((at & 15) + n <= 16 && have_cx16());
}

/*
 * Whether the site can be written: 0 or -ENOTSUP.  One case has no step
 * (A): a call whose first two bytes straddle two 16-byte blocks (its
 * opcode the last byte of one, the rest in the next), which an instruction
 * fetch may read at different times.  The opcode is then kept and the rest
 * alone rewritten, with one store within the second block, so that a fetch
 * sees the old call or the new instruction, both whole:
 *   - `call rel32` (e8) gets the displacement of a `ret` of the function
 *     itself, which returns at once to the next instruction (a few cycles
 *     rather than nothing);
 *   - `call *GOT(%rip)` (ff 15) becomes `inc %eax` (ff c0) and a 4-byte
 *     no-op.
 * Both change nothing the code keeps: a call made where the function calls
 * a hook may clobber rax and the flags, and writes below the stack pointer
 * (no red zone is live across a call).
 */
int ta_hp_writable_site(struct site *s, uintptr_t ret_at)
{
	static const uint8_t inc_nop[6] = {0xff, 0xc0, 0x0f, 0x1f, 0x40, 0x00};
	int64_t rel;
	int32_t r32;

	if (one_store(s->at, s->len))
		return 0;
	if (one_store(s->at, head_len(s)) && have_sync_core())
		return 0;
	if (s->kind == K_TAIL || (s->at & 15) != 15)
		return -ENOTSUP;
	if (s->len == 6 && s->orig[0] == 0xff && s->orig[1] == 0x15) {
		memcpy(s->repl, inc_nop, 6);
		s->rest_only = 1;
		return 0;
	}
	if (s->len != 5 || s->orig[0] != 0xe8 || !ret_at)
		return -ENOTSUP;
	rel = (int64_t)(ret_at - (s->at + 5));
	if (rel < INT32_MIN || rel > INT32_MAX)
		return -ENOTSUP;
	r32 = (int32_t)rel;
	s->repl[0] = 0xe8;
	memcpy(s->repl + 1, &r32, 4);
	s->rest_only = 1;
	return 0;
}

/* Replaces n bytes at offset off of the aligned 16 bytes at p with b[],
 * with one atomic store.  The loop only repeats if the bytes changed under
 * us, which nothing does (hp_lock). */
static void store16(uint64_t *p, const uint8_t *b, unsigned off, unsigned n)
{
	uint64_t lo = __atomic_load_n(&p[0], __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&p[1], __ATOMIC_RELAXED);
	uint8_t ok = 0;

	while (!ok) {
		uint64_t nv[2] = {lo, hi};

		memcpy((uint8_t *)nv + off, b, n);
		__asm__ volatile("lock cmpxchg16b %1"
				 : "=@ccz"(ok), "+m"(*(volatile uint64_t(*)[2])p), "+a"(lo),
				   "+d"(hi)
				 : "b"(nv[0]), "c"(nv[1])
				 : "memory");
	}
}

/* Stores bytes [at, at + n): with one atomic store when one_store() says
 * so, else with one per aligned word they touch (relaxed: the order
 * between words is what the steps' barriers give, and a word is seen whole
 * or not at all). */
static void store_bytes(uintptr_t at, const uint8_t *b, unsigned n)
{
	if ((at & 7) + n > 8 && (at & 15) + n <= 16 && have_cx16()) {
		store16((uint64_t *)(at & ~(uintptr_t)15), b, (unsigned)(at & 15), n);
		return;
	}
	while (n > 0) {
		uint64_t *w = (uint64_t *)(at & ~(uintptr_t)7);
		unsigned off = (unsigned)(at & 7), k = 8 - off < n ? 8 - off : n;
		uint64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);

		memcpy((uint8_t *)&v + off, b, k);
		__atomic_store_n(w, v, __ATOMIC_RELAXED);
		at += k;
		b += k;
		n -= k;
	}
}

/* Replaces the site's bytes by to[] (the file's comment: one store, or
 * the three steps). */
void ta_hp_write_site(const struct site *s, const uint8_t *to)
{
	uint8_t head[2];
	unsigned h = head_len(s);

	if (s->rest_only) {
		/* At the start of a 16-byte block: one store. */
		store_bytes(s->at + 1, to + 1, s->len - 1u);
		return;
	}
	if (one_store(s->at, s->len)) {
		store_bytes(s->at, to, s->len);
		return;
	}
	if (s->kind == K_TAIL)
		head[0] = 0xc3; /* ret */
	else {
		head[0] = 0xeb; /* jmp over the rest */
		head[1] = (uint8_t)(s->len - 2);
	}
	store_bytes(s->at, head, h); /* (A) */
	serialise_all();
	store_bytes(s->at + h, to + h, s->len - h); /* (B) */
	serialise_all();
	store_bytes(s->at, to, h); /* (C) */
}

#endif
