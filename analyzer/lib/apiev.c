/* SPDX-License-Identifier: MIT */
/*
 * apiev.c - decoding the manual API's EXT events (apiev.h).
 */
#include "apiev.h"

#include <string.h>

int ta_apiev_decode(struct ta_process *p, uint64_t ticks, uint64_t kind, const uint64_t *v,
		    uint32_t n, struct ta_apiev *ev, char *text)
{
	uint32_t flags = 0;
	int len;

	if (!ta_apiev_kind(kind))
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->ticks = ticks;
	ev->name = "";
	ev->channel = TA_CHANNEL_USER;
	if (n < 1)
		return -1;
	switch (kind) {
	case TA_EXT_ZONE_VALUE:
		ev->value = v[0];
		return 1;
	case TA_EXT_LOCK_NAME:
		/* The lock's address where a site would be. */
		len = ta_text_unpack(v, n, text, &flags);
		if (len < 0)
			return -1;
		ev->ptr = v[0];
		ev->text = text;
		/* A text is shown as the C string it was (a message's "%c"
		 * of 0, or a hostile dump, may hold a NUL), so that every
		 * view shows the same bytes: the same below. */
		ev->text_len = (uint32_t)strnlen(text, (size_t)len);
		ev->cut = (flags & TA_TEXT_F_CUT) != 0;
		return 1;
	case TA_EXT_CHANNEL:
		if (n < 2 || v[0] >= TA_CHANNELS_MAX)
			return -1;
		ev->channel = (uint32_t)v[0];
		ev->on = v[1] != 0;
		return 1;
	default:
		break;
	}
	ev->site_addr = v[0];
	ev->site = p ? ta_process_site(p, v[0]) : NULL;
	if (ev->site) {
		ev->name = ev->site->name;
		ev->channel = ev->site->channel;
	}
	switch (kind) {
	case TA_EXT_COUNTER:
		if (n < 3)
			return -1;
		ev->is_double = v[1] == TA_COUNTER_DOUBLE;
		if (ev->is_double) {
			memcpy(&ev->d, &v[2], sizeof(ev->d));
			ev->i = 0;
		} else {
			ev->i = (int64_t)v[2];
			ev->d = (double)ev->i;
		}
		return 1;
	case TA_EXT_COUNTER_CONFIG:
		if (n < 2)
			return -1;
		ev->unit = v[1] <= TA_UNIT_PERCENT_ ? (uint32_t)v[1] : TA_UNIT_NUMBER_;
		return 1;
	case TA_EXT_POOL_ALLOC:
		if (n < 3)
			return -1;
		ev->ptr = v[1];
		ev->size = v[2];
		return 1;
	case TA_EXT_POOL_FREE:
		if (n < 2)
			return -1;
		ev->ptr = v[1];
		return 1;
	case TA_EXT_MESSAGE:
	case TA_EXT_FIBER_ENTER:
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_APP_INFO:
		len = ta_text_unpack(v, n, text, &flags);
		if (len < 0)
			return -1;
		ev->text = text;
		/* A text is shown as the C string it was (a message's "%c"
		 * of 0, or a hostile dump, may hold a NUL), so that every
		 * view shows the same bytes: the same below. */
		ev->text_len = (uint32_t)strnlen(text, (size_t)len);
		ev->cut = (flags & TA_TEXT_F_CUT) != 0;
		return 1;
	default:
		return 1;
	}
}

const char *ta_apiev_kind_name(uint64_t kind)
{
	static const char *const names[] = {"frame",   "counter",	    "message",
					    "instant", "zone-text",	    "zone-value",
					    "channel", "zone-end-unmatched"};

	static const char *const zone_names[] = {"frame-begin",	  "frame-end",	    "section-enter",
						 "section-leave", "counter-config", "app-info"};
	static const char *const mem_names[] = {"alloc", "free", "lock-name", "fiber-enter",
						"fiber-leave"};

	if (ta_apiev_zone_kind(kind))
		return zone_names[kind - TA_EXT_FRAME_BEGIN];
	if (ta_apiev_mem_kind(kind))
		return mem_names[kind - TA_EXT_POOL_ALLOC];
	return ta_apiev_kind(kind) ? names[kind - TA_EXT_FRAME] : "unknown";
}
