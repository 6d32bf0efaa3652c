/* SPDX-License-Identifier: MIT */
/*
 * settings.c - TRACEAGENT_* environment variables.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "base.h"
#include "format.h"
#include "settings.h"
#include "values.h"

struct ta_settings ta_cfg;

const char *ta_settings_attach TA_STARTUP_DATA;

/*
 * A variable's value: the environment's, or under `traceagent attach` the
 * attach's settings (ta_settings_attach: "NAME=VALUE" lines), the
 * environment of a program started without the agent saying nothing.
 */
static const char *setting_env(const char *name)
{
	static char vals[8][512];
	static unsigned next;
	const char *p = ta_settings_attach;
	size_t n = strlen(name);

	if (!p)
		return secure_getenv(name);
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len > n && !strncmp(p, name, n) && p[n] == '=') {
			/* Read at the start, by the one thread starting the
			 * agent; ta_settings_load holds at most 4 values at
			 * once: 8 buffers in turn. */
			char *val = vals[next++ % 8];

			len -= n + 1;
			if (len >= sizeof(vals[0]))
				len = sizeof(vals[0]) - 1;
			memcpy(val, p + n + 1, len);
			val[len] = 0;
			return val;
		}
		p += len + (e != NULL);
	}
	return NULL;
}

/* A size as the settings take it: in the largest of G, M and K that
 * divides it, else in bytes. */
static const char *size_text(uint64_t v, char *out, size_t size)
{
	static const char units[] = "GMK";

	for (int i = 0; i < 3; i++) {
		unsigned shift = (unsigned)(30 - 10 * i);

		if (v && !(v & ((1ull << shift) - 1))) {
			snprintf(out, size, "%llu%c", (unsigned long long)(v >> shift), units[i]);
			return out;
		}
	}
	snprintf(out, size, "%llu", (unsigned long long)v);
	return out;
}

static void size_setting(const char *name, uint64_t min, uint64_t max, uint64_t *val)
{
	const char *s = setting_env(name);
	uint64_t v;

	if (!s)
		return;
	if (ta_parse_size(s, &v) < 0 || v < min || v > max) {
		char lo[24], hi[24], def[24];

		ta_warn("%s='%s' is not a size from %s to %s (bytes, or with K, M or G like %s); "
			"using %s",
			name, s, size_text(min, lo, sizeof(lo)), size_text(max, hi, sizeof(hi)),
			size_text(*val, def, sizeof(def)), def);
		return;
	}
	*val = v;
}

/* "all", "none", or a comma-separated list of classes; a bad word is
 * named (when warn) and the default kept.  *explicit: the variable says
 * which classes (set, not empty, and valid). */
static uint32_t libcalls_parse(int warn, int *explicit)
{
	static const struct {
		const char *name;
		uint32_t mask;
	} words[] = {{"all", TA_LC_ALL},   {"none", 0},	     {"alloc", TA_LC_ALLOC},
		     {"lock", TA_LC_LOCK}, {"io", TA_LC_IO}, {"sleep", TA_LC_SLEEP}};
	const char *v = setting_env("TRACEAGENT_LIBCALLS");
	uint32_t mask = 0;

	*explicit = 0;
	if (!v || !*v)
		return TA_DEFAULT_LIBCALLS;
	for (const char *p = v; *p;) {
		size_t n = strcspn(p, ",");
		size_t i;

		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strlen(words[i].name) == n && !strncmp(p, words[i].name, n))
				break;
		if (i == sizeof(words) / sizeof(words[0])) {
			if (!warn)
				return TA_DEFAULT_LIBCALLS;
			ta_warn("TRACEAGENT_LIBCALLS: '%.*s' is not all, none, alloc, lock, io or "
				"sleep; using the default",
				(int)(n > 64 ? 64 : n), p);
			return TA_DEFAULT_LIBCALLS;
		}
		mask |= words[i].mask;
		p += n;
		if (*p == ',')
			p++;
	}
	*explicit = 1;
	return mask;
}

static uint32_t libcalls_setting(void)
{
	int explicit;

	return libcalls_parse(1, &explicit);
}

uint32_t ta_settings_libcalls_asked(void)
{
	int explicit;
	uint32_t mask = libcalls_parse(0, &explicit);

	return explicit ? mask : 0;
}

/* A signal by name (USR1, USR2, HUP, PROF, with or without SIG) or
 * real-time number; def when unset or not one of those (said). */
static int signal_setting(const char *name, int def)
{
	const char *v = setting_env(name), *p = v;
	int n = -1;

	if (!v || !*v)
		return def;
	if (!strncmp(p, "SIG", 3))
		p += 3;
	if (!strcmp(p, "USR1"))
		n = SIGUSR1;
	else if (!strcmp(p, "USR2"))
		n = SIGUSR2;
	else if (!strcmp(p, "HUP"))
		n = SIGHUP;
	else if (!strcmp(p, "PROF"))
		n = SIGPROF;
	else {
		char *end;
		long l = strtol(p, &end, 10);
		if (!*end && end != p && l >= SIGRTMIN && l <= SIGRTMAX)
			n = (int)l;
	}
	if (n < 0) {
		if (def)
			ta_warn(
			    "%s='%s' is not USR1, USR2, HUP, PROF or a real-time signal number; "
			    "using %s",
			    name, v, def == SIGUSR2 ? "SIGUSR2" : "the default");
		else
			ta_warn(
			    "%s='%s' is not USR1, USR2, HUP, PROF or a real-time signal number; "
			    "no signal",
			    name, v);
		return def;
	}
	return n;
}

/* A string setting, cut to size (said). */
static void string_setting(const char *name, char *out, size_t size)
{
	const char *v = setting_env(name);

	out[0] = 0;
	if (!v)
		return;
	if (strlen(v) >= size) {
		ta_warn("%s is longer than %zu bytes; ignored", name, size - 1);
		return;
	}
	strcpy(out, v);
}

/* A setting of two words: 1 for yes, 0 for no, def when unset or neither
 * (said). */
static int onoff_setting(const char *name, const char *yes, const char *no, int def)
{
	const char *v = setting_env(name);

	if (!v || !*v)
		return def;
	if (!strcmp(v, yes))
		return 1;
	if (!strcmp(v, no))
		return 0;
	ta_warn("%s='%.64s' is not %s or %s; using %s", name, v, yes, no, def ? yes : no);
	return def;
}

/* Whether the list "[!][MODULE:]GLOB,..." has an empty pattern: an empty
 * item (two commas in a row, one at either end), a lone `!`, an empty
 * MODULE or GLOB around the last colon (where fnsel.c's parser splits). */
static int has_empty_pattern(const char *v)
{
	for (;;) {
		size_t n = strcspn(v, ",");
		const char *colon = NULL;

		if (n && *v == '!') {
			v++;
			n--;
		}
		for (size_t i = 0; i < n; i++)
			if (v[i] == ':')
				colon = v + i;
		if (!n || (colon && (colon == v || colon == v + n - 1)))
			return 1;
		if (!v[n])
			return 0;
		v += n + 1;
	}
}

/* A pattern list: kept as it is (filter.c parses it with the patcher's
 * parser); too long, nothing but commas, or with an empty pattern, is
 * said and dropped whole (a list with a hole in it may not say what was
 * meant: no filter rather than another one). */
static void patterns_setting(const char *name, char *out, size_t size, int warn)
{
	const char *v = setting_env(name);

	out[0] = 0;
	if (!v || !*v)
		return;
	if (strlen(v) >= size) {
		if (warn)
			ta_warn("%s is longer than %zu bytes; no filter", name, size - 1);
		return;
	}
	if (!v[strspn(v, ", ")]) {
		if (warn)
			ta_warn("%s='%s' names no pattern; no filter", name, v);
		return;
	}
	if (has_empty_pattern(v)) {
		if (warn)
			ta_warn("%s='%s' has an empty pattern; no filter", name, v);
		return;
	}
	strcpy(out, v);
}

void ta_settings_filters(struct ta_settings *s, int warn)
{
	const char *d = setting_env("TRACEAGENT_DEPTH");
	const char *t;

	patterns_setting("TRACEAGENT_FILTER", s->filter, sizeof(s->filter), warn);
	patterns_setting("TRACEAGENT_EXCLUDE", s->exclude, sizeof(s->exclude), warn);
	s->depth = 0;
	if (d && *d) {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(d, &end, 10);
		if (errno || end == d || *end || *d < '0' || *d > '9' || v < 1 || v > 65536) {
			if (warn)
				ta_warn("TRACEAGENT_DEPTH='%.64s' is not a number of frames from 1 "
					"to 65536; no depth limit",
					d);
		} else
			s->depth = (uint32_t)v;
	}
	s->min_duration_ns = 0;
	t = setting_env("TRACEAGENT_MIN_DURATION");
	if (t && *t && ta_parse_duration(t, &s->min_duration_ns) < 0) {
		s->min_duration_ns = 0;
		if (warn)
			ta_warn("TRACEAGENT_MIN_DURATION='%.64s' is not a duration (like 500ns, "
				"10us, 2ms, 1s; a bare number is nanoseconds); no minimum",
				t);
	}
}

void ta_settings_load(struct ta_settings *s)
{
	const char *out = setting_env("TRACEAGENT_OUTPUT");
	const char *fl = setting_env("TRACEAGENT_FLUSH_MS");
	const char *mode = setting_env("TRACEAGENT_MODE");
	const char *fallback;
	uint64_t block = TA_DEFAULT_BLOCK, mem = TA_DEFAULT_MEMORY;

	s->flush_ms = TA_DEFAULT_FLUSH_MS;
	if (fl) {
		char *end;
		unsigned long v;
		errno = 0;
		v = strtoul(fl, &end, 10);
		if (errno || end == fl || *end || *fl == '-' || v < 1 || v > 60000)
			ta_warn("TRACEAGENT_FLUSH_MS='%s' is not a number of milliseconds from 1 "
				"to 60000; using %u",
				fl, s->flush_ms);
		else
			s->flush_ms = (uint32_t)v;
	}
	size_setting("TRACEAGENT_BUFFER", 4096, 64u << 20, &block);
	size_setting("TRACEAGENT_MEMORY", 1u << 20, 1ull << 40, &mem);
	if (mem < 4 * block) {
		char m[24], b[24], four[24];

		ta_warn("TRACEAGENT_MEMORY (%s) must hold at least 4 buffers of %s; using %s",
			size_text(mem, m, sizeof(m)), size_text(block, b, sizeof(b)),
			size_text(4 * block, four, sizeof(four)));
		mem = 4 * block;
	}
	s->mode = TA_MODE_LOSSLESS;
	if (mode && *mode) {
		if (!strcmp(mode, "lossless"))
			s->mode = TA_MODE_LOSSLESS;
		else if (!strcmp(mode, "drop"))
			s->mode = TA_MODE_DROP;
		else if (!strcmp(mode, "flight"))
			s->mode = TA_MODE_FLIGHT;
		else
			ta_warn(
			    "TRACEAGENT_MODE='%s' is not lossless, drop or flight; using lossless",
			    mode);
	}
	s->flight_bytes = TA_DEFAULT_FLIGHT;
	size_setting("TRACEAGENT_FLIGHT_SIZE", 2 * block, 1ull << 40, &s->flight_bytes);
	s->flight_signal = signal_setting("TRACEAGENT_FLIGHT_SIGNAL", SIGUSR2);
	s->channel_signal = signal_setting("TRACEAGENT_CHANNEL_SIGNAL", 0);
	string_setting("TRACEAGENT_CHANNELS", s->channels, sizeof(s->channels));
	string_setting("TRACEAGENT_CHANNELS_ALT", s->channels_alt, sizeof(s->channels_alt));
	s->libcalls = libcalls_setting();
	s->control = onoff_setting("TRACEAGENT_CONTROL", "on", "off", 1);
	s->symbols = onoff_setting("TRACEAGENT_SYMBOLS", "on", "off", 1);
	s->start_paused = !onoff_setting("TRACEAGENT_START", "running", "paused", 1);
	ta_settings_filters(s, 1);
	s->test_encoder_max = 0;
	size_setting("TRACEAGENT_TEST_ENCODER_MAX", 0, 1ull << 40, &s->test_encoder_max);
	s->block_bytes = (uint32_t)block;
	s->memory_cap = mem;
	fallback = setting_env("TRACEAGENT_OUTPUT_FALLBACK");
	s->output_fallback = 0;
	if (fallback && !strcmp(fallback, "file"))
		s->output_fallback = 1;
	else if (fallback && *fallback && strcmp(fallback, "none"))
		ta_warn("TRACEAGENT_OUTPUT_FALLBACK='%s' is not file or none; using none",
			fallback);
	if (!out || !*out)
		out = TA_DEFAULT_OUTPUT;
	if (ta_output_path(out, (long)getpid(), s->output, sizeof(s->output)) < 0) {
		ta_warn("TRACEAGENT_OUTPUT='%s' is too long; using %s", out, TA_DEFAULT_OUTPUT);
		out = TA_DEFAULT_OUTPUT;
	}
	s->output_per_process = ta_addr_names_pid(out);
	s->output_id = 0xcbf29ce484222325ull;
	for (const char *c = out; *c; c++)
		s->output_id = (s->output_id ^ (uint8_t)*c) * 0x100000001b3ull;
}

const char *ta_settings_value(const char *name)
{
	return setting_env(name);
}
