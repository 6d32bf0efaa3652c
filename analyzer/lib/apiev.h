/* SPDX-License-Identifier: MIT */
/*
 * apiev.h - the manual API's EXT events (format.h: TA_EXT_FRAME ...
 * TA_EXT_ZONE_UNMATCHED, TA_EXT_FRAME_BEGIN ... TA_EXT_APP_INFO) as the views use them: decoded
 * from a visitor's ext callback into one struct, with their site, channel and text.
 */
#ifndef TA_APIEV_H
#define TA_APIEV_H

#include <stdint.h>

#include "format.h"
#include "session.h"

struct ta_apiev {
	uint64_t kind; /* TA_EXT_FRAME ... TA_EXT_ZONE_UNMATCHED */
	uint64_t ticks;
	uint64_t site_addr;	    /* 0 for ZONE_VALUE and CHANNEL */
	const struct ta_site *site; /* NULL when no SITES chunk described it */
	const char *name;	    /* the site's name, or "" */
	uint32_t channel;	    /* the site's channel; CHANNEL: the one switched */
	/* COUNTER */
	int is_double;
	int64_t i;
	double d; /* the value either way (i converted for an integer) */
	/* MESSAGE, ZONE_TEXT: NUL-terminated, in the caller's buffer */
	const char *text;
	uint32_t text_len;
	int cut; /* the agent cut the text at TA_TEXT_MAX bytes */
	/* ZONE_VALUE */
	uint64_t value;
	/* CHANNEL */
	int on;
	/* COUNTER_CONFIG: TA_UNIT_*_ (a unit this reader does not know is
	 * shown as a number) */
	uint32_t unit;
	/* POOL_ALLOC, POOL_FREE (the pool is name); LOCK_NAME: ptr is the
	 * lock, text its name; FIBER_ENTER: text is the fiber's name */
	uint64_t ptr, size;
};

/* Whether an EXT kind is one of the manual API's frames with gaps,
 * sections, units and application info (1.10). */
static inline int ta_apiev_zone_kind(uint64_t kind)
{
	return kind >= TA_EXT_FRAME_BEGIN && kind <= TA_EXT_APP_INFO;
}

/* Whether an EXT kind is one of the API's memory, lock-name and fiber
 * events (TA_EXT_POOL_ALLOC ... TA_EXT_FIBER_LEAVE). */
static inline int ta_apiev_mem_kind(uint64_t kind)
{
	return kind >= TA_EXT_POOL_ALLOC && kind <= TA_EXT_FIBER_LEAVE;
}

/* Whether an EXT kind is one of the manual API's. */
static inline int ta_apiev_kind(uint64_t kind)
{
	return (kind >= TA_EXT_FRAME && kind <= TA_EXT_ZONE_UNMATCHED) ||
	       ta_apiev_zone_kind(kind) || ta_apiev_mem_kind(kind);
}

/*
 * Decodes the EXT event (kind, values v[0..n)) of process p at ticks into
 * *ev; text is a buffer of TA_TEXT_MAX + 1 bytes for MESSAGE and
 * ZONE_TEXT.  Returns 1, 0 when kind is not the API's, or -1 when the
 * values do not make the event (a damaged or hostile dump: skip it).
 */
int ta_apiev_decode(struct ta_process *p, uint64_t ticks, uint64_t kind, const uint64_t *v,
		    uint32_t n, struct ta_apiev *ev, char *text);

/* "frame", "counter", ...: the kind's name in outputs. */
const char *ta_apiev_kind_name(uint64_t kind);

#endif
