/* SPDX-License-Identifier: MIT */
/*
 * aarch64/regs.h - a thread's registers as ptrace gives them (arch/ptrace.h,
 * which includes this header).
 */
#ifndef TA_ARCH_AARCH64_REGS_H
#define TA_ARCH_AARCH64_REGS_H

#include <sys/ptrace.h>
#include <sys/user.h>

/* glibc's name for the kernel's struct user_pt_regs (NT_PRSTATUS). */
typedef struct user_regs_struct ta_regs;
#define TA_REGS_PC(r) ((r).pc)
#define TA_REGS_SP(r) ((r).sp)
/* ta_regs_ta_regs_syscall_park tells its system-call stops from SIGTRAPs. */
#define TA_REGS_SEIZE_OPTIONS PTRACE_O_TRACESYSGOOD

#endif
