/* SPDX-License-Identifier: MIT */
/*
 * x86_64/regs.h - a thread's registers as ptrace gives them (arch/ptrace.h,
 * which includes this header).
 */
#ifndef TA_ARCH_X86_64_REGS_H
#define TA_ARCH_X86_64_REGS_H

#include <sys/ptrace.h>
#include <sys/user.h>

typedef struct user_regs_struct ta_regs;
#define TA_REGS_PC(r)	      ((r).rip)
#define TA_REGS_SP(r)	      ((r).rsp)
#define TA_REGS_SEIZE_OPTIONS 0

#endif
