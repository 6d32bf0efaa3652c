/* SPDX-License-Identifier: MIT */
/*
 * patchlib.c - a library built WITHOUT -finstrument-functions that
 * patchme dlopens: its functions are patched when it is loaded.
 */
int plib_twice(int x);
int plib_square(int x);

__attribute__((noipa)) int plib_twice(int x)
{
	return 2 * x;
}

__attribute__((noipa)) int plib_square(int x)
{
	return plib_twice(x * x) / 2;
}
