/* SPDX-License-Identifier: MIT */
/*
 * disasm.h - capstone, opened with dlopen (patch.c, where the reason is
 * given) and shared by the two users that decode x86-64 code: the patcher
 * (patch.c) and the hook-call rewriter (hookpatch.c).  x86-64 only.
 */
#ifndef TA_DISASM_H
#define TA_DISASM_H

#include <stdint.h>

#include "compiler.h"
#include "ta_config.h"

#if TA_HAVE_PATCH
#include <capstone/capstone.h>

/* The functions used, looked up in the library; valid once
 * ta_capstone_open() returned 0. */
struct ta_capstone {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	cs_insn *(*malloc)(csh);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	void (*free)(cs_insn *, size_t);
	cs_err (*regs_access)(csh, const cs_insn *, cs_regs, uint8_t *, cs_regs, uint8_t *);
};
extern struct ta_capstone ta_csf TA_HIDDEN;
/* An x86-64 handle with details on. */
extern csh ta_cs TA_HIDDEN;

/* Opens the library and the handle once (thread-safe); 0, or -1 when the
 * library or one of its functions is missing. */
int ta_capstone_open(void) TA_HIDDEN;
/* The target of a relative jmp/call (its immediate operand), or 0. */
uint64_t ta_cs_branch_target(const cs_insn *in) TA_HIDDEN;
/* Whether the instruction is in group g (X86_GRP_CALL, ...). */
int ta_cs_in_group(const cs_insn *in, uint8_t g) TA_HIDDEN;
/* The name of the library, for messages. */
#define TA_CS_STR_(x) #x
#define TA_CS_STR(x)  TA_CS_STR_(x)
#define TA_CS_SONAME  "libcapstone.so." TA_CS_STR(CS_API_MAJOR)
#endif

#endif
