/* SPDX-License-Identifier: MIT */
/*
 * keep.c - keeping only the slow frames (keep.h): the judging of the
 * frames at their marks, the flusher's windows, the per-thread filter
 * between a ring's records and the encoder, and the KEEP chunk.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "clock.h"
#include "dump.h"
#include "format.h"
#include "grow.h"
#include "keep.h"
#include "settings.h"
#include "values.h"

struct ta_keep_cfg ta_keep_cfg;
int ta_keep_on;

/* A duration with decimals (16.7ms: a 60 Hz frame), as the analyzer's
 * --budget takes one: digits, a fraction, a unit (ns, us, ms, s; none:
 * ns); -1 when it is not one or overflows. */
static int parse_budget(const char *s, uint64_t *ns)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	uint64_t whole = 0, frac = 0, scale = 1, unit = 0;
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -1;
		whole = whole * 10 + (uint64_t)(*s - '0');
	}
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			if (scale >= 1000000000u)
				return -1;
			frac = frac * 10 + (uint64_t)(*s - '0');
			scale *= 10;
		}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s, units[i].name))
			unit = units[i].ns;
	if (!digits || !unit || (whole && unit > UINT64_MAX / whole))
		return -1;
	*ns = whole * unit + frac * unit / scale;
	return 0;
}

int ta_keep_parse(const char *v, struct ta_keep_cfg *c, const char **why)
{
	static const char head[] = "slow-frames:";
	char buf[256], *save = NULL, *tok;
	int first = 1;

	memset(c, 0, sizeof(*c));
	c->before = TA_KEEP_BEFORE_DEFAULT;
	*why = "not slow-frames:BUDGET[,before=K][,set=NAME]";
	if (strncmp(v, head, sizeof(head) - 1) || strlen(v) >= sizeof(buf))
		return -1;
	strcpy(buf, v + sizeof(head) - 1);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first = 0) {
		if (first) {
			if (parse_budget(tok, &c->budget_ns) < 0 || !c->budget_ns) {
				*why = "BUDGET is not a duration (like 16.7ms, 500us)";
				return -1;
			}
		} else if (!strncmp(tok, "before=", 7)) {
			char *end;
			unsigned long k = strtoul(tok + 7, &end, 10);

			if (end == tok + 7 || *end || tok[7] == '-' || k > TA_KEEP_BEFORE_MAX) {
				*why = "before=K is not a number of frames from 0 to 64";
				return -1;
			}
			c->before = (uint32_t)k;
		} else if (!strncmp(tok, "set=", 4) && tok[4] && strlen(tok + 4) < sizeof(c->set)) {
			strcpy(c->set, tok + 4);
		} else {
			*why = "an option is not before=K or set=NAME";
			return -1;
		}
	}
	if (first)
		return -1; /* no budget */
	c->on = 1;
	return 0;
}

/* ---- the marks' side ------------------------------------------------------------ */

/* The start (pre ticks) of the last frames, frame f's at f - 1 modulo
 * HIST: a mark's (it starts the next frame), or a BEGIN's. */
#define HIST (TA_KEEP_BEFORE_MAX + 2)
/* Windows on their way to the flusher; more at once are counted lost. */
#define QUEUE 1024u

/* Held while a mark is judged (acquire/release: the judging's state goes
 * from one holder to the next). */
static uint32_t mark_lock;
static uint64_t hist[HIST];
/* Frames started: the marks made (the first starts frame 1), or the
 * BEGINs; frame_open: a BEGIN's frame not ended yet. */
static uint64_t nstarted;
static int frame_open;
static char set_name[128];
/* The kind of the set judged: its first mark's (-1 before). */
static int set_kind;
static uint64_t budget_ticks, clock_t0, clock_n0;
static uint64_t last_kept;
/* Counts: written by the holder of mark_lock, read for the KEEP chunk
 * (relaxed: read after the last drain). */
static uint64_t frames_seen, frames_slow, frames_kept, marks_unjudged, windows_lost;
/* The queue: q_head written by the marks (release, after the window),
 * q_tail by the flusher. */
static struct ta_keep_win queue[QUEUE];
static uint64_t q_head, q_tail;
/* The start of the oldest frame a slow frame to come could keep (ticks;
 * release after the window it follows, acquire in ta_keep_pass). */
static uint64_t horizon;

/* The flusher's side, under ta_drain_lock. */
static struct ta_keep_win *wins;
static size_t nwins, wins_cap;
static uint64_t f_horizon;
static uint64_t let_go, let_go_early, windows_partial, early_upto;

void ta_keep_start(void)
{
	__atomic_store_n(&mark_lock, 0, __ATOMIC_RELAXED);
	nstarted = 0;
	frame_open = 0;
	set_kind = -1;
	last_kept = 0;
	frames_seen = frames_slow = frames_kept = marks_unjudged = windows_lost = 0;
	q_head = q_tail = 0;
	horizon = 0;
	free(wins);
	wins = NULL;
	nwins = wins_cap = 0;
	f_horizon = 0;
	let_go = let_go_early = windows_partial = early_upto = 0;
	budget_ticks = 0;
	strcpy(set_name, ta_keep_cfg.set);
	if (TA_CLOCK_SOURCE == TA_CLOCK_MONOTONIC)
		budget_ticks = ta_keep_cfg.budget_ns;
	else if (ta_clock_nominal_hz())
		budget_ticks =
		    (uint64_t)((double)ta_keep_cfg.budget_ns * (double)ta_clock_nominal_hz() / 1e9);
	else
		ta_clock_pair(&clock_t0, &clock_n0);
	if (ta_keep_cfg.on && !budget_ticks && TA_CLOCK_SOURCE == TA_CLOCK_MONOTONIC)
		budget_ticks = 1;
	__atomic_store_n(&ta_keep_on, ta_keep_cfg.on, __ATOMIC_RELAXED);
}

/* The budget in ticks, from the counter's rate over the run so far (2 ms
 * at least); 0 while it cannot be told. */
static uint64_t budget(void)
{
	uint64_t t, n;

	if (budget_ticks)
		return budget_ticks;
	ta_clock_pair(&t, &n);
	if (n - clock_n0 < 2000000 || t <= clock_t0)
		return 0;
	budget_ticks = (uint64_t)((double)ta_keep_cfg.budget_ns * (double)(t - clock_t0) /
				  (double)(n - clock_n0));
	if (!budget_ticks)
		budget_ticks = 1;
	return budget_ticks;
}

/* The first frame frame f keeps: f - K, frame 1 at the earliest. */
static uint64_t first_kept(uint64_t f)
{
	return f > ta_keep_cfg.before ? f - ta_keep_cfg.before : 1;
}

/* Frame f (from 1) ends at a mark made between the ticks pre and post:
 * judged by its length from its start (hist), and when over the budget,
 * the window from the start of frame f - K to post goes to the flusher. */
static void judge(uint64_t f, uint64_t pre, uint64_t post)
{
	uint64_t b = budget(), from;

	frames_seen++;
	if (!b || pre - hist[(f - 1) % HIST] <= b)
		return;
	frames_slow++;
	from = first_kept(f);
	frames_kept += f - (last_kept > from - 1 ? last_kept : from - 1);
	last_kept = f;
	if (q_head - __atomic_load_n(&q_tail, __ATOMIC_ACQUIRE) < QUEUE) {
		queue[q_head % QUEUE] = (struct ta_keep_win){hist[(from - 1) % HIST], post};
		/* Release: the flusher reads the window after the head (pairs
		 * with ta_keep_pass's acquire). */
		__atomic_store_n(&q_head, q_head + 1, __ATOMIC_RELEASE);
	} else {
		windows_lost++;
	}
}

/* Release: the windows pushed before it first (pairs with ta_keep_pass's
 * acquire); it only moves forward, the frames' starts going forward. */
static void move_horizon(uint64_t h)
{
	if (h > __atomic_load_n(&horizon, __ATOMIC_RELAXED))
		__atomic_store_n(&horizon, h, __ATOMIC_RELEASE);
}

void ta_keep_mark(enum ta_keep_kind kind, const char *name, uint64_t pre, uint64_t post)
{
	int gaps = kind != TA_KEEP_MARK;

	if (__atomic_exchange_n(&mark_lock, 1, __ATOMIC_ACQUIRE)) {
		__atomic_add_fetch(&marks_unjudged, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!name)
		goto out;
	if (!set_name[0]) {
		/* The first set marked is the one judged. */
		size_t len = strnlen(name, sizeof(set_name) - 1);

		memcpy(set_name, name, len);
		set_name[len] = 0;
	} else if (strncmp(name, set_name, sizeof(set_name))) {
		goto out;
	}
	if (set_kind < 0)
		set_kind = gaps;
	else if (set_kind != gaps)
		goto out;
	if (kind == TA_KEEP_END) {
		if (!frame_open)
			goto out; /* an END without a BEGIN: no frame */
		judge(nstarted, pre, post);
		frame_open = 0;
		/* The next frame, if slow, keeps from frame n + 1 - K, or
		 * from its own BEGIN, still to come. */
		move_horizon(ta_keep_cfg.before ? hist[(first_kept(nstarted + 1) - 1) % HIST]
						: post);
		goto out;
	}
	/* A mark ends its frame (none before the first); a BEGIN the one
	 * open. */
	if (gaps ? frame_open : nstarted >= 1)
		judge(nstarted, pre, post);
	hist[nstarted++ % HIST] = pre;
	frame_open = 1;
	/* The frame started, if slow, keeps from frame n - K. */
	move_horizon(hist[(first_kept(nstarted) - 1) % HIST]);
out:
	__atomic_store_n(&mark_lock, 0, __ATOMIC_RELEASE);
}

/* ---- the flusher's side ----------------------------------------------------------- */

void ta_keep_pass(void)
{
	/* Acquire: the windows published before this horizon (ta_keep_mark
	 * pushes its window, then moves the horizon). */
	uint64_t h = __atomic_load_n(&horizon, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&q_head, __ATOMIC_ACQUIRE);

	for (; q_tail < head; __atomic_store_n(&q_tail, q_tail + 1, __ATOMIC_RELEASE)) {
		struct ta_keep_win w = queue[q_tail % QUEUE], *nw;

		/* Records of this window already let go unjudged: kept in
		 * part. */
		if (early_upto && w.lo <= early_upto)
			windows_partial++;
		if (nwins && w.lo <= wins[nwins - 1].hi) {
			if (w.hi > wins[nwins - 1].hi)
				wins[nwins - 1].hi = w.hi;
			continue;
		}
		nw = ta_vec_reserve_max(wins, nwins + 1, &wins_cap, sizeof(*wins), 64,
					TA_KEEP_WINDOWS_MAX);
		if (!nw) {
			windows_lost++;
			continue;
		}
		wins = nw;
		wins[nwins++] = w;
	}
	if (h > f_horizon)
		f_horizon = h;
}

void ta_keepf_free(struct ta_keepf *k)
{
	free(k->stack);
	free(k->written);
	free(k->out);
	memset(k, 0, sizeof(*k));
}

void ta_keepf_reset(struct ta_keepf *k)
{
	k->depth = k->over = 0;
	k->cursor = 0;
	k->out_len = 0;
}

/* Whether ticks t lies in a window [lo, hi): a record at the tick a
 * window starts is in it, one at the tick it ends is not (the marking
 * thread's own records never tie with either, api.c's ta_frame_mark_).
 * k->cursor follows the thread's records, which go forward in time (a
 * step back starts it over). */
static int in_window(struct ta_keepf *k, uint64_t t)
{
	if (k->cursor > nwins || (k->cursor && wins[k->cursor - 1].hi > t))
		k->cursor = 0;
	while (k->cursor < nwins && wins[k->cursor].hi <= t)
		k->cursor++;
	return k->cursor < nwins && wins[k->cursor].lo <= t;
}

static void out_put(struct ta_keepf *k, const struct ta_raw *r, size_t n)
{
	memcpy(k->out + k->out_len, r, n * sizeof(*r));
	k->out_len += n;
}

long ta_keep_filter(struct ta_keepf *k, const struct ta_raw *in, size_t n, int force)
{
	size_t i = 0;

	if (!k->stack) {
		k->stack = malloc(TA_KEEP_STACK_MAX * sizeof(*k->stack));
		k->written = malloc(TA_KEEP_STACK_MAX);
		if (!k->stack || !k->written) {
			ta_keepf_free(k);
			return -1;
		}
	}
	/* Every record, and the open calls' entries before them. */
	if (k->out_cap < n + TA_KEEP_STACK_MAX) {
		struct ta_raw *o =
		    ta_vec_reserve(k->out, n + TA_KEEP_STACK_MAX, &k->out_cap, sizeof(*o), 256);

		if (!o)
			return -1;
		k->out = o;
	}
	k->out_len = 0;
	while (i < n) {
		uint64_t t = in[i].ticks, a = in[i].addr;
		size_t len = ta_raw_is_ext(a) ? 1 + TA_RAW_EXT_SLOTS(ta_raw_ext_n(a)) : 1;
		int keep = in_window(k, t);

		if (i + len > n)
			len = n - i; /* a group cut short: taken as it is */
		if (!keep && t >= f_horizon && !force)
			break;
		if (keep) {
			/* The calls open here, entered where nothing was
			 * kept: their entries first. */
			for (uint32_t d = 0; d < k->depth; d++) {
				if (!k->written[d]) {
					out_put(k, &k->stack[d], 1);
					k->written[d] = 1;
				}
			}
			out_put(k, &in[i], len);
		} else if (!(a & TA_RAW_EXIT) || !k->depth || k->over ||
			   !k->written[k->depth - 1]) {
			let_go++;
			if (force == 2) {
				let_go_early++;
				if (t > early_upto)
					early_upto = t;
			}
		}
		if (!(a & (TA_RAW_EXIT | TA_RAW_LOST | TA_RAW_EXT))) {
			if (k->depth < TA_KEEP_STACK_MAX) {
				k->stack[k->depth] = in[i];
				k->written[k->depth++] = (uint8_t)keep;
			} else {
				k->over++;
			}
		} else if (a & TA_RAW_EXIT) {
			if (k->over) {
				k->over--;
			} else if (k->depth) {
				/* A call whose entry went out gets its exit. */
				if (!keep && k->written[k->depth - 1])
					out_put(k, &in[i], 1);
				k->depth--;
			}
		}
		i += len;
	}
	return (long)i;
}

/* ---- the KEEP chunk ---------------------------------------------------------------- */

void ta_keep_counts(struct ta_keep_counts *c)
{
	c->frames_seen = frames_seen;
	c->frames_slow = frames_slow;
	c->frames_kept = frames_kept;
	c->let_go = let_go;
	c->let_go_early = let_go_early;
	c->windows_partial = windows_partial;
	c->windows_lost = windows_lost;
	c->marks_unjudged = __atomic_load_n(&marks_unjudged, __ATOMIC_RELAXED);
	c->nwin = nwins;
}

void ta_keep_test_budget(uint64_t ticks)
{
	budget_ticks = ticks;
}

void ta_keep_write_summary(void)
{
	struct ta_buf b = {0};

	if (!ta_keep_cfg.on)
		return;
	ta_keep_pass();
	ta_buf_u(&b, ta_keep_cfg.budget_ns);
	ta_buf_u(&b, ta_keep_cfg.before);
	ta_buf_str(&b, set_name, strlen(set_name));
	ta_buf_u(&b, frames_seen);
	ta_buf_u(&b, frames_slow);
	ta_buf_u(&b, frames_kept);
	ta_buf_u(&b, let_go);
	ta_buf_u(&b, let_go_early);
	ta_buf_u(&b, windows_partial);
	ta_buf_u(&b, windows_lost);
	ta_buf_u(&b, __atomic_load_n(&marks_unjudged, __ATOMIC_RELAXED));
	ta_buf_u(&b, nwins);
	for (size_t i = 0; i < nwins; i++) {
		ta_buf_u(&b, wins[i].lo);
		ta_buf_u(&b, wins[i].hi - wins[i].lo);
	}
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_KEEP, b.p, b.len);
	ta_buf_free(&b);
}

/* TRACEAGENT_KEEP (keep.h): recorded as in lossless mode, every event
 * going through the keep filter rather than the minimum-duration one. */
void ta_keep_setting(struct ta_settings *s)
{
	const char *v = ta_settings_value("TRACEAGENT_KEEP"), *why;

	memset(&ta_keep_cfg, 0, sizeof(ta_keep_cfg));
	if (!v || !*v || !strcmp(v, "all"))
		return;
	if (ta_keep_parse(v, &ta_keep_cfg, &why) < 0) {
		ta_warn("TRACEAGENT_KEEP='%.64s': %s; every frame is kept", v, why);
		return;
	}
	if (s->mode != TA_MODE_LOSSLESS) {
		ta_warn("TRACEAGENT_KEEP records in lossless mode; TRACEAGENT_MODE is ignored");
		s->mode = TA_MODE_LOSSLESS;
	}
	if (s->min_duration_ns) {
		ta_warn("TRACEAGENT_KEEP keeps whole frames; TRACEAGENT_MIN_DURATION is ignored");
		s->min_duration_ns = 0;
	}
}
