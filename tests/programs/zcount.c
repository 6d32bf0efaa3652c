/* SPDX-License-Identifier: MIT */
/*
 * zcount.c - uses the system's zlib (built by Debian, never instrumented)
 * and counts its own calls of zlib's functions, for the patching test:
 * the trace of `libz.so.1:deflate*,libz.so.1:inflate*` must show the same
 * counts for the functions zlib does not call itself.
 *
 * usage: zcount ROUNDS   each round compresses 64 KiB in 1 KiB steps
 *                        (deflate called per step) and inflates it back
 *                        in 512-byte output steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static unsigned long n_deflate, n_inflate, n_deflate_init, n_inflate_init, n_deflate_end,
    n_inflate_end;

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	static unsigned char in[64 << 10], packed[80 << 10], out[64 << 10];
	unsigned long check = 0;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)((i * 7) ^ (i >> 5));
	for (int r = 0; r < rounds; r++) {
		z_stream d, f;
		size_t packed_len;
		int rc;

		memset(&d, 0, sizeof(d));
		n_deflate_init++;
		if (deflateInit(&d, 6) != Z_OK)
			return 1;
		d.next_out = packed;
		d.avail_out = sizeof(packed);
		for (size_t off = 0; off < sizeof(in); off += 1024) {
			d.next_in = in + off;
			d.avail_in = 1024;
			n_deflate++;
			rc = deflate(&d, off + 1024 < sizeof(in) ? Z_NO_FLUSH : Z_FINISH);
			if (rc != Z_OK && rc != Z_STREAM_END)
				return 1;
		}
		packed_len = sizeof(packed) - d.avail_out;
		n_deflate_end++;
		deflateEnd(&d);

		memset(&f, 0, sizeof(f));
		n_inflate_init++;
		if (inflateInit(&f) != Z_OK)
			return 1;
		f.next_in = packed;
		f.avail_in = (uInt)packed_len;
		do {
			f.next_out = out + f.total_out;
			f.avail_out = 512;
			n_inflate++;
			rc = inflate(&f, Z_NO_FLUSH);
		} while (rc == Z_OK);
		if (rc != Z_STREAM_END || f.total_out != sizeof(in) || memcmp(in, out, sizeof(in)))
			return 1;
		n_inflate_end++;
		inflateEnd(&f);
		check += packed_len;
	}
	printf("packed %lu bytes\n", check);
	printf("calls deflateInit_=%lu deflate=%lu deflateEnd=%lu inflateInit_=%lu inflate=%lu "
	       "inflateEnd=%lu\n",
	       n_deflate_init, n_deflate, n_deflate_end, n_inflate_init, n_inflate, n_inflate_end);
	return 0;
}
