/* SPDX-License-Identifier: MIT */
/*
 * pehostile.c - linked into peprog-hostile: an address in the program's
 * __patchable_function_entries that is not code (a variable's), as a
 * corrupt or crafted file would have; the patcher must refuse it and say
 * so, and patch the others.
 */
static int not_code;

__attribute__((used, section("__patchable_function_entries"))) static int *const bogus = &not_code;
