/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - the patcher's reading and moving of x86-64 code (capstone):
 * whether a function's entry can take a jmp and how its first
 * instructions move to a trampoline, and whether and how its whole body
 * moves to a copy that records its exits (patch.c's header says when
 * either is chosen).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "dump.h"
#include "fnsel.h"
#include "format.h"
#include "lazylib.h"
#include "patch.h"
#include "ring.h"
#include "ta_config.h"

#if TA_HAVE_PATCH
#include "disasm.h"
#include "patch_int.h"

/* ---- analysis and relocation ---------------------------------------------------------- */

/*
 * Whether the instruction reads or moves the function's return address,
 * which the patch replaces with the return stub's: a pop or an rsp-based
 * access at the slot while the stack pointer's offset from the entry is
 * known (*delta >= 0), or an access at the slot through the frame pointer
 * (*rbp_at: the offset at which `mov %rsp, %rbp` set it; -1 before).
 * Updates both.  Code generators that move return addresses (V8's
 * builtins copy theirs to build frames) would make the return stub lose
 * the frame; so would __builtin_return_address(0) see the stub.
 */
static int touches_return_address(const cs_insn *in, int64_t *delta, int64_t *rbp_at)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;

	for (int i = 0; i < x->op_count; i++) {
		const cs_x86_op *o = &x->operands[i];
		if (o->type != X86_OP_MEM || o->mem.index != X86_REG_INVALID)
			continue;
		if (o->mem.base == X86_REG_RSP && *delta >= 0 && o->mem.disp == *delta)
			return 1;
		if (o->mem.base == X86_REG_RBP && *rbp_at >= 0 && o->mem.disp == *rbp_at)
			return 1;
	}
	if (*delta < 0)
		return 0;
	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHFQ:
		*delta += 8;
		return 0;
	case X86_INS_POP:
	case X86_INS_POPFQ:
		if (*delta == 0)
			return 1;
		*delta -= 8;
		return 0;
	case X86_INS_SUB:
	case X86_INS_ADD:
		if (o0 && o0->type == X86_OP_REG && o0->reg == X86_REG_RSP) {
			if (x->op_count == 2 && x->operands[1].type == X86_OP_IMM)
				*delta += in->id == X86_INS_SUB ? x->operands[1].imm
								: -x->operands[1].imm;
			else
				*delta = -1;
		}
		return 0;
	case X86_INS_MOV:
		if (o0 && o0->type == X86_OP_REG && o0->reg == X86_REG_RBP && x->op_count == 2 &&
		    x->operands[1].type == X86_OP_REG && x->operands[1].reg == X86_REG_RSP &&
		    *rbp_at < 0)
			*rbp_at = *delta;
		break;
	case X86_INS_RET:
	case X86_INS_JMP:
		/* What follows is reached by a jump, with a stack depth this
		 * linear walk does not know. */
		*delta = -1;
		return 0;
	default:
		break;
	}
	if (o0 && o0->type == X86_OP_REG && o0->reg == X86_REG_RSP && (o0->access & CS_AC_WRITE))
		*delta = -1;
	else if (in->id == X86_INS_LEAVE)
		*delta = -1;
	return 0;
}

/* A trap instruction as a debugger, a uprobe or `perf probe` sets one
 * (int3; int1 and int 3 trap the same way). */
static int is_breakpoint(const cs_insn *in)
{
	return in->id == X86_INS_INT3 || in->id == X86_INS_INT1 ||
	       (in->id == X86_INS_INT && in->detail->x86.op_count == 1 &&
		in->detail->x86.operands[0].type == X86_OP_IMM &&
		in->detail->x86.operands[0].imm == 3);
}

/* Decodes the function [addr, addr + size) and plans its patch; 0, or the
 * refusal code. */
unsigned ta_patch_analyse(uint64_t addr, uint64_t size, struct plan *pl)
{
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	const uint8_t *code = (const uint8_t *)(uintptr_t)addr;
	const uint8_t *p;
	size_t left;
	uint64_t a;
	cs_insn *in;
	unsigned why = 0;
	int64_t delta = 0, rbp_at = -1;
	int bp_seen = 0;

	pl->start = addr;
	if (size >= 4 && memcmp(code, endbr64, 4) == 0)
		pl->start = addr + 4;
	if (addr + size < pl->start + 5)
		return R_SHORT;
	in = ta_csf.malloc(ta_cs);
	if (!in)
		return R_UNDECODABLE;

	/* The region: whole instructions from start covering 5 bytes. */
	p = (const uint8_t *)(uintptr_t)pl->start;
	left = (size_t)(addr + size - pl->start);
	a = pl->start;
	pl->len = 0;
	while (pl->len < 5) {
		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			why = left < 15 ? R_SHORT : R_UNDECODABLE;
			goto out;
		}
		pl->len += in->size;
		/* Copied into the trampoline, a breakpoint would trap there,
		 * where nobody set it (an int3 over an endbr64 hides the
		 * endbr64: it is looked for from the function's start). */
		if (is_breakpoint(in)) {
			why = R_BREAKPOINT;
			goto out;
		}
		/* At attach, a thread may be inside a call made from these
		 * bytes: it would return into the middle of the jmp. */
		if (ta_patch_attach_mode && ta_cs_in_group(in, X86_GRP_CALL)) {
			why = R_UNMOVABLE;
			goto out;
		}
	}

	/* The body: no jump may land in the region (it would run the stub's
	 * jmp, or half an instruction), and no call inside it but to the
	 * entry (recursion). */
	p = code;
	left = (size_t)size;
	a = addr;
	while (left > 0) {
		uint64_t t;
		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			/* The rest of an instruction a breakpoint's int3 took
			 * the first byte of may decode as nothing: the body
			 * cannot be known, because of the breakpoint. */
			why = bp_seen ? R_BREAKPOINT : R_UNDECODABLE;
			goto out;
		}
		bp_seen |= is_breakpoint(in);
		if (touches_return_address(in, &delta, &rbp_at) && !ta_patch_hooks_nopped) {
			why = R_READS_RET;
			goto out;
		}
		/* ret N (callee pops, as in V8's generated code): the return
		 * stub would find the frame by a slot N bytes off. */
		if (ta_cs_in_group(in, X86_GRP_RET) && in->detail->x86.op_count > 0) {
			why = R_RET_POPS;
			goto out;
		}
		if (!ta_cs_in_group(in, X86_GRP_JUMP) && !ta_cs_in_group(in, X86_GRP_CALL))
			continue;
		t = ta_cs_branch_target(in);
		if (!t)
			continue;
		if (ta_cs_in_group(in, X86_GRP_CALL) ? t > addr && t < pl->start + pl->len
						     : t >= pl->start && t < pl->start + pl->len) {
			why = R_JUMP_TARGET;
			goto out;
		}
	}
out:
	ta_csf.free(in, 1);
	return why;
}

/* Where the 32-bit displacement of a RIP-relative operand sits in the
 * instruction, or -1.  Capstone 4 gets encoding.disp_size wrong for some
 * SSE forms (2 for movdqa x(%rip), %xmm0): then the displacement's bytes
 * are looked for, and taken only if they occur once. */
static int disp_offset(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;
	int32_t d = 0;
	int at = -1, found = 0;

	if (x->encoding.disp_offset != 0 && x->encoding.disp_size == 4)
		return x->encoding.disp_offset;
	for (int i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && x->operands[i].mem.base == X86_REG_RIP) {
			if (!fits32(x->operands[i].mem.disp))
				return -1;
			d = (int32_t)x->operands[i].mem.disp;
			found = 1;
		}
	if (!found)
		return -1;
	for (int i = 1; i + 4 <= in->size; i++)
		if (memcmp(in->bytes + i, &d, 4) == 0) {
			if (at >= 0)
				return -1;
			at = i;
		}
	return at;
}

/* Writes the relocated region for a trampoline at `at` into pl->code;
 * 0 or a refusal. */
unsigned ta_patch_relocate(struct plan *pl, uint64_t at)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)pl->start;
	size_t left = pl->len;
	uint64_t a = pl->start;
	uint8_t *out = pl->code;
	cs_insn *in = ta_csf.malloc(ta_cs);
	unsigned why = 0;

	if (!in)
		return R_UNDECODABLE;
	while (left > 0) {
		const cs_x86 *x;
		uint64_t here = at + (uint64_t)(out - pl->code);
		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			why = R_UNDECODABLE;
			break;
		}
		/* At most 19 bytes in at most 5 instructions, each growing by 4 at
		 * most: far within the buffer; checked all the same. */
		if ((size_t)(out - pl->code) + in->size + 8 + 5 > sizeof(pl->code)) {
			why = R_UNMOVABLE;
			break;
		}
		x = &in->detail->x86;
		if (ta_cs_in_group(in, X86_GRP_BRANCH_RELATIVE)) {
			uint64_t t = ta_cs_branch_target(in);
			uint8_t op = x->opcode[0];
			int64_t rel;
			if (op == 0xe8 || op == 0xe9 || op == 0xeb) {
				rel = (int64_t)(t - (here + 5));
				*out++ = op == 0xe8 ? 0xe8 : 0xe9;
			} else if ((op >= 0x70 && op <= 0x7f) ||
				   (op == 0x0f && x->opcode[1] >= 0x80 && x->opcode[1] <= 0x8f)) {
				uint8_t cc = op == 0x0f ? x->opcode[1] & 0xf : op & 0xf;
				rel = (int64_t)(t - (here + 6));
				*out++ = 0x0f;
				*out++ = (uint8_t)(0x80 | cc);
			} else {
				why = R_UNMOVABLE; /* loop, jrcxz, xbegin */
				break;
			}
			if (!fits32(rel)) {
				why = R_NO_MEMORY;
				break;
			}
			put32(out, (int32_t)rel);
			out += 4;
			continue;
		}
		memcpy(out, in->bytes, in->size);
		for (int i = 0; i < x->op_count; i++) {
			const cs_x86_op *o = &x->operands[i];
			int64_t disp;
			int doff;
			if (o->type != X86_OP_MEM || o->mem.base != X86_REG_RIP)
				continue;
			doff = disp_offset(in);
			if (doff < 0) {
				why = R_UNMOVABLE;
				goto out;
			}
			disp = (int64_t)(in->address + in->size + (uint64_t)o->mem.disp -
					 (here + in->size));
			if (!fits32(disp)) {
				why = R_NO_MEMORY;
				goto out;
			}
			put32(out + doff, (int32_t)disp);
		}
		out += in->size;
	}
out:
	ta_csf.free(in, 1);
	if (!why) {
		/* jmp back to the rest of the function. */
		uint64_t here = at + (uint64_t)(out - pl->code);
		int64_t rel = (int64_t)(pl->start + pl->len - (here + 5));
		if (!fits32(rel))
			return R_NO_MEMORY;
		*out++ = 0xe9;
		put32(out, (int32_t)rel);
		out += 4;
		pl->code_len = (unsigned)(out - pl->code);
	}
	return why;
}

/* ---- relocating a whole function ---------------------------------------------------- */

/*
 * A function relocated whole runs from its copy in the pool, entered
 * through its slot's entry stub (the original entry jumps there): each
 * `ret` becomes a jmp to the slot's exit stub, which records the exit and
 * returns, and each jump out of the function (a tail call) becomes a call
 * of the exit stub followed by the jump.  The caller's return address is
 * never replaced: call and ret stay paired for the processor's return
 * predictor, and nothing is kept per thread.  Only what can be moved
 * safely is: every branch inside the function lands on an instruction of
 * the copy, every jump out goes to the start of a known function (or the
 * PLT), nothing takes the address of its own code, and no exception can
 * unwind through the copy (which has no unwind information).  The rest
 * falls back to the return stub.
 *
 * A function's slot, relocated whole:
 *   0  desc: the function's entry address
 *   8  the address of ta_patch_rel_on_enter
 *  16  the address of ta_patch_rel_on_exit
 *  24  the entry stub: push %rdi; movabs $entry, %rdi; call *-32(%rip); pop %rdi
 *  42  the copy of the body (from the entry, after an endbr64), then the
 *      conditional tail calls' trailers (call exit; jmp target), then the
 *      exit stub: push %rdi; movabs $entry, %rdi; call *(slot+16); pop %rdi; ret
 * The functions called keep every other register themselves (patch_hot.c).
 */

static int want_any(void *arg, const char *modbase, int is_exe, const char *name)
{
	(void)arg;
	(void)modbase;
	(void)is_exe;
	(void)name;
	return 1;
}

/* The module's sections (from its file, mapped at map) and functions. */
void ta_patch_module_facts(const struct ta_module *m, const void *map, size_t maplen,
			   struct modfacts *f)
{
	const ElfW(Ehdr) *eh = map;
	const ElfW(Shdr) * sh, *ss;
	struct ta_fn_cand *c;
	void *map2;
	size_t len2 = 0, n;

	memset(f, 0, sizeof(*f));
	/* Without readable section headers, assume the worst. */
	f->cxx_eh = 1;
	if (!map || maplen < sizeof(*eh) || !eh->e_shoff || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shstrndx >= eh->e_shnum ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > maplen)
		return;
	sh = (const ElfW(Shdr) *)((const char *)map + eh->e_shoff);
	ss = &sh[eh->e_shstrndx];
	if (ss->sh_offset + ss->sh_size > maplen)
		return;
	f->cxx_eh = 0;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const char *str = (const char *)map + ss->sh_offset, *nm;

		if (sh[i].sh_name >= ss->sh_size ||
		    !memchr(str + sh[i].sh_name, 0, ss->sh_size - sh[i].sh_name))
			continue;
		nm = str + sh[i].sh_name;
		/* C++ code with landing pads, which a throw must unwind
		 * through: the module's other functions may be unwound
		 * through too (a throw from a callee), so none is moved. */
		if (strcmp(nm, ".gcc_except_table") == 0)
			f->cxx_eh = 1;
		else if ((strcmp(nm, ".plt") == 0 || strcmp(nm, ".plt.sec") == 0 ||
			  strcmp(nm, ".plt.got") == 0) &&
			 f->nplt < 4) {
			f->plt[f->nplt][0] = m->bias + sh[i].sh_addr;
			f->plt[f->nplt++][1] = m->bias + sh[i].sh_addr + sh[i].sh_size;
		}
	}
	c = ta_module_functions(m, want_any, NULL, &n, &map2, &len2);
	if (c && n && (f->fns = malloc(n * sizeof(*f->fns)))) {
		for (size_t i = 0; i < n; i++) {
			f->fns[i].addr = c[i].addr;
			f->fns[i].cold = ta_patch_is_cold_part(c[i].name);
		}
		f->nfns = n;
	}
	free(c);
	if (map2)
		munmap(map2, len2);
}

/* 0 if a jump to t, outside the function, is a tail call (t starts a
 * function, or is in the PLT), else the fallback. */
static unsigned jump_out_ok(const struct modfacts *f, uint64_t t)
{
	size_t lo = 0, hi = f->nfns;

	for (int i = 0; i < f->nplt; i++)
		if (t >= f->plt[i][0] && t < f->plt[i][1])
			return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->fns[mid].addr < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == f->nfns || f->fns[lo].addr != t)
		return F_OUTSIDE;
	return f->fns[lo].cold ? F_COLD : 0;
}

enum { K_COPY, K_RET, K_JMP, K_JCC, K_CALL };

struct rins {
	uint64_t addr, target; /* target: of K_JMP, K_JCC, K_CALL */
	uint32_t off;	       /* in the copy */
	uint8_t size, kind, cc;
	uint8_t out; /* K_JMP, K_JCC: a tail call; K_CALL: a call of the function itself */
	int8_t doff; /* where a RIP-relative displacement is, or -1 */
};

/* The instruction at a, or NULL. */
static const struct rins *ins_at(const struct whole *w, uint64_t a)
{
	size_t lo = 0, hi = w->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->ins[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->n && w->ins[lo].addr == a ? &w->ins[lo] : NULL;
}

/* Decodes the function [addr, addr + size) from pl->start and plans its
 * copy; 0, or why it cannot be relocated whole (w->ins to free either
 * way). */
unsigned ta_patch_plan_whole(uint64_t addr, uint64_t size, const struct plan *pl,
			     const struct modfacts *f, struct whole *w)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)pl->start;
	size_t left = (size_t)(addr + size - pl->start), cap = 0;
	uint64_t a = pl->start;
	uint32_t off = 0;
	unsigned why = 0;
	cs_insn *in;

	memset(w, 0, sizeof(*w));
	if (f->cxx_eh)
		return F_EXCEPTIONS;
	in = ta_csf.malloc(ta_cs);
	if (!in)
		return F_NO_ROOM;
	while (left > 0 && !why) {
		const cs_x86 *x;
		struct rins *r = ta_vec_reserve(w->ins, w->n + 1, &cap, sizeof(*r), 64);

		if (!r) {
			why = F_NO_ROOM;
			break;
		}
		w->ins = r;
		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			why = F_UNMOVABLE; /* ta_patch_analyse decoded it: cannot happen */
			break;
		}
		x = &in->detail->x86;
		r = &w->ins[w->n++];
		memset(r, 0, sizeof(*r));
		r->addr = in->address;
		r->size = in->size;
		r->doff = -1;
		r->off = off;
		if (ta_cs_in_group(in, X86_GRP_RET)) {
			r->kind = K_RET;
			off += 5;
		} else if (ta_cs_in_group(in, X86_GRP_BRANCH_RELATIVE)) {
			uint8_t op = x->opcode[0];
			uint64_t t = ta_cs_branch_target(in);
			int inside = t >= addr && t < addr + size;

			r->target = t;
			if (op == 0xe8) {
				r->kind = K_CALL;
				/* Recursion: straight to the entry stub. */
				r->out = t == addr || t == pl->start;
				/* A call to a label of its own pushes the
				 * copy's address (to compute others from). */
				if (inside && !r->out)
					why = F_OWN_CODE;
				off += 5;
				continue;
			}
			if (op == 0xe9 || op == 0xeb)
				r->kind = K_JMP;
			else if ((op >= 0x70 && op <= 0x7f) ||
				 (op == 0x0f && x->opcode[1] >= 0x80 && x->opcode[1] <= 0x8f)) {
				r->kind = K_JCC;
				r->cc = op == 0x0f ? x->opcode[1] & 0xf : op & 0xf;
			} else {
				why = F_UNMOVABLE; /* loop, jrcxz, xbegin */
				break;
			}
			if (!inside) {
				r->out = 1;
				if ((why = jump_out_ok(f, t)))
					break;
				if (r->kind == K_JCC)
					w->ntrail++;
			}
			off += r->kind == K_JCC ? 6 : r->out ? 10 : 5;
		} else if (ta_cs_in_group(in, X86_GRP_JUMP)) {
			why = F_INDIRECT;
		} else if (is_breakpoint(in)) {
			/* In a copy it would trap where nobody set it: the body
			 * stays in place.  Also an int3 after a ret (padding,
			 * -mharden-sls): it may be a breakpoint on a jump's
			 * target. */
			why = F_BREAKPOINT;
		} else if (in->id == X86_INS_XBEGIN) {
			why = F_UNMOVABLE; /* its abort address is relative */
		} else {
			for (int i = 0; i < x->op_count; i++) {
				const cs_x86_op *o = &x->operands[i];
				uint64_t t;
				if (o->type != X86_OP_MEM || o->mem.base != X86_REG_RIP)
					continue;
				t = in->address + in->size + (uint64_t)o->mem.disp;
				/* Its own entry's address is the function's (calls
				 * through it are patched); any other place in it
				 * would be the original's, not the copy's. */
				if (t > addr && t < addr + size)
					why = F_OWN_CODE;
				else if ((r->doff = (int8_t)disp_offset(in)) < 0)
					why = F_UNMOVABLE;
			}
			off += in->size;
		}
	}
	ta_csf.free(in, 1);
	/* A body that does not end in a ret or a jmp (a call of a noreturn
	 * function, or asm falling into the next function) is followed in
	 * the copy by a tail call to where it would fall. */
	if (!why && w->n > 0 && w->ins[w->n - 1].kind != K_RET && w->ins[w->n - 1].kind != K_JMP) {
		w->fall = 1;
		off += 10;
	}
	/* Every branch inside lands on an instruction of the copy (not on
	 * the endbr64 left behind, nor in the middle of one). */
	for (size_t i = 0; i < w->n && !why; i++) {
		const struct rins *r = &w->ins[i];
		if ((r->kind == K_JMP || r->kind == K_JCC) && !r->out && !ins_at(w, r->target))
			why = F_MIDDLE;
	}
	w->body_len = off;
	w->len = off + w->ntrail * TRAIL_LEN + EXIT_LEN;
	return why;
}

/* The copies of the functions relocated whole, for ta_patch_orig_pc:
 * each instruction's offset in the copy and in the original.  Pushed at
 * the head under patch_lock, never freed (the copies stay too). */
struct relmap {
	struct relmap *next;
	uint64_t copy, orig, region_end; /* region_end: past the bytes the jmp replaced */
	uint32_t n;
	uint32_t pair[][2]; /* copy offset, original offset; the last: the body's end */
};
static struct relmap *relmaps;

void ta_patch_keep_relmap(const struct whole *w, const struct plan *pl, const uint8_t *slot)
{
	struct relmap *r = malloc(sizeof(*r) + (w->n + 1) * sizeof(r->pair[0]));

	if (!r)
		return;
	r->copy = (uint64_t)(uintptr_t)slot + REL_BODY_AT;
	r->orig = pl->start;
	r->region_end = pl->start + pl->len;
	r->n = (uint32_t)w->n + 1;
	for (size_t i = 0; i < w->n; i++) {
		r->pair[i][0] = w->ins[i].off;
		r->pair[i][1] = (uint32_t)(w->ins[i].addr - pl->start);
	}
	r->pair[w->n][0] = w->body_len;
	r->pair[w->n][1] = (uint32_t)(w->ins[w->n - 1].addr + w->ins[w->n - 1].size - pl->start);
	r->next = relmaps;
	/* Release: pairs with the acquire in ta_patch_orig_pc (a crash in
	 * another thread sees the entry whole). */
	__atomic_store_n(&relmaps, r, __ATOMIC_RELEASE);
}

uint64_t ta_patch_orig_pc(uint64_t pc, int first)
{
	/* Acquire: pairs with the release in ta_patch_keep_relmap. */
	for (const struct relmap *r = __atomic_load_n(&relmaps, __ATOMIC_ACQUIRE); r; r = r->next) {
		uint32_t lo = 0, hi, off;
		uint64_t o;

		if (pc < r->copy || pc > r->copy + r->pair[r->n - 1][0])
			continue;
		off = (uint32_t)(pc - r->copy);
		hi = r->n;
		/* The last pair at or before off. */
		while (hi - lo > 1) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (r->pair[mid][0] <= off)
				lo = mid;
			else
				hi = mid;
		}
		/* Inside a rewritten sequence (a tail call's exit): within
		 * the original instruction, whose unwind rule applies. */
		o = r->orig + r->pair[lo][1] + (off != r->pair[lo][0]);
		if (!first && o > r->orig && o < r->region_end)
			return 0;
		return o;
	}
	return 0;
}

/* Writes the slot of a function planned whole at `slot` (its bytes as the
 * pool will hold them, the pool being writable); 0, or F_NO_ROOM when a
 * displacement does not fit. */
unsigned ta_patch_emit_whole(const struct whole *w, uint64_t fn, uint8_t *slot)
{
	uint64_t self = (uint64_t)(uintptr_t)slot;
	uint64_t body = self + REL_BODY_AT, xit = body + w->body_len + w->ntrail * TRAIL_LEN;
	uint64_t ptrs[2] = {(uint64_t)(uintptr_t)ta_patch_rel_on_enter,
			    (uint64_t)(uintptr_t)ta_patch_rel_on_exit};
	uint8_t *out = slot + REL_BODY_AT, *trail = out + w->body_len, *x;
	int64_t rel;

#define REL32(at, to, end)                                                                         \
	do {                                                                                       \
		rel = (int64_t)((to) - (end));                                                     \
		if (!fits32(rel))                                                                  \
			return F_NO_ROOM;                                                          \
		put32((at), (int32_t)rel);                                                         \
	} while (0)
	memcpy(slot, &fn, 8);
	memcpy(slot + 8, ptrs, 16);
	/* The entry stub; the body follows. */
	slot[24] = 0x57; /* push %rdi */
	slot[25] = 0x48; /* movabs $fn, %rdi */
	slot[26] = 0xbf;
	memcpy(slot + 27, &fn, 8);
	slot[35] = 0xff; /* call *-32(%rip): the pointer at 8 */
	slot[36] = 0x15;
	put32(slot + 37, 8 - 41);
	slot[41] = 0x5f; /* pop %rdi */
	for (size_t i = 0; i < w->n; i++) {
		const struct rins *r = &w->ins[i];
		uint8_t *o = out + r->off;
		uint64_t here = body + r->off;

		switch (r->kind) {
		case K_COPY:
			memcpy(o, (const void *)(uintptr_t)r->addr, r->size);
			if (r->doff >= 0) {
				int32_t d;
				memcpy(&d, o + r->doff, 4);
				REL32(o + r->doff, r->addr + r->size + (uint64_t)(int64_t)d,
				      here + r->size);
			}
			break;
		case K_RET:
			o[0] = 0xe9;
			REL32(o + 1, xit, here + 5);
			break;
		case K_CALL:
			o[0] = 0xe8;
			REL32(o + 1, r->out ? self + REL_STUB_AT : r->target, here + 5);
			break;
		case K_JMP:
			if (!r->out) {
				o[0] = 0xe9;
				REL32(o + 1, body + ins_at(w, r->target)->off, here + 5);
				break;
			}
			/* A tail call: its exit, then the jump. */
			o[0] = 0xe8;
			REL32(o + 1, xit, here + 5);
			o[5] = 0xe9;
			REL32(o + 6, r->target, here + 10);
			break;
		case K_JCC:
			o[0] = 0x0f;
			o[1] = (uint8_t)(0x80 | r->cc);
			if (!r->out) {
				REL32(o + 2, body + ins_at(w, r->target)->off, here + 6);
				break;
			}
			{
				uint64_t t = self + (uint64_t)(trail - slot);
				REL32(o + 2, t, here + 6);
				trail[0] = 0xe8;
				REL32(trail + 1, xit, t + 5);
				trail[5] = 0xe9;
				REL32(trail + 6, r->target, t + 10);
				trail += TRAIL_LEN;
			}
			break;
		}
	}
	if (w->fall) {
		const struct rins *r = &w->ins[w->n - 1];
		uint8_t *o = out + w->body_len - 10;
		uint64_t here = body + w->body_len - 10;
		o[0] = 0xe8;
		REL32(o + 1, xit, here + 5);
		o[5] = 0xe9;
		REL32(o + 6, r->addr + r->size, here + 10);
	}
	x = slot + (xit - self);
	x[0] = 0x57; /* push %rdi */
	x[1] = 0x48; /* movabs $fn, %rdi */
	x[2] = 0xbf;
	memcpy(x + 3, &fn, 8);
	x[11] = 0xff; /* call *(slot + 16)(%rip) */
	x[12] = 0x15;
	REL32(x + 13, self + 16, xit + 17);
	x[17] = 0x5f; /* pop %rdi */
	x[18] = 0xc3; /* ret */
#undef REL32
	return 0;
}

#endif
