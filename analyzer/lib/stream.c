/* SPDX-License-Identifier: MIT */
/*
 * stream.c - the dump as a byte stream: the same header and chunks a file
 * holds, parsed as they arrive, in bounded memory.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "stream.h"

enum { S_FILE_HEADER, S_CHUNK_HEADER, S_PAYLOAD, S_FAILED };

void ta_stream_init(struct ta_stream *s, size_t keep_max)
{
	memset(s, 0, sizeof(*s));
	s->keep_max = keep_max < TA_CHUNK_MAX_PAYLOAD ? keep_max : TA_CHUNK_MAX_PAYLOAD;
	s->state = S_FILE_HEADER;
}

void ta_stream_free(struct ta_stream *s)
{
	free(s->payload);
	s->payload = NULL;
	s->payload_cap = 0;
}

static size_t fail(struct ta_stream *s, struct ta_stream_ev *ev, int err, size_t used)
{
	s->state = S_FAILED;
	s->err = err;
	ev->what = TA_STREAM_ERROR;
	ev->err = err;
	ev->offset = s->good;
	return used;
}

/* Takes header bytes into s->hdr until it holds want; returns bytes used. */
static size_t take_header(struct ta_stream *s, const uint8_t *p, size_t n, size_t want)
{
	size_t k = want - s->hdr_len;

	if (k > n)
		k = n;
	memcpy(s->hdr + s->hdr_len, p, k);
	s->hdr_len += k;
	s->offset += k;
	return k;
}

static size_t chunk_header(struct ta_stream *s, struct ta_stream_ev *ev, size_t used)
{
	int err = ta_chunk_header_decode(s->hdr, &s->ch);

	if (err < 0)
		return fail(s, ev, err, used);
	s->hdr_len = 0;
	s->payload_len = 0;
	s->payload_left = s->ch.stored_size;
	s->crc = ta_crc32c(0, s->hdr, 28);
	/* The buffer grows with the chunks kept, up to keep_max: a stream
	 * of small chunks costs little, whatever keep_max allows. */
	if (s->ch.stored_size <= s->keep_max && s->ch.stored_size > s->payload_cap) {
		uint8_t *n = ta_vec_reserve_max(s->payload, s->ch.stored_size, &s->payload_cap, 1,
						4096, s->keep_max);

		if (!n)
			return fail(s, ev, -TA_E_NOMEM, used);
		s->payload = n;
	}
	if (s->ch.stored_size <= s->keep_max && !s->payload) {
		s->payload = malloc(1);
		if (!s->payload)
			return fail(s, ev, -TA_E_NOMEM, used);
	}
	s->state = S_PAYLOAD;
	return used;
}

static size_t chunk_done(struct ta_stream *s, struct ta_stream_ev *ev, size_t used)
{
	if (s->crc != s->ch.crc)
		return fail(s, ev, -TA_E_CHECKSUM, used);
	ev->what = TA_STREAM_CHUNK;
	ev->chunk = s->ch;
	ev->payload = s->ch.stored_size <= s->keep_max ? s->payload : NULL;
	ev->offset = s->good;
	s->good = s->offset;
	s->chunks++;
	s->state = S_CHUNK_HEADER;
	return used;
}

size_t ta_stream_feed(struct ta_stream *s, const uint8_t *p, size_t n, struct ta_stream_ev *ev)
{
	size_t used = 0;

	memset(ev, 0, sizeof(*ev));
	if (s->state == S_FAILED) {
		ev->what = TA_STREAM_ERROR;
		ev->err = s->err;
		ev->offset = s->good;
		return 0;
	}
	for (;;) {
		switch (s->state) {
		case S_FILE_HEADER: {
			int err;

			used += take_header(s, p + used, n - used, TA_FILE_HEADER_SIZE);
			if (s->hdr_len < TA_FILE_HEADER_SIZE)
				return used;
			err = ta_file_header_decode(s->hdr, &ev->file);
			if (err < 0)
				return fail(s, ev, err, used);
			s->hdr_len = 0;
			s->good = s->offset;
			s->state = S_CHUNK_HEADER;
			ev->what = TA_STREAM_HEADER;
			ev->offset = 0;
			return used;
		}
		case S_CHUNK_HEADER:
			if (used == n)
				return used;
			used += take_header(s, p + used, n - used, TA_CHUNK_HEADER_SIZE);
			if (s->hdr_len < TA_CHUNK_HEADER_SIZE)
				return used;
			used = chunk_header(s, ev, used);
			if (s->state == S_FAILED)
				return used;
			break;
		case S_PAYLOAD: {
			size_t k = s->payload_left;

			if (k == 0)
				return chunk_done(s, ev, used);
			if (used == n)
				return used;
			if (k > n - used)
				k = n - used;
			s->crc = ta_crc32c(s->crc, p + used, k);
			if (s->ch.stored_size <= s->keep_max)
				memcpy(s->payload + s->payload_len, p + used, k);
			s->payload_len += k;
			s->payload_left -= (uint32_t)k;
			s->offset += k;
			used += k;
			break;
		}
		default:
			return used;
		}
	}
}

int ta_stream_at_boundary(const struct ta_stream *s)
{
	return s->state == S_CHUNK_HEADER && s->hdr_len == 0;
}
