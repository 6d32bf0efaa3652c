/* SPDX-License-Identifier: MIT */
/*
 * format.h - the traceagent dump format, shared by the agent and the analyzer.
 *
 * This header and format/FORMAT.md are the only definition of the format.
 * Everything is little-endian.  A dump is a 32-byte file header followed by
 * chunks; each chunk is a 32-byte header and a payload that is either raw or
 * LZ4-compressed, protected by a CRC-32C over header and payload.
 *
 * The event encoder (agent flusher) and decoder (analyzer) live together in
 * format.c so that the shadow-stack rule that lets an exit omit its address
 * is written once.
 */
#ifndef TA_FORMAT_H
#define TA_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grow.h"

/* ---- file header ------------------------------------------------------ */

#define TA_FILE_MAGIC	    "TRACEAGT" /* 8 bytes, no NUL */
#define TA_FILE_MAGIC_LEN   8
#define TA_FORMAT_MAJOR	    1  /* incompatible changes */
#define TA_FORMAT_MINOR	    10 /* compatible additions (new chunk types, trailing fields) */
#define TA_FILE_HEADER_SIZE 32

/*
 * offset size field
 *  0      8   magic "TRACEAGT"
 *  8      2   version major
 * 10      2   version minor
 * 12      4   header size (32)
 * 16      4   pid of the process that created the dump
 * 20      4   flags (none defined, 0)
 * 24      4   the recording's id (since 1.8; 0: none, before: reserved)
 * 28      4   CRC-32C of bytes 0..27
 */
struct ta_file_header {
	uint16_t major;
	uint16_t minor;
	uint32_t header_size;
	uint32_t pid;
	uint32_t flags;
	uint32_t recording; /* bytes 24..27 since 1.8: the recording's id (0: none) */
};

/* ---- chunks ------------------------------------------------------------ */

#define TA_CHUNK_MAGIC	     0x68634154u /* "TAch" read as little-endian u32 */
#define TA_CHUNK_HEADER_SIZE 32
#define TA_CHUNK_MAX_PAYLOAD (16u << 20) /* stored and raw sizes */

/*
 * offset size field
 *  0      4   magic "TAch"
 *  4      2   type (enum ta_chunk_type)
 *  6      2   flags (TA_CHUNK_F_*)
 *  8      4   stored payload size (bytes that follow the header)
 * 12      4   raw payload size (after decompression; = stored if not LZ4)
 * 16      4   pid of the writing process
 * 20      4   sequence number of the chunk within that process (0, 1, ...)
 * 24      4   reserved (0)
 * 28      4   CRC-32C of bytes 0..27 followed by the stored payload
 */
struct ta_chunk_header {
	uint16_t type;
	uint16_t flags;
	uint32_t stored_size;
	uint32_t raw_size;
	uint32_t pid;
	uint32_t seq;
	uint32_t crc;
};

#define TA_CHUNK_F_LZ4 0x0001u

/*
 * Chunk types.  Payloads are sequences of unsigned LEB128 varints ("u"),
 * zigzag varints ("s"), and strings ("str": u length, then bytes, no NUL).
 * A reader skips chunk types it does not know (minor version additions).
 */
#define TA_CHUNK_TYPES(X)                                                                          \
	X(PROCESS, 1, "process") /* who was traced and how time is kept */                         \
	X(CLOCK, 2, "clock")	 /* (ticks, CLOCK_MONOTONIC ns) pairs */                           \
	X(MODULE, 3, "module")	 /* a loaded ELF object */                                         \
	X(THREAD_START, 4, "thread-start")                                                         \
	X(THREAD_NAME, 5, "thread-name")                                                           \
	X(THREAD_END, 6, "thread-end")                                                             \
	X(EVENTS, 7, "events")		      /* one thread's function events */                   \
	X(END, 8, "end")		      /* the process finished writing */                   \
	X(CRASH, 9, "crash")		      /* a fatal signal: where and how */                  \
	X(MODULE_UNLOAD, 10, "module-unload") /* a MODULE went away */                             \
	X(PATCH, 11, "patch")		      /* functions patched at load, refusals */            \
	X(LIBCALLS, 12, "libcalls")	      /* the library functions interposed */               \
	X(SITES, 13, "sites")		      /* the manual API's call sites (1.5) */              \
	X(CHANNELS, 14, "channels")	      /* the channels and their first state */             \
	X(MARK, 15, "mark")		      /* process-wide: pause, resume, switch (1.6) */      \
	X(FILTER, 16, "filter")		      /* the filters in force at record time (1.7) */      \
	X(CUT, 18, "cut") /* why a dump stops without END, said by record or serve (1.8) */        \
	X(SYMBOLS, 19, "symbols") /* a module's function symbols (1.9) */                          \
	X(KEEP, 23, "keep")	  /* only the slow frames kept: what and how many (1.10) */

enum ta_chunk_type {
#define TA_X(name, value, str) TA_CHUNK_##name = value,
	TA_CHUNK_TYPES(TA_X)
#undef TA_X
};

/* THREAD_START flags (trailing field, since 1.1). */
#define TA_THREAD_F_INHERITED                                                                      \
	1u /* a forked child's: the frames in its first                                            \
	      snapshot were entered by the parent */

/* TA_CHUNK_CUT causes. */
#define TA_CUT_KILLED 1u /* the process was killed by a signal (value: its number) */
#define TA_CUT_STREAM 2u /* the stream was cut (value: the bytes kept; text: why) */

/* END flags. */
#define TA_END_F_INCOMPLETE 1u /* some data could not be written */
#define TA_END_F_EXEC	    2u /* written before an exec: the image ended */
#define TA_END_F_CRASH	    4u /* written by the crash handler */
#define TA_END_F_ATTACH                                                                            \
	8u /* the agent was brought in by `traceagent attach`: threads                             \
	      start inside calls whose entries were never seen */
#define TA_END_F_SIGNAL                                                                            \
	16u /* written as the process dies of a signal's default action                            \
	       (END's trailing `signal`, 1.8) */

/* Clock sources recorded in the PROCESS chunk. */
enum ta_clock_source {
	TA_CLOCK_RDTSC = 1,    /* x86-64 time-stamp counter */
	TA_CLOCK_CNTVCT = 2,   /* aarch64 virtual counter */
	TA_CLOCK_MONOTONIC = 3 /* clock_gettime(CLOCK_MONOTONIC), ticks = ns */
};

/* ---- the event stream inside an EVENTS chunk ---------------------------- */

/*
 * Each event starts with u ((dt << 2) | kind), dt being the tick delta from
 * the previous event of the chunk (the first from the chunk's first_ticks).
 */
enum ta_event_kind {
	TA_EV_EXIT = 0,	     /* exit of the function on top of the shadow stack */
	TA_EV_ENTER = 1,     /* s (addr - prev_addr) follows */
	TA_EV_EXIT_ADDR = 2, /* s (addr - prev_addr) follows; see ta_stack_exit */
	TA_EV_EXT = 3	     /* u subtype follows, then its payload */
};

/*
 * EXT subtypes.  TA_EXT_LOST is followed by u count alone (1.0).  Every
 * other subtype (1.2) is followed by u n, then n u values, so a reader skips
 * the subtypes it does not know.  Numbers: 2-7 library calls, 8-11 control
 * flow (setjmp/longjmp, exceptions), 12-19 the manual API (1.5), 20 calls
 * left out (1.7), 21 the agent's waits (1.8).
 */
enum ta_ext_kind {
	TA_EXT_LOST = 1, /* u count: events the agent could not record here */
	/* Library calls (1.3): the values of the call whose zone (the
	 * interposed function's frame, see TA_CHUNK_LIBCALLS) is on top. */
	TA_EXT_ALLOC = 2,   /* size, pointer (0: failed) */
	TA_EXT_FREE = 3,    /* pointer */
	TA_EXT_REALLOC = 4, /* old pointer, size, new pointer (0: failed) */
	TA_EXT_LOCK = 5,    /* object, result (0 or an error number)[, mutex] */
	TA_EXT_IO = 6,	    /* fd, bytes asked, bytes done, errno (0: success) */
	TA_EXT_SLEEP = 7,   /* ns asked (TA_LC_FOREVER: no limit), result, errno */
	TA_EXT_SETJMP = 8,  /* jmp_buf address (a setjmp family call) */
	TA_EXT_LONGJMP = 9, /* jmp_buf address, frames popped (see ta_ctl_apply) */
	TA_EXT_CATCH = 10,  /* catcher's start address, frames popped[, activations] */
	/* The manual API (1.5, include/traceagent.h).  A site is the address
	 * a SITES chunk describes; a text is three values and the bytes
	 * (ta_text_pack). */
	TA_EXT_FRAME = 12,	    /* site: the end of a frame of the site's set */
	TA_EXT_COUNTER = 13,	    /* site, type (TA_COUNTER_*), the value's 64 bits */
	TA_EXT_MESSAGE = 14,	    /* site, text */
	TA_EXT_INSTANT = 15,	    /* site */
	TA_EXT_ZONE_TEXT = 16,	    /* site (the TEXT one), text: for the innermost zone */
	TA_EXT_ZONE_VALUE = 17,	    /* value: for the innermost open zone */
	TA_EXT_CHANNEL = 18,	    /* channel id, 1 on / 0 off: a switch, here and now */
	TA_EXT_ZONE_UNMATCHED = 19, /* site of a TA_ZONE_END with no zone begun */
	/* Calls left out by TRACEAGENT_MIN_DURATION (1.7): pairs (function
	 * address, calls) dropped since the previous TA_EXT_SHORT of the
	 * thread (agent/mindur.h). */
	TA_EXT_SHORT = 20,
	/* The agent's own wait (1.8): start (ticks), length (ticks).  The
	 * thread waited for the flusher (lossless mode: its memory at the
	 * cap, or its backlog high) there, inside the frames open; the views
	 * show it as a frame of its own, TA_WAIT_NAME, the open function's
	 * callee. */
	TA_EXT_WAIT = 21,
	/* The manual API's frames with gaps, sections, units and
	 * application info (1.10): the site is a FRAME, SECTION,
	 * COUNTER_CONFIG or APP_INFO one. */
	TA_EXT_FRAME_BEGIN = 26,    /* site: a frame of the site's set begins */
	TA_EXT_FRAME_END = 27,	    /* site: the open frame of the site's set ends */
	TA_EXT_SECTION_ENTER = 28,  /* site: the section named by the site begins */
	TA_EXT_SECTION_LEAVE = 29,  /* site: one occurrence of it ends */
	TA_EXT_COUNTER_CONFIG = 30, /* site (its name: the counter's), unit (TA_UNIT_*) */
	TA_EXT_APP_INFO = 31,	    /* site, text: a line about the program */
	/* Memory, lock names and fibers of the manual API (1.10,
	 * include/traceagent.h).  POOL_ALLOC and POOL_FREE name their pool's
	 * site (its name is the pool); LOCK_NAME and FIBER_ENTER carry a text
	 * (ta_text_pack) whose first value is the lock's address or the site. */
	TA_EXT_POOL_ALLOC = 32,	 /* site, pointer, size */
	TA_EXT_POOL_FREE = 33,	 /* site, pointer */
	TA_EXT_LOCK_NAME = 34,	 /* lock address, text: its name from here on */
	TA_EXT_FIBER_ENTER = 35, /* site, text: the fiber named runs here */
	TA_EXT_FIBER_LEAVE = 36	 /* site: the thread's fiber left */
};
/* TA_EXT_COUNTER_CONFIG's units (include/traceagent.h's TA_UNIT_*). */
#define TA_UNIT_NUMBER_	 0u
#define TA_UNIT_BYTES_	 1u
#define TA_UNIT_PERCENT_ 2u
#define TA_WAIT_NAME	 "[traceagent wait]"

/*
 * A function's arguments and return value (1.10, agent/args*.c), for the
 * call on top of the thread's stack: TA_EXT_ARGS right after its enter,
 * TA_EXT_RETVAL right before its exit.  Values: items, each a head
 * (TA_ARGI_*), the register's 64 bits (a string's: its pointer) and, for
 * a string copied (TA_ARGS_OK), its bytes 8 to a value, little-endian,
 * the last value padded with zeros.  EXT 24 and 25 are kept for them.
 */
#define TA_EXT_ARGS   22u
#define TA_EXT_RETVAL 23u
/* The head: format, size in bytes (1, 2, 4 or 8), register (1-based; 0: the
 * return value), floating-point register, a string's state and length. */
#define TA_ARGI_FMT(h)	 ((unsigned)((h)&0xffu))
#define TA_ARGI_SIZE(h)	 ((unsigned)(((h) >> 8) & 0xffu))
#define TA_ARGI_REG(h)	 ((unsigned)(((h) >> 16) & 0xffu))
#define TA_ARGI_FP	 (1ull << 24)
#define TA_ARGI_STATE(h) ((unsigned)(((h) >> 32) & 0xffu))
#define TA_ARGI_CUT	 (1ull << 40)
#define TA_ARGI_LEN(h)	 ((unsigned)(((h) >> 48) & 0xffffu))
#define TA_ARGI_HEAD(fmt, size, reg, fp, state, cut, len)                                          \
	((uint64_t)(fmt) | (uint64_t)(size) << 8 | (uint64_t)(reg) << 16 |                         \
	 ((fp) ? TA_ARGI_FP : 0) | (uint64_t)(state) << 32 | ((cut) ? TA_ARGI_CUT : 0) |           \
	 (uint64_t)(len) << 48)
/* Formats. */
#define TA_ARGF_INT   1u /* signed integer */
#define TA_ARGF_UINT  2u /* unsigned integer */
#define TA_ARGF_HEX   3u /* unsigned, shown 0x... */
#define TA_ARGF_STR   4u /* char *: the string */
#define TA_ARGF_CHAR  5u /* a character */
#define TA_ARGF_FLOAT 6u /* float (size 4) or double (size 8) */
#define TA_ARGF_PTR   7u /* an address */
#define TA_ARGF_ENUM  8u /* an enum's value (signed) */
/* A string's state. */
#define TA_ARGS_OK	   0u /* copied: TA_ARGI_LEN bytes follow */
#define TA_ARGS_NULL	   1u /* the pointer is NULL */
#define TA_ARGS_UNREADABLE 2u /* the pointer points at no readable memory */
#define TA_ARGS_UNCHECKED  3u /* not read: no fault guard (docs/arguments.md) */
/* The most bytes of a string an item holds. */
#define TA_ARGS_STR_MAX 1024u

/* TA_EXT_COUNTER's type. */
#define TA_COUNTER_INT	  0u /* the bits are an int64_t */
#define TA_COUNTER_DOUBLE 1u /* the bits are an IEEE-754 double */

/*
 * A text in EXT values (TA_EXT_MESSAGE, TA_EXT_ZONE_TEXT): after the site,
 * u length, u flags (TA_TEXT_F_*), then the bytes 8 to a value, little-
 * endian, the last value padded with zeros.  At most TA_TEXT_MAX bytes:
 * the agent cuts longer texts there and sets TA_TEXT_F_CUT.
 */
#define TA_TEXT_MAX	    992u /* TA_TEXT_VALUES(992) = TA_EXT_MAX_VALUES */
#define TA_TEXT_F_CUT	    1u
#define TA_TEXT_VALUES(len) (3u + ((len) + 7u) / 8u)
/* Fills v[0..TA_TEXT_VALUES(len)) with site, the text's first len bytes
 * (len <= TA_TEXT_MAX) and flags; returns the count. */
uint32_t ta_text_pack(uint64_t *v, uint64_t site, const char *text, uint32_t len, uint32_t flags);
/* The text of n values v (an EXT event's) into out (TA_TEXT_MAX + 1 bytes,
 * NUL-terminated); returns its length, or -1 when the values do not hold a
 * text (a damaged or hostile dump). */
int ta_text_unpack(const uint64_t *v, uint32_t n, char *out, uint32_t *flags);

/*
 * The manual API's call sites (SITES chunk, 1.5): u count, then per site
 *   u addr (what the events carry), u kind (enum ta_site_kind), u channel
 *   id (CHANNELS), str name, str file, u line.
 * A zone's events are an enter and an exit of its addr, as a function's;
 * the other kinds' are EXT events naming it.  A site is written once per
 * process; an address may be described again later (a library unloaded
 * and another loaded at its place): the later description holds from then.
 */
enum ta_site_kind {
	TA_SITE_ZONE = 1,
	TA_SITE_FRAME = 2, /* name: the frame set */
	TA_SITE_COUNTER = 3,
	TA_SITE_MESSAGE = 4,
	TA_SITE_INSTANT = 5,
	TA_SITE_ZONE_END = 6, /* a TA_ZONE_END(): where one without a zone was */
	TA_SITE_TEXT = 7,     /* a TA_ZONE_TEXT() or TA_ZONE_VALUE() */
	/* 1.10: a TA_ZONE_DYN's call site (no event names it: each distinct
	 * name is a ZONE site of the agent's own, whose file and line are the
	 * first call site's that used it). */
	TA_SITE_ZONE_DYN = 8,
	TA_SITE_SECTION = 9, /* name: the section */
	TA_SITE_APP_INFO = 10,
	TA_SITE_COUNTER_CONFIG = 11, /* name: the counter */
	/* 1.10: memory, lock names, fibers */
	TA_SITE_ALLOC = 12,	/* a TA_ALLOC...: name is the pool */
	TA_SITE_FREE = 13,	/* a TA_FREE...: name is the pool */
	TA_SITE_LOCK_NAME = 14, /* a TA_LOCK_NAME() */
	TA_SITE_FIBER = 15,	/* a TA_FIBER_ENTER() or TA_FIBER_LEAVE() */
};
/* The most bytes of a lock's or a fiber's name the agent keeps (a longer
 * one is cut, TA_TEXT_F_CUT). */
#define TA_NAME_MAX	 255u
#define TA_SITE_NAME_MAX 255u /* bytes the agent keeps of a name or file */
/* The name of the ZONE site that stands for the names of TA_ZONE_DYN
 * beyond the agent's bounds. */
#define TA_ZONE_DYN_OVERFLOW "[traceagent zone names overflow]"

/*
 * Channels (CHANNELS chunk, 1.5): u count, then per channel u id, str name,
 * u on (its state when the chunk was written; later switches are
 * TA_EXT_CHANNEL events).  The ids below are fixed; the program's own
 * channels take 6 and up, at most TA_CHANNELS_MAX in all.
 */
#define TA_CHANNEL_FUNCTIONS 0u
#define TA_CHANNEL_USER	     1u
#define TA_CHANNEL_ALLOC     2u /* the library-call classes, TA_LC_* */
#define TA_CHANNEL_LOCK	     3u
#define TA_CHANNEL_IO	     4u
#define TA_CHANNEL_SLEEP     5u
#define TA_CHANNEL_FIRST_OWN 6u
#define TA_CHANNELS_MAX	     64u
#define TA_CHANNEL_NAME_MAX  31u

/*
 * Process-wide marks (MARK chunk, 1.6), made by `traceagent ctl` through
 * the control socket: u ticks (when), u kind, then the kind's values.
 *   PAUSE    recording stopped at ticks (until the next RESUME, or the end)
 *   RESUME   u pause_ticks: recording went on at ticks after the pause
 *            that began at pause_ticks (a reader that missed the PAUSE
 *            mark, a stream begun during the pause, learns of it here)
 *   CHANNEL  u id, u on: a channel switched by the control socket (its
 *            events of every thread are not recorded while it is off)
 */
#define TA_MARK_PAUSE	1u
#define TA_MARK_RESUME	2u
#define TA_MARK_CHANNEL 3u

/*
 * Whether a channel list (TRACEAGENT_CHANNELS, `report --channel`) takes
 * the channel name: a comma-separated list of all, -all, NAME and -NAME,
 * applied in order; a list whose first item is a name starts from none,
 * any other (or an empty list) from every channel.
 */
int ta_channel_list_has(const char *list, const char *name);

/*
 * Why events were lost (1.4): THREAD_END and END end with `u n` and n
 * counts, one per cause in this order, summing to their `lost`.  A reader
 * shows a cause it does not know by its number.
 */
#define TA_LOST_CAUSES(X)                                                                          \
	X(DROPPED, 0, "dropped")       /* drop mode: no free block at the memory cap */            \
	X(NO_RING, 1, "no-ring")       /* the thread could not get a ring */                       \
	X(NESTED, 2, "nested")	       /* signal handlers' events beyond the reserve put aside */  \
	X(STOPPED, 3, "stopped")       /* the agent stopped before they could be appended */       \
	X(ZONE_DEPTH, 4, "zone-depth") /* zones begun beyond TA_ZONE_BEGIN's depth (1.5) */        \
	X(STARTING, 5, "starting")     /* API events made while the agent could not take them */   \
	X(NO_MEMORY, 6, "no-memory")   /* the flusher had no memory to encode them */

enum ta_lost_cause {
#define TA_X(name, value, str) TA_LOST_##name = value,
	TA_LOST_CAUSES(TA_X)
#undef TA_X
	    TA_LOST_NCAUSES
};

/* The cause's name ("dropped", ...), or "unknown". */
const char *ta_lost_cause_name(unsigned cause);

/* Classes of interposed library functions (TA_CHUNK_LIBCALLS), as bits. */
#define TA_LC_ALLOC   1u
#define TA_LC_LOCK    2u
#define TA_LC_IO      4u
#define TA_LC_SLEEP   8u
#define TA_LC_ALL     15u
#define TA_LC_FOREVER UINT64_MAX /* a wait without a time limit */

/* Values an EXT event may carry (the agent's limit; a reader accepts up to
 * TA_EXT_READ_MAX and keeps the first TA_EXT_MAX_VALUES). */
#define TA_EXT_MAX_VALUES 127
#define TA_EXT_READ_MAX	  127

/* Shadow stack depth shared by encoder and decoder; deeper enters are
 * still recorded, their exits just carry an explicit address. */
#define TA_STACK_MAX 65536u

/* ---- little-endian and varint helpers ----------------------------------- */

static inline void ta_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void ta_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t ta_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t ta_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

#define TA_VARINT_MAX 10 /* bytes for a 64-bit value */

/* Writes v as unsigned LEB128 at p; returns the byte after it. The caller
 * guarantees TA_VARINT_MAX bytes of room. */
static inline uint8_t *ta_varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t ta_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t ta_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * A bounds-checked reader over untrusted bytes.  Every get fails (returns -1
 * and sets err) rather than read past end; once err is set all further gets
 * fail, so a decoder can check once at the end of a record.
 */
struct ta_reader {
	const uint8_t *p;
	const uint8_t *end;
	int err;
};

static inline void ta_reader_init(struct ta_reader *r, const void *buf, size_t len)
{
	r->p = (const uint8_t *)buf;
	/* An empty payload may come with no buffer at all: NULL + 0 is
	 * undefined in C, so no arithmetic on it. */
	r->end = len ? r->p + len : r->p;
	r->err = 0;
}

static inline int ta_get_varint(struct ta_reader *r, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;

	if (r->err)
		return -1;
	while (r->p < r->end) {
		uint8_t b = *r->p++;
		if (shift == 63 && b > 1)
			break; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			break;
	}
	r->err = 1;
	*out = 0;
	return -1;
}

/* A string: returns a pointer into the buffer (not NUL-terminated). */
static inline int ta_get_bytes(struct ta_reader *r, const uint8_t **s, uint64_t *len)
{
	if (ta_get_varint(r, len) < 0 || *len > (uint64_t)(r->end - r->p)) {
		r->err = 1;
		*s = NULL;
		*len = 0;
		return -1;
	}
	*s = r->p;
	r->p += *len;
	return 0;
}

/* ---- checksums and headers (format.c) ------------------------------------ */

uint32_t ta_crc32c(uint32_t crc, const void *buf, size_t len);
/* The same from tables, whatever the CPU; and whether ta_crc32c uses the
 * CPU's own instruction (x86-64 with SSE 4.2). */
uint32_t ta_crc32c_sw(uint32_t crc, const void *buf, size_t len);
int ta_crc32c_hw(void);

void ta_file_header_encode(uint8_t out[TA_FILE_HEADER_SIZE], uint32_t pid);
/* The same with the recording's id (1.8): the processes of one recording
 * that find the file there check it before they append. */
void ta_file_header_encode_rec(uint8_t out[TA_FILE_HEADER_SIZE], uint32_t pid, uint32_t recording);

/* 0 if buf holds a file header of a version this code reads; otherwise a
 * negative TA_E_* code. */
int ta_file_header_decode(const uint8_t buf[TA_FILE_HEADER_SIZE], struct ta_file_header *h);

/* Fills the 32 header bytes, computing the CRC over header and payload. */
void ta_chunk_header_encode(uint8_t out[TA_CHUNK_HEADER_SIZE], const struct ta_chunk_header *h,
			    const void *payload);

/* The bytes of a CUT chunk of size TA_CUT_CHUNK_SIZE(text_len), header
 * included: u cause (TA_CUT_*), u value, str text (text_len bytes).
 * Returns its size. */
#define TA_CUT_CHUNK_SIZE(text_len) (TA_CHUNK_HEADER_SIZE + 3 * TA_VARINT_MAX + (text_len))
size_t ta_cut_chunk_encode(uint8_t *out, uint32_t pid, uint32_t seq, uint64_t cause, uint64_t value,
			   const char *text, size_t text_len);

/* Parses and sanity-checks a header (magic, sizes); the CRC is verified
 * separately with ta_chunk_verify once the payload is read. */
int ta_chunk_header_decode(const uint8_t buf[TA_CHUNK_HEADER_SIZE], struct ta_chunk_header *h);
int ta_chunk_verify(const uint8_t hdr[TA_CHUNK_HEADER_SIZE], const struct ta_chunk_header *h,
		    const void *payload);

const char *ta_chunk_type_name(unsigned type);

/* Error codes of the format layer: negative values, one list. */
#define TA_ERRORS(X)                                                                               \
	X(BADMAGIC, "not a traceagent dump (bad magic)")                                           \
	X(VERSION, "unsupported dump format version")                                              \
	X(HEADER, "malformed header")                                                              \
	X(TRUNCATED, "truncated")                                                                  \
	X(CHECKSUM, "checksum mismatch")                                                           \
	X(TOOBIG, "size out of range")                                                             \
	X(DECOMPRESS, "LZ4 data does not decompress to the recorded size")                         \
	X(PAYLOAD, "malformed payload")                                                            \
	X(NOMEM, "out of memory")                                                                  \
	X(IO, "I/O error")

enum ta_error {
	TA_E_OK = 0,
#define TA_X(name, msg) TA_E_##name,
	TA_ERRORS(TA_X)
#undef TA_X
};

/* Returns a static message for -TA_E_x (or TA_E_x). */
const char *ta_strerror(int err);
/* "SIGTERM" for 15 (Linux's numbers); "a real-time signal" or "unknown". */
const char *ta_signal_name(int sig);

/* ---- the shadow stack rule ---------------------------------------------- */

/*
 * Both sides keep, per thread, a stack of entered function addresses and
 * apply the same rule, so an exit that matches the top needs no address:
 *  - enter(a): push a (ignored for the stack beyond TA_STACK_MAX entries;
 *    the overflow is counted so the matching exits pop it again);
 *  - exit(a) matching the top: TA_EV_EXIT, pop;
 *  - any other exit: TA_EV_EXIT_ADDR; if a is deeper in the stack, pop
 *    down to and including it (frames left by longjmp or an exception);
 *    otherwise leave the stack as it is (an exit never entered).
 */
struct ta_stack {
	uint64_t *addr;
	uint32_t depth;
	uint32_t cap;
	uint64_t overflow; /* enters beyond TA_STACK_MAX still open */
};

void ta_stack_init(struct ta_stack *s);
void ta_stack_free(struct ta_stack *s);
/* 0, or TA_E_NOMEM (the enter is then counted in overflow). */
int ta_stack_push(struct ta_stack *s, uint64_t addr);
/* Applies exit(a); returns the number of frames popped (0 if a was not on
 * the stack) and sets *top_match when a was the top frame. */
uint32_t ta_stack_exit(struct ta_stack *s, uint64_t addr, int *top_match);

/*
 * Control flow that leaves frames without their exit hooks: longjmp, and
 * exceptions compiled by Clang (GCC runs the exit hooks while unwinding).
 * The agent records markers (TA_EXT_SETJMP, TA_EXT_LONGJMP, TA_EXT_CATCH
 * with one value each); the encoder applies them to its shadow stack with
 * ta_ctl_apply and writes how many frames went as the marker's second
 * value, so the decoder pops the same frames without the encoder's table:
 *  - SETJMP(env): remember env -> the stack's depth now (depth + overflow),
 *    in a table of TA_JMP_SLOTS entries per thread (the same env replaces
 *    its entry, else the oldest entry goes);
 *  - LONGJMP(env): pop the frames above the depth remembered for env (none
 *    if env is not in the table or the stack is not deeper);
 *  - CATCH(start, nth): pop the frames above the nth frame from the bottom
 *    whose address is start (nth: how many activations of the catching
 *    function the agent found on the machine stack, the catcher's included;
 *    0 when it could not tell), or above the innermost such frame when nth
 *    is 0 or there are fewer; none if there is no such frame.
 * The decoder pops min(count, depth + overflow, UINT32_MAX) frames.
 */
#define TA_JMP_SLOTS 32

struct ta_jmptab {
	uint64_t env[TA_JMP_SLOTS];
	uint64_t level[TA_JMP_SLOTS]; /* depth + overflow at the setjmp */
	uint32_t used, next;	      /* entries filled; the one replaced next */
};

/* Applies marker kind with the agent's values v (and nth, CATCH's second,
 * 0 if absent) to s (and to j for SETJMP): returns the frames popped (0 for
 * SETJMP and other kinds). */
uint64_t ta_ctl_apply(struct ta_jmptab *j, struct ta_stack *s, uint32_t kind, uint64_t v,
		      uint64_t nth);
/* Pops min(n, depth + overflow) frames, overflow first (the decoder's side
 * of the rule, and what ta_ctl_apply does once it knows n); returns them. */
uint64_t ta_stack_unwind(struct ta_stack *s, uint64_t n);

/* Whether an EXT subtype is one of the markers ta_ctl_apply knows. */
static inline int ta_ext_is_ctl(uint64_t kind)
{
	return kind == TA_EXT_SETJMP || kind == TA_EXT_LONGJMP || kind == TA_EXT_CATCH;
}

/* ---- the EVENTS chunk payload -------------------------------------------- */

/*
 * Payload (before compression):
 *   u tid, u thread_chunk_seq (0, 1, ... per thread), u first_ticks,
 *   u n_events, u depth, then depth x s (addr - previous addr, from 0):
 *   the shadow stack at the start of the chunk, bottom first;
 *   u overflow: frames open beyond the TA_STACK_MAX of the stack;
 *   then n_events events (see enum ta_event_kind).  Ticks are absolute
 *   counter values; a tick going backwards is clamped to dt = 0.
 */

/* One event as the agent records it; also what the decoder yields. */
struct ta_event {
	uint64_t ticks;
	uint64_t addr;	 /* function address */
	uint32_t kind;	 /* TA_EV_ENTER, TA_EV_EXIT (any exit), TA_EV_EXT */
	uint32_t popped; /* exits: frames this exit removed from the stack;
			    LONGJMP and CATCH: the frames they left */
	uint64_t ext;	 /* TA_EV_EXT: subtype */
	uint64_t value;	 /* TA_EXT_LOST: count; other subtypes: number of values,
			    which are in the decoder's ext_values */
};

struct ta_encoder {
	struct ta_stack stack;
	struct ta_jmptab jmp; /* setjmp points seen (ta_ctl_apply) */
	/* The payload being built.  out.max: 0, or the most it may hold: a
	 * growth past it fails as one out of memory does (the agent's fault
	 * injection for its tests, TRACEAGENT_TEST_ENCODER_MAX; set after
	 * ta_encoder_init). */
	struct ta_buf out;
	uint64_t tid, chunk_seq;
	uint64_t first_ticks, prev_ticks, prev_addr;
	uint64_t n_events;
	size_t n_events_off;   /* where n_events is patched in */
	uint64_t backsteps;    /* ticks that went backwards (clamped) */
	uint64_t marker_slots; /* raw slots ta_encoder_raw took that were not
				  function events (LOST, EXT and its values) */
	int open;
	int wide; /* ta_encoder_raw's loop for tick deltas of two bytes (no
		     effect on the bytes) */
};

void ta_encoder_init(struct ta_encoder *e, uint64_t tid);
void ta_encoder_free(struct ta_encoder *e);
/* Starts a chunk (writes the header fields and the stack snapshot). */
int ta_encoder_begin(struct ta_encoder *e, uint64_t first_ticks);
/* Appends one function event; kind is TA_EV_ENTER or TA_EV_EXIT. */
int ta_encoder_event(struct ta_encoder *e, uint64_t ticks, uint64_t addr, int is_exit);
/* The agent's ring slots are encoded by ta_encoder_raw (slots.h). */
int ta_encoder_lost(struct ta_encoder *e, uint64_t ticks, uint64_t count);
/* Appends an EXT event of a subtype other than TA_EXT_LOST with n values.
 * A control-flow marker (ta_ext_is_ctl) with n >= 1 is applied to the
 * stack: LONGJMP and CATCH are written with v[0] and the frames popped. */
int ta_encoder_ext(struct ta_encoder *e, uint64_t ticks, uint32_t subtype, const uint64_t *v,
		   uint32_t n);
/* Finishes the chunk: *payload and *len stay valid until the next begin. */
int ta_encoder_end(struct ta_encoder *e, const uint8_t **payload, size_t *len);

struct ta_decoder {
	struct ta_stack stack;
	struct ta_reader r;
	uint64_t tid, chunk_seq, first_ticks, n_events, done;
	uint64_t prev_ticks, prev_addr;
	/* The stack snapshot the chunk carries (owned, for resynchronisation);
	 * stack.overflow holds its overflow count after ta_decoder_begin. */
	uint64_t *snapshot;
	uint32_t snapshot_depth;
	/* The values of the last EXT event returned (ev->value of them):
	 * valid until the next call.  ta_decoder_batch ends a batch after
	 * such an event, so it is always the batch's last. */
	uint64_t ext_values[TA_EXT_MAX_VALUES];
};

void ta_decoder_init(struct ta_decoder *d);
void ta_decoder_free(struct ta_decoder *d);
/* Parses the chunk's fixed fields and stack snapshot, and sets the shadow
 * stack to the snapshot.  0 or a negative TA_E_ code. */
int ta_decoder_begin(struct ta_decoder *d, const void *payload, size_t len);
/* 1 with *ev filled, 0 at the end of the chunk, or a negative TA_E_ code
 * (malformed: the rest of the chunk is unusable). */
int ta_decoder_next(struct ta_decoder *d, struct ta_event *ev);
/* Up to max events at once (the same as calling ta_decoder_next, faster):
 * returns how many were filled; *rc is 0 while more may follow, 1 at the
 * end of the chunk, or a negative TA_E_ code after the events returned. */
size_t ta_decoder_batch(struct ta_decoder *d, struct ta_event *ev, size_t max, int *rc);

/* ---- the FILTER chunk (filterchunk.c) ----------------------------------- */

/* How a function named by the filters is kept out (FILTER chunk). */
#define TA_FILTER_HOW_PATCHED 1u /* its calls to the hooks became no-ops */
#define TA_FILTER_HOW_RUNTIME 2u /* the filtering hooks decide at each call */
/* Which setting named it (bits). */
#define TA_FILTER_KIND_FILTER  1u /* an inclusion of TRACEAGENT_FILTER */
#define TA_FILTER_KIND_NOT     2u /* a `!` exclusion of TRACEAGENT_FILTER */
#define TA_FILTER_KIND_EXCLUDE 4u /* TRACEAGENT_EXCLUDE */

/* At most this many functions in one FILTER chunk (a chunk is <= 16 MiB,
 * and each takes at least 3 bytes). */
#define TA_FILTER_MAX_FUNCS (16u << 20) / 3

struct ta_filter_fn {
	uint64_t addr;
	uint32_t how;  /* TA_FILTER_HOW_* (others possible: shown as a number) */
	uint32_t kind; /* TA_FILTER_KIND_* bits */
};

/* A FILTER chunk decoded.  The strings are NUL-terminated copies; the
 * whole is owned by the caller (ta_filter_info_free). */
struct ta_filter_info {
	char *filter, *exclude;
	uint64_t depth;		  /* 0: no limit */
	uint64_t min_duration_ns; /* 0: none */
	uint64_t nfns;
	struct ta_filter_fn *fns;
};

/* Decodes a FILTER payload of len bytes, bounded by it (hostile input:
 * every count is checked against the bytes left before anything is
 * allocated).  0, or TA_E_PAYLOAD / TA_E_NOMEM with *out empty. */
int ta_filter_decode(const void *payload, size_t len, struct ta_filter_info *out);
void ta_filter_info_free(struct ta_filter_info *f);

/* ---- the SYMBOLS chunk (symchunk.c) ------------------------------------- */

/*
 * A module's function symbols, so that a dump names its functions without
 * the module's file (FORMAT.md "19 SYMBOLS"):
 *   str build_id, u bias, str path, u source (TA_SYMS_*), u count, then
 *   count x (u value - previous value (the first from 0), u size,
 *   u shared (bytes the name shares with the previous one's start),
 *   str the rest of the name)
 * Values strictly increase.  A module's table may take several chunks,
 * each of which decodes on its own (its first entry from 0 and "").
 */
#define TA_SYMS_SYMTAB	 1u	/* the file's .symtab */
#define TA_SYMS_DEBUG	 2u	/* the .symtab of the debug file found by build-id */
#define TA_SYMS_DYNSYM	 3u	/* the file's .dynsym (a stripped file) */
#define TA_SYMS_NAME_MAX 65535u /* a longer name is not stored */
/* The most raw payload the encoder puts in one chunk (a reader takes up
 * to TA_CHUNK_MAX_PAYLOAD), and the most name bytes a chunk may decode
 * to per payload byte: front coding makes names out of few bytes, and a
 * hostile chunk must not make gigabytes of them. */
#define TA_SYMS_CHUNK_BYTES (1u << 20)
#define TA_SYMS_NAME_RATIO  64u

struct ta_syms_entry {
	uint64_t value, size; /* st_value (an offset from the load bias), st_size */
	const char *name;     /* NUL-terminated, as in the symbol table (mangled) */
};

/* A symbol as read from a table, before the aliases are chosen from. */
struct ta_syms_raw {
	uint64_t value, size;
	const char *name;
	size_t order; /* its index in the table */
	int rank;     /* binding: 0 global, 1 weak, 2 local */
};

/* A symbol's rank from its ELF binding (STB_*, st_info >> 4): when symbols
 * share an address, the global name is the one a user wrote, a local alias
 * (often with underscores) the least likely. */
static inline int ta_syms_rank(unsigned bind)
{
	return bind == 1 /* STB_GLOBAL */ ? 0 : bind == 2 /* STB_WEAK */ ? 1 : 2;
}

/* Sorts r by value and keeps one symbol per value, the one the readers
 * show: sized before size 0, then by binding, then the first in the
 * table.  Returns how many are kept (at the start of r). */
size_t ta_syms_pick(struct ta_syms_raw *r, size_t n);

/* Encodes n entries (values strictly increasing) as one or more SYMBOLS
 * payloads, each passed to emit (which returns 0, or nonzero to stop).
 * Names longer than TA_SYMS_NAME_MAX and entries out of order are left
 * out.  0, -TA_E_NOMEM, or emit's nonzero result. */
int ta_syms_encode(const uint8_t *build_id, size_t build_id_len, uint64_t bias, const char *path,
		   unsigned source, const struct ta_syms_entry *e, size_t n,
		   int (*emit)(void *arg, const void *payload, size_t len), void *arg);

/* One SYMBOLS chunk decoded: owned by it (ta_syms_free). */
struct ta_syms {
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t bias;
	char *path; /* NUL-terminated */
	unsigned source;
	size_t n;
	struct ta_syms_entry *e; /* names in pool */
	char *pool;
};

/* Decodes a SYMBOLS payload (hostile input: counts checked against the
 * bytes left, names bounded by TA_SYMS_NAME_RATIO).  0, or -TA_E_PAYLOAD /
 * -TA_E_NOMEM with *out empty. */
int ta_syms_decode(const void *payload, size_t len, struct ta_syms *out);
void ta_syms_free(struct ta_syms *s);

#endif /* TA_FORMAT_H */
