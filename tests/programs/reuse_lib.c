/* SPDX-License-Identifier: MIT */
/*
 * reuse_lib.c - built twice, as libreuse_alpha.so (-DALPHA: alpha_work,
 * alpha_leaf) and libreuse_beta.so (beta_work, beta_leaf): the same code
 * under other names, so both libraries have their functions at the same
 * offsets and, loaded one after the other at the same base, at the same
 * addresses.  X_work(x) calls X_leaf twice.
 */
#ifdef ALPHA
#define FN(name) alpha_##name
#else
#define FN(name) beta_##name
#endif

int FN(leaf)(int x);
int FN(work)(int x);

__attribute__((noipa)) int FN(leaf)(int x)
{
	return x * 3 + 1;
}

__attribute__((noipa)) int FN(work)(int x)
{
	return FN(leaf)(x) + FN(leaf)(x + 1);
}
