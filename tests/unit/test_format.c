/* SPDX-License-Identifier: MIT */
/*
 * test_format.c - the dump format codec (format/format.[ch]): varints,
 * zigzag, CRC-32C, file and chunk headers, the shadow-stack rule and the
 * event encoder/decoder, including a seeded fuzz of the decoder.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "slots.h"
#include "testutil.h"

/* ---- varints and zigzag ------------------------------------------------------ */

static uint64_t varint_roundtrip(uint64_t v, size_t *len)
{
	uint8_t buf[TA_VARINT_MAX + 4];
	struct ta_reader r;
	uint64_t out = 12345;

	memset(buf, 0xee, sizeof(buf));
	*len = (size_t)(ta_varint_put(buf, v) - buf);
	ta_reader_init(&r, buf, *len);
	REQUIRE(ta_get_varint(&r, &out) == 0 && r.p == r.end, "varint %llu", (unsigned long long)v);
	return out;
}

START_TEST(varint_edges)
{
	static const struct {
		uint64_t v;
		size_t len;
	} cases[] = {
	    {0, 1},
	    {1, 1},
	    {127, 1},
	    {128, 2},
	    {16383, 2},
	    {16384, 3},
	    {(1ull << 35) - 1, 5},
	    {1ull << 35, 6},
	    {(1ull << 63) - 1, 9},
	    {1ull << 63, 10},
	    {UINT64_MAX, 10},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;

		ck_assert_uint_eq(varint_roundtrip(cases[i].v, &len), cases[i].v);
		ck_assert_uint_eq(len, cases[i].len);
	}
}
END_TEST

START_TEST(varint_random)
{
	struct rng r = {test_seed("varint_random")};

	for (int i = 0; i < 100000; i++) {
		/* Spread over all lengths: a random value shifted right. */
		uint64_t v = rng_next(&r) >> rng_below(&r, 64);
		size_t len;

		REQUIRE(varint_roundtrip(v, &len) == v, "value %llu", (unsigned long long)v);
	}
}
END_TEST

START_TEST(varint_malformed)
{
	/* Cut short. */
	static const uint8_t cut[] = {0x80, 0x80};
	/* 11 bytes. */
	static const uint8_t longer[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x00};
	/* 10th byte carries more than the 64th bit. */
	static const uint8_t wide[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	struct ta_reader r;
	uint64_t v;

	ta_reader_init(&r, cut, sizeof(cut));
	ck_assert_int_eq(ta_get_varint(&r, &v), -1);
	ck_assert_int_eq(r.err, 1);
	/* Once failed, always failed. */
	ta_reader_init(&r, cut, 0);
	ck_assert_int_eq(ta_get_varint(&r, &v), -1);
	ta_reader_init(&r, longer, sizeof(longer));
	ck_assert_int_eq(ta_get_varint(&r, &v), -1);
	ta_reader_init(&r, wide, sizeof(wide));
	ck_assert_int_eq(ta_get_varint(&r, &v), -1);
}
END_TEST

START_TEST(zigzag_values)
{
	ck_assert_uint_eq(ta_zigzag(0), 0);
	ck_assert_uint_eq(ta_zigzag(-1), 1);
	ck_assert_uint_eq(ta_zigzag(1), 2);
	ck_assert_uint_eq(ta_zigzag(-2), 3);
	ck_assert_uint_eq(ta_zigzag(INT64_MAX), UINT64_MAX - 1);
	ck_assert_uint_eq(ta_zigzag(INT64_MIN), UINT64_MAX);
	ck_assert_int_eq(ta_unzigzag(UINT64_MAX), INT64_MIN);
	ck_assert_int_eq(ta_unzigzag(UINT64_MAX - 1), INT64_MAX);
}
END_TEST

START_TEST(zigzag_random)
{
	struct rng r = {test_seed("zigzag_random")};

	for (int i = 0; i < 100000; i++) {
		int64_t v = (int64_t)(rng_next(&r) >> rng_below(&r, 64));

		if (i & 1)
			v = -v;
		REQUIRE(ta_unzigzag(ta_zigzag(v)) == v, "value %lld", (long long)v);
		/* Small magnitudes give small codes: that is the point. */
		if (v > -64 && v < 64)
			REQUIRE(ta_zigzag(v) < 128, "value %lld", (long long)v);
	}
}
END_TEST

START_TEST(get_bytes_bounds)
{
	static const uint8_t ok[] = {3, 'a', 'b', 'c'};
	static const uint8_t liar[] = {4, 'a', 'b', 'c'};
	struct ta_reader r;
	const uint8_t *s;
	uint64_t len;

	ta_reader_init(&r, ok, sizeof(ok));
	ck_assert_int_eq(ta_get_bytes(&r, &s, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(memcmp(s, "abc", 3), 0);
	ta_reader_init(&r, liar, sizeof(liar));
	ck_assert_int_eq(ta_get_bytes(&r, &s, &len), -1);
	ck_assert_ptr_null(s);
}
END_TEST

/* ---- CRC ----------------------------------------------------------------------- */

START_TEST(crc32c_vector)
{
	ck_assert_uint_eq(ta_crc32c(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(ta_crc32c(0, "", 0), 0);
	/* Continued over pieces = over the whole. */
	ck_assert_uint_eq(ta_crc32c(ta_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}
END_TEST

START_TEST(crc32c_split_random)
{
	struct rng r = {test_seed("crc32c_split_random")};
	uint8_t buf[1000];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rng_next(&r);
	for (int i = 0; i < 1000; i++) {
		size_t len = rng_below(&r, sizeof(buf) + 1);
		size_t cut = rng_below(&r, len + 1);
		uint32_t whole = ta_crc32c(0, buf, len);

		/* The slicing-by-8 path and the byte path must agree. */
		REQUIRE(ta_crc32c(ta_crc32c(0, buf, cut), buf + cut, len - cut) == whole,
			"len %zu cut %zu", len, cut);
		if (len) {
			buf[cut % len] ^= 1;
			REQUIRE(ta_crc32c(0, buf, len) != whole, "len %zu", len);
			buf[cut % len] ^= 1;
		}
	}
}
END_TEST

START_TEST(crc32c_instruction)
{
	/* Where the CPU has SSE 4.2 its crc32 instruction is used, and gives
	 * what the tables give, at any length and alignment. */
	struct rng r = {test_seed("crc32c_instruction")};
	uint8_t buf[300];

#if defined(__x86_64__)
	__builtin_cpu_init();
	ck_assert_int_eq(ta_crc32c_hw(), __builtin_cpu_supports("sse4.2") ? 1 : 0);
#else
	ck_assert_int_eq(ta_crc32c_hw(), 0);
#endif
	ck_assert_uint_eq(ta_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rng_next(&r);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += 1 + len / 8) {
			uint32_t seed = (uint32_t)rng_next(&r);

			REQUIRE(ta_crc32c(seed, buf + off, len) ==
				    ta_crc32c_sw(seed, buf + off, len),
				"off %zu len %zu", off, len);
		}
}
END_TEST

/* ---- headers -------------------------------------------------------------------- */

START_TEST(file_header_roundtrip)
{
	uint8_t b[TA_FILE_HEADER_SIZE];
	struct ta_file_header h;

	ta_file_header_encode(b, 4242);
	ck_assert_int_eq(memcmp(b, "TRACEAGT", 8), 0);
	ck_assert_int_eq(ta_file_header_decode(b, &h), 0);
	ck_assert_uint_eq(h.major, TA_FORMAT_MAJOR);
	ck_assert_uint_eq(h.minor, TA_FORMAT_MINOR);
	ck_assert_uint_eq(h.header_size, TA_FILE_HEADER_SIZE);
	ck_assert_uint_eq(h.pid, 4242);
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.recording, 0);
	/* 1.8: the recording's id in bytes 24..27, under the CRC. */
	ta_file_header_encode_rec(b, 4242, 0xdeadbeefu);
	ck_assert_int_eq(ta_file_header_decode(b, &h), 0);
	ck_assert_uint_eq(h.recording, 0xdeadbeefu);
	ck_assert_uint_eq(h.pid, 4242);
	b[25] ^= 1;
	ck_assert_int_eq(ta_file_header_decode(b, &h), -TA_E_CHECKSUM);
}
END_TEST

START_TEST(file_header_damage)
{
	uint8_t b[TA_FILE_HEADER_SIZE], d[TA_FILE_HEADER_SIZE];
	struct ta_file_header h;

	ta_file_header_encode(b, 7);
	/* Any single flipped bit is caught, by the magic or the CRC. */
	for (size_t i = 0; i < sizeof(b) * 8; i++) {
		int rc;

		memcpy(d, b, sizeof(b));
		d[i / 8] ^= (uint8_t)(1u << (i % 8));
		rc = ta_file_header_decode(d, &h);
		if (i / 8 < 8)
			ck_assert_int_eq(rc, -TA_E_BADMAGIC);
		else if (i / 8 == 8 || i / 8 == 9)
			ck_assert_int_eq(rc, -TA_E_VERSION); /* major is checked first */
		else
			ck_assert_int_eq(rc, -TA_E_CHECKSUM);
	}
	/* Another major, properly checksummed. */
	memcpy(d, b, sizeof(b));
	ta_put_le16(d + 8, TA_FORMAT_MAJOR + 1);
	ta_put_le32(d + 28, ta_crc32c(0, d, 28));
	ck_assert_int_eq(ta_file_header_decode(d, &h), -TA_E_VERSION);
	/* A newer minor is fine. */
	memcpy(d, b, sizeof(b));
	ta_put_le16(d + 10, TA_FORMAT_MINOR + 3);
	ta_put_le32(d + 28, ta_crc32c(0, d, 28));
	ck_assert_int_eq(ta_file_header_decode(d, &h), 0);
	ck_assert_uint_eq(h.minor, TA_FORMAT_MINOR + 3);
	/* A header size this version does not know. */
	memcpy(d, b, sizeof(b));
	ta_put_le32(d + 12, 48);
	ta_put_le32(d + 28, ta_crc32c(0, d, 28));
	ck_assert_int_eq(ta_file_header_decode(d, &h), -TA_E_HEADER);
}
END_TEST

static void chunk_make(uint8_t hdr[TA_CHUNK_HEADER_SIZE], const uint8_t *payload, size_t len)
{
	struct ta_chunk_header h = {.type = TA_CHUNK_CLOCK,
				    .stored_size = (uint32_t)len,
				    .raw_size = (uint32_t)len,
				    .pid = 99,
				    .seq = 5};

	ta_chunk_header_encode(hdr, &h, payload);
}

START_TEST(chunk_header_roundtrip)
{
	uint8_t hdr[TA_CHUNK_HEADER_SIZE], payload[] = "payload bytes";
	struct ta_chunk_header h;

	chunk_make(hdr, payload, sizeof(payload));
	ck_assert_uint_eq(ta_get_le32(hdr), TA_CHUNK_MAGIC);
	ck_assert_int_eq(memcmp(hdr, "TAch", 4), 0);
	ck_assert_int_eq(ta_chunk_header_decode(hdr, &h), 0);
	ck_assert_uint_eq(h.type, TA_CHUNK_CLOCK);
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.stored_size, sizeof(payload));
	ck_assert_uint_eq(h.raw_size, sizeof(payload));
	ck_assert_uint_eq(h.pid, 99);
	ck_assert_uint_eq(h.seq, 5);
	ck_assert_uint_eq(ta_get_le32(hdr + 24), 0);
	ck_assert_int_eq(ta_chunk_verify(hdr, &h, payload), 0);
}
END_TEST

START_TEST(chunk_header_damage)
{
	uint8_t hdr[TA_CHUNK_HEADER_SIZE], d[TA_CHUNK_HEADER_SIZE], payload[] = "payload bytes";
	struct ta_chunk_header h;

	chunk_make(hdr, payload, sizeof(payload));
	/* Every flipped payload bit fails the CRC. */
	for (size_t i = 0; i < sizeof(payload) * 8; i++) {
		ck_assert_int_eq(ta_chunk_header_decode(hdr, &h), 0);
		payload[i / 8] ^= (uint8_t)(1u << (i % 8));
		ck_assert_int_eq(ta_chunk_verify(hdr, &h, payload), -TA_E_CHECKSUM);
		payload[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	/* Every flipped header bit fails the magic, the sizes or the CRC. */
	for (size_t i = 0; i < 28 * 8; i++) {
		memcpy(d, hdr, sizeof(d));
		d[i / 8] ^= (uint8_t)(1u << (i % 8));
		if (ta_chunk_header_decode(d, &h) == 0)
			ck_assert_int_eq(ta_chunk_verify(d, &h, payload), -TA_E_CHECKSUM);
	}
	memcpy(d, hdr, sizeof(d));
	d[0] ^= 1;
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), -TA_E_BADMAGIC);
	/* Sizes beyond the maximum are refused before anything reads them. */
	memcpy(d, hdr, sizeof(d));
	ta_put_le32(d + 8, TA_CHUNK_MAX_PAYLOAD + 1);
	ta_put_le32(d + 12, TA_CHUNK_MAX_PAYLOAD + 1);
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), -TA_E_TOOBIG);
	memcpy(d, hdr, sizeof(d));
	ta_put_le16(d + 6, TA_CHUNK_F_LZ4);
	ta_put_le32(d + 12, UINT32_MAX);
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), -TA_E_TOOBIG);
	/* The maximum itself is fine. */
	ta_put_le32(d + 12, TA_CHUNK_MAX_PAYLOAD);
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), 0);
	/* Raw size must equal stored size when not compressed. */
	memcpy(d, hdr, sizeof(d));
	ta_put_le32(d + 12, 3);
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), -TA_E_HEADER);
	/* Unknown flags. */
	memcpy(d, hdr, sizeof(d));
	ta_put_le16(d + 6, 0x8000);
	ck_assert_int_eq(ta_chunk_header_decode(d, &h), -TA_E_HEADER);
}
END_TEST

START_TEST(names_and_errors)
{
	ck_assert_str_eq(ta_chunk_type_name(TA_CHUNK_EVENTS), "events");
	ck_assert_str_eq(ta_chunk_type_name(TA_CHUNK_THREAD_START), "thread-start");
	ck_assert_str_eq(ta_chunk_type_name(999), "unknown");
	ck_assert_str_eq(ta_strerror(-TA_E_CHECKSUM), "checksum mismatch");
	ck_assert_str_eq(ta_strerror(TA_E_TRUNCATED), "truncated");
	ck_assert_str_eq(ta_strerror(0), "success");
	ck_assert_str_eq(ta_strerror(-1000), "unknown error");
}
END_TEST

/* ---- the shadow stack ------------------------------------------------------------- */

START_TEST(stack_rule)
{
	struct ta_stack s;
	int top;

	ta_stack_init(&s);
	ck_assert_int_eq(ta_stack_push(&s, 10), 0);
	ck_assert_int_eq(ta_stack_push(&s, 20), 0);
	ck_assert_int_eq(ta_stack_push(&s, 30), 0);
	/* Exit of the top. */
	ck_assert_uint_eq(ta_stack_exit(&s, 30, &top), 1);
	ck_assert_int_eq(top, 1);
	ck_assert_uint_eq(s.depth, 2);
	/* Never entered: nothing happens. */
	ck_assert_uint_eq(ta_stack_exit(&s, 99, &top), 0);
	ck_assert_int_eq(top, 0);
	ck_assert_uint_eq(s.depth, 2);
	/* longjmp over 20: exit of 10 removes both. */
	ck_assert_uint_eq(ta_stack_exit(&s, 10, &top), 2);
	ck_assert_int_eq(top, 0);
	ck_assert_uint_eq(s.depth, 0);
	ck_assert_uint_eq(ta_stack_exit(&s, 10, &top), 0);
	ta_stack_free(&s);
}
END_TEST

START_TEST(stack_overflow)
{
	struct ta_stack s;
	int top;

	ta_stack_init(&s);
	for (uint32_t i = 0; i < TA_STACK_MAX + 3; i++)
		REQUIRE(ta_stack_push(&s, 1000 + i) == 0, "push %u", i);
	ck_assert_uint_eq(s.depth, TA_STACK_MAX);
	ck_assert_uint_eq(s.overflow, 3);
	/* While overflowed any exit pops one overflowed frame. */
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(ta_stack_exit(&s, 1, &top), 1);
		ck_assert_int_eq(top, 0);
	}
	ck_assert_uint_eq(s.overflow, 0);
	ck_assert_uint_eq(ta_stack_exit(&s, 1000 + TA_STACK_MAX - 1, &top), 1);
	ck_assert_int_eq(top, 1);
	ta_stack_free(&s);
}
END_TEST

/* ---- encoder -> decoder ------------------------------------------------------------ */

/*
 * A reference model of what the decoder must yield, kept apart from
 * ta_stack: an unbounded stack of addresses with the rule of FORMAT.md.
 */
struct model {
	uint64_t *a;
	size_t depth, cap;
};

static void model_push(struct model *m, uint64_t addr)
{
	if (m->depth == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->a = realloc(m->a, m->cap * sizeof(*m->a));
		REQUIRE(m->a != NULL, "out of memory");
	}
	m->a[m->depth++] = addr;
}

static uint32_t model_exit(struct model *m, uint64_t addr)
{
	/* Frames beyond the shadow stack go one per exit, whatever it says. */
	if (m->depth > TA_STACK_MAX) {
		m->depth--;
		return 1;
	}
	for (size_t i = m->depth; i-- > 0;) {
		if (m->a[i] == addr) {
			uint32_t n = (uint32_t)(m->depth - i);

			m->depth = i;
			return n;
		}
	}
	return 0;
}

struct want {
	uint64_t ticks, addr, value;
	uint32_t kind, popped;
};

/* Decodes one chunk with a decoder of its own and compares with want. */
static void check_chunk(const uint8_t *p, size_t len, const struct want *w, size_t n,
			const struct model *snap, uint64_t seed)
{
	struct ta_decoder d;
	struct ta_event ev;
	size_t i = 0;
	int rc;

	ta_decoder_init(&d);
	REQUIRE(ta_decoder_begin(&d, p, len) == 0 && d.n_events == n, "seed %llu: begin",
		(unsigned long long)seed);
	if (snap) {
		size_t held = snap->depth < TA_STACK_MAX ? snap->depth : TA_STACK_MAX;

		REQUIRE(d.snapshot_depth == held && d.stack.overflow == snap->depth - held,
			"seed %llu: snapshot", (unsigned long long)seed);
		for (size_t k = 0; k < held; k++)
			REQUIRE(d.snapshot[k] == snap->a[k], "seed %llu: snapshot[%zu]",
				(unsigned long long)seed, k);
	}
	while ((rc = ta_decoder_next(&d, &ev)) == 1) {
		REQUIRE(i < n, "seed %llu: extra event", (unsigned long long)seed);
		REQUIRE(ev.kind == w[i].kind && ev.ticks == w[i].ticks,
			"seed %llu: event %zu: kind %u/%u ticks %llu/%llu",
			(unsigned long long)seed, i, ev.kind, w[i].kind,
			(unsigned long long)ev.ticks, (unsigned long long)w[i].ticks);
		if (ev.kind == TA_EV_EXT) {
			REQUIRE(ev.ext == TA_EXT_LOST && ev.value == w[i].value,
				"seed %llu: event %zu: lost", (unsigned long long)seed, i);
		} else {
			REQUIRE(ev.addr == w[i].addr && ev.popped == w[i].popped,
				"seed %llu: event %zu: addr %llx/%llx popped %u/%u",
				(unsigned long long)seed, i, (unsigned long long)ev.addr,
				(unsigned long long)w[i].addr, ev.popped, w[i].popped);
		}
		i++;
	}
	REQUIRE(rc == 0 && i == n, "seed %llu: rc %d after %zu of %zu events",
		(unsigned long long)seed, rc, i, n);
	ta_decoder_free(&d);
}

/*
 * Random streams: enters from a small set of addresses (so recursion is
 * common), exits of the top, exits that skip frames (longjmp), exits never
 * entered, LOST records, ticks that sometimes go backwards; cut into chunks
 * at random points, each decoded on its own.
 */
static void random_stream(uint64_t seed, size_t n_events, int deep)
{
	struct rng r = {seed};
	struct ta_encoder e;
	struct model m = {0}, snap = {0};
	struct want *w = calloc(n_events, sizeof(*w));
	size_t nw = 0;
	uint64_t ticks = rng_below(&r, 1ull << 40), max_ticks = ticks;
	uint64_t addrs[16];

	REQUIRE(w != NULL, "out of memory");
	for (int i = 0; i < 16; i++)
		addrs[i] = 0x400000 + rng_below(&r, 1u << 20) * 16;
	ta_encoder_init(&e, 77);
	REQUIRE(ta_encoder_begin(&e, ticks) == 0, "begin");
	for (size_t k = 0; k < n_events; k++) {
		uint64_t op = rng_below(&r, 100), addr;
		struct want *x = &w[nw++];

		memset(x, 0, sizeof(*x));

		/* Time mostly moves on, sometimes a lot, sometimes back. */
		if (rng_below(&r, 50) == 0) {
			uint64_t back = rng_below(&r, 1000);

			if (back < ticks)
				ticks -= back;
		} else
			ticks +=
			    rng_below(&r, 100) ? rng_below(&r, 300) : rng_below(&r, 1ull << 33);
		if (ticks > max_ticks)
			max_ticks = ticks;
		x->ticks = max_ticks; /* backward steps read as dt = 0 */
		if (deep)
			op = k < n_events / 2 ? 0 : 60;
		if (op < 45 || (op < 60 && !m.depth)) {
			addr = addrs[rng_below(&r, 16)];
			REQUIRE(ta_encoder_event(&e, ticks, addr, 0) == 0, "enter");
			model_push(&m, addr);
			x->kind = TA_EV_ENTER;
			x->addr = addr;
		} else if (op < 88) {
			addr = m.depth ? m.a[m.depth - 1] : addrs[0];
			REQUIRE(ta_encoder_event(&e, ticks, addr, 1) == 0, "exit");
			x->kind = TA_EV_EXIT;
			x->addr = addr;
			x->popped = model_exit(&m, addr);
		} else if (op < 94) {
			/* Skip frames: exit of one deeper in the stack. */
			addr = m.depth ? m.a[rng_below(&r, m.depth)] : addrs[1];
			REQUIRE(ta_encoder_event(&e, ticks, addr, 1) == 0, "exit");
			x->kind = TA_EV_EXIT;
			x->addr = addr;
			x->popped = model_exit(&m, addr);
		} else if (op < 97) {
			/* Never entered: an address outside the set. */
			addr = 0x100 + rng_below(&r, 64);
			REQUIRE(ta_encoder_event(&e, ticks, addr, 1) == 0, "exit");
			x->kind = TA_EV_EXIT;
			x->addr = addr;
			x->popped = model_exit(&m, addr);
		} else {
			x->value = 1 + rng_below(&r, 1000);
			REQUIRE(ta_encoder_lost(&e, ticks, x->value) == 0, "lost");
			x->kind = TA_EV_EXT;
		}
		/* End the chunk here sometimes (always somewhere in a deep run). */
		if (rng_below(&r, 500) == 0 || k + 1 == n_events ||
		    (deep && k + 1 == n_events / 2 + 5)) {
			const uint8_t *p;
			size_t len;

			REQUIRE(ta_encoder_end(&e, &p, &len) == 0, "end");
			check_chunk(p, len, w, nw, &snap, seed);
			nw = 0;
			/* The next chunk starts from this stack. */
			snap.depth = 0;
			for (size_t i = 0; i < m.depth; i++)
				model_push(&snap, m.a[i]);
			REQUIRE(ta_encoder_begin(&e, max_ticks) == 0, "begin");
		}
	}
	ta_encoder_free(&e);
	free(m.a);
	free(snap.a);
	free(w);
}

START_TEST(codec_random_streams)
{
	uint64_t seed = test_seed("codec_random_streams");
	struct rng r = {seed};

	for (int i = 0; i < 300; i++)
		random_stream(rng_next(&r), 1 + rng_below(&r, 5000), 0);
}
END_TEST

START_TEST(codec_deep_stack_across_chunks)
{
	/* 70000 nested enters, a chunk boundary 5 exits into the unwinding
	 * (while 65536 + 4995 frames are open), then the rest of the exits. */
	random_stream(1, 2 * 70000, 1);
}
END_TEST

START_TEST(codec_exact_bytes)
{
	struct ta_encoder e;
	const uint8_t *p;
	size_t len;
	/* tid 5, seq 0, first 100, n_events 3 (5 bytes), depth 0, overflow 0,
	 * enter 0x1000 at 110, exit at 115, exit 0x2000 (never entered) at 115. */
	static const uint8_t want[] = {
	    5,
	    0,
	    100,
	    0x83,
	    0x80,
	    0x80,
	    0x80,
	    0x00,
	    0,
	    0,
	    (10 << 2) | TA_EV_ENTER,
	    0x80,
	    0x40, /* zigzag(0x1000) = 0x2000 */
	    (5 << 2) | TA_EV_EXIT,
	    (0 << 2) | TA_EV_EXIT_ADDR,
	    0x80,
	    0x40, /* zigzag(0x1000) again */
	};

	ta_encoder_init(&e, 5);
	ck_assert_int_eq(ta_encoder_begin(&e, 100), 0);
	ck_assert_int_eq(ta_encoder_event(&e, 110, 0x1000, 0), 0);
	ck_assert_int_eq(ta_encoder_event(&e, 115, 0x1000, 1), 0);
	ck_assert_int_eq(ta_encoder_event(&e, 115, 0x2000, 1), 0);
	ck_assert_int_eq(ta_encoder_end(&e, &p, &len), 0);
	ck_assert_uint_eq(len, sizeof(want));
	ck_assert_int_eq(memcmp(p, want, len), 0);
	ta_encoder_free(&e);
}
END_TEST

START_TEST(codec_huge_tick_jump)
{
	/* A delta too large for the event's varint is clamped, and what
	 * follows must still decode to the right times. */
	struct ta_encoder e;
	struct ta_decoder d;
	struct ta_event ev;
	const uint8_t *p;
	size_t len;
	uint64_t big = UINT64_MAX - 10;

	ta_encoder_init(&e, 1);
	ck_assert_int_eq(ta_encoder_begin(&e, 0), 0);
	ck_assert_int_eq(ta_encoder_event(&e, big, 0x10, 0), 0);
	ck_assert_int_eq(ta_encoder_event(&e, big + 5, 0x10, 1), 0);
	ck_assert_int_eq(ta_encoder_lost(&e, big + 7, 3), 0);
	ck_assert_int_eq(ta_encoder_end(&e, &p, &len), 0);
	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, p, len), 0);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), 1);
	ck_assert_uint_eq(ev.ticks, UINT64_MAX >> 2);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), 1);
	ck_assert_uint_eq(ev.ticks, (UINT64_MAX >> 2) * 2);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), 1);
	ck_assert_uint_eq(ev.ticks, (UINT64_MAX >> 2) * 3);
	ck_assert_uint_eq(ev.value, 3);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), 0);
	ta_decoder_free(&d);
	ta_encoder_free(&e);
}
END_TEST

/* Library-call zones in bulk (ta_encoder_raw encodes their EXT groups on
 * a path of its own): every library kind, 1 to 6 values with heap-sized
 * pointers, a tick stepping back, groups across the 4096-slot batch and
 * the buffer's growth, encode to the same bytes as ta_encoder_event and
 * ta_encoder_ext, and the counts agree. */
START_TEST(codec_ext_libcall_bulk)
{
	enum { CALLS = 3000 };
	struct ta_raw *raw = calloc(CALLS * 6, sizeof(*raw));
	struct ta_encoder a, b;
	const uint8_t *pa, *pb;
	size_t la, lb, k = 0, slots = 0;
	uint64_t t = 1000;

	ck_assert_ptr_nonnull(raw);
	ta_encoder_init(&a, 3);
	ta_encoder_init(&b, 3);
	ck_assert_int_eq(ta_encoder_begin(&a, t), 0);
	for (uint32_t c = 0; c < CALLS; c++) {
		uint32_t kind = TA_EXT_ALLOC + c % 6, nv = 1 + c % 6;
		uint64_t v[TA_EXT_MAX_VALUES], addr = 0x7f0000001000ull + (c % 5) * 64;
		uint64_t te = c == 1234 ? t - 50 : t + 3; /* steps back once */

		for (uint32_t j = 0; j < nv; j++)
			v[j] = j & 1 ? 0x55555555a000ull + c * 48 : (uint64_t)c * j;
		raw[k++] = (struct ta_raw){t, addr};
		ck_assert_int_eq(ta_encoder_event(&a, t, addr, 0), 0);
		raw[k++] = (struct ta_raw){te, TA_RAW_EXT | (uint64_t)kind << 8 | nv};
		for (uint32_t j = 0; j < nv; j += 2)
			raw[k++] = (struct ta_raw){v[j], j + 1 < nv ? v[j + 1] : 0};
		slots += 1 + TA_RAW_EXT_SLOTS(nv);
		ck_assert_int_eq(ta_encoder_ext(&a, te, kind, v, nv), 0);
		raw[k++] = (struct ta_raw){te, addr | TA_RAW_EXIT};
		ck_assert_int_eq(ta_encoder_event(&a, te, addr, 1), 0);
		t += 10;
	}
	ck_assert_int_eq(ta_encoder_end(&a, &pa, &la), 0);
	ck_assert_uint_eq(ta_encoder_raw(&b, raw, k, SIZE_MAX), k);
	ck_assert_uint_eq(b.marker_slots, slots);
	ck_assert_uint_eq(b.n_events, a.n_events);
	ck_assert_uint_eq(b.n_events, 3 * CALLS);
	ck_assert_uint_eq(b.backsteps, a.backsteps);
	ck_assert_uint_eq(b.backsteps, 2); /* the EXT event and the exit */
	ck_assert_int_eq(ta_encoder_end(&b, &pb, &lb), 0);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_eq(memcmp(pa, pb, la), 0);
	ta_encoder_free(&a);
	ta_encoder_free(&b);
	free(raw);
}
END_TEST

/* EXT events with values: both decoders return them with their values
 * (the batch ending right after one), raw groups encode the same as
 * ta_encoder_ext, padding is skipped, and a count past the limit is
 * rejected. */
START_TEST(codec_ext_values)
{
	const uint64_t v[4] = {7, 1ull << 40, 0, UINT64_MAX};
	struct ta_raw raw[] = {
	    {100, 0x4000},
	    {110, TA_RAW_EXT | 5u << 8 | 4},
	    {7, 1ull << 40},
	    {0, UINT64_MAX},
	    {115, TA_RAW_EXT}, /* padding */
	    {120, 0x4000 | TA_RAW_EXIT},
	};
	struct ta_encoder a, b;
	struct ta_decoder d;
	struct ta_event ev[8];
	const uint8_t *pa, *pb;
	size_t la, lb, n;
	int rc;

	ta_encoder_init(&a, 1);
	ta_encoder_init(&b, 1);
	ck_assert_int_eq(ta_encoder_begin(&a, 100), 0);
	ck_assert_int_eq(ta_encoder_event(&a, 100, 0x4000, 0), 0);
	ck_assert_int_eq(ta_encoder_ext(&a, 110, 5, v, 4), 0);
	ck_assert_int_eq(ta_encoder_event(&a, 120, 0x4000, 1), 0);
	ck_assert_int_eq(ta_encoder_end(&a, &pa, &la), 0);
	ck_assert_uint_eq(ta_encoder_raw(&b, raw, 6, 1 << 20), 6);
	ck_assert_uint_eq(b.marker_slots, 4);
	ck_assert_int_eq(ta_encoder_end(&b, &pb, &lb), 0);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_eq(memcmp(pa, pb, la), 0);

	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, pa, la), 0);
	n = ta_decoder_batch(&d, ev, 8, &rc);
	ck_assert_uint_eq(n, 2); /* ends after the EXT event */
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(ev[1].kind, TA_EV_EXT);
	ck_assert_uint_eq(ev[1].ext, 5);
	ck_assert_uint_eq(ev[1].ticks, 110);
	ck_assert_uint_eq(ev[1].value, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_uint_eq(d.ext_values[i], v[i]);
	n = ta_decoder_batch(&d, ev, 8, &rc);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(rc, 1);
	ck_assert_uint_eq(ev[0].kind, TA_EV_EXIT);
	ck_assert_uint_eq(ev[0].addr, 0x4000);
	ck_assert_uint_eq(ev[0].popped, 1);

	ck_assert_int_eq(ta_decoder_begin(&d, pa, la), 0);
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 1);
	memset(d.ext_values, 0, sizeof(d.ext_values));
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 1);
	ck_assert_uint_eq(ev[0].ext, 5);
	ck_assert_uint_eq(d.ext_values[3], UINT64_MAX);
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 1);
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 0);
	ta_encoder_free(&a);
	ta_encoder_free(&b);

	/* A count past TA_EXT_READ_MAX: malformed, not a long loop. */
	ta_encoder_init(&a, 1);
	ck_assert_int_eq(ta_encoder_begin(&a, 0), 0);
	ck_assert_int_eq(ta_encoder_ext(&a, 1, 3, v, 0), 0);
	ck_assert_int_eq(ta_encoder_end(&a, &pa, &la), 0);
	{
		uint8_t bad[64];
		memcpy(bad, pa, la);
		bad[la - 1] = TA_EXT_READ_MAX + 1; /* n, the last byte */
		ck_assert_int_eq(ta_decoder_begin(&d, bad, la), 0);
		ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), -TA_E_PAYLOAD);
		ck_assert_int_eq(ta_decoder_begin(&d, bad, la), 0);
		ck_assert_uint_eq(ta_decoder_batch(&d, ev, 8, &rc), 0);
		ck_assert_int_eq(rc, -TA_E_PAYLOAD);
	}
	ta_decoder_free(&d);
	ta_encoder_free(&a);
}
END_TEST

/*
 * The flusher's batch path must write exactly what the one-event path
 * writes: same random streams (skipped frames, unmatched exits, backward
 * ticks, huge jumps, deep stacks), fed in random batch sizes.  steps 0:
 * tick steps of 0-199; 1: mostly below 32 with stretches where a tenth
 * are 1000-1050 and a twentieth 32-200, so that ta_encoder_raw's runs go
 * from its one-byte loop to its one-or-two-byte loop and back, and meet
 * the two-byte bound (2^10 ticks) from both sides.
 */
static uint64_t tick_step(struct rng *r, int steps, size_t k)
{
	uint64_t u;

	if (!steps)
		return rng_below(r, 200);
	if ((k / 3000) % 2 == 0)
		return rng_below(r, 32);
	u = rng_below(r, 100);
	return u < 10	? 1000 + rng_below(r, 51)
	       : u < 15 ? 32 + rng_below(r, 169)
			: rng_below(r, 32);
}

static void raw_vs_event(uint64_t seed, size_t n, int deep, int steps)
{
	struct rng r = {seed};
	struct ta_encoder a, b;
	struct ta_raw *ev = malloc(n * sizeof(*ev));
	struct model m = {0};
	uint64_t t = rng_below(&r, 1ull << 40);
	size_t i = 0;

	REQUIRE(ev != NULL, "out of memory");
	for (size_t k = 0; k < n; k++) {
		uint64_t op = deep ? (k < n / 2 ? 0 : 50) : rng_below(&r, 100), addr;

		if (rng_below(&r, 1000) == 0)
			t += 1ull << 62; /* more than a delta can say */
		else if (rng_below(&r, 30) == 0)
			t -= rng_below(&r, 100) < t ? 50 : 0;
		else
			t += tick_step(&r, steps, k);
		if (op < 45 || !m.depth) {
			addr = 0x400000 + rng_below(&r, 12) * 32;
			model_push(&m, addr);
			ev[k].addr = addr;
		} else {
			if (op < 85)
				addr = m.a[m.depth - 1];
			else if (op < 95)
				addr = m.a[rng_below(&r, m.depth)];
			else
				addr = 0x100;
			(void)model_exit(&m, addr);
			ev[k].addr = addr | TA_RAW_EXIT;
		}
		ev[k].ticks = t;
	}
	ta_encoder_init(&a, 9);
	ta_encoder_init(&b, 9);
	while (i < n) {
		size_t chunk = 1 + rng_below(&r, deep ? n : 3000), end = i + chunk;
		const uint8_t *pa, *pb;
		size_t la, lb;

		if (end > n)
			end = n;
		REQUIRE(ta_encoder_begin(&a, ev[i].ticks) == 0, "begin");
		for (size_t k = i; k < end; k++)
			REQUIRE(ta_encoder_event(&a, ev[k].ticks, ev[k].addr & ~TA_RAW_EXIT,
						 (ev[k].addr & TA_RAW_EXIT) != 0) == 0,
				"event");
		while (i < end) {
			size_t batch = 1 + rng_below(&r, end - i);

			REQUIRE(ta_encoder_raw(&b, ev + i, batch, SIZE_MAX) == batch, "raw");
			i += batch;
		}
		ta_encoder_end(&a, &pa, &la);
		ta_encoder_end(&b, &pb, &lb);
		REQUIRE(la == lb && memcmp(pa, pb, la) == 0,
			"seed %llu: payloads differ (%zu and %zu bytes)", (unsigned long long)seed,
			la, lb);
	}
	ta_encoder_free(&a);
	ta_encoder_free(&b);
	free(m.a);
	free(ev);
}

START_TEST(codec_raw_matches_event)
{
	uint64_t seed = test_seed("codec_raw_matches_event");
	struct rng r = {seed};

	for (int i = 0; i < 200; i++)
		raw_vs_event(rng_next(&r), 1 + rng_below(&r, 5000), 0, 0);
	raw_vs_event(rng_next(&r), 2 * 70000, 1, 0);
	for (int i = 0; i < 20; i++)
		raw_vs_event(rng_next(&r), 20000 + rng_below(&r, 20000), 0, 1);
}
END_TEST

/*
 * ta_encoder_raw's one-byte paths take the tick delta as t - prev when
 * that is below 32 and did not borrow, and an enter's address delta when
 * its zigzag is below 0x80: every value at and around those bounds, ticks
 * that wrap past 2^64 (a delta below 32 after a borrow is a backstep, not
 * a short step), and exits whose address has bit 62 or 61 set (a
 * function event, not a gap or an EXT event), against ta_encoder_event.
 */

/* Ends both encoders, checks they wrote the same bytes, frees them. */
static void assert_same_bytes(struct ta_encoder *a, struct ta_encoder *b)
{
	const uint8_t *pa, *pb;
	size_t la, lb;

	ta_encoder_end(a, &pa, &la);
	ta_encoder_end(b, &pb, &lb);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_eq(memcmp(pa, pb, la), 0);
	ta_encoder_free(a);
	ta_encoder_free(b);
}

/* The same function events into a, one ta_encoder_event at a time, and into
 * b through ta_encoder_raw in pieces of split records. */
static void encode_both(struct ta_encoder *a, struct ta_encoder *b, const struct ta_raw *ev,
			size_t n, size_t split)
{
	for (size_t k = 0; k < n; k++)
		ck_assert_int_eq(ta_encoder_event(a, ev[k].ticks, ev[k].addr & ~TA_RAW_EXIT,
						  (ev[k].addr & TA_RAW_EXIT) != 0),
				 0);
	for (size_t k = 0; k < n; k += split) {
		size_t m = n - k < split ? n - k : split;

		ck_assert_uint_eq(ta_encoder_raw(b, ev + k, m, SIZE_MAX), m);
	}
}
START_TEST(codec_raw_fast_path_bounds)
{
	static const uint64_t dts[] = {0, 1, 30, 31, 32, 33, 63, 64, 127, 128};
	static const int64_t das[] = {0, 1, -1, 31, 32, -32, -33, 63, 64, -64, -65, 4096};
	enum { N = 4096 };
	static struct ta_raw ev[N];
	struct ta_encoder a, b;
	size_t n = 0;
	uint64_t t = UINT64_MAX - 300000, addr = 0x400000;
	uint64_t stack[64];
	size_t depth = 0;

	/* Enters and exits whose deltas step through the bounds (~51 ticks
	 * a step), and step back now and then. */
	for (size_t k = 0; n < N - 16; k++) {
		uint64_t dt = dts[k % 10];
		int64_t da = das[(k / 10) % 12];

		if (k % 17 == 16)
			t -= 5; /* a backstep */
		else
			t += dt;
		if (depth < 64 && (k % 3 != 2 || !depth)) {
			addr += (uint64_t)da;
			stack[depth++] = addr;
			ev[n].ticks = t;
			ev[n++].addr = addr;
		} else {
			ev[n].ticks = t;
			ev[n++].addr = stack[--depth] | TA_RAW_EXIT;
		}
	}
	ck_assert_uint_gt(t, UINT64_MAX - 200000);
	/* The ticks pass 2^64 by small steps: t - prev below 32, with a
	 * borrow (backsteps, dt 0), the last one in a leaf call's exit. */
	ev[n].ticks = UINT64_MAX - 10;
	ev[n++].addr = 0x4ffff0;
	ev[n].ticks = UINT64_MAX - 2;
	ev[n++].addr = 0x500000;
	ev[n].ticks = 2;
	ev[n++].addr = 0x500000 | TA_RAW_EXIT;
	ev[n].ticks = 4;
	ev[n++].addr = 0x500010;
	/* Exits of addresses with bit 62 or 61 set (none was entered). */
	ev[n].ticks = 5;
	ev[n++].addr = TA_RAW_EXIT | TA_RAW_LOST | 0x1234;
	ev[n].ticks = 6;
	ev[n++].addr = TA_RAW_EXIT | TA_RAW_EXT | 0x5678;
	ev[n].ticks = 7;
	ev[n++].addr = TA_RAW_EXIT | TA_RAW_EXT | TA_RAW_LOST;

	for (size_t split = 1; split <= 4096; split *= 8) {
		ta_encoder_init(&a, 5);
		ta_encoder_init(&b, 5);
		ck_assert_int_eq(ta_encoder_begin(&a, UINT64_MAX - 300000), 0);
		ck_assert_int_eq(ta_encoder_begin(&b, UINT64_MAX - 300000), 0);
		encode_both(&a, &b, ev, n, split);
		ck_assert_uint_eq(a.backsteps, b.backsteps);
		ck_assert_uint_gt(b.backsteps, 0);
		ck_assert_uint_eq(a.n_events, n);
		ck_assert_uint_eq(b.n_events, n);
		assert_same_bytes(&a, &b);
	}
}
END_TEST

/*
 * ta_encoder_raw writes a leaf call (an enter and, next, its exit, both a
 * byte) in one step when the stack has room: leaf calls with every tick
 * delta around the bound, a backstep, the exit as the first record of the
 * next call, at the stack's capacity (a push that grows it) and beyond
 * TA_STACK_MAX (where the exit pops an overflow frame, with its address),
 * against ta_encoder_event.
 */
START_TEST(codec_raw_leaf_pairs)
{
	static const uint64_t dts[] = {0, 5, 31, 32, 100};
	const size_t deep = TA_STACK_MAX + 2, n = 2 * deep + 64 * 51 + 64;
	struct ta_raw *ev = malloc(n * sizeof(*ev));
	struct ta_encoder a, b;
	size_t k = 0, depth = 0;
	uint64_t t = 1000;

	REQUIRE(ev != NULL, "out of memory");
	/* Leaf calls at depths 0..63 (the stack's first capacity is 64),
	 * then beyond TA_STACK_MAX, each with every delta pair. */
	for (int phase = 0; phase < 2; phase++) {
		size_t to = phase ? deep : 64;

		for (; depth < to; depth++) {
			uint64_t f = 0x1000 + depth * 16;

			if (phase == 0 || depth + 4 >= to) {
				for (int i = 0; i < 5; i++) {
					for (int j = 0; j < 5; j++) {
						if (phase && j)
							continue;
						t += dts[i];
						ev[k].ticks = t;
						ev[k++].addr = f + 8;
						t = j == 4 && i == 0 ? t - 3 : t + dts[j];
						ev[k].ticks = t;
						ev[k++].addr = (f + 8) | TA_RAW_EXIT;
					}
				}
			}
			ev[k].ticks = ++t;
			ev[k++].addr = f;
		}
	}
	while (depth) {
		ev[k].ticks = ++t;
		ev[k++].addr = (0x1000 + --depth * 16) | TA_RAW_EXIT;
	}
	ck_assert_uint_le(k, n);

	for (size_t split = 1; split <= 1u << 20; split *= 16) {
		ta_encoder_init(&a, 2);
		ta_encoder_init(&b, 2);
		ck_assert_int_eq(ta_encoder_begin(&a, 1000), 0);
		encode_both(&a, &b, ev, k, split);
		ck_assert_uint_eq(a.backsteps, b.backsteps);
		ck_assert_uint_eq(b.n_events, k);
		ck_assert_uint_eq(b.stack.depth, 0);
		ck_assert_uint_eq(b.stack.overflow, 0);
		assert_same_bytes(&a, &b);
	}
	free(ev);
}
END_TEST

START_TEST(codec_raw_max_len)
{
	/* A call stops once the payload reaches max_len (checked between
	 * batches of events); the rest goes in the next chunk, which starts
	 * from the stack the first one left. */
	enum { N = 20000 };
	static struct ta_raw ev[N];
	struct ta_encoder e;
	struct ta_decoder d;
	struct ta_event out;
	const uint8_t *p;
	size_t len, done;

	for (uint64_t i = 0; i < N; i++) {
		ev[i].ticks = 100 + i;
		ev[i].addr =
		    i < N / 2 ? 0x1000 + i * 16 : (0x1000 + (N - 1 - i) * 16) | TA_RAW_EXIT;
	}
	ta_encoder_init(&e, 3);
	done = ta_encoder_raw(&e, ev, N, 100);
	ck_assert_uint_gt(done, 0);
	ck_assert_uint_lt(done, N / 2);
	ta_encoder_end(&e, &p, &len);
	ck_assert_uint_eq(ta_encoder_raw(&e, ev + done, N - done, SIZE_MAX), N - done);
	ta_encoder_end(&e, &p, &len);
	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, p, len), 0);
	ck_assert_uint_eq(d.chunk_seq, 1);
	ck_assert_uint_eq(d.snapshot_depth, done);
	ck_assert_uint_eq(d.first_ticks, 100 + done);
	for (size_t i = done; i < N; i++) {
		REQUIRE(ta_decoder_next(&d, &out) == 1, "event %zu", i);
		REQUIRE(out.ticks == ev[i].ticks && out.addr == (ev[i].addr & ~TA_RAW_EXIT),
			"event %zu", i);
	}
	ck_assert_int_eq(ta_decoder_next(&d, &out), 0);
	ta_decoder_free(&d);
	ta_encoder_free(&e);
}
END_TEST

START_TEST(decoder_rejects)
{
	struct ta_decoder d;
	struct ta_event ev;
	/* n_events 1 but an EXIT with an empty stack. */
	static const uint8_t exit_empty[] = {1, 0, 0, 1, 0, 0, TA_EV_EXIT};
	/* depth larger than the bytes left. */
	static const uint8_t deep[] = {1, 0, 0, 0, 100, 2};
	/* n_events larger than the bytes left. */
	static const uint8_t many[] = {1, 0, 0, 50, 0, 0, 1};
	/* Unknown EXT subtype. */
	static const uint8_t ext[] = {1, 0, 0, 1, 0, 0, TA_EV_EXT, 9};
	/* Trailing bytes after the last event. */
	static const uint8_t trail[] = {1, 0, 0, 0, 0, 0, 7};
	/* The overflow count is missing. */
	static const uint8_t noover[] = {1, 0, 0, 0, 0};

	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, exit_empty, sizeof(exit_empty)), 0);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, deep, sizeof(deep)), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, many, sizeof(many)), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, ext, sizeof(ext)), 0);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, trail, sizeof(trail)), 0);
	ck_assert_int_eq(ta_decoder_next(&d, &ev), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, noover, sizeof(noover)), -TA_E_PAYLOAD);
	ck_assert_int_eq(ta_decoder_begin(&d, "", 0), -TA_E_PAYLOAD);
	ta_decoder_free(&d);
}
END_TEST

/* ---- fuzz ---------------------------------------------------------------------------- */

/* Decodes whatever p holds; the decoder must end within its own count,
 * and the batch decoder must yield exactly the same events and ending. */
static void decode_any(struct ta_decoder *d, const uint8_t *p, size_t len)
{
	static struct ta_decoder b;
	static int b_ready;
	struct ta_event ev, batch[7];
	size_t have = 0, at = 0;
	uint64_t steps = 0;
	int rc, brc = 0;

	if (!b_ready) {
		ta_decoder_init(&b);
		b_ready = 1;
	}
	if (ta_decoder_begin(d, p, len) < 0)
		return;
	REQUIRE(ta_decoder_begin(&b, p, len) == 0, "batch begin disagrees");
	REQUIRE(d->snapshot_depth <= TA_STACK_MAX, "snapshot depth");
	while ((rc = ta_decoder_next(d, &ev)) == 1) {
		REQUIRE(++steps <= d->n_events, "more events than announced");
		if (at == have && brc == 0) {
			/* An odd batch size, so batches end anywhere. */
			have = ta_decoder_batch(&b, batch, 7, &brc);
			at = 0;
		}
		REQUIRE(at < have, "batch stopped early at event %llu", (unsigned long long)steps);
		REQUIRE(batch[at].ticks == ev.ticks && batch[at].addr == ev.addr &&
			    batch[at].kind == ev.kind && batch[at].popped == ev.popped &&
			    batch[at].ext == ev.ext && batch[at].value == ev.value,
			"batch event %llu differs", (unsigned long long)steps);
		at++;
	}
	REQUIRE(rc <= 0, "rc %d", rc);
	while (at == have && brc == 0) {
		have = ta_decoder_batch(&b, batch, 7, &brc);
		at = 0;
	}
	REQUIRE(at == have, "batch has more events");
	/* next: 0 at a clean end, or an error; batch: 1, or the same error. */
	REQUIRE(rc == 0 ? brc == 1 : brc == rc, "endings differ: next %d, batch %d", rc, brc);
}

START_TEST(decoder_fuzz)
{
	uint64_t seed = test_seed("decoder_fuzz");
	struct rng r = {seed};
	struct ta_decoder d;
	struct ta_encoder e;
	uint8_t *buf = malloc(1 << 16);

	ck_assert_ptr_nonnull(buf);
	ta_decoder_init(&d);
	for (int round = 0; round < 2000; round++) {
		const uint8_t *p;
		size_t len, n = rng_below(&r, 300);

		/* A valid payload to start from. */
		ta_encoder_init(&e, rng_below(&r, 100000));
		REQUIRE(ta_encoder_begin(&e, rng_below(&r, 1ull << 40)) == 0, "begin");
		for (int i = 0; i < 5; i++)
			ta_encoder_event(&e, 10 * (uint64_t)i, 0x400000 + rng_below(&r, 8), 0);
		ta_encoder_end(&e, &p, &len);
		REQUIRE(ta_encoder_begin(&e, 50) == 0, "begin");
		for (size_t i = 0; i < n; i++) {
			uint64_t t = 100 + i * rng_below(&r, 50);

			if (rng_below(&r, 20) == 0)
				ta_encoder_lost(&e, t, rng_below(&r, 9));
			else
				ta_encoder_event(&e, t, 0x400000 + rng_below(&r, 8) * 16,
						 (int)rng_below(&r, 2));
		}
		ta_encoder_end(&e, &p, &len);
		if (len > (1 << 16))
			len = 1 << 16;
		memcpy(buf, p, len);
		ta_encoder_free(&e);

		/* Mutate: flip bits, overwrite bytes, truncate, or all random. */
		switch (rng_below(&r, 5)) {
		case 0:
			for (uint64_t k = 1 + rng_below(&r, 8); k--;)
				buf[rng_below(&r, len)] ^= (uint8_t)(1u << rng_below(&r, 8));
			break;
		case 1:
			for (uint64_t k = 1 + rng_below(&r, 8); k--;)
				buf[rng_below(&r, len)] = (uint8_t)rng_next(&r);
			break;
		case 2:
			len = rng_below(&r, len + 1);
			break;
		case 3:
			len = rng_below(&r, 4096);
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rng_next(&r);
			break;
		default:
			/* Valid header fields, random events. */
			for (size_t i = 12; i < len; i++)
				buf[i] = (uint8_t)rng_next(&r);
			break;
		}
		decode_any(&d, buf, len);
	}
	ta_decoder_free(&d);
	free(buf);
}
END_TEST

/* ---- control flow: setjmp, longjmp, catch -------------------------------------- */

/* The rule of ta_ctl_apply on its own: a longjmp pops back to the depth of
 * its setjmp, the newest setjmp of a jmp_buf wins, a full table drops its
 * oldest entry, a catch pops above the innermost frame of the catcher. */
START_TEST(ctl_rule)
{
	struct ta_jmptab j;
	struct ta_stack s;

	memset(&j, 0, sizeof(j));
	ta_stack_init(&s);
	ta_stack_push(&s, 0x100);
	ta_stack_push(&s, 0x200);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_SETJMP, 0xe0, 0), 0);
	for (uint64_t a = 0x300; a < 0x800; a += 0x100)
		ta_stack_push(&s, a);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xe1, 0), 0); /* unknown */
	ck_assert_uint_eq(s.depth, 7);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xe0, 0), 5);
	ck_assert_uint_eq(s.depth, 2);
	ck_assert_uint_eq(s.addr[1], 0x200);
	/* Again (a longjmp to the same point from the same depth): none. */
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xe0, 0), 0);
	/* The same jmp_buf set again deeper: the newest depth counts. */
	ta_stack_push(&s, 0x300);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_SETJMP, 0xe0, 0), 0);
	ta_stack_push(&s, 0x400);
	ta_stack_push(&s, 0x500);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xe0, 0), 2);
	ck_assert_uint_eq(s.depth, 3);
	ck_assert_uint_eq(j.used, 1);

	/* 32 more jmp_bufs: the oldest entry (0xe0) goes, the others stay. */
	for (uint64_t e = 1; e <= TA_JMP_SLOTS; e++)
		ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_SETJMP, 0x1000 + e, 0), 0);
	ta_stack_push(&s, 0x600);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xe0, 0), 0); /* the oldest */
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0x1001, 0), 1);
	ck_assert_uint_eq(s.depth, 3);

	/* Catch: above the innermost frame of the catcher; none when it is
	 * not on the stack. */
	ta_stack_push(&s, 0x200);
	ta_stack_push(&s, 0x700);
	ta_stack_push(&s, 0x800); /* [100 200 300 200 700 800] */
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x900, 0), 0);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x800, 0), 0);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x200, 0), 2);
	ck_assert_uint_eq(s.depth, 4);
	ck_assert_uint_eq(s.addr[3], 0x200);
	/* With the catcher's activation: the nth from the bottom (an outer
	 * instance of a recursion catches), the innermost if there are fewer. */
	ta_stack_push(&s, 0x700);
	ta_stack_push(&s, 0x800); /* [100 200 300 200 700 800] */
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x200, 5), 2);
	ck_assert_uint_eq(s.depth, 4);
	ta_stack_push(&s, 0x700);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x200, 2), 1);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x200, 1), 2);
	ck_assert_uint_eq(s.depth, 2);
	ck_assert_uint_eq(s.addr[1], 0x200);
	ta_stack_push(&s, 0x300);
	ta_stack_push(&s, 0x200);
	/* Other kinds change nothing. */
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LOST, 0x100, 0), 0);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, 11, 0x100, 0), 0);
	ck_assert_uint_eq(s.depth, 4);

	/* Overflowed frames are the innermost: they go first. */
	s.overflow = 3;
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_CATCH, 0x300, 0), 4);
	ck_assert_uint_eq(s.overflow, 0);
	ck_assert_uint_eq(s.depth, 3);
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_SETJMP, 0xf0, 0), 0);
	s.overflow = 2;
	ck_assert_uint_eq(ta_ctl_apply(&j, &s, TA_EXT_LONGJMP, 0xf0, 0), 2);
	ck_assert_uint_eq(s.depth, 3);
	ck_assert_uint_eq(s.overflow, 0);
	ta_stack_free(&s);
}
END_TEST

/* Markers through the codec: the raw path and ta_encoder_ext write the same
 * bytes, LONGJMP and CATCH carry the frames popped, both decoders pop the
 * same frames (ev->popped) and end with the encoder's stack, so the exits
 * that follow match their top. */
START_TEST(codec_ctl_markers)
{
	/* main enters f, setjmp, g h i, longjmp: g h i go; f exits at the
	 * top.  Then k l m, catch in k: l m go; k exits at the top. */
	struct ta_raw raw[] = {
	    {10, 0x1000},
	    {11, 0x2000},
	    {12, TA_RAW_EXT | (uint64_t)TA_EXT_SETJMP << 8 | 1},
	    {0xbeef, 0},
	    {13, 0x3000},
	    {14, 0x4000},
	    {15, 0x5000},
	    {16, TA_RAW_EXT | (uint64_t)TA_EXT_LONGJMP << 8 | 1},
	    {0xbeef, 0},
	    {17, 0x2000 | TA_RAW_EXIT},
	    {18, 0x6000},
	    {19, 0x7000},
	    {20, 0x8000},
	    {21, TA_RAW_EXT | (uint64_t)TA_EXT_CATCH << 8 | 2},
	    {0x6000, 1}, /* the first activation of 0x6000 */
	    {22, 0x6000 | TA_RAW_EXIT},
	};
	const size_t nraw = sizeof(raw) / sizeof(raw[0]);
	const uint64_t want_popped[] = {0, 0, 0, 0, 0, 0, 3, 1, 0, 0, 0, 2, 1};
	struct ta_encoder a, b;
	struct ta_decoder d;
	struct ta_event ev[16];
	const uint8_t *pa, *pb;
	size_t la, lb, n = 0, k;
	int rc;

	ta_encoder_init(&a, 1);
	ta_encoder_init(&b, 1);
	ck_assert_int_eq(ta_encoder_begin(&a, 10), 0);
	for (size_t i = 0; i < nraw; i++) {
		if (ta_raw_is_ext(raw[i].addr)) {
			uint64_t v[2] = {raw[i + 1].ticks, raw[i + 1].addr};
			ck_assert_int_eq(ta_encoder_ext(&a, raw[i].ticks,
							ta_raw_ext_kind(raw[i].addr), v,
							ta_raw_ext_n(raw[i].addr)),
					 0);
			i++;
		} else {
			ck_assert_int_eq(ta_encoder_event(&a, raw[i].ticks,
							  raw[i].addr & ~TA_RAW_EXIT,
							  !!(raw[i].addr & TA_RAW_EXIT)),
					 0);
		}
	}
	ck_assert_uint_eq(a.stack.depth, 1);
	ck_assert_int_eq(ta_encoder_end(&a, &pa, &la), 0);
	ck_assert_uint_eq(ta_encoder_raw(&b, raw, nraw, 1 << 20), nraw);
	ck_assert_uint_eq(b.stack.depth, 1);
	ck_assert_int_eq(ta_encoder_end(&b, &pb, &lb), 0);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_eq(memcmp(pa, pb, la), 0);

	/* The batch decoder, which stops after each EXT event. */
	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, pa, la), 0);
	do {
		k = ta_decoder_batch(&d, ev + n, 16 - n, &rc);
		n += k;
	} while (rc == 0 && k);
	ck_assert_int_eq(rc, 1);
	ck_assert_uint_eq(n, 13);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(ev[i].popped, want_popped[i]);
	ck_assert_uint_eq(ev[6].ext, TA_EXT_LONGJMP);
	ck_assert_uint_eq(ev[6].value, 2);
	ck_assert_uint_eq(ev[7].kind, TA_EV_EXIT);
	ck_assert_uint_eq(ev[7].addr, 0x2000);
	ck_assert_uint_eq(ev[11].ext, TA_EXT_CATCH);
	ck_assert_uint_eq(d.stack.depth, 1);

	/* One at a time, with the values. */
	ck_assert_int_eq(ta_decoder_begin(&d, pa, la), 0);
	for (size_t i = 0; i < 13; i++) {
		ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 1);
		ck_assert_uint_eq(ev[0].popped, want_popped[i]);
		if (i == 2)
			ck_assert(ev[0].ext == TA_EXT_SETJMP && ev[0].value == 1 &&
				  d.ext_values[0] == 0xbeef);
		if (i == 6)
			ck_assert(d.ext_values[0] == 0xbeef && d.ext_values[1] == 3);
		if (i == 11)
			ck_assert(ev[0].value == 3 && d.ext_values[0] == 0x6000 &&
				  d.ext_values[1] == 2 && d.ext_values[2] == 1);
	}
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 0);
	ck_assert_uint_eq(d.stack.depth, 1);
	ta_decoder_free(&d);
	ta_encoder_free(&a);
	ta_encoder_free(&b);
}
END_TEST

/* A dump's LONGJMP or CATCH may claim any count: the decoder pops no more
 * than its stack holds (and than ev->popped can say), a marker without its
 * count pops nothing, and the other subtypes pop nothing. */
static void ctl_hostile_one(uint32_t kind, const uint64_t *v, uint32_t nv, uint64_t overflow,
			    uint64_t want)
{
	struct ta_encoder e;
	struct ta_decoder d;
	struct ta_event ev[4];
	const uint8_t *p;
	uint8_t *buf;
	size_t len, at;
	int rc;

	ta_encoder_init(&e, 1);
	e.stack.overflow = overflow; /* the snapshot claims these */
	ck_assert_int_eq(ta_encoder_begin(&e, 0), 0);
	e.stack.overflow = 0;
	ck_assert_int_eq(ta_encoder_event(&e, 1, 0x1000, 0), 0);
	ck_assert_int_eq(ta_encoder_event(&e, 2, 0x2000, 0), 0);
	/* Written as a dump could have it, not as the rule would: subtype
	 * 12 (no rule) with the values as given, then the subtype byte
	 * (after the one-byte dt|kind) made the marker. */
	at = e.out.len + 1;
	ck_assert_int_eq(ta_encoder_ext(&e, 3, 12, v, nv), 0);
	ck_assert_int_eq(ta_encoder_end(&e, &p, &len), 0);
	buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, p, len);
	ck_assert_uint_eq(buf[at], 12);
	buf[at] = (uint8_t)kind;

	ta_decoder_init(&d);
	ck_assert_int_eq(ta_decoder_begin(&d, buf, len), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 1);
	ck_assert_uint_eq(ev[0].kind, TA_EV_EXT);
	ck_assert_uint_eq(ev[0].popped, want);
	ck_assert_uint_eq(d.stack.depth + d.stack.overflow, 2 + overflow - want);
	ck_assert_int_eq(ta_decoder_next(&d, &ev[0]), 0);
	ck_assert_int_eq(ta_decoder_begin(&d, buf, len), 0);
	ck_assert_uint_eq(ta_decoder_batch(&d, ev, 4, &rc), 3);
	ck_assert_int_eq(rc, 1);
	ck_assert_uint_eq(ev[2].popped, want);
	ck_assert_uint_eq(d.stack.depth + d.stack.overflow, 2 + overflow - want);
	ta_decoder_free(&d);
	ta_encoder_free(&e);
	free(buf);
}

START_TEST(decoder_ctl_hostile)
{
	static const uint64_t counts[] = {0, 1, 2, 3, 1000, UINT32_MAX, UINT64_MAX};

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (uint32_t kind = TA_EXT_SETJMP; kind <= 11; kind++) {
			for (uint32_t nv = 0; nv <= 3; nv++) {
				uint64_t v[3] = {0x1000, counts[c], 5}, want = 0;

				if ((kind == TA_EXT_LONGJMP || kind == TA_EXT_CATCH) && nv >= 2)
					want = counts[c] < 2 ? counts[c] : 2;
				ctl_hostile_one(kind, v, nv, 0, want);
			}
		}
	}
	/* A snapshot that claims 2^40 frames beyond the stack: one marker
	 * pops at most UINT32_MAX of them (what ev->popped holds). */
	{
		uint64_t v[2] = {0x1000, UINT64_MAX};
		ctl_hostile_one(TA_EXT_LONGJMP, v, 2, 1ull << 40, UINT32_MAX);
		v[1] = 7;
		ctl_hostile_one(TA_EXT_CATCH, v, 2, 1ull << 40, 7);
	}
}
END_TEST

/* ---- texts in EXT values (ta_text_pack, ta_text_unpack) ---------------------- */

START_TEST(text_roundtrip_random)
{
	struct rng r = {test_seed("text_roundtrip_random")};
	uint64_t v[TA_EXT_MAX_VALUES + 1];
	char text[TA_TEXT_MAX], out[TA_TEXT_MAX + 1];

	for (int i = 0; i < 20000; i++) {
		uint32_t len = (uint32_t)rng_below(&r, TA_TEXT_MAX + 1), n, flags = 9;
		uint32_t fl = (uint32_t)rng_below(&r, 2);
		uint64_t site = rng_next(&r);

		for (uint32_t k = 0; k < len; k++)
			text[k] = (char)(1 + rng_below(&r, 255)); /* no NUL: unpack ends there */
		n = ta_text_pack(v, site, text, len, fl);
		REQUIRE(n == TA_TEXT_VALUES(len) && n <= TA_EXT_MAX_VALUES, "len %u: %u values",
			len, n);
		REQUIRE(v[0] == site, "len %u: site", len);
		REQUIRE(ta_text_unpack(v, n, out, &flags) == (int)len, "len %u", len);
		REQUIRE(flags == fl && !memcmp(out, text, len) && out[len] == 0, "len %u", len);
		/* The padding of the last value is zeros. */
		if (len % 8)
			REQUIRE(v[n - 1] >> (8 * (len % 8)) == 0, "len %u: padding", len);
	}
}
END_TEST

START_TEST(text_unpack_rejects)
{
	uint64_t v[TA_EXT_MAX_VALUES + 8] = {0};
	char out[TA_TEXT_MAX + 1];
	uint32_t n;

	memset(out, 'q', sizeof(out));
	/* Fewer than site, length and flags. */
	ck_assert_int_eq(ta_text_unpack(v, 0, out, NULL), -1);
	ck_assert_int_eq(ta_text_unpack(v, 2, out, NULL), -1);
	ck_assert_int_eq(out[0], 0);
	/* A length beyond TA_TEXT_MAX, whatever the values. */
	v[1] = TA_TEXT_MAX + 1;
	ck_assert_int_eq(ta_text_unpack(v, TA_EXT_MAX_VALUES + 8, out, NULL), -1);
	v[1] = UINT64_MAX;
	ck_assert_int_eq(ta_text_unpack(v, TA_EXT_MAX_VALUES + 8, out, NULL), -1);
	/* A length the values do not hold. */
	v[1] = 17;
	ck_assert_int_eq(ta_text_unpack(v, 5, out, NULL), -1);
	ck_assert_int_eq(ta_text_unpack(v, 6, out, NULL), 17);
	/* The longest text: exactly TA_EXT_MAX_VALUES values. */
	n = ta_text_pack(v, 1, "", 0, 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(ta_text_unpack(v, n, out, NULL), 0);
	ck_assert_str_eq(out, "");
	ck_assert_uint_eq(TA_TEXT_VALUES(TA_TEXT_MAX), TA_EXT_MAX_VALUES);
}
END_TEST

static Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("codec");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, varint_edges);
	tcase_add_test(tc, varint_random);
	tcase_add_test(tc, varint_malformed);
	tcase_add_test(tc, zigzag_values);
	tcase_add_test(tc, zigzag_random);
	tcase_add_test(tc, get_bytes_bounds);
	tcase_add_test(tc, crc32c_vector);
	tcase_add_test(tc, crc32c_split_random);
	tcase_add_test(tc, crc32c_instruction);
	tcase_add_test(tc, file_header_roundtrip);
	tcase_add_test(tc, file_header_damage);
	tcase_add_test(tc, chunk_header_roundtrip);
	tcase_add_test(tc, chunk_header_damage);
	tcase_add_test(tc, names_and_errors);
	tcase_add_test(tc, stack_rule);
	tcase_add_test(tc, stack_overflow);
	tcase_add_test(tc, codec_exact_bytes);
	tcase_add_test(tc, codec_random_streams);
	tcase_add_test(tc, codec_deep_stack_across_chunks);
	tcase_add_test(tc, codec_huge_tick_jump);
	tcase_add_test(tc, codec_raw_matches_event);
	tcase_add_test(tc, codec_raw_fast_path_bounds);
	tcase_add_test(tc, codec_raw_leaf_pairs);
	tcase_add_test(tc, codec_raw_max_len);
	tcase_add_test(tc, codec_ext_values);
	tcase_add_test(tc, codec_ext_libcall_bulk);
	tcase_add_test(tc, ctl_rule);
	tcase_add_test(tc, codec_ctl_markers);
	tcase_add_test(tc, decoder_ctl_hostile);
	tcase_add_test(tc, decoder_rejects);
	tcase_add_test(tc, decoder_fuzz);
	tcase_add_test(tc, text_roundtrip_random);
	tcase_add_test(tc, text_unpack_rejects);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(format_suite());
}
