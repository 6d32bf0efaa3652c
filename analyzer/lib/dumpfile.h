/* SPDX-License-Identifier: MIT */
/*
 * dumpfile.h - reading a dump as a stream of verified chunks.
 *
 * The reader never holds more than one chunk (at most TA_CHUNK_MAX_PAYLOAD
 * stored and as much raw) plus a read buffer, whatever the size of the file.
 * Every chunk it returns has a valid header and CRC and, for LZ4 chunks, a
 * payload that decompressed to exactly the recorded raw size.
 *
 * Damage is reported one chunk at a time: ta_dumpfile_next returns a negative
 * TA_E_* code and describes where in the struct ta_chunk it was given, having
 * already moved on to the next offset where a whole chunk with a valid CRC
 * begins (or to the end of the file), so the caller just calls it again.
 */
#ifndef TA_DUMPFILE_H
#define TA_DUMPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct ta_dumpfile;

struct ta_chunk {
	struct ta_chunk_header h;
	uint64_t index;	 /* position among the chunks found in the file, from 0 */
	uint64_t offset; /* file offset of the chunk header */
	/* The raw payload (decompressed if it was LZ4): owned by the reader,
	 * valid until the next call of ta_dumpfile_next. */
	const uint8_t *payload;
	size_t len;
	/* After an error: bytes from offset to where reading resumes (the next
	 * whole chunk with a valid CRC, or the end of the file). */
	uint64_t skipped;
};

/*
 * Opens the dump at path and checks its file header.  Returns 0 and sets
 * *out, or a negative TA_E_* code (*out is then NULL): -TA_E_IO when the
 * file cannot be opened or read (errno tells why), -TA_E_NOMEM, or what is
 * wrong with the file header (TA_E_TRUNCATED when the file is shorter than
 * a header that starts right).
 */
int ta_dumpfile_open(const char *path, struct ta_dumpfile **out);

/* The same on an open descriptor, which the reader then owns. */
int ta_dumpfile_fdopen(int fd, struct ta_dumpfile **out);

/*
 * The same on a dump held in memory (data, len), which must stay valid and
 * unchanged until ta_dumpfile_close: for tests and the fuzzer, which must not
 * touch files.  Read through the same buffer as a file.
 */
int ta_dumpfile_memopen(const void *data, size_t len, struct ta_dumpfile **out);

/* The file header (valid after a successful open). */
const struct ta_file_header *ta_dumpfile_header(const struct ta_dumpfile *d);

/*
 * Reads the next chunk.  Returns 1 with *c filled, 0 at the end of the file,
 * or a negative TA_E_* code with c->index, c->offset and c->skipped saying
 * which chunk was bad and how much was skipped; reading can go on after any
 * error except -TA_E_IO and -TA_E_NOMEM, which end the stream.
 *  - TA_E_TRUNCATED: the file ends inside this chunk (nothing follows);
 *  - TA_E_BADMAGIC, TA_E_HEADER, TA_E_TOOBIG: the chunk header is damaged
 *    (TOOBIG also when its size runs past the end of the file while a valid
 *    chunk still follows);
 *  - TA_E_CHECKSUM: header or payload damaged;
 *  - TA_E_DECOMPRESS: the CRC matched but the LZ4 block is bad.
 */
int ta_dumpfile_next(struct ta_dumpfile *d, struct ta_chunk *c);

/* As ta_dumpfile_next, but an LZ4 chunk's payload stays as stored (c->payload
 * and c->len the stored bytes, valid until the next call): the parallel
 * reader decompresses it in a worker with ta_chunk_decompress. */
int ta_dumpfile_next_stored(struct ta_dumpfile *d, struct ta_chunk *c);

/* Decompresses an LZ4 chunk that ta_dumpfile_next_stored returned (nothing to
 * do for another) into *buf (grown as needed; *cap its size, the caller
 * owns it) and points c->payload and c->len at the result.  0, or
 * -TA_E_DECOMPRESS (c->skipped set as ta_dumpfile_next does) or -TA_E_NOMEM. */
int ta_chunk_decompress(struct ta_chunk *c, uint8_t **buf, size_t *cap);

/* Bytes of the file consumed so far (the offset of the next chunk). */
uint64_t ta_dumpfile_offset(const struct ta_dumpfile *d);

void ta_dumpfile_close(struct ta_dumpfile *d);

#endif /* TA_DUMPFILE_H */
