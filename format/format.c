/* SPDX-License-Identifier: MIT */
/*
 * format.c - checksums, names, file and chunk headers, texts in EXT values
 * and channel lists of the dump format.  The codec is beside it: stack.c
 * (the shadow stack and control flow), encoder.c, decoder.c.  Compiled
 * into both libtraceagent.so and the analyzer; see format.h and FORMAT.md.
 * Nothing here is on the agent's hot path: the flusher calls it.
 */
#include "format.h"

#include <stdlib.h>

#include "arch.h"
#include "crc32c.h"

/* ---- CRC-32C (Castagnoli), slicing by 8 ----------------------------------- */

static uint32_t crc_table[8][256];

/* The table is built on first use.  Two threads may build it at once; both
 * write the same values, and the flag is only set once the table is whole. */
static volatile int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] =
			    (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE); /* pairs with the acquire below */
}

int ta_crc32c_hw(void)
{
#if TA_ARCH_HAS_CRC32C
	return ta_arch_crc32c_hw();
#else
	return 0;
#endif
}

uint32_t ta_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if TA_ARCH_HAS_CRC32C
	if (ta_arch_crc32c_hw())
		return ~ta_arch_crc32c_update(~crc, buf, len);
#endif
	return ta_crc32c_sw(crc, buf, len);
}

uint32_t ta_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ta_get_le32(p);
		uint32_t hi = ta_get_le32(p + 4);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

/* ---- errors and names ----------------------------------------------------- */

const char *ta_strerror(int err)
{
	static const char *const msg[] = {"success",
#define TA_X(name, m) m,
					  TA_ERRORS(TA_X)
#undef TA_X
	};
	if (err < 0)
		err = -err;
	if ((size_t)err >= sizeof(msg) / sizeof(msg[0]))
		return "unknown error";
	return msg[err];
}

const char *ta_signal_name(int sig)
{
	/* Linux's numbers, as on x86-64 and aarch64 (asm-generic). */
	static const char *const names[] = {
	    NULL,	"SIGHUP",  "SIGINT",	"SIGQUIT", "SIGILL",  "SIGTRAP",   "SIGABRT",
	    "SIGBUS",	"SIGFPE",  "SIGKILL",	"SIGUSR1", "SIGSEGV", "SIGUSR2",   "SIGPIPE",
	    "SIGALRM",	"SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP",   "SIGTSTP",
	    "SIGTTIN",	"SIGTTOU", "SIGURG",	"SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
	    "SIGWINCH", "SIGIO",   "SIGPWR",	"SIGSYS"};

	if (sig > 0 && (size_t)sig < sizeof(names) / sizeof(names[0]))
		return names[sig];
	return sig >= 32 && sig <= 64 ? "a real-time signal" : "unknown";
}

const char *ta_chunk_type_name(unsigned type)
{
	switch (type) {
#define TA_X(name, value, str)                                                                     \
	case value:                                                                                \
		return str;
		TA_CHUNK_TYPES(TA_X)
#undef TA_X
	}
	return "unknown";
}

const char *ta_lost_cause_name(unsigned cause)
{
	switch (cause) {
#define TA_X(name, value, str)                                                                     \
	case value:                                                                                \
		return str;
		TA_LOST_CAUSES(TA_X)
#undef TA_X
	}
	return "unknown";
}

/* ---- file and chunk headers -------------------------------------------------- */

void ta_file_header_encode_rec(uint8_t out[TA_FILE_HEADER_SIZE], uint32_t pid, uint32_t recording)
{
	memset(out, 0, TA_FILE_HEADER_SIZE);
	memcpy(out, TA_FILE_MAGIC, TA_FILE_MAGIC_LEN);
	ta_put_le16(out + 8, TA_FORMAT_MAJOR);
	ta_put_le16(out + 10, TA_FORMAT_MINOR);
	ta_put_le32(out + 12, TA_FILE_HEADER_SIZE);
	ta_put_le32(out + 16, pid);
	ta_put_le32(out + 24, recording);
	ta_put_le32(out + 28, ta_crc32c(0, out, 28));
}

void ta_file_header_encode(uint8_t out[TA_FILE_HEADER_SIZE], uint32_t pid)
{
	ta_file_header_encode_rec(out, pid, 0);
}

int ta_file_header_decode(const uint8_t buf[TA_FILE_HEADER_SIZE], struct ta_file_header *h)
{
	if (memcmp(buf, TA_FILE_MAGIC, TA_FILE_MAGIC_LEN) != 0)
		return -TA_E_BADMAGIC;
	h->major = ta_get_le16(buf + 8);
	h->minor = ta_get_le16(buf + 10);
	h->header_size = ta_get_le32(buf + 12);
	h->pid = ta_get_le32(buf + 16);
	h->flags = ta_get_le32(buf + 20);
	h->recording = ta_get_le32(buf + 24);
	if (h->major != TA_FORMAT_MAJOR)
		return -TA_E_VERSION;
	if (ta_crc32c(0, buf, 28) != ta_get_le32(buf + 28))
		return -TA_E_CHECKSUM;
	if (h->header_size != TA_FILE_HEADER_SIZE)
		return -TA_E_HEADER;
	return 0;
}

void ta_chunk_header_encode(uint8_t out[TA_CHUNK_HEADER_SIZE], const struct ta_chunk_header *h,
			    const void *payload)
{
	uint32_t crc;

	ta_put_le32(out, TA_CHUNK_MAGIC);
	ta_put_le16(out + 4, h->type);
	ta_put_le16(out + 6, h->flags);
	ta_put_le32(out + 8, h->stored_size);
	ta_put_le32(out + 12, h->raw_size);
	ta_put_le32(out + 16, h->pid);
	ta_put_le32(out + 20, h->seq);
	ta_put_le32(out + 24, 0);
	crc = ta_crc32c(0, out, 28);
	crc = ta_crc32c(crc, payload, h->stored_size);
	ta_put_le32(out + 28, crc);
}

size_t ta_cut_chunk_encode(uint8_t *out, uint32_t pid, uint32_t seq, uint64_t cause, uint64_t value,
			   const char *text, size_t text_len)
{
	struct ta_chunk_header h = {0};
	uint8_t *p = out + TA_CHUNK_HEADER_SIZE;

	p = ta_varint_put(p, cause);
	p = ta_varint_put(p, value);
	p = ta_varint_put(p, text_len);
	if (text_len)
		memcpy(p, text, text_len);
	p += text_len;
	h.type = TA_CHUNK_CUT;
	h.stored_size = h.raw_size = (uint32_t)(p - out - TA_CHUNK_HEADER_SIZE);
	h.pid = pid;
	h.seq = seq;
	ta_chunk_header_encode(out, &h, out + TA_CHUNK_HEADER_SIZE);
	return (size_t)(p - out);
}

int ta_chunk_header_decode(const uint8_t buf[TA_CHUNK_HEADER_SIZE], struct ta_chunk_header *h)
{
	if (ta_get_le32(buf) != TA_CHUNK_MAGIC)
		return -TA_E_BADMAGIC;
	h->type = ta_get_le16(buf + 4);
	h->flags = ta_get_le16(buf + 6);
	h->stored_size = ta_get_le32(buf + 8);
	h->raw_size = ta_get_le32(buf + 12);
	h->pid = ta_get_le32(buf + 16);
	h->seq = ta_get_le32(buf + 20);
	h->crc = ta_get_le32(buf + 28);
	if (h->stored_size > TA_CHUNK_MAX_PAYLOAD || h->raw_size > TA_CHUNK_MAX_PAYLOAD)
		return -TA_E_TOOBIG;
	if (!(h->flags & TA_CHUNK_F_LZ4) && h->raw_size != h->stored_size)
		return -TA_E_HEADER;
	if (h->flags & ~TA_CHUNK_F_LZ4)
		return -TA_E_HEADER;
	return 0;
}

int ta_chunk_verify(const uint8_t hdr[TA_CHUNK_HEADER_SIZE], const struct ta_chunk_header *h,
		    const void *payload)
{
	uint32_t crc = ta_crc32c(0, hdr, 28);

	crc = ta_crc32c(crc, payload, h->stored_size);
	return crc == h->crc ? 0 : -TA_E_CHECKSUM;
}

/* ---- texts in EXT values ---------------------------------------------------- */

uint32_t ta_text_pack(uint64_t *v, uint64_t site, const char *text, uint32_t len, uint32_t flags)
{
	uint32_t n = TA_TEXT_VALUES(len);

	v[0] = site;
	v[1] = len;
	v[2] = flags;
	for (uint32_t i = 3; i < n; i++)
		v[i] = 0;
	for (uint32_t i = 0; i < len; i++)
		v[3 + i / 8] |= (uint64_t)(uint8_t)text[i] << (8 * (i % 8));
	return n;
}

int ta_text_unpack(const uint64_t *v, uint32_t n, char *out, uint32_t *flags)
{
	uint64_t len;

	out[0] = 0;
	if (n < 3 || v[1] > TA_TEXT_MAX || n < TA_TEXT_VALUES(v[1]))
		return -1;
	len = v[1];
	for (uint64_t i = 0; i < len; i++)
		out[i] = (char)(v[3 + i / 8] >> (8 * (i % 8)));
	out[len] = 0;
	if (flags)
		*flags = (uint32_t)v[2];
	return (int)len;
}

/* ---- channel lists ------------------------------------------------------------ */

int ta_channel_list_has(const char *list, const char *name)
{
	const char *p = list;
	size_t nl = strlen(name);
	int on;

	while (*p == ' ')
		p++;
	if (!*p)
		return 1;
	on = *p == '-' || !strncmp(p, "all", 3);
	while (*p) {
		const char *e = p;
		int neg = 0;
		size_t len;

		while (*e && *e != ',')
			e++;
		while (*p == ' ')
			p++;
		if (*p == '-') {
			neg = 1;
			p++;
		}
		len = (size_t)(e - p);
		while (len && p[len - 1] == ' ')
			len--;
		if ((len == 3 && !strncmp(p, "all", 3)) || (len == nl && !strncmp(p, name, nl)))
			on = !neg;
		p = *e ? e + 1 : e;
	}
	return on;
}
