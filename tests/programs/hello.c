/* SPDX-License-Identifier: MIT */
/* hello.c - built with -static: the loader must refuse it. */
#include <stdio.h>

int main(void)
{
	printf("hello\n");
	return 0;
}
