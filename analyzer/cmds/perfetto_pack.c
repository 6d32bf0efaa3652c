/* SPDX-License-Identifier: MIT */
/*
 * perfetto_pack.c - the Perfetto export's packets, made by a job on a
 * worker (-j): the records' times converted, each sequence's clock taken
 * from the job before (the chain), the TracePackets encoded and deflated in
 * bundles.  The reader's side, which fills the records, is perfetto.c;
 * the format's layout is described there.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "perfetto_int.h"

/* ---- the buffer ---------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		p[n++] = (uint8_t)(v | 0x80);
	p[n++] = (uint8_t)v;
	return n;
}

/* Deflates len bytes of packets at in (cut into j's runs, or none) as
 * the compressed_packets of one packet, appended to j->z.out. */
static void bundle(struct zjob *j, const uint8_t *in, size_t len)
{
	uint8_t head[16], key[4], lenb[10];
	size_t n, nkey, nlen, out, at;

	if (!len)
		return;
	/* Room for the head, written once the deflated length is known. */
	at = j->z.len;
	j->z.len += sizeof(head);
	if (ta_pkz_begin(&j->z, in, len) < 0) {
		j->z.len = at;
		j->fail = 1;
		return;
	}
	for (size_t k = 0; k < j->nruns; k++)
		ta_pkz_packet(&j->z, j->runs[k] >> 5, j->runs[k] & 31);
	ta_pkz_end(&j->z);
	j->nruns = 0;
	j->covered = 0;
	out = j->z.len - at - sizeof(head);
	/* Trace.packet { compressed_packets: BYTES }: its key and length, then
	 * the field's, then the bytes. */
	nkey = put_varint(key, PK_COMPRESSED << 3 | 2);
	nlen = put_varint(lenb, out);
	n = put_varint(head, TRACE_PACKET << 3 | 2);
	n += put_varint(head + n, nkey + nlen + out);
	memcpy(head + n, key, nkey);
	n += nkey;
	memcpy(head + n, lenb, nlen);
	n += nlen;
	memmove(j->z.out + at + n, j->z.out + at + sizeof(head), out);
	memcpy(j->z.out + at, head, n);
	j->z.len = at + n + out;
}

/* The packet that ends at the encoder's end for the deflater: its body,
 * what the encoder holds since the packet before (a sequence's first
 * packet with it), and tail, its last bytes (the timestamp). */
static inline __attribute__((always_inline)) void runs_add(struct zjob *j, size_t tail)
{
	size_t body = j->pb.len - j->covered - tail;

	if (j->nruns == j->runs_cap) {
		uint32_t *r = ta_vec_reserve(j->runs, j->nruns + 1, &j->runs_cap, sizeof(*r), 4096);

		if (!r) {
			j->fail = 1;
			return;
		}
		j->runs = r;
	}
	j->runs[j->nruns++] = (uint32_t)body << 5 | (uint32_t)tail;
	j->covered = j->pb.len;
}

void ta_perfetto_clock_entry(struct ta_pb *b, uint32_t id, int64_t ts, int incremental)
{
	ta_pb_begin(b, CS_CLOCKS);
	ta_pb_varint(b, CLK_ID, id);
	ta_pb_varint(b, CLK_TIMESTAMP, (uint64_t)ts);
	if (incremental)
		ta_pb_varint(b, CLK_INCREMENTAL, 1);
	ta_pb_end(b);
}

/* ---- a job's packets (in a worker) ---------------------------------------------------- */

/* The first packet of a thread's sequence: its incremental state. */
static void seq_start(struct ta_pb *b, int64_t t0, const struct prec *r)
{
	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_TIMESTAMP, (uint64_t)t0);
	ta_pb_varint(b, PK_CLOCK_ID, CLOCK_MONO);
	ta_pb_varint(b, PK_SEQ_ID, r->seq);
	ta_pb_varint(b, PK_SEQ_FLAGS, SEQ_CLEARED);
	ta_pb_begin(b, PK_DEFAULTS);
	ta_pb_varint(b, DEF_CLOCK_ID, CLOCK_SEQ);
	ta_pb_begin(b, DEF_TRACK_EVENT);
	ta_pb_varint(b, TE_TRACK_UUID, UUID_THREAD(r->tindex));
	ta_pb_end(b);
	ta_pb_end(b);
	ta_pb_begin(b, PK_CLOCK_SNAPSHOT);
	ta_perfetto_clock_entry(b, CLOCK_MONO, t0, 0);
	ta_perfetto_clock_entry(b, CLOCK_SEQ, t0, 1);
	ta_pb_end(b);
	ta_pb_begin(b, PK_INTERNED);
	ta_pb_begin(b, IN_DA_NAMES);
	ta_pb_varint(b, IID, DA_MODULE);
	ta_pb_str(b, IID_NAME, "module");
	ta_pb_end(b);
	ta_pb_end(b);
	ta_pb_end(b);
}

/*
 * The timestamp of a packet of r's sequence at time at, written at t
 * (at most 16 bytes; returns their number): a delta on the sequence's
 * clock, or absolute on CLOCK_MONOTONIC when it would go back (always,
 * when absolute).  It is the packet's last field, after the bytes that
 * repeat from call to call, so that the deflater sees them whole.
 */
static inline __attribute__((always_inline)) size_t stamp(struct zjob *j, const struct prec *r,
							  int64_t at, int absolute, uint8_t *t)
{
	int64_t *last = &j->tlast[r->slot];
	size_t n = 0;

	if (absolute || at < *last) {
		n += put_varint(t + n, PK_TIMESTAMP << 3);
		n += put_varint(t + n, at > 0 ? (uint64_t)at : 0);
		n += put_varint(t + n, PK_CLOCK_ID << 3);
		n += put_varint(t + n, CLOCK_MONO);
	} else {
		n += put_varint(t + n, PK_TIMESTAMP << 3);
		n += put_varint(t + n, (uint64_t)(at - *last));
		*last = at;
	}
	return n;
}

/* The sequence's first packet, when r's is its first. */
static void seq_first(struct zjob *j, struct prec *r)
{
	if (r->newseq) {
		seq_start(&j->pb, j->x->t0, r);
		j->tlast[r->slot] = j->x->t0;
		r->newseq = 0;
	}
}

/* Opens a packet of r's sequence at time at, closed by packet_end. */
static void packet(struct zjob *j, struct prec *r, int64_t at, int absolute)
{
	seq_first(j, r);
	ta_pb_begin(&j->pb, TRACE_PACKET);
	ta_pb_varint(&j->pb, PK_SEQ_ID, r->seq);
	j->ntail = stamp(j, r, at, absolute, j->tail);
}

/* A bundle goes out when there are enough packets. */
static inline __attribute__((always_inline)) void packet_done(struct zjob *j, size_t tail)
{
	runs_add(j, tail);
	if (j->pb.len >= BUNDLE_BYTES && !ta_pb_failed(&j->pb)) {
		bundle(j, j->pb.buf, j->pb.len);
		ta_pb_reset(&j->pb);
	}
}

/* Ends a packet with its timestamp. */
static void packet_end(struct zjob *j)
{
	ta_pb_raw(&j->pb, j->tail, j->ntail);
	ta_pb_end(&j->pb);
	packet_done(j, j->ntail);
}

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

/* A BEGIN's TrackEvent, its module an annotation (interned name and value),
 * written at p (at most 48 bytes; returns their number). */
static inline __attribute__((always_inline)) size_t begin_event(const struct prec *r, uint8_t *p)
{
	size_t n = 0, te, da;

	p[n++] = PK_TRACK_EVENT << 3 | 2;
	te = n++; /* lengths: under 128 */
	p[n++] = TE_CATEGORY_IIDS << 3;
	n += put_varint(p + n, r->cat);
	p[n++] = TE_TYPE << 3;
	p[n++] = TYPE_BEGIN;
	p[n++] = TE_NAME_IID << 3;
	n += put_varint(p + n, (uint64_t)r->fn + 1);
	if (r->track) {
		p[n++] = TE_TRACK_UUID << 3;
		n += put_varint(p + n, UUID_FIBER(r->track - 1));
	}
	p[n++] = TE_DEBUG << 3 | 2;
	da = n++;
	p[n++] = DA_NAME_IID << 3;
	p[n++] = DA_MODULE;
	n += put_varint(p + n, DA_STRING_IID << 3);
	n += put_varint(p + n, r->mod);
	p[da] = (uint8_t)(n - da - 1);
	p[te] = (uint8_t)(n - te - 1);
	return n;
}

/*
 * A call's packet with nothing to intern, written in one go: the sequence,
 * the event (a BEGIN's, or an END without args), the timestamp.  Most
 * packets are these.
 */
static inline __attribute__((always_inline)) void call_packet(struct zjob *j, const struct prec *r,
							      int begin)
{
	uint8_t *p = ta_pb_reserve(&j->pb, 96);
	size_t n = 2, tail;

	if (!p)
		return;
	p[n++] = PK_SEQ_ID << 3;
	n += put_varint(p + n, r->seq);
	if (begin) {
		n += begin_event(r, p + n);
	} else {
		p[n++] = PK_TRACK_EVENT << 3 | 2;
		p[n++] = 2;
		p[n++] = TE_TYPE << 3;
		p[n++] = TYPE_END;
	}
	tail = stamp(j, r, begin ? r->at[0] : r->at[1], 0, p + n);
	n += tail;
	p[0] = TRACE_PACKET << 3 | 2;
	p[1] = (uint8_t)(n - 2);
	j->pb.len += n;
	packet_done(j, tail);
}

static void slice_begin(struct zjob *j, struct prec *r)
{
	struct ta_pb *b = &j->pb;
	uint8_t ev[48];

	seq_first(j, r);
	if (!r->icat && !r->iname && !r->imod) {
		call_packet(j, r, 1);
		return;
	}
	packet(j, r, r->at[0], 0);
	ta_pb_begin(b, PK_INTERNED);
	if (r->icat) {
		ta_pb_begin(b, IN_CATEGORIES);
		ta_pb_varint(b, IID, r->cat);
		ta_pb_str(b, IID_NAME, r->icat);
		ta_pb_end(b);
	}
	if (r->iname) {
		ta_pb_begin(b, IN_NAMES);
		ta_pb_varint(b, IID, (uint64_t)r->fn + 1);
		ta_pb_str(b, IID_NAME, r->iname);
		ta_pb_end(b);
	}
	if (r->imod) {
		ta_pb_begin(b, IN_DA_STRINGS);
		ta_pb_varint(b, IID, r->mod);
		ta_pb_str(b, IID_NAME, r->imod);
		ta_pb_end(b);
	}
	ta_pb_end(b);
	ta_pb_raw(b, ev, begin_event(r, ev));
	packet_end(j);
}

static void slice_end(struct zjob *j, struct prec *r)
{
	struct ta_pb *b = &j->pb;

	seq_first(j, r);
	if (!r->open && !r->partial && !r->text && !r->has_value && !r->track && !r->cargs &&
	    !r->has_lock) {
		call_packet(j, r, 0);
		return;
	}
	packet(j, r, r->at[1], 0);
	ta_pb_begin(b, PK_TRACK_EVENT);
	ta_pb_varint(b, TE_TYPE, TYPE_END);
	if (r->track)
		ta_pb_varint(b, TE_TRACK_UUID, UUID_FIBER(r->track - 1));
	if (r->open)
		debug_true(b, "open");
	else if (r->partial)
		debug_true(b, "partial");
	/* A zone's text and value, given while it ran. */
	if (r->text)
		debug_str(b, "text", r->text);
	if (r->has_value)
		debug_uint(b, "value", r->value);
	/* A lock call's lock, as the Chrome export's args name it. */
	if (r->has_lock) {
		char addr[24];

		snprintf(addr, sizeof(addr), "0x%" PRIx64, r->lock);
		debug_str(b, "lock", addr);
		if (r->lock_name)
			debug_str(b, "lock_name", r->lock_name);
	}
	/* The call's recorded arguments, as replay shows them. */
	for (char *line = r->cargs, *nl; line && *line; line = nl + 1) {
		char *tab = strchr(line, '\t');

		nl = strchr(line, '\n');
		if (!tab || !nl || tab > nl)
			break;
		*tab = *nl = 0;
		debug_str(b, line, tab + 1);
	}
	ta_pb_end(b);
	packet_end(j);
}

/* The packets of a record. */
static void record(struct zjob *j, struct prec *r)
{
	struct ta_pb *b = &j->pb;

	switch (r->kind) {
	case PR_BEGIN:
	case PR_END:
	case PR_CALL:
		if (r->kind & PR_BEGIN)
			slice_begin(j, r);
		if (r->kind & PR_END)
			slice_end(j, r);
		break;
	case PR_INSTANT:
		packet(j, r, r->at[0], 0);
		ta_pb_begin(b, PK_TRACK_EVENT);
		ta_pb_varint(b, TE_TYPE, TYPE_INSTANT);
		ta_pb_str(b, TE_NAME, r->text);
		if (r->chan)
			debug_str(b, "channel", r->chan);
		if (r->cut)
			debug_true(b, "cut");
		ta_pb_end(b);
		packet_end(j);
		break;
	case PR_COUNTER:
		packet(j, r, r->at[0], 0);
		ta_pb_begin(b, PK_TRACK_EVENT);
		ta_pb_varint(b, TE_TYPE, TYPE_COUNTER);
		ta_pb_varint(b, TE_TRACK_UUID, UUID_COUNTER(r->track));
		if (r->is_double)
			ta_pb_double(b, TE_DOUBLE_COUNTER_VALUE, r->d);
		else
			ta_pb_varint(b, TE_COUNTER_VALUE, (uint64_t)r->i);
		ta_pb_end(b);
		packet_end(j);
		break;
	}
}

/* The records' times, and each thread's latest. */
static void job_times(struct zjob *j)
{
	const struct pf *x = j->x;

	for (size_t k = 0; k < j->nslots; k++)
		j->tmax[k] = INT64_MIN;
	for (size_t k = 0; k < j->nr; k++) {
		struct prec *r = &j->r[k];
		int64_t *m = &j->tmax[r->slot];

		if (r->kind <= PR_CALL && r->p) {
			/* Each end on its own, as ta_tlcall_times has them: a
			 * BEGIN or END record converts one. */
			if (r->kind & PR_BEGIN)
				r->at[0] = x->t0 + ta_timeline_rel(&x->tl, r->p, r->enter);
			if (r->kind & PR_END)
				r->at[1] = x->t0 + ta_timeline_rel(&x->tl, r->p, r->exit);
			if ((r->kind & PR_BEGIN) && r->at[0] > *m)
				*m = r->at[0];
			if ((r->kind & PR_END) && r->at[1] > *m)
				*m = r->at[1];
		} else if (r->kind <= PR_CALL) {
			struct ta_tlcall c;
			int64_t start;
			uint64_t dur;

			memset(&c, 0, sizeof(c));
			c.p = r->p;
			c.enter = r->enter;
			c.exit = r->exit;
			ta_tlcall_times(&x->tl, &c, &start, &dur);
			r->at[0] = x->t0 + start;
			r->at[1] = x->t0 + (start + (int64_t)dur);
			if ((r->kind & PR_BEGIN) && r->at[0] > *m)
				*m = r->at[0];
			if ((r->kind & PR_END) && r->at[1] > *m)
				*m = r->at[1];
		} else {
			r->at[0] = x->t0 + r->ns;
			if (r->at[0] > *m)
				*m = r->at[0];
		}
	}
}

/* The job's turn in the chain: each of its threads' clock at its start
 * from the jobs before, and at its end for the jobs after. */
static void job_chain(struct zjob *j)
{
	struct pf *x = j->x;

	pthread_mutex_lock(&x->chain_mu);
	while (x->chained != j->no)
		pthread_cond_wait(&x->chain_cv, &x->chain_mu);
	for (size_t k = 0; k < j->nslots; k++) {
		uint32_t t = j->tidx[k];

		if (t >= x->nlast) {
			/* Two arrays of one capacity: nlast set once both have it. */
			size_t n = x->nlast;
			int64_t *l = ta_vec_reserve_max(x->last, (size_t)t + 1, &n, sizeof(*l), 16,
							UINT32_MAX);
			uint8_t *set;

			if (l)
				x->last = l;
			n = x->nlast;
			set = ta_vec_reserve_max(x->last_set, (size_t)t + 1, &n, 1, 16, UINT32_MAX);
			if (set)
				x->last_set = set;
			if (!l || !set) {
				x->chain_nomem = 1;
				j->tlast[k] = x->t0;
				continue;
			}
			memset(x->last_set + x->nlast, 0, n - x->nlast);
			x->nlast = (uint32_t)n;
		}
		/* A sequence begins with its clock at the dump's start. */
		j->tlast[k] = x->last_set[t] ? x->last[t] : x->t0;
		x->last[t] = j->tmax[k] > j->tlast[k] ? j->tmax[k] : j->tlast[k];
		x->last_set[t] = 1;
	}
	x->chained++;
	pthread_cond_broadcast(&x->chain_cv);
	pthread_mutex_unlock(&x->chain_mu);
}

void ta_perfetto_job_work(void *ctx, void *job)
{
	struct zjob *j = job;

	(void)ctx;
	j->z.len = 0;
	j->nruns = 0;
	j->covered = 0;
	j->fail = 0;
	if (j->len) {
		job_chain(j);
		bundle(j, j->in, j->len);
		return;
	}
	job_times(j);
	job_chain(j);
	ta_pb_reset(&j->pb);
	for (size_t k = 0; k < j->nr; k++) {
		record(j, &j->r[k]);
		free(j->r[k].text);
		free(j->r[k].chan);
		free(j->r[k].cargs);
		j->r[k].text = j->r[k].chan = j->r[k].cargs = NULL;
	}
	if (ta_pb_failed(&j->pb))
		j->fail = 1;
	else
		bundle(j, j->pb.buf, j->pb.len);
	ta_pb_reset(&j->pb);
}
