/* SPDX-License-Identifier: MIT */
/*
 * info_int.h - what `traceagent info`'s files share: info_facts.c (the
 * manual API's events counted per channel, and what is derived from the
 * session: durations, counts, names of clocks, modes, signals, sizes), and
 * the two printers of them, info.c (text, and the command) and
 * info_json.c (JSON).
 */
#ifndef TA_INFO_INT_H
#define TA_INFO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* ---- the manual API's events, per channel ------------------------------------------ */

enum { CH_ZONES, CH_MESSAGES, CH_INSTANTS, CH_COUNTERS, CH_FRAMES, CH_SWITCHES, CH_NCOUNTS };

static const char *const ch_keys[CH_NCOUNTS] = {"zones",	   "messages",	  "instants",
						"counter_samples", "frame_marks", "switches"};

/* One process's counts by channel id: merged by name when printed, as
 * the ids of a program's own channels differ between processes. */
struct proc_channels {
	uint32_t pid;
	uint64_t n[TA_CHANNELS_MAX][CH_NCOUNTS];
};

struct api_counts {
	struct ta_view *v;
	struct proc_channels *pc;
	size_t npc, pc_cap;
	struct proc_channels *last; /* the one of the last event: threads come in runs */
	struct ta_process *last_p;
	uint64_t unmatched;
	int nomem;
	char text[TA_TEXT_MAX + 1];
	/* TA_APP_INFO's lines, in the order read. */
	struct app_info *app;
	size_t napp, app_cap;
};

struct app_info {
	uint32_t pid;
	int cut;
	char *text;
};

/* info_facts.c: the lines of TA_APP_INFO, text and JSON ("app_info"), and
 * their memory. */
void ta_info_app_text(const struct api_counts *a);
void ta_info_app_json(const struct api_counts *a);
void ta_info_app_free(struct api_counts *a);

/* A channel row of the output. */
struct channel_row {
	const char *name;
	uint64_t n[CH_NCOUNTS];
};

/* A process's events, lost events and threads, as the walk counted them. */
struct counts {
	uint64_t events, lost, threads;
};

/* info_facts.c: the API visitor's callbacks (ctx a struct api_counts). */
uintptr_t ta_info_api_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			    uint64_t addr, unsigned flags);
void ta_info_api_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		     const uint64_t *values, uint32_t n);
/* The rows by channel name (room for all in *out, malloc'd): the count, or
 * -1 without memory. */
long ta_info_channel_rows(const struct api_counts *a, struct channel_row **out, char (*names)[32]);
const char *ta_info_clock_name(uint64_t source);
const char *ta_info_iso_time(char *buf, size_t n, uint64_t realtime_ns);
double ta_info_ticks_per_second(const struct ta_process *p);
uint64_t ta_info_process_duration_ns(const struct ta_process *p);
uint64_t ta_info_paused_ns(const struct ta_process *p);
struct counts ta_info_process_counts(const struct ta_session *s, const struct ta_process *p);
void ta_info_hex(char *buf, size_t n, const uint8_t *b, size_t len);
uint64_t ta_info_file_size(const struct ta_view *v);
const char *ta_info_fmt_bytes(char *buf, size_t n, uint64_t b);
uint64_t ta_info_open_at_start(const struct ta_session *s, const struct ta_process *p);
const char *ta_info_mode_name(uint64_t mode);
const char *ta_info_libcall_classes(char *buf, size_t n, uint64_t classes);
const char *ta_info_signal_name(char *buf, size_t n, uint64_t sig);
uint64_t ta_info_count_how(const struct ta_filter_info *f, uint32_t how);
const char *ta_info_filter_kind(char *buf, size_t n, uint32_t kind);
/* Where the names of module m come from (read the first time): its
 * origin, and the JSON word of its source ("file", "debug-file", ...). */
const struct ta_sym_origin *ta_info_symbols(struct ta_view *v, const struct ta_sess_module *m);
const char *ta_info_symbols_from(enum ta_sym_source src);
/* Where module m's source lines come from (the file in *from, malloc'd,
 * or NULL), as --srcline finds them. */
enum ta_sym_source ta_info_lines(const struct ta_sess_module *m, char **from);

/* info_json.c: the JSON of the session v has read, with the API's counts a. */
void ta_info_print_json(struct ta_view *v, const struct api_counts *a);

#endif
