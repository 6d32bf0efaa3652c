/* SPDX-License-Identifier: MIT */
/*
 * settings.h - the agent's settings (settings.c): what the TRACEAGENT_*
 * variables ask for, their defaults, and the parsing they share.
 */
#ifndef TA_SETTINGS_H
#define TA_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "values.h"
#include "format.h" /* TA_LC_*, for TA_DEFAULT_LIBCALLS */

enum ta_mode {
	TA_MODE_LOSSLESS = 0, /* bounded memory; threads wait at the cap */
	TA_MODE_DROP,	      /* never waits: drops at the cap, counted */
	TA_MODE_FLIGHT,	      /* keeps each thread's last events; writes on demand */
};

struct ta_settings {
	char output[4096];	 /* TRACEAGENT_OUTPUT, %p expanded: a file or a
				    collector (tcp://HOST:PORT, unix:PATH) */
	int output_per_process;	 /* TRACEAGENT_OUTPUT has %p: each process
				    writes a dump of its own */
	uint64_t output_id;	 /* FNV-1a of TRACEAGENT_OUTPUT as set (before
				    expansion): a descendant with the same
				    setting joins this recording's file */
	int output_fallback;	 /* TRACEAGENT_OUTPUT_FALLBACK=file: a collector
				    that cannot be reached at the start gives
				    way to TA_DEFAULT_OUTPUT */
	enum ta_mode mode;	 /* TRACEAGENT_MODE */
	uint64_t flight_bytes;	 /* TRACEAGENT_FLIGHT_SIZE: kept per thread */
	int flight_signal;	 /* TRACEAGENT_FLIGHT_SIGNAL */
	uint32_t block_bytes;	 /* TRACEAGENT_BUFFER */
	uint64_t memory_cap;	 /* TRACEAGENT_MEMORY */
	uint32_t flush_ms;	 /* TRACEAGENT_FLUSH_MS */
	uint32_t libcalls;	 /* TRACEAGENT_LIBCALLS: TA_LC_* classes */
	char channels[1024];	 /* TRACEAGENT_CHANNELS ("" = all) */
	char channels_alt[1024]; /* TRACEAGENT_CHANNELS_ALT */
	int channel_signal;	 /* TRACEAGENT_CHANNEL_SIGNAL, 0 = none */
	int control;		 /* TRACEAGENT_CONTROL: 1 on (default), 0 off */
	int symbols;		 /* TRACEAGENT_SYMBOLS: 1 on (default), 0 off */
	int start_paused;	 /* TRACEAGENT_START=paused */
	/* Recording less (filter.c; docs/traceagent-record.md, the filters). */
	char filter[1024];	  /* TRACEAGENT_FILTER: "[!][MODULE:]GLOB,..." ("" = none) */
	char exclude[1024];	  /* TRACEAGENT_EXCLUDE: "[MODULE:]GLOB,..." ("" = none) */
	uint32_t depth;		  /* TRACEAGENT_DEPTH: frames kept per thread, 0 = all */
	uint64_t min_duration_ns; /* TRACEAGENT_MIN_DURATION, 0 = none */
	/* TRACEAGENT_TEST_ENCODER_MAX: for tests only, the most a thread's
	 * encoder buffer may hold (0 = no limit): past it the flusher is out
	 * of memory, as when an allocation fails. */
	uint64_t test_encoder_max;
};

#define TA_DEFAULT_BLOCK    (64u << 10)
#define TA_DEFAULT_MEMORY   (256ull << 20)
#define TA_DEFAULT_FLUSH_MS 50u
#define TA_DEFAULT_FLIGHT   (4ull << 20)
/* Library calls recorded unless TRACEAGENT_LIBCALLS says otherwise
 * (docs/bench.md, library calls: the measurements behind the choice). */
#define TA_DEFAULT_LIBCALLS (TA_LC_IO | TA_LC_SLEEP)

/* Reads the environment (secure_getenv); prints one line per bad value and
 * keeps the default for it. */
void ta_settings_load(struct ta_settings *s) TA_HIDDEN;
/* Under `traceagent attach`: the settings as "NAME=VALUE" lines, read in
 * place of the environment (agent/attach.c); NULL otherwise. */
extern const char *ta_settings_attach TA_HIDDEN;
/* The library-call classes TRACEAGENT_LIBCALLS names explicitly, quietly
 * (0 when unset, empty, none or bad: ta_settings_load says why later).
 * Those calls start the agent as a hook does (libcalls.c). */
uint32_t ta_settings_libcalls_asked(void) TA_HIDDEN;
/* The four filter settings alone into s (TRACEAGENT_FILTER, _EXCLUDE,
 * _DEPTH, _MIN_DURATION): a bad value is said on stderr when warn, and
 * left at its default (none). */
void ta_settings_filters(struct ta_settings *s, int warn) TA_HIDDEN;
/* One setting's value, as ta_settings_load reads it (the environment, or
 * the attach's settings); NULL when unset.  Copy it at once: the buffer
 * it may be in is reused. */
const char *ta_settings_value(const char *name) TA_HIDDEN;

extern struct ta_settings ta_cfg TA_HIDDEN;

#endif
