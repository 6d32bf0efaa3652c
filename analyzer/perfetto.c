/* SPDX-License-Identifier: MIT */
/*
 * perfetto.c - `traceagent export --format=perfetto`: the calls of a dump as
 * Perfetto's native trace (a perfetto.protos.Trace of TracePackets), which
 * Perfetto UI and trace_processor read without the JSON importer's limits.
 *
 * Each thread is a packet sequence of its own, and its calls TrackEvent
 * slices (a BEGIN and an END) on its thread track.  What makes the format
 * small is the sequence's incremental state, set up by the sequence's first
 * packet (SEQ_INCREMENTAL_STATE_CLEARED):
 *  - defaults: the thread's track, and timestamps on clock 64, a clock of
 *    the sequence declared incremental by a ClockSnapshot, so a timestamp
 *    is the delta from the packet before (a byte or two, not eight);
 *  - interned names: a function's name and category go out once per
 *    sequence (InternedData, in the packet that first uses them), events
 *    carry their ids.
 * A call costs about 27 bytes (Chrome JSON: about 130).  Packets referring
 * to that state say so (SEQ_NEEDS_INCREMENTAL_STATE).
 *
 * The timeline (timeline.c) hands each thread's calls in time order, so the
 * deltas are never negative; an event that would go back in time (a
 * damaged dump) and the frames (whose slices are written when they end) go
 * out with an absolute time on CLOCK_MONOTONIC instead.  Track descriptors
 * (processes, threads, counters, frame sets) come last, when the threads'
 * names are known: trace processor reads them before it sorts the events.
 * Timestamps are ns on the dump's clock (CLOCK_MONOTONIC), declared the
 * trace's clock by the first packet.
 *
 * Memory: per thread, a bit per function and category whose name went out
 * on its sequence; the counters, frame sets and zones still open.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export_pb.h"
#include "pbenc.h"

/* Field numbers of perfetto.protos (protos/perfetto/trace/...; the subset
 * used is tests/perfetto_subset.proto). */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	PK_TIMESTAMP = 8,
	PK_CLOCK_ID = 58,
	PK_SEQ_ID = 10,
	PK_SEQ_FLAGS = 13,
	PK_INTERNED = 12,
	PK_DEFAULTS = 59,
	PK_CLOCK_SNAPSHOT = 6,
	PK_TRACK_EVENT = 11,
	PK_TRACK_DESCRIPTOR = 60,
	PK_COMPRESSED = 50,
	/* TracePacketDefaults */
	DEF_CLOCK_ID = 58,
	DEF_TRACK_EVENT = 11,
	/* TrackEventDefaults, TrackEvent */
	TE_TRACK_UUID = 11,
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_DOUBLE_COUNTER_VALUE = 44,
	/* ClockSnapshot, ClockSnapshot.Clock */
	CS_CLOCKS = 1,
	CS_PRIMARY = 2,
	CLK_ID = 1,
	CLK_TIMESTAMP = 2,
	CLK_INCREMENTAL = 3,
	/* InternedData; EventCategory and EventName: iid 1, name 2 */
	IN_CATEGORIES = 1,
	IN_NAMES = 2,
	IID = 1,
	IID_NAME = 2,
	/* DebugAnnotation */
	DA_NAME = 10,
	DA_BOOL = 2,
	DA_UINT = 3,
	DA_STRING = 6,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	TD_UUID = 1,
	TD_PARENT = 5,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_CMDLINE = 2,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
};

enum { SEQ_CLEARED = 1 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { CLOCK_MONO = 3, CLOCK_BOOT = 6, CLOCK_SEQ = 64 };

/* Track uuids: one range per kind of track. */
#define UUID_PROCESS(pid) ((1ull << 32) | (pid))
#define UUID_THREAD(index) ((2ull << 32) | (index))
#define UUID_COUNTER(k) ((3ull << 32) | (k))
#define UUID_FRAMES(k) ((4ull << 32) | (k))

/* The sequence of the trace-wide packets (clock, descriptors). */
#define SEQ_GLOBAL 1u

/* Packets are deflated in bundles of this many bytes: each bundle's
 * packet must stay under 512 KiB, and deflate never grows 256 KiB by more
 * than a few hundred bytes. */
#define BUNDLE_BYTES (256u << 10)

struct pf_thread {
	uint32_t seq;	 /* 0 until its first packet */
	int64_t last;	 /* the sequence clock's value: the last delta's end */
	uint8_t *named;	 /* bit per function id: its EventName went out */
	uint32_t nnamed; /* bits */
	uint8_t *catted; /* bit per category iid */
	uint32_t ncatted;
};

/* A counter of a process: a counter track. */
struct pf_counter {
	uint32_t pid;
	char *name;
};

/* A frame set of a process: a track of its own, each mark the end of the
 * frame the one before began. */
struct pf_frames {
	uint32_t pid;
	char *name;
	int64_t last_ns;
	uint64_t marks;
};

/* What TA_ZONE_TEXT and TA_ZONE_VALUE gave a zone still open, for its END
 * (trace processor merges the args of a BEGIN and its END). */
struct pf_zone {
	const struct ta_thread *t;
	uint32_t depth;
	int64_t start_ns;
	char *text;
	int has_value;
	uint64_t value;
};

struct pf {
	FILE *f;
	struct ta_pb pb;
	z_stream z;
	uint8_t *zbuf; /* a bundle deflated */
	size_t zcap;
	struct ta_timeline tl;
	int64_t t0; /* the dump's start on CLOCK_MONOTONIC */
	uint32_t next_seq;
	int nomem;

	struct pf_thread *th; /* by ta_thread.index */
	uint32_t nth;
	uint32_t *cat; /* by function id: its category's iid, 0 not known yet */
	uint32_t ncat;
	char **cats; /* category names by iid - 1 */
	uint32_t ncats;
	struct pf_counter *counters;
	size_t ncounters;
	struct pf_frames *frames;
	size_t nframes;
	struct pf_zone *zones;
	size_t nzones;
};

/* ---- the buffer ---------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		p[n++] = (uint8_t)(v | 0x80);
	p[n++] = (uint8_t)v;
	return n;
}

/* Writes the packets the encoder holds (when there are enough of them, or
 * force) deflated as the compressed_packets of one packet. */
static void flush(struct pf *x, int force)
{
	uint8_t head[32], key[4], len[10];
	size_t n, nkey, nlen, out, bound;

	if (ta_pb_failed(&x->pb) || !x->pb.len || (!force && x->pb.len < BUNDLE_BYTES))
		return;
	bound = deflateBound(&x->z, (uLong)x->pb.len);
	if (bound > x->zcap) {
		uint8_t *z = realloc(x->zbuf, bound);

		if (!z) {
			x->nomem = 1;
			return;
		}
		x->zbuf = z;
		x->zcap = bound;
	}
	x->z.next_in = x->pb.buf;
	x->z.avail_in = (uInt)x->pb.len;
	x->z.next_out = x->zbuf;
	x->z.avail_out = (uInt)x->zcap;
	if (deflate(&x->z, Z_FINISH) != Z_STREAM_END || deflateReset(&x->z) != Z_OK) {
		x->nomem = 1;
		return;
	}
	out = x->zcap - x->z.avail_out;
	/* Trace.packet { compressed_packets: BYTES }: its key and length, then
	 * the field's, then the bytes. */
	nkey = put_varint(key, PK_COMPRESSED << 3 | 2);
	nlen = put_varint(len, out);
	n = put_varint(head, TRACE_PACKET << 3 | 2);
	n += put_varint(head + n, nkey + nlen + out);
	memcpy(head + n, key, nkey);
	n += nkey;
	memcpy(head + n, len, nlen);
	n += nlen;
	fwrite(head, 1, n, x->f);
	fwrite(x->zbuf, 1, out, x->f);
	ta_pb_reset(&x->pb);
}

/* A bit set by index: 1 when bit i was already set; -1 without memory. */
static int bit_test_set(uint8_t **bits, uint32_t *n, uint32_t i)
{
	if (i >= *n) {
		uint32_t k = *n ? *n : 256;
		uint8_t *b;

		while (k <= i)
			k *= 2;
		b = realloc(*bits, k / 8);
		if (!b)
			return -1;
		memset(b + *n / 8, 0, (k - *n) / 8);
		*bits = b;
		*n = k;
	}
	if ((*bits)[i / 8] & (1u << (i % 8)))
		return 1;
	(*bits)[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* ---- sequences ------------------------------------------------------------------ */

static struct pf_thread *thread_of(struct pf *x, const struct ta_thread *t)
{
	if (t->index >= x->nth) {
		uint32_t n = x->nth ? x->nth : 16;
		struct pf_thread *th;

		while (n <= t->index)
			n *= 2;
		th = realloc(x->th, n * sizeof(*th));
		if (!th) {
			x->nomem = 1;
			return NULL;
		}
		memset(th + x->nth, 0, (n - x->nth) * sizeof(*th));
		x->th = th;
		x->nth = n;
	}
	return &x->th[t->index];
}

static void clock_entry(struct ta_pb *b, uint32_t id, int64_t ts, int incremental)
{
	ta_pb_begin(b, CS_CLOCKS);
	ta_pb_varint(b, CLK_ID, id);
	ta_pb_varint(b, CLK_TIMESTAMP, (uint64_t)ts);
	if (incremental)
		ta_pb_varint(b, CLK_INCREMENTAL, 1);
	ta_pb_end(b);
}

/* The first packet of a thread's sequence: its incremental state. */
static void seq_start(struct pf *x, const struct ta_thread *t, struct pf_thread *pt)
{
	struct ta_pb *b = &x->pb;

	pt->seq = x->next_seq++;
	pt->last = x->t0;
	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_TIMESTAMP, (uint64_t)x->t0);
	ta_pb_varint(b, PK_CLOCK_ID, CLOCK_MONO);
	ta_pb_varint(b, PK_SEQ_ID, pt->seq);
	ta_pb_varint(b, PK_SEQ_FLAGS, SEQ_CLEARED);
	ta_pb_begin(b, PK_DEFAULTS);
	ta_pb_varint(b, DEF_CLOCK_ID, CLOCK_SEQ);
	ta_pb_begin(b, DEF_TRACK_EVENT);
	ta_pb_varint(b, TE_TRACK_UUID, UUID_THREAD(t->index));
	ta_pb_end(b);
	ta_pb_end(b);
	ta_pb_begin(b, PK_CLOCK_SNAPSHOT);
	clock_entry(b, CLOCK_MONO, x->t0, 0);
	clock_entry(b, CLOCK_SEQ, x->t0, 1);
	ta_pb_end(b);
	ta_pb_end(b);
}

/*
 * Opens a packet of thread t's sequence at ns from the dump's start (the
 * caller closes it with ta_pb_end): the time as a delta on the sequence's
 * clock, or absolute when it would go back (always, when absolute).
 * NULL without memory.
 */
static struct pf_thread *packet(struct pf *x, const struct ta_thread *t, int64_t ns, int absolute)
{
	struct pf_thread *pt = thread_of(x, t);
	struct ta_pb *b = &x->pb;
	int64_t at = x->t0 + ns;

	if (!pt)
		return NULL;
	if (!pt->seq)
		seq_start(x, t, pt);
	ta_pb_begin(b, TRACE_PACKET);
	if (absolute || at < pt->last) {
		ta_pb_varint(b, PK_TIMESTAMP, at > 0 ? (uint64_t)at : 0);
		ta_pb_varint(b, PK_CLOCK_ID, CLOCK_MONO);
	} else {
		ta_pb_varint(b, PK_TIMESTAMP, (uint64_t)(at - pt->last));
		pt->last = at;
	}
	ta_pb_varint(b, PK_SEQ_ID, pt->seq);
	return pt;
}

static void packet_end(struct pf *x)
{
	ta_pb_end(&x->pb);
	flush(x, 0);
}

/* ---- names ------------------------------------------------------------------------ */

const char *ta_export_category(const char *module, char *buf, size_t n)
{
	if (!strcmp(module, TA_LIBCALL_MODULE))
		return "libcall";
	if (!strcmp(module, TA_ZONE_MODULE))
		return "zone";
	snprintf(buf, n, "function,%s", ta_base_name(module));
	return buf;
}

/* The category iid of function fn (interned trace-wide), 0 without memory. */
static uint32_t category_of(struct pf *x, uint32_t fn)
{
	char buf[300];
	const char *name;
	uint32_t k;

	if (fn >= x->ncat) {
		uint32_t n = x->ncat ? x->ncat : 256;
		uint32_t *c;

		while (n <= fn)
			n *= 2;
		c = realloc(x->cat, n * sizeof(*c));
		if (!c)
			return 0;
		memset(c + x->ncat, 0, (n - x->ncat) * sizeof(*c));
		x->cat = c;
		x->ncat = n;
	}
	if (x->cat[fn])
		return x->cat[fn];
	name = ta_export_category(x->tl.fns.fn[fn].module, buf, sizeof(buf));
	for (k = 0; k < x->ncats && strcmp(x->cats[k], name); k++)
		;
	if (k == x->ncats) {
		char **c = realloc(x->cats, (x->ncats + 1) * sizeof(*c));

		if (!c)
			return 0;
		x->cats = c;
		c[k] = strdup(name);
		if (!c[k])
			return 0;
		x->ncats++;
	}
	return x->cat[fn] = k + 1;
}

/* The interned data a slice's BEGIN needs on its sequence: its name and
 * category, each the first time.  Returns the category iid (0: no memory). */
static uint32_t intern(struct pf *x, struct pf_thread *pt, uint32_t fn)
{
	struct ta_pb *b = &x->pb;
	uint32_t cat = category_of(x, fn);
	int had_name, had_cat;

	if (!cat)
		return 0;
	had_name = bit_test_set(&pt->named, &pt->nnamed, fn);
	had_cat = bit_test_set(&pt->catted, &pt->ncatted, cat);
	if (had_name < 0 || had_cat < 0)
		return 0;
	if (had_name && had_cat)
		return cat;
	ta_pb_begin(b, PK_INTERNED);
	if (!had_cat) {
		ta_pb_begin(b, IN_CATEGORIES);
		ta_pb_varint(b, IID, cat);
		ta_pb_str(b, IID_NAME, x->cats[cat - 1]);
		ta_pb_end(b);
	}
	if (!had_name) {
		ta_pb_begin(b, IN_NAMES);
		ta_pb_varint(b, IID, (uint64_t)fn + 1);
		ta_pb_str(b, IID_NAME, x->tl.fns.fn[fn].name);
		ta_pb_end(b);
	}
	ta_pb_end(b);
	return cat;
}

/* ---- calls ------------------------------------------------------------------------ */

static void debug_str(struct ta_pb *b, const char *name, const char *value)
{
	ta_pb_begin(b, TE_DEBUG);
	ta_pb_str(b, DA_NAME, name);
	ta_pb_str(b, DA_STRING, value);
	ta_pb_end(b);
}

static void debug_uint(struct ta_pb *b, const char *name, uint64_t value)
{
	ta_pb_begin(b, TE_DEBUG);
	ta_pb_str(b, DA_NAME, name);
	ta_pb_varint(b, DA_UINT, value);
	ta_pb_end(b);
}

static void debug_true(struct ta_pb *b, const char *name)
{
	ta_pb_begin(b, TE_DEBUG);
	ta_pb_str(b, DA_NAME, name);
	ta_pb_varint(b, DA_BOOL, 1);
	ta_pb_end(b);
}

static void slice_begin(struct pf *x, const struct ta_tlcall *c)
{
	struct ta_pb *b = &x->pb;
	struct pf_thread *pt = packet(x, c->t, c->start_ns, 0);
	uint32_t cat;

	if (!pt)
		return;
	cat = intern(x, pt, c->fn);
	if (!cat)
		x->nomem = 1;
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_CATEGORY_IIDS, cat);
	ta_pb_varint(b, TE_TYPE, TYPE_BEGIN);
	ta_pb_varint(b, TE_NAME_IID, (uint64_t)c->fn + 1);
	ta_pb_end(b);
	packet_end(x);
}

static void slice_end(struct pf *x, const struct ta_tlcall *c)
{
	struct ta_pb *b = &x->pb;

	if (!packet(x, c->t, c->start_ns + (int64_t)c->dur_ns, 0))
		return;
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_TYPE, TYPE_END);
	if (c->flags & TA_VISIT_OPEN)
		debug_true(b, "open");
	/* A zone's text and value, given while it ran. */
	for (size_t k = 0; k < x->nzones; k++) {
		struct pf_zone *z = &x->zones[k];

		if (z->t != c->t || z->depth != c->depth || z->start_ns != c->start_ns)
			continue;
		if (z->text)
			debug_str(b, "text", z->text);
		if (z->has_value)
			debug_uint(b, "value", z->value);
		free(z->text);
		x->zones[k] = x->zones[--x->nzones];
		break;
	}
	ta_pb_end(b);
	packet_end(x);
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	struct pf *x = ctx;

	if (c->kind != TA_TL_EXIT)
		slice_begin(x, c);
	if (c->kind != TA_TL_ENTER)
		slice_end(x, c);
}

/* ---- the manual API ------------------------------------------------------------------ */

static void zone_arg(struct pf *x, const struct ta_tlapi *a)
{
	struct pf_zone *z = NULL;

	for (size_t k = 0; k < x->nzones; k++)
		if (x->zones[k].t == a->t && x->zones[k].depth == (uint32_t)a->zone_depth &&
		    x->zones[k].start_ns == a->zone_start_ns)
			z = &x->zones[k];
	if (!z) {
		z = realloc(x->zones, (x->nzones + 1) * sizeof(*z));
		if (!z) {
			x->nomem = 1;
			return;
		}
		x->zones = z;
		z = &x->zones[x->nzones++];
		memset(z, 0, sizeof(*z));
		z->t = a->t;
		z->depth = (uint32_t)a->zone_depth;
		z->start_ns = a->zone_start_ns;
	}
	if (a->e->kind == TA_EXT_ZONE_VALUE) {
		z->has_value = 1;
		z->value = a->e->value;
		return;
	}
	/* A later text replaces an earlier one, as a zone shows one. */
	free(z->text);
	z->text = strdup(a->e->text);
	if (!z->text)
		x->nomem = 1;
}

/* The counter track of (pid, name): its index, or -1 without memory. */
static long counter_of(struct pf *x, uint32_t pid, const char *name)
{
	struct pf_counter *c;

	for (size_t k = 0; k < x->ncounters; k++)
		if (x->counters[k].pid == pid && !strcmp(x->counters[k].name, name))
			return (long)k;
	c = realloc(x->counters, (x->ncounters + 1) * sizeof(*c));
	if (!c)
		return -1;
	x->counters = c;
	c[x->ncounters].pid = pid;
	c[x->ncounters].name = strdup(name);
	if (!c[x->ncounters].name)
		return -1;
	return (long)x->ncounters++;
}

static struct pf_frames *frames_of(struct pf *x, uint32_t pid, const char *name)
{
	struct pf_frames *fs;

	for (size_t k = 0; k < x->nframes; k++)
		if (x->frames[k].pid == pid && !strcmp(x->frames[k].name, name))
			return &x->frames[k];
	fs = realloc(x->frames, (x->nframes + 1) * sizeof(*fs));
	if (!fs)
		return NULL;
	x->frames = fs;
	fs = &x->frames[x->nframes];
	memset(fs, 0, sizeof(*fs));
	fs->name = strdup(name);
	if (!fs->name)
		return NULL;
	fs->pid = pid;
	x->nframes++;
	return fs;
}

/* An instant event on the thread's track; the caller adds its annotations
 * and closes the event and the packet. */
static int instant(struct pf *x, const struct ta_tlapi *a, const char *name)
{
	struct ta_pb *b = &x->pb;

	if (!packet(x, a->t, a->ns, 0))
		return -1;
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_TYPE, TYPE_INSTANT);
	ta_pb_str(b, TE_NAME, name);
	return 0;
}

static void instant_end(struct pf *x)
{
	ta_pb_end(&x->pb);
	packet_end(x);
}

/* One frame of a set: a slice from the mark before to this one, written
 * now, with absolute times (the sequence's clock is past its start). */
static void frame(struct pf *x, const struct ta_tlapi *a, struct pf_frames *fs)
{
	struct ta_pb *b = &x->pb;
	char name[300];

	snprintf(name, sizeof(name), "%s %" PRIu64, fs->name, fs->marks - 1);
	if (!packet(x, a->t, fs->last_ns, 1))
		return;
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_TYPE, TYPE_BEGIN);
	ta_pb_varint(b, TE_TRACK_UUID, UUID_FRAMES(fs - x->frames));
	ta_pb_str(b, TE_NAME, name);
	ta_pb_end(b);
	packet_end(x);
	if (!packet(x, a->t, a->ns, 1))
		return;
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_TYPE, TYPE_END);
	ta_pb_varint(b, TE_TRACK_UUID, UUID_FRAMES(fs - x->frames));
	ta_pb_end(b);
	packet_end(x);
}

/*
 * Messages, instants, channel switches and zone ENDs without a zone are
 * instants of their thread; counters values on a counter track of their
 * process; frames slices on a track per set; zone texts and values wait
 * for their zone's END.
 */
static void api(void *ctx, const struct ta_tlapi *a)
{
	struct pf *x = ctx;
	struct ta_pb *b = &x->pb;
	const struct ta_apiev *ev = a->e;
	struct pf_frames *fs;
	char name[128];
	long k;

	switch (ev->kind) {
	case TA_EXT_MESSAGE:
		if (instant(x, a, ev->text) < 0)
			break;
		debug_str(b, "channel", a->channel);
		if (ev->cut)
			debug_true(b, "cut");
		instant_end(x);
		break;
	case TA_EXT_INSTANT:
		if (instant(x, a, ev->name) < 0)
			break;
		debug_str(b, "channel", a->channel);
		instant_end(x);
		break;
	case TA_EXT_CHANNEL:
		snprintf(name, sizeof(name), "channel %s %s", a->channel, ev->on ? "on" : "off");
		if (instant(x, a, name) == 0)
			instant_end(x);
		break;
	case TA_EXT_ZONE_UNMATCHED:
		if (instant(x, a, "zone end without a zone") == 0)
			instant_end(x);
		break;
	case TA_EXT_COUNTER:
		/* As in the Chrome export: a NaN or infinity is no point to draw. */
		if (ev->is_double && !isfinite(ev->d))
			break;
		k = counter_of(x, a->t->pid, ev->name);
		if (k < 0) {
			x->nomem = 1;
			break;
		}
		if (!packet(x, a->t, a->ns, 0))
			break;
		ta_pb_begin(b, PK_TRACK_EVENT);
		ta_pb_varint(b, TE_TYPE, TYPE_COUNTER);
		ta_pb_varint(b, TE_TRACK_UUID, UUID_COUNTER((uint64_t)k));
		if (ev->is_double)
			ta_pb_double(b, TE_DOUBLE_COUNTER_VALUE, ev->d);
		else
			ta_pb_varint(b, TE_COUNTER_VALUE, (uint64_t)ev->i);
		ta_pb_end(b);
		packet_end(x);
		break;
	case TA_EXT_FRAME:
		fs = frames_of(x, a->t->pid, ev->name);
		if (!fs) {
			x->nomem = 1;
			break;
		}
		if (fs->marks++)
			frame(x, a, fs);
		fs->last_ns = a->ns;
		break;
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_ZONE_VALUE:
		if (a->zone_depth >= 0)
			zone_arg(x, a);
		break;
	}
}

/* ---- the trace-wide packets ------------------------------------------------------------ */

/* The dump's clock is the trace's: CLOCK_MONOTONIC, also given as
 * BOOTTIME for readers that do not take primary_trace_clock. */
static void trace_clock(struct pf *x)
{
	struct ta_pb *b = &x->pb;

	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_SEQ_ID, SEQ_GLOBAL);
	ta_pb_begin(b, PK_CLOCK_SNAPSHOT);
	clock_entry(b, CLOCK_MONO, x->t0, 0);
	clock_entry(b, CLOCK_BOOT, x->t0, 0);
	ta_pb_varint(b, CS_PRIMARY, CLOCK_MONO);
	ta_pb_end(b);
	ta_pb_end(b);
}

/* Opens a TrackDescriptor packet (closed with two ta_pb_end). */
static void descriptor(struct pf *x, uint64_t uuid, uint64_t parent, const char *name)
{
	struct ta_pb *b = &x->pb;

	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_SEQ_ID, SEQ_GLOBAL);
	ta_pb_begin(b, PK_TRACK_DESCRIPTOR);
	ta_pb_varint(b, TD_UUID, uuid);
	if (parent)
		ta_pb_varint(b, TD_PARENT, parent);
	if (name)
		ta_pb_str(b, TD_NAME, name);
}

static void descriptor_end(struct pf *x)
{
	ta_pb_end(&x->pb);
	ta_pb_end(&x->pb);
	flush(x, 0);
}

static void descriptors(struct pf *x)
{
	const struct ta_session *s = x->tl.v.s;
	struct ta_pb *b = &x->pb;
	char name[300];

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];

		if (p->exe && p->exe[0])
			snprintf(name, sizeof(name), "%s", ta_base_name(p->exe));
		else {
			char pn[TA_PID_NAME_MAX];

			snprintf(name, sizeof(name), "process %s", ta_pid_name(s, p->pid, pn));
		}
		descriptor(x, UUID_PROCESS(p->pid), 0, NULL);
		ta_pb_begin(b, TD_PROCESS);
		ta_pb_varint(b, PD_PID, p->pid);
		for (size_t k = 0; k < p->argc; k++)
			ta_pb_str(b, PD_CMDLINE, p->argv[k]);
		ta_pb_str(b, PD_NAME, name);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_thread *t = s->threads[i];

		/* Only the threads that have a sequence: --tid left the others out. */
		if (t->index >= x->nth || !x->th[t->index].seq)
			continue;
		snprintf(name, sizeof(name), "thread %" PRIu64, t->tid);
		descriptor(x, UUID_THREAD(t->index), UUID_PROCESS(t->pid), NULL);
		ta_pb_begin(b, TD_THREAD);
		ta_pb_varint(b, THD_PID, t->pid);
		ta_pb_varint(b, THD_TID, t->tid);
		ta_pb_str(b, THD_NAME, t->name && t->name[0] ? t->name : name);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t k = 0; k < x->ncounters; k++) {
		descriptor(x, UUID_COUNTER(k), UUID_PROCESS(x->counters[k].pid),
			   x->counters[k].name);
		ta_pb_begin(b, TD_COUNTER);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t k = 0; k < x->nframes; k++) {
		snprintf(name, sizeof(name), "frames: %s", x->frames[k].name);
		descriptor(x, UUID_FRAMES(k), UUID_PROCESS(x->frames[k].pid), name);
		descriptor_end(x);
	}
}

/* ---- the export ------------------------------------------------------------------------- */

/* The timeline calls back before it tells the dump's start: the first
 * packet goes out at the first event. */
static void start(struct pf *x)
{
	x->t0 = x->tl.start_ns;
	trace_clock(x);
}

static void emit_first(void *ctx, const struct ta_tlcall *c)
{
	struct pf *x = ctx;

	if (!x->next_seq) {
		x->next_seq = SEQ_GLOBAL + 1;
		start(x);
	}
	emit(ctx, c);
}

static void api_first(void *ctx, const struct ta_tlapi *a)
{
	struct pf *x = ctx;

	if (!x->next_seq) {
		x->next_seq = SEQ_GLOBAL + 1;
		start(x);
	}
	api(ctx, a);
}

int ta_export_perfetto(FILE *f, const char *path, const struct ta_tlopts *o)
{
	struct pf x;
	int status;

	memset(&x, 0, sizeof(x));
	x.f = f;
	ta_pb_init(&x.pb);
	/* Speed over size: the bundles are small and very repetitive. */
	if (deflateInit(&x.z, Z_BEST_SPEED) != Z_OK) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		return 1;
	}
	if (ta_timeline_run_api(&x.tl, path, o, emit_first, api_first, &x) < 0) {
		status = x.tl.v.status;
		goto out;
	}
	status = x.tl.v.status;
	if (!x.next_seq) {
		x.next_seq = SEQ_GLOBAL + 1;
		start(&x);
	}
	descriptors(&x);
	flush(&x, 1);
	if (x.nomem || ta_pb_failed(&x.pb)) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		status = status ? status : 1;
	}
	if (x.tl.v.s && x.tl.v.status < 2)
		ta_timeline_warnings(&x.tl);
out:
	ta_timeline_close(&x.tl);
	ta_pb_free(&x.pb);
	deflateEnd(&x.z);
	free(x.zbuf);
	for (uint32_t i = 0; i < x.nth; i++) {
		free(x.th[i].named);
		free(x.th[i].catted);
	}
	free(x.th);
	free(x.cat);
	for (uint32_t i = 0; i < x.ncats; i++)
		free(x.cats[i]);
	free(x.cats);
	for (size_t i = 0; i < x.ncounters; i++)
		free(x.counters[i].name);
	free(x.counters);
	for (size_t i = 0; i < x.nframes; i++)
		free(x.frames[i].name);
	free(x.frames);
	for (size_t i = 0; i < x.nzones; i++)
		free(x.zones[i].text);
	free(x.zones);
	return status;
}
