/* SPDX-License-Identifier: MIT */
/*
 * slots.h - the agent-to-encoder slot layout: how the agent's rings hold
 * events (agent/ring.h writes them, its flusher and agent/mindur.c read
 * them) and what format.c's encoder takes (ta_encoder_raw), so the flusher
 * encodes straight from a ring's block.  Not part of the dump: the analyzer
 * never sees a slot, and no file holds one.
 *
 * Both sides are built from one tree, so the layout needs no version on
 * the wire; TA_SLOTS_VERSION is a version at build time instead.  Each
 * file that writes or reads slots checks the version it was written for
 * (_Static_assert): a change of the layout bumps it, and every one of them
 * stops compiling until it has been checked against the new layout.
 */
#ifndef TA_SLOTS_H
#define TA_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

#define TA_SLOTS_VERSION 1

/* One slot: an event as the agent's rings hold it.  Bit 63 of addr marks
 * an exit. */
struct ta_raw {
	uint64_t ticks;
	uint64_t addr;
};
#define TA_RAW_EXIT (1ull << 63)
/* With bit 63 clear: not a function but events lost here; the count is
 * in the low bits (no user-space address has bit 62 set). */
#define TA_RAW_LOST (1ull << 62)
/*
 * With bits 63 and 62 clear: an EXT event, addr = TA_RAW_EXT | subtype << 8
 * | n (n <= TA_EXT_MAX_VALUES), followed in the same block by TA_RAW_EXT_SLOTS(n)
 * slots that hold the values two by two (ticks, then addr of each slot).
 * Subtype 0 with n = 0 is padding (the rest of a block too short for a
 * group), skipped.  Whoever reads raw events steps over the value slots.
 */
#define TA_RAW_EXT	    (1ull << 61)
#define TA_RAW_EXT_SLOTS(n) (((n) + 1u) / 2u)
static inline int ta_raw_is_ext(uint64_t addr)
{
	return (addr >> 61) == 1;
}
static inline uint32_t ta_raw_ext_kind(uint64_t addr)
{
	return (uint32_t)(addr >> 8) & 0xffffu;
}
static inline uint32_t ta_raw_ext_n(uint64_t addr)
{
	return (uint32_t)addr & 0xffu;
}

/* Appends slots, beginning a chunk if none is open, until all n are in or
 * the payload reaches max_len bytes; returns how many went in (0 and an
 * unchanged encoder on allocation failure). */
size_t ta_encoder_raw(struct ta_encoder *e, const struct ta_raw *ev, size_t n, size_t max_len);

#endif /* TA_SLOTS_H */
