/* SPDX-License-Identifier: MIT */
/*
 * tadumpread.c - a dump's chunks as JSON lines, read by format's chunk
 * reader (format/chunkread.h): the Python tests' only way into a dump
 * (tests/e2e/tahelp.py, tadump.py), so that they check what the analyzer
 * reads, not a reader of their own.
 *
 * Usage: tadumpread [--payload] [--records] DUMP
 * Prints one line for the file header, {"header": {...}}, then one per
 * chunk in file order:
 *   {"chunk": index, "offset": o, "type": t, "flags": f, "stored": s,
 *    "raw": r, "pid": p, "seq": q}
 * with, given --payload, "payload": the raw payload in hex; given
 * --records, the records of the chunks the tests look into:
 *   SITES     "sites": [[addr, kind, channel, name, file, line], ...]
 *   CHANNELS  "channels": [[id, name, on], ...]
 *   EVENTS    "tid": tid, "events": [[ticks, kind, addr, ext, [values]], ...]
 *             (kind 1 enter, 0 exit, 3 EXT; addr the function entered or
 *             exited, 0 for EXT; ext the subtype and its values)
 * A damaged chunk, or a payload whose records do not decode, is a line
 *   {"error": message, "code": -TA_E_*, "chunk": index, "offset": o,
 *    "skipped": bytes}
 * and reading goes on as the analyzer's does.  Strings are JSON strings
 * whose bytes 0x80-0xff are written \u0080-\u00ff (one code point a byte).
 * Exit status: 0, 1 when a chunk was damaged, 2 when the file cannot be
 * read as a dump (the reason on stderr, naming the file and the offset).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkread.h"
#include "format.h"

static void json_bytes(const uint8_t *s, uint64_t n)
{
	putchar('"');
	for (uint64_t i = 0; i < n; i++) {
		uint8_t c = s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void error_line(int code, const struct ta_chunk *c)
{
	printf("{\"error\": ");
	json_bytes((const uint8_t *)ta_strerror(code), strlen(ta_strerror(code)));
	printf(", \"code\": %d, \"chunk\": %" PRIu64 ", \"offset\": %" PRIu64
	       ", \"skipped\": %" PRIu64 "}\n",
	       code, c->index, c->offset, c->skipped);
}

/* SITES: u count, then addr, kind, channel, str name, str file, u line. */
static int sites(struct ta_reader *r)
{
	uint64_t n, v[3], line, nlen, flen;
	const uint8_t *name, *file;

	if (ta_get_varint(r, &n) < 0)
		return -TA_E_PAYLOAD;
	printf(", \"sites\": [");
	for (uint64_t i = 0; i < n; i++) {
		if (ta_get_varint(r, &v[0]) < 0 || ta_get_varint(r, &v[1]) < 0 ||
		    ta_get_varint(r, &v[2]) < 0 || ta_get_bytes(r, &name, &nlen) < 0 ||
		    ta_get_bytes(r, &file, &flen) < 0 || ta_get_varint(r, &line) < 0)
			return -TA_E_PAYLOAD;
		printf("%s[%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", ", i ? ", " : "", v[0], v[1],
		       v[2]);
		json_bytes(name, nlen);
		printf(", ");
		json_bytes(file, flen);
		printf(", %" PRIu64 "]", line);
	}
	printf("]");
	return 0;
}

/* CHANNELS: u count, then id, str name, u on. */
static int channels(struct ta_reader *r)
{
	uint64_t n, id, on, len;
	const uint8_t *name;

	if (ta_get_varint(r, &n) < 0)
		return -TA_E_PAYLOAD;
	printf(", \"channels\": [");
	for (uint64_t i = 0; i < n; i++) {
		if (ta_get_varint(r, &id) < 0 || ta_get_bytes(r, &name, &len) < 0 ||
		    ta_get_varint(r, &on) < 0)
			return -TA_E_PAYLOAD;
		printf("%s[%" PRIu64 ", ", i ? ", " : "", id);
		json_bytes(name, len);
		printf(", %" PRIu64 "]", on);
	}
	printf("]");
	return 0;
}

static int events(const struct ta_chunk *c)
{
	struct ta_decoder dec;
	struct ta_event ev;
	int rc, first = 1;

	ta_decoder_init(&dec);
	rc = ta_decoder_begin(&dec, c->payload, c->len);
	if (rc == 0) {
		printf(", \"tid\": %" PRIu64 ", \"events\": [", dec.tid);
		while ((rc = ta_decoder_next(&dec, &ev)) == 1) {
			printf("%s[%" PRIu64 ", %u, %" PRIu64 ", %" PRIu64 ", [", first ? "" : ", ",
			       ev.ticks, ev.kind, ev.kind == TA_EV_EXT ? 0 : ev.addr,
			       ev.kind == TA_EV_EXT ? ev.ext : 0);
			if (ev.kind == TA_EV_EXT && ev.ext == TA_EXT_LOST)
				printf("%" PRIu64, ev.value);
			else if (ev.kind == TA_EV_EXT)
				for (uint64_t i = 0; i < ev.value; i++)
					printf("%s%" PRIu64, i ? ", " : "", dec.ext_values[i]);
			printf("]]");
			first = 0;
		}
		printf("]");
	}
	ta_decoder_free(&dec);
	return rc;
}

int main(int argc, char **argv)
{
	int payload = 0, records = 0, damaged = 0, rc;
	const struct ta_file_header *fh;
	struct ta_dumpfile *d;
	struct ta_chunk c;
	const char *path;
	int i;

	for (i = 1; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--payload"))
			payload = 1;
		else if (!strcmp(argv[i], "--records"))
			records = 1;
		else
			break;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: tadumpread [--payload] [--records] DUMP\n");
		return 2;
	}
	path = argv[i];
	rc = ta_dumpfile_open(path, &d);
	if (rc < 0) {
		fprintf(stderr, "tadumpread: %s: file header at offset 0: %s\n", path,
			rc == -TA_E_IO ? strerror(errno) : ta_strerror(rc));
		return 2;
	}
	fh = ta_dumpfile_header(d);
	printf("{\"header\": {\"major\": %u, \"minor\": %u, \"pid\": %u, \"flags\": %u, "
	       "\"recording\": %u}}\n",
	       fh->major, fh->minor, fh->pid, fh->flags, fh->recording);
	while ((rc = ta_dumpfile_next(d, &c)) != 0) {
		struct ta_reader r;

		if (rc == -TA_E_IO || rc == -TA_E_NOMEM) {
			fprintf(stderr, "tadumpread: %s: at offset %" PRIu64 ": %s\n", path,
				ta_dumpfile_offset(d),
				rc == -TA_E_IO ? strerror(errno) : ta_strerror(rc));
			ta_dumpfile_close(d);
			return 2;
		}
		if (rc < 0) {
			error_line(rc, &c);
			damaged = 1;
			continue;
		}
		printf("{\"chunk\": %" PRIu64 ", \"offset\": %" PRIu64 ", \"type\": %u, "
		       "\"flags\": %u, \"stored\": %u, \"raw\": %u, \"pid\": %u, \"seq\": %u",
		       c.index, c.offset, c.h.type, c.h.flags, c.h.stored_size, c.h.raw_size,
		       c.h.pid, c.h.seq);
		if (payload) {
			printf(", \"payload\": \"");
			for (size_t k = 0; k < c.len; k++)
				printf("%02x", c.payload[k]);
			putchar('"');
		}
		rc = 0;
		ta_reader_init(&r, c.payload, c.len);
		if (records && c.h.type == TA_CHUNK_SITES)
			rc = sites(&r);
		else if (records && c.h.type == TA_CHUNK_CHANNELS)
			rc = channels(&r);
		else if (records && c.h.type == TA_CHUNK_EVENTS)
			rc = events(&c);
		printf("}\n");
		if (rc < 0) {
			error_line(rc, &c);
			damaged = 1;
		}
	}
	ta_dumpfile_close(d);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "tadumpread: standard output: %s\n", strerror(errno));
		return 2;
	}
	return damaged;
}
