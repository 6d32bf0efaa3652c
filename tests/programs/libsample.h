/* SPDX-License-Identifier: MIT */
#ifndef SAMPLE_H
#define SAMPLE_H

/* x * x, through one call of a static helper. */
int sample_square(int x);

#endif
