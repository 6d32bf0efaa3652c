/* SPDX-License-Identifier: MIT */
/*
 * nest.c - a fixed call tree in which every function has one caller:
 *
 *   main -> trunk x2 -> branch x3 -> leaf x4
 *                    -> twig x1   -> bud x5
 *
 * so the calls are main 1, trunk 2, branch 6, twig 2, leaf 24, bud 10, and
 * each function's total is its self time plus its callees' totals.
 */
#include <stdio.h>

static volatile unsigned long sink;

/* About 10 ms in all, so that a few microseconds are a small share. */
#define WORK 20000

/* Work of a size that does not depend on the optimisation level.  It is not
 * instrumented, so its time is its caller's self time. */
__attribute__((noipa, no_instrument_function)) static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		sink += i;
}

/* noipa: no inlining, cloning or other interprocedural rewriting, so the
 * tree above is what runs at every optimisation level. */
__attribute__((noipa)) static void leaf(void)
{
	spin(20 * WORK);
}

__attribute__((noipa)) static void bud(void)
{
	spin(30 * WORK);
}

__attribute__((noipa)) static void branch(void)
{
	spin(5 * WORK);
	for (int i = 0; i < 4; i++)
		leaf();
}

__attribute__((noipa)) static void twig(void)
{
	for (int i = 0; i < 5; i++)
		bud();
	spin(7 * WORK);
}

__attribute__((noipa)) static void trunk(void)
{
	for (int i = 0; i < 3; i++)
		branch();
	twig();
	spin(1 * WORK);
}

int main(void)
{
	for (int i = 0; i < 2; i++)
		trunk();
	printf("nest: sink = %lu\n", sink);
	return 0;
}
