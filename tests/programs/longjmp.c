/* SPDX-License-Identifier: MIT */
/*
 * longjmp.c - deeper() jumps back into outer() past its own exit and
 * inner()'s: the exit hooks of both never run.  outer() runs 3 times and
 * returns normally, so a reader must close the two abandoned frames when
 * outer() exits.  Calls: outer 3, inner 3, deeper 3, after 3.
 */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noipa)) static void deeper(int i)
{
	sink += i;
	longjmp(env, i + 1);
}

__attribute__((noipa)) static void inner(int i)
{
	deeper(i);
	sink--; /* never reached */
}

__attribute__((noipa)) static void after(void)
{
	sink++;
}

__attribute__((noipa)) static int outer(int i)
{
	int r = setjmp(env);

	if (r == 0)
		inner(i);
	after();
	return r;
}

int main(void)
{
	int sum = 0;

	for (int i = 0; i < 3; i++)
		sum += outer(i);
	printf("longjmp: %d\n", sum);
	return 0;
}
