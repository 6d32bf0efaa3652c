/* SPDX-License-Identifier: MIT */
/*
 * mindur.c - the minimum-duration filter (mindur.h).
 */
#include <stdlib.h>
#include <string.h>

#include "mindur.h"

/* The filter reads and writes slots as laid out in this version (slots.h). */
_Static_assert(TA_SLOTS_VERSION == 1, "slots.h changed: check the filter against it");

void ta_mindur_init(struct ta_mindur *m, uint64_t min_ticks)
{
	memset(m, 0, sizeof(*m));
	m->min_ticks = min_ticks;
}

void ta_mindur_free(struct ta_mindur *m)
{
	free(m->pend);
	free(m->cnt_addr);
	free(m->cnt_n);
	free(m->out);
	memset(m, 0, sizeof(*m));
}

void ta_mindur_forget(struct ta_mindur *m)
{
	m->npend = 0;
}

/* Room for more records in out; 0 or -TA_E_NOMEM. */
static int out_reserve(struct ta_mindur *m, size_t more)
{
	struct ta_raw *o = ta_vec_reserve(m->out, m->out_len + more, &m->out_cap, sizeof(*o), 4096);

	if (!o)
		return -TA_E_NOMEM;
	m->out = o;
	return 0;
}

/* The pending entries, oldest first, written: a record that needs their
 * frames follows. */
static int force(struct ta_mindur *m)
{
	if (!m->npend)
		return 0;
	if (out_reserve(m, m->npend) < 0)
		return -TA_E_NOMEM;
	memcpy(m->out + m->out_len, m->pend, m->npend * sizeof(*m->pend));
	m->out_len += m->npend;
	m->npend = 0;
	return 0;
}

static inline uint32_t cnt_slot(uint64_t addr)
{
	/* Functions are a few bytes to a few KiB apart: a multiplicative
	 * hash spreads them over the table. */
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & (TA_MINDUR_COUNTS_MAX * 2 - 1);
}

/* One more dropped call of addr; -1 when the table is full. */
static inline int count(struct ta_mindur *m, uint64_t addr)
{
	uint32_t i = m->cnt_last;

	/* The same function as the last one dropped (a hot leaf, a
	 * recursion): no hash. */
	if (m->cnt_n[i] && m->cnt_addr[i] == addr) {
		m->cnt_n[i]++;
		return 0;
	}
	i = cnt_slot(addr);

	for (;;) {
		if (m->cnt_n[i] && m->cnt_addr[i] == addr) {
			m->cnt_n[i]++;
			m->cnt_last = i;
			return 0;
		}
		if (!m->cnt_n[i]) {
			/* Half full at most: probes stay short. */
			if (m->ncnt == TA_MINDUR_COUNTS_MAX)
				return -1;
			m->cnt_addr[i] = addr;
			m->cnt_n[i] = 1;
			m->ncnt++;
			m->cnt_last = i;
			return 0;
		}
		i = (i + 1) & (TA_MINDUR_COUNTS_MAX * 2 - 1);
	}
}

/* Records a whole table of counts takes (ta_mindur_counts). */
#define PAIRS	     (TA_EXT_MAX_VALUES / 2)
#define COUNTS_SLOTS ((TA_MINDUR_COUNTS_MAX / PAIRS + 1) * (1 + PAIRS))

int ta_mindur_counts(struct ta_mindur *m)
{
	/* No later than anything written after: the oldest pending entry,
	 * or the newest record; no earlier than anything written before
	 * (everything written is older than the pending entries). */
	uint64_t ticks = m->npend ? m->pend[0].ticks : m->last_ticks;
	uint32_t i = 0, left = m->ncnt;

	if (!left)
		return 0;
	if (out_reserve(m, (left / PAIRS + 1) * (1 + PAIRS)) < 0)
		return -TA_E_NOMEM;
	while (left) {
		uint32_t k = left < PAIRS ? left : PAIRS, nv = 2 * k;
		struct ta_raw *g = m->out + m->out_len;

		/* An EXT group as the rings hold one: the header, then the
		 * values two by two (mindur.h). */
		g[0].ticks = ticks;
		g[0].addr = TA_RAW_EXT | (uint64_t)TA_EXT_SHORT << 8 | nv;
		for (uint32_t j = 0; j < k; i++) {
			if (!m->cnt_n[i])
				continue;
			g[1 + j].ticks = m->cnt_addr[i];
			g[1 + j].addr = m->cnt_n[i];
			m->cnt_n[i] = 0;
			j++;
		}
		m->out_len += 1 + TA_RAW_EXT_SLOTS(nv);
		left -= k;
	}
	m->ncnt = 0;
	return 0;
}

int ta_mindur_flush(struct ta_mindur *m)
{
	return force(m);
}

int ta_mindur_filter(struct ta_mindur *m, const struct ta_raw *in, size_t n)
{
	const uint64_t min = m->min_ticks;

	m->out_len = 0;
	if (!m->oom && (!m->pend || !m->cnt_addr)) {
		m->pend = malloc(TA_MINDUR_PENDING_MAX * sizeof(*m->pend));
		m->cnt_addr = calloc(TA_MINDUR_COUNTS_MAX * 2, sizeof(*m->cnt_addr));
		m->cnt_n = calloc(TA_MINDUR_COUNTS_MAX * 2, sizeof(*m->cnt_n));
		m->oom = !m->pend || !m->cnt_addr || !m->cnt_n;
	}
	/* Every record out, the pending entries, and the counts each time
	 * the table fills (every COUNTS_MAX dropped calls at the most, two
	 * records each): the worst case is reserved once, so the loop below
	 * writes without checks and cannot fail half way. */
	if (out_reserve(m, n + TA_MINDUR_PENDING_MAX +
			       (n / (2 * TA_MINDUR_COUNTS_MAX) + 1) * COUNTS_SLOTS) < 0)
		return -TA_E_NOMEM;
	if (m->oom || !min) {
		if (force(m) < 0)
			return -TA_E_NOMEM;
		memcpy(m->out + m->out_len, in, n * sizeof(*in));
		m->out_len += n;
		if (n)
			m->last_ticks = in[n - 1].ticks;
		return 0;
	}
	/* The pending stack and the output in registers: the stores of
	 * records could alias the fields of m.  Written back around the
	 * calls that use them. */
	struct ta_raw *pend = m->pend, *out = m->out;
	uint32_t np = m->npend;
	size_t ol = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t t = in[i].ticks, h = in[i].addr;

		if (!(h & (TA_RAW_EXIT | TA_RAW_LOST | TA_RAW_EXT))) {
			/* A leaf call, short (about half of all calls): its
			 * exit follows; left out without being pushed. */
			if (i + 1 < n && in[i + 1].addr == (h | TA_RAW_EXIT) &&
			    in[i + 1].ticks >= t && in[i + 1].ticks - t < min) {
				m->npend = np;
				if (count(m, h) == 0) {
					m->dropped++;
					i++;
					continue;
				}
			}
			/* An entry: pending until its exit says how long. */
			if (np == TA_MINDUR_PENDING_MAX) {
				/* The oldest half is written: enough room
				 * for a while, and the newest calls still
				 * wait. */
				uint32_t half = TA_MINDUR_PENDING_MAX / 2;

				memcpy(out + ol, pend, half * sizeof(*pend));
				ol += half;
				memmove(pend, pend + half, (np - half) * sizeof(*pend));
				np -= half;
			}
			pend[np++] = in[i];
			continue;
		}
		if (h & TA_RAW_EXIT) {
			uint64_t a = h & ~TA_RAW_EXIT;

			if (np && pend[np - 1].addr == a) {
				uint64_t e = pend[np - 1].ticks;

				/* A counter that went backwards: length 0. */
				if (t < e || t - e < min) {
					m->npend = np;
					if (count(m, a) == 0) {
						np--;
						m->dropped++;
						continue;
					}
					/* The table is full: its counts go out
					 * first (at this exit's time, the newest
					 * yet), then this one has room. */
					m->last_ticks = t;
					m->out_len = ol;
					(void)ta_mindur_counts(m); /* room reserved */
					(void)count(m, a);	   /* the table is empty */
					ol = m->out_len;
					np--;
					m->dropped++;
					continue;
				}
			}
			/* Long enough, or an exit whose entry is not the
			 * newest pending one (written: the encoder's stack
			 * rule takes it from there). */
			if (np) {
				memcpy(out + ol, pend, np * sizeof(*pend));
				ol += np;
				np = 0;
			}
			out[ol++] = in[i];
			continue;
		}
		/* A gap or an EXT event (and its value slots, copied along):
		 * it happens inside every frame open, which are written. */
		{
			size_t slots = 1;

			if ((h >> 61) == 1) {
				slots += TA_RAW_EXT_SLOTS(ta_raw_ext_n(h));
				if (slots > n - i)
					slots = n - i;
			}
			if (ta_raw_ext_kind(h) != 0 || (h >> 61) != 1) {
				memcpy(out + ol, pend, np * sizeof(*pend));
				ol += np;
				np = 0;
			}
			memcpy(out + ol, in + i, slots * sizeof(*in));
			ol += slots;
			i += slots - 1;
		}
	}
	m->npend = np;
	m->out_len = ol;
	if (n)
		m->last_ticks = in[n - 1].ticks;
	return 0;
}
