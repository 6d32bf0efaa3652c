/* SPDX-License-Identifier: MIT */
/*
 * test_patch.c - the patcher's decisions on known x86-64 byte
 * sequences: what ta_patch_analyse() refuses (too short, a jump into the bytes the
 * entry's jmp replaces, a breakpoint there, ret N, a read of the return
 * address, a body capstone cannot decode) and the region it takes (after
 * an endbr64, whole instructions covering 5 bytes), and the trampoline
 * ta_patch_relocate() writes for a region moved elsewhere: RIP-relative operands and
 * relative branches rewritten for the new place, a jmp back, byte for byte.
 * agent/patch/patch.c and reloc.c are compiled into this file for patch.c's
 * static functions (and stand in for the core library's copies).  Skipped where the build has no
 * patching (meson -Dpatching, other architectures).
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <stdio.h>

#include "ta_config.h"

#if TA_HAVE_PATCH
#include "../../agent/patch/patch.c"
#include "../../agent/patch/reloc.c"

/* The bytes at a fixed place in an executable mapping, padded with int3
 * (never reached: ta_patch_analyse() is told the size). */
static uint8_t *code_at(const uint8_t *bytes, size_t n)
{
	static uint8_t *page;

	if (!page) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_ptr_ne(page, MAP_FAILED);
	}
	memset(page, 0xcc, 4096);
	memcpy(page + 64, bytes, n);
	return page + 64;
}

static unsigned analyse_bytes(const uint8_t *bytes, size_t n, struct plan *pl)
{
	uint8_t *f = code_at(bytes, n);

	ck_assert_int_eq(ta_capstone_open(), 0);
	memset(pl, 0, sizeof(*pl));
	return ta_patch_analyse((uint64_t)(uintptr_t)f, n, pl);
}

START_TEST(takes_whole_instructions_after_endbr64)
{
	/* endbr64; push %rbp; mov %rsp,%rbp; pop %rbp; ret */
	static const uint8_t fn[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
	/* sub $0x18,%rsp (4); add $0x18,%rsp (4); ret: two whole ones, 8 */
	static const uint8_t fn2[] = {0x48, 0x83, 0xec, 0x18, 0x48, 0x83, 0xc4, 0x18, 0xc3};
	struct plan pl;

	ck_assert_uint_eq(analyse_bytes(fn, sizeof(fn), &pl), 0);
	ck_assert_uint_eq(pl.start - (uint64_t)(uintptr_t)code_at(fn, sizeof(fn)), 4);
	ck_assert_uint_eq(pl.len, 5);
	ck_assert_uint_eq(analyse_bytes(fn2, sizeof(fn2), &pl), 0);
	ck_assert_uint_eq(pl.start, (uint64_t)(uintptr_t)code_at(fn2, sizeof(fn2)));
	ck_assert_uint_eq(pl.len, 8);
}
END_TEST

static const struct {
	const char *what;
	uint8_t bytes[32];
	size_t n;
	unsigned why;
} refusal_cases[] = {
    /* ret */
    {"ret alone", {0xc3}, 1, R_SHORT},
    /* xor %eax,%eax; ret */
    {"three bytes", {0x31, 0xc0, 0xc3}, 3, R_SHORT},
    /* endbr64; xor %eax,%eax; ret: 3 after the endbr64 */
    {"short after endbr64", {0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xc0, 0xc3}, 7, R_SHORT},
    /* xor %eax,%eax; 1: inc %eax; cmp $10,%eax; jne 1b; ret */
    {"loop into the first bytes",
     {0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3},
     10,
     R_JUMP_TARGET},
    /* int3; nop x4; ret */
    {"breakpoint at the entry", {0xcc, 0x90, 0x90, 0x90, 0x90, 0xc3}, 6, R_BREAKPOINT},
    /* push %rbp; mov %rsp,%rbp; pop %rbp; ret $8 */
    {"ret N", {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc2, 0x08, 0x00}, 8, R_RET_POPS},
    /* mov (%rsp),%rax; nop; ret */
    {"reads its return address", {0x48, 0x8b, 0x04, 0x24, 0x90, 0xc3}, 6, R_READS_RET},
    /* nop x5; (bad) 0x06, invalid in 64-bit mode, then 16 nops */
    {"undecodable body",
     {0x90, 0x90, 0x90, 0x90, 0x90, 0x06, 0x90, 0x90, 0x90, 0x90, 0x90,
      0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90},
     22,
     R_UNDECODABLE},
};

START_TEST(refusals)
{
	struct plan pl;
	unsigned why = analyse_bytes(refusal_cases[_i].bytes, refusal_cases[_i].n, &pl);

	ck_assert_msg(why == refusal_cases[_i].why, "%s: reason %u (%s), want %u (%s)",
		      refusal_cases[_i].what, why, refusal_text(why), refusal_cases[_i].why,
		      refusal_text(refusal_cases[_i].why));
}
END_TEST

static int32_t get32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

START_TEST(relocates_rip_relative_and_branches)
{
	/* mov 0x100(%rip),%rax (7); ret */
	static const uint8_t rip[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0xc3};
	/* test %edi,%edi (2); je +0x10 (2); nop; ret: the je is moved as a
	 * jcc rel32 (6 bytes) */
	static const uint8_t jcc[] = {0x85, 0xff, 0x74, 0x10, 0x90, 0xc3};
	struct plan pl;
	uint64_t f, at;

	ck_assert_uint_eq(analyse_bytes(rip, sizeof(rip), &pl), 0);
	f = pl.start;
	ck_assert_uint_eq(pl.len, 7);
	at = f + 0x10000;
	ck_assert_uint_eq(ta_patch_relocate(&pl, at), 0);
	/* The same instruction, its displacement pointing at the same data
	 * (f + 7 + 0x100) from its new place; then jmp f + 7. */
	ck_assert_uint_eq(pl.code_len, 7 + 5);
	ck_assert_int_eq(memcmp(pl.code, rip, 3), 0);
	ck_assert_int_eq(get32(pl.code + 3), (int32_t)(f + 7 + 0x100 - (at + 7)));
	ck_assert_uint_eq(pl.code[7], 0xe9);
	ck_assert_int_eq(get32(pl.code + 8), (int32_t)(f + 7 - (at + 12)));

	ck_assert_uint_eq(analyse_bytes(jcc, sizeof(jcc), &pl), 0);
	f = pl.start;
	ck_assert_uint_eq(pl.len, 4 + 1);
	at = f - 0x2000;
	ck_assert_uint_eq(ta_patch_relocate(&pl, at), 0);
	ck_assert_uint_eq(pl.code_len, 2 + 6 + 1 + 5);
	ck_assert_int_eq(memcmp(pl.code, jcc, 2), 0);
	/* je rel32 to the original target, f + 4 + 0x10. */
	ck_assert_uint_eq(pl.code[2], 0x0f);
	ck_assert_uint_eq(pl.code[3], 0x84);
	ck_assert_int_eq(get32(pl.code + 4), (int32_t)(f + 4 + 0x10 - (at + 8)));
	ck_assert_uint_eq(pl.code[8], 0x90);
	ck_assert_uint_eq(pl.code[9], 0xe9);
	ck_assert_int_eq(get32(pl.code + 10), (int32_t)(f + 5 - (at + 14)));
}
END_TEST

START_TEST(relocation_out_of_reach)
{
	static const uint8_t rip[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0xc3};
	struct plan pl;

	ck_assert_uint_eq(analyse_bytes(rip, sizeof(rip), &pl), 0);
	/* A trampoline 4 GiB away cannot reach the data: refused. */
	ck_assert_uint_eq(ta_patch_relocate(&pl, pl.start + (4ull << 30)), R_NO_MEMORY);
}
END_TEST

static Suite *patch_suite(void)
{
	Suite *s = suite_create("patch");
	TCase *tc = tcase_create("patch");

	tcase_add_test(tc, takes_whole_instructions_after_endbr64);
	tcase_add_loop_test(tc, refusals, 0, sizeof(refusal_cases) / sizeof(refusal_cases[0]));
	tcase_add_test(tc, relocates_rip_relative_and_branches);
	tcase_add_test(tc, relocation_out_of_reach);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(patch_suite());
}

#else

int main(void)
{
	/* 77: meson's "skipped". */
	puts("skipped: this build has no dynamic patching (meson -Dpatching)");
	return 77;
}

#endif
