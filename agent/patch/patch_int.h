/* SPDX-License-Identifier: MIT */
/*
 * patch_int.h - what patch.c (choosing, patching and undoing functions,
 * module by module; the PATCH chunk; attach) and reloc.c (capstone's
 * analysis of a function and the relocation of its code) share: the
 * refusal and fallback codes, the layout of a function's slot, a plan.
 * x86-64 only, as the patcher.
 */
#ifndef TA_PATCH_INT_H
#define TA_PATCH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "modules.h"

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
	X(BREAKPOINT, 12,                                                                          \
	  "a breakpoint (int3) in its first bytes: a debugger, uprobe or perf probe")              \
	X(HOOKS, 13,                                                                               \
	  "its arguments are asked but its -finstrument-functions hook calls cannot be made "      \
	  "no-ops: it would be counted twice")

enum refusal {
#define TA_X(name, code, text) R_##name = code,
	REFUSALS(TA_X)
#undef TA_X
};

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
	X(BREAKPOINT, 9, "a breakpoint (int3) inside it, which must stay where it was set")        \
	X(ARGS, 10, "its arguments or return value are recorded (the return stub's way)")

enum fallback {
#define TA_X(name, code, text) F_##name = code,
	FALLBACKS(TA_X)
#undef TA_X
};
enum { F_N = F_ARGS + 1 };

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

static inline int fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static inline void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* Patching at `traceagent attach` (patch.c): calls are refused in
 * relocated code (reloc.c), which runs while the threads do. */
extern int ta_patch_attach_mode;

/* Set while the function analysed is an instrumented one whose hook calls
 * were made no-ops (patch.c, for its arguments): the return address it
 * reads is __cyg_profile_func_enter's call site, an argument of a call
 * that is gone (docs/arguments.md says what remains). */
extern int ta_patch_hooks_nopped;

/* A function's entry, analysed: 0 with its plan, or a refusal (R_*). */
unsigned ta_patch_analyse(uint64_t addr, uint64_t size, struct plan *pl);
/* The plan's first instructions relocated for a trampoline at `at`: 0, or
 * a refusal. */
unsigned ta_patch_relocate(struct plan *pl, uint64_t at);

/* ---- relocating a whole function (reloc.c) ---- */

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

/* GCC's foo.cold (or foo.cold.N): a part of foo entered by a jump. */
int ta_patch_is_cold_part(const char *name);
void ta_patch_module_facts(const struct ta_module *m, const void *map, size_t maplen,
			   struct modfacts *f);

struct rins;
struct whole {
	struct rins *ins;
	size_t n;
	uint32_t body_len, ntrail, len; /* len: body, trailers, exit stub */
	int fall;			/* the body ends in a tail call to its end */
};

/* Plans the copy of the function [addr, addr + size): 0, or why it cannot
 * be relocated whole (F_*); w->ins to free either way. */
unsigned ta_patch_plan_whole(uint64_t addr, uint64_t size, const struct plan *pl,
			     const struct modfacts *f, struct whole *w);
/* Writes the slot of a function planned whole: 0, or F_NO_ROOM. */
unsigned ta_patch_emit_whole(const struct whole *w, uint64_t fn, uint8_t *slot);
/* Keeps the copy's map to the original addresses (ta_patch_orig_pc). */
void ta_patch_keep_relmap(const struct whole *w, const struct plan *pl, const uint8_t *slot);

#endif
