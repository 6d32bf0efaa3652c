/* SPDX-License-Identifier: MIT */
/*
 * decoder.c - the event decoder: an EVENTS chunk's payload back into
 * events, for the analyzer and the tests.  Every byte is untrusted.
 */
#include "format_int.h"

#include <stdlib.h>

/* ---- the event decoder (analyzer side) ------------------------------------------- */

void ta_decoder_init(struct ta_decoder *d)
{
	memset(d, 0, sizeof(*d));
	ta_stack_init(&d->stack);
}

void ta_decoder_free(struct ta_decoder *d)
{
	ta_stack_free(&d->stack);
	free(d->snapshot);
	d->snapshot = NULL;
}

int ta_decoder_begin(struct ta_decoder *d, const void *payload, size_t len)
{
	struct ta_reader *r = &d->r;
	uint64_t depth, overflow, prev = 0;

	ta_reader_init(r, payload, len);
	ta_get_varint(r, &d->tid);
	ta_get_varint(r, &d->chunk_seq);
	ta_get_varint(r, &d->first_ticks);
	ta_get_varint(r, &d->n_events);
	ta_get_varint(r, &depth);
	if (r->err)
		return -TA_E_PAYLOAD;
	/* Each frame takes at least one byte: a depth larger than what is
	 * left is a lie, and must not drive an allocation. */
	if (depth > TA_STACK_MAX || depth > (uint64_t)(r->end - r->p))
		return -TA_E_PAYLOAD;
	/* Each event takes at least one byte, too. */
	if (d->n_events > (uint64_t)(r->end - r->p))
		return -TA_E_PAYLOAD;
	free(d->snapshot);
	d->snapshot = NULL;
	d->snapshot_depth = 0;
	d->stack.depth = 0;
	d->stack.overflow = 0;
	if (depth) {
		d->snapshot = malloc(depth * sizeof(uint64_t));
		if (!d->snapshot)
			return -TA_E_NOMEM;
	}
	for (uint64_t i = 0; i < depth; i++) {
		uint64_t z;
		if (ta_get_varint(r, &z) < 0)
			return -TA_E_PAYLOAD;
		prev += (uint64_t)ta_unzigzag(z);
		d->snapshot[i] = prev;
		if (ta_stack_push(&d->stack, prev) < 0)
			return -TA_E_NOMEM;
	}
	d->snapshot_depth = (uint32_t)depth;
	if (ta_get_varint(r, &overflow) < 0)
		return -TA_E_PAYLOAD;
	d->stack.overflow = overflow;
	d->done = 0;
	d->prev_ticks = d->first_ticks;
	d->prev_addr = 0;
	return 0;
}

/* The values of an EXT event other than LOST: u n, then n u values; the
 * first TA_EXT_MAX_VALUES are kept in d->ext_values, *n_out says how many. */
static int dec_ext_values(struct ta_decoder *d, struct ta_reader *r, uint64_t *n_out)
{
	uint64_t n, v;

	if (ta_get_varint(r, &n) < 0 || n > TA_EXT_READ_MAX)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (ta_get_varint(r, &v) < 0)
			return -1;
		if (i < TA_EXT_MAX_VALUES)
			d->ext_values[i] = v;
	}
	*n_out = n < TA_EXT_MAX_VALUES ? n : TA_EXT_MAX_VALUES;
	return 0;
}

/* LONGJMP and CATCH carry the frames the encoder popped: the same go here,
 * however many a dump claims (bounded by what the stack holds, and by what
 * ev->popped can say). */
static uint32_t dec_ctl(struct ta_decoder *d, const struct ta_event *ev)
{
	uint64_t n;

	if ((ev->ext != TA_EXT_LONGJMP && ev->ext != TA_EXT_CATCH) || ev->value < 2)
		return 0;
	n = d->ext_values[1] < UINT32_MAX ? d->ext_values[1] : UINT32_MAX;
	return (uint32_t)ta_stack_unwind(&d->stack, n);
}

int ta_decoder_next(struct ta_decoder *d, struct ta_event *ev)
{
	struct ta_reader *r = &d->r;
	uint64_t v, z, dt;
	int top;

	if (d->done == d->n_events)
		return r->p == r->end ? 0 : -TA_E_PAYLOAD;
	if (ta_get_varint(r, &v) < 0)
		return -TA_E_PAYLOAD;
	dt = v >> 2;
	d->prev_ticks += dt;
	ev->ticks = d->prev_ticks;
	ev->popped = 0;
	ev->ext = ev->value = 0;
	switch (v & 3) {
	case TA_EV_ENTER:
		if (ta_get_varint(r, &z) < 0)
			return -TA_E_PAYLOAD;
		d->prev_addr += (uint64_t)ta_unzigzag(z);
		ev->kind = TA_EV_ENTER;
		ev->addr = d->prev_addr;
		if (ta_stack_push(&d->stack, ev->addr) < 0)
			return -TA_E_NOMEM;
		break;
	case TA_EV_EXIT:
		if (!d->stack.depth || d->stack.overflow)
			return -TA_E_PAYLOAD; /* the encoder never emits this */
		ev->kind = TA_EV_EXIT;
		ev->addr = d->stack.addr[d->stack.depth - 1];
		ev->popped = ta_stack_exit(&d->stack, ev->addr, &top);
		break;
	case TA_EV_EXIT_ADDR:
		if (ta_get_varint(r, &z) < 0)
			return -TA_E_PAYLOAD;
		d->prev_addr += (uint64_t)ta_unzigzag(z);
		ev->kind = TA_EV_EXIT;
		ev->addr = d->prev_addr;
		/* Same rule as the encoder, so the same frames go. */
		ev->popped = ta_stack_exit(&d->stack, ev->addr, &top);
		break;
	default:
		if (ta_get_varint(r, &ev->ext) < 0)
			return -TA_E_PAYLOAD;
		ev->kind = TA_EV_EXT;
		ev->addr = 0;
		if (ev->ext == TA_EXT_LOST) {
			if (ta_get_varint(r, &ev->value) < 0)
				return -TA_E_PAYLOAD;
		} else if (dec_ext_values(d, r, &ev->value) < 0) {
			return -TA_E_PAYLOAD;
		} else {
			ev->popped = dec_ctl(d, ev);
		}
		break;
	}
	d->done++;
	return 1;
}

/* A varint from untrusted bytes: one-byte values (most tick deltas and
 * address deltas) without a loop or a call. */
static inline int rd_u(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	struct ta_reader r;

	if (TA_LIKELY_(p < end && *p < 0x80)) {
		*v = *p;
		*pp = p + 1;
		return 0;
	}
	ta_reader_init(&r, p, (size_t)(end - p));
	if (ta_get_varint(&r, v) < 0)
		return -1;
	*pp = r.p;
	return 0;
}

/* ta_decoder_next's rules with the state in registers and the common stack
 * cases inline: the analyzer's inner loop. */
size_t ta_decoder_batch(struct ta_decoder *d, struct ta_event *out, size_t max, int *rc)
{
	const uint8_t *p = d->r.p, *end = d->r.end;
	uint64_t ticks = d->prev_ticks, prev_addr = d->prev_addr;
	struct ta_stack *st = &d->stack;
	/* The stack's fields in registers (the event stores could alias
	 * them), as in ta_encoder_raw: lim is 0 while frames overflow. */
	uint64_t *sa = st->addr;
	uint32_t depth = st->depth, lim = st->overflow ? 0 : st->cap;
	uint64_t left = d->n_events - d->done;
	size_t n = 0;
	int err = 0, rc2;

	*rc = 0;
	if (d->r.err) {
		*rc = -TA_E_PAYLOAD;
		return 0;
	}
	if (max > left)
		max = left;
	while (n < max) {
		struct ta_event *ev = &out[n];
		uint64_t v, z;
		int top;

		if (rd_u(&p, end, &v) < 0) {
			err = -TA_E_PAYLOAD;
			break;
		}
		ticks += v >> 2;
		ev->ticks = ticks;
		ev->popped = 0;
		ev->ext = ev->value = 0;
		switch (v & 3) {
		case TA_EV_ENTER:
			if (rd_u(&p, end, &z) < 0) {
				err = -TA_E_PAYLOAD;
				goto stop;
			}
			prev_addr += (uint64_t)ta_unzigzag(z);
			ev->kind = TA_EV_ENTER;
			ev->addr = prev_addr;
			if (TA_LIKELY_(depth < lim)) {
				sa[depth++] = prev_addr;
				break;
			}
			st->depth = depth;
			rc2 = ta_stack_push(st, prev_addr);
			sa = st->addr, depth = st->depth;
			lim = st->overflow ? 0 : st->cap;
			if (rc2 < 0) {
				err = -TA_E_NOMEM;
				goto stop;
			}
			break;
		case TA_EV_EXIT:
			/* depth - 1 wraps when the stack is empty. */
			if (TA_UNLIKELY_(depth - 1 >= lim)) {
				err = -TA_E_PAYLOAD; /* the encoder never emits this */
				goto stop;
			}
			ev->kind = TA_EV_EXIT;
			ev->addr = sa[--depth];
			ev->popped = 1;
			break;
		case TA_EV_EXIT_ADDR:
			if (rd_u(&p, end, &z) < 0) {
				err = -TA_E_PAYLOAD;
				goto stop;
			}
			prev_addr += (uint64_t)ta_unzigzag(z);
			ev->kind = TA_EV_EXIT;
			ev->addr = prev_addr;
			st->depth = depth;
			ev->popped = ta_stack_exit(st, prev_addr, &top);
			depth = st->depth, lim = st->overflow ? 0 : st->cap;
			break;
		default:
			ev->kind = TA_EV_EXT;
			ev->addr = 0;
			if (rd_u(&p, end, &ev->ext) < 0) {
				err = -TA_E_PAYLOAD;
				goto stop;
			}
			if (ev->ext == TA_EXT_LOST) {
				if (rd_u(&p, end, &ev->value) < 0) {
					err = -TA_E_PAYLOAD;
					goto stop;
				}
				break;
			}
			/* Values go to d->ext_values: the batch ends here. */
			ta_reader_init(&d->r, p, (size_t)(end - p));
			if (dec_ext_values(d, &d->r, &ev->value) < 0) {
				err = -TA_E_PAYLOAD;
				goto stop;
			}
			st->depth = depth; /* dec_ctl pops from the stack itself */
			ev->popped = dec_ctl(d, ev);
			depth = st->depth;
			p = d->r.p;
			n++;
			goto stop;
		}
		n++;
	}
stop:
	st->depth = depth;
	d->r.p = p;
	d->prev_ticks = ticks;
	d->prev_addr = prev_addr;
	d->done += n;
	if (err) {
		d->r.err = 1;
		*rc = err;
	} else if (d->done == d->n_events) {
		*rc = p == end ? 1 : -TA_E_PAYLOAD;
	}
	return n;
}
