/* SPDX-License-Identifier: MIT */
/*
 * aarch64/patch_stub.S - what a function patched at its patchable entry
 * (agent/patchent.c, patchent_a64.c) goes through, the return stub of
 * agent/patch/patch_hot.c, and the calls out that keep the vector
 * registers (x86_64/patch_stub.S says why every register is kept, not only
 * those the ABI says a call preserves).
 *
 * A function's stub (its slot's code) saves x16, x17 and the function's
 * return address (x30) on the stack, loads its slot into x16 and calls
 * the slot's common entry, then reloads x30 (which the common entry may
 * have replaced with ta_patch_ret_stub), x16 and x17, and branches back
 * past the patched no-op:
 *     stp x16, x17, [sp, #-32]!; str x30, [sp, #16]; adr x16, slot;
 *     ldr x17, [x16, #8]; blr x17; ldr x30, [sp, #16];
 *     ldp x16, x17, [sp], #32; b resume
 * so the return address's slot is at [sp + 16] when a common entry starts.
 *
 * ta_patch_enter_common calls ta_patch_on_enter(desc, &slot), which is
 * built with -mgeneral-regs-only: x0-x15 and x18 are kept around it.
 *
 * ta_patch_ret_stub: where a patched function returns to.  Its slot was
 * 16 bytes below the stack pointer it returns with; ta_patch_on_return
 * (slot, x0, d0) gives the real return address, returned to with x0-x18
 * as the function left them.
 */
	.text

#define GP_SAVE(base)			\
	stp	x0, x1, [sp, #(base)];	\
	stp	x2, x3, [sp, #(base)+16];	\
	stp	x4, x5, [sp, #(base)+32];	\
	stp	x6, x7, [sp, #(base)+48];	\
	stp	x8, x9, [sp, #(base)+64];	\
	stp	x10, x11, [sp, #(base)+80];	\
	stp	x12, x13, [sp, #(base)+96];	\
	stp	x14, x15, [sp, #(base)+112];	\
	stp	x16, x17, [sp, #(base)+128];	\
	str	x18, [sp, #(base)+144]

#define GP_RESTORE(base)		\
	ldp	x0, x1, [sp, #(base)];	\
	ldp	x2, x3, [sp, #(base)+16];	\
	ldp	x4, x5, [sp, #(base)+32];	\
	ldp	x6, x7, [sp, #(base)+48];	\
	ldp	x8, x9, [sp, #(base)+64];	\
	ldp	x10, x11, [sp, #(base)+80];	\
	ldp	x12, x13, [sp, #(base)+96];	\
	ldp	x14, x15, [sp, #(base)+112];	\
	ldp	x16, x17, [sp, #(base)+128];	\
	ldr	x18, [sp, #(base)+144]

#define V_SAVE(base)			\
	stp	q0, q1, [sp, #(base)];	\
	stp	q2, q3, [sp, #(base)+32];	\
	stp	q4, q5, [sp, #(base)+64];	\
	stp	q6, q7, [sp, #(base)+96];	\
	stp	q8, q9, [sp, #(base)+128];	\
	stp	q10, q11, [sp, #(base)+160];	\
	stp	q12, q13, [sp, #(base)+192];	\
	stp	q14, q15, [sp, #(base)+224];	\
	stp	q16, q17, [sp, #(base)+256];	\
	stp	q18, q19, [sp, #(base)+288];	\
	stp	q20, q21, [sp, #(base)+320];	\
	stp	q22, q23, [sp, #(base)+352];	\
	stp	q24, q25, [sp, #(base)+384];	\
	stp	q26, q27, [sp, #(base)+416];	\
	stp	q28, q29, [sp, #(base)+448];	\
	stp	q30, q31, [sp, #(base)+480]

#define V_RESTORE(base)			\
	ldp	q0, q1, [sp, #(base)];	\
	ldp	q2, q3, [sp, #(base)+32];	\
	ldp	q4, q5, [sp, #(base)+64];	\
	ldp	q6, q7, [sp, #(base)+96];	\
	ldp	q8, q9, [sp, #(base)+128];	\
	ldp	q10, q11, [sp, #(base)+160];	\
	ldp	q12, q13, [sp, #(base)+192];	\
	ldp	q14, q15, [sp, #(base)+224];	\
	ldp	q16, q17, [sp, #(base)+256];	\
	ldp	q18, q19, [sp, #(base)+288];	\
	ldp	q20, q21, [sp, #(base)+320];	\
	ldp	q22, q23, [sp, #(base)+352];	\
	ldp	q24, q25, [sp, #(base)+384];	\
	ldp	q26, q27, [sp, #(base)+416];	\
	ldp	q28, q29, [sp, #(base)+448];	\
	ldp	q30, q31, [sp, #(base)+480]

/* x29, x30, then x0-x18 (152 bytes): 176 with padding. */
#define FRAME 176

	.globl	ta_patch_enter_common
	.hidden	ta_patch_enter_common
	.type	ta_patch_enter_common, %function
	.p2align 2
ta_patch_enter_common:
	.cfi_startproc
	hint	#34			/* bti c: called by blr from a stub */
	stp	x29, x30, [sp, #-FRAME]!
	.cfi_def_cfa_offset FRAME
	.cfi_offset 29, -FRAME
	.cfi_offset 30, -(FRAME - 8)
	mov	x29, sp
	GP_SAVE(16)
	mov	x0, x16
	add	x1, sp, #(FRAME + 16)
	bl	ta_patch_on_enter
	GP_RESTORE(16)
	ldp	x29, x30, [sp], #FRAME
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ta_patch_enter_common, .-ta_patch_enter_common

	.globl	ta_patch_ret_stub
	.hidden	ta_patch_ret_stub
	.type	ta_patch_ret_stub, %function
	.p2align 2
ta_patch_ret_stub:
	sub	sp, sp, #FRAME
	stp	x29, x30, [sp]
	GP_SAVE(16)
	add	x0, sp, #(FRAME - 16)
	ldr	x1, [sp, #16]
	fmov	x2, d0
	bl	ta_patch_on_return
	mov	x30, x0
	GP_RESTORE(16)
	ldr	x29, [sp]
	add	sp, sp, #FRAME
	ret
	.size	ta_patch_ret_stub, .-ta_patch_ret_stub

/* void *ta_patch_vcall(void *(*fn)(void *, void *), void *a, void *b):
 * fn(a, b), with q0-q31 as they were. */
	.globl	ta_patch_vcall
	.hidden	ta_patch_vcall
	.type	ta_patch_vcall, %function
	.p2align 2
ta_patch_vcall:
	.cfi_startproc
	sub	sp, sp, #528
	.cfi_def_cfa_offset 528
	stp	x29, x30, [sp]
	.cfi_offset 29, -528
	.cfi_offset 30, -520
	mov	x29, sp
	V_SAVE(16)
	mov	x16, x0
	mov	x0, x1
	mov	x1, x2
	blr	x16
	V_RESTORE(16)
	ldp	x29, x30, [sp]
	add	sp, sp, #528
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ta_patch_vcall, .-ta_patch_vcall

/* void ta_patch_record_slow(uint64_t addr, uint64_t ticks): the ring's
 * slow path through ta_patch_vcall (patch_hot.c's TA_RECORD_SLOW). */
	.globl	ta_patch_record_slow
	.hidden	ta_patch_record_slow
	.type	ta_patch_record_slow, %function
	.p2align 2
ta_patch_record_slow:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	mov	x2, x1
	mov	x1, x0
	adrp	x0, ta_record_slow
	add	x0, x0, :lo12:ta_record_slow
	bl	ta_patch_vcall
	ldp	x29, x30, [sp], #16
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ta_patch_record_slow, .-ta_patch_record_slow

/* The common entry of a function whose arguments are recorded
 * (agent/argregs.h): every register kept, vector ones included (the
 * recorder is ordinary C), a struct ta_argregs filled (x0-x7, d0-d7, the
 * stack pointer at the function's entry) for
 * ta_patchent_on_enter_args(desc, &slot, &regs). */
#define AFRAME (FRAME + 512 + 144)
#define AV    FRAME
#define AARGS (FRAME + 512)

	.globl	ta_patchent_enter_args
	.hidden	ta_patchent_enter_args
	.type	ta_patchent_enter_args, %function
	.p2align 2
ta_patchent_enter_args:
	.cfi_startproc
	hint	#34			/* bti c */
	sub	sp, sp, #AFRAME
	.cfi_def_cfa_offset AFRAME
	stp	x29, x30, [sp]
	.cfi_offset 29, -AFRAME
	.cfi_offset 30, -(AFRAME - 8)
	mov	x29, sp
	GP_SAVE(16)
	add	x9, sp, #AV
	stp	q0, q1, [x9]
	stp	q2, q3, [x9, #32]
	stp	q4, q5, [x9, #64]
	stp	q6, q7, [x9, #96]
	stp	q8, q9, [x9, #128]
	stp	q10, q11, [x9, #160]
	stp	q12, q13, [x9, #192]
	stp	q14, q15, [x9, #224]
	stp	q16, q17, [x9, #256]
	stp	q18, q19, [x9, #288]
	stp	q20, q21, [x9, #320]
	stp	q22, q23, [x9, #352]
	stp	q24, q25, [x9, #384]
	stp	q26, q27, [x9, #416]
	stp	q28, q29, [x9, #448]
	stp	q30, q31, [x9, #480]
	add	x9, sp, #AARGS
	stp	x0, x1, [x9]
	stp	x2, x3, [x9, #16]
	stp	x4, x5, [x9, #32]
	stp	x6, x7, [x9, #48]
	stp	d0, d1, [x9, #64]
	stp	d2, d3, [x9, #80]
	stp	d4, d5, [x9, #96]
	stp	d6, d7, [x9, #112]
	add	x10, sp, #(AFRAME + 32)
	str	x10, [x9, #128]
	mov	x0, x16
	add	x1, sp, #(AFRAME + 16)
	mov	x2, x9
	bl	ta_patchent_on_enter_args
	add	x9, sp, #AV
	ldp	q0, q1, [x9]
	ldp	q2, q3, [x9, #32]
	ldp	q4, q5, [x9, #64]
	ldp	q6, q7, [x9, #96]
	ldp	q8, q9, [x9, #128]
	ldp	q10, q11, [x9, #160]
	ldp	q12, q13, [x9, #192]
	ldp	q14, q15, [x9, #224]
	ldp	q16, q17, [x9, #256]
	ldp	q18, q19, [x9, #288]
	ldp	q20, q21, [x9, #320]
	ldp	q22, q23, [x9, #352]
	ldp	q24, q25, [x9, #384]
	ldp	q26, q27, [x9, #416]
	ldp	q28, q29, [x9, #448]
	ldp	q30, q31, [x9, #480]
	GP_RESTORE(16)
	ldp	x29, x30, [sp]
	add	sp, sp, #AFRAME
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	ta_patchent_enter_args, .-ta_patchent_enter_args

	.section .note.GNU-stack, "", %progbits
