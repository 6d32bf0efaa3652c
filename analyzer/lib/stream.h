/* SPDX-License-Identifier: MIT */
/*
 * stream.h - a dump read as a byte stream (stream.c): whatever arrives from
 * a socket or the growing end of a file, in pieces of any size, parsed into
 * the file header and whole, verified chunks.
 *
 * It keeps at most keep_max bytes of one chunk's payload (a larger chunk is
 * still checked, by its CRC computed as the bytes pass, but handed over
 * without its payload), so the memory one stream costs is bounded whatever
 * its sender does.  The bytes themselves are the caller's: a collector
 * writes each piece as it is consumed and, on an error, cuts its file back
 * to the end of the last good chunk (ta_stream.good).
 */
#ifndef TA_STREAM_H
#define TA_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

enum ta_stream_what {
	TA_STREAM_MORE = 0,   /* everything given was consumed; send more */
	TA_STREAM_HEADER = 1, /* the file header: ev->file */
	TA_STREAM_CHUNK = 2,  /* a whole chunk whose CRC holds: ev->chunk */
	TA_STREAM_ERROR = 3   /* ev->err (a negative TA_E_ code) at ev->offset;
				 the stream is unusable from there on */
};

struct ta_stream_ev {
	enum ta_stream_what what;
	struct ta_file_header file;
	struct ta_chunk_header chunk;
	/* The chunk's stored payload (LZ4-compressed when chunk.flags says
	 * so), or NULL when it was longer than keep_max. */
	const uint8_t *payload;
	uint64_t offset; /* where the header or chunk began in the stream */
	int err;
};

struct ta_stream {
	int state;
	uint8_t hdr[TA_CHUNK_HEADER_SIZE]; /* the header being read */
	size_t hdr_len;
	struct ta_chunk_header ch;
	uint8_t *payload; /* keep_max bytes at most */
	size_t payload_cap, payload_len;
	uint32_t payload_left; /* stored bytes of the chunk still to come */
	uint32_t crc;	       /* running CRC-32C of header and payload */
	size_t keep_max;
	uint64_t offset; /* bytes consumed */
	uint64_t good;	 /* end of the header or of the last whole chunk */
	uint64_t chunks;
	int err;
};

/* keep_max: payload bytes kept for the caller (at most TA_CHUNK_MAX_PAYLOAD). */
void ta_stream_init(struct ta_stream *s, size_t keep_max);
void ta_stream_free(struct ta_stream *s);
/*
 * Consumes bytes from p[0..n) up to the next thing to report, fills *ev
 * and returns how many bytes it took: call again with the rest.  A chunk's
 * payload pointer stays valid until the next call.  After an error every
 * call returns 0 with the same error.
 */
size_t ta_stream_feed(struct ta_stream *s, const uint8_t *p, size_t n, struct ta_stream_ev *ev);
/* Whether the stream stops between things (after the header or a chunk):
 * a dump cut there is whole, though perhaps without its END. */
int ta_stream_at_boundary(const struct ta_stream *s);

#endif
