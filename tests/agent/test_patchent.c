/* SPDX-License-Identifier: MIT */
/*
 * test_patchent.c - what the patchable-entry patcher (agent/patchent_x86.c,
 * patchent_a64.c) plans on known bytes: where the jump goes and where its
 * stub goes back to, for the layouts GCC and Clang emit (N no-ops at the
 * symbol, after an endbr64 or bti c; M of them before it), and its refusals
 * (too small, not no-ops, no function near); then the stub it writes,
 * byte for byte, and the jump to it.  Skipped (77) where there is no such
 * patcher.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "../check_run.h"
#include "arch.h"
#include "patchent.h"
#include "ta_config.h"

#if TA_HAVE_PATCH_HOT

/* bytes at offset 64 of a page (the rest 0xff), its address. */
static uint8_t *code_at(const void *bytes, size_t n)
{
	static uint8_t *page;

	if (!page) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_ptr_ne(page, MAP_FAILED);
	}
	memset(page, 0xff, 4096);
	memcpy(page + 64, bytes, n);
	return page + 64;
}

struct pe_case {
	const char *what;
	uint8_t bytes[32];
	size_t n;
	unsigned area, fn; /* offsets in bytes */
	unsigned why;	   /* 0: planned */
	unsigned from, resume, nsite;
};

#if !TA_ARCH_CODE_FIXED_WORDS
static const struct pe_case cases[] = {
    {"gcc =5", {0x90, 0x90, 0x90, 0x90, 0x90, 0x8d, 0x47, 0x01, 0xc3}, 9, 0, 0, 0, 0, 5, 1},
    {"clang =5", {0x0f, 0x1f, 0x44, 0x00, 0x08, 0x8d, 0x47, 0x01, 0xc3}, 9, 0, 0, 0, 0, 5, 1},
    {"clang =7: a whole 7-byte nop",
     {0x0f, 0x1f, 0x80, 0, 0, 0, 0, 0x8d, 0x47, 0x01, 0xc3},
     11,
     0,
     0,
     0,
     0,
     7,
     1},
    {"endbr64, =5",
     {0xf3, 0x0f, 0x1e, 0xfa, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3},
     10,
     4,
     0,
     0,
     4,
     9,
     1},
    {"=7,5: a short jump back",
     {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x8d, 0x47, 0x01, 0xc3},
     11,
     0,
     5,
     0,
     0,
     7,
     2},
    {"=2: too small", {0x90, 0x90, 0x8d, 0x47, 0x01, 0xc3}, 6, 0, 0, TA_PE_ROOM, 0, 0, 0},
    {"no no-ops", {0x8d, 0x47, 0x01, 0xc3}, 4, 0, 0, TA_PE_NOT_NOPS, 0, 0, 0},
    {"=7,5 with a breakpoint before",
     {0x90, 0xcc, 0x90, 0x90, 0x90, 0x90, 0x90, 0x8d, 0x47, 0x01, 0xc3},
     11,
     0,
     5,
     TA_PE_NOT_NOPS,
     0,
     0,
     0},
    {"area after the function's start",
     {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xc3},
     7,
     1,
     0,
     TA_PE_NONE,
     0,
     0,
     0},
};
#else
#define NOP 0x1f, 0x20, 0x03, 0xd5
#define BTI 0x5f, 0x24, 0x03, 0xd5
#define RET 0xc0, 0x03, 0x5f, 0xd6
#define ADD 0x00, 0x04, 0x00, 0x11
static const struct pe_case cases[] = {
    {"=2", {NOP, NOP, ADD, RET}, 16, 0, 0, 0, 0, 4, 1},
    {"bti c, =2", {BTI, NOP, NOP, ADD, RET}, 20, 4, 0, 0, 4, 8, 1},
    {"=4,2", {NOP, NOP, NOP, NOP, ADD, RET}, 24, 0, 8, 0, 8, 12, 1},
    {"=2,2: none after", {NOP, NOP, ADD, RET}, 16, 0, 8, TA_PE_ROOM, 0, 0, 0},
    {"no no-op", {ADD, RET}, 8, 0, 0, TA_PE_NOT_NOPS, 0, 0, 0},
};
#endif

START_TEST(plans)
{
	const struct pe_case *c = &cases[_i];
	uint8_t *code = code_at(c->bytes, c->n);
	uint64_t base = (uint64_t)(uintptr_t)code;
	struct ta_pe_plan pl;
	unsigned why = ta_pe_arch_plan(base + c->area, base + c->fn, c->n - c->fn, &pl);

	ck_assert_msg(why == c->why, "%s: %u, expected %u", c->what, why, c->why);
	if (why)
		return;
	ck_assert_uint_eq(pl.fn, base + c->fn);
	ck_assert_uint_eq(pl.from - base, c->from);
	ck_assert_uint_eq(pl.resume - base, c->resume);
	ck_assert_uint_eq(pl.nsite, c->nsite);
	ck_assert_uint_eq(pl.site[0].at, pl.from);
	ck_assert_mem_eq(pl.site[0].orig, code + c->from, pl.site[0].len);
}
END_TEST

/* The stub written, and the jump to it: the jump lands on the stub, the
 * stub's last branch on the resume address, the common entry called
 * through the slot. */
START_TEST(emits)
{
	const struct pe_case *c = &cases[0];
	uint8_t *code = code_at(c->bytes, c->n);
	uint64_t base = (uint64_t)(uintptr_t)code;
	uint8_t slot[TA_PE_SLOT_SIZE];
	uint8_t *near = code - 64 + 2048; /* in the same page: within any reach */
	struct ta_pe_plan pl;

	ck_assert_uint_eq(ta_pe_arch_plan(base, base, c->n, &pl), 0);
	memset(slot, 0, sizeof(slot));
	ck_assert_uint_eq(ta_pe_arch_emit(&pl, near), 0);
	memcpy(slot, near, sizeof(slot));
#if !TA_ARCH_CODE_FIXED_WORDS
	{
		int32_t d;
		static const uint8_t stub[] = {0x41, 0x53, 0x49, 0xbb};
		ck_assert_uint_eq(pl.site[0].repl[0], 0xe9);
		memcpy(&d, pl.site[0].repl + 1, 4);
		ck_assert_uint_eq(pl.from + 5 + (uint64_t)(int64_t)d,
				  (uint64_t)(uintptr_t)near + 24);
		/* bytes the jmp covers past its 5 trap */
		ck_assert_mem_eq(slot + 24, stub, 4);
		ck_assert_mem_eq(slot + 28, &near, 8);
		ck_assert_uint_eq(slot[36], 0xff);
		ck_assert_uint_eq(slot[37], 0x15);
		memcpy(&d, slot + 38, 4);
		ck_assert_int_eq(d, 8 - 42);
		ck_assert_uint_eq(slot[44], 0xe9);
		memcpy(&d, slot + 45, 4);
		ck_assert_uint_eq((uint64_t)(uintptr_t)near + 49 + (uint64_t)(int64_t)d, pl.resume);
	}
#else
	{
		uint32_t w;
		int64_t d;
		memcpy(&w, pl.site[0].repl, 4);
		ck_assert_uint_eq(w >> 26, 0x05); /* b */
		d = (int64_t)((uint64_t)(w & 0x03ffffff) << 38) >> 36;
		ck_assert_uint_eq(pl.from + (uint64_t)d, (uint64_t)(uintptr_t)near + 24);
		memcpy(&w, slot + 52, 4);
		ck_assert_uint_eq(w >> 26, 0x05);
		d = (int64_t)((uint64_t)(w & 0x03ffffff) << 38) >> 36;
		ck_assert_uint_eq((uint64_t)(uintptr_t)near + 52 + (uint64_t)d, pl.resume);
		memcpy(&w, slot + 40, 4);
		ck_assert_uint_eq(w, 0xd63f0220u); /* blr x17 */
	}
#endif
}
END_TEST

/* Out of reach: refused, nothing planned to be written. */
START_TEST(out_of_reach)
{
	const struct pe_case *c = &cases[0];
	uint8_t *code = code_at(c->bytes, c->n);
	uint64_t base = (uint64_t)(uintptr_t)code;
	struct ta_pe_plan pl;
	uint8_t *far = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(far, MAP_FAILED);
	ck_assert_uint_eq(ta_pe_arch_plan(base, base, c->n, &pl), 0);
	pl.from += ta_pe_arch_reach * 4; /* as if the code were that far */
	ck_assert_uint_eq(ta_pe_arch_emit(&pl, far), TA_PE_NO_MEMORY);
}
END_TEST

static Suite *patchent_suite(void)
{
	Suite *s = suite_create("patchent");
	TCase *tc = tcase_create("plans");

	tcase_add_loop_test(tc, plans, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, emits);
	tcase_add_test(tc, out_of_reach);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(patchent_suite());
}

#else

int main(void)
{
	return 77;
}

#endif
