/* SPDX-License-Identifier: MIT */
/*
 * dumpfile.c - reading a dump as a stream of verified chunks.
 *
 * The file is read sequentially into a buffer that holds the current chunk
 * and whatever came with the last read; a chunk larger than the buffer
 * grows it, but never beyond one header and TA_CHUNK_MAX_PAYLOAD, since the
 * sizes are checked before anything is allocated for them.
 */
#define _GNU_SOURCE
#include "dumpfile.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_BUF_MIN	(1u << 20)
#define CHUNK_MAX_TOTAL ((size_t)TA_CHUNK_HEADER_SIZE + TA_CHUNK_MAX_PAYLOAD)

struct ta_dumpfile {
	int fd;			 /* -1 when reading from memory */
	const uint8_t *mem;	 /* ta_dumpfile_memopen: the dump, not owned */
	size_t mem_len, mem_off; /* its size, and how much was taken */
	int eof;		 /* read() said end of file */
	int dead;		 /* an I/O or memory error ended the stream */
	uint8_t *buf;
	size_t cap;
	size_t pos, end; /* unread bytes are buf[pos..end) */
	uint64_t base;	 /* file offset of buf[0] */
	uint8_t *raw;	 /* decompressed payload */
	size_t raw_cap;
	uint64_t index; /* of the next chunk */
	struct ta_file_header fh;
};

/* read() for a dump in memory: the same short reads, the same buffer
 * handling, so the fuzzer exercises the code files go through. */
static ssize_t source_read(struct ta_dumpfile *d, void *buf, size_t n)
{
	if (!d->mem)
		return read(d->fd, buf, n);
	if (n > d->mem_len - d->mem_off)
		n = d->mem_len - d->mem_off;
	memcpy(buf, d->mem + d->mem_off, n);
	d->mem_off += n;
	return (ssize_t)n;
}

/*
 * Makes n bytes from pos available (n <= CHUNK_MAX_TOTAL).  Returns how many
 * are (fewer than n only at the end of the file), or a negative code.
 */
static ssize_t ensure(struct ta_dumpfile *d, size_t n)
{
	if (d->end - d->pos >= n)
		return (ssize_t)n;
	if (d->pos + n > d->cap) {
		/* Slide the unread bytes to the front; grow if that is not
		 * enough room. */
		memmove(d->buf, d->buf + d->pos, d->end - d->pos);
		d->base += d->pos;
		d->end -= d->pos;
		d->pos = 0;
		if (n > d->cap) {
			size_t cap = d->cap * 2;
			uint8_t *b;

			if (cap < n)
				cap = n;
			if (cap > CHUNK_MAX_TOTAL + READ_BUF_MIN)
				cap = CHUNK_MAX_TOTAL + READ_BUF_MIN;
			b = realloc(d->buf, cap);
			if (!b) {
				d->dead = 1;
				return -TA_E_NOMEM;
			}
			d->buf = b;
			d->cap = cap;
		}
	}
	while (d->end - d->pos < n && !d->eof) {
		ssize_t r = source_read(d, d->buf + d->end, d->cap - d->end);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			d->dead = 1;
			return -TA_E_IO;
		}
		if (r == 0)
			d->eof = 1;
		d->end += (size_t)r;
	}
	return (ssize_t)(d->end - d->pos < n ? d->end - d->pos : n);
}

static uint64_t here(const struct ta_dumpfile *d)
{
	return d->base + d->pos;
}

/*
 * Is there a whole chunk with a valid CRC at pos?  1 yes, 0 no, or a
 * negative code.
 */
static int chunk_at(struct ta_dumpfile *d)
{
	struct ta_chunk_header h;
	ssize_t n = ensure(d, TA_CHUNK_HEADER_SIZE);

	if (n < 0)
		return (int)n;
	if (n < TA_CHUNK_HEADER_SIZE || ta_chunk_header_decode(d->buf + d->pos, &h) < 0)
		return 0;
	n = ensure(d, TA_CHUNK_HEADER_SIZE + (size_t)h.stored_size);
	if (n < 0)
		return (int)n;
	if ((size_t)n < TA_CHUNK_HEADER_SIZE + (size_t)h.stored_size)
		return 0;
	return ta_chunk_verify(d->buf + d->pos, &h, d->buf + d->pos + TA_CHUNK_HEADER_SIZE) == 0;
}

/*
 * Scans forward from just after the damaged chunk at pos for the next
 * offset where a whole chunk with a valid CRC begins; leaves pos there or
 * at the end of the file.  Returns 1 if found, 0 if not, or a negative code.
 * Every step either moves pos forward or reads more of the file, so this
 * ends; a candidate costs at most one CRC over one chunk's maximum size.
 */
static int resync(struct ta_dumpfile *d)
{
	static const uint8_t magic[4] = {0x54, 0x41, 0x63, 0x68}; /* TA_CHUNK_MAGIC */

	d->pos++;
	for (;;) {
		ssize_t n = ensure(d, 4);
		const uint8_t *m;
		int rc;

		if (n < 0)
			return (int)n;
		if (n < 4) {
			d->pos = d->end;
			return 0;
		}
		m = memmem(d->buf + d->pos, d->end - d->pos, magic, 4);
		if (!m) {
			/* Keep the last 3 bytes: the magic may straddle reads. */
			d->pos = d->end - 3;
			if (d->eof) {
				d->pos = d->end;
				return 0;
			}
			continue;
		}
		d->pos = (size_t)(m - d->buf);
		rc = chunk_at(d);
		if (rc != 0)
			return rc;
		d->pos++;
	}
}

/*
 * Reports the damaged chunk at pos and moves on to the next good one;
 * code_last is the reason when no good chunk follows.
 */
static int damaged(struct ta_dumpfile *d, struct ta_chunk *c, int code, int code_last)
{
	uint64_t start = here(d);
	int rc = resync(d);

	c->offset = start;
	c->skipped = here(d) - start;
	if (rc < 0)
		return rc;
	return rc ? code : code_last;
}

/* Allocates a read buffer of cap bytes and checks the file header; frees
 * d on failure. */
static int dump_start(struct ta_dumpfile *d, size_t cap, struct ta_dumpfile **out)
{
	ssize_t n;
	int rc;

	d->cap = cap;
	d->buf = malloc(d->cap);
	if (!d->buf) {
		ta_dumpfile_close(d);
		return -TA_E_NOMEM;
	}
	n = ensure(d, TA_FILE_HEADER_SIZE);
	if (n < 0) {
		int e = errno;

		ta_dumpfile_close(d);
		errno = e;
		return (int)n;
	}
	if (n < TA_FILE_HEADER_SIZE) {
		size_t k = (size_t)n < TA_FILE_MAGIC_LEN ? (size_t)n : TA_FILE_MAGIC_LEN;

		rc = memcmp(d->buf, TA_FILE_MAGIC, k) ? -TA_E_BADMAGIC : -TA_E_TRUNCATED;
		ta_dumpfile_close(d);
		return rc;
	}
	rc = ta_file_header_decode(d->buf, &d->fh);
	if (rc < 0) {
		ta_dumpfile_close(d);
		return rc;
	}
	d->pos = TA_FILE_HEADER_SIZE;
	*out = d;
	return 0;
}

int ta_dumpfile_fdopen(int fd, struct ta_dumpfile **out)
{
	struct ta_dumpfile *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d) {
		close(fd);
		return -TA_E_NOMEM;
	}
	d->fd = fd;
	return dump_start(d, READ_BUF_MIN, out);
}

int ta_dumpfile_memopen(const void *data, size_t len, struct ta_dumpfile **out)
{
	struct ta_dumpfile *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -TA_E_NOMEM;
	d->fd = -1;
	/* A non-NULL pointer marks the memory source, even for 0 bytes. */
	d->mem = len ? data : (const uint8_t *)"";
	d->mem_len = len;
	/* No more buffer than the dump needs (the fuzzer reads many small
	 * ones); it grows as for a file if a chunk needs more. */
	return dump_start(d, len < 64 ? 64 : len < READ_BUF_MIN ? len : READ_BUF_MIN, out);
}

int ta_dumpfile_open(const char *path, struct ta_dumpfile **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return -TA_E_IO;
	return ta_dumpfile_fdopen(fd, out);
}

const struct ta_file_header *ta_dumpfile_header(const struct ta_dumpfile *d)
{
	return &d->fh;
}

uint64_t ta_dumpfile_offset(const struct ta_dumpfile *d)
{
	return here(d);
}

/* The next chunk with its payload as stored (c->payload into the read
 * buffer); ta_dumpfile_next and ta_dumpfile_next_stored share it. */
static int next_stored(struct ta_dumpfile *d, struct ta_chunk *c)
{
	size_t total;
	ssize_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	if (d->dead)
		return 0;
	n = ensure(d, TA_CHUNK_HEADER_SIZE);
	if (n <= 0)
		return (int)n;
	c->index = d->index++;
	c->offset = here(d);
	if (n < TA_CHUNK_HEADER_SIZE) {
		d->pos = d->end;
		c->skipped = (uint64_t)n;
		return -TA_E_TRUNCATED;
	}
	rc = ta_chunk_header_decode(d->buf + d->pos, &c->h);
	if (rc < 0)
		return damaged(d, c, rc, rc);
	total = TA_CHUNK_HEADER_SIZE + (size_t)c->h.stored_size;
	n = ensure(d, total);
	if (n < 0)
		return (int)n;
	if ((size_t)n < total) {
		/* Cut short, unless a good chunk follows: then it was the
		 * size that was wrong. */
		return damaged(d, c, -TA_E_TOOBIG, -TA_E_TRUNCATED);
	}
	if (ta_chunk_verify(d->buf + d->pos, &c->h, d->buf + d->pos + TA_CHUNK_HEADER_SIZE) < 0)
		return damaged(d, c, -TA_E_CHECKSUM, -TA_E_CHECKSUM);
	/* From here the chunk's extent is trusted: a bad payload skips just
	 * this chunk. */
	c->payload = d->buf + d->pos + TA_CHUNK_HEADER_SIZE;
	c->len = c->h.stored_size;
	d->pos += total;
	return 1;
}

int ta_dumpfile_next_stored(struct ta_dumpfile *d, struct ta_chunk *c)
{
	return next_stored(d, c);
}

int ta_chunk_decompress(struct ta_chunk *c, uint8_t **buf, size_t *cap)
{
	if (!(c->h.flags & TA_CHUNK_F_LZ4))
		return 0;
	if (c->h.raw_size > *cap) {
		uint8_t *b = realloc(*buf, c->h.raw_size);

		if (!b)
			return -TA_E_NOMEM;
		*buf = b;
		*cap = c->h.raw_size;
	}
	/* The bound is the raw size and the result must be exactly it. */
	if (LZ4_decompress_safe((const char *)c->payload, (char *)*buf, (int)c->h.stored_size,
				(int)c->h.raw_size) != (int)c->h.raw_size) {
		c->skipped = TA_CHUNK_HEADER_SIZE + (uint64_t)c->h.stored_size;
		return -TA_E_DECOMPRESS;
	}
	c->payload = *buf;
	c->len = c->h.raw_size;
	return 0;
}

int ta_dumpfile_next(struct ta_dumpfile *d, struct ta_chunk *c)
{
	int rc = next_stored(d, c);

	if (rc <= 0)
		return rc;
	rc = ta_chunk_decompress(c, &d->raw, &d->raw_cap);
	if (rc == -TA_E_NOMEM)
		d->dead = 1;
	return rc < 0 ? rc : 1;
}

void ta_dumpfile_close(struct ta_dumpfile *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	free(d->buf);
	free(d->raw);
	free(d);
}
