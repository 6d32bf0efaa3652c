/* SPDX-License-Identifier: MIT */
/*
 * gendata.c - a fixed, compressible input for scripts/realprog-check.
 *
 * Usage: gendata SEED BYTES > file   (exactly BYTES bytes)
 *
 * The same seed and size give the same bytes on every machine (its own
 * generator, not rand()). The data mixes three kinds of block so bzip2 takes
 * several paths: words from a small vocabulary (text-like, the main sort),
 * long runs of one byte (run-length coding and, when a whole block is that
 * repetitive, the fallback sort), and a little noise (poorly compressible).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state;

/* xorshift64*: small, fast, and defined here so the bytes never change. */
static uint32_t next(void)
{
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return (uint32_t)((state * 0x2545f4914f6cdd1dull) >> 32);
}

static const char *const words[] = {
    "the",    "function", "trace",  "agent", "ring", "buffer", "of",   "a",	  "and",
    "thread", "calls",	  "time",   "enter", "exit", "block",  "sort", "huffman", "compress",
    "module", "offset",	  "symbol", "to",    "in",   "is",     "dump",
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: gendata SEED BYTES\n");
		return 2;
	}
	state = strtoull(argv[1], NULL, 0) * 2654435761u + 1;
	long long total = strtoll(argv[2], NULL, 0);
	long long tail = total / 8; /* the final run of one byte */
	long long left = total - tail;

	while (left > 0) {
		uint32_t kind = next() % 16;
		long long n = 1024 + next() % 8192;

		if (n > left)
			n = left;
		left -= n;
		if (kind < 12) {
			for (long long i = 0; i < n;) {
				const char *w = words[next() % (sizeof(words) / sizeof(words[0]))];
				for (; *w && i < n; w++, i++)
					putchar(*w);
				if (i++ < n)
					putchar(next() % 11 == 0 ? '\n' : ' ');
			}
		} else if (kind < 15) {
			int c = 'A' + (int)(next() % 26);
			for (long long i = 0; i < n; i++)
				putchar(c);
		} else {
			for (long long i = 0; i < n; i++)
				putchar((int)(next() & 0xff));
		}
	}
	/* One long run of a single byte: a block bzip2 sorts with its fallback. */
	for (long long i = 0; i < tail; i++)
		putchar('z');
	return fflush(stdout) == 0 ? 0 : 1;
}
