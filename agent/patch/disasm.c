/* SPDX-License-Identifier: MIT */
/*
 * disasm.c - capstone, opened when patching or hook-call rewriting first
 * needs it, and the decoding helpers disasm.h declares for the patcher
 * (patch.c, reloc.c) and hookpatch_x86.c.
 *
 * Apart from the patcher because both patchers decode with it and neither
 * owns it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "disasm.h"
#include "lazylib.h"
#include "ta_config.h"

#if TA_HAVE_PATCH

/*
 * Capstone is opened with dlopen when patching is asked for, not linked:
 * its tables take milliseconds of relocation when the library is loaded
 * (docs/bench.md), a cost every traced program would pay at start-up for
 * a feature few runs use.  The
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

#endif
