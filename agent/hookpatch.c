/* SPDX-License-Identifier: MIT */
/*
 * hookpatch.c - excluded code costs nothing: the calls an instrumented
 * function makes to __cyg_profile_func_enter/exit are rewritten in place
 * into no-ops of the same length, so that the function runs as if it had
 * been compiled without -finstrument-functions (but for the argument
 * set-up the compiler left around the calls).
 *
 * Finding the calls.  The body is decoded linearly (capstone on x86-64,
 * by hand on aarch64, where the few instructions that matter have fixed
 * encodings).  A call or jump goes to a hook when its target is
 *   - the hook itself (dladdr names it), or
 *   - a PLT entry of the module whose GOT entry is relocated against a
 *     hook (modules.c's ta_module_hook_slots): whatever the entry holds now
 *     (the PLT's resolver, glibc's hook, the agent's), or
 *   - (x86-64 -fno-plt) such a GOT entry, called through.
 * With inlining, a function's body also holds the hook calls of the
 * functions inlined in it, made with their addresses: those are left, so
 * the callees' events stay.  The first argument is followed through the
 * body (lea/mov of a constant, a load from the module's GOT, register
 * copies; a write of any other kind forgets the register, a call forgets
 * the caller-saved ones): a call with the function's address is ours, one
 * with another address is an inlined callee's, one whose argument cannot be
 * known is refused.  Also refused: a conditional jump to a hook, a call or
 * jump through a register that holds a hook, a tail jump to the enter hook,
 * and a jump out of [fn_start, fn_end) to anything but a hook: an
 * instrumented function tail-calls nothing else (its exit hook runs after
 * its callees), so that is a part of it placed elsewhere (GCC's .cold),
 * whose hook calls would be missed.
 *
 * Writing.  Other threads may be running the function.  aarch64: every
 * instruction is one aligned 32-bit word, written with one store (single-
 * copy atomic), then the instruction cache cleaned; `bl` -> `nop` is in
 * the architecture's list of instructions that may be modified while
 * executed; `b` -> `ret` is not, but a 4-byte aligned store cannot be seen
 * torn, and the old and the new instruction both leave the function with
 * its caller's state (the hook returned to the same place).  x86-64: when
 * the instruction lies within one aligned 8-byte word, the word is
 * rewritten with one atomic store; within one aligned 16-byte block, the
 * block with one `lock cmpxchg16b` (every x86-64 but the first ones has
 * it; CPUID says): an instruction fetch, which reads aligned 16-byte
 * blocks at least, sees the old bytes or the new ones, never a mix.
 * Otherwise, in three steps separated by
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE), which makes
 * every thread of the process run a core-serialising instruction before it
 * returns (so no thread still holds bytes fetched before it):
 *   (A) the instruction's first bytes become, with one atomic store as
 *       above, an instruction that alone does what the new one does:
 *       `jmp` over the rest for a call (a no-op), `ret` for a tail jump;
 *   (B) the rest gets its new bytes: no thread can decode them as part of
 *       the old instruction any more (after the barrier, every fetch at the
 *       start sees (A), which never runs them);
 *   (C) the first bytes get their new value: after the second barrier
 *       every thread sees (B)'s bytes with them.
 * Without membarrier's SYNC_CORE (kernels before 4.16, qemu-user), or
 * when the first bytes straddle a 16-byte block, such a call is refused.
 * Putting the old bytes back goes through the same steps.
 *
 * The pages are made writable (and kept executable, for the threads
 * running them) for the writes, then given back their segment's
 * protections.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch.h"
#include "base.h"
#include "hookpatch.h"
#include "modules.h"
#include "ta_config.h"

/* Variable-length code is decoded with capstone (built with patching);
 * fixed 32-bit words by hand. */
#if TA_ARCH_HAS_HOOKPATCH && !TA_ARCH_CODE_FIXED_WORDS && TA_HAVE_PATCH
#include <cpuid.h>

#include "disasm.h"
#define HP_X86 1
#elif TA_ARCH_HAS_HOOKPATCH && TA_ARCH_CODE_FIXED_WORDS
#define HP_A64 1
#endif

#if defined(HP_X86) || defined(HP_A64)

#ifdef __NR_membarrier
#include <linux/membarrier.h>
#endif

/* ---- the module of a function ------------------------------------------------------ */

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
};

static int prot_of(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

static int add_slot(void *arg, uintptr_t *at, int is_exit, int relro)
{
	struct mod *m = arg;

	(void)relro;
	if (m->nslots < MAX_SLOTS) {
		m->slot[m->nslots] = at;
		m->slot_exit[m->nslots++] = is_exit;
	}
	return 0;
}

/* dl_iterate_phdr: the module with an executable segment holding m->want. */
static int find_mod(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct mod *m = arg;
	int hit = -1;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && m->want >= lo &&
		    m->want < lo + ph->p_memsz)
			hit = i;
	}
	if (hit < 0)
		return 0;
	m->bias = info->dlpi_addr;
	m->lo = info->dlpi_addr + info->dlpi_phdr[hit].p_vaddr;
	m->hi = m->lo + info->dlpi_phdr[hit].p_memsz;
	m->prot = prot_of(info->dlpi_phdr[hit].p_flags);
	for (int i = 0; i < info->dlpi_phnum && m->nld < MAX_LOADS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		m->ld_lo[m->nld] = info->dlpi_addr + ph->p_vaddr;
		m->ld_hi[m->nld++] = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
	}
	ta_module_hook_slots(info, add_slot, m);
	m->found = 1;
	return 1;
}

static int mod_of(uintptr_t addr, struct mod *m)
{
	memset(m, 0, sizeof(*m));
	m->want = addr;
	dl_iterate_phdr(find_mod, m);
	return m->found ? 0 : -1;
}

/* Whether the 8 bytes at a are in the module's file-backed segments. */
static int readable(const struct mod *m, uintptr_t a)
{
	for (int i = 0; i < m->nld; i++)
		if (a >= m->ld_lo[i] && a + 8 <= m->ld_hi[i])
			return 1;
	return 0;
}

/* 0 enter, 1 exit, -1 not a GOT entry of a hook. */
static int slot_kind(const struct mod *m, uintptr_t at)
{
	for (int i = 0; i < m->nslots; i++)
		if ((uintptr_t)m->slot[i] == at)
			return m->slot_exit[i];
	return -1;
}

/* The GOT entry a PLT stub at t jumps through, or 0 (per architecture). */
static uintptr_t plt_slot(const struct mod *m, uintptr_t t);

/* 0 enter, 1 exit, -1: t is not a hook nor the module's PLT entry of one. */
static int hook_kind(const struct mod *m, uintptr_t t)
{
	Dl_info di;

	if (t >= m->lo && t + 16 <= m->hi) {
		uintptr_t s = plt_slot(m, t);
		int k = s ? slot_kind(m, s) : -1;

		if (k >= 0)
			return k;
	}
	if (dladdr((void *)t, &di) && di.dli_sname && (uintptr_t)di.dli_saddr == t) {
		if (!strcmp(di.dli_sname, "__cyg_profile_func_enter"))
			return 0;
		if (!strcmp(di.dli_sname, "__cyg_profile_func_exit"))
			return 1;
	}
	return -1;
}

/* ---- the calls found --------------------------------------------------------------- */

enum { K_ENTER, K_EXIT, K_TAIL };

struct site {
	uintptr_t fn; /* the function: its calls are rewritten together */
	uintptr_t at; /* the instruction */
	uintptr_t bias;
	uintptr_t lo, hi; /* its segment, and the segment's protections */
	int prot;
	uint8_t len, kind;
	uint8_t rest_only; /* x86-64: only the bytes after the first written (writable_site) */
	uint8_t orig[8], repl[8];
};

#define MAX_FN_SITES 64

/* Every call rewritten, for the restore.  Under hp_lock. */
static struct site *sites;
static size_t nsites, sites_cap;
static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;

/* Registers whose value is known at a point of the linear walk. */
#define NREGS 32
struct regs {
	uint32_t known; /* bit per register */
	uintptr_t v[NREGS];
};

static void reg_set(struct regs *r, int i, uintptr_t v)
{
	if (i < 0 || i >= NREGS)
		return;
	r->known |= 1u << i;
	r->v[i] = v;
}

static void reg_forget(struct regs *r, int i)
{
	if (i >= 0 && i < NREGS)
		r->known &= ~(1u << i);
}

static int reg_get(const struct regs *r, int i, uintptr_t *v)
{
	if (i < 0 || i >= NREGS || !(r->known & (1u << i)))
		return 0;
	*v = r->v[i];
	return 1;
}

/* A hook call found at `at` (kind), whose first argument register is arg:
 * kept in out when it is the function's own; 0, 1 when it is another's
 * (an inlined callee's, left), or -ENOTSUP when the argument is not known. */
static int found_call(const struct regs *r, int arg, uintptr_t fn, struct site *s)
{
	uintptr_t v;

	if (!reg_get(r, arg, &v))
		return -ENOTSUP;
	if (v != fn)
		return 1;
	s->fn = fn;
	memcpy(s->orig, (const void *)s->at, s->len);
	return 0;
}

#ifdef HP_X86
/* ---- x86-64 ------------------------------------------------------------------------ */

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
		    readable(m, next + (uintptr_t)s->mem.disp)) {
			reg_set(r, di,
				__atomic_load_n((const uintptr_t *)(next + (uintptr_t)s->mem.disp),
						__ATOMIC_RELAXED));
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
static int scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out, int max,
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
			kind = slot_kind(
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
			k = found_call(&r, X_RDI, fn, s);
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
static int writable_site(struct site *s, uintptr_t ret_at)
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
static void write_site(const struct site *s, const uint8_t *to)
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

#else /* HP_A64 */
/* ---- aarch64 ----------------------------------------------------------------------- */

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
		if (rn != 31 && reg_get(r, rn, &v) && readable(m, v + ((w >> 10) & 0xfff) * 8))
			reg_set(r, rd,
				__atomic_load_n((const uintptr_t *)(v + ((w >> 10) & 0xfff) * 8),
						__ATOMIC_RELAXED));
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

static int scan(const struct mod *m, uintptr_t fn, uintptr_t end, struct site *out, int max,
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
			k = found_call(&r, 0, fn, s);
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

static int writable_site(struct site *s, uintptr_t ret_at)
{
	(void)ret_at;
	return (s->at & 3) ? -ENOTSUP : 0;
}

static void write_site(const struct site *s, const uint8_t *to)
{
	uint32_t w;

	memcpy(&w, to, 4);
	/* Relaxed: one single-copy-atomic word; the cache maintenance below
	 * makes it visible to instruction fetches. */
	__atomic_store_n((uint32_t *)s->at, w, __ATOMIC_RELAXED);
	__builtin___clear_cache((char *)s->at, (char *)s->at + 4);
}
#endif

/* ---- writing ------------------------------------------------------------------------ */

/* Makes [lo, hi) writable too (1), or gives it back prot (0). */
static int pages(uintptr_t lo, uintptr_t hi, int prot, int on)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = lo & ~(pg - 1), b = (hi + pg - 1) & ~(pg - 1);

	if (mprotect((void *)a, b - a, on ? prot | PROT_WRITE : prot) < 0)
		return -errno;
	return 0;
}

static int patched_before(uintptr_t fn)
{
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].fn == fn)
			return 1;
	return 0;
}

int ta_hookpatch_nop(uintptr_t fn_start, uintptr_t fn_end)
{
	struct site found[MAX_FN_SITES], *ns;
	struct mod m;
	uintptr_t ret_at = 0;
	int n, err = 0, enters = 0, exits = 0, saved = errno;

	if (fn_end <= fn_start || fn_end - fn_start > (1u << 24))
		return -EINVAL;
	pthread_mutex_lock(&hp_lock);
	if (patched_before(fn_start))
		goto out;
	memset(found, 0, sizeof(found));
	if (mod_of(fn_start, &m) < 0 || fn_end > m.hi) {
		err = -EINVAL;
		goto out;
	}
	n = scan(&m, fn_start, fn_end, found, MAX_FN_SITES, &ret_at);
	if (n < 0) {
		err = n;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		enters += found[i].kind == K_ENTER;
		exits += found[i].kind != K_ENTER;
		found[i].bias = m.bias;
		found[i].lo = m.lo;
		found[i].hi = m.hi;
		found[i].prot = m.prot;
		if (!err)
			err = writable_site(&found[i], ret_at);
	}
	if (!err && (!enters || !exits))
		err = -ENOENT;
	if (err)
		goto out;
	ns = ta_vec_reserve(sites, nsites + (size_t)n, &sites_cap, sizeof(*sites), 64);
	if (!ns) {
		err = -ENOMEM;
		goto out;
	}
	sites = ns;
	err = pages(found[0].at, found[n - 1].at + found[n - 1].len, m.prot, 1);
	if (err)
		goto out;
	for (int i = 0; i < n; i++) {
		write_site(&found[i], found[i].repl);
		sites[nsites++] = found[i];
	}
	(void)pages(found[0].at, found[n - 1].at + found[n - 1].len, m.prot, 0);
out:
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
	return err;
}

/* Whether the site's module is still loaded where it was. */
static int alive(const struct site *s)
{
	struct mod m;

	return mod_of(s->at, &m) == 0 && m.bias == s->bias && m.lo == s->lo;
}

int ta_hookpatch_restore_all(void)
{
	int done = 0, first_err = 0, saved = errno;

	pthread_mutex_lock(&hp_lock);
	for (size_t i = nsites; i-- > 0;) {
		const struct site *s = &sites[i];
		int err;

		if (!alive(s) || memcmp((const void *)s->at, s->repl, s->len) != 0)
			continue;
		err = pages(s->at, s->at + s->len, s->prot, 1);
		if (err) {
			if (!first_err)
				first_err = err;
			continue;
		}
		write_site(s, s->orig);
		(void)pages(s->at, s->at + s->len, s->prot, 0);
		done++;
	}
	nsites = 0;
	pthread_mutex_unlock(&hp_lock);
	errno = saved;
	return first_err ? first_err : done;
}

void ta_hookpatch_forget_unloaded(void)
{
	size_t k = 0;

	pthread_mutex_lock(&hp_lock);
	for (size_t i = 0; i < nsites; i++)
		if (alive(&sites[i]))
			sites[k++] = sites[i];
	nsites = k;
	pthread_mutex_unlock(&hp_lock);
}

#else /* no decoder for this architecture */

int ta_hookpatch_nop(uintptr_t fn_start, uintptr_t fn_end)
{
	(void)fn_start;
	(void)fn_end;
	return -ENOSYS;
}

int ta_hookpatch_restore_all(void)
{
	return 0;
}

void ta_hookpatch_forget_unloaded(void)
{
}

#endif
