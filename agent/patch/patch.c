/* SPDX-License-Identifier: MIT */
/*
 * patch.c - tracing code that was never compiled with -finstrument-functions
 * (x86-64): TRACEAGENT_PATCH names functions by glob, and their entries are
 * patched when the agent's library is initialised (before main, while only
 * one thread runs) and when a library is dlopen'ed.
 *
 * For each function: capstone decodes the whole body (to find jumps into
 * its first bytes) and the first instructions that cover a 5-byte jmp,
 * whose place the entry's jmp takes (after an endbr64, which stays).
 * Where it is safe the whole body is then copied into the pool and the jmp
 * goes to its entry stub ("relocating a whole function" below: rets and
 * tail calls rewritten to record the exit, the return address untouched);
 * else the first instructions are copied into a trampoline, their
 * RIP-relative operands and relative branches rewritten for the new place,
 * followed by a jmp back, and the jmp goes to the function's stub, which
 * calls ta_patch_enter_common (patch_stub.S) and falls into the
 * trampoline; exits then go through the return stub and the per-thread
 * return stack of patch_hot.c.  Stubs, copies and trampolines live in
 * memory mapped within 2 GiB of the module, so rel32 jumps reach them both
 * ways.
 *
 * Refusals rather than corruption: too short, a jump into the bytes the jmp
 * replaces, an instruction that cannot be moved, a body capstone cannot
 * decode, ret N, a function reading its own return address, a .cold part,
 * the entry point, the agent's own dependencies, no memory near the module,
 * a breakpoint in the bytes the jmp replaces.  Each is listed in the
 * dump's PATCH chunk (traceagent info) and counted on stderr; a breakpoint
 * is also named there, as it may be set by someone debugging the process.
 *
 * Breakpoints (an int3 written over an instruction's first byte by a
 * debugger, a uprobe or `perf probe`): copied into a trampoline or a
 * relocated body, one would trap where nobody set it, and the process
 * would die of SIGTRAP.  One in the bytes the jmp replaces refuses the
 * function; one further in keeps the body in place (the return stub's
 * way), so that it traps where it was set.
 *
 * Safe points: at start nothing else runs yet; after a dlopen, the new
 * module's functions are patched before dlopen returns (see the README for
 * what remains).
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

/* ---- patterns --------------------------------------------------------------- */

static struct ta_patterns patterns;

/* Whether function `name` of the module is asked for: an inclusion
 * matches it and no exclusion does. */
static int wanted(void *arg, const char *modbase, int is_exe, const char *name)
{
	int in, out;

	(void)arg;
	ta_patterns_match(&patterns, modbase, is_exe, name, &in, &out);
	return in && !out;
}

/* The agent's own dependencies: patching them would have the agent trace
 * (and re-enter) itself, and the loader runs before anything is safe. */
static const char *const untouchable[] = {
    "libc.so*",	 "ld-linux*",	   "libtraceagent*", "liblz4.so*",   "libunwind*",  "liblzma.so*",
    "libgcc_s*", "libpthread.so*", "libdl.so*",	     "libcapstone*", "linux-vdso*",
};

static int is_untouchable(const char *modbase)
{
	for (size_t i = 0; i < sizeof(untouchable) / sizeof(untouchable[0]); i++)
		if (fnmatch(untouchable[i], modbase, 0) == 0)
			return 1;
	return 0;
}

/* ---- results ---------------------------------------------------------------- */

#define REFUSALS(X)                                                                                \
	X(SHORT, 1, "too short for a 5-byte jump")                                                 \
	X(JUMP_TARGET, 2, "its first bytes are the target of a jump inside it")                    \
	X(UNMOVABLE, 3, "an instruction in its first bytes cannot be moved")                       \
	X(UNDECODABLE, 4, "capstone cannot decode its body")                                       \
	X(NOT_CODE, 5, "not in an executable segment")                                             \
	X(NO_MEMORY, 6, "no memory for a trampoline within 2 GiB")                                 \
	X(AGENT_DEP, 7, "the module is one the agent itself uses")                                 \
	X(ENTRY_POINT, 8, "the program's entry point, which is jumped to, not called")             \
	X(RET_POPS, 9, "it returns with ret N, popping its caller's arguments")                    \
	X(READS_RET, 10, "it reads or moves its own return address")                               \
	X(COLD_PART, 11, "a part of another function (.cold), entered by a jump")                  \
	X(BREAKPOINT, 12, "a breakpoint (int3) in its first bytes: a debugger, uprobe or perf probe")

enum refusal {
#define TA_X(name, code, text) R_##name = code,
	REFUSALS(TA_X)
#undef TA_X
};

static const char *refusal_text(unsigned code)
{
	switch (code) {
#define TA_X(name, code, text)                                                                     \
	case code:                                                                                 \
		return text;
		REFUSALS(TA_X)
#undef TA_X
	}
	return "unknown";
}

/* Why a function patched was not relocated whole but given the return
 * stub (patch_hot.c): counted by reason for the PATCH chunk. */
#define FALLBACKS(X)                                                                               \
	X(INDIRECT, 1, "an indirect jump (a jump table, an indirect tail call)")                   \
	X(COLD, 2, "a jump to a .cold part")                                                       \
	X(OUTSIDE, 3, "a jump out of it to an address not known as a function's start")            \
	X(MIDDLE, 4, "a jump into its entry or into the middle of an instruction")                 \
	X(UNMOVABLE, 5, "a loop, jrcxz or xbegin, or an operand that cannot be moved")             \
	X(OWN_CODE, 6, "it uses an address inside its own code")                                   \
	X(EXCEPTIONS, 7, "C++ code that exceptions may unwind through (.gcc_except_table)")        \
	X(NO_ROOM, 8, "no room for its copy within 2 GiB")                                         \
	X(BREAKPOINT, 9, "a breakpoint (int3) inside it, which must stay where it was set")

enum fallback {
#define TA_X(name, code, text) F_##name = code,
	FALLBACKS(TA_X)
#undef TA_X
};
enum { F_N = F_BREAKPOINT + 1 };

static const char *fallback_text(unsigned code)
{
	switch (code) {
#define TA_X(name, code, text)                                                                     \
	case code:                                                                                 \
		return text;
		FALLBACKS(TA_X)
#undef TA_X
	}
	return "unknown";
}

struct refused {
	char *module;
	char *name;
	uint64_t addr;
	unsigned reason;
};

static struct refused *refused;
static size_t nrefused, refused_cap;
static uint64_t npatched;
/* Of npatched, those relocated whole; the others' reasons, by code. */
static uint64_t nrelocated, nfallback[F_N];
static int patch_on; /* patterns were given and parsed */
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

static void refuse(const char *module, const char *name, uint64_t addr, unsigned reason)
{
	struct refused *r = ta_grow(refused, nrefused, &refused_cap, sizeof(*r), 64);

	if (!r)
		return;
	refused = r;
	refused[nrefused].module = strdup(module);
	refused[nrefused].name = strdup(name);
	refused[nrefused].addr = addr;
	refused[nrefused].reason = reason;
	if (refused[nrefused].module && refused[nrefused].name)
		nrefused++;
}

/* ---- memory near a module ------------------------------------------------------ */

#define POOL_SIZE (256u << 10)
#define NEAR	  (1ll << 31)

struct pool {
	uint8_t *base;
	size_t used;
};

static int near_enough(uint64_t a, uint64_t b)
{
	int64_t d = (int64_t)(a - b);
	return d > -NEAR + (1 << 20) && d < NEAR - (1 << 20);
}

/* Maps POOL_SIZE bytes within reach of [lo, hi); NULL if none is free. */
static uint8_t *map_near(uint64_t lo, uint64_t hi)
{
	const uint64_t step = 1u << 20;

	for (int dir = 0; dir < 2; dir++) {
		for (uint64_t k = 1; k < 1024; k++) {
			uint64_t hint = dir == 0 ? ((hi + step - 1) & ~(step - 1)) + k * step
						 : (lo & ~(step - 1)) - k * step - POOL_SIZE;
			void *p;
			if (dir == 1 && hint > lo)
				break;
			if (!near_enough(hint, lo) || !near_enough(hint + POOL_SIZE, hi))
				break;
			p = mmap((void *)(uintptr_t)hint, POOL_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if ((uint64_t)(uintptr_t)p != hint) {
				/* An old kernel took the flag as a hint. */
				munmap(p, POOL_SIZE);
				continue;
			}
			return p;
		}
	}
	return NULL;
}

/* ---- analysis and relocation ---------------------------------------------------------- */

/*
 * A function's slot in the pool:
 *   0  desc: the function's entry address
 *   8  the address of ta_patch_enter_common
 *  16  the stub, where the entry jumps:
 *        push %r11; movabs $slot, %r11; call *-26(%rip); pop %r11
 *  36  the trampoline: the relocated first instructions, jmp back
 */
#define STUB_AT	  16
#define TRAMP_AT  36
#define SLOT_SIZE 128

struct plan {
	uint64_t start;	  /* where the jmp goes: the entry, or after endbr64 */
	unsigned len;	  /* bytes the copied instructions cover (>= 5) */
	uint8_t code[96]; /* the relocated copy, for a trampoline at `at` */
	unsigned code_len;
};

/* Patching at `traceagent attach` (ta_patch_attach_*): the threads run
 * while the patches are planned, so the entries are not written then but
 * kept (pending), written by ta_patch_attach_commit while the loader has
 * every thread stopped, and put back by ta_patch_attach_restore. */
static int attach_mode;

static int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

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
		in->detail->x86.operands[0].type == X86_OP_IMM && in->detail->x86.operands[0].imm == 3);
}

/* Decodes the function [addr, addr + size) and plans its patch; 0, or the
 * refusal code. */
static unsigned analyse(uint64_t addr, uint64_t size, struct plan *pl)
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
		if (attach_mode && ta_cs_in_group(in, X86_GRP_CALL)) {
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
		if (touches_return_address(in, &delta, &rbp_at)) {
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
static unsigned relocate(struct plan *pl, uint64_t at)
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
#define REL_STUB_AT 24
#define REL_BODY_AT 42
#define EXIT_LEN    19
#define TRAIL_LEN   10

/* What patching a module needs to know about it for whole relocation. */
struct fnrange {
	uint64_t addr;
	int cold;
};
struct modfacts {
	int cxx_eh; /* exceptions may unwind through its code */
	int nplt;
	uint64_t plt[4][2];  /* .plt, .plt.sec, .plt.got: tail calls go there too */
	struct fnrange *fns; /* every function's start, sorted */
	size_t nfns;
};

static int want_any(void *arg, const char *modbase, int is_exe, const char *name)
{
	(void)arg;
	(void)modbase;
	(void)is_exe;
	(void)name;
	return 1;
}

static int is_cold_part(const char *name);

/* The module's sections (from its file, mapped at map) and functions. */
static void module_facts(const struct ta_module *m, const void *map, size_t maplen,
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
			f->fns[i].cold = is_cold_part(c[i].name);
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

struct whole {
	struct rins *ins;
	size_t n;
	uint32_t body_len, ntrail, len; /* len: body, trailers, exit stub */
	int fall;			/* the body ends in a tail call to its end */
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
static unsigned plan_whole(uint64_t addr, uint64_t size, const struct plan *pl,
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
		struct rins *r = ta_grow(w->ins, w->n, &cap, sizeof(*r), 64);

		if (!r) {
			why = F_NO_ROOM;
			break;
		}
		w->ins = r;
		if (!ta_csf.disasm_iter(ta_cs, &p, &left, &a, in)) {
			why = F_UNMOVABLE; /* analyse decoded it: cannot happen */
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

static void keep_relmap(const struct whole *w, const struct plan *pl, const uint8_t *slot)
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
	/* Acquire: pairs with the release in keep_relmap. */
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
static unsigned emit_whole(const struct whole *w, uint64_t fn, uint8_t *slot)
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

/* ---- one module ------------------------------------------------------------------ */

/* GCC's foo.cold (or foo.cold.N): the unlikely part of foo, split out
 * and jumped to from it; what its entry finds on the stack is foo's, not
 * a return address. */
static int is_cold_part(const char *name)
{
	const char *c = strstr(name, ".cold");

	return c && (c[5] == 0 || c[5] == '.');
}

static int seg_of(const struct ta_module *m, uint64_t a, uint64_t len)
{
	for (int i = 0; i < m->nseg; i++)
		if (a >= m->seg[i].start && a + len <= m->seg[i].end)
			return i;
	return -1;
}

/* Makes the executable segments writable (1) or gives them back their
 * protections (0); 0 or -errno. */
static int segments_writable(const struct ta_module *m, int on)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < m->nseg; i++) {
		uint64_t s = m->seg[i].start & ~(uint64_t)(pg - 1);
		int prot = on ? m->seg[i].prot | PROT_WRITE : m->seg[i].prot;
		if (mprotect((void *)(uintptr_t)s, m->seg[i].end - s, prot) < 0)
			return -errno;
	}
	return 0;
}

struct job {
	struct plan pl;
	uint8_t *slot;	/* stub, desc, trampoline (or copy) in the pool */
	uint64_t entry; /* where the function's entry jumps: its stub */
	unsigned fb;	/* 0: relocated whole; else why not (enum fallback) */
};

/* The count of a function patched by job j. */
static void count_patched(unsigned fb)
{
	npatched++;
	if (fb)
		nfallback[fb]++;
	else
		nrelocated++;
}

/* An entry planned at attach: its bytes as they are and as they will be. */
struct pending {
	size_t mod;	 /* in pend_mods */
	uint64_t start;	 /* the entry (after an endbr64) */
	unsigned len;	 /* bytes replaced: the jmp, then int3s */
	int applied;	 /* 1 written, 2 given up (its bytes changed since the plan) */
	unsigned fb; /* as in struct job */
	uint8_t orig[32], repl[32];
};
static struct pending *pend;
static size_t npend, pend_cap;
static struct ta_module *pend_mods;
static size_t npend_mods, pend_mods_cap;

static void put32(uint8_t *p, int32_t v);

/* The jobs of module m, planned: kept for ta_patch_attach_commit. */
static void keep_pending(const struct ta_module *m, const struct job *jobs, size_t njobs)
{
	struct ta_module *nm = ta_grow(pend_mods, npend_mods, &pend_mods_cap, sizeof(*nm), 8);

	if (!nm)
		return;
	pend_mods = nm;
	pend_mods[npend_mods] = *m;
	for (size_t i = 0; i < njobs; i++) {
		struct pending *np = ta_grow(pend, npend, &pend_cap, sizeof(*np), 64);
		struct pending *e;

		if (!np)
			break;
		pend = np;
		e = &pend[npend];
		if (jobs[i].pl.len > sizeof(e->orig))
			continue;
		e->mod = npend_mods;
		e->start = jobs[i].pl.start;
		e->len = jobs[i].pl.len;
		e->applied = 0;
		e->fb = jobs[i].fb;
		memcpy(e->orig, (const void *)(uintptr_t)e->start, e->len);
		e->repl[0] = 0xe9;
		put32(e->repl + 1, (int32_t)((int64_t)(jobs[i].entry - (e->start + 5))));
		memset(e->repl + 5, 0xcc, e->len - 5);
		npend++;
	}
	npend_mods++;
}

static void patch_module(const struct ta_module *m)
{
	const char *modbase = ta_base_name(m->path);
	void *map;
	size_t maplen = 0, n;
	struct ta_fn_cand *c;
	struct job *jobs;
	size_t njobs = 0;
	struct pool pools[64];
	int npools = 0;
	int err;
	struct modfacts facts = {0};

	if (!ta_patterns_name_module(&patterns, modbase, m->is_exe))
		return;
	c = ta_module_functions(m, wanted, NULL, &n, &map, &maplen);
	if (!c || n == 0) {
		free(c);
		if (map)
			munmap(map, maplen);
		return;
	}
	if (!m->is_exe && is_untouchable(modbase)) {
		for (size_t i = 0; i < n; i++)
			refuse(m->path, c[i].name, c[i].addr, R_AGENT_DEP);
		goto done;
	}
	jobs = calloc(n, sizeof(*jobs));
	if (!jobs)
		goto done;
	module_facts(m, map, maplen, &facts);
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[njobs];
		struct whole w;
		unsigned why;
		size_t need = SLOT_SIZE;
		if (seg_of(m, c[i].addr, c[i].size) < 0) {
			refuse(m->path, c[i].name, c[i].addr, R_NOT_CODE);
			continue;
		}
		if (c[i].entry) {
			refuse(m->path, c[i].name, c[i].addr, R_ENTRY_POINT);
			continue;
		}
		if (is_cold_part(c[i].name)) {
			refuse(m->path, c[i].name, c[i].addr, R_COLD_PART);
			continue;
		}
		why = analyse(c[i].addr, c[i].size, &j->pl);
		memset(&w, 0, sizeof(w));
		if (!why) {
			struct pool *pool = npools ? &pools[npools - 1] : NULL;
			j->fb = plan_whole(c[i].addr, c[i].size, &j->pl, &facts, &w);
			if (!j->fb) {
				/* 16-byte aligned, and room for the return stub's
				 * slot should the copy fail. */
				need = (REL_BODY_AT + w.len + 15) & ~(size_t)15;
				if (need > POOL_SIZE) {
					j->fb = F_NO_ROOM;
					need = SLOT_SIZE;
				} else if (need < SLOT_SIZE)
					need = SLOT_SIZE;
			}
			if ((!pool || pool->used + need > POOL_SIZE) &&
			    npools < (int)(sizeof(pools) / sizeof(pools[0]))) {
				uint8_t *b = map_near(m->lo, m->hi);
				if (b) {
					pools[npools].base = b;
					pools[npools].used = 0;
					pool = &pools[npools++];
				}
			}
			if (!pool || pool->used + need > POOL_SIZE)
				why = R_NO_MEMORY;
			else {
				j->slot = pool->base + pool->used;
				if (!j->fb && (j->fb = emit_whole(&w, c[i].addr, j->slot)) == 0) {
					j->entry = (uint64_t)(uintptr_t)j->slot + REL_STUB_AT;
					keep_relmap(&w, &j->pl, j->slot);
				} else {
					j->entry = (uint64_t)(uintptr_t)j->slot + STUB_AT;
					why = relocate(&j->pl,
						       (uint64_t)(uintptr_t)j->slot + TRAMP_AT);
				}
				if (!why && !fits32((int64_t)(j->entry - (j->pl.start + 5))))
					why = R_NO_MEMORY;
				if (!why)
					pool->used += need;
			}
		}
		free(w.ins);
		if (why) {
			refuse(m->path, c[i].name, c[i].addr, why);
			/* Someone is debugging or probing the process: told
			 * which function is not traced, and why, at once. */
			if (why == R_BREAKPOINT)
				ta_warn("not patching %s (%s, %#llx): %s; it is not traced", c[i].name,
					m->path, (unsigned long long)c[i].addr, refusal_text(why));
			continue;
		}
		/* The return stub's way: the descriptor, the stub and the
		 * trampoline. */
		if (j->fb) {
			uint8_t *s = j->slot;
			uint64_t self = (uint64_t)(uintptr_t)s;
			uint64_t common = (uint64_t)(uintptr_t)ta_patch_enter_common;
			memcpy(s, &c[i].addr, 8);
			memcpy(s + 8, &common, 8);
			s[16] = 0x41; /* push %r11 */
			s[17] = 0x53;
			s[18] = 0x49; /* movabs $slot, %r11 */
			s[19] = 0xbb;
			memcpy(s + 20, &self, 8);
			s[28] = 0xff; /* call *-26(%rip): the pointer at 8 */
			s[29] = 0x15;
			put32(s + 30, 8 - 34);
			s[34] = 0x41; /* pop %r11 */
			s[35] = 0x5b;
			memcpy(s + TRAMP_AT, j->pl.code, j->pl.code_len);
		}
		njobs++;
	}
	for (int i = 0; i < npools; i++)
		if (mprotect(pools[i].base, POOL_SIZE, PROT_READ | PROT_EXEC) < 0) {
			err = -errno;
			goto fail;
		}
	if (njobs == 0)
		goto out;
	if (attach_mode) {
		keep_pending(m, jobs, njobs);
		goto out;
	}
	/* Other threads may run this module's other functions (a dlopen'ed
	 * library's constructor started one): keep the pages executable while
	 * they are written. */
	err = segments_writable(m, 1);
	if (err < 0) {
	fail:
		ta_warn("cannot patch %s: mprotect: %s; its functions are not traced", m->path,
			strerror(-err));
		goto out;
	}
	for (size_t i = 0; i < njobs; i++) {
		uint8_t *e = (uint8_t *)(uintptr_t)jobs[i].pl.start;
		uint8_t jmp[5];
		jmp[0] = 0xe9;
		put32(jmp + 1, (int32_t)((int64_t)(jobs[i].entry - (jobs[i].pl.start + 5))));
		/* The bytes past the jmp are never run: trap if they were. */
		memset(e + 5, 0xcc, jobs[i].pl.len - 5);
		memcpy(e, jmp, 5);
		count_patched(jobs[i].fb);
	}
	segments_writable(m, 0);
out:
	free(jobs);
	free(facts.fns);
done:
	free(c);
	munmap(map, maplen);
}

/* ---- modules ----------------------------------------------------------------------- */

/* The modules already looked at, by load bias and name. */
struct seen {
	uint64_t bias;
	char *name;
};
static struct seen *seen;
static size_t nseen;

static int seen_before(uint64_t bias, const char *name)
{
	struct seen *s;

	for (size_t i = 0; i < nseen; i++)
		if (seen[i].bias == bias && strcmp(seen[i].name, name) == 0)
			return 1;
	s = realloc(seen, (nseen + 1) * sizeof(*s));
	if (!s)
		return 0;
	seen = s;
	seen[nseen].name = strdup(name);
	if (seen[nseen].name)
		seen[nseen++].bias = bias;
	return 0;
}

/* Forgets the modules no longer loaded: one loaded again, even at the
 * same place, is new code to patch. */
static void forget_unloaded(void)
{
	size_t nmods, kept = 0;
	struct ta_module *mods = ta_modules_collect(&nmods);

	/* An attach's planned or written entries in a module gone: its pages
	 * are unmapped or another module's, never to be written or put back. */
	for (size_t k = 0; k < npend_mods; k++) {
		int present = 0;
		for (size_t i = 0; i < nmods && !present; i++)
			present = mods[i].bias == pend_mods[k].bias &&
				  strcmp(mods[i].path, pend_mods[k].path) == 0;
		if (!present)
			pend_mods[k].nseg = -1;
	}
	for (size_t i = 0; i < npend; i++)
		if (pend_mods[pend[i].mod].nseg >= 0)
			pend[kept++] = pend[i];
	npend = kept;
	for (size_t k = 0; k < nseen;) {
		int present = 0;
		for (size_t i = 0; i < nmods && !present; i++)
			present = mods[i].bias == seen[k].bias &&
				  strcmp(mods[i].path, seen[k].name) == 0;
		if (present) {
			k++;
			continue;
		}
		free(seen[k].name);
		seen[k] = seen[--nseen];
	}
	free(mods);
}

void ta_patch_after_dlclose(void)
{
	int saved = errno;

	/* Acquire: pairs with the release in patch_init (the patterns and
	 * the thread key are set up). */
	if (!__atomic_load_n(&patch_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&patch_lock);
	forget_unloaded();
	pthread_mutex_unlock(&patch_lock);
	errno = saved;
}

/* Patches what the patterns name in the modules not looked at before;
 * returns how many functions were patched or refused by this call. */
static uint64_t patch_new_modules(void)
{
	size_t nmods;
	struct ta_module *mods = ta_modules_collect(&nmods);
	uint64_t before = npatched + nrefused;
	Dl_info self;

	if (!dladdr((void *)(uintptr_t)ta_patch_ret_stub, &self))
		self.dli_fbase = NULL;
	for (size_t i = 0; i < nmods; i++) {
		struct ta_module *m = &mods[i];
		if (seen_before(m->bias, m->path))
			continue;
		if ((uint64_t)(uintptr_t)self.dli_fbase == m->bias && !m->is_exe)
			continue; /* the agent */
		patch_module(m);
	}
	free(mods);
	return npatched + nrefused - before;
}

/* ---- the PATCH chunk and the summary ----------------------------------------------------- */

void ta_patch_dump(void)
{
	struct ta_buf b = {0};

	if (!patch_on || (npatched == 0 && nrefused == 0))
		return;
	pthread_mutex_lock(&patch_lock);
	ta_buf_u(&b, npatched);
	ta_buf_u(&b, nrefused);
	/* Relaxed: a count, read for the record (patch_hot.c adds to it). */
	ta_buf_u(&b, __atomic_load_n(&ta_patch_frames_without_exit, __ATOMIC_RELAXED));
	for (size_t i = 0; i < nrefused; i++) {
		const char *text = refusal_text(refused[i].reason);
		ta_buf_str(&b, refused[i].module, strlen(refused[i].module));
		ta_buf_str(&b, refused[i].name, strlen(refused[i].name));
		ta_buf_u(&b, refused[i].addr);
		ta_buf_u(&b, refused[i].reason);
		ta_buf_str(&b, text, strlen(text));
	}
	/* Since 1.8: how many were relocated whole, and why the others
	 * were not. */
	{
		unsigned nr = 0;
		ta_buf_u(&b, nrelocated);
		for (unsigned k = 1; k < F_N; k++)
			nr += nfallback[k] > 0;
		ta_buf_u(&b, nr);
		for (unsigned k = 1; k < F_N; k++) {
			const char *text = fallback_text(k);
			if (!nfallback[k])
				continue;
			ta_buf_u(&b, k);
			ta_buf_u(&b, nfallback[k]);
			ta_buf_str(&b, text, strlen(text));
		}
	}
	pthread_mutex_unlock(&patch_lock);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_PATCH, b.p, b.len);
	ta_buf_free(&b);
}

void ta_patch_report_end(void)
{
	/* Relaxed: a count; the threads that add to it are done or do not
	 * matter any more at the end. */
	uint64_t deep = __atomic_load_n(&ta_patch_frames_without_exit, __ATOMIC_RELAXED);

	if (deep)
		ta_warn("%llu calls of patched functions nested deeper than %d patched frames: "
			"entered, their exits not recorded",
			(unsigned long long)deep, TA_PATCH_RSTACK_DEPTH);
}

static void summary(void)
{
	ta_warn("patched %llu functions, refused %llu%s", (unsigned long long)npatched,
		(unsigned long long)nrefused, nrefused ? " (see traceagent info)" : "");
}

/*
 * Capstone is opened with dlopen when patching is asked for, not linked:
 * its tables take ~6 ms of relocation when the library is loaded, a cost
 * every traced program paid at start-up for a feature few runs use.  The
 * soname is the major version of the headers we were built with (the
 * structures we read, cs_insn and cs_x86, change between majors).
 */
struct ta_capstone ta_csf;
csh ta_cs;
static pthread_mutex_t capstone_lock = PTHREAD_MUTEX_INITIALIZER;

int ta_capstone_open(void)
{
	int ok;
	void *h;

	pthread_mutex_lock(&capstone_lock);
	if (ta_cs) {
		pthread_mutex_unlock(&capstone_lock);
		return 0;
	}
	h = ta_lazy_dlopen(TA_CS_SONAME, RTLD_NOW | RTLD_LOCAL, NULL);
	if (h) {
		ta_csf.open = (cs_err(*)(cs_arch, cs_mode, csh *))dlsym(h, "cs_open");
		ta_csf.option = (cs_err(*)(csh, cs_opt_type, size_t))dlsym(h, "cs_option");
		ta_csf.malloc = (cs_insn * (*)(csh)) dlsym(h, "cs_malloc");
		ta_csf.disasm_iter = (bool (*)(csh, const uint8_t **, size_t *, uint64_t *,
					       cs_insn *))dlsym(h, "cs_disasm_iter");
		ta_csf.free = (void (*)(cs_insn *, size_t))dlsym(h, "cs_free");
		ta_csf.regs_access = (cs_err(*)(csh, const cs_insn *, cs_regs, uint8_t *, cs_regs,
						uint8_t *))dlsym(h, "cs_regs_access");
	}
	ok = h && ta_csf.open && ta_csf.option && ta_csf.malloc && ta_csf.disasm_iter &&
	     ta_csf.free && ta_csf.regs_access &&
	     ta_csf.open(CS_ARCH_X86, CS_MODE_64, &ta_cs) == CS_ERR_OK;
	if (ok)
		ta_csf.option(ta_cs, CS_OPT_DETAIL, CS_OPT_ON);
	else
		ta_cs = 0;
	pthread_mutex_unlock(&capstone_lock);
	return ok ? 0 : -1;
}

uint64_t ta_cs_branch_target(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	for (int i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_IMM)
			return (uint64_t)x->operands[i].imm;
	return 0;
}

int ta_cs_in_group(const cs_insn *in, uint8_t g)
{
	for (int i = 0; i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == g)
			return 1;
	return 0;
}

void ta_patch_after_dlopen(void)
{
	int saved = errno;

	/* Acquire: pairs with the release in patch_init. */
	if (!__atomic_load_n(&patch_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&patch_lock);
	if (patch_new_modules() > 0) {
		pthread_mutex_unlock(&patch_lock);
		summary();
		if (ta_ring_up.ensure_started())
			ta_patch_dump();
	} else
		pthread_mutex_unlock(&patch_lock);
	errno = saved;
}

/* Runs when the agent's library is initialised: after the libraries it and
 * the program need, before the program's own constructors and main, and
 * while the process has one thread. */
__attribute__((constructor)) static void patch_init(void)
{
	const char *spec = secure_getenv("TRACEAGENT_PATCH");
	int saved = errno;

	if (!spec || !*spec || getauxval(AT_SECURE))
		return;
	if (ta_patterns_parse(&patterns, spec, "TRACEAGENT_PATCH") < 0)
		return;
	if (ta_capstone_open() < 0) {
		ta_warn("cannot open " TA_CS_SONAME
			" (capstone, to decode x86-64); TRACEAGENT_PATCH ignored");
		return;
	}
	if (ta_patch_hot_init() != 0) {
		ta_warn("cannot create a thread key; TRACEAGENT_PATCH ignored");
		return;
	}
	/* Release: a thread that sees patching on (after a dlopen) sees the
	 * patterns and the key; pairs with the acquires in the dl wrappers. */
	__atomic_store_n(&patch_on, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&patch_lock);
	patch_new_modules();
	pthread_mutex_unlock(&patch_lock);
	/* A process in which nothing matches (a shell started on the way)
	 * says nothing and writes no dump, as without patching. */
	if (npatched + nrefused > 0) {
		summary();
		if (ta_ring_up.ensure_started())
			ta_patch_dump();
	}
	errno = saved;
}

/* ---- at attach ------------------------------------------------------------------- */

int ta_patch_attach_prepare(const char *spec)
{
	size_t before;

	/* Mid-load (a dlopen in another thread): the module list may hold
	 * one not relocated yet; the loader asks again. */
	if (_r_debug.r_state != RT_CONSISTENT)
		return -EAGAIN;
	pthread_mutex_lock(&patch_lock);
	if (!patterns.n && ta_patterns_parse(&patterns, spec, "TRACEAGENT_PATCH") < 0) {
		pthread_mutex_unlock(&patch_lock);
		return -EINVAL;
	}
	pthread_mutex_unlock(&patch_lock);
	if (ta_capstone_open() < 0) {
		ta_warn("cannot open " TA_CS_SONAME " (capstone, to decode x86-64); --patch ignored");
		return -ENOENT;
	}
	if (!patch_on && ta_patch_hot_init() != 0) {
		ta_warn("cannot create a thread key; --patch ignored");
		return -EAGAIN;
	}
	/* Release: pairs with the acquires in the dl wrappers (unused here:
	 * no interposer runs in an injected agent). */
	__atomic_store_n(&patch_on, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&patch_lock);
	attach_mode = 1;
	if (!npend) {
		/* A window's first plan. */
		npatched = 0;
		nrelocated = 0;
		memset(nfallback, 0, sizeof(nfallback));
		for (size_t i = 0; i < nrefused; i++) {
			free(refused[i].module);
			free(refused[i].name);
		}
		nrefused = 0;
	}
	/* Later in the window: the modules dlopen'ed since the last plan
	 * (and none of those dlclose'd meanwhile). */
	forget_unloaded();
	before = npend;
	patch_new_modules();
	attach_mode = 0;
	before = npend - before;
	pthread_mutex_unlock(&patch_lock);
	return (int)before;
}

/* No lock, no allocation: every other thread is stopped (one may hold
 * any lock).  mprotect and stores only. */
int ta_patch_attach_commit(const uint64_t *pcs, size_t npcs)
{
	int applied = 0, busy = 0;

	for (size_t k = 0; k < npend_mods; k++) {
		int any = 0;

		for (size_t i = 0; i < npend; i++)
			any |= pend[i].mod == k && !pend[i].applied;
		if (!any || segments_writable(&pend_mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < npend; i++) {
			struct pending *e = &pend[i];
			int inside = 0;

			if (e->mod != k || e->applied)
				continue;
			/* A thread stopped inside the bytes replaced (not at
			 * their start) would resume in the middle of the jmp. */
			for (size_t j = 0; j < npcs && !inside; j++)
				inside = pcs[j] > e->start && pcs[j] < e->start + e->len;
			if (inside) {
				busy++;
				continue;
			}
			/* Changed since the plan (a breakpoint set meanwhile):
			 * the trampoline holds the bytes planned, not these.
			 * Left alone for good. */
			if (memcmp((const void *)(uintptr_t)e->start, e->orig, e->len) != 0) {
				e->applied = 2;
				continue;
			}
			memcpy((void *)(uintptr_t)e->start, e->repl, e->len);
			e->applied = 1;
			applied++;
			count_patched(e->fb);
		}
		segments_writable(&pend_mods[k], 0);
	}
	(void)busy;
	return applied;
}

void ta_patch_attach_restore(void)
{
	for (size_t k = 0; k < npend_mods; k++) {
		if (segments_writable(&pend_mods[k], 1) < 0)
			continue;
		for (size_t i = 0; i < npend; i++)
			if (pend[i].mod == k && pend[i].applied == 1)
				memcpy((void *)(uintptr_t)pend[i].start, pend[i].orig, pend[i].len);
		segments_writable(&pend_mods[k], 0);
	}
	/* The stubs and trampolines stay: a thread may be in one, or return
	 * through the return stub. */
	npend = 0;
	npend_mods = 0;
}

/* The modules are patched anew at the next attach (the stubs of this one
 * are not reused). */
void ta_patch_attach_forget(void)
{
	pthread_mutex_lock(&patch_lock);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i].name);
	nseen = 0;
	pthread_mutex_unlock(&patch_lock);
}

#else /* !TA_HAVE_PATCH */

/* Why nothing is patched, in the one line that says so: an x86-64 build
 * configured without capstone, or an architecture without a patcher. */
#if TA_PATCH_ARCH
#define NO_PATCH_WHY                                                                               \
	"this build has no dynamic patching (built without capstone: meson -Dpatching)"
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
