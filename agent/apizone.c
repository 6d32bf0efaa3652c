/* SPDX-License-Identifier: MIT */
/*
 * apizone.c - the manual API's run-time zone names (TA_ZONE_DYN,
 * TA_ZONE_BEGIN_DYN), frames with gaps (TA_FRAME_BEGIN/END), counter
 * units (TA_COUNTER_CONFIG), application info (TA_APP_INFO) and sections
 * (TA_SECTION_ENTER/LEAVE).
 *
 * A run-time name is interned: the first use of each distinct name makes
 * a site of the agent's own, a struct ta_site_ of kind ZONE whose name is
 * the agent's copy, registered as a macro's site is (api_registry.c), so
 * the SITES chunk describes it and its zones are an enter and an exit of
 * its address: every view, an old reader's too, shows a row per name.
 * The names are found again without a lock (an open-addressed table whose
 * slots are only ever filled, with release); a new name is added under the
 * registry's lock (api_int.h's ta_api_lock: signals blocked, taken around
 * a fork), which its site's registration needs anyway.  Bounded: beyond
 * DYN_NAMES_MAX names or DYN_BYTES_MAX bytes of them, every new name is
 * the one overflow site's, whose calls count them.
 *
 * The rest are EXT events naming their call site, as TA_FRAME_MARK's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "agent.h"
#include "api.h"
#include "api_int.h"
#include "api_site.h"
#include "apifmt.h"
#include "clock.h"
#include "filter.h"
#include "format.h"
#include "keep.h"
#include "ring.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

_Static_assert(TA_KIND_ZONE_DYN_ == TA_SITE_ZONE_DYN && TA_KIND_SECTION_ == TA_SITE_SECTION &&
		   TA_KIND_APP_INFO_ == TA_SITE_APP_INFO &&
		   TA_KIND_COUNTER_CONFIG_ == TA_SITE_COUNTER_CONFIG,
	       "the public header's site kinds are the format's");
_Static_assert(TA_UNIT_NUMBER == TA_UNIT_NUMBER_ && TA_UNIT_BYTES == TA_UNIT_BYTES_ &&
		   TA_UNIT_PERCENT == TA_UNIT_PERCENT_,
	       "the public header's units are the format's");

/* ---- interned names ------------------------------------------------------------- */

#define DYN_NAMES_MAX 4096u
#define DYN_BYTES_MAX (256u << 10)
#define DYN_SLOTS     (2u * DYN_NAMES_MAX) /* a power of two, never more than half full */

struct dyn_name {
	struct ta_site_ site; /* first: the address the events carry */
	uint32_t hash;
	uint32_t len;
	char name[]; /* len bytes, NUL-terminated */
};

/* The names by hash; a slot, once set (release, after the name and its
 * site's registration), never changes. */
static struct dyn_name *dyn_slots[DYN_SLOTS];
/* Under the registry's lock: the names made and their bytes, the arena
 * they are in. */
static uint32_t dyn_count, dyn_bytes;
static char *dyn_arena;
static size_t dyn_arena_left;
static struct dyn_name *dyn_overflow;

/* The name's bytes as kept (at most TA_SITE_NAME_MAX) and their hash
 * (FNV-1a). */
static inline __attribute__((always_inline)) uint32_t name_hash(const char *name, uint32_t *len)
{
	uint32_t h = 2166136261u, n = 0;

	while (n < TA_SITE_NAME_MAX && name[n]) {
		h = (h ^ (uint8_t)name[n]) * 16777619u;
		n++;
	}
	*len = n;
	return h;
}

/* Whether d is name (len bytes): the entries' hot path calls no libc. */
static inline int dyn_is(const struct dyn_name *d, const char *name, uint32_t len, uint32_t h)
{
	if (d->hash != h || d->len != len)
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (d->name[i] != name[i])
			return 0;
	return 1;
}

static inline __attribute__((always_inline)) struct dyn_name *dyn_find(const char *name,
								       uint32_t len, uint32_t h)
{
	for (uint32_t i = 0; i < DYN_SLOTS; i++) {
		/* Acquire: pairs with the release in dyn_add, after the name. */
		struct dyn_name *d =
		    __atomic_load_n(&dyn_slots[(h + i) & (DYN_SLOTS - 1)], __ATOMIC_ACQUIRE);

		if (!d)
			return NULL;
		if (dyn_is(d, name, len, h))
			return d;
	}
	return NULL;
}

/* A new name's record in the arena (under the lock), its site filled as a
 * macro's static one would be, from the call site s; NULL without memory. */
static struct dyn_name *dyn_make(const struct ta_site_ *s, const char *name, uint32_t len,
				 uint32_t h)
{
	size_t need = (sizeof(struct dyn_name) + len + 1 + 7) & ~(size_t)7;
	struct dyn_name *d;

	if (need > dyn_arena_left) {
		void *p = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		dyn_arena = p;
		dyn_arena_left = 1u << 20;
	}
	d = (struct dyn_name *)(void *)dyn_arena;
	dyn_arena += need;
	dyn_arena_left -= need;
	memcpy(d->name, name, len);
	d->name[len] = 0;
	d->hash = h;
	d->len = len;
	d->site.gate = &d->site.first;
	d->site.first = 1;
	d->site.kind = TA_KIND_ZONE_;
	d->site.abi = TA_SITE_ABI_;
	d->site.name = d->name;
	d->site.file = s->file;
	d->site.channel = s->channel;
	d->site.line = s->line;
	d->site.reserved = 0;
	return d;
}

/* The site of name, made at its first use; the overflow one past the
 * bounds; NULL when not even that can be made (counted lost). */
static __attribute__((noinline, cold)) struct ta_site_ *
dyn_add(const struct ta_site_ *s, const char *name, uint32_t len, uint32_t h)
{
	struct dyn_name *d;
	sigset_t old;
	uint32_t oh, olen;

	ta_api_lock(&old);
	d = dyn_find(name, len, h);
	if (!d && dyn_count < DYN_NAMES_MAX && dyn_bytes + len <= DYN_BYTES_MAX) {
		d = dyn_make(s, name, len, h);
		if (d) {
			uint32_t i = h;

			/* Registered before it can be found: its gate and
			 * SITES record exist when its first event does. */
			ta_api_site_register_locked(&d->site);
			while (dyn_slots[i & (DYN_SLOTS - 1)])
				i++;
			/* Release: pairs with dyn_find's acquire. */
			__atomic_store_n(&dyn_slots[i & (DYN_SLOTS - 1)], d, __ATOMIC_RELEASE);
			dyn_count++;
			dyn_bytes += len;
		}
	} else if (!d) {
		if (!dyn_overflow) {
			oh = name_hash(TA_ZONE_DYN_OVERFLOW, &olen);
			dyn_overflow = dyn_make(s, TA_ZONE_DYN_OVERFLOW, olen, oh);
			if (dyn_overflow)
				ta_api_site_register_locked(&dyn_overflow->site);
		}
		d = dyn_overflow;
	}
	ta_api_unlock(&old);
	return d ? &d->site : NULL;
}

/*
 * The names last found at each address a program passed, by the address:
 * a program names its zones from a few buffers or literals, and comparing
 * the bytes with the name found there before costs less than hashing them.
 * Each word is read and written alone (relaxed, d with acquire and
 * release, as dyn_slots): a pair torn by two threads at once names a
 * dyn_name all the same, and the bytes, compared every time, decide.
 */
#define DYN_BY_PTR 1024u /* a power of two */
static struct {
	const char *ptr;
	struct dyn_name *d;
} dyn_by_ptr[DYN_BY_PTR];

/* Whether name's bytes are d's, NUL included (a name cut at
 * TA_SITE_NAME_MAX never is: it is hashed). */
static inline int dyn_same(const struct dyn_name *d, const char *name)
{
	for (uint32_t i = 0; i < d->len; i++)
		if (d->name[i] != name[i])
			return 0;
	return name[d->len] == 0;
}

/* The agent's site of the run-time name at call site s (registered: its
 * gate is not &first any more), or NULL, counted lost. */
static inline __attribute__((always_inline)) struct ta_site_ *dyn_site(const struct ta_site_ *s,
								       const char *name)
{
	uint32_t len, h, at;
	struct dyn_name *d;
	struct ta_site_ *z;
	int saved;

	if (!name)
		name = "(null)";
	at = (uint32_t)(((uintptr_t)name >> 3 ^ (uintptr_t)name >> 13) & (DYN_BY_PTR - 1));
	d = __atomic_load_n(&dyn_by_ptr[at].d, __ATOMIC_ACQUIRE);
	if (d && __atomic_load_n(&dyn_by_ptr[at].ptr, __ATOMIC_RELAXED) == name &&
	    dyn_same(d, name))
		return &d->site;
	h = name_hash(name, &len);
	d = dyn_find(name, len, h);
	if (TA_LIKELY(d != NULL)) {
		/* Release: pairs with the acquire above (d's bytes). */
		__atomic_store_n(&dyn_by_ptr[at].d, d, __ATOMIC_RELEASE);
		__atomic_store_n(&dyn_by_ptr[at].ptr, name, __ATOMIC_RELAXED);
		return &d->site;
	}
	saved = errno;
	TA_GUARD_ENTER();
	z = dyn_add(s, name, len, h);
	TA_GUARD_LEAVE();
	errno = saved;
	if (!z)
		ta_lost_here(TA_LOST_NO_MEMORY);
	return z;
}

TA_PUBLIC struct ta_site_ *ta_zone_enter_dyn_(struct ta_site_ *s, const char *name)
{
	struct ta_site_ *z;

	/* Filters: a zone is recorded where a callee would be. */
	if (!ta_api_site_on(s) || !ta_filter_lets())
		return NULL;
	z = dyn_site(s, name);
	if (z)
		ta_record((uint64_t)(uintptr_t)z);
	return z;
}

TA_PUBLIC void ta_zone_begin_dyn_(struct ta_site_ *s, const char *name)
{
	struct ta_site_ *z = NULL;

	if (ta_api_site_on(s) && ta_filter_lets())
		z = dyn_site(s, name);
	/* Pushed whatever happened: the END it is paired with pops it. */
	ta_api_zone_push(z ? z : s, z != NULL);
}

/* ---- frames with gaps, sections, units, application info ------------------------- */

/* A BEGIN or END, judged in keep mode as TA_FRAME_MARK's marks are
 * (api.c): the counter around its own event, so a kept window holds the
 * marks that bound it. */
static inline __attribute__((always_inline)) void frame_bound(uint32_t kind, enum ta_keep_kind kk,
							      struct ta_site_ *s)
{
	uint64_t pre;

	if (TA_LIKELY(!__atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED))) {
		ta_api_record_site(kind, s);
		return;
	}
	/* pre past every earlier record of this thread, post past the
	 * event, as ta_frame_mark_'s: a window is [pre, post). */
	pre = ta_ticks_after(ta_ticks());
	ta_api_record_site(kind, s);
	if (ta_api_site_on(s))
		ta_keep_mark(kk, s->name, pre, ta_ticks_after(ta_ticks()));
}

TA_PUBLIC void ta_frame_begin_(struct ta_site_ *s)
{
	frame_bound(TA_EXT_FRAME_BEGIN, TA_KEEP_BEGIN, s);
}

TA_PUBLIC void ta_frame_end_(struct ta_site_ *s)
{
	frame_bound(TA_EXT_FRAME_END, TA_KEEP_END, s);
}

TA_PUBLIC void ta_section_enter_(struct ta_site_ *s)
{
	ta_api_record_site(TA_EXT_SECTION_ENTER, s);
}

TA_PUBLIC void ta_section_leave_(struct ta_site_ *s)
{
	ta_api_record_site(TA_EXT_SECTION_LEAVE, s);
}

TA_PUBLIC void ta_counter_config_(struct ta_site_ *s, uint32_t unit)
{
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_COUNTER_CONFIG, (uint64_t)(uintptr_t)s, unit, 0, 0, 2);
}

TA_PUBLIC void ta_app_info_(struct ta_site_ *s, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!ta_api_site_on(s))
		return;
	va_start(ap, fmt);
	ta_api_vtext(TA_EXT_APP_INFO, s, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* ---- the entries under hidden names (`traceagent attach`, api.c) ------------------- */

#define API_ALIAS(name)                                                                            \
	extern __typeof__(name) api_at_##name __attribute__((alias(#name), visibility("hidden")));
APIZONE_FUNCS(API_ALIAS)
#undef API_ALIAS
